"""Real Snakemake runs from tests, each in its own process group.

A tiny study's Snakemake that timed out at 900 s was killed, but the fold job it
had started kept a core for another 30 minutes: `subprocess.run` kills the process it
started, not that process's children. Every test that starts Snakemake goes through
`run_group` (or `snakemake`, which builds the command line), so on a timeout, a failed
run or an interrupted test the whole group goes: Snakemake and every job it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL every process left in proc's group (proc leads it), then reap proc."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@contextlib.contextmanager
def group(argv: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen]:
    """Popen(argv) leading a new process group; whatever is left of the group is killed
    when the block ends, however it ends (a timeout, a failed assertion, Ctrl-C)."""
    proc = subprocess.Popen(list(argv), start_new_session=True, **popen)
    try:
        yield proc
    finally:
        kill_group(proc)


def run_group(argv: Sequence[str], *, timeout: float, input: str | None = None,
              **popen: Any) -> subprocess.CompletedProcess[str]:
    """What subprocess.run(argv, capture_output=True, text=True, timeout=...) returns, with
    argv in its own process group: once argv exits or times out, whatever the group still
    holds is killed (a timeout still raises subprocess.TimeoutExpired).

    The output goes to files, not pipes: a job left running would hold a pipe open, and
    reading it to its end would wait for that job, not for argv."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        stdin.write((input or "").encode())
        stdin.seek(0)
        with group(argv, stdin=stdin if input is not None else None, stdout=out, stderr=err,
                   **popen) as proc:
            proc.wait(timeout)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, _text(out), _text(err))


def _text(f: IO[bytes]) -> str:
    return f.read().decode("utf-8", errors="replace")


# Every model process in the tests runs on one thread. The suite runs on two workers
# (pyproject's addopts), and llama.cpp's threads wait for each other at every step: a fold
# at two threads took 2.3x as long beside one busy process as alone, at one thread no
# longer (bench-style pairs, 2026-12-02, 2-core machine: 2.06 s and 4.77 s against 3.65 s
# and 3.45 s). A job's threads are what Snakemake grants it (run/fold.py fold_stage).
MODEL_THREADS = 1


def snakemake_argv(workdir: Path, *args: str) -> list[str]:
    """The workflow's Snakemake on this checkout's Snakefile, run in workdir, its model
    jobs on MODEL_THREADS."""
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
            "--directory", str(workdir), "--max-threads", str(MODEL_THREADS), *args]


def snakemake(workdir: Path, *args: str, timeout: float = 900,
              **popen: Any) -> subprocess.CompletedProcess[str]:
    """One real Snakemake run in workdir (targets and flags in args), in its own group."""
    return run_group(snakemake_argv(workdir, *args), timeout=timeout, **popen)
