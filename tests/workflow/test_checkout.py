"""A copy of the checkout as a user would hold it: a thirteenth arm is one entry in
arms.yaml plus its prompt file, and a checkout moved to another path plans nothing.

One real run (on the gateway stand-in, one arm, one block at scale 0.01) serves both: the
new arm must reach rows.csv and the tables by the same rules every arm takes, and the
finished study, moved elsewhere, must be "Nothing to be done".
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT
from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import KEY_ENV, gateway_model
from ..support.procs import run_group

# The gateway stand-in answers: what is tested is the arm's registration and the paths,
# not what a model writes under it.
pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-checkout-standin"

NEW_ARM = {
    "title": "plain, three headings",
    "description": "plain text under three fixed headings of its own prompt",
    "system_prompt": "three_headings",
    "schema": None,
    "ceilings": {},
    "fold_budget_tokens": 2400,
    "carry_cap_tokens": 2400,
    "carry": "text",
}
PROMPT = ("You keep the running memory of a long operations session. Given the previous "
          "summary and the next chunk, return a replacement summary under three headings, "
          "Identifiers, Decisions and Next steps. Copy identifiers exactly as written.\n")
STUDY = {
    "study": "thirteen",
    "scale": 0.01,
    "recall_max_tokens": 200,
    "sweeps": {"s": {"scenario": "distributed", "seed": 11, "models": ["gw"],
                     "arms": ["z"], "repeats": 1}},
}


def snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """Snakemake run from inside the checkout, as its README says (no --directory)."""
    return run_group([sys.executable, "-m", "snakemake", *args], cwd=cwd, timeout=900,
                     env={**os.environ, KEY_ENV: KEY})


def copy_checkout(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in ("Snakefile", "workflow", "config", "resources", "profiles", "envs"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.lock.json"))
        else:
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Iterator[Path]:
    co = copy_checkout(tmp_path_factory.mktemp("a") / "checkout")
    arms = yaml.safe_load((co / "resources/arms.yaml").read_text())
    arms["arms"]["z"] = NEW_ARM
    (co / "resources/arms.yaml").write_text(yaml.safe_dump(arms, sort_keys=False))
    (co / "resources/prompts/three_headings.md").write_text(PROMPT)
    model = Model("acme/gw", [Endpoint("E", "e", supported_parameters=ALL_PARAMETERS)])
    with GatewayStandin([model], key=KEY) as gw:
        study = {**STUDY, "models": {"gw": gateway_model("acme/gw", gw.base_url)}}
        (co / "config/thirteen.yaml").write_text(yaml.safe_dump(study))
        p = snakemake(co, "-c2", "results/tables", "--configfile", "config/thirteen.yaml")
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        yield co


def test_a_thirteenth_arm_is_one_entry_and_its_prompt(checkout):
    with open(checkout / "results/evidence/rows.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["arm"], r["valid"], r["folds"]) for r in rows] == [("z", "true", "5")]
    assert int(rows[0]["n_graded"]) == 14 and int(rows[0]["prompt_tokens"]) > 0
    with open(checkout / "results/tables/recall-by-model-arm.csv", newline="") as f:
        assert [(t["arm"], t["n_valid"]) for t in csv.DictReader(f)] == [("z", "1")]
    table1 = (checkout / "results/tables/table1-recall-model-arm.md").read_text()
    assert "plain, three headings" in table1  # the arm's own title, from arms.yaml


def test_a_moved_checkout_plans_nothing(checkout, tmp_path):
    moved = tmp_path / "elsewhere" / "checkout"
    moved.parent.mkdir()
    shutil.move(checkout, moved)
    try:
        p = snakemake(moved, "-n", "results/tables", "--configfile", "config/thirteen.yaml")
        assert p.returncode == 0, p.stderr[-3000:]
        assert "Nothing to be done" in p.stdout + p.stderr, p.stdout[-3000:]
    finally:
        shutil.move(moved, checkout)
