"""The workflow on a real SLURM cluster through profiles/slurm (docs/cluster.md).

A single-node SLURM (munged, slurmctld, slurmd on 127.0.0.1; tests/support/slurm_cluster.py) runs
the tiny study in replay mode from the response store of the session's local run
(conftest.tiny_study), so no model runs twice: every job that calls a model goes through
sbatch (the rest are local rules), the
evidence and the numbers come out byte for byte as the local run made them, and a job
cancelled with scancel fails the run, which a rerun completes with the same bytes.

Needs root and Debian's slurm packages (tests/cluster/install.sh); skipped without them,
except under CI=true, where a skip would hide that the cluster was never tested.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT, TINY_CONFIG
from ..support.procs import group, run_group
from ..support.slurm_cluster import PARTITION, SERVER_PARTITION, SlurmCluster

# The commands of docs/cluster.md, word for word (test_the_cluster_page_names_these_commands).
COMMAND = ".venv/bin/snakemake --profile profiles/slurm --workflow-profile none results/tables"
REPLAY = f"{COMMAND} --config replay=True"
# What the replay must reproduce byte for byte.
ARTIFACTS = ("results/evidence/rows.csv", "results/evidence/checks.csv",
             "results/stats/numbers.json")
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) "
                       r"\(log: [^)]*/rule_(\w+)/")
RUNS = 2  # the tiny study: arms j and q, one repeat
# the cores the tiny study's embedded model runs on, which each of its jobs asks SLURM for
TINY_THREADS = yaml.safe_load(TINY_CONFIG.read_text())["models"]["smollm2-135m"]["threads"]
# The test cluster has one user: the first status check a second after a submission, not
# the profile's 10 s (a job here takes 7-10 s on the node, so most are seen at the second
# check, 12 s in, not at 30 s). Measured 2026-12-02: the replay 161 s against 204 s.
POLL = ("--slurm-init-seconds-before-status-checks", "1")


@pytest.fixture
def replay_dir(tiny_study, tmp_path) -> Path:
    """A fresh work directory holding only the local run's response store."""
    work = tmp_path / "cluster"
    shutil.copytree(tiny_study / "results/store", work / "results/store")
    return work


def run(cluster: SlurmCluster, command: str, work: Path, *extra: str,
        timeout: int = 900) -> subprocess.CompletedProcess:
    argv = [*shlex.split(command), "--configfile", str(TINY_CONFIG), "--directory", str(work),
            *POLL, *extra]
    return run_group(argv, cwd=ROOT, env=cluster.env, timeout=timeout)


def submitted(output: str) -> dict[str, str]:
    """SLURM job id -> rule, for every job this Snakemake run submitted."""
    return {slurm_id: rule for _, slurm_id, rule in SUBMITTED.findall(output)}


def store_files(work: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (work / "results/store").glob("*/*.json")}


def assert_same_bytes(local: Path, work: Path) -> None:
    for name in ARTIFACTS:
        assert (work / name).read_bytes() == (local / name).read_bytes(), name


def test_the_cluster_page_names_these_commands():
    """docs/cluster.md (linked from the README) shows the commands this file runs."""
    page = (ROOT / "docs/cluster.md").read_text(encoding="utf-8")
    assert COMMAND in page and REPLAY in page


@pytest.fixture(scope="module")
def cancelled_then_rerun(cluster, tiny_study, tmp_path_factory) -> dict:
    """The tiny study replayed through SLURM twice, once per session: a run whose first
    fold job is cancelled with scancel while it runs, then a rerun that completes it. The
    two tests below read what each run printed and what SLURM recorded."""
    work = tmp_path_factory.mktemp("cluster") / "replay"
    shutil.copytree(tiny_study / "results/store", work / "results/store")
    before = store_files(work)
    argv = [*shlex.split(REPLAY), "--configfile", str(TINY_CONFIG), "--directory", str(work),
            *POLL]
    with group(argv, cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE,
               stderr=subprocess.STDOUT, text=True) as proc:
        # Cancel the first fold job while it runs: a replayed run takes seconds on the
        # node, and the queue is polled ten times a second.
        victim = None
        deadline = time.monotonic() + 600
        while victim is None and proc.poll() is None and time.monotonic() < deadline:
            victim = next((j["id"] for j in cluster.squeue()
                           if j["comment"].startswith("rule_fold") and j["state"] == "RUNNING"),
                          None)
            time.sleep(0.1)
        assert victim is not None, "no fold job was seen in the queue"
        cluster.scancel(victim)
        cancelled_out, _ = proc.communicate(timeout=900)
    cancelled = {"returncode": proc.returncode, "out": cancelled_out,
                 "rows_written": (work / "results/evidence/rows.csv").exists()}
    p = run(cluster, REPLAY, work)
    return {"work": work, "store_before": before, "victim": victim, "cancelled": cancelled,
            "rerun": p, "done": cluster.completed_jobs()}


@pytest.mark.cluster
@pytest.mark.workflow
def test_replay_through_slurm_reproduces_the_local_run(slurm_available, cluster, tiny_study,
                                                      cancelled_then_rerun):
    """Every job of the two runs went through sbatch, ran on the node and completed (but
    the one cancelled), and together they reproduce the local run byte for byte from the
    store alone."""
    r = cancelled_then_rerun
    out = r["rerun"].stdout + r["rerun"].stderr
    assert r["rerun"].returncode == 0, out[-4000:] + cluster.logs()
    assert_same_bytes(tiny_study, r["work"])
    assert store_files(r["work"]) == r["store_before"]  # answered from the store alone

    # Every job that calls a model went through SLURM: submitted with sbatch, finished by
    # slurmctld on the node (its job-completion log is the history sacct would show with
    # slurmdbd); the rest are local rules, run by the submitting process (docs/cluster.md).
    first, second = submitted(r["cancelled"]["out"]), submitted(out)
    jobs = {**first, **second}
    assert set(jobs.values()) == {"probe_model", "fold"}, jobs
    local = set(re.findall(r"^localrule (\w+):", r["cancelled"]["out"] + out, re.M))
    assert {"fixture", "grade", "evidence", "stats", "tables"} <= local, local
    steps = re.findall(r"(\d+) of (\d+) steps \(100%\) done", out)
    assert steps and int(steps[-1][1]) == len(second) + len(
        re.findall(r"^localrule \w+:", out, re.M))  # each job either sbatch'd or local
    states = {i: r["done"][i]["JobState"] for i in jobs}
    # The rerun's jobs all completed; the first run's too, but the cancelled one (and any
    # job Snakemake itself cancelled when it stopped). Each run's fold completed once.
    assert all(states[i] == "COMPLETED" for i in second), states
    assert all(states[i] in ("COMPLETED", "CANCELLED") for i in first), states
    assert sum(rule == "fold" and states[i] == "COMPLETED" for i, rule in jobs.items()) == RUNS
    for slurm_id, rule in jobs.items():
        record = r["done"][slurm_id]
        assert record["NodeList"] == cluster.node and record["Partition"] == PARTITION
        # An embedded-model job asks for the cores its model uses (.test: threads 1)
        assert record["ProcCnt"] == str(TINY_THREADS), (rule, record)


@pytest.mark.cluster
@pytest.mark.workflow
def test_a_cancelled_job_fails_the_run_and_a_rerun_completes_it(slurm_available, cluster,
                                                                tiny_study,
                                                                cancelled_then_rerun):
    r = cancelled_then_rerun
    victim, out = r["victim"], r["cancelled"]["out"]
    assert r["cancelled"]["returncode"] != 0, out[-4000:]
    assert f"SLURM-job '{victim}' failed, SLURM status is: 'CANCELLED'" in out, out[-4000:]
    assert r["done"][victim]["JobState"] == "CANCELLED"
    assert not r["cancelled"]["rows_written"]
    assert r["rerun"].returncode == 0, (r["rerun"].stdout + r["rerun"].stderr)[-4000:]
    assert_same_bytes(tiny_study, r["work"])


@pytest.mark.cluster
@pytest.mark.workflow
def test_a_server_model_is_pinned_to_its_partition(slurm_available, cluster, tmp_path,
                                                   replay_dir):
    """The profile's commented pin, switched on: a model named in it runs its probe on the
    partition that hosts its server; a model not named stays on the default partition."""
    text = (ROOT / "profiles/slurm/config.yaml").read_text(encoding="utf-8")
    pins = dict(re.findall(r"^#   (fold|probe_model):\n#     slurm_partition: (.+)$", text, re.M))
    assert set(pins) == {"fold", "probe_model"}, "the profile no longer shows the pin"
    settings = yaml.safe_load(text)
    # fold: the pin as written (my-vllm only), so this study's model keeps the default;
    # probe_model: the same pin naming this study's model and the test's server partition.
    settings["set-resources"]["fold"]["slurm_partition"] = yaml.safe_load(pins["fold"])
    settings["set-resources"]["probe_model"]["slurm_partition"] = (
        yaml.safe_load(pins["probe_model"]).replace("my-vllm", "smollm2-135m")
        .replace("'gpu'", f"'{SERVER_PARTITION}'"))
    profile = tmp_path / "site-profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(yaml.safe_dump(settings))

    command = COMMAND.replace("profiles/slurm", str(profile)).replace(
        "results/tables", "results/runs/tiny/smollm2-135m/r0/q.json")
    p = run(cluster, command, replay_dir, "--config", "replay=True")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:] + cluster.logs()
    done = cluster.completed_jobs()
    partitions = {rule: done[i]["Partition"] for i, rule in submitted(out).items()}
    assert partitions == {"probe_model": SERVER_PARTITION, "fold": PARTITION}
