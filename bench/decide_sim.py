"""The staged decision (config `decide:`, issue 33) checked by simulation.

    .venv/bin/python bench/decide_sim.py [--studies 2000] [--seed 33]

Each simulated study is one model's j-m contrast: per repeat one block, each arm's row a
beta-binomial recall over 14 checks at ICC 0.75 (paper §4: "ICC = 0.750"), the block's
difference b - a. The staged procedure (analysis/sequential.py: looks after each stage,
Lan-DeMets alpha spending of O'Brien-Fleming shape, the exact sign-flip test, TOST
stopping at margin 0.10, max_repeats 24 over 3 looks) runs against the fixed design with
the same maximum (one sign-flip test at 24 blocks). Printed, per scenario: how often a
difference is declared, how often the study decides (a difference or equivalence), and
the mean repeats. Scenarios:
  null       both arms at recall 0.5: a declared difference is a false one (target: at
             most 5% +/- 1.5% of the studies);
  plan       the difference the fixed design's 24 repeats detect with power 0.8 at the
             paper's ICC (power.mde): the staged design should decide at least as often,
             with fewer repeats on average;
  shape-10%  every reply shape losing 10% of the identifiers (ICC 0, recall 0.9 both):
             a difference declared is a false one.
"""

from __future__ import annotations

import platform
import time
from datetime import UTC, datetime

import numpy as np
from common import cli

from foldstudy.analysis import power as P
from foldstudy.analysis import sequential as S

K, ICC, MAX, LOOKS, MARGIN, ALPHA, POWER = 14, 0.75, 24, 3, 0.10, 0.05, 0.8


def block_diffs(rng: np.random.Generator, pa: float, pb: float, icc: float) -> np.ndarray:
    return (S.beta_binomial_recalls(rng, MAX, pb, icc, K)
            - S.beta_binomial_recalls(rng, MAX, pa, icc, K))


def scenario(name: str, pa: float, pb: float, icc: float, studies: int, seed: int) -> None:
    t0 = time.perf_counter()
    staged, fixed = [], []
    for i in range(studies):
        d = block_diffs(np.random.default_rng([seed, i]), pa, pb, icc)
        staged.append(S.staged_study(d, ICC, K, MARGIN, ALPHA, POWER, MAX, LOOKS, 1, seed=i))
        fixed.append(S.fixed_study(d, ALPHA, MARGIN, seed=i))
    for label, runs in (("staged", staged), ("fixed", fixed)):
        diff = sum(r.outcome == S.DIFFERENCE for r in runs) / studies
        decided = sum(r.outcome in (S.DIFFERENCE, S.EQUIVALENT) for r in runs) / studies
        reps = float(np.mean([r.repeats for r in runs]))
        print(f"{name:9s} {label:6s}: difference declared {diff:6.1%}, decided {decided:6.1%}, "
              f"mean repeats {reps:5.2f}")
    print(f"{name:9s} ({studies} studies, recall {pa:.3f} vs {pb:.3f}, ICC {icc:g}: "
          f"{time.perf_counter() - t0:.0f} s)")


def main() -> None:
    ap = cli(__doc__)
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=33)
    a = ap.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.processor() or platform.machine()}")
    d = P.mde(MAX, ICC, K, alpha=ALPHA, power=POWER)
    print(f"max_repeats {MAX}, looks {LOOKS}, margin {MARGIN}, alpha {ALPHA}; nominal levels "
          + ", ".join(f"{x:.4f}" for x in S.nominal_levels([1 / 3, 2 / 3, 1.0], ALPHA))
          + f"; the plan's difference at 24 repeats: {d:.3f}")
    scenario("null", 0.5, 0.5, ICC, a.studies, a.seed)
    scenario("plan", 0.5 - d / 2, 0.5 + d / 2, ICC, a.studies, a.seed + 1)
    scenario("shape-10%", 0.9, 0.9, 0.0, a.studies, a.seed + 2)


if __name__ == "__main__":
    main()
