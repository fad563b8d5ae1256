"""The repeat plan (docs/design.md §6, Power): how many repeats each contrast
needs, before any call is paid for.

Rows are near-binary: paper §4 opens "a one-way random-effects decomposition of the
fourteen binary checks gives ICC = 0.750 and a design effect of 10.745", so "a
fourteen-check row is worth about 1.30 independent observations". The plan therefore
counts rows, not checks: a row's recall over k checks has variance
p(1 - p) * DE / k with DE = 1 + (k - 1) ICC (the beta-binomial row model).

The ICC that matters for a contrast is the one WITHIN a cell (rows of one sweep, model
and arm): the paired test compares two arms block by block, so a model's or an arm's
mean is not noise to it. The paper's 0.750 pools those differences into the rows'
clustering; on the paper-shaped package the within-cell ICC is lower
(within_cell_icc), and the plan uses the paper's figure only without a pilot, where it
is the conservative choice.

The test planned for is the study's own verdict test on a contrast (beyond the paper):
the exact sign-flip permutation test over blocks (stats.sign_flip_test), planned as the
paired t test on block differences with t quantiles, never the normal approximation:
    sd = sqrt((pa(1-pa) + pb(1-pb)) * DE / k),  pa, pb = p_bar -/+ d/2
    power(n) = P(|T| > t_{1-alpha/2, n-1}),  T ~ noncentral t(n - 1, d sqrt(n) / sd)
and no power at all where n blocks cannot give a permutation p at or below alpha
(2 / 2^n > alpha: fewer than 6 blocks at alpha 0.05). p_bar = 0.5 puts the row variance
at its largest, so the plan is conservative when the arms' recall is not known yet.
tests/analysis/test_power.py checks the formula against statsmodels' TTestPower and the claimed
power by simulating beta-binomial rows analysed with the permutation test.

A contrast already run and still undecided is planned by the test that would
decide it at the observed difference (decide_power, repeats_to_decide): the permutation
test above when the difference is at least the equivalence margin, else TOST at the
margin (tost_power), the test stats.tost_paired runs. The decision cards and a staged
study's next stage use that one plan.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

# scipy is imported by the functions that call it, as in stats.py: most jobs that import
# this module (cards, pages, figures) compute no power, and scipy.stats took about half a
# second of each such job's start.
from ..errors import StudyError
from ..evidence.load import load_evidence
from ..io import read_json, write_text, write_tsv
from ..run.audit import plan_inputs, run_prices
from ..study.design import cycle_length
from . import stats
from .compare import compare_pairs, pair_label
from .plan import AnalysisPlan

log = logging.getLogger(__name__)

# Paper §4 opening: the ICC of the fourteen-check scenario, used without a pilot.
PAPER_ICC = 0.750
POWER_COLUMNS = ["sweep", "contrast", "model", "icc", "icc_source", "k", "design_effect",
                 "repeats", "mde", "target_difference", "repeats_needed", "calls", "cost_usd"]
POOLED = "pooled"


# -- the ICC within cells --------------------------------------------------------


@dataclass(frozen=True)
class CellICC:
    """ICC(1) of binary checks grouped by row, with rows nested in cells (one sweep,
    model and arm): the rows' clustering once every cell's own mean is taken out."""

    value: float  # the estimate clipped at 0: what a plan uses
    raw: float  # the ANOVA estimate before clipping (can be below 0)
    clipped: bool  # raw < 0, so value is 0
    k: float  # checks per row (the nested ANOVA's k0 when rows differ in size)
    n_rows: int
    n_cells: int


def within_cell_icc(cells: Sequence | np.ndarray | pd.Series,
                    rows: Sequence | np.ndarray | pd.Series,
                    values: Sequence | np.ndarray | pd.Series) -> CellICC | None:
    """(MSB - MSW) / (MSB + (k0 - 1) MSW), MSB of row means about their CELL's mean.

    One entry per check: its cell label (e.g. "sweep|model|arm"), its row id, its value
    (1 correct, 0 not). MSB = sum n_i (m_i - M_c)^2 / (rows - cells), MSW the usual
    within-row mean square on N - rows degrees of freedom; k0 = (N - sum_c sum_i
    n_i^2 / N_c) / (rows - cells), k when every row has k checks. With one cell this is
    stats.icc1. A negative estimate (rows of a cell agree less than their checks would by
    chance) is clipped to 0 and flagged: a design effect below 1 would promise more than
    independent checks give. None without two rows in some cell or within-row checks.
    """
    df = pd.DataFrame({"c": np.asarray(cells), "g": np.asarray(rows),
                       "x": np.asarray(values, dtype=float)})
    per_row = df.groupby("g", sort=False).agg(c=("c", "first"), n=("x", "size"),
                                               m=("x", "mean"))
    per_cell = df.groupby("c", sort=False)["x"].agg(["size", "mean"])
    g, n, cells_n = len(per_row), len(df), len(per_cell)
    if g - cells_n < 1 or n <= g:
        return None
    cell_mean = per_row["c"].map(per_cell["mean"])
    ssb = float((per_row["n"] * (per_row["m"] - cell_mean) ** 2).sum())
    ssw = float(((df["x"] - df["g"].map(per_row["m"])) ** 2).sum())
    msb, msw = ssb / (g - cells_n), ssw / (n - g)
    sq = (per_row["n"] ** 2).groupby(per_row["c"]).sum()
    k0 = (n - float((sq / per_cell["size"]).sum())) / (g - cells_n)
    denom = msb + (k0 - 1) * msw
    if denom == 0:
        return None
    raw = (msb - msw) / denom
    return CellICC(max(0.0, raw), raw, raw < 0, k0, g, cells_n)


# -- the plan's arithmetic ---------------------------------------------------------


def block_diff_sd(difference: float, icc: float, k: float, p_bar: float = 0.5) -> float:
    """Standard deviation of one block's recall difference of two arms whose mean recalls
    are p_bar -/+ difference/2, each row a cluster of k checks at the given ICC."""
    pa, pb = p_bar - difference / 2, p_bar + difference / 2
    var = (pa * (1 - pa) + pb * (1 - pb)) * stats.design_effect(icc, k) / k
    return math.sqrt(max(0.0, var))


# Up to this many blocks the planned power is the sign-flip test's own, simulated on the
# beta-binomial row model: there its discreteness and the rows' ties (at ICC 0.75 about a
# sixth of the blocks differ by exactly 0) cost power the t formula does not see
# (measured 2026-12-01 at the t formula's mde, ICC 0.75, 3,000 simulated studies each:
# permutation power 0.64 at 8 blocks, 0.73 at 12, 0.76 at 16, 0.78 at 24 and 32, 0.79 at
# 48, where the t formula claims 0.80). Above it the t formula is within 0.02.
PLAN_SIMULATE_MAX = 32
PLAN_DRAWS = 1000  # simulated studies per planned power (standard error 0.013 at 0.8)
PLAN_FLIPS = 1000  # sign flips per simulated study above 10 blocks (exact below)
PLAN_SEED = 20261201


def power_at(blocks: float, difference: float, icc: float, k: float, p_bar: float = 0.5,
             alpha: float = 0.05) -> float:
    """Power of `blocks` paired blocks to detect `difference` (two-sided) with the
    sign-flip permutation test: 0 where it cannot reach alpha, simulated up to
    PLAN_SIMULATE_MAX blocks, the paired t test on block differences above."""
    n = int(blocks)
    if n < 2 or stats.sign_flip_min_p(n) > alpha:
        return 0.0
    if n <= PLAN_SIMULATE_MAX:
        return _simulated_power(n, float(difference), float(icc), round(k), float(p_bar),
                                float(alpha))
    return t_power(n, difference, icc, k, p_bar, alpha)


def t_power(blocks: int, difference: float, icc: float, k: float, p_bar: float = 0.5,
            alpha: float = 0.05) -> float:
    """Power of the paired t test on `blocks` block differences (noncentral t)."""
    from scipy import stats as sps
    sd = block_diff_sd(difference, icc, k, p_bar)
    if sd == 0:
        return 1.0
    df, nc = blocks - 1, difference * math.sqrt(blocks) / sd
    crit = sps.t.ppf(1 - alpha / 2, df)
    # scipy's far tail of a large nc can come back nan; it is below 1e-25 there
    wrong_side = float(np.nan_to_num(sps.nct.cdf(-crit, df, nc)))
    return min(1.0, float(sps.nct.sf(crit, df, nc)) + wrong_side)


@functools.lru_cache(maxsize=4096)
def _simulated_power(n: int, difference: float, icc: float, k: int, p_bar: float,
                     alpha: float) -> float:
    """Share of PLAN_DRAWS simulated studies of n blocks that the sign-flip test rejects
    at alpha. Each block pairs two rows of k checks whose success chances are Beta draws
    with means p_bar -/+ difference/2 and ICC = 1 / (a + b + 1). The uniforms are
    common to every difference (inverse-CDF draws), so the power rises smoothly with the
    difference and the plan is the same number on every run."""
    rng = np.random.default_rng([PLAN_SEED, n, k])
    u_row, u_check = rng.random((2, PLAN_DRAWS, n)), rng.random((2, PLAN_DRAWS, n, k))
    means = np.clip([p_bar + difference / 2, p_bar - difference / 2], 0.0, 1.0)
    chance = np.stack([_row_chance(u_row[i], m, icc) for i, m in enumerate(means)])
    recall = (u_check < chance[..., None]).mean(axis=-1)
    p = stats.sign_flip_p(recall[0] - recall[1], seed=PLAN_SEED, exact_max=10,
                          draws=PLAN_FLIPS)
    return float((p <= alpha).mean())


def _row_chance(u: np.ndarray, mean: float, icc: float) -> np.ndarray:
    """Rows' success chances at the given mean and ICC from uniforms u (inverse CDF)."""
    from scipy import stats as sps
    if mean in (0.0, 1.0) or icc <= 0:
        return np.full(u.shape, mean)
    if icc >= 1:
        return (u < mean).astype(float)
    s = (1 - icc) / icc
    return sps.beta.ppf(u, mean * s, (1 - mean) * s)


def min_blocks(alpha: float = 0.05) -> int:
    """The fewest blocks whose sign-flip test can give p <= alpha (6 at 0.05)."""
    n = 2
    while stats.sign_flip_min_p(n) > alpha:
        n += 1
    return n


def repeats_needed(difference: float, icc: float, k: float, p_bar: float = 0.5,
                   alpha: float = 0.05, power: float = 0.8, rotation: int = 1,
                   models: int = 1, simulate: bool = True) -> int:
    """The fewest repeats whose blocks detect `difference` with the given power.

    A repeat gives one block per model (`models` > 1 for a line pooled over a sweep's
    models), and the repeats are a multiple of `rotation`, the repeats that close the
    sweep's order design (study.design.cycle_length: 5 for a 5-arm Latin square, 10 for
    a 5-arm Williams design), so every arm leads equally often. The permutation test's
    power (power_at) is searched from the paired t test's answer up: below
    PLAN_SIMULATE_MAX blocks the test's discreteness and ties only cost power the t
    formula does not see (the figures above PLAN_SIMULATE_MAX), so no fewer repeats can
    reach it, and a plan costs a few simulated powers, not a search from 6 blocks.
    simulate=False: the t test's answer (it understates the repeats below
    PLAN_SIMULATE_MAX blocks). ValueError for a difference outside
    (0, 2 min(p_bar, 1 - p_bar)].
    """
    _check_difference(difference, p_bar)
    planned = _fewest_repeats(lambda n: t_power(n, difference, icc, k, p_bar, alpha), power,
                              math.ceil(min_blocks(alpha) / models), rotation, models)
    if not simulate:
        return planned
    return _fewest_repeats(lambda n: power_at(n, difference, icc, k, p_bar, alpha), power,
                           planned, rotation, models)


# Past this many blocks a plan is no plan: a difference or an equivalence this close to
# its limit is not decided by repeating the study.
PLAN_MAX_BLOCKS = 10**7


def _fewest_repeats(power_of: Callable[[int], float], power: float, start: int,
                    rotation: int, models: int) -> int:
    """The fewest repeats, a multiple of `rotation` and at least `start`, whose blocks
    (repeats x models) reach `power`: a galloping search then bisection over the
    multiples, on a power that rises with the blocks. Only multiples can be the answer,
    so only multiples are evaluated: a simulated power is the costly step of a plan."""
    lo = hi = max(1, math.ceil(start / rotation))
    step = 1
    while power_of(hi * rotation * models) < power:
        if hi * rotation * models > PLAN_MAX_BLOCKS:
            raise ValueError(f"no plan: {hi * rotation * models} blocks do not reach power "
                             f"{power:g}")
        lo, hi, step = hi + 1, hi + step, step * 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_of(mid * rotation * models) >= power else (mid + 1, hi)
    return hi * rotation


def tost_power(blocks: int, difference: float, icc: float, k: float, margin: float,
               p_bar: float = 0.5, alpha: float = 0.05) -> float:
    """Power of TOST at +/-margin (stats.tost_paired: two one-sided paired t tests, each
    at level alpha) on `blocks` block differences whose true mean is `difference`:
        P(T1 > c) + P(T2 < -c) - 1,  c = t_{1-alpha, n-1},
        T1 ~ noncentral t(n - 1, (difference + margin) sqrt(n) / sd),
        T2 ~ noncentral t(n - 1, (difference - margin) sqrt(n) / sd),
    sd = block_diff_sd at the difference. The two tests share the blocks' mean and sd,
    so this is P(both reject) >= P(T1 > c) + P(T2 < -c) - 1, exact when one of them
    always rejects (for large n) and otherwise a lower bound: the plan errs on more
    blocks, never fewer. tests/analysis/test_power.py checks it against simulated tost_paired."""
    from scipy import stats as sps
    n = int(blocks)
    if n < 2 or abs(difference) >= margin:
        return 0.0
    sd = block_diff_sd(difference, icc, k, p_bar)
    if sd == 0:
        return 1.0
    df, root = n - 1, math.sqrt(n) / sd
    crit = sps.t.ppf(1 - alpha, df)
    upper = _nct_sf(crit, df, (difference + margin) * root)
    lower = 1 - _nct_sf(-crit, df, (difference - margin) * root)
    return float(min(1.0, max(0.0, upper + lower - 1)))


def _nct_sf(x: float, df: int, nc: float) -> float:
    """P(T > x), T noncentral t; the normal limit where scipy's far tail gives nan."""
    from scipy import stats as sps
    got = float(sps.nct.sf(x, df, nc))
    return got if math.isfinite(got) else float(sps.norm.sf(x - nc))


EQUIVALENCE, DIFFERENCE = "equivalence", "difference"


@dataclass(frozen=True)
class DecidePlan:
    """What would decide a contrast: the repeats in all, the test that would decide it,
    and the difference and ICC the plan is made at."""

    repeats: int
    test: str  # DIFFERENCE: the sign-flip test; EQUIVALENCE: TOST at the margin
    difference: float
    icc: float


def plan_point(difference: float, icc: float, margin: float, p_bar: float = 0.5
               ) -> tuple[str, float, float]:
    """(test, difference, ICC) a decision is planned at. |difference| >= margin is
    decided by the sign-flip test, planned at |difference| and the ICC to two decimals
    (a plan is no finer, and _simulated_power's cache then serves every card and look
    that lands there); below the margin only equivalence can decide it, TOST planned at
    the observed difference itself (t-based, no simulation, and rounding could carry it
    onto the margin, where TOST never passes)."""
    d = abs(float(difference))
    if d < margin:
        return EQUIVALENCE, d, float(icc)
    top = 2 * min(p_bar, 1 - p_bar)
    return DIFFERENCE, min(max(round(d, 2), 0.01), top), round(float(icc), 2)


def decide_power(blocks: int, difference: float, icc: float, k: float, margin: float,
                 p_bar: float = 0.5, alpha: float = 0.05) -> float:
    """Power of `blocks` blocks to decide a contrast whose true difference is the
    observed one, by the test that would decide it (plan_point): the sign-flip test's
    (power_at) at or beyond the margin, TOST's (tost_power) inside it. The one plan the
    cards' repeats to decide and a staged study's next stage both use."""
    test, d, icc = plan_point(difference, icc, margin, p_bar)
    if test == EQUIVALENCE:
        return tost_power(blocks, d, icc, k, margin, p_bar, alpha)
    return power_at(blocks, d, icc, k, p_bar, alpha)


def repeats_to_decide(difference: float, icc: float, k: float, margin: float,
                      p_bar: float = 0.5, alpha: float = 0.05, power: float = 0.8,
                      rotation: int = 1, models: int = 1) -> DecidePlan:
    """The fewest repeats (a multiple of `rotation`) that decide a contrast at the
    observed difference and ICC with the given power, planned as it will be tested
    (decide_power): a difference by the simulated sign-flip plan (repeats_needed), an
    equivalence by TOST at the margin."""
    test, d, icc = plan_point(difference, icc, margin, p_bar)
    if test == DIFFERENCE:
        need = repeats_needed(d, icc, k, p_bar, alpha, power, rotation, models)
    else:
        need = _fewest_repeats(lambda n: tost_power(n, d, icc, k, margin, p_bar, alpha),
                               power, math.ceil(2 / models), rotation, models)
    return DecidePlan(need, test, d, icc)


def mde(repeats: int, icc: float, k: float, p_bar: float = 0.5, alpha: float = 0.05,
        power: float = 0.8, models: int = 1) -> float | None:
    """The minimum detectable difference of `repeats` x `models` blocks: the smallest
    difference they detect with the given power. None where those blocks cannot give a
    sign-flip p at or below alpha (fewer than 6 at alpha 0.05), or cannot reach the
    power at any difference recall allows."""
    n, top = repeats * models, 2 * min(p_bar, 1 - p_bar)
    if power_at(n, top, icc, k, p_bar, alpha) < power:
        return None
    lo, hi = 0.0, top  # bisection: the planned power is a step function at small n
    while hi - lo > 5e-4:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power_at(n, mid, icc, k, p_bar, alpha) >= power else (mid, hi)
    return hi


def _check_difference(difference: float, p_bar: float) -> None:
    top = 2 * min(p_bar, 1 - p_bar)
    if not 0 < difference <= top:
        raise ValueError(f"difference {difference} outside (0, {top:g}] at p_bar {p_bar:g}")


# -- where the ICC comes from ------------------------------------------------------


class PilotError(StudyError):
    """A pilot evidence package that gives no ICC."""


@dataclass(frozen=True)
class IccSource:
    value: float
    source: str


def pilot_iccs(pilot: str, plan: AnalysisPlan, pairs: list[tuple[str, str]]
               ) -> dict[tuple[str, str], IccSource]:
    """Per contrast, the within-cell ICC of a pilot's binary checks (cells: one sweep,
    model and arm), over its valid rows of the distributed scenario in the contrast's two
    arms, or over all its arms where those give none. Clipped at 0, and the source says
    so: a negative pilot ICC once gave design effect 0.00 and 1-2 repeats, without a
    word."""
    rows, checks = load_evidence(pilot, plan.arm_order, plan.scenarios)
    prim = rows[(rows["scenario"] == plan.primary_scenario) & rows["valid"].astype(bool)]
    c = checks.merge(prim[["row_id", "sweep", "model", "arm"]], on="row_id")
    c = c.assign(cell=c["sweep"].astype(str) + "|" + c["model"].astype(str) + "|"
                 + c["arm"].astype(str))
    every = _pilot_icc(c, pilot, "all arms")
    out = {}
    for pair in pairs:
        got = _pilot_icc(c[c["arm"].isin(pair)], pilot, pair_label(*pair))
        if got is None and every is None:
            raise PilotError(f"config.power.pilot: {pilot} has {len(prim)} valid rows of the "
                             f"{plan.primary_scenario} scenario; a within-cell ICC needs two "
                             "rows of one sweep, model and arm, with more than one check")
        out[pair] = got or every  # type: ignore[assignment]
    return out


def _pilot_icc(c: pd.DataFrame, pilot: str, over: str) -> IccSource | None:
    icc = within_cell_icc(c["cell"], c["row_id"], c["correct"].astype(float))
    if icc is None:
        return None
    note = f"; {icc.raw:.3f} clipped to 0" if icc.clipped else ""
    return IccSource(icc.value, f"pilot {pilot}, within cells of {over} ({icc.n_rows} "
                     f"rows, {icc.n_cells} cells{note})")


# -- the plan ---------------------------------------------------------------------


def contrasts(plan: AnalysisPlan, extra: list[list[str]]) -> list[tuple[str, str]]:
    """Every matched contrast the study tests: the ladder's consecutive rungs, then the
    compare pairs (resources/analysis.yaml, then the study config's), each once; a pair
    with an arm outside the matched comparison (arm.is_matched) is no such contrast (the
    paired-arms table still shows it)."""
    out = [(a, b) for a, b in zip(plan.ladder, plan.ladder[1:], strict=False)]
    out += [p for p in compare_pairs(plan, extra) if p not in out]
    return [(a, b) for a, b in out if a not in plan.unmatched and b not in plan.unmatched]


# A sweep of at most this many matched arms reads every pair of them by default
# (sweeps.X.compare unset): with two to four arms a family of at most six contrasts, so no
# pair the sweep ran goes unread. A sweep of more keeps the paper's rungs and the compare
# pairs, since every pair of twelve arms is a family of 66, which Holm's first step judges
# at alpha / 66.
PAIRS_UP_TO = 4
# sweeps.X.compare's words (config/schema/config.schema.yaml): every pair of the sweep's
# matched arms, or the ladder's consecutive rungs and the compare pairs.
COMPARE_PAIRS, COMPARE_LADDER = "pairs", "ladder"


def compare_mode(plan: AnalysisPlan, arms: Sequence[str],
                 compare: str | Sequence[Sequence[str]] | None = None
                 ) -> str | list[tuple[str, str]]:
    """How a sweep's cards choose their contrasts: its `compare` where the config sets
    one, else COMPARE_PAIRS for two to PAIRS_UP_TO matched arms, COMPARE_LADDER for
    more (or fewer: one arm has no pair)."""
    if compare is None:
        n = len(matched_arms(plan, arms))
        return COMPARE_PAIRS if 2 <= n <= PAIRS_UP_TO else COMPARE_LADDER
    if isinstance(compare, str):
        return compare
    return [(str(p[0]), str(p[1])) for p in compare]


def matched_arms(plan: AnalysisPlan, arms: Sequence[str]) -> list[str]:
    """The sweep's arms inside the matched comparison, each once, in the sweep's order."""
    return [a for a in dict.fromkeys(arms) if a not in plan.unmatched]


def every_pair(plan: AnalysisPlan, arms: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair of the sweep's matched arms, each as (a, b) with a the earlier in
    resources/arms.yaml's order (the paper's orientation: j before m), an arm that file
    does not hold (an own arm) after those, in the sweep's order."""
    rank = {a: i for i, a in enumerate(plan.arm_order)}
    mine = matched_arms(plan, arms)
    ordered = sorted(mine, key=lambda a: (rank.get(a, len(rank)), mine.index(a)))
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]]


def sweep_contrasts(plan: AnalysisPlan, extra: Sequence[Sequence[str]], arms: Sequence[str],
                    compare: str | Sequence[Sequence[str]] | None = None
                    ) -> list[tuple[str, str]]:
    """The matched contrasts one sweep's cards read (compare_mode): its own list of pairs;
    the ladder's rungs and the compare pairs both of whose arms it runs (`contrasts`);
    or those and then every other pair of its matched arms, each once in either order
    (a pair the ladder or a compare pair orients keeps that orientation)."""
    mode = compare_mode(plan, arms, compare)
    if not isinstance(mode, str):
        return [(a, b) for a, b in mode if a not in plan.unmatched and b not in plan.unmatched]
    ran = set(arms)
    out = [(a, b) for a, b in contrasts(plan, [list(p) for p in extra]) if {a, b} <= ran]
    if mode == COMPARE_PAIRS:
        out += [(a, b) for a, b in every_pair(plan, arms)
                if (a, b) not in out and (b, a) not in out]
    return out


def plan_line(sweep: str, pair: tuple[str, str], model: str, n_models: int, icc: IccSource,
              k: int, repeats: int, rotation: int, target: dict[str, float],
              run_cost: tuple[int, float | None]) -> dict[str, Any]:
    """One contrast's line: blocks = repeats x models (a pooled line pools the sweep's);
    repeats needed rounded up to a multiple of `rotation`, the repeats that close the
    sweep's order design. mde is empty where the configured blocks cannot give a
    sign-flip p at or below alpha."""
    alpha, power, d = target["alpha"], target["power"], target["target_difference"]
    found = mde(repeats, icc.value, k, alpha=alpha, power=power, models=n_models)
    need = repeats_needed(d, icc.value, k, alpha=alpha, power=power, rotation=rotation,
                          models=n_models)
    calls, usd = run_cost
    return {"sweep": sweep, "contrast": pair_label(*pair), "model": model,
            "icc": f"{icc.value:.3f}", "icc_source": icc.source, "k": k,
            "design_effect": f"{stats.design_effect(icc.value, k):.2f}", "repeats": repeats,
            "mde": "" if found is None else f"{found:.3f}", "target_difference": d,
            "repeats_needed": need, "calls": calls * need,
            "cost_usd": "" if usd is None else f"{usd * need:.2f}"}


def power_rows(sweeps: dict[str, dict[str, Any]],
               pairs: Callable[[str], list[tuple[str, str]]],
               graded: dict[str, int], iccs: dict[tuple[str, str], IccSource],
               target: dict[str, float],
               cost: Any) -> list[dict[str, Any]]:
    """One line per (sweep, contrast of its cards, model), and one pooled over the sweep's
    models. pairs(sweep): the contrasts the sweep's cards read (sweep_contrasts).
    cost(sweep, model, arm) -> (calls, usd | None) of one
    run (None: no call, or unknown price)."""
    out = []
    for sname, sw in sweeps.items():
        for pair in pairs(sname):
            per = {m: [cost(sname, m, a) for a in pair] for m in sw["models"]}
            rotation = cycle_length(sw["design"], len(sw["arms"]))
            for m in sw["models"]:
                out.append(plan_line(sname, pair, m, 1, iccs[pair], graded[sname],
                                     sw["repeats"],
                                     rotation, target, _sum(per[m])))
            if len(sw["models"]) > 1:
                pooled = _sum([c for m in sw["models"] for c in per[m]])
                out.append(plan_line(sname, pair, POOLED, len(sw["models"]), iccs[pair],
                                     graded[sname], sw["repeats"], rotation, target, pooled))
    return out


def _sum(costs: list[tuple[int, float | None]]) -> tuple[int, float | None]:
    usd = [u for _, u in costs]
    return sum(c for c, _ in costs), None if None in usd else sum(u for u in usd if u)


def power_markdown(rows: list[dict[str, Any]], target: dict[str, float]) -> str:
    """The Markdown view of power.tsv, with the assumption it rests on."""
    head = ["sweep", "contrast", "model", "icc", "repeats", "mde", "repeats_needed", "calls",
            "cost_usd"]
    sources = sorted({f"{r['icc']} ({r['icc_source']})" for r in rows})
    lines = ["# Repeat plan", "",
             "ICC (a pilot's within cells, else the paper's pooled): "
             f"{'; '.join(sources) or 'none'}. Target difference "
             f"{target['target_difference']:g} in mean recall at alpha {target['alpha']:g} "
             f"and power {target['power']:g}. The test assumed is the study's verdict test, "
             "the exact sign-flip permutation test over blocks: its power simulated on "
             f"beta-binomial rows up to {PLAN_SIMULATE_MAX} blocks, the paired t test on "
             "block differences above (rows as clusters, variance at recall 0.5: "
             "conservative). mde: the smallest difference the configured repeats detect "
             f"(empty: fewer than {min_blocks(target['alpha'])} blocks, where no "
             "permutation p reaches alpha); repeats_needed: per model (pooled: per model "
             "of the sweep), rounded up to a closing rotation of the sweep's design; "
             "calls and cost_usd: both arms at that many repeats, at the audit's "
             "worst-case prices.",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(r[c]) for c in head) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_power(prompts: dict[str, str], fixture_paths: dict[str, str],
                sweeps: dict[str, dict[str, Any]], arms: dict[str, dict[str, Any]],
                backends: dict[str, str], probe_dir: str, recall_max_tokens: int,
                power_cfg: dict[str, Any], extra_pairs: list[list[str]], plan: AnalysisPlan,
                out_tsv: str, out_md: str) -> list[dict[str, Any]]:
    """results/audit/power.tsv and power.md, before any call (the audit's prices)."""
    graded = {s: sum(1 for f in read_json(p)["facts"] if f["graded"])
              for s, p in fixture_paths.items()}
    cost = run_prices(prompts, fixture_paths, arms, backends, probe_dir, recall_max_tokens)
    per_sweep = {s: sweep_contrasts(plan, extra_pairs, sw["arms"], sw.get("compare"))
                 for s, sw in sweeps.items()}
    pairs = list(dict.fromkeys(p for ps in per_sweep.values() for p in ps))
    # Without a pilot, the paper's pooled 0.750: above the within-cell ICC it stands for
    # (0.477 on the paper-shaped package, tests/analysis/test_power.py), so the plan errs on more
    # repeats.
    iccs = (pilot_iccs(power_cfg["pilot"], plan, pairs) if power_cfg["pilot"]
            else dict.fromkeys(pairs, IccSource(PAPER_ICC, "paper §4 (pooled)")))
    target = {k: float(power_cfg[k]) for k in ("target_difference", "alpha", "power")}
    rows = power_rows(sweeps, per_sweep.__getitem__, graded, iccs, target, cost)
    write_tsv(rows, POWER_COLUMNS, out_tsv)
    write_text(power_markdown(rows, target), out_md)
    log.info("%d contrasts planned (ICC: %s)", len(rows),
             "; ".join(sorted({f"{i.value:.3f} {i.source}" for i in iccs.values()})))
    return rows


def power_stage(input: Any, output: Any, params: Any) -> list[dict[str, Any]]:
    """Rule power: results/audit/power.tsv and power.md."""
    prompts, fixtures = plan_inputs(input)
    return write_power(prompts, fixtures, params.sweeps, params.arms, params.backends,
                       params.probe_dir, params.recall_max_tokens, params.power,
                       params.compare_pairs, AnalysisPlan.load(input.analysis, input.arms_yaml),
                       output.tsv, output.md)
