"""A test's Snakemake takes its jobs with it: on a timeout or a failure, tests/support/procs
kills the whole process group, so no job outlives the run that started it (a
fold job kept a core for 30 minutes after its Snakemake had been killed). A Snakemake run
is forked from a Python that has already imported it: the tests below hold that such a run
is the one `python -m snakemake` would be, and is killed as one."""

from __future__ import annotations

import json
import os
import re
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


def gone_soon(pid: int) -> bool:
    """pid has ended, or ends within 10 s (a SIGKILL takes a moment to be reaped)."""
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


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
    assert gone_soon(pid), f"the child {pid} outlived its parent's {run}"


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


# A Snakefile that says what process it ran in, then runs one job for config[sleep] s.
SNAKEFILE = """
import json, os, sys
with open("seen.json", "w") as f:
    json.dump({"ppid": os.getppid(), "cwd": os.getcwd(), "x": os.environ.get("FS_X"),
               "path0": sys.path[0], "session": os.getsid(0) == os.getpid(),
               "warm": "foldstudy.wiring" in sys.modules}, f)
rule all:
    output: "done.txt"
    shell: "echo $$ > shell.pid; sleep {config[sleep]}; touch {output}"
"""


def snakemake_in(tmp_path: Path, *args: str, **popen) -> tuple[subprocess.CompletedProcess,
                                                                 dict]:
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    p = run_group([sys.executable, "-m", "snakemake", "-c1", *args], cwd=tmp_path,
                  timeout=120, **popen)
    return p, json.loads((tmp_path / "seen.json").read_text())


def test_a_snakemake_run_is_forked_with_its_directory_environment_and_session(tmp_path):
    p, seen = snakemake_in(tmp_path, "--config", "sleep=0",
                           env={**os.environ, "FS_X": "given"})
    assert p.returncode == 0 and (tmp_path / "done.txt").exists(), p.stderr
    assert seen["ppid"] != os.getpid(), "Snakemake was started afresh, not forked"
    assert seen == {**seen, "cwd": str(tmp_path), "x": "given", "path0": str(tmp_path),
                    "session": True}
    # the server imported what the study's own runs import before forking this one
    assert seen["warm"], "the server's warm-up did not import the package"


def test_a_forked_run_answers_as_one_started_afresh(tmp_path):
    """Exit code, stdout and stderr of a refused run are those of `python -m snakemake`."""
    args = ["-c1", "--configfile", "no-such.yaml"]
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    forked = run_group([sys.executable, "-m", "snakemake", *args], cwd=tmp_path,
                       timeout=120)
    fresh = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert forked.returncode == fresh.returncode == 1
    assert (forked.stdout, forked.stderr) == (fresh.stdout, fresh.stderr)
    assert "no-such.yaml" in forked.stderr


def test_a_run_that_sets_the_interpreters_own_environment_is_started_afresh(tmp_path):
    p, seen = snakemake_in(tmp_path, "--config", "sleep=0",
                           env={**os.environ, "PYTHONHASHSEED": "7"})
    assert p.returncode == 0, p.stderr
    assert seen["ppid"] == os.getpid() and not seen["warm"]


def test_a_forked_run_that_times_out_takes_its_job_with_it(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    with pytest.raises(subprocess.TimeoutExpired):
        run_group([sys.executable, "-m", "snakemake", "-c1", "--config", "sleep=300"],
                  cwd=tmp_path, timeout=15)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["ppid"] != os.getpid()
    pid = int((tmp_path / "shell.pid").read_text())
    assert gone_soon(pid), "the forked run's job outlived its timeout"


# A Snakefile whose script job says what process it ran in (the job runs config[sleep] s
# first), whose other job fails with a bug's traceback, and whose shell job runs the
# run's sys.executable as a command.
JOBS_SNAKEFILE = """
import sys
rule seen:
    output: "seen.json"
    params: sleep=config.get("sleep", 0)
    script: "seen.py"
rule fail:
    output: "failed.txt"
    script: "fail.py"
rule ending:
    output: "ending.txt"
    script: "ending.py"
rule message:
    output: "message.txt"
    script: "message.py"
rule command:
    output: "command.txt"
    shell: sys.executable + " -c 'import sys; print(sys.argv[1:])' one two > {output}"
"""
SEEN_PY = """
import json, os, sys, tempfile, time
warm = "pandas" in sys.modules
open("job.pid", "w").write(str(os.getpid()))
time.sleep(snakemake.params.sleep)
json.dump({"warm": warm, "session": os.getsid(0) == os.getpid(), "cwd": os.getcwd(),
           "path0": sys.path[0], "argv0": os.path.dirname(sys.argv[0]),
           "exe": sys.executable, "x": os.environ.get("FS_X"),
           "tmp": tempfile.gettempdir(), "name": __name__, "file": __file__},
          open(snakemake.output[0], "w"))
"""
FAIL_PY = """
def deep():
    raise ValueError("a bug")
deep()
"""
# Ends as an interpreter must: a thread still running, an atexit function, output left
# in stdout's buffer.
ENDING_PY = """
import atexit, sys, threading, time
atexit.register(lambda: open("atexit.txt", "w").write("ran"))
def late():
    time.sleep(0.5)
    open("thread.txt", "w").write("joined")
threading.Thread(target=late).start()
open(snakemake.output[0], "w").write("x")
sys.stdout.write("left in the buffer")
"""
MESSAGE_PY = """
raise SystemExit("a message, not a number")
"""


def jobs_run(tmp_path: Path, *args: str, fresh: bool = False, timeout: float = 120,
             **env: str) -> subprocess.CompletedProcess:
    for name, text in [("Snakefile", JOBS_SNAKEFILE), ("seen.py", SEEN_PY),
                       ("fail.py", FAIL_PY), ("ending.py", ENDING_PY),
                       ("message.py", MESSAGE_PY)]:
        (tmp_path / name).write_text(text)
    env = {**os.environ, **env, **({"FOLDSTUDY_FRESH_JOBS": "1"} if fresh else {})}
    return run_group([sys.executable, "-m", "snakemake", "-c1", *args], cwd=tmp_path,
                     timeout=timeout, env=env)


def test_a_forked_runs_script_job_starts_as_python_script_would(tmp_path):
    """The job is forked from the server (it finds pandas imported), and sees the
    directory, environment, temporary folder, sys.path[0], sys.executable and __main__ a
    job started afresh sees."""
    seen = {}
    for way in ("forked", "fresh"):
        work = tmp_path / way
        (work / "t").mkdir(parents=True)
        p = jobs_run(work, "seen.json", fresh=way == "fresh", FS_X="given",
                     TMPDIR=str(work / "t"))
        assert p.returncode == 0, p.stderr
        seen[way] = json.loads((work / "seen.json").read_text())
    assert seen["forked"].pop("warm") and not seen["fresh"].pop("warm")
    assert seen["forked"] == {**seen["forked"], "session": True, "x": "given",
                              "exe": sys.executable, "name": "__main__",
                              "tmp": str(tmp_path / "forked" / "t")}
    fresh = {k: v.replace("/fresh", "/forked") if isinstance(v, str) else v
             for k, v in seen["fresh"].items()}
    assert seen["forked"] == {**fresh, "session": True}


def test_a_forked_job_that_fails_prints_what_a_fresh_one_prints(tmp_path):
    """A bug's traceback shows the script's frames only, and fails the job the same way."""
    runs, tracebacks = {}, {}
    for way in ("forked", "fresh"):
        (tmp_path / way).mkdir()
        runs[way] = p = jobs_run(tmp_path / way, "failed.txt", fresh=way == "fresh")
        assert p.returncode == 1
        lines = p.stderr[p.stderr.index("Traceback"):].splitlines()
        tracebacks[way] = [re.sub(r"/(fresh|forked)/.*tmp\w+\.fail", "X", line)
                           for line in lines[:6]]
    assert tracebacks["forked"] == tracebacks["fresh"]
    assert tracebacks["forked"][-1] == "ValueError: a bug"
    assert "snakemake_server" not in runs["forked"].stderr


def test_a_forked_job_ends_as_an_interpreter_ends(tmp_path):
    """Its threads are joined and its atexit functions run before it ends, what it left
    in stdout's buffer is written, and SystemExit with a message prints it and fails."""
    p = jobs_run(tmp_path, "ending.txt")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "thread.txt").read_text() == "joined"
    assert (tmp_path / "atexit.txt").read_text() == "ran"
    assert "left in the buffer" in p.stdout + p.stderr
    p = jobs_run(tmp_path, "message.txt")
    assert p.returncode == 1 and "a message, not a number" in p.stderr


def test_a_forked_runs_command_of_its_python_runs_the_python(tmp_path):
    """Anything but a script job given to the run's sys.executable runs the interpreter
    itself with the same arguments."""
    p = jobs_run(tmp_path, "command.txt")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "command.txt").read_text() == "['one', 'two']\n"


def test_a_forked_job_goes_with_its_run_on_a_timeout(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        jobs_run(tmp_path, "seen.json", "--config", "sleep=300", timeout=10)
    pid = int((tmp_path / "job.pid").read_text())
    assert gone_soon(pid), "the forked job outlived its run's timeout"


def test_a_job_given_other_thread_counts_is_started_afresh(tmp_path):
    """numpy's BLAS reads its thread count as it is imported: a job granted two threads
    is not forked from a server that imported it with one."""
    p = jobs_run(tmp_path, "seen.json", "-c2", "--set-threads", "seen=2")
    assert p.returncode == 0, p.stderr
    assert not json.loads((tmp_path / "seen.json").read_text())["warm"]
