"""A study killed with SIGKILL part-way resumes without re-sending a completed call, and a
replay from the response store alone reproduces rows.csv and checks.csv byte for byte."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT
from .support.procs import group, kill_group, run_group

pytestmark = [pytest.mark.workflow, pytest.mark.model]
# The tiny test study cut to one block (q then m): two runs keep the test short.
TINY = yaml.safe_load((ROOT / ".test/config.yaml").read_text())
TINY["sweeps"]["tiny"]["repeats"] = 1
RUNS = 2


def cmd(workdir: Path, *args: str) -> list[str]:
    config = workdir.parent / f"{workdir.name}.yaml"
    config.write_text(yaml.safe_dump(TINY))
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
            str(workdir), "--configfile", str(config), *args]


def entries(store: Path) -> dict[str, tuple[int, int]]:
    """Every stored reply, with what would change if it were written again."""
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in store.glob("*/*.json")}


def store_hits(workdir: Path) -> int:
    logs = (workdir / "results/logs/fold").rglob("*.log")
    return sum(int(m) for p in logs
               for m in re.findall(r"response store: (\d+) hits", p.read_text()))


def test_killed_run_resumes_from_the_store_and_replay_reproduces_it(tmp_path):
    work = tmp_path / "live"
    store = work / "results/store"
    with group(cmd(work, "-c1", "results/evidence/rows.csv"), stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL) as proc:
        # Kill once the probe (2 shapes) and part of a run (3 folds) are in the store: the
        # run in flight has paid for calls its record does not hold yet.
        deadline = time.monotonic() + 300
        while len(entries(store)) < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the study finished before it could be killed"
        kill_group(proc)
    before = entries(store)
    assert len(before) >= 5
    finished = list((work / "results/runs").rglob("*.json"))
    assert len(finished) < RUNS  # killed part-way

    assert run_group(cmd(work, "--unlock"), timeout=300).returncode == 0
    p = run_group(cmd(work, "-c1", "--rerun-incomplete", "results/evidence/rows.csv"),
                  timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    after = entries(store)
    # Not one completed call was sent again: every entry is the very file written before.
    assert {k: after[k] for k in before} == before
    assert store_hits(work) >= len(before) - 2  # the killed run's folds (not the probe's)
    assert len(after) == RUNS * 6 + 2  # runs x (5 folds + recall) + 2 probe shapes

    # Replay: a fresh directory with only the store, no model call.
    replay = tmp_path / "replay"
    shutil.copytree(store, replay / "results/store")
    p = run_group(cmd(replay, "-c2", "results/evidence/rows.csv", "--config", "replay=True"),
                  timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    for name in ("rows.csv", "checks.csv"):
        live = (work / "results/evidence" / name).read_bytes()
        assert (replay / "results/evidence" / name).read_bytes() == live, name
    assert entries(replay / "results/store").keys() == after.keys()  # nothing added
    assert store_hits(replay) == RUNS * 6


def test_replay_miss_fails_naming_the_request(tmp_path):
    # An empty store: the replay starts (a missing one is refused before any job) and its
    # first call misses.
    (tmp_path / "results/store").mkdir(parents=True)
    p = run_group(cmd(tmp_path, "-c1", "results/runs/tiny/smollm2-135m/r0/q.json",
                      "--config", "replay=True"), timeout=600)
    assert p.returncode != 0
    logs = "".join(x.read_text() for x in (tmp_path / "results/logs").rglob("*.log"))
    assert "is not in the response store" in logs and "'probe': 'smollm2-135m'" in logs
