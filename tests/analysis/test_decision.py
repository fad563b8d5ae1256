"""The decision cards: pure functions on a few hand-built rows, the paper's
diagnosis on the paper-shaped package, and the own-arm check of §5 on real arm specs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from foldstudy.analysis.card import Card, ContrastVerdict, StagedSummary
from foldstudy.analysis.card_lines import (
    BETWEEN,
    SECTION5_RULE,
    diagnosis,
    loudness,
    own_arm_checks,
    undivided_slot,
)
from foldstudy.analysis.cells import arm_blocks, pairs, valid_rows
from foldstudy.analysis.decision import NATIVE_SOURCE, CardInputs, cards
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.power import DIFFERENCE, EQUIVALENCE, repeats_needed, repeats_to_decide
from foldstudy.analysis.verdict import Price, contrast_level, word
from foldstudy.report.card_words import card_markdown, contrast_line, loudness_line, own_line
from foldstudy.report.decision import write_decision
from foldstudy.study.spec import load_arm_table, resolve_arm

from ..support.evidence_rows import arm_rows, frames
from ..support.paper_package import paper_package

PLAN = AnalysisPlan.load()
CI = CardInputs(margin=0.10)


def _cell(recalls: dict[str, list[float]], k: int = 10, **extra
          ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [r for arm, rs in recalls.items() for r in arm_rows("s", "mod", arm, rs, k=k, **extra)]
    return frames(rows)


def _contrast(c: Card, a: str, b: str) -> ContrastVerdict:
    return next(v for v in c.contrasts if (v.a, v.b) == (a, b))


def test_word_follows_p_then_tost():
    assert word(0.4, 0.01, False, "j", "m", 0.05, 0.1) == "m better"
    assert word(-0.4, 0.01, False, "j", "m", 0.05, 0.1) == "j better"
    assert word(0.01, 0.9, True, "j", "m", 0.05, 0.1) == "equivalent within ±0.1"
    assert word(0.2, 0.2, False, "j", "m", 0.05, 0.1) == "undecided"


def test_card_says_m_better_when_every_block_favours_m():
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.0, 0.1, 0.2, 0.1],
                          "m": [0.9, 1.0, 0.8, 1.0, 0.9, 1.0, 0.9, 1.0]})
    c = cards(rows, checks, PLAN, dataclasses.replace(CI, decide_pair=("j", "m")))[0]
    v = _contrast(c, "j", "m")
    assert v.word == "m better" and v.source == "decide" and v.blocks == 8
    # eight blocks all one sign: the exact two-sided sign-flip p is 2 / 2^8
    assert v.p_permutation == pytest.approx(2 / 256)
    assert v.ci_low > 0 and v.difference == pytest.approx(0.9375 - 0.15)


def test_a_staged_decide_pair_is_judged_at_its_looks_level_not_at_alpha():
    """A staged study stops on Lan–DeMets levels; its card may not call a
    difference that the looks did not grant. Eight blocks all one sign give p = 2/256 =
    0.0078: a difference at alpha 0.05, not at a look's nominal 0.0007."""
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.0, 0.1, 0.2, 0.1],
                          "m": [0.9, 1.0, 0.8, 1.0, 0.9, 1.0, 0.9, 1.0]})
    staged = StagedSummary(stop="undecided", nominal=0.0007, p=2 / 256, repeats=8, looks=1,
                           max_repeats=12)
    ci = dataclasses.replace(CI, decide_pair=("j", "m"), staged={("s", "mod"): staged})
    v = _contrast(cards(rows, checks, PLAN, ci)[0], "j", "m")
    assert v.source == "decide" and v.word == "undecided"
    assert contrast_level("decide", staged, 0.05) == 0.0007
    assert contrast_level("ladder", staged, 0.05) == 0.05  # other contrasts: alpha
    assert contrast_level("decide", None, 0.05) == 0.05  # a fixed design: alpha


def test_equal_arms_are_equivalent_and_a_close_call_is_undecided_and_priced():
    same = [0.9, 0.8, 0.9, 1.0, 0.9, 0.8, 0.9, 1.0, 0.9, 0.8]
    rows, checks = _cell({"j": same, "m": same[1:] + same[:1]})
    v = _contrast(cards(rows, checks, PLAN, dataclasses.replace(CI, decide_pair=("j", "m")))[0],
                  "j", "m")
    assert v.word == "equivalent within ±0.1" and v.repeats_to_decide is None
    rows, checks = _cell({"j": [0.5, 0.7, 0.3, 0.6], "m": [0.7, 0.6, 0.6, 0.8]})
    ci = dataclasses.replace(CI, decide_pair=("j", "m"),
                             price=lambda s, m, a: Price(calls=6, usd=0.05), rotation=lambda s: 5)
    v = _contrast(cards(rows, checks, PLAN, ci)[0], "j", "m")
    assert v.word == "undecided"
    assert v.repeats_to_decide % 5 == 0 and v.repeats_to_decide > 4
    assert v.more_repeats == v.repeats_to_decide - 4
    assert v.more_calls == 12 * v.more_repeats
    assert v.more_usd == pytest.approx(0.10 * v.more_repeats)
    assert "repeats would decide it" in contrast_line(v)


def test_an_undecided_contrast_is_planned_by_the_test_that_would_decide_it():
    """Required: "An undecided contrast says how many more repeats would decide it at the
    observed difference and ICC, and what those cost". Beyond the margin (b - a =
    +0.15) a difference decides it, planned as the card tests it: the sign-flip test's
    simulated power, never fewer repeats than the t formula; inside it (b - a = 0) only
    equivalence can, planned as TOST at the margin. Both through power.repeats_to_decide,
    the plan a staged study's next stage uses too."""
    ci = dataclasses.replace(CI, decide_pair=("j", "m"),
                             price=lambda s, m, a: Price(calls=6, usd=0.05),
                             rotation=lambda s: 5)
    for m_recalls, test in (([0.7, 0.6, 0.6, 0.8], DIFFERENCE),
                            ([0.6, 0.6, 0.4, 0.5], EQUIVALENCE)):
        rows, checks = _cell({"j": [0.5, 0.7, 0.3, 0.6], "m": m_recalls})
        v = _contrast(cards(rows, checks, PLAN, ci)[0], "j", "m")
        assert v.word == "undecided" and v.planned_test == test
        p_bar = (v.a_mean + v.b_mean) / 2
        plan = repeats_to_decide(v.difference, v.icc, 10, 0.10, p_bar, PLAN.alpha, 0.8, 5)
        assert (v.repeats_to_decide, v.planned_difference) == (plan.repeats, plan.difference)
        assert v.more_repeats == plan.repeats - 4 and v.more_calls == 12 * v.more_repeats
        assert v.more_usd == pytest.approx(0.10 * v.more_repeats)
        line = contrast_line(v)
        assert f"{plan.repeats} repeats would decide it" in line
        assert ("as equivalent (TOST at the margin)" in line) == (test == EQUIVALENCE)
        if test == DIFFERENCE:
            assert plan.repeats >= repeats_needed(plan.difference, plan.icc, 10, p_bar,
                                                    PLAN.alpha, 0.8, 5, simulate=False)


def test_every_arm_lost_every_fact_gets_that_verdict_and_no_ranking():
    rows, checks = _cell({"j": [0, 0, 0], "q": [0, 0, 0], "m": [0, 0, 0]})
    c = cards(rows, checks, PLAN, CI)[0]
    assert c.all_lost and not c.contrasts
    text = "\n".join(card_markdown(c, PLAN))
    assert "every arm lost every fact" in text and "better" not in text


def test_diagnosis_by_fill_and_rescue():
    rows, _ = _cell({"j": [0.1, 0.0, 0.2, 0.1], "q": [0.9, 0.8, 1.0, 0.9]}, fill=0.9)
    d = diagnosis(valid_rows(rows), PLAN)
    assert d.failing and d.mode == "description" and d.rescued
    rows, _ = _cell({"j": [0.1, 0.0, 0.2, 0.1]}, fill=0.06)
    d = diagnosis(valid_rows(rows), PLAN)
    assert d.mode == "gist" and d.q_mean is None and d.rescued is None
    rows, _ = _cell({"j": [0.1, 0.0, 0.2, 0.1]}, fill=0.45)
    assert diagnosis(valid_rows(rows), PLAN).mode == BETWEEN
    rows, _ = _cell({"j": [0.9, 1.0, 0.9, 1.0]}, fill=0.45)
    assert diagnosis(valid_rows(rows), PLAN).mode == "healthy"


def test_loudness_counts_abstained_fabricated_and_stock():
    rows = (arm_rows("s", "mod", "j", [0.0, 0.1], abstained=True)
            + arm_rows("s", "mod", "q", [0.1], abstained=False, n_stock_signature=2)
            + arm_rows("s", "mod", "m", [0.2], abstained=False)
            + arm_rows("s", "mod", "o", [1.0]))
    for i, r in enumerate(rows):
        r["repeat"], r["row_id"] = i, f"row{i}"
    df, _ = frames(rows)
    ld = loudness(valid_rows(df), PLAN)
    assert (ld.failing_rows, ld.abstained, ld.fabricated, ld.stock) == (4, 2, 2, 1)
    assert ld.caught_by_abstention_log == 0.5
    assert "catch 2/4 = 50%" in loudness_line(ld)


def test_the_failure_mode_line_says_the_stock_rows_are_part_of_its_classes():
    """Abstained and fabricated split the failing rows; a stock value is a part of one of
    them, so the line says "of which", never a third count beside the two."""
    rows = (arm_rows("s", "mod", "j", [0.0, 0.0], abstained=False, n_stock_signature=1)
            + arm_rows("s", "mod", "q", [0.0], abstained=False)
            + arm_rows("s", "mod", "m", [0.1], abstained=True, n_stock_signature=3))
    for i, r in enumerate(rows):
        r["repeat"], r["row_id"] = i, f"row{i}"
    df, _ = frames(rows)
    ld = loudness(valid_rows(df), PLAN)
    assert (ld.fabricated, ld.stock, ld.stock_fabricated, ld.stock_abstained) == (3, 3, 2, 1)
    line = loudness_line(ld)
    assert "1 abstained and 3 fabricated with no abstention marker; of the 3 fabricated, " \
           "2 answered with a stock value, and 1 of the 1 that abstained" in line


# ----------------------------------------------------------------- §5, own arm


@pytest.fixture(scope="module")
def paper_arms(resources):
    table = load_arm_table(resources)
    return {a: resolve_arm(a, table, resources, 1.0) for a in table["arms"]}


def test_the_paper_arms_with_one_carried_free_text_field_are_flagged(paper_arms):
    flagged = {a for a, arm in paper_arms.items() if undivided_slot(arm)[0]}
    # j p t: one string field; n: three declared, summary carried (§5); f: one string
    # beside two lists, carried as a raw envelope; g parses f's schema.
    assert {"j", "p", "t", "n"} <= flagged
    assert not flagged & {"q", "k", "m", "o", "u", "l"}
    assert "one free-text field `summary` carried" in undivided_slot(paper_arms["n"])[1]


def test_own_arm_with_one_string_field_flagged_its_five_field_twin_not(paper_arms):
    one = dataclasses.replace(paper_arms["j"], arm="mine")
    five = dataclasses.replace(paper_arms["q"], arm="mine5")
    checks = own_arm_checks({"mine": "j", "mine5": "q"}, {"mine": one, "mine5": five},
                              {"mine", "mine5"})
    by = {o.arm: o for o in checks}
    assert by["mine"].undivided_slot and not by["mine5"].undivided_slot
    assert SECTION5_RULE in own_line(by["mine"])
    assert "no undivided" in own_line(by["mine5"])


# ------------------------------------------------- the paper's package, §4.7's modes

# §4.7: "fills the slot with description | 59%, 81%, 81%, 99%, 100%, 100% | 6 | 6 of 6"
# and "writes a short gist instead | 6%, 36% | 2 | 0 of 2".
RESCUED = {"qwen3.5-122b-a10b", "qwen3.5-35b-a3b", "mimo-v2.5", "deepseek-v4-flash",
           "glm-5.2", "qwen3.5-9b"}
GIST = {"granite-4.1-8b", "ling-2.6-flash"}
FROM_DEPTH = {"granite-4.1-8b", "ling-2.6-flash", "glm-5.2"}


def test_diagnosis_on_the_paper_package_names_the_two_modes():
    rows, _ = paper_package()
    v = valid_rows(rows)
    found = {}
    for model in sorted(set(v[v["sweep"] == "partition"]["model"])):
        sweep = "depth" if model in FROM_DEPTH else "partition"
        d = diagnosis(v[(v["sweep"] == sweep) & (v["model"] == model)], PLAN)
        if d is not None and d.failing:
            found[model] = (d.mode, d.rescued)
    assert {m for m, (mode, _) in found.items() if mode == "description"} == RESCUED
    assert {m for m, (mode, _) in found.items() if mode == "gist"} == GIST
    assert all(rescued for m, (_, rescued) in found.items() if m in RESCUED)
    assert not any(rescued for m, (_, rescued) in found.items() if m in GIST)


def test_decision_files_are_written(tmp_path):
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.0, 0.1], "m": [0.9, 1.0, 0.8, 1.0, 0.9, 1.0]})
    cs = cards(rows, checks, PLAN, dataclasses.replace(CI, decide_pair=("j", "m")))
    text = write_decision(cs, PLAN, 0.10, str(tmp_path / "d.md"), str(tmp_path / "d.json"))
    assert "## `mod` in sweep `s`" in text and "**m better**" in text
    import json

    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["cards"][0]["contrasts"][0]["word"] == "m better"
    assert np.isfinite(doc["cards"][0]["contrasts"][0]["p_permutation"])


def test_the_summary_opens_with_the_cards(tmp_path):
    from foldstudy.report.summary import with_cards

    md = tmp_path / "decision.md"
    md.write_text("# Decision: which carrier\n\n## `mod` in sweep `s`\n\ncard text\n")
    text = with_cards("# Study `x`: what ran\n\nRuns: 3, valid: 3.\n", str(md))
    lines = text.splitlines()
    assert lines[0] == "# Study `x`: what ran"
    assert lines.index("### `mod` in sweep `s`") < lines.index("Runs: 3, valid: 3.")
    assert with_cards("# t\nbody\n", None) == "# t\nbody\n"


def test_decide_is_checked_filled_and_plans_its_maximum(config_schema, resources):
    import yaml

    from foldstudy.study.config import ConfigError, load_study
    from foldstudy.study.flags import command_line_flags
    from foldstudy.study.spec import load_arm_table

    from ..conftest import ROOT

    base = yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))
    table = load_arm_table(resources)
    # the --config form: nested values arrive as strings
    cfg = {**base, "decide": {"pair": ["j", "m"], "max_repeats": "12"}}
    command_line_flags(cfg, config_schema)
    study = load_study(cfg, config_schema, table, resources)
    assert study.config["decide"] == {"pair": ["j", "m"], "margin": 0.10, "max_repeats": 12,
                                      "looks": 3, "family": "sweep", "gate": None}
    assert {r.repeat for r in study.runs} == set(range(12))  # the plan shows the maximum
    assert load_study(base, config_schema, table, resources).config["decide"] is None
    with pytest.raises(ConfigError, match="config.decide.pair: no sweep runs both q and m"):
        load_study({**base, "decide": {"pair": ["q", "m"]}}, config_schema, table, resources)
    with pytest.raises(ConfigError, match="config.decide.looks: 5 looks cannot fit"):
        load_study({**base, "decide": {"max_repeats": 4, "looks": 5}}, config_schema, table,
                   resources)


def test_the_native_line_compares_with_the_best_matched_arm_never_an_own_arm_at_its_own_capacity(
        resources):
    """The provider's compaction goes on the card "against your best arm",
    and an arm outside the matched comparison (an own arm with `match: false`)
    is in no verdict. The own arm here recalls most, at its own capacity; the native line
    still names the best matched arm, m."""
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25) for a in ("j", "m", "native")}
    arms["mine"] = dataclasses.replace(arms["m"], arm="mine")  # a resolved own arm
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.1, 0.2],
                          "m": [0.6, 0.7, 0.6, 0.7, 0.6, 0.7],
                          "mine": [1.0] * 6,
                          "native": [0.5, 0.4, 0.5, 0.4, 0.5, 0.4]})
    ci = dataclasses.replace(CI, arms=arms, own={"mine": "m"})
    native = [v for c in cards(rows, checks, PLAN.with_unmatched(["mine"]), ci)
              for v in c.contrasts if v.source == NATIVE_SOURCE]
    assert [(v.a, v.b) for v in native] == [("m", "native")]
    # without `match: false` the same own arm is matched, and recalls most: it is the best
    native = [v for c in cards(rows, checks, PLAN, ci)
              for v in c.contrasts if v.source == NATIVE_SOURCE]
    assert [(v.a, v.b) for v in native] == [("mine", "native")]


def test_a_native_arm_whose_folds_returned_no_compaction_says_so_beside_its_difference(
        resources):
    """A native fold whose provider returned no compaction is the arm's own failure: the
    card counts it ("k of n folds returned no compaction") on the card and in the verdict
    cell of every contrast of the arm, also where every arm lost every fact; an arm whose
    folds all compacted, or a model-written arm's parse failure, adds no such line."""
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25) for a in ("j", "m", "native")}
    ci = dataclasses.replace(CI, arms=arms)
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.1, 0.2],
                          "m": [0.6, 0.7, 0.6, 0.7, 0.6, 0.7]})
    failing, _ = _cell({"native": [0.0] * 6})
    failing["parse_failures"] = [5, 5, 2, 0, 5, 5]  # 22 of 30 folds
    rows = pd.concat([rows, failing], ignore_index=True)
    rows.loc[rows["arm"] == "j", "parse_failures"] = 1  # a model's reply: not said
    checks = pd.concat([checks, _cell({"native": [0.0] * 6})[1]], ignore_index=True)
    (c,) = cards(rows, checks, PLAN, ci)
    assert c.fold_failures == {"native": "22 of 30 folds returned no compaction"}
    (v,) = [v for v in c.contrasts if v.source == NATIVE_SOURCE]
    assert "native: 22 of 30 folds returned no compaction" in contrast_line(
        v, c.fold_failures)
    text = "\n".join(card_markdown(c, PLAN))
    assert text.count("22 of 30 folds returned no compaction") == 2
    assert Card.from_dict(c.to_dict()).fold_failures == c.fold_failures
    # every arm lost every fact: the card still counts them
    lost = rows.assign(n_correct=0, recall=0.0)
    (c,) = cards(lost, checks.assign(correct=False), PLAN, ci)
    assert c.all_lost and c.fold_failures == {"native": "22 of 30 folds returned no compaction"}
    # none failed: the card reads as before, without the key
    rows.loc[rows["arm"] == "native", "parse_failures"] = 0
    (c,) = cards(rows, checks, PLAN, ci)
    assert c.fold_failures == {} and "fold_failures" not in c.to_dict()


def test_a_native_lines_stop_reasons_are_named_and_max_tokens_with_the_cap_sent(resources):
    """A native fold cut at max_tokens was counted as "no compaction, the arm's own
    behaviour", though the cap is the one the study's request sent: the line names each
    stop reason of the failed folds (folds.csv), and for max_tokens the cap."""
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25) for a in ("j", "m", "native")}
    rows, checks = _cell({"j": [0.2, 0.1, 0.3], "m": [0.6, 0.7, 0.6],
                          "native": [0.3, 0.4, 0.3]})
    native = rows["arm"] == "native"
    rows.loc[native, "parse_failures"] = [2, 1, 0]
    cap = arms["native"].fold_budget_tokens
    ids = list(rows.loc[native, "row_id"])
    folds = pd.DataFrame(
        [{"row_id": r, "fold": i, "parse_ok": i >= k, "max_tokens": cap,
          "finish_reason": "compaction" if i >= k else ("length" if i == 0 else "stop")}
         for r, k in zip(ids, [2, 1, 0], strict=True) for i in range(5)]
        # a model-written arm's fold cut at its budget is no native line's
        + [{"row_id": rows.loc[rows["arm"] == "j", "row_id"].iloc[0], "fold": 0,
            "parse_ok": False, "max_tokens": 9, "finish_reason": "length"}])
    ci = dataclasses.replace(CI, arms=arms, folds=folds)
    (c,) = cards(rows, checks, PLAN, ci)
    said = c.fold_failures["native"]
    assert said.startswith("3 of 15 folds returned no compaction (stop reasons: ")
    assert f"max_tokens 2, at the cap the request sent, max_tokens {cap}: the study's own " \
        "fold budget" in said and "; stop 1)" in said and "max_tokens 9" not in said
    line = [x for x in card_markdown(c, PLAN) if x.startswith("**native:")]
    assert line and "stop 1)**, counted as the arm's own behaviour" in line[0]
    # without folds.csv (a package without it) the count alone, as before
    (c,) = cards(rows, checks, PLAN, dataclasses.replace(ci, folds=None))
    assert c.fold_failures == {"native": "3 of 15 folds returned no compaction"}


def test_a_proxy_models_native_line_names_the_endpoints_compaction_never_the_providers(
        resources):
    """A model whose config says native_via: proxy (the decision rule's params.native_words,
    wiring/decision.py): its card reads the native arm against your best arm as
    "compaction by <host:port>", in the line and in the card's words; a model on the
    provider's API reads the provider's words as before."""
    from types import SimpleNamespace

    from foldstudy.carriers.native import native_words
    from foldstudy.wiring.decision import Decision

    proxy = {"backend": "anthropic", "native_via": "proxy",
             "base_url": "https://user:secret@gw.example:8443/v1?key=abc"}
    core = SimpleNamespace(config={"models": {"mod": proxy, "other": {"backend": "anthropic"}}})
    params = SimpleNamespace(native_words=Decision(core).native_words())  # type: ignore[arg-type]
    assert params.native_words == {"mod": {"compaction": "compaction by gw.example:8443",
                                           "default": "its default"}}
    plan = AnalysisPlan.of_params(None, None, params)
    assert plan.words_of("mod") == native_words(proxy)
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25) for a in ("j", "m", "native")}
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.1, 0.2],
                          "m": [0.6, 0.7, 0.6, 0.7, 0.6, 0.7],
                          "native": [0.5, 0.4, 0.5, 0.4, 0.5, 0.4]})
    ci = dataclasses.replace(CI, arms=arms)
    (c,) = cards(rows, checks, plan, ci)
    (v,) = [v for v in c.contrasts if v.b == "native"]
    assert (v.a, v.source) == ("m", "compaction by gw.example:8443 against your best arm")
    text = "\n".join(card_markdown(c, plan))
    assert "m–native (compaction by gw.example:8443 against your best arm)" in text
    assert "provider's compaction" not in text and "secret" not in text and "/v1" not in text
    # the same rows on a model on the provider's API: the provider's words, unchanged
    (c,) = cards(rows, checks, PLAN, ci)
    (v,) = [v for v in c.contrasts if v.b == "native"]
    assert v.source == NATIVE_SOURCE == "the provider's compaction against your best arm"


def test_a_keep_recent_native_arm_is_read_against_plain_native_and_names_no_folder(resources):
    """A `native:keep_recent=N` arm is the provider's compaction with the last chunks
    kept verbatim, so its card reads it against `native` that ran beside it (what keeping
    the tail did), besides the line against your best arm every native arm has; neither
    line is a carrier of the study's to choose."""
    from foldstudy.carriers.native_keep import KEEP_RECENT_SOURCE
    from foldstudy.report.carrier import chosen

    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25)
            for a in ("j", "m", "native", "native_keep2")}
    ci = dataclasses.replace(CI, arms=arms)
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.1] * 2,
                          "m": [0.3, 0.2, 0.3, 0.2, 0.3] * 2,
                          "native": [0.2, 0.3, 0.2, 0.3, 0.2] * 2,
                          "native_keep2": [0.9, 1.0, 0.9, 1.0, 0.9] * 2})
    (c,) = cards(rows, checks, PLAN, ci)
    (v,) = [v for v in c.contrasts if v.source == KEEP_RECENT_SOURCE]
    assert (v.a, v.b) == ("native", "native_keep2") and v.word == "native_keep2 better"
    assert {(v.a, v.b) for v in c.contrasts if v.source == NATIVE_SOURCE} == {
        ("m", "native"), ("m", "native_keep2")}
    assert chosen(c) is None  # no matched contrast here, and no folder for either line
    # without plain native beside it, the line is not made
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.1] * 2,
                          "native_keep2": [0.9, 1.0, 0.9, 1.0, 0.9] * 2})
    (c,) = cards(rows, checks, PLAN, ci)
    assert not [v for v in c.contrasts if v.source == KEEP_RECENT_SOURCE]


def test_a_proxy_models_keep_recent_line_names_the_endpoints_compaction(resources):
    """On a model whose config says native_via: proxy, the keep_recent line names the
    endpoint's compaction, never the provider's, and still names no carrier folder."""
    from types import SimpleNamespace

    from foldstudy.carriers.native_keep import KEEP_RECENT_SOURCE
    from foldstudy.report.carrier import chosen

    params = SimpleNamespace(native_words={"mod": {"compaction": "compaction by gw.example",
                                                   "default": "its default"}})
    plan = AnalysisPlan.of_params(None, None, params)
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25) for a in ("j", "native", "native_keep2")}
    rows, checks = _cell({"j": [0.2, 0.1, 0.3, 0.2, 0.1] * 2,
                          "native": [0.2, 0.3, 0.2, 0.3, 0.2] * 2,
                          "native_keep2": [0.9, 1.0, 0.9, 1.0, 0.9] * 2})
    (c,) = cards(rows, checks, plan, dataclasses.replace(CI, arms=arms))
    (v,) = [v for v in c.contrasts if (v.a, v.b) == ("native", "native_keep2")]
    assert v.source == KEEP_RECENT_SOURCE.replace("the provider's compaction",
                                                  "compaction by gw.example")
    assert v.word == "native_keep2 better" and chosen(c) is None


def test_two_arms_share_a_block_in_arm_blocks_exactly_when_pairs_pairs_them():
    """unread_pairs asks arm_blocks whether a pair ran together; pairs is the reading of
    record. Over the paper package's cells, with a recall blanked and a block run by one
    arm alone, the two agree on every pair of arms."""
    rows = valid_rows(paper_package()[0]).copy()
    rows.loc[rows.index[0], "recall"] = np.nan
    first, second = sorted(set(rows["arm"]))[:2]  # first at repeat 0 only, second never
    rows = rows[~(((rows["arm"] == first) & (rows["repeat"] != 0))
                  | ((rows["arm"] == second) & (rows["repeat"] == 0)))]
    seen = set()
    for _, cell in rows.groupby(["sweep", "model"]):
        blocks, arms = arm_blocks(cell), sorted(set(cell["arm"]))
        for a in arms:
            for b in arms:
                together = bool(blocks.get(a, set()) & blocks.get(b, set()))
                assert together == (not pairs(cell, a, b).empty), (a, b)
                seen.add(together)
    assert seen == {True, False}
