"""The repeat plan (issue 26): the formula against statsmodels where rows do not cluster,
against a simulation of clustered rows analysed by the study's own test, and the ICC a
pilot package gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from foldstudy.analysis import power as P
from foldstudy.analysis import stats
from foldstudy.analysis.analysis import Analysis
from foldstudy.evidence.load import load_evidence, pilot_problem, write_table

from .support.evidence_rows import frames, row


@pytest.mark.parametrize(("d", "k"), [(0.2, 14), (0.1, 10), (0.3, 1)])
def test_without_clustering_the_plan_is_statsmodels_paired_t_test(d, k):
    """ICC 0: a row of k checks is k independent trials, so a block's difference has
    variance (pa(1-pa) + pb(1-pb)) / k, and the plan is the one-sample t test on the
    block differences (statsmodels' TTestPower, t quantiles, noncentral t)."""
    sd = P.block_diff_sd(d, 0.0, k)
    blocks = TTestPower().solve_power(effect_size=d / sd, alpha=0.05, power=0.8)
    assert P.repeats_needed(d, 0.0, k) == max(math.ceil(blocks), P.min_blocks(0.05))
    for n in (6, 12, 40):
        got = TTestPower().power(effect_size=d / sd, nobs=n, alpha=0.05)
        assert P.power_at(n, d, 0.0, k) == pytest.approx(got, abs=1e-6)


def test_fewer_blocks_than_the_permutation_test_needs_have_no_power():
    """2 / 2^5 = 0.0625 > 0.05: five blocks never give a significant sign-flip p."""
    assert P.min_blocks(0.05) == 6 and P.min_blocks(0.1) == 5
    assert P.power_at(5, 0.9, 0.0, 14) == 0.0 < P.power_at(6, 0.9, 0.0, 14)
    assert P.mde(5, 0.75, 14) is None and P.mde(6, 0.75, 14) is not None
    assert P.repeats_needed(0.99, 0.0, 14) == 6


def test_repeats_needed_round_up_to_a_closing_rotation():
    plain = P.repeats_needed(0.2, 0.75, 14)
    assert plain % 4  # not already a multiple, or the test proves nothing
    assert P.repeats_needed(0.2, 0.75, 14, rotation=4) == 4 * math.ceil(plain / 4)
    assert P.repeats_needed(0.2, 0.75, 14, models=4) == math.ceil(plain / 4)
    with pytest.raises(ValueError, match="outside"):
        P.repeats_needed(0.7, 0.75, 14, p_bar=0.3)


def test_mde_is_the_difference_the_repeats_detect():
    for n in (6, 12, 80):
        d = P.mde(n, 0.75, 14)
        assert d is not None and P.power_at(n, d, 0.75, 14) == pytest.approx(0.8, abs=1e-3)
    # more repeats, a smaller difference; clustering makes every one larger
    assert P.mde(6, 0.75, 14) > P.mde(12, 0.75, 14) > P.mde(12, 0.0, 14)
    assert P.mde(3, 0.75, 14, models=4) == P.mde(12, 0.75, 14)


def _beta_binomial_recalls(rng: np.random.Generator, mean: float, icc: float, k: int,
                           shape: tuple[int, int]) -> np.ndarray:
    """Rows whose k checks share a Beta-distributed success chance: ICC = 1/(a+b+1)."""
    s = (1 - icc) / icc
    p = rng.beta(mean * s, (1 - mean) * s, size=shape)
    return rng.binomial(k, p) / k


def test_clustered_rows_analysed_by_the_studys_own_test_match_the_plan():
    """ICC 0.75, fourteen checks (paper §4): simulate the planned number of blocks and
    analyse each draw with stats.sign_flip_test, as the study decides a contrast."""
    icc, k, d, sims = 0.75, 14, 0.25, 300
    n = P.repeats_needed(d, icc, k)
    rng = np.random.default_rng(7)
    a = _beta_binomial_recalls(rng, 0.5 - d / 2, icc, k, (sims, n))
    b = _beta_binomial_recalls(rng, 0.5 + d / 2, icc, k, (sims, n))
    hits = sum(stats.sign_flip_test(b[i] - a[i], seed=i).p_value <= 0.05 for i in range(sims))
    # 300 draws: the simulated power's standard error is about 0.023
    assert hits / sims == pytest.approx(0.80, abs=0.07)
    # ...and the clustering is what it costs: without it far fewer blocks would do
    assert P.repeats_needed(d, 0.0, k) * 5 < n


def _pilot(d, seed: int = 3):
    """A pilot whose rows do not cluster: each row's checks are fourteen coin flips."""
    rng = np.random.default_rng(seed)
    rows, checks = frames([row("s", "a", arm, i, int(rng.binomial(14, 0.5)))
                           for arm in ("j", "q") for i in range(30)])
    write_table(rows, d / "rows.csv")
    write_table(checks, d / "checks.csv")
    return d


def test_a_pilot_packages_icc_is_the_one_used(tmp_path):
    pilot = _pilot(tmp_path)
    an = Analysis.load()
    rows, checks = load_evidence(pilot, an.arm_order, an.scenarios)
    prim = rows[(rows["scenario"] == an.primary_scenario) & rows["valid"].astype(bool)]
    c = checks[checks["row_id"].isin(prim["row_id"])]
    want = stats.icc1(c["row_id"], c["correct"].astype(float)).value
    got = P.pilot_icc(str(pilot), an)
    assert got.value == pytest.approx(want) and abs(want - P.PAPER_ICC) > 0.5
    assert str(pilot) in got.source
    sweeps = {"s": {"arms": ["j", "q", "m"], "models": ["a", "b"], "repeats": 4,
                    "design": "latin"}}
    target = {"target_difference": 0.2, "alpha": 0.05, "power": 0.8}
    lines = P.power_rows(sweeps, P.contrasts(an, []), {"s": 14}, got, target,
                         lambda s, m, arm: (5, 0.01))
    assert {r["icc"] for r in lines} == {f"{want:.3f}"}
    need = P.repeats_needed(0.2, want, 14, rotation=3)
    per_model = [r for r in lines if r["model"] == "a"]
    # the ladder's rungs; no compare pair of resources/analysis.yaml other than those
    # has both its arms in this sweep
    assert [r["contrast"] for r in per_model] == ["j–q", "q–m"]
    assert all(r["repeats_needed"] == need and r["calls"] == 10 * need for r in per_model)
    pooled = [r for r in lines if r["model"] == P.POOLED]
    assert pooled and all(r["repeats_needed"] == P.repeats_needed(0.2, want, 14, rotation=3,
                                                                  models=2) for r in pooled)


def test_a_pilot_that_is_not_an_evidence_package_is_refused_by_name(tmp_path):
    assert pilot_problem(None) is None
    assert "not a directory" in pilot_problem(str(tmp_path / "nowhere"))
    (tmp_path / "rows.csv").write_text("row_id,sweep\nx,s\n")
    problem = pilot_problem(str(tmp_path))
    assert problem.startswith("config.power.pilot:") and "lacks the column" in problem
    (tmp_path / "rows.csv").unlink()
    assert "has no rows.csv" in pilot_problem(str(tmp_path))


def test_within_cell_icc_with_one_cell_is_icc1_and_takes_cell_means_out():
    rng = np.random.default_rng(5)
    recalls = _beta_binomial_recalls(rng, 0.5, 0.5, 14, (1, 40))[0]
    rows = np.repeat(np.arange(40), 14)
    x = np.concatenate([rng.permutation([1] * int(r * 14) + [0] * (14 - int(r * 14)))
                        for r in recalls])
    one = P.within_cell_icc(np.zeros(len(x)), rows, x)
    assert one.raw == pytest.approx(stats.icc1(rows, x).value) and one.n_cells == 1
    # two cells whose rows differ only by the cell: all of the pooled ICC is the cells'
    cells = np.repeat(["j", "q"], 14 * 20)
    between = np.where(cells == "j", 1.0, 0.0)
    assert stats.icc1(rows, between).value == pytest.approx(1.0)
    assert P.within_cell_icc(cells, rows, np.concatenate([between[:-1], [1.0]])).value < 0.1


def test_a_negative_within_cell_icc_is_clipped_and_says_so():
    # every row of the cell splits its checks the same way: rows agree less than chance
    rows, x = np.repeat([0, 1, 2], 2), np.array([1, 0, 1, 0, 1, 0])
    got = P.within_cell_icc(["c"] * 6, rows, x)
    assert got.raw == pytest.approx(-1.0) and got.clipped and got.value == 0.0
    assert P.within_cell_icc(["a", "a", "b", "b"], [0, 0, 1, 1], [1, 0, 1, 0]) is None
