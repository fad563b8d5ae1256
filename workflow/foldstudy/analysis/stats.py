"""The inference the paper uses (§4), one pure function each: data in, numbers out.

Rows are near-binary (a row recalls nearly all of its facts or nearly none), so the
fourteen checks of a row are not fourteen trials: every estimate here either works at
the row level or says how much the checks are worth (ICC and the design effect).
scipy and statsmodels do the distributions; the few lines written here are the ones
those libraries do not offer at this scale (one-way ICC over 10^5 groups, a bootstrap
stratified by model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

# scipy and statsmodels are imported by the functions that call them: most jobs that read
# this module (pages, traces, tables) call none of them, and the two took about a second
# of each such job's start.


@dataclass(frozen=True)
class ICC:
    """One-way random-effects ICC(1) of binary checks grouped by row, and what it implies."""

    value: float
    k: float  # checks per row (the ANOVA k0 when rows differ in size)
    n_rows: int
    n_checks: int
    design_effect: float  # 1 + (k - 1) ICC
    effective_n_per_row: float  # k / design effect
    # The exact F interval of ICC(1) (Shrout & Fleiss 1979; McGraw & Wong 1996), and the
    # design effect and row worth at its ends.
    ci_low: float
    ci_high: float
    design_effect_ci_low: float
    design_effect_ci_high: float
    effective_n_per_row_ci_low: float
    effective_n_per_row_ci_high: float


def icc1(groups: Sequence | np.ndarray | pd.Series, values: Sequence | np.ndarray | pd.Series,
         confidence: float = 0.95) -> ICC | None:
    """ICC(1) from the one-way ANOVA mean squares: (MSB - MSW) / (MSB + (k0 - 1) MSW).

    k0 is the ANOVA average group size, (N - sum n_i^2 / N) / (g - 1), which is k when
    every row has k checks. Computed with a groupby rather than an OLS with one dummy per
    row, which at 60,000 rows would not fit in memory; tests check it against
    statsmodels' anova_lm. None when there are fewer than two rows or no within-row
    replication.
    """
    df = pd.DataFrame({"g": np.asarray(groups), "x": np.asarray(values, dtype=float)})
    agg = df.groupby("g", sort=False)["x"].agg(["count", "mean"])
    g, n = len(agg), len(df)
    if g < 2 or n <= g:
        return None
    grand = df["x"].mean()
    ssb = float((agg["count"] * (agg["mean"] - grand) ** 2).sum())
    dev = df["x"].to_numpy() - df["g"].map(agg["mean"]).to_numpy()
    ssw = float((dev**2).sum())
    msb, msw = ssb / (g - 1), ssw / (n - g)
    k0 = (n - float((agg["count"] ** 2).sum()) / n) / (g - 1)
    denom = msb + (k0 - 1) * msw
    if denom == 0:
        return None
    value = (msb - msw) / denom
    low, high = _icc_interval(msb, msw, k0, g, n, confidence)
    de, de_low, de_high = (design_effect(x, k0) for x in (value, low, high))
    return ICC(value=value, k=k0, n_rows=g, n_checks=n, design_effect=de,
               effective_n_per_row=_row_worth(k0, de), ci_low=low, ci_high=high,
               design_effect_ci_low=de_low, design_effect_ci_high=de_high,
               effective_n_per_row_ci_low=_row_worth(k0, de_high),
               effective_n_per_row_ci_high=_row_worth(k0, de_low))


def _row_worth(k: float, de: float) -> float:
    # ICC(1) can reach -1/(k-1), where the design effect is 0: no finite row worth.
    return k / de if de > 0 else float("inf")


def _icc_interval(msb: float, msw: float, k: float, g: int, n: int, confidence: float
                  ) -> tuple[float, float]:
    """The exact F-distribution interval of ICC(1): F = MSB/MSW on (g-1, N-g) degrees of
    freedom, its bounds mapped through (F - 1) / (F + k - 1). nan when MSW is 0."""
    from scipy import stats as sps
    if msw == 0:
        return float("nan"), float("nan")
    f = msb / msw
    a = (1 - confidence) / 2
    fl = f / sps.f.ppf(1 - a, g - 1, n - g)
    fu = f * sps.f.ppf(1 - a, n - g, g - 1)
    return float((fl - 1) / (fl + k - 1)), float((fu - 1) / (fu + k - 1))


def design_effect(icc: float, k: float) -> float:
    """Kish's design effect of k correlated observations per cluster: 1 + (k - 1) ICC."""
    return 1.0 + (k - 1.0) * icc


@dataclass(frozen=True)
class Fisher:
    """Two-sided Fisher exact test of a successes of n1 against b successes of n2."""

    a: int
    n1: int
    b: int
    n2: int
    odds_ratio: float
    p: float


def fisher(a: int, n1: int, b: int, n2: int) -> Fisher | None:
    """Fisher exact on rows (not checks): the unit that is near-independent. None if empty."""
    from scipy import stats as sps
    if n1 <= 0 or n2 <= 0:
        return None
    res = sps.fisher_exact([[a, n1 - a], [b, n2 - b]], alternative="two-sided")
    return Fisher(a, n1, b, n2, float(res.statistic), float(res.pvalue))


@dataclass(frozen=True)
class PairedDiff:
    """Mean paired difference (first minus second) with a percentile bootstrap interval."""

    diff: float
    low: float
    high: float
    n_pairs: int
    n_models: int


def paired_bootstrap(first: np.ndarray, second: np.ndarray, strata: Sequence | np.ndarray,
                     resamples: int, seed: int, confidence: float = 0.95
                     ) -> PairedDiff | None:
    """Bootstrap interval of mean(first - second) over pairs, resampling pairs within model.

    A pair is one block (sweep, model, repeat) in which both arms ran validly, so the
    difference is paired on everything the block holds fixed. Resampling within each
    model keeps every model's share of the pairs fixed: the interval is about rows, not
    about which models happened to be measured. Seeded, so the interval is a number a
    lock can pin.
    """
    d = np.asarray(first, dtype=float) - np.asarray(second, dtype=float)
    strata = np.asarray(strata)
    if len(d) == 0:
        return None
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples)
    labels = pd.unique(strata)
    for s in labels:
        ds = d[strata == s]
        idx = rng.integers(0, len(ds), size=(resamples, len(ds)))
        total += ds[idx].sum(axis=1)
    boots = total / len(d)
    alpha = 1.0 - confidence
    low, high = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return PairedDiff(float(d.mean()), float(low), float(high), len(d), len(labels))


def block_bootstrap_sums(counts: np.ndarray, strata: Sequence | np.ndarray, resamples: int,
                         seed: int) -> np.ndarray:
    """Column sums of `counts` (blocks x columns) over resamples of whole blocks drawn
    within each stratum (model), as (resamples x columns).

    A block's facts are not independent (paper §4 opening: ICC 0.750 of the checks within
    a row), so a resample draws blocks, never facts; every column of one draw uses the
    same blocks, so a statistic over several columns (a curve over k folds) varies as one
    curve. Strata as in paired_bootstrap. Seeded, so a band can be pinned.
    """
    counts = np.asarray(counts, dtype=float)
    strata = np.asarray(strata)
    out = np.zeros((resamples, counts.shape[1]))
    rng = np.random.default_rng(seed)
    draws = np.arange(resamples)[:, None]
    for s in pd.unique(strata):
        sel = strata == s
        n = int(sel.sum())
        weight = np.zeros((resamples, n))
        np.add.at(weight, (draws, rng.integers(0, n, size=(resamples, n))), 1.0)
        out += weight @ counts[sel]
    return out


def percentile_band(samples: np.ndarray, confidence: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per column of (resamples x columns), the percentile interval of the non-nan draws
    (nan where a column has none)."""
    alpha = 1.0 - confidence
    cols = samples.shape[1]
    low, high = np.full(cols, np.nan), np.full(cols, np.nan)
    for c in range(cols):
        col = samples[:, c][~np.isnan(samples[:, c])]
        if len(col):
            low[c], high[c] = np.quantile(col, [alpha / 2, 1 - alpha / 2])
    return low, high


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den elementwise, nan where den is 0."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def block_bootstrap_share(carried: np.ndarray, facts: np.ndarray,
                          strata: Sequence | np.ndarray, resamples: int, seed: int,
                          confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of a pooled share sum(carried) / sum(facts), per column, with
    whole blocks resampled within model (block_bootstrap_sums). A column whose resampled
    facts sum to zero has nan ends."""
    carried, facts = np.asarray(carried, dtype=float), np.asarray(facts, dtype=float)
    cols = carried.shape[1] if carried.ndim == 2 else 0
    if len(carried) == 0:
        return np.full(cols, np.nan), np.full(cols, np.nan)
    sums = block_bootstrap_sums(np.hstack([carried, facts]), strata, resamples, seed)
    return percentile_band(ratio(sums[:, :cols], sums[:, cols:]), confidence)


@dataclass(frozen=True)
class TOST:
    """Two one-sided paired t tests against +-margin, and the verdict: equivalent when
    p < alpha. p is None when every paired difference is the same: the t statistics are
    undefined, and the verdict is then whether that one difference lies inside the
    margin (the limit of both tests as the variance goes to zero)."""

    p: float | None
    margin: float
    n_pairs: int
    equivalent: bool


def tost_paired(first: np.ndarray, second: np.ndarray, margin: float, alpha: float = 0.05
                ) -> TOST | None:
    """statsmodels' paired TOST: is mean(first - second) inside (-margin, +margin)?

    Paper §4.1: "an equivalence test at a margin of 0.10 in either direction does not
    pass". None with fewer than two pairs; with no variance in the differences (every
    block the same, e.g. every row of both arms at 1.000), the verdict without a p.
    """
    from statsmodels.stats.weightstats import ttost_paired
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if len(first) < 2:
        return None
    d = first - second
    if np.ptp(d) == 0:
        return TOST(None, margin, len(first), bool(abs(d[0]) < margin))
    p, _, _ = ttost_paired(first, second, -margin, margin)
    return TOST(float(p), margin, len(first), bool(p < alpha))


@dataclass(frozen=True)
class Pearson:
    r: float
    p: float
    n: int
    ci_low: float  # Fisher z interval (scipy's); nan when n <= 3
    ci_high: float


def pearson(x: Sequence | np.ndarray, y: Sequence | np.ndarray, confidence: float = 0.95
            ) -> Pearson | None:
    """scipy's Pearson r with its n and Fisher-z interval; None when n < 3 or either side
    is constant."""
    from scipy import stats as sps
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    res = sps.pearsonr(x, y)
    if len(x) > 3:
        ci = res.confidence_interval(confidence)
        low, high = float(ci.low), float(ci.high)
    else:
        low = high = float("nan")
    return Pearson(float(res.statistic), float(res.pvalue), len(x), low, high)


def separation_weight(n: int, k: int) -> float:
    """Chance that k of n units, drawn at random, are exactly the k lowest: 1 / C(n, k).

    Paper §4.7: a complete separation of eight models into 6 rescued and 2 not, found
    post hoc on a continuous variable, weighs about p = 1/C(8, 2) = 0.036, not what
    "no overlap" suggests.
    """
    from scipy import special
    return 1.0 / float(special.comb(n, k, exact=True))


@dataclass(frozen=True)
class MeanN:
    """A mean that never travels without its denominator."""

    mean: float | None
    n: int


def mean_n(values: Sequence | np.ndarray | pd.Series) -> MeanN:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return MeanN(float(v.mean()) if len(v) else None, int(len(v)))


# Up to this many blocks the sign-flip test enumerates all 2^n flips (2^20 is about a
# million sums, under a second); above it, SIGN_FLIP_DRAWS seeded flips (the p of a
# 0.05 result then has a Monte-Carlo standard error of 0.0015).
SIGN_FLIP_EXACT_MAX = 20
SIGN_FLIP_DRAWS = 20_000
_FLIP_CHUNK = 1 << 16


@dataclass(frozen=True)
class SignFlip:
    """The sign-flip permutation test of paired block differences (beyond the paper).

    p_value is two-sided: the share of sign assignments whose |sum| reaches the observed
    |sum|. min_p is the smallest two-sided p any data of n_blocks blocks can give,
    2 / 2^n (0.125 at 4 blocks, 0.0625 at 5, 0.03125 at 6): below it no difference is
    ever significant, however large.
    """

    mean_diff: float
    p_value: float
    n_blocks: int
    min_p: float
    exact: bool  # all 2^n flips enumerated (else SIGN_FLIP_DRAWS seeded draws)

    def can_reach(self, alpha: float) -> bool:
        """Whether n_blocks blocks can give any p at or below alpha."""
        return sign_flip_min_p(self.n_blocks) <= alpha


def sign_flip_min_p(n_blocks: int) -> float:
    """The smallest two-sided sign-flip p attainable with n blocks: min(1, 2^(1-n))."""
    return min(1.0, 2.0 ** (1 - n_blocks))


def sign_flip_test(diffs: Sequence[float] | np.ndarray, seed: int = 0) -> SignFlip:
    """Exact two-sided sign-flip permutation test that the paired differences centre on 0.

    Each block (sweep, model, repeat) gives one difference of the two arms' recalls.
    Under the null the two arms are exchangeable within a block, so each difference is
    as likely to carry either sign, whatever the rows' clustering: the test holds its
    size at any number of blocks, where the paired bootstrap (paper §4) rejects a true
    null of clustered rows 15-16% of the time at 4-5 blocks (tests/analysis/test_stats.py).
    Exact over all 2^n flips up to SIGN_FLIP_EXACT_MAX blocks; above, a Monte-Carlo
    p = (1 + hits) / (1 + draws) from a generator seeded with `seed` (a valid p, never 0).
    A non-finite difference is a bug upstream and raises ValueError.
    """
    d = np.asarray(diffs, dtype=float)
    n = len(d)
    p = float(sign_flip_p(d[None, :], seed)[0])
    return SignFlip(float(d.mean()) if n else 0.0, p, n, sign_flip_min_p(n),
                    n <= SIGN_FLIP_EXACT_MAX)


def sign_flip_p(diffs: np.ndarray, seed: int = 0, exact_max: int = SIGN_FLIP_EXACT_MAX,
                draws: int = SIGN_FLIP_DRAWS) -> np.ndarray:
    """Two-sided sign-flip p of each row of `diffs` (studies x blocks): the share of sign
    assignments whose |sum| reaches the row's. All 2^n when n <= exact_max, else `draws`
    seeded flips shared by every row, p = (1 + hits) / (1 + draws)."""
    d = np.atleast_2d(np.asarray(diffs, dtype=float))
    if not np.all(np.isfinite(d)):
        raise ValueError(f"sign_flip_test: non-finite difference in {d.tolist()}")
    n = d.shape[1]
    observed = np.abs(d.sum(axis=1)) - 1e-9 * np.maximum(1.0, np.abs(d).sum(axis=1))
    if n <= exact_max:
        chunks = (_flip_signs(start, n) for start in range(0, 1 << n, _FLIP_CHUNK))
        hits = sum(_hits(d, signs, observed) for signs in chunks)
        return np.minimum(1.0, hits / float(1 << n))
    rng = np.random.default_rng(seed)
    hits = sum(_hits(d, rng.choice([-1.0, 1.0], size=(min(left, _FLIP_CHUNK), n)), observed)
               for left in range(draws, 0, -_FLIP_CHUNK))
    return np.minimum(1.0, (1 + hits) / (1 + draws))


def _hits(d: np.ndarray, signs: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Per row of d, how many of the sign assignments reach its observed |sum|."""
    return (np.abs(d @ signs.T) >= observed[:, None]).sum(axis=1)


def _flip_signs(start: int, n: int) -> np.ndarray:
    """Rows start .. start + chunk of the 2^n sign assignments, bit i of the row's index
    giving block i's sign."""
    idx = np.arange(start, min(start + _FLIP_CHUNK, 1 << n), dtype=np.int64)
    bits = (idx[:, None] >> np.arange(n, dtype=np.int64)) & 1
    return 1.0 - 2.0 * bits
