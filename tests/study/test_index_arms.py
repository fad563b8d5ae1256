"""Index arms and recall at retained tokens, unit by unit: the identifier index
(carriers/identifier_index.py) keeps the one classifier's tokens, first appearance first,
none twice, and evicts the oldest past its share;
an index arm's shares are exact at every scale; the
frontier of the retained-token table is right on a synthetic table; and an arm outside
the matched comparison (arm.is_matched: index arms, own arms with `match: false`) never
reaches a matched contrast or a paper table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from foldstudy.analysis.decision import CardInputs, cards
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.retained import frontier, picks, recall_band, retained_points
from foldstudy.analysis.view import Evidence
from foldstudy.carriers.identifier_index import chunk_identifiers, recall_carrier, update_index
from foldstudy.grade.trace import carried_in, fact_trace
from foldstudy.study.arm import Arm, is_matched
from foldstudy.study.fixture_types import Fact, Fixture
from foldstudy.study.own_arms import own_arm_twins
from foldstudy.study.spec import SpecError, load_arm_table, resolve_arm
from foldstudy.transcripts.identifiers import classify

from ..support.evidence_rows import frames, row
from .test_sessions_config import config, load


def words(text: str) -> int:
    """A tokenizer of the test's: one token a whitespace-separated word."""
    return len(text.split())


CHUNK_1 = ("Deploy to https://gw.dutin.internal/sigon now; the run id is "
           "95243226-7b3d-4d4f-b5f6-db302654adb0, the lock /opt/poren/nusil/padar.lock. "
           "Again: https://gw.dutin.internal/sigon. Ping @ana.lee and read </div>.")
CHUNK_2 = "Tag v6.83.4-figuk is out; the key is kid-30cccc-sidin; lock /opt/poren/nusil/padar.lock."


def test_the_index_is_the_classifiers_tokens_in_first_appearance_never_twice():
    first = update_index([], CHUNK_1, 100, words)
    # exactly the tokens the one classifier keeps (none it sets aside: </div>), once each
    kept = [t.text for t in classify(CHUNK_1) if not t.set_aside]
    assert first == list(dict.fromkeys(kept)) == chunk_identifiers(CHUNK_1)
    assert first[0] == "https://gw.dutin.internal/sigon" and first.count(first[0]) == 1
    assert "/div" not in first and "</div>" not in first
    second = update_index(first, CHUNK_2, 100, words)
    # the previous index, then the chunk's new tokens; the lock, already there, not again
    assert second[:len(first)] == first
    assert second[len(first):] == ["v6.83.4-figuk", "kid-30cccc-sidin"]


def test_eviction_is_oldest_first_and_the_share_holds_as_counted():
    first = update_index([], CHUNK_1, 100, words)
    full = update_index(first, CHUNK_2, 100, words)
    for cap in range(len(full) + 1):
        kept = update_index(first, CHUNK_2, cap, words)
        assert words("\n".join(kept)) <= cap
        assert kept == (full[len(full) - cap:] if cap else [])
    # a token evicted and seen again comes back as the newest entry
    again = update_index(update_index(first, CHUNK_2, 2, words), CHUNK_1, 2, words)
    assert again == chunk_identifiers(CHUNK_1)[-2:]


def test_an_index_arms_shares_are_exact_and_its_fold_is_its_bases(resources):
    table = load_arm_table(resources)
    for scale in (1.0, 0.25, 0.035, 0.01):
        for arm, base in (("jx", "j"), ("mx", "m")):
            a, b = (resolve_arm(x, table, resources, scale) for x in (arm, base))
            share = table["arms"][arm]["index_share"]
            assert a.index_cap_tokens == max(1, round(b.carry_cap_tokens * share))
            assert a.carry_cap_tokens + a.index_cap_tokens == b.carry_cap_tokens
            assert a.fold_budget_tokens == b.fold_budget_tokens - round(
                b.fold_budget_tokens * share)
            assert (a.system_prompt, a.schema, a.ceilings, a.carry) == (
                b.system_prompt, b.schema, b.ceilings, b.carry)
            assert a.base == base and not is_matched(table["arms"][arm])
            assert Arm.from_dict(a.to_dict()) == a
    # an arm without an index writes no index key (its records are what they were)
    assert "index_cap_tokens" not in resolve_arm("j", table, resources, 1.0).to_dict()


def test_a_fact_in_neither_place_is_lost_and_the_trace_names_the_place():
    assert carried_in("52677", "port: 52677", "52677") == "both"
    assert carried_in("52677", "port: 52677", "") == "carry"
    assert carried_in("52677", "nothing", "v1.2\n52677") == "index"
    assert carried_in("52677", "nothing", "v1.2") == ""
    fx = Fixture("distributed", 1, 1.0, ("a", "b"), (
        Fact("f1", "port", "52677", True, "ingress port", chunk=0),
        Fact("f2", "uuid", "v6.83.4-figuk", True, "tag", chunk=1)))
    record = {"row_id": "s/m/r0/jx", "folds": [
        {"fold": 0, "chunks": [0], "carry": "ingress port: 52677", "index": "52677"},
        {"fold": 1, "chunks": [1], "carry": "lost it all", "index": "v6.83.4-figuk"}]}
    got = {(t["label"], t["fold"]): (t["present"], t["carried_in"])
           for t in fact_trace(record, fx)}
    assert got[("ingress port", 1)] == (True, "both")
    assert got[("ingress port", 2)] == (False, "")  # evicted and dropped: lost
    assert got[("tag", 2)] == (True, "index")
    assert recall_carrier("the carry", "", "Index") == "the carry"
    assert recall_carrier("the carry", "52677", "Index") == "the carry\n\nIndex\n52677"


def test_the_frontier_and_the_pick_on_a_synthetic_table():
    plan = AnalysisPlan.load()
    # tokens, recall per arm: b dominates c (fewer tokens, more recall); a is cheapest;
    # d is best; e ties d's recall at more tokens (dominated)
    pts = {"a": (100, 0.30), "b": (200, 0.85), "c": (300, 0.80), "d": (400, 0.90),
           "e": (500, 0.90)}
    rows = pd.DataFrame([{"sweep": "s", "model": "x", "arm": arm, "recall": r,
                          "retained_tokens": t, "valid": True, "repeat": i}
                         for arm, (t, r) in pts.items() for i in range(3)])
    out = retained_points(rows, plan).set_index("arm")
    assert out["frontier"].to_dict() == {"a": True, "b": True, "c": False, "d": True,
                                         "e": False}
    # b is within the 0.10 margin of the best (0.90) at the fewest tokens; a is not
    assert out["pick"].to_dict() == {"a": False, "b": True, "c": False, "d": False,
                                     "e": False}
    assert frontier([1, 1], [0.5, 0.5]) == [True, True]  # equal points dominate neither
    (p,) = picks(retained_points(rows, plan))
    assert (p["arm"], p["best_arm"]) == ("b", "d")


def test_where_every_arm_recalls_nothing_no_arm_is_picked_or_named_best():
    """The fewest tokens at recall 0 is no finding: the table marks no pick and the
    summary names no best or cheapest arm for that model."""
    from foldstudy.report.summary import retained_lines

    plan = AnalysisPlan.load()
    rows = pd.DataFrame([{"sweep": "s", "model": "x", "arm": arm, "recall": 0.0,
                          "retained_tokens": t, "valid": True, "repeat": i}
                         for arm, t in (("j", 300), ("m", 120)) for i in range(2)])
    assert not retained_points(rows, plan)["pick"].any()
    assert picks(retained_points(rows, plan)) == [{"sweep": "s", "model": "x", "arm": None}]
    text = "\n".join(retained_lines(rows, plan))
    assert "s x: no arm recalled any fact" in text
    assert "best:" not in text and ", recall " not in text


def test_an_arm_outside_the_matched_comparison_is_no_paper_row_and_no_verdict():
    plan = AnalysisPlan.load()
    assert {"jx", "mx"} <= plan.unmatched and plan.index_bases == {"jx": "j", "mx": "m"}
    rows, checks = frames([row("s", "x", a, r, n, k=10) for r in range(3)
                           for a, n in (("j", 2), ("m", 8), ("jx", 9), ("mine", 10))])
    plan = plan.with_unmatched(["mine"])
    ev = Evidence.of(rows, checks, plan)
    # a paper table's reader sees the matched arms only; the retained-token one every arm
    assert set(ev.reading(("table1",)).rows["arm"]) == {"j", "m"}
    assert set(ev.reading(("retained",)).rows["arm"]) == {"j", "m", "jx", "mine"}
    ci = CardInputs(margin=0.1, extra_pairs=(("j", "jx"), ("m", "mine"), ("j", "m")),
                      own={"mine": "m"})
    (card,) = cards(rows, checks, plan, ci)
    assert {(v.a, v.b) for v in card.contrasts} == {("j", "m")}
    (line,) = card.index_lines  # only jx ran: its line, against j, a rescue
    assert (line.arm, line.base, line.base_failing, line.rescued) == ("jx", "j", True, True)
    assert line.verdict.difference == pytest.approx(0.7)


def test_match_false_keeps_its_own_capacity_and_is_said_once_by_arm(tmp_path, config_schema,
                                                                    resources):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "prompt.md").write_text("Summarise the session. Keep every identifier.\n")
    arms = {"big": {"title": "my real compaction", "twin": "m", "system_prompt": "prompt.md",
                    "fold_budget_tokens": 9000, "carry_cap_tokens": 9000, "carry": "text",
                    "match": False}}
    (d / "arms.yaml").write_text(yaml.safe_dump({"arms": arms}))
    cfg = config(arms_file=str(d / "arms.yaml"))
    cfg["sweeps"]["mine"]["arms"] = ["j", "m", "big"]
    study = load(cfg, config_schema, resources)  # no capacity-match refusal
    said = [w for w in study.warnings if "match: false" in w]
    assert len(said) == 1 and said[0].startswith("arm big ")
    # its twin is no matched contrast: the decision reads own arms from own_arm_twins
    assert own_arm_twins(d / "arms.yaml") == {}
    arms["big"]["match"] = True
    (d / "arms.yaml").write_text(yaml.safe_dump({"arms": arms}))
    with pytest.raises(Exception, match="breaks the capacity match"):
        load(cfg, config_schema, resources)


def test_a_decide_pair_or_gate_on_an_arm_outside_the_matched_comparison_is_refused(
        tmp_path, config_schema, resources):
    """An index arm, a native arm and an own arm with `match: false` are in no card verdict
   , so a staged decision on one would never stop and a
    gate on one would fail every model: the config check names the key and the arm
    before any job."""
    from .test_sessions_config import problems

    d = tmp_path / "mine"
    d.mkdir()
    (d / "prompt.md").write_text("Summarise the session. Keep every identifier.\n")
    (d / "arms.yaml").write_text(yaml.safe_dump({"arms": {"big": {
        "title": "my real compaction", "twin": "m", "system_prompt": "prompt.md",
        "fold_budget_tokens": 9000, "carry_cap_tokens": 9000, "carry": "text",
        "match": False}}}))
    cfg = config(arms_file=str(d / "arms.yaml"),
                 decide={"pair": ["j", "jx"], "max_repeats": 10, "looks": 2,
                         "gate": {"arm": "big", "against": "native",
                                  "at_least": "equivalent"}})
    cfg["sweeps"]["mine"]["arms"] = ["j", "jx", "big", "native"]
    said = problems(cfg, config_schema, resources)
    assert "config.decide.pair[1]: 'jx' is an index arm, read on its card line against " \
        "its base arm j" in said
    assert "config.decide.gate.arm: 'big' is an own arm at its own capacity" in said
    assert "config.decide.gate.against: 'native' is the provider's compaction" in said
    assert "config.decide.pair[0]" not in said
    cfg["decide"] = {"pair": ["j", "big"], "max_repeats": 10, "looks": 2}
    assert "config.decide.pair[1]: 'big'" in problems(cfg, config_schema, resources)
    cfg["decide"] = {"pair": ["j", "m"], "max_repeats": 10, "looks": 2}
    cfg["sweeps"]["mine"]["arms"] = ["j", "jx", "m"]
    assert load(cfg, config_schema, resources).config["decide"]["pair"] == ["j", "m"]


def test_an_override_of_an_index_arm_is_refused_and_its_base_moves_it(config_schema,
                                                                       resources):
    from foldstudy.study.config import ConfigError

    cfg = config(arm_overrides={"jx": {"fold_budget_tokens": 100}})
    cfg["sweeps"]["mine"]["arms"] = ["j", "jx"]
    with pytest.raises(ConfigError, match="override j instead"):
        load(cfg, config_schema, resources)


def test_recall_band_is_pinned_and_brackets_the_mean():
    plan = AnalysisPlan.load()
    r = np.array([0.0, 0.5, 1.0, 1.0])
    lo, hi = recall_band(r, plan, "s/x/j")
    assert (lo, hi) == recall_band(r, plan, "s/x/j") and lo <= r.mean() <= hi


def test_the_study_check_resolves_index_arms_like_any_arm(config_schema, resources):
    cfg = config()
    cfg["sweeps"]["mine"]["arms"] = ["j", "jx", "m", "mx"]
    study = load(cfg, config_schema, resources)
    assert study.arms["jx"].has_index and not study.arms["j"].has_index
    assert Path(resources / "arms.yaml").is_file()


def test_the_retained_token_table_and_figure_are_built_for_every_sweep():
    from foldstudy.report.figures import make_figures
    from foldstudy.report.tables import build_tables

    from ..support.synthetic import synthetic_package

    rows, checks = synthetic_package(200, seed=3)
    plan = AnalysisPlan.load()
    (t,) = [t for t in build_tables(rows, checks, {}, plan) if t.name == "retained-tokens"]
    df = t.frame()
    valid = rows[rows["valid"].astype(bool)]
    assert set(df["sweep"]) == set(valid["sweep"])
    # one pick per (sweep, model), always on the frontier
    picks = df[df["pick"]]
    assert len(picks) == len(df.groupby(["sweep", "model"])) and picks["frontier"].all()
    figs = make_figures(rows, {}, plan)
    assert "retained-tokens" in figs


def _refused(table: dict, config_schema, resources) -> list[str]:
    """The config check's problems on the default sweep with this built-in arm table."""
    from foldstudy.study.config import ConfigError, load_study

    with pytest.raises(ConfigError) as e:
        load_study(config(), config_schema, table, resources)
    return e.value.problems


def test_an_index_share_that_leaves_the_summary_no_budget_is_refused(config_schema,
                                                                      resources):
    """index_share 0.999 resolved to a fold budget and carry cap of about two tokens, and
    the arm still read as "the base's fold with an index": a share past INDEX_SHARE_MAX
    is refused naming the file and key; at the most allowed, the summary keeps as much
    as the index."""
    from foldstudy.study.spec import INDEX_SHARE_MAX

    table = load_arm_table(resources)
    table["arms"]["jx"]["index_share"] = 0.999
    (said,) = _refused(table, config_schema, resources)
    assert said.startswith("resources/arms.yaml: arms.jx.index_share: 0.999 is not a share")
    assert f"at most {INDEX_SHARE_MAX:g}" in said
    table["arms"]["jx"]["index_share"] = INDEX_SHARE_MAX
    for scale in (1.0, 0.035, 0.01):
        a, b = (resolve_arm(x, table, resources, scale) for x in ("jx", "j"))
        assert a.carry_cap_tokens >= a.index_cap_tokens
        assert a.fold_budget_tokens >= b.fold_budget_tokens // 2


def test_an_index_arm_on_the_native_arm_is_refused(config_schema, resources):
    """A native arm has no fold of the study's to send with an index beside it: its
    base must be an arm inside the matched comparison, named in one line."""
    table = load_arm_table(resources)
    table["arms"]["jx"]["base"] = "native"
    (said,) = _refused(table, config_schema, resources)
    assert said.startswith("resources/arms.yaml: arms.jx.base: 'native' is ")
    assert "an index arm's base is an arm whose fold it sends" in said and " j " in said
    with pytest.raises(SpecError, match="arms.jx.base: 'native'"):
        resolve_arm("jx", table, resources, 1.0)


def test_match_false_on_a_built_in_arm_is_refused(config_schema, resources):
    """`match: false` written into m took it out of every matched contrast without a
    word; it belongs to a user's own arms file."""
    table = load_arm_table(resources)
    table["arms"]["m"]["match"] = False
    (said,) = _refused(table, config_schema, resources)
    assert said.startswith("resources/arms.yaml: arms.m.match: False is an own arm's key")
    assert "remove the key" in said
