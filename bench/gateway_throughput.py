"""Gateway throughput: a study against a loopback stand-in that takes 1 s per call.

    .venv/bin/python bench/gateway_throughput.py

4 blocks x 4 arms x 6 calls (5 folds + recall). Blocks run in parallel (api_openrouter
slots: 8 >= 4 blocks), arms within a block in design order, calls within a run in order,
so the ideal wall time is the probe's calls plus one block's chain, each call 1 s. The
ratio ideal / measured says how much of the wall time the workflow adds (job start-up,
scheduling, grading). Prints the ratio last. Goal: >= 0.9.

In the same run it times Snakemake's own floor for this shape: a Snakefile with the same
DAG (fixture, probe, 4 chains of 4 runs, grade, evidence) whose script jobs only sleep
for their calls' latency. No workflow of this shape can beat that floor under this
Snakemake on this machine: its start, its exit (the scheduler's 1 s rate-limit timer)
and about 0.1 s per script job on the critical path.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from datetime import datetime
from itertools import pairwise
from pathlib import Path

from common import KEY, cli, snakemake, standin_gateway, standin_study

LATENCY_S = 1.0
ARMS, REPEATS, CALLS_PER_RUN = ["j", "q", "m", "o"], 4, 6


FLOOR = """
BLOCKS, ARMS = range({blocks}), {arms!r}

rule all:
    input: "evidence.txt"

rule fixture:
    output: "fixture.txt"
    params: wait=0
    script: "wait.py"

rule probe:
    input: "fixture.txt"
    output: "probe.txt"
    params: wait={probe_wait}
    script: "wait.py"

def previous(wc):
    i = ARMS.index(wc.arm)
    return [] if i == 0 else f"runs/{{wc.block}}/{{ARMS[i - 1]}}.txt"

rule fold:
    input: "fixture.txt", "probe.txt", previous
    output: "runs/{{block}}/{{arm}}.txt"
    params: wait={run_wait}
    script: "wait.py"

rule grade:
    input: expand("runs/{{block}}/{{arm}}.txt", block=BLOCKS, arm=ARMS)
    output: "rows.txt"
    params: wait=0
    script: "wait.py"

rule evidence:
    input: "rows.txt"
    output: "evidence.txt"
    params: wait=0
    script: "wait.py"
"""

WAIT = """import time
time.sleep(snakemake.params.wait)
open(snakemake.output[0], "w").write("done")
"""


def snakemake_floor(work: Path, probe_calls: int) -> float:
    """Wall seconds of the same DAG with jobs that only wait for their calls."""
    import subprocess

    work.mkdir(parents=True)
    (work / "Snakefile").write_text(FLOOR.format(
        blocks=REPEATS, arms=ARMS, probe_wait=probe_calls * LATENCY_S,
        run_wait=CALLS_PER_RUN * LATENCY_S))
    (work / "wait.py").write_text(WAIT)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "-s", str(work / "Snakefile"),
                    "--directory", str(work), "-c8", "--scheduler", "greedy"],
                   capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp, \
            standin_gateway() as gw:
        gw.state.queue_faults("acme/bench", [{"sleep": LATENCY_S}] * 1000)
        work = Path(tmp)
        cfg = standin_study(work, gw.base_url, ARMS, REPEATS)
        # the default profile gives the gateway 8 slots (>= 4 blocks)
        t0 = time.time()
        wall, _ = snakemake(work, "-c8", "results/evidence/rows.csv", "--configfile",
                            str(cfg), env={"BENCH_KEY": KEY})
        calls = gw.state.chat_calls("acme/bench")
        gaps, first_call, last_done = chain_gaps(work)
        probe_calls = sum(1 for c in calls
                          if "capability probe" in c["messages"][-1]["content"])
        floor = snakemake_floor(work / "floor", probe_calls)
    chain = len(ARMS) * CALLS_PER_RUN
    ideal = (probe_calls + chain) * LATENCY_S
    print(f"{len(calls)} calls ({probe_calls} probe) at {LATENCY_S:.0f} s each; "
          f"{REPEATS} blocks of {chain} calls in parallel")
    print(f"ideal {ideal:.1f} s, measured {wall:.1f} s, Snakemake's floor {floor:.1f} s "
          f"(the same DAG, jobs that only wait)")
    # Where the rest goes: between two runs of a block, the gap from one job's last
    # call to the next job's first (Snakemake's turnaround, the next job's start-up);
    # after the last run, grading, evidence and Snakemake's exit.
    print(f"before the first fold call: {first_call - t0 - probe_calls * LATENCY_S:.2f} s "
          f"besides the probe's calls (start-up, fixture, probe and fold job starts)")
    print(f"between a block's runs: {sum(gaps) / len(gaps):.2f} s a job start "
          f"(x{len(ARMS) - 1} in a chain)")
    print(f"after the last run: {t0 + wall - last_done:.2f} s (grade, evidence, exit)")
    print(f"Snakemake's own ceiling here (ideal / floor): {ideal / floor:.2f}")
    print(f"the workflow against that floor (floor / measured): {floor / wall:.2f}")
    print(f"throughput ratio (ideal / measured): {ideal / wall:.2f}")


def _stamp(line: str) -> float:
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def chain_gaps(work: Path) -> tuple[list[float], float, float]:
    """From the fold logs: each gap between a run's last call and the next run's first
    call in its block (design order), when the first fold call began, and when the last
    run ended."""
    gaps, first, last = [], float("inf"), 0.0
    for block in sorted((work / "results/runs/s/gw").iterdir()):
        spans = []
        for rec in block.glob("*.json"):
            log = (work / "results/logs/fold/s/gw" / block.name / f"{rec.stem}.log")
            lines = log.read_text().splitlines()
            took = float(re.search(r"([0-9.]+)s$", lines[0]).group(1))  # the first call
            spans.append((json.loads(rec.read_text())["position"],
                          _stamp(lines[0]) - took, _stamp(lines[-1])))
        spans.sort()
        gaps += [nxt[1] - prev[2] for prev, nxt in pairwise(spans)]
        first, last = min(first, spans[0][1]), max(last, spans[-1][2])
    return gaps, first, last


if __name__ == "__main__":
    cli(__doc__).parse_args()
    main()
