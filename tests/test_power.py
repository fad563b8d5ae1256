"""The repeat plan (issue 26): the formula against statsmodels where rows do not cluster,
against a simulation of clustered rows analysed by the study's own test, and the ICC a
pilot package gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower

from foldstudy.analysis import power as P
from foldstudy.analysis import stats
from foldstudy.analysis.analysis import Analysis
from foldstudy.evidence.load import load_evidence, pilot_problem, write_table

from .support.evidence_rows import frames, row


@pytest.mark.parametrize(("d", "k"), [(0.2, 14), (0.1, 10), (0.3, 1)])
def test_without_clustering_the_plan_is_statsmodels_two_sample_test(d, k):
    """ICC 0: a row of k checks is k independent trials, so rows x k checks per arm is
    the two-sample z-test's n (symmetric about 0.5, both arms have sd sqrt(p(1-p)))."""
    sd = math.sqrt((0.5 - d / 2) * (0.5 + d / 2))
    checks = NormalIndPower().solve_power(effect_size=d / sd, alpha=0.05, power=0.8, ratio=1)
    assert P.repeats_needed(d, 0.0, k) == math.ceil(checks / k)
    for n in (3, 12, 40):
        got = NormalIndPower().power(effect_size=d / sd, nobs1=n * k, alpha=0.05, ratio=1)
        assert P.power_at(n, d, 0.0, k) == pytest.approx(got, abs=1e-3)


def test_mde_is_the_difference_the_repeats_detect():
    for n in (4, 12, 80):
        d = P.mde(n, 0.75, 14)
        assert d is not None and P.power_at(n, d, 0.75, 14) == pytest.approx(0.8, abs=1e-3)
    # fewer repeats, a larger difference; clustering makes every one larger
    assert P.mde(1, 0.75, 14) > P.mde(4, 0.75, 14) > P.mde(12, 0.75, 14) > P.mde(12, 0.0, 14)


def _beta_binomial_recalls(rng: np.random.Generator, mean: float, icc: float, k: int,
                           shape: tuple[int, int]) -> np.ndarray:
    """Rows whose k checks share a Beta-distributed success chance: ICC = 1/(a+b+1)."""
    s = (1 - icc) / icc
    p = rng.beta(mean * s, (1 - mean) * s, size=shape)
    return rng.binomial(k, p) / k


def test_clustered_rows_analysed_by_the_studys_own_test_match_the_plan():
    """ICC 0.75, fourteen checks (paper §4): simulate the planned number of pairs and
    analyse each draw with stats.paired_bootstrap, as the study tests a contrast."""
    icc, k, d, sims = 0.75, 14, 0.25, 300
    n = P.repeats_needed(d, icc, k)
    rng = np.random.default_rng(7)
    a = _beta_binomial_recalls(rng, 0.5 - d / 2, icc, k, (sims, n))
    b = _beta_binomial_recalls(rng, 0.5 + d / 2, icc, k, (sims, n))
    models = np.repeat(["m0", "m1"], [n // 2, n - n // 2])  # pairs resampled within model
    hits = 0
    for i in range(sims):
        r = stats.paired_bootstrap(b[i], a[i], models, resamples=400, seed=i)
        hits += r is not None and (r.low > 0 or r.high < 0)
    # 300 draws: the simulated power's standard error is about 0.023
    assert hits / sims == pytest.approx(0.80, abs=0.07)
    # ...and the clustering is what it costs: without it far fewer pairs would do
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
    sweeps = {"s": {"arms": ["j", "q", "m"], "models": ["a", "b"], "repeats": 4}}
    target = {"target_difference": 0.2, "alpha": 0.05, "power": 0.8}
    lines = P.power_rows(sweeps, P.contrasts(an, []), {"s": 14}, got, target,
                         lambda s, m, arm: (5, 0.01))
    assert {r["icc"] for r in lines} == {f"{want:.3f}"}
    need = P.repeats_needed(0.2, want, 14)
    per_model = [r for r in lines if r["model"] == "a"]
    # the ladder's rungs; no compare pair of resources/analysis.yaml other than those
    # has both its arms in this sweep
    assert [r["contrast"] for r in per_model] == ["j–q", "q–m"]
    assert all(r["repeats_needed"] == need and r["calls"] == 10 * need for r in per_model)
    pooled = [r for r in lines if r["model"] == P.POOLED]
    assert pooled and all(r["repeats_needed"] == math.ceil(need / 2) for r in pooled)


def test_a_pilot_that_is_not_an_evidence_package_is_refused_by_name(tmp_path):
    assert pilot_problem(None) is None
    assert "not a directory" in pilot_problem(str(tmp_path / "nowhere"))
    (tmp_path / "rows.csv").write_text("row_id,sweep\nx,s\n")
    problem = pilot_problem(str(tmp_path))
    assert problem.startswith("config.power.pilot:") and "lacks the column" in problem
    (tmp_path / "rows.csv").unlink()
    assert "has no rows.csv" in pilot_problem(str(tmp_path))
