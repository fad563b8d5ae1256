"""The release of any study the checkout made rebuilds from its package, the
user's own inputs included. One study holds both kinds: a sweep folding an own session
(its transcript left out of the package as `<local path: name>`, its text published with
release.publish_sessions) and a sweep running an own arm (arms_file: the arms and prompt
files carried in the package, the released config pointing at them there). It is locked
and released on the gateway stand-in, then verified and its tables rebuilt in evidence
mode by a reviewer in a fresh directory that holds nothing but the package. One study,
not one per kind: each full chain and its rebuild cost about 15 s of CPU, and the two
kinds meet in one package without touching each other's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT
from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import GatewayStudy, gateway_model
from ..support.procs import snakemake

pytestmark = pytest.mark.workflow

DATA = ROOT / "tests/data/sessions"
KEY = "sk-or-v1-standin-release-own"


def own_inputs(tmp: Path, base_url: str) -> dict:
    """Two sweeps: one folding the sample Claude Code session under m, published on
    release; one synthetic, running the user's own arm (its twin m)."""
    private = tmp / "private"
    arms = private / "arms"
    (arms / "prompts").mkdir(parents=True)
    for name in ("atlas.claude-code.jsonl", "atlas-facts.yaml"):
        shutil.copy(DATA / name, private / name)
    (arms / "prompts/compact.md").write_text("Summarise the session; keep every "
                                             "identifier.\n")
    (arms / "arms.yaml").write_text(yaml.safe_dump({"arms": {"mine": {
        "title": "my agent's compaction", "twin": "m", "system_prompt": "prompts/compact.md",
        "fold_budget_tokens": 2400, "carry_cap_tokens": 2400, "carry": "text"}}}))
    return {"study": "own-inputs", "scale": 0.01, "recall_max_tokens": 64,
            "models": {"gw": gateway_model("acme/m", base_url, timeout_s=10)},
            "arms_file": str(arms / "arms.yaml"),
            "scenarios": {"atlas": {"transcript": str(private / "atlas.claude-code.jsonl"),
                                    "facts": str(private / "atlas-facts.yaml")}},
            "sweeps": {"mine": {"scenario": "atlas", "models": ["gw"], "arms": ["m"],
                                "repeats": 1},
                       "main": {"scenario": "distributed", "seed": 3, "models": ["gw"],
                                "arms": ["mine"], "repeats": 1}},
            "release": {"publish_sessions": True}}


def release_then_review(tmp: Path, name: str, config: dict) -> Path:
    """Lock and release the study in tmp/<name>, then, in a fresh directory holding only
    its package, verify it and rebuild its tables in evidence mode (no key, no model)."""
    work = tmp / name
    study = GatewayStudy(work, config, KEY)
    for target in ("results/tables", "lock", "release"):
        p = study.snakemake(target, cores=2)
        assert p.returncode == 0, f"{target}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    review = tmp / f"{name}-review"
    review.mkdir()
    package = review / "package"
    shutil.copytree(work / f"results/release/{config['study']}", package)
    shutil.rmtree(tmp / name / "private")  # the user's own files are gone: the package
    p = snakemake(review, "--configfile", str(package / "config.yaml"), "-c2", "verify",
                  "results/tables", "--config", "evidence=package/evidence", timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "the package whole" in (review / "results/verify/report.md").read_text()
    assert (review / "results/tables/index.md").is_file()
    assert not (review / "results/runs").exists()  # nothing folded
    return package


def test_a_study_with_an_own_session_and_an_own_arm_rebuilds_from_its_package(tmp_path):
    models = [Model("acme/m", [Endpoint("A", "a", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=KEY) as gw:
        package = release_then_review(tmp_path, "own", own_inputs(tmp_path / "own",
                                                                  gw.base_url))
    released = yaml.safe_load((package / "config.yaml").read_text())
    assert released["scenarios"]["atlas"]["transcript"] == "<local path: atlas.claude-code.jsonl>"
    # the own arm's method travels with the package, and the config points at it there
    assert released["arms_file"] == "arms/arms.yaml"
    assert (package / "arms/prompts/compact.md").read_text().startswith("Summarise the session")
    crate = json.loads((package / "ro-crate-metadata.json").read_text())
    assert {"arms/arms.yaml", "arms/prompts/compact.md"} <= {e.get("@id")
                                                             for e in crate["@graph"]}
