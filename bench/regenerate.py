"""Time the rebuild of every statistic, table and figure from an evidence package.

Run on demand (not in the test suite):

    .venv/bin/python bench/regenerate.py            # 620 and 62,000 rows
    .venv/bin/python bench/regenerate.py 620 6200   # other sizes

For each size it writes a synthetic package (tests/support/synthetic.py: the paper's shape, many
models, all twelve arms, a single-chunk sweep; deterministic from a seed) into a temp
directory, then times `snakemake -c8 results/tables --config evidence=DIR` in a fresh
--directory, as a reviewer would run it, and prints the wall seconds. Targets: under
20 s at 620 rows, under 90 s at 62,000 rows.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/support builds the synthetic packages

from common import cli  # noqa: E402

from foldstudy.evidence.load import write_table  # noqa: E402
from tests.support.synthetic import synthetic_package  # noqa: E402

TARGETS = {620: 20.0, 62_000: 90.0}


def build_package(n_rows: int, directory: Path, seed: int = 20260728) -> tuple[int, int]:
    rows, checks = synthetic_package(n_rows, seed)
    directory.mkdir(parents=True, exist_ok=True)
    write_table(rows, directory / "rows.csv")
    write_table(checks, directory / "checks.csv")
    return len(rows), len(checks)


def regenerate(package: Path, workdir: Path) -> float:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
           str(workdir), "-c8", "results/tables", "--config", f"evidence={package}"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"snakemake failed on {package}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return wall


def main(sizes: list[int]) -> int:
    failed = False
    walls: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp:
        for n in sizes:
            pkg, work = Path(tmp) / f"package-{n}", Path(tmp) / f"work-{n}"
            work.mkdir()
            n_rows, n_checks = build_package(n, pkg)
            wall = regenerate(pkg, work)
            walls[n_rows] = wall
            target = TARGETS.get(n)
            verdict = "" if target is None else (" ok" if wall < target else " SLOW")
            failed |= verdict == " SLOW"
            print(f"{n_rows:>7,} rows {n_checks:>9,} checks: {wall:6.1f} s wall"
                  + (f" (target < {target:.0f} s){verdict}" if target else ""), flush=True)
    if len(walls) >= 2:
        (n1, w1), (n2, w2) = sorted(walls.items())[0], sorted(walls.items())[-1]
        # wall ~ rows^k: k = 1 is linear; under 1, fixed start-up costs dominate
        k = math.log(w2 / w1) / math.log(n2 / n1)
        print(f"scaling exponent (wall ~ rows^k, {n1:,} -> {n2:,} rows): k = {k:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = cli(__doc__)
    parser.add_argument("rows", nargs="*", type=int, help="package sizes (default: %(default)s)",
                        default=list(TARGETS))
    sys.exit(main(parser.parse_args().rows or list(TARGETS)))
