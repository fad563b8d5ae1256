"""A study killed with SIGKILL part-way resumes without re-sending a completed call, and a
replay from the response store alone reproduces rows.csv and checks.csv byte for byte.

docs/design.md §4: "Every call goes through one content-addressed response store ...: a crashed or
re-run run never pays twice." The calls go to the gateway stand-in, which bills every
completion it generates: what matters here is the store and the bill, not the model's text
(the embedded model's runs and their replay are tests/workflow/test_workflow.py's)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import GatewayStudy, gateway_model
from ..support.procs import group, kill_group, snakemake, snakemake_argv

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-standin-resume"
RUNS = 2  # one block: j then m
CALLS_PER_RUN = 6  # 5 folds + the recall turn
TARGET = "results/evidence/rows.csv"


def config(base_url: str) -> dict:
    return {"study": "resume", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 64,
            "models": {"dear": gateway_model("acme/dear", base_url, timeout_s=10,
                                             max_attempts=2, retry_initial_wait_s=0.05)},
            "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ["j", "m"],
                             "models": ["dear"], "repeats": 1}}}


def entries(store: Path) -> dict[str, tuple[int, int]]:
    """Every stored reply, with what would change if it were written again."""
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in store.glob("*/*.json")}


def store_hits(workdir: Path) -> int:
    logs = (workdir / "results/logs/fold").rglob("*.log")
    return sum(int(m) for p in logs
               for m in re.findall(r"response store: (\d+) hits", p.read_text()))


def billed_bodies(gw: GatewayStandin) -> list[str]:
    return [json.dumps(b, sort_keys=True) for b in gw.state.billed]


def test_killed_run_resumes_from_the_store_and_replay_reproduces_it(tmp_path):
    model = Model("acme/dear", [Endpoint("Dear", "dear", supported_parameters=ALL_PARAMETERS)])
    with GatewayStandin([model], key=KEY) as gw:
        work = tmp_path / "live"
        work.mkdir()
        study = GatewayStudy(work, config(gw.base_url), KEY)
        p = study.snakemake("results/probe/summary.tsv")
        assert p.returncode == 0, p.stderr[-3000:]
        store = work / "results/store"
        probe = entries(store)
        billed_probe = len(gw.state.billed)
        # Slow generations (completed and billed even if the caller has gone), so the kill
        # lands inside a run that has paid for calls its record does not hold yet.
        gw.state.queue_faults("acme/dear", [{"sleep": 0.4}] * (RUNS * CALLS_PER_RUN))
        argv = snakemake_argv(work, "--configfile", str(study.configfile), "-c1", TARGET)
        with group(argv, env=study.env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL) as proc:
            deadline = time.monotonic() + 300
            while (len(entries(store)) < len(probe) + 3 and proc.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            assert proc.poll() is None, "the study finished before it could be killed"
            kill_group(proc)
        before = entries(store)
        assert len(before) >= len(probe) + 3
        time.sleep(1.0)  # a generation in flight at the kill ends and is billed
        assert not list((work / "results/runs").rglob("*.json"))  # killed inside the first run
        # The run's calls billed before the kill: each stored, but for at most the one in
        # flight (billed after its caller was gone, its reply never stored).
        in_flight = len(gw.state.billed) - billed_probe - (len(before) - len(probe))
        assert in_flight in (0, 1)

        assert study.snakemake("--unlock").returncode == 0
        p = study.snakemake("--rerun-incomplete", TARGET)
        assert p.returncode == 0, p.stderr[-3000:]
        after = entries(store)
        # Not one completed call was sent again: every entry is the very file written
        # before, answered from the store on resume...
        assert {k: after[k] for k in before} == before
        assert store_hits(work) >= len(before) - len(probe)
        assert len(after) == len(probe) + RUNS * CALLS_PER_RUN
        # ... and the gateway billed each of the runs' bodies once, but the call in flight
        # at the kill, which was sent again.
        bodies = billed_bodies(gw)[billed_probe:]
        assert len(set(bodies)) == RUNS * CALLS_PER_RUN
        assert len(bodies) == RUNS * CALLS_PER_RUN + in_flight

    # Replay: a fresh directory with only the store, no key, no gateway.
    replay = tmp_path / "replay"
    shutil.copytree(store, replay / "results/store")
    (replay / "c.yaml").write_text(study.configfile.read_text())
    p = snakemake(replay, "-c2", TARGET, "--configfile", str(replay / "c.yaml"),
                  "--config", "replay=True")
    assert p.returncode == 0, p.stderr[-3000:]
    for name in ("rows.csv", "checks.csv"):
        live = (work / "results/evidence" / name).read_bytes()
        assert (replay / "results/evidence" / name).read_bytes() == live, name
    assert entries(replay / "results/store").keys() == after.keys()  # nothing added
