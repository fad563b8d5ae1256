"""Error control across a family of contrasts (decide.family): Holm on
fixed designs, alpha split over a staged pair's family, raw and adjusted p on each card.
The family-wise error by simulation is bench/decide_sim.py's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from foldstudy.analysis.decision import (
    HOLM,
    SPLIT,
    Card,
    CardInputs,
    ContrastVerdict,
    cards,
    holm,
    planned_family_size,
)
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.sequential import nominal_levels
from foldstudy.report.decision import contrast_line
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
    staged = {"stop": "difference", "nominal": nominal, "p": 2 / 256, "repeats": 8,
              "looks": 2, "family_size": 4}
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
