"""The repeat plan: the formula against statsmodels where rows do not cluster,
against a simulation of clustered rows analysed by the study's own test, and the ICC a
pilot package gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from foldstudy.analysis import stats
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.power import (
    DIFFERENCE,
    EQUIVALENCE,
    PAPER_ICC,
    PLAN_SIMULATE_MAX,
    POOLED,
    DecidePlan,
    block_diff_sd,
    mde,
    min_blocks,
    pilot_iccs,
    power_at,
    power_markdown,
    power_rows,
    repeats_needed,
    repeats_to_decide,
    sweep_contrasts,
    tost_power,
    within_cell_icc,
)
from foldstudy.evidence.load import load_evidence, pilot_problem, write_table

from ..support.evidence_rows import frames, row


@pytest.mark.parametrize(("d", "k"), [(0.08, 14), (0.1, 10), (0.3, 1)])
def test_without_clustering_many_blocks_plan_statsmodels_paired_t_test(d, k):
    """ICC 0: a row of k checks is k independent trials, so a block's difference has
    variance (pa(1-pa) + pb(1-pb)) / k; above PLAN_SIMULATE_MAX blocks the plan is the
    one-sample t test on the block differences (statsmodels' TTestPower, noncentral t)."""
    sd = block_diff_sd(d, 0.0, k)
    blocks = TTestPower().solve_power(effect_size=d / sd, alpha=0.05, power=0.8)
    assert blocks > PLAN_SIMULATE_MAX  # else the plan is simulated, not this formula
    assert repeats_needed(d, 0.0, k) == math.ceil(blocks)
    for n in (PLAN_SIMULATE_MAX + 1, 40, 80):
        got = TTestPower().power(effect_size=d / sd, nobs=n, alpha=0.05)
        assert power_at(n, d, 0.0, k) == pytest.approx(got, abs=1e-6)


def test_fewer_blocks_than_the_permutation_test_needs_have_no_power():
    """2 / 2^5 = 0.0625 > 0.05: five blocks never give a significant sign-flip p."""
    assert min_blocks(0.05) == 6 and min_blocks(0.1) == 5
    assert power_at(5, 0.9, 0.0, 14) == 0.0 < power_at(6, 0.9, 0.0, 14)
    assert mde(5, 0.75, 14) is None and mde(6, 0.75, 14) is not None
    assert repeats_needed(0.99, 0.0, 14) == 6


def test_repeats_needed_round_up_to_a_closing_rotation():
    plain = repeats_needed(0.2, 0.75, 14)
    assert plain % 4  # not already a multiple, or the test proves nothing
    assert repeats_needed(0.2, 0.75, 14, rotation=4) == 4 * math.ceil(plain / 4)
    assert repeats_needed(0.2, 0.75, 14, models=4) == math.ceil(plain / 4)
    with pytest.raises(ValueError, match="outside"):
        repeats_needed(0.7, 0.75, 14, p_bar=0.3)


def test_mde_is_the_difference_the_repeats_detect():
    for n in (6, 12, 80):
        d = mde(n, 0.75, 14)
        assert power_at(n, d, 0.75, 14) >= 0.8 > power_at(n, d - 0.005, 0.75, 14)
    # more repeats, a smaller difference; clustering makes every one larger
    assert mde(6, 0.75, 14) > mde(12, 0.75, 14) > mde(12, 0.0, 14)
    assert mde(3, 0.75, 14, models=4) == mde(12, 0.75, 14)


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
    n = repeats_needed(d, icc, k)
    rng = np.random.default_rng(7)
    a = _beta_binomial_recalls(rng, 0.5 - d / 2, icc, k, (sims, n))
    b = _beta_binomial_recalls(rng, 0.5 + d / 2, icc, k, (sims, n))
    hits = sum(stats.sign_flip_test(b[i] - a[i], seed=i).p_value <= 0.05 for i in range(sims))
    # 300 draws: the simulated power's standard error is about 0.023
    assert hits / sims == pytest.approx(0.80, abs=0.07)
    # ...and the clustering is what it costs: without it far fewer blocks would do
    assert repeats_needed(d, 0.0, k) * 5 < n


def _pilot(d, seed: int = 3):
    """A pilot whose rows do not cluster within a cell: each row's checks are fourteen
    coin flips, at 0.2 under j and 0.8 under q (the arms differ, the rows of one do not)."""
    rng = np.random.default_rng(seed)
    rows, checks = frames([row("s", "a", arm, i, int(rng.binomial(14, p)))
                           for arm, p in (("j", 0.2), ("q", 0.8)) for i in range(30)])
    write_table(rows, d / "rows.csv")
    write_table(checks, d / "checks.csv")
    return d


def test_a_pilot_packages_within_cell_icc_is_the_one_used(tmp_path):
    """The ICC pooled over arms counts the arms' difference as the rows'
    clustering; within cells (one sweep, model and arm) it is what the paired test sees."""
    pilot = _pilot(tmp_path)
    plan = AnalysisPlan.load()
    rows, checks = load_evidence(pilot, plan.arm_order, plan.scenarios)
    c = checks.merge(rows[["row_id", "arm"]], on="row_id")
    pooled = stats.icc1(c["row_id"], c["correct"].astype(float)).value
    within = within_cell_icc(c["arm"], c["row_id"], c["correct"].astype(float))
    sweeps = {"s": {"arms": ["j", "q", "m"], "models": ["a", "b"], "repeats": 4,
                    "design": "latin"}}
    iccs = pilot_iccs(str(pilot), plan, sweep_contrasts(plan, [], sweeps["s"]["arms"]))
    got = iccs[("j", "q")]
    assert got.value == pytest.approx(within.value) and pooled > 0.3 > 0.1 > within.value
    assert str(pilot) in got.source and "within cells of j–q (60 rows, 2 cells" in got.source
    assert ("clipped to 0" in got.source) == within.clipped
    target = {"target_difference": 0.2, "alpha": 0.05, "power": 0.8}
    lines = power_rows(sweeps, lambda s: sweep_contrasts(plan, [], sweeps[s]["arms"]),
                       {"s": 14}, iccs, target,
                         lambda s, m, arm: (5, 0.01))
    jq = [r for r in lines if r["contrast"] == "j–q"]
    assert {r["icc"] for r in jq} == {f"{within.value:.3f}"}
    need = repeats_needed(0.2, within.value, 14, rotation=3)
    assert need % 3 == 0  # a Latin square of three arms closes every three repeats
    per_model = [r for r in lines if r["model"] == "a"]
    # the ladder's rungs (no compare pair of resources/analysis.yaml other than those
    # has both its arms in this sweep), then the third pair of a three-arm sweep, which
    # its cards read too (sweep_contrasts: every pair of two to four matched arms)
    assert [r["contrast"] for r in per_model] == ["j–q", "q–m", "j–m"]
    assert per_model[0]["repeats_needed"] == need and per_model[0]["calls"] == 10 * need
    pooled_lines = [r for r in jq if r["model"] == POOLED]
    assert pooled_lines and all(r["repeats_needed"] == repeats_needed(
        0.2, within.value, 14, rotation=3, models=2) for r in pooled_lines)


def test_a_negative_pilot_icc_is_planned_at_zero_and_the_plan_says_so(tmp_path):
    """Every row of the pilot recalls exactly 7 of 14: rows agree less than coin flips
    would, the ANOVA ICC is below 0, and a design effect below 1 would promise more than
    independent checks give (1-2 repeats needed, without a word)."""
    rows, checks = frames([row("s", "a", arm, i, 7) for arm in ("j", "q") for i in range(10)])
    write_table(rows, tmp_path / "rows.csv")
    write_table(checks, tmp_path / "checks.csv")
    plan = AnalysisPlan.load()
    got = pilot_iccs(str(tmp_path), plan, [("j", "q")])[("j", "q")]
    assert got.value == 0.0 and "clipped to 0" in got.source
    lines = power_rows({"s": {"arms": ["j", "q"], "models": ["a"], "repeats": 4,
                                "design": "latin"}}, lambda s: [("j", "q")], {"s": 14},
                         {("j", "q"): got}, {"target_difference": 0.2, "alpha": 0.05,
                                             "power": 0.8}, lambda s, m, arm: (5, 0.01))
    assert lines[0]["design_effect"] == "1.00" and lines[0]["repeats_needed"] >= 6
    assert "clipped to 0" in power_markdown(lines, {"target_difference": 0.2,
                                                      "alpha": 0.05, "power": 0.8})


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
    one = within_cell_icc(np.zeros(len(x)), rows, x)
    assert one.raw == pytest.approx(stats.icc1(rows, x).value) and one.n_cells == 1
    # two cells whose rows differ only by the cell: all of the pooled ICC is the cells'
    cells = np.repeat(["j", "q"], 14 * 20)
    between = np.where(cells == "j", 1.0, 0.0)
    assert stats.icc1(rows, between).value == pytest.approx(1.0)
    assert within_cell_icc(cells, rows, np.concatenate([between[:-1], [1.0]])).value < 0.1


def test_a_negative_within_cell_icc_is_clipped_and_says_so():
    # every row of the cell splits its checks the same way: rows agree less than chance
    rows, x = np.repeat([0, 1, 2], 2), np.array([1, 0, 1, 0, 1, 0])
    got = within_cell_icc(["c"] * 6, rows, x)
    assert got.raw == pytest.approx(-1.0) and got.clipped and got.value == 0.0
    assert within_cell_icc(["a", "a", "b", "b"], [0, 0, 1, 1], [1, 0, 1, 0]) is None


@pytest.mark.parametrize(("n", "icc"), [(4, 0.75), (5, 0.75), (8, 0.75), (12, 0.75),
                                        (8, 0.42), (12, 0.42)])
def test_the_plans_power_at_its_claimed_difference_is_the_tests(n, icc):
    """At the study's block counts the power the plan claims (0.8 at its mde; none at 4-5
    blocks, where no sign-flip p reaches 0.05) is what the sign-flip test gives on
    beta-binomial rows of fourteen checks (paper §4: ICC 0.750; 0.42 within cells)."""
    sims, d = 1500, mde(n, icc, 14) or 0.9
    claimed = power_at(n, d, icc, 14)
    rng = np.random.default_rng(1000 + n)
    a = _beta_binomial_recalls(rng, 0.5 - d / 2, icc, 14, (sims, n))
    b = _beta_binomial_recalls(rng, 0.5 + d / 2, icc, 14, (sims, n))
    got = float(np.mean(stats.sign_flip_p(b - a) <= 0.05))
    assert got == pytest.approx(claimed, abs=0.05)
    assert claimed == (0.0 if n < 6 else pytest.approx(0.8, abs=0.01))


def test_the_paper_packages_within_cell_icc_is_the_one_the_docs_quote(tmp_path):
    """docs/budget-and-power.md: the paper-shaped package's 581 valid rows of the
    distributed scenario, in 107 cells of sweep, model and arm, have a within-cell ICC
    of 0.477 against the 0.750 pooled (paper §4) that a plan without a pilot assumes."""
    from ..support.paper_package import paper_package_dir

    pilot = paper_package_dir(tmp_path / "paper")
    plan = AnalysisPlan.load()
    absent = ("x", "y")  # arms no sweep ran: the ICC over all arms stands in
    every = pilot_iccs(str(pilot), plan, [absent])[absent]
    assert round(every.value, 3) == 0.477
    assert "within cells of all arms (581 rows, 107 cells)" in every.source
    assert PAPER_ICC == 0.750 > every.value


# ------------------------------------------- the plan of a contrast still undecided

@pytest.mark.parametrize(("d", "icc"), [(0.0, 0.0), (0.03, 0.1)])
def test_the_equivalence_plan_is_tost_paireds_power(d, icc):
    """Required: "An undecided contrast says how many more repeats would decide it at the
    observed difference and ICC, and what those cost". Inside the margin only
    equivalence decides it, so the plan is TOST's power (power.tost_power), checked here
    against stats.tost_paired on simulated beta-binomial rows at two sizes and at the
    plan's own size, where it must reach the target: 1,000 studies each, a standard
    error of at most 0.016, so a tolerance of 0.05 (three of them)."""
    k, margin, sims = 14, 0.10, 1000
    plan = repeats_to_decide(d, icc, k, margin)
    assert plan.test == EQUIVALENCE and plan.difference == d
    n_plan = plan.repeats
    assert tost_power(n_plan, d, icc, k, margin) >= 0.8 > tost_power(n_plan - 1, d, icc,
                                                                         k, margin)
    rng = np.random.default_rng(33)
    for n in (n_plan // 2, n_plan, 2 * n_plan):
        shape = (sims, n)
        if icc:
            a = _beta_binomial_recalls(rng, 0.5 - d / 2, icc, k, shape)
            b = _beta_binomial_recalls(rng, 0.5 + d / 2, icc, k, shape)
        else:
            a = rng.binomial(k, 0.5 - d / 2, shape) / k
            b = rng.binomial(k, 0.5 + d / 2, shape) / k
        got = np.mean([stats.tost_paired(b[i], a[i], margin).equivalent for i in range(sims)])
        assert got == pytest.approx(tost_power(n, d, icc, k, margin), abs=0.05), n


def test_the_plan_to_decide_rises_toward_the_margin_from_both_sides():
    """Equivalence gets harder as the observed difference nears the margin from inside,
    a difference easier as it grows beyond it: the plan is monotone on each side."""
    inside = [repeats_to_decide(d, 0.3, 14, 0.10).repeats for d in (0.0, 0.02, 0.05, 0.08)]
    beyond = [repeats_to_decide(d, 0.3, 14, 0.10).repeats for d in (0.10, 0.2, 0.3, 0.5)]
    assert inside == sorted(inside) and inside[0] < inside[-1]
    assert beyond == sorted(beyond, reverse=True) and beyond[0] > beyond[-1]
    # more power needs more repeats; a closing rotation rounds up
    assert repeats_to_decide(0.02, 0.3, 14, 0.10, power=0.9).repeats > inside[1]
    assert repeats_to_decide(0.02, 0.3, 14, 0.10, rotation=7).repeats == \
        7 * math.ceil(inside[1] / 7)


def test_the_difference_plan_is_the_permutation_tests_not_the_t_formulas():
    """Beyond the margin the plan is the sign-flip test the card reads, simulated below
    PLAN_SIMULATE_MAX blocks: never fewer repeats than the t formula, more where the
    permutation test's discreteness and ties cost power (8-16 blocks at ICC 0.75), and
    the same above PLAN_SIMULATE_MAX. It is also the plan of the power.tsv lines."""
    more = 0
    for d in (0.35, 0.45, 0.6, 0.8):
        plan = repeats_to_decide(d, 0.75, 14, 0.10)
        t_plan = repeats_needed(d, 0.75, 14, simulate=False)
        assert plan.test == DIFFERENCE and plan.repeats >= t_plan
        assert plan.repeats == repeats_needed(d, 0.75, 14)
        assert power_at(plan.repeats, d, 0.75, 14) >= 0.8
        assert power_at(plan.repeats - 1, d, 0.75, 14) < 0.8
        more += plan.repeats > t_plan
    assert more >= 2
    far = repeats_to_decide(0.15, 0.75, 14, 0.10)  # hundreds of blocks: the t formula's
    assert far.repeats == repeats_needed(0.15, 0.75, 14, simulate=False)
    # the plan is made at two decimals of the difference and the ICC, so close
    # contrasts share simulated powers (power._simulated_power's cache)
    assert repeats_to_decide(-0.4512, 0.7481, 14, 0.10) == DecidePlan(
        repeats_to_decide(0.45, 0.75, 14, 0.10).repeats, DIFFERENCE, 0.45, 0.75)
