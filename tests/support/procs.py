"""Real Snakemake runs from tests, each in its own process group.

A tiny study's Snakemake that timed out at 900 s was killed, but the fold job it
had started kept a core for another 30 minutes: `subprocess.run` kills the process it
started, not that process's children. Every test that starts Snakemake goes through
`run_group` (or `snakemake`, which builds the command line), so on a timeout, a failed
run or an interrupted test the whole group goes: Snakemake and every job it started.

A Snakemake run that `run_group` starts is forked from a Python that has already imported
Snakemake and whatever a dry run of the default study imports, the package included
(snakemake_server.py, one per test process), not started afresh. Importing is most of a
start: a dry run of the tiny study took 1.12 s of CPU started afresh, and 0.14 s forked
from a Python that had imported the rest and made Snakemake's plugin registries as well
(2026-12-06, one 2-core Intel Xeon machine); the suite starts Snakemake about 180 times.
The forked run is Snakemake's own entry point with the arguments, directory,
environment, standard streams, temporary folder, session and sys.path[0] that `python -m
snakemake` would have. A run whose environment changes how the interpreter itself starts
(a PYTHON* variable, the locale) is started afresh, as is any other command (a test that
runs another tree's package sets PYTHONPATH).

The same server forks the run's script jobs (job_client.py stands in for `python SCRIPT`
as the run's sys.executable). It has also imported every module of the package and every
module the package and the job scripts import (pandas, scipy.stats, matplotlib,
llama_cpp), so a job starts without importing them. A forked run or job ends as the
interpreter ends (threads joined, atexit functions run, streams flushed) but without its
teardown of every module, which touched, and so copied, each page it shared with the
server. `bench/forked_jobs.py` reruns a stand-in study's 22 jobs: 3.98 s of CPU against
10.79 s with its jobs started afresh (ratio 0.37, 3 pairs, 2026-12-06 08:20, one 2-core
Intel Xeon machine). A forked job has the directory, environment, standard streams,
temporary folder, sys.path[0], sys.argv and __main__ that `python SCRIPT` would; its
traceback shows the script's frames; it goes when its run's group is killed. A job whose
environment differs from the server's in what is read at start or import (the
interpreter's variables, the locale, the BLAS and OpenMP thread counts, matplotlib's,
the home and the XDG folders) is started afresh; so are all the jobs of a run whose
environment sets FOLDSTUDY_FRESH_JOBS.

Three differences stay. The runs and jobs forked from one server share its hash seed,
where processes started afresh each draw one (the order of a set may differ between two
fresh runs, not between two forked ones). A file a module still holds open, unflushed,
when a forked process ends is not flushed (logging's handlers are: an atexit function
closes them). And a job finds modules imported that a fresh one would import itself, so
an import-order fault shows only where jobs start afresh: the tiny study's own build,
which sets FOLDSTUDY_FRESH_JOBS (tests/conftest.py), the runs of another tree's package,
and every job under SLURM.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("snakemake_server.py")
# What the interpreter reads from the environment as it starts: a run that sets any of
# them differently from the server's environment is started afresh.
_STARTUP = ("PYTHON", "LANG", "LC_")


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
        code = _forked(argv, stdin if input is not None else None, out, err, timeout, popen)
        if code is None:
            with group(argv, stdin=stdin if input is not None else None, stdout=out,
                       stderr=err, **popen) as proc:
                proc.wait(timeout)
            code = proc.returncode
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(list(argv), code, _text(out), _text(err))


class _Server:
    """This test process's snakemake_server.py, started at its first run."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = dict(os.environ)
        self.socket = ""

    def connect(self) -> socket.socket:
        if self.proc is None or self.proc.poll() is not None:
            home = tempfile.mkdtemp(prefix="smk-server-")
            self.socket = os.path.join(home, "s")
            self.proc = subprocess.Popen([sys.executable, str(SERVER), self.socket],
                                         env=self.env, stdout=subprocess.PIPE,
                                         stdin=subprocess.DEVNULL)
            assert self.proc.stdout is not None
            if self.proc.stdout.readline() != b"ready\n":
                raise RuntimeError(f"{SERVER.name} did not start")
            atexit.register(self.stop, self.proc, home)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(self.socket)
        return conn

    @staticmethod
    def stop(proc: subprocess.Popen[bytes], home: str) -> None:
        shutil.rmtree(home, ignore_errors=True)
        proc.kill()
        proc.wait()


_server = _Server()


def _snakemake_args(argv: Sequence[str]) -> list[str] | None:
    """Snakemake's arguments if argv starts Snakemake with this interpreter, else None."""
    argv = list(argv)
    return argv[3:] if argv[:3] == [sys.executable, "-m", "snakemake"] else None


def _forked(argv: Sequence[str], stdin: IO[bytes] | None, out: IO[bytes], err: IO[bytes],
            timeout: float, popen: dict[str, Any]) -> int | None:
    """Run argv forked from the server and return its exit code (Popen's returncode), or
    None when argv must be started afresh (see the module's docstring)."""
    args = _snakemake_args(argv)
    env = dict(popen.get("env") or os.environ)
    if args is None or set(popen) - {"cwd", "env"} or any(
            env.get(k) != _server.env.get(k) for k in {*env, *_server.env}
            if k.startswith(_STARTUP)):
        return None
    cwd = os.path.abspath(popen.get("cwd") or os.getcwd())
    with open(os.devnull, "rb") as devnull, _server.connect() as conn:
        request = json.dumps({"args": args, "cwd": cwd, "env": env}).encode()
        socket.send_fds(conn, [request], [(stdin or devnull).fileno(), out.fileno(),
                                          err.fileno()])
        replies = conn.makefile("rb")
        pid = json.loads(replies.readline())["pid"]
        try:
            conn.settimeout(timeout)
            try:
                line = replies.readline()
            except TimeoutError:
                raise subprocess.TimeoutExpired(list(argv), timeout) from None
            return int(json.loads(line)["code"])
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


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
