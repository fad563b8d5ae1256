"""verify on a live run of the study named `paper` (the gateway stand-in, small scale):
every claim of resources/claims/paper.yaml reported with its kind and verdict, read from
the workflow's own resources even with --directory elsewhere, and a count that differs
from the paper's corpus is not drift. The same run, served on loopback as a local
server is, is released with its endpoint left out (paper §7) and its package verifies
where it lies."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from ..conftest import RESOURCES
from ..support import procs
from ..support.gateway_standin import Endpoint, GatewayStandin, Model

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-LIVE-0000"
ALL = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs",
       "reasoning")


def test_verify_reports_every_claim_of_a_live_paper_run(tmp_path):
    models = [Model("acme/healthy", [Endpoint("Cheap", "cheap", "fp8",
                                              supported_parameters=ALL)])]
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {
            "study": "paper", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 64,
            "models": {"healthy": {"backend": "openrouter", "api_key_env": "FOLDSTUDY_TEST_KEY",
                                   "model_id": "acme/healthy", "base_url": gw.base_url,
                                   "timeout_s": 10, "max_attempts": 2}},
            "sweeps": {"partition": {"scenario": "distributed", "seed": 3, "arms": ["j", "q"],
                                     "models": ["healthy"], "repeats": 2}},
            "scopes": {"partition": {"sweeps": ["partition"]}},
        }
        path = tmp_path / "paper.yaml"
        path.write_text(json.dumps(cfg))
        env = {**os.environ, "FOLDSTUDY_TEST_KEY": KEY}

        def snakemake(*args: str) -> subprocess.CompletedProcess:
            return procs.snakemake(tmp_path, "--configfile", str(path), *args, timeout=600,
                                   env=env)

        for target in (["-c2", "results/tables"], ["-c1", "lock"], ["-c1", "verify"],
                       ["-c1", "release"]):
            p = snakemake(*target)
            assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    # the stand-in's loopback URL is left out of the release, and the package verifies
    package = tmp_path / "results/release/paper"
    released = yaml.safe_load((package / "config.yaml").read_text())
    assert released["models"]["healthy"]["base_url"] == "<private endpoint>"
    assert not any("127.0.0.1" in p.read_text(errors="replace")
                   for p in package.rglob("*") if p.is_file() and p.suffix != ".png")
    own = snakemake("-c1", "verify", "--configfile", str(package / "config.yaml"),
                    "--config", "evidence=results/release/paper/evidence")
    assert own.returncode == 0, own.stdout[-3000:] + own.stderr[-3000:]
    assert "the package whole" in (tmp_path / "results/verify/report.md").read_text()
    (tmp_path / "results/verify/report.md").unlink()
    p = snakemake("-c1", "verify")  # the study's own verify again, for the claims below
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    report = (tmp_path / "results/verify/report.md").read_text()
    claims = yaml.safe_load((RESOURCES / "claims/paper.yaml").read_text())["claims"]
    assert "**OK**" in report and "paper.yaml" in report
    assert f"{len(claims)} claims in" in report
    rows = [line for line in report.splitlines() if line.startswith("| `")]
    assert len(rows) == len(claims)
    for c, line in zip(claims, rows, strict=True):
        assert line.startswith(f"| `{c['key']}` | {c['kind']} |")
        assert any(v in line for v in ("**reproduced**", "**not reproduced**",
                                       "**not checkable here**"))
    # The paper's row counts are exact claims: not checkable on a fresh run, not drift.
    n_rows = next(line for line in rows if line.startswith("| `icc.n_rows`"))
    assert "**not checkable here**" in n_rows
