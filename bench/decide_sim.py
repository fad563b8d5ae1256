"""The staged decision (config `decide:`) checked by simulation.

    nice -n 10 .venv/bin/python bench/decide_sim.py [--studies 2000] [--seed 33]
    nice -n 10 .venv/bin/python bench/decide_sim.py --family [--studies 2000]

Each simulated study is one model's j-m contrast: per repeat one block, each arm's row a
beta-binomial recall over 14 checks at ICC 0.75 (paper §4: "ICC = 0.750"), the block's
difference b - a. Three designs read the same blocks:
  staged      the default: looks after each stage (analysis/sequential.py: Lan-DeMets
              alpha spending of O'Brien-Fleming shape, the exact sign-flip test, TOST
              stopping at margin 0.10), max_repeats 24 over 3 looks;
  fixed       one sign-flip test at the same 24 blocks: the most powerful level-alpha
              test at that maximum, so the staged design at 24 decides slightly less
              often;
  staged-inf  the staged design with its maximum inflated to the next rotation multiple
              above 24 x the 3-look inflation factor (sequential.inflation_factor), the
              maximum that buys that power back.
Printed, per scenario and design: how often a difference is declared, how often the
study decides (a difference or equivalence), and the mean repeats. Scenarios:
  null       both arms at recall 0.5: a declared difference is a false one (target: at
             most 5% +/- 1.5% of the studies);
  plan       the difference the fixed design's 24 repeats detect with power 0.8 at the
             paper's ICC (power.mde): staged-inf should decide at least as often as the
             fixed design, with fewer repeats on average;
  shape-10%  every reply shape losing 10% of the identifiers (ICC 0, recall 0.9 both):
             a difference declared is a false one.

--family: the family-wise error of a sweep's cards (decide.family: sweep) under the
global null, fixed designs adjusted by Holm (decision.holm), against the unadjusted
test: 24 models with one pair each, and 5 models with 5 pairs each (a chain of six arms
a block, so neighbouring pairs share an arm), at 4 and 12 repeats. Printed per setting:
the share of sweeps declaring any false *better* (target: at most 5% +/- 1.5%), and the
power this costs: the share of sweeps finding one real difference (one contrast at the
fixed design's planned difference, power.mde at those repeats; none is planned at 4,
where the exact test's smallest p is 2/16) among the null ones: that model's arms
0.5 - d/2 but its last, 0.5 + d/2. All studies of a setting
are tested at once (stats.sign_flip_p over rows), so it takes seconds.
"""

from __future__ import annotations

import math
import platform
import time
from datetime import UTC, datetime

import numpy as np
from common import cli

from foldstudy.analysis import stats
from foldstudy.analysis.power import mde
from foldstudy.analysis.sequential import (
    DIFFERENCE,
    EQUIVALENT,
    Staged,
    beta_binomial_recalls,
    fixed_study,
    inflation_factor,
    nominal_levels,
    round_up,
    staged_study,
)
from foldstudy.analysis.verdict import holm

K, ICC, MAX, LOOKS, MARGIN, ALPHA, POWER, ROTATION = 14, 0.75, 24, 3, 0.10, 0.05, 0.8, 1
FRACTIONS = [(i + 1) / LOOKS for i in range(LOOKS)]
INFLATION = inflation_factor(FRACTIONS, ALPHA, POWER)
# the next multiple of the rotation above the inflated maximum
MAX_INF = round_up(math.ceil(MAX * INFLATION), ROTATION)


def block_diffs(rng: np.random.Generator, n: int, pa: float, pb: float, icc: float
                ) -> np.ndarray:
    return (beta_binomial_recalls(rng, n, pb, icc, K)
            - beta_binomial_recalls(rng, n, pa, icc, K))


def study_blocks(rng: np.random.Generator, pa: float, pb: float, icc: float) -> np.ndarray:
    """MAX_INF blocks: the first MAX drawn as the bench always drew them (so the staged
    and fixed figures are comparable with earlier runs at the same seed), the inflated
    maximum's extra blocks after them."""
    first = block_diffs(rng, MAX, pa, pb, icc)
    return np.r_[first, block_diffs(rng, MAX_INF - MAX, pa, pb, icc)]


def scenario(name: str, pa: float, pb: float, icc: float, studies: int, seed: int) -> None:
    t0 = time.perf_counter()
    runs: dict[str, list[Staged]] = {"staged": [], "fixed": [], "staged-inf": []}
    for i in range(studies):
        d = study_blocks(np.random.default_rng([seed, i]), pa, pb, icc)
        runs["staged"].append(staged_study(d[:MAX], ICC, K, MARGIN, ALPHA, POWER, MAX,
                                             LOOKS, ROTATION, seed=i))
        runs["fixed"].append(fixed_study(d[:MAX], ALPHA, MARGIN, seed=i))
        runs["staged-inf"].append(staged_study(d, ICC, K, MARGIN, ALPHA, POWER, MAX_INF,
                                                 LOOKS, ROTATION, seed=i))
    for label, got in runs.items():
        diff = sum(r.outcome == DIFFERENCE for r in got) / studies
        decided = sum(r.outcome in (DIFFERENCE, EQUIVALENT) for r in got) / studies
        reps = float(np.mean([r.repeats for r in got]))
        print(f"{name:9s} {label:10s}: difference declared {diff:6.1%}, decided "
              f"{decided:6.1%}, mean repeats {reps:5.2f}")
    print(f"{name:9s} ({studies} studies, recall {pa:.3f} vs {pb:.3f}, ICC {icc:g}: "
          f"{time.perf_counter() - t0:.0f} s)", flush=True)


FAMILIES = ((24, 1), (5, 5))  # (models, pairs a model)
FAMILY_REPEATS = (4, 12)


def family_p(rng: np.random.Generator, studies: int, models: int, pairs: int,
             repeats: int, shift: float) -> np.ndarray:
    """(studies, models x pairs) raw sign-flip p of sweeps whose arms all recall 0.5 but
    on the first model, whose arms recall 0.5 - shift/2 but its last, at 0.5 + shift/2:
    its last pair is the one real difference (none where shift is 0). Arms a block form
    a chain, pair i comparing arm i with arm i + 1; each row a beta-binomial recall over
    K checks at the paper's ICC (sequential.beta_binomial_recalls' model, drawn at once)."""
    mean = np.full((studies, models, repeats, pairs + 1), 0.5)
    mean[:, 0, :, :-1] -= shift / 2
    mean[:, 0, :, -1] += shift / 2
    s = 1 / ICC - 1
    recall = rng.binomial(K, rng.beta(mean * s, (1 - mean) * s)) / K
    diffs = np.diff(recall, axis=-1)  # (studies, models, repeats, pairs)
    rows = diffs.transpose(0, 1, 3, 2).reshape(-1, repeats)
    out = np.concatenate([stats.sign_flip_p(rows[i:i + 4096])
                          for i in range(0, len(rows), 4096)])
    return out.reshape(studies, models * pairs)


def family_setting(models: int, pairs: int, repeats: int, studies: int, seed: int
                   ) -> None:
    t0 = time.perf_counter()
    rng = np.random.default_rng([seed, models, pairs, repeats])
    null = family_p(rng, studies, models, pairs, repeats, 0.0)
    raw_fwer = float(np.mean((null <= ALPHA).any(axis=1)))
    holm_fwer = float(np.mean((holm(null) <= ALPHA).any(axis=1)))
    d = mde(repeats, ICC, K, alpha=ALPHA, power=POWER)
    if d is None:
        power = "no difference is detectable at this many blocks"
    else:
        alt = family_p(rng, studies, models, pairs, repeats, d)
        real = pairs - 1  # the first model's last pair: arm pairs - 1 against the shifted arm
        raw_pow = float(np.mean(alt[:, real] <= ALPHA))
        holm_pow = float(np.mean(holm(alt)[:, real] <= ALPHA))
        power = (f"power at the planned difference {d:.3f}: unadjusted {raw_pow:6.1%}, "
                 f"Holm {holm_pow:6.1%}")
    print(f"{models:2d} models x {pairs} pairs, {repeats:2d} repeats: any false better "
          f"unadjusted {raw_fwer:6.1%}, Holm {holm_fwer:6.1%}; {power} "
          f"({studies} sweeps, {time.perf_counter() - t0:.0f} s)", flush=True)


def main() -> None:
    ap = cli(__doc__)
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--family", action="store_true",
                    help="the family-wise error of a sweep's cards instead")
    a = ap.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.processor() or platform.machine()}")
    if a.family:
        print(f"family: a sweep's cards, Holm at alpha {ALPHA}; ICC {ICC}, {K} checks a row")
        for models, pairs in FAMILIES:
            for repeats in FAMILY_REPEATS:
                family_setting(models, pairs, repeats, a.studies, a.seed)
        return
    d = mde(MAX, ICC, K, alpha=ALPHA, power=POWER)
    print(f"max_repeats {MAX}, looks {LOOKS}, margin {MARGIN}, alpha {ALPHA}; nominal levels "
          + ", ".join(f"{x:.4f}" for x in nominal_levels(FRACTIONS, ALPHA))
          + f"; the plan's difference at {MAX} repeats: {d:.3f}")
    print(f"staged-inf: the {LOOKS}-look inflation factor at power {POWER} is "
          f"{INFLATION:.4f}; max_repeats {MAX} x {INFLATION:.4f} = {MAX * INFLATION:.2f}, "
          f"inflated to {MAX_INF} (the next multiple of the rotation, {ROTATION})",
          flush=True)
    scenario("null", 0.5, 0.5, ICC, a.studies, a.seed)
    scenario("plan", 0.5 - d / 2, 0.5 + d / 2, ICC, a.studies, a.seed + 1)
    scenario("shape-10%", 0.9, 0.9, 0.0, a.studies, a.seed + 2)


if __name__ == "__main__":
    main()
