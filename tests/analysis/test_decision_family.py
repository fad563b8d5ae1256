"""Error control across a family of contrasts (decide.family): Holm on
fixed designs, alpha split over a staged pair's family, raw and adjusted p on each card.
The family-wise error by simulation is bench/decide_sim.py's."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from foldstudy.analysis.card import Card, ContrastVerdict, StagedSummary
from foldstudy.analysis.decision import CardInputs, cards, planned_family_size
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.sequential import nominal_levels
from foldstudy.analysis.verdict import HOLM, SPLIT, holm
from foldstudy.report.card_words import card_markdown, contrast_line
from foldstudy.study.spec import load_arm_table, resolve_arm

from ..conftest import ROOT
from ..support.evidence_rows import arm_rows, frames

PLAN = AnalysisPlan.load()
CI = CardInputs(margin=0.10, decide_pair=("j", "m"))
# ten blocks of ten checks: j at 0.5; a null model's m one check up on nine blocks and
# one down on the tenth, whose exact sign-flip p is 22/1024 = 0.021 (below 0.05 alone)
NULL_M = [0.6] * 9 + [0.4]


def _sweep(models: dict[str, tuple[list[float], list[float]]]
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [r for model, (j, m) in models.items()
            for arm, recalls in (("j", j), ("m", m))
            for r in arm_rows("s", model, arm, recalls, k=10)]
    return frames(rows)


def _decide(c: Card) -> ContrastVerdict:
    return next(v for v in c.contrasts if v.source == "decide")


def test_holm_matches_statsmodels_and_adjusts_rows_apart():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(4)
    p = rng.uniform(0, 0.2, size=(6, 7))
    got = holm(p)
    for row, adj in zip(p, got, strict=True):
        assert adj == pytest.approx(multipletests(row, method="holm")[1])
    assert holm(np.array([0.01])) == pytest.approx([0.01])


def test_one_better_model_among_four_null_ones_gives_one_better_after_adjustment():
    """Done when: "A stand-in sweep with one better model and four null ones
    gives one 'better' after adjustment." Alone, the null model's p of 0.021 reads
    "m better"; in the sweep's family of five it does not."""
    models = {"better": ([0.1] * 10, [0.9] * 10), "lucky": ([0.5] * 10, NULL_M),
              **{f"null{i}": ([0.5] * 10, [0.5, 0.6, 0.4, 0.5, 0.6, 0.4, 0.5, 0.5, 0.6, 0.4])
                 for i in range(3)}}
    rows, checks = _sweep(models)
    alone = {c.model: _decide(c) for c in
             cards(rows, checks, PLAN, dataclasses.replace(CI, family="model"))}
    assert alone["lucky"].p_permutation == pytest.approx(22 / 1024)
    assert alone["lucky"].word == "m better" and alone["lucky"].family_size == 1
    family = {c.model: _decide(c) for c in cards(rows, checks, PLAN, CI)}
    better = [m for m, v in family.items() if v.word == "m better"]
    assert better == ["better"]
    lucky = family["lucky"]
    assert lucky.family_size == 5 and lucky.adjustment == HOLM
    assert lucky.p_adjusted == pytest.approx(4 * 22 / 1024)  # the second smallest of five
    assert lucky.p_permutation == pytest.approx(22 / 1024)  # the raw p stays on the card
    assert lucky.word != "m better"
    line = contrast_line(family["better"])
    assert "(Holm, family of 5) vs 0.0500" in line


def test_a_staged_pair_is_read_at_its_split_level_and_shown_adjusted():
    """The looks tested the pair at alpha / 4 (the family's planned size): the card keeps
    that word, and shows p x 4 against the look's nominal level x 4."""
    rows, checks = _sweep({"mod": ([0.2, 0.1, 0.3, 0.2, 0.0, 0.1, 0.2, 0.1],
                                   [0.9, 1.0, 0.8, 1.0, 0.9, 1.0, 0.9, 1.0])})
    nominal = nominal_levels([0.5, 1.0], 0.05 / 4)[-1]
    staged = StagedSummary(stop="difference", nominal=nominal, p=2 / 256, repeats=8,
                           looks=2, family_size=4, max_repeats=12)
    c = cards(rows, checks, PLAN, dataclasses.replace(CI, staged={("s", "mod"): staged}))[0]
    v = _decide(c)
    assert v.adjustment == SPLIT and v.family_size == 4
    assert v.p_adjusted == pytest.approx(4 * v.p_permutation)
    assert v.level == pytest.approx(4 * nominal)
    assert (v.word == "m better") == (v.p_permutation <= nominal)


def test_the_looks_spend_alpha_over_the_family_size():
    from types import SimpleNamespace

    from foldstudy.analysis.staging import look_state

    rows = pd.DataFrame([{"row_id": f"s/dear/r{r}/{a}", "sweep": "s", "model": "dear",
                          "arm": a, "repeat": r, "valid": True, "invalid_reason": "",
                          "recall": x, "n_graded": 10, "n_correct": round(10 * x)}
                         for r in range(8) for a, x in (("j", 0.5), ("m", 0.6))])
    params = SimpleNamespace(decide={"pair": ["j", "m"], "margin": 0.1, "max_repeats": 24,
                                     "looks": 3}, alpha=0.05, power=0.8, rotation=2, seed=1,
                             models=["dear"], budget_usd=None)
    one = look_state("s", 1, None, rows, pd.DataFrame(columns=["row_id", "correct"]), {},
                     params, {"dear": 0.1}, 0.0)
    six = look_state("s", 1, None, rows, pd.DataFrame(columns=["row_id", "correct"]), {},
                     params, {"dear": 0.1}, 0.0, family_size=6)
    assert (one["family_size"], six["family_size"]) == (1, 6)
    assert six["alpha"] == pytest.approx(0.05 / 6)
    assert six["models"]["dear"]["nominal"] == pytest.approx(
        nominal_levels([8 / 24], 0.05 / 6)[-1])
    assert six["models"]["dear"]["nominal"] < one["models"]["dear"]["nominal"]


def test_the_planned_family_counts_the_contrasts_the_sweep_runs():
    n = planned_family_size(PLAN, [["j", "m"]], {}, ("j", "m"), ["j", "m"], 24, "sweep")
    assert n == 24  # one contrast (the pair, also a compare pair: read once) per model
    assert planned_family_size(PLAN, [], {}, ("j", "m"), ["j", "m"], 24, "model") == 1


def test_the_planned_family_counts_the_native_line_a_card_will_read():
    """A sweep running a native arm beside matched ones gets the line "the
    provider's compaction against your best arm" on every card, a contrast of the family;
    the staged looks split alpha by a size that counts it, or the cards' Holm share and
    the looks' split would spend more than alpha between them."""
    arms = ["j", "m", "native"]
    n = planned_family_size(PLAN, [], {}, ("j", "m"), arms, 4, "sweep")
    assert n == 4 * 2  # the pair and the native line, per model
    assert planned_family_size(PLAN, [], {}, ("j", "m"), arms, 4, "model") == 2
    # a native arm with nothing matched to read it against has no line
    assert planned_family_size(PLAN, [], {}, None, ["native"], 4, "model") == 1
    # and the plan matches what the cards then read: one line per model beside the pair
    rows, checks = frames([r for arm, rs in {"j": [0.2] * 4 + [0.3] * 4,
                                              "m": [0.9] * 8, "native": [0.5] * 8}.items()
                           for r in arm_rows("s", "mod", arm, rs, k=10)])
    table = load_arm_table(ROOT / "resources")
    ci = CardInputs(margin=0.1, decide_pair=("j", "m"),
                      arms={a: resolve_arm(a, table, ROOT / "resources", 0.25) for a in arms})
    (card,) = cards(rows, checks, PLAN, ci)
    assert len([v for v in card.contrasts if v.p_permutation is not None]) == 2


def _arms(arms: list[str], blocks: int = 6) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One model, each arm at its own recall over `blocks` blocks of ten checks (the
    later in the list, the higher), so every pair has a difference to read."""
    rng = np.random.default_rng(3)
    rows = [r for i, arm in enumerate(arms) for r in arm_rows(
        "s", "a", arm, list(np.clip(0.2 + 0.05 * i + rng.choice([-0.1, 0, 0.1], blocks),
                                    0, 1).round(1)), k=10)]
    return frames(rows)


def _pairs(c: Card) -> set[frozenset[str]]:
    return {frozenset((v.a, v.b)) for v in c.contrasts}


def test_a_sweep_of_two_to_four_matched_arms_reads_every_pair_of_them():
    """j–m is neither a rung of the ladder (j–q, q–m) nor a compare pair of
    resources/analysis.yaml, yet a sweep of j, m (and a ceiling outside the matched
    comparison) reads it; with q beside them, all three pairs, in the paper's
    orientation, one family of three."""
    rows, checks = _arms(["j", "m", "uncompacted"])
    (c,) = cards(rows, checks, PLAN, CardInputs(margin=0.10))
    assert [(v.a, v.b, v.source) for v in c.contrasts] == [("j", "m", "analysis")]
    assert c.unread_pairs == [] and c.family_cost is None
    rows, checks = _arms(["m", "q", "j"])
    ci = CardInputs(margin=0.10, sweeps={"s": {"arms": ["m", "q", "j"], "compare": None}})
    (c,) = cards(rows, checks, PLAN, ci)
    assert [(v.a, v.b) for v in c.contrasts] == [("j", "q"), ("q", "m"), ("j", "m")]
    assert {v.family_size for v in c.contrasts} == {3}
    assert planned_family_size(PLAN, [], {}, None, ["m", "q", "j"], 1, "model") == 3
    assert planned_family_size(PLAN, [], {}, None, ["m", "q", "j"], 1, "model",
                               compare="ladder") == 2


def test_a_ladder_card_names_the_pairs_it_does_not_read_and_the_key_that_adds_them():
    rows, checks = _arms(["j", "q", "m"])
    ci = CardInputs(margin=0.10, sweeps={"s": {"arms": ["j", "q", "m"], "compare": "ladder"}})
    (c,) = cards(rows, checks, PLAN, ci)
    assert _pairs(c) == {frozenset("jq"), frozenset("qm")}
    assert c.unread_pairs == [("j", "m")] and c.compare_key == "sweeps.s.compare"
    text = "\n".join(card_markdown(c, PLAN))
    assert "Pairs not read: this card reads no contrast of j–m (1 pair" in text
    assert "`sweeps.s.compare: pairs`" in text
    # its own list: exactly those pairs, and the rest named
    ci = dataclasses.replace(ci, sweeps={"s": {"arms": ["j", "q", "m"],
                                               "compare": [["m", "j"]]}})
    (c,) = cards(rows, checks, PLAN, ci)
    assert [(v.a, v.b) for v in c.contrasts] == [("m", "j")]
    assert c.unread_pairs == [("j", "q"), ("q", "m")]
    # a card from decision.json reads the same
    assert Card.from_dict(json.loads(json.dumps(c.to_dict()))) == c


def test_a_sweep_of_many_arms_keeps_the_ladder_and_says_what_its_family_costs():
    """Five matched arms: the paper's rungs and the compare pairs that the sweep runs
    (j–q, q–m, j–t, j–p), not all ten pairs; the card names the six it leaves out and
    what a family of four costs each contrast: Holm's first step at 0.05 / 4, which a
    sign-flip test reaches only from 8 blocks (6 alone: 2 / 2^n <= alpha)."""
    arms = ["j", "p", "q", "m", "t"]
    rows, checks = _arms(arms)
    (c,) = cards(rows, checks, PLAN, CardInputs(margin=0.10))
    assert _pairs(c) == {frozenset(p) for p in ("jq", "qm", "jt", "jp")}
    assert len(c.unread_pairs) == 10 - 4
    f = c.family_cost
    assert f is not None and f.size == 4 and f.level == pytest.approx(0.05 / 4)
    assert (f.min_blocks, f.min_blocks_alone) == (8, 6)
    assert f.repeats is not None and f.repeats_alone is not None
    assert f.repeats > f.repeats_alone
    text = "\n".join(card_markdown(c, PLAN))
    assert "The family's size costs power: its 4 contrasts" in text
    assert "`sweeps.s.compare` (`[[a, b], ...]`)" in text
    # every pair, asked for: a family of ten, all read
    ci = CardInputs(margin=0.10, sweeps={"s": {"arms": arms, "compare": "pairs"}})
    (c,) = cards(rows, checks, PLAN, ci)
    assert len(c.contrasts) == 10 and c.unread_pairs == []
    assert c.family_cost is not None and c.family_cost.size == 10
