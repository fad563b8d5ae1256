"""Gateway throughput: a study against a loopback stand-in that takes 1 s per call.

    .venv/bin/python bench/gateway_throughput.py

4 blocks x 4 arms x 6 calls (5 folds + recall). Blocks run in parallel (api_openrouter
slots: 8 >= 4 blocks), arms within a block in design order, calls within a run in order,
so the ideal wall time is the probe's calls plus one block's chain, each call 1 s. The
ratio ideal / measured says how much of the wall time the workflow adds (job start-up,
scheduling, grading). Prints the ratio last. Goal: >= 0.9.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from common import KEY, snakemake, standin_gateway, standin_study

LATENCY_S = 1.0
ARMS, REPEATS, CALLS_PER_RUN = ["j", "q", "m", "o"], 4, 6


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp, \
            standin_gateway() as gw:
        gw.state.queue_faults("acme/bench", [{"sleep": LATENCY_S}] * 1000)
        work = Path(tmp)
        cfg = standin_study(work, gw.base_url, ARMS, REPEATS)
        # the default profile gives the gateway 8 slots (>= 4 blocks)
        wall, _ = snakemake(work, "-c8", "results/evidence/rows.csv", "--configfile",
                            str(cfg), env={"BENCH_KEY": KEY})
        calls = gw.state.chat_calls("acme/bench")
    probe_calls = sum(1 for c in calls if "capability probe" in c["messages"][-1]["content"])
    chain = len(ARMS) * CALLS_PER_RUN
    ideal = (probe_calls + chain) * LATENCY_S
    print(f"{len(calls)} calls ({probe_calls} probe) at {LATENCY_S:.0f} s each; "
          f"{REPEATS} blocks of {chain} calls in parallel")
    print(f"ideal {ideal:.1f} s, measured {wall:.1f} s")
    print(f"throughput ratio (ideal / measured): {ideal / wall:.2f}")


if __name__ == "__main__":
    main()
