"""Deciding a pair in stages (docs/design.md §6, Decision: "`decide:` runs a pair in
stages through a checkpoint, with Lan–DeMets alpha spending"). Pure: numbers in, numbers
out; the workflow's checkpoint (rules/decide.smk) and the bench (bench/decide_sim.py) both
call these.

A model's contrast is looked at after each stage. At a look with information fraction
t = blocks so far / max blocks, the alpha spent so far is the Lan–DeMets approximation of
the O'Brien–Fleming boundary (Lan & DeMets 1983):
    alpha(t) = 2 - 2 Phi(z_{1 - alpha/2} / sqrt(t)),
so almost nothing is spent early and nearly all of alpha is left for the last look. The
look's two-sided boundary c_k solves
    P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1})
for the score process (corr(Z_i, Z_j) = sqrt(t_i / t_j)), and the look rejects when the
exact sign-flip permutation p (stats.sign_flip_test) is at most 2 (1 - Phi(c_k)), the
nominal level. Stopping for equivalence (TOST at that same nominal level) can only stop
a study before it would declare a difference, so it never raises the chance of a false
difference; bench/decide_sim.py measures that chance under a true null.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# scipy is imported by the functions that call it, as in stats.py: most jobs that import
# this module (cards, pages, gates) never compute a boundary, and scipy.stats took about
# half a second of each such job's start.
from ..study.design import first_stage, round_up  # noqa: F401 - staging's names
from . import stats
from .power import decide_power

DIFFERENCE, EQUIVALENT, CONTINUE, UNDECIDED = "difference", "equivalent", "continue", "undecided"
# A look where both arms recalled nothing in any valid row: zero differences that TOST
# would call equivalent, though nothing was compared (the card says no contrast is read).
ALL_LOST = "every arm lost every fact"


def obf_spent(t: float, alpha: float) -> float:
    """Alpha spent by information fraction t (0 < t <= 1), O'Brien–Fleming shape."""
    from scipy import stats as sps
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    return float(2 - 2 * sps.norm.cdf(sps.norm.ppf(1 - alpha / 2) / math.sqrt(t)))


def _inside(bounds: Sequence[float], fractions: Sequence[float], drift: float = 0.0
            ) -> float:
    """P(|Z_i| < c_i for every look i) for the score process at these fractions, whose
    statistic at information t has mean drift * sqrt(t) (0: no difference)."""
    from scipy import stats as sps
    k = len(bounds)
    t = np.asarray(fractions, float)
    mean = drift * np.sqrt(t)
    if k == 1:
        return float(sps.norm.cdf(bounds[0] - mean[0]) - sps.norm.cdf(-bounds[0] - mean[0]))
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    c = np.asarray(bounds, float)
    mvn = sps.multivariate_normal(mean=mean, cov=cov)
    return float(mvn.cdf(c, lower_limit=-c))


def _next_boundary(bounds: list[float], fractions: Sequence[float], target: float
                   ) -> float:
    """The boundary of the look after `bounds` that spends `target` more alpha."""
    from scipy import optimize
    if target <= 1e-12:
        return math.inf
    before = _inside(bounds, fractions[:-1])

    def gap(c: float) -> float:
        return before - _inside([*bounds, c], fractions) - target

    return float(optimize.brentq(gap, 0.5, 12.0, xtol=1e-6))


def boundaries(fractions: Sequence[float], alpha: float) -> list[float]:
    """The two-sided z boundary of each look, spending obf_spent(t) by look t."""
    from scipy import stats as sps
    out: list[float] = []
    spent = 0.0
    for i, t in enumerate(fractions):
        target = obf_spent(t, alpha) - spent
        if i == 0:
            out.append(float(sps.norm.isf(target / 2)))
        else:
            out.append(_next_boundary(out, fractions[: i + 1], target))
        spent = obf_spent(t, alpha)
    return out


def nominal_levels(fractions: Sequence[float], alpha: float) -> list[float]:
    """Each look's nominal two-sided p level: 2 (1 - Phi(c_k))."""
    return list(_nominal(tuple(round(t, 12) for t in fractions), alpha))


@functools.lru_cache(maxsize=4096)
def _nominal(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    # a study looks at few distinct fractions, and each boundary is a root-finding over
    # multivariate normal integrals: computed once per (fractions, alpha)
    from scipy import stats as sps
    return tuple(float(2 * sps.norm.sf(c)) for c in boundaries(fractions, alpha))


def inflation_factor(fractions: Sequence[float], alpha: float, power: float) -> float:
    """How much larger a staged design's maximum must be than the fixed design's for the
    same power at the same alpha (Jennison & Turnbull 2000, §2.7): (theta_K /
    theta_1)^2, theta the drift of the score process at full information at which the
    looks' boundaries reject with probability `power`. At the same maximum a staged
    design is less powerful than the fixed level-alpha test, the most powerful there;
    this is the maximum that buys the power back."""
    from scipy import optimize
    from scipy import stats as sps
    def drift(ts: Sequence[float]) -> float:
        bounds = boundaries(ts, alpha)
        z = float(sps.norm.isf(alpha / 2) + sps.norm.ppf(power))
        return float(optimize.brentq(lambda th: 1 - _inside(bounds, ts, th) - power,
                                     0.5 * z, 2 * z, xtol=1e-6))

    return (drift(fractions) / drift([1.0])) ** 2


@dataclass(frozen=True)
class Look:
    blocks: int
    nominal: float
    p: float
    equivalent: bool
    outcome: str  # DIFFERENCE, EQUIVALENT, CONTINUE, UNDECIDED


def look(diffs: Sequence[float], fractions: Sequence[float], alpha: float, margin: float,
         final: bool, seed: int = 0) -> Look:
    """The look after the last of `fractions` (this look's t last): diffs are the
    blocks' b - a so far."""
    d = np.asarray(diffs, float)
    nominal = nominal_levels(fractions, alpha)[-1]
    p = stats.sign_flip_test(d, seed).p_value
    t = stats.tost_paired(d, np.zeros(len(d)), margin, nominal)
    eq = bool(t is not None and t.equivalent)
    outcome = (DIFFERENCE if p <= nominal and d.mean() != 0 else EQUIVALENT if eq
               else UNDECIDED if final else CONTINUE)
    return Look(len(d), nominal, p, eq, outcome)


def next_stage(done: int, fractions: Sequence[float], diffs: Sequence[float], icc: float,
               k: float, margin: float, alpha: float, power: float, max_repeats: int,
               looks_left: int, rotation: int, p_bar: float = 0.5) -> int:
    """Repeats to add before the next look, from the plan at the ICC so far: the fewest
    (a multiple of the rotation) at which the test that would decide the contrast at the
    observed difference (power.decide_power: the sign-flip test at or beyond the margin,
    TOST inside it, the plan the decision cards use) reaches `power` at the level the
    next look would have under the spending; at most an equal share of what remains over
    the looks left, so the looks are not spent at once. Before any block the plan is a
    difference at the margin. The last look takes all that remains."""
    left = max_repeats - done
    if looks_left <= 1 or left <= 0:
        return max(left, 0)
    d = float(np.mean(diffs)) if len(diffs) else margin
    share = min(left, round_up(math.ceil(left / looks_left), rotation))
    for step in range(rotation, share, rotation):
        n = done + step
        # the level to six decimals, as the plan's difference and ICC are rounded
        # (power.plan_point): its simulated powers are then reused from look to look
        level = round(nominal_levels([*fractions, n / max_repeats], alpha)[-1], 6)
        if decide_power(n, d, icc, k, margin, p_bar, level) >= power:
            return step
    return share


# ------------------------------------------------------------------ simulation


def beta_binomial_recalls(rng: np.random.Generator, n: int, p: float, icc: float, k: int
                          ) -> np.ndarray:
    """n rows' recalls over k checks, the checks of a row correlated at `icc` (the row
    model of paper §4: a row's success probability ~ Beta with mean p and
    1 / (a + b + 1) = icc)."""
    if icc <= 0:
        return rng.binomial(k, p, size=n) / k
    s = 1 / icc - 1
    return rng.binomial(k, rng.beta(p * s, (1 - p) * s, size=n)) / k


@dataclass(frozen=True)
class Staged:
    outcome: str  # DIFFERENCE, EQUIVALENT, UNDECIDED
    sign: int  # +1: b better, -1: a better, 0: no difference declared
    repeats: int
    looks: int


def staged_study(block_diffs: np.ndarray, icc: float, k: float, margin: float,
                 alpha: float, power: float, max_repeats: int, looks: int, rotation: int,
                 budget_repeats: int | None = None, seed: int = 0) -> Staged:
    """Run the staged procedure over blocks drawn in order (block_diffs[:n] is what n
    repeats give): stage, look, stop when decided, at max_repeats or when the budget's
    repeats run out (then undecided)."""
    cap = max_repeats if budget_repeats is None else min(max_repeats, budget_repeats)
    done, fractions = 0, []
    size = first_stage(max_repeats, looks, rotation)
    for i in range(looks):
        done = min(done + size, cap)
        fractions.append(done / max_repeats)
        final = i == looks - 1 or done >= max_repeats
        lk = look(block_diffs[:done], fractions if not final else [*fractions[:-1], 1.0],
                  alpha, margin, final, seed)
        if lk.outcome != CONTINUE or done >= cap:
            out = lk.outcome if lk.outcome != CONTINUE else UNDECIDED
            sign = int(np.sign(block_diffs[:done].mean())) if out == DIFFERENCE else 0
            return Staged(out, sign, done, i + 1)
        size = next_stage(done, fractions, block_diffs[:done], icc, k, margin, alpha,
                          power, max_repeats, looks - i - 1, rotation)
    return Staged(UNDECIDED, 0, done, looks)


def fixed_study(block_diffs: np.ndarray, alpha: float, margin: float, seed: int = 0
                ) -> Staged:
    """The fixed design at the same maximum: one look at every block."""
    lk = look(block_diffs, [1.0], alpha, margin, True, seed)
    sign = int(np.sign(block_diffs.mean())) if lk.outcome == DIFFERENCE else 0
    return Staged(lk.outcome, sign, len(block_diffs), 1)
