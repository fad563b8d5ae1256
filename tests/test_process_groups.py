"""A test's Snakemake takes its jobs with it: on a timeout or a failure, tests/support/procs
kills the whole process group, so no job outlives the run that started it (a
fold job kept a core for 30 minutes after its Snakemake had been killed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .support.procs import run_group

# A parent that starts a child which would outlive it (the child ignores the parent's
# end, as a Snakemake job does), writes the child's pid, then fails or hangs.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
open(sys.argv[1], "w").write(str(child.pid))
if sys.argv[2] == "fail":
    sys.exit(3)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    """pid runs (a zombie waiting for its reaper does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def child_of(run: str, tmp_path: Path) -> int:
    pid_file = tmp_path / "child.pid"
    argv = [sys.executable, "-c", PARENT, str(pid_file), run]
    if run == "fail":
        assert run_group(argv, timeout=60).returncode == 3
    else:
        with pytest.raises(subprocess.TimeoutExpired):
            run_group(argv, timeout=5)
    return int(pid_file.read_text())


@pytest.mark.parametrize("run", ["fail", "hang"])
def test_a_child_that_would_outlive_its_parent_is_killed_with_it(run, tmp_path):
    pid = child_of(run, tmp_path)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), f"the child {pid} outlived its parent's {run}"


def test_without_a_group_the_child_would_outlive_it(tmp_path):
    """The check above can fail: a plain subprocess.run leaves the same child running."""
    pid_file = tmp_path / "child.pid"
    p = subprocess.run([sys.executable, "-c", PARENT, str(pid_file), "fail"], timeout=60)
    assert p.returncode == 3
    pid = int(pid_file.read_text())
    try:
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)
