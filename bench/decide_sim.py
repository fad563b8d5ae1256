"""The staged decision (config `decide:`, issue 33) checked by simulation.

    nice -n 10 .venv/bin/python bench/decide_sim.py [--studies 2000] [--seed 33]

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
"""

from __future__ import annotations

import math
import platform
import time
from datetime import UTC, datetime

import numpy as np
from common import cli

from foldstudy.analysis import power as P
from foldstudy.analysis import sequential as S

K, ICC, MAX, LOOKS, MARGIN, ALPHA, POWER, ROTATION = 14, 0.75, 24, 3, 0.10, 0.05, 0.8, 1
FRACTIONS = [(i + 1) / LOOKS for i in range(LOOKS)]
INFLATION = S.inflation_factor(FRACTIONS, ALPHA, POWER)
# the next multiple of the rotation above the inflated maximum
MAX_INF = S.round_up(math.ceil(MAX * INFLATION), ROTATION)


def block_diffs(rng: np.random.Generator, n: int, pa: float, pb: float, icc: float
                ) -> np.ndarray:
    return (S.beta_binomial_recalls(rng, n, pb, icc, K)
            - S.beta_binomial_recalls(rng, n, pa, icc, K))


def study_blocks(rng: np.random.Generator, pa: float, pb: float, icc: float) -> np.ndarray:
    """MAX_INF blocks: the first MAX drawn as the bench always drew them (so the staged
    and fixed figures are comparable with earlier runs at the same seed), the inflated
    maximum's extra blocks after them."""
    first = block_diffs(rng, MAX, pa, pb, icc)
    return np.r_[first, block_diffs(rng, MAX_INF - MAX, pa, pb, icc)]


def scenario(name: str, pa: float, pb: float, icc: float, studies: int, seed: int) -> None:
    t0 = time.perf_counter()
    runs: dict[str, list[S.Staged]] = {"staged": [], "fixed": [], "staged-inf": []}
    for i in range(studies):
        d = study_blocks(np.random.default_rng([seed, i]), pa, pb, icc)
        runs["staged"].append(S.staged_study(d[:MAX], ICC, K, MARGIN, ALPHA, POWER, MAX,
                                             LOOKS, ROTATION, seed=i))
        runs["fixed"].append(S.fixed_study(d[:MAX], ALPHA, MARGIN, seed=i))
        runs["staged-inf"].append(S.staged_study(d, ICC, K, MARGIN, ALPHA, POWER, MAX_INF,
                                                 LOOKS, ROTATION, seed=i))
    for label, got in runs.items():
        diff = sum(r.outcome == S.DIFFERENCE for r in got) / studies
        decided = sum(r.outcome in (S.DIFFERENCE, S.EQUIVALENT) for r in got) / studies
        reps = float(np.mean([r.repeats for r in got]))
        print(f"{name:9s} {label:10s}: difference declared {diff:6.1%}, decided "
              f"{decided:6.1%}, mean repeats {reps:5.2f}")
    print(f"{name:9s} ({studies} studies, recall {pa:.3f} vs {pb:.3f}, ICC {icc:g}: "
          f"{time.perf_counter() - t0:.0f} s)", flush=True)


def main() -> None:
    ap = cli(__doc__)
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=33)
    a = ap.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.processor() or platform.machine()}")
    d = P.mde(MAX, ICC, K, alpha=ALPHA, power=POWER)
    print(f"max_repeats {MAX}, looks {LOOKS}, margin {MARGIN}, alpha {ALPHA}; nominal levels "
          + ", ".join(f"{x:.4f}" for x in S.nominal_levels(FRACTIONS, ALPHA))
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
