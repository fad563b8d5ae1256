"""A new backend is its module and its registration: a study runs on one added so.

tests/support/stub_backend.py is such a module. It is installed here the way a plugin
distribution is (its entry point in the group foldstudy.backends, on the path of the
snakemake process and of every job it starts) and never imported by this process, so
the other tests see the built-in backends only.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from foldstudy.backends.registry import ENTRY_POINT_GROUP

from ..conftest import ROOT, TINY_CONFIG
from ..support import procs

pytestmark = pytest.mark.workflow
STUB_MODULE = "tests.support.stub_backend"


def install_plugin(site: Path) -> None:
    """What `pip install` of a plugin distribution leaves behind: its entry point."""
    dist = site / "foldstudy_stub_backend-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: foldstudy-stub-backend\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nstub = {STUB_MODULE}\n")


def stub_study(tmp_path: Path) -> Path:
    """The tiny study (.test/config.yaml) with its one model on the stub backend."""
    cfg = yaml.safe_load(TINY_CONFIG.read_text(encoding="utf-8"))
    cfg["models"] = {"stub-model": {"backend": "stub"}}
    cfg["sweeps"]["tiny"]["models"] = ["stub-model"]
    cfg["limits"] = {"stub_calls": 1}  # the stub's own slot resource
    path = tmp_path / "stub.yaml"
    path.write_text(json.dumps(cfg))
    return path


def snakemake(workdir: Path, configfile: Path, *args: str, site: Path | None
              ) -> subprocess.CompletedProcess[str]:
    path = [str(site)] if site else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [*path, str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return procs.snakemake(workdir, "--configfile", str(configfile), *args, timeout=600,
                           env=env)


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t" if path.suffix == ".tsv" else ","))


def test_a_study_runs_on_a_backend_added_as_its_module_and_registration(tmp_path):
    configfile = stub_study(tmp_path)
    work = tmp_path / "work"

    # Not installed: the config check does not know the kind, and says which it knows.
    p = snakemake(work, configfile, "-n", site=None)
    assert p.returncode != 0
    assert ("'stub' is not allowed (allowed: anthropic, embedded, openai, openai_responses, "
            "openrouter)") in p.stdout + p.stderr

    site = tmp_path / "site"
    install_plugin(site)
    p = snakemake(work, configfile, "-c2", "all", "audit", site=site)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    probe = json.loads((work / "results/probe/stub-model.json").read_text())
    assert probe["backend"] == "stub" and probe["verdict"] == "ok"
    assert probe["endpoint"] == {"backend": "stub", "model": "stub-model",
                                 "model_id": "stub-model"}  # its defaults, resolved
    rows = read(work / "results/evidence/rows.csv")
    sweep = yaml.safe_load(TINY_CONFIG.read_text(encoding="utf-8"))["sweeps"]["tiny"]
    assert len(rows) == len(sweep["arms"]) * sweep["repeats"]  # every run, on the stub
    assert {r["model"] for r in rows} == {"stub-model"}
    assert {r["served_by"] for r in rows} == {"stub"}
    table = read(work / "results/tables/recall-by-model-arm.csv")
    assert {(t["model"], t["arm"]) for t in table} == {("stub-model", "j"), ("stub-model", "q")}
    # The audit prices it by the base class's default: the probe pinned no endpoint.
    plan = {r["model"]: r for r in read(work / "results/audit/plan.tsv")}
    assert plan["stub-model"]["backend"] == "stub"
    assert plan["stub-model"]["price_source"] == "unknown: run the probe"
