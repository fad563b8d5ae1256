"""The release of any study the checkout made rebuilds from its package, the
user's own inputs included: a study folding an own session (its transcript left out of
the package as `<local path: name>`, its text published with release.publish_sessions)
and a study running an own arm (arms_file: the arms and prompt files carried in the
package, the released config pointing at them there). Each is locked and released on
the gateway stand-in, then verified and its tables rebuilt in evidence mode by a
reviewer in a fresh directory that holds nothing but the package."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
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


def own_session(tmp: Path, base_url: str) -> dict:
    """One sweep folding the sample Claude Code session, published on release."""
    private = tmp / "private"
    private.mkdir(parents=True)
    for name in ("atlas.claude-code.jsonl", "atlas-facts.yaml"):
        shutil.copy(DATA / name, private / name)
    return {"study": "own-session", "recall_max_tokens": 64,
            "models": {"gw": gateway_model("acme/m", base_url, timeout_s=10)},
            "scenarios": {"atlas": {"transcript": str(private / "atlas.claude-code.jsonl"),
                                    "facts": str(private / "atlas-facts.yaml")}},
            "sweeps": {"mine": {"scenario": "atlas", "models": ["gw"], "arms": ["m"],
                                "repeats": 1}},
            "release": {"publish_sessions": True}}


def own_arms(tmp: Path, base_url: str) -> dict:
    """One synthetic sweep running the user's own arm beside its twin m."""
    arms = tmp / "private/arms"
    (arms / "prompts").mkdir(parents=True)
    (arms / "prompts/compact.md").write_text("Summarise the session; keep every "
                                             "identifier.\n")
    (arms / "arms.yaml").write_text(yaml.safe_dump({"arms": {"mine": {
        "title": "my agent's compaction", "twin": "m", "system_prompt": "prompts/compact.md",
        "fold_budget_tokens": 2400, "carry_cap_tokens": 2400, "carry": "text"}}}))
    return {"study": "own-arms", "scale": 0.01, "recall_max_tokens": 64,
            "models": {"gw": gateway_model("acme/m", base_url, timeout_s=10)},
            "arms_file": str(arms / "arms.yaml"),
            "sweeps": {"main": {"scenario": "distributed", "seed": 3, "models": ["gw"],
                                "arms": ["mine"], "repeats": 1}}}


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


def test_own_session_and_own_arm_studies_rebuild_from_their_packages(tmp_path):
    models = [Model("acme/m", [Endpoint("A", "a", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=KEY) as gw:
        # the two studies side by side, each in its own folder
        with ThreadPoolExecutor(2) as pool:
            session, arms = pool.map(
                lambda name, make: release_then_review(tmp_path, name,
                                                       make(tmp_path / name, gw.base_url)),
                ("session", "arms"), (own_session, own_arms))
    released = yaml.safe_load((session / "config.yaml").read_text())
    assert released["scenarios"]["atlas"]["transcript"] == "<local path: atlas.claude-code.jsonl>"
    # the own arm's method travels with the package, and the config points at it there
    released = yaml.safe_load((arms / "config.yaml").read_text())
    assert released["arms_file"] == "arms/arms.yaml"
    assert (arms / "arms/prompts/compact.md").read_text().startswith("Summarise the session")
    crate = json.loads((arms / "ro-crate-metadata.json").read_text())
    assert {"arms/arms.yaml", "arms/prompts/compact.md"} <= {e.get("@id")
                                                             for e in crate["@graph"]}
