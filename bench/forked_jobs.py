"""The tests' forked jobs against jobs started afresh: a study's jobs rerun, CPU and wall.

    .venv/bin/python bench/forked_jobs.py [--pairs N]

The tests run Snakemake forked from a Python that has imported it, and that run's script
jobs forked from the same Python, which has imported what jobs import
(tests/support/procs.py). This bench runs a small study against the loopback gateway
stand-in (j, q and m, two repeats: no model, so the jobs' own start and work are the
figure), then reruns it with `--forceall` through the tests' procs.snakemake, in pairs:
forked jobs, then the same run with FOLDSTUDY_FRESH_JOBS set (every job started
afresh). CPU is the whole machine's busy time over each run (/proc/stat), so run it on
an idle machine. Prints the medians, and the median of the pairwise ratios last.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from common import KEY, cli, standin_gateway, standin_study

from tests.support.procs import snakemake


def busy_seconds() -> float:
    """The machine's CPU time so far, all cores, less idle and I/O wait."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def main(pairs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp, \
            standin_gateway() as gw:
        work = Path(tmp)
        cfg = standin_study(work, gw.base_url, ["j", "q", "m"], 2)
        args = ("-c2", "results/tables", "--configfile", str(cfg))

        def rerun(fresh: bool) -> tuple[float, float]:
            env = {**os.environ, "BENCH_KEY": KEY}
            if fresh:
                env["FOLDSTUDY_FRESH_JOBS"] = "1"
            cpu, t0 = busy_seconds(), time.perf_counter()
            p = snakemake(work, *args, "--forceall", env=env)
            wall, cpu = time.perf_counter() - t0, busy_seconds() - cpu
            if p.returncode != 0:
                raise SystemExit(f"snakemake failed:\n{p.stderr[-3000:]}")
            return cpu, wall

        first = snakemake(work, *args, env={**os.environ, "BENCH_KEY": KEY})
        if first.returncode != 0:
            raise SystemExit(f"snakemake failed:\n{first.stderr[-3000:]}")
        # Snakemake's job table ends with a row "total <jobs>"
        jobs = next(int(line.split()[1]) for line in first.stdout.splitlines()
                    + first.stderr.splitlines() if line.startswith("total "))
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(pairs):
            for fresh in (False, True):
                runs[fresh].append(rerun(fresh))
    print(f"a --forceall rerun of {jobs} jobs, {pairs} pairs (median):")
    for fresh, label in ((False, "forked jobs"), (True, "jobs afresh")):
        cpu = statistics.median(c for c, _ in runs[fresh])
        wall = statistics.median(w for _, w in runs[fresh])
        print(f"  {label}: {cpu:.2f} s of CPU, {wall:.2f} s of wall")
    ratios = [f[0] / a[0] for f, a in zip(runs[False], runs[True], strict=True)]
    print(f"CPU ratio forked/afresh: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    parser = cli(__doc__)
    parser.add_argument("--pairs", type=int, default=3)
    main(parser.parse_args().pairs)
