"""A no-op rerun of a finished study: seconds, and calls sent (must be 0).

    .venv/bin/python bench/noop_rerun.py

A small study against the loopback gateway stand-in is run to completion, then the same
command again. Prints the seconds and the calls of the rerun last.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from common import KEY, cli, snakemake, standin_gateway, standin_study


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp, \
            standin_gateway() as gw:
        work = Path(tmp)
        cfg = standin_study(work, gw.base_url, ["j", "q", "m"], 3)
        args = ("-c2", "results/tables", "--configfile", str(cfg))
        first, _ = snakemake(work, *args, env={"BENCH_KEY": KEY})
        before = len(gw.state.calls)
        again, p = snakemake(work, *args, env={"BENCH_KEY": KEY})
        sent = len(gw.state.calls) - before
    assert "Nothing to be done" in p.stdout + p.stderr, "the rerun planned jobs"
    print(f"first run {first:.1f} s ({before} calls)")
    print(f"no-op rerun: {again:.1f} s, {sent} calls sent")


if __name__ == "__main__":
    cli(__doc__).parse_args()
    main()
