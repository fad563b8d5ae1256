"""What the workflow decides while it loads (foldstudy/wiring/), without Snakemake: the
one checked call common.smk makes, each refusal it can raise as one StudyError, and the
inputs and params the rules read from it (its parts: W.runs, W.decision, W.outputs); and
a staged look's state as the workflow reads it (study/design.py)."""

from __future__ import annotations

import ast
import copy
import json
import os
import re

import pytest
import yaml

from foldstudy.backends.prompt_states import STATES_ENV
from foldstudy.errors import StudyError
from foldstudy.study.config import ConfigError
from foldstudy.study.design import look_is_final, repeats_after, repeats_stopped
from foldstudy.study.session_cache import CACHE_ENV
from foldstudy.study.spec import load_arm_table
from foldstudy.wiring import load_wiring

from ..conftest import ROOT

DECIDE = {"pair": ["j", "m"], "margin": 0.10, "max_repeats": 24, "looks": 3}


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A working directory of its own, and the session cache and prompt states under it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv(STATES_ENV, raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def wire(cfg, files=(), flags=None):
    return load_wiring(copy.deepcopy(cfg), flags or {}, list(files), ROOT,
                       load_arm_table(ROOT / "resources"))


def test_the_default_study_wires_its_runs_relative_to_the_working_directory(here, base):
    w = wire(base)
    assert not w.evidence_mode and w.evidence_dir == "results/evidence"
    assert w.lock == f"config/{base['study']}.lock.json"
    # resources/ relative to the working directory: a moved checkout plans nothing new
    for path in (w.res("arms.yaml"), w.prompt_files["fold_user"]):
        assert not path.startswith("/")
    assert (here / w.prompt_files["fold_user"]).resolve() == (
        ROOT / "resources/prompts/fold_user.md.j2").resolve()
    # one fold job's params: its arm, model and sample, the seed of its sweep
    run = w.study.runs[0]
    params = w.runs.run_params(run.sweep, run.model, str(run.repeat), run.arm)
    assert params["sample"] == {"sweep": run.sweep, "model": run.model, "arm": run.arm,
                                "repeat": run.repeat, "position": run.position,
                                "seed": w.config["sweeps"][run.sweep]["seed"]}
    assert "staged" not in params  # only a staged decision's runs carry a budget
    # the prices every pricing rule shares: exactly the arms some run uses
    assert set(w.decision.pricing()["arms"]) == {r.arm for r in w.study.runs}
    assert w.decision.decide_first == {} and not any(n.startswith("decide:") for n in w.notes)
    assert w.outputs.reader_outputs()[-2:] == ["results/viewer", "results/compare"]
    # the caches live and go with Snakemake's own state under .snakemake/
    assert os.environ[CACHE_ENV] == str(here / ".snakemake/foldstudy/sessions")
    assert os.environ[STATES_ENV] == str(here / ".snakemake/foldstudy/prompt-states")


def test_a_staged_decision_is_planned_once_and_said_in_the_notes(here, base):
    cfg = copy.deepcopy(base)
    sweep = next(iter(cfg["sweeps"]))
    cfg["sweeps"][sweep]["arms"] = ["j", "m"]
    cfg["decide"] = DECIDE
    w = wire(cfg)
    assert w.decide_sweeps == [sweep] and w.decision.decide_first == {sweep: 8}
    assert any(f"decide: sweep {sweep} runs j against m in stages: first 8 repeats per "
               "model, at most 24 over 3 looks" in n for n in w.notes)
    run = w.study.runs[0]
    staged = w.runs.run_params(run.sweep, run.model, str(run.repeat), run.arm)["staged"]
    assert staged == {"budget_usd": None}  # no record yet: nothing stopped it
    decision = w.decision
    assert decision.look_fixed_inputs(sweep, 2)["previous"] == f"results/decide/{sweep}/look1.json"
    assert "previous" not in decision.look_fixed_inputs(sweep, 1)


def test_each_refusal_is_one_study_error_before_any_job(here, base, tmp_path):
    # the config check's own problems, every one at once
    bad = copy.deepcopy(base)
    bad["sweps"] = {}
    with pytest.raises(ConfigError, match="config: unknown key 'sweps'"):
        wire(bad)
    # a config file with a key given twice: named by file
    twice = tmp_path / "twice.yaml"
    twice.write_text("study: a\nstudy: b\n")
    with pytest.raises(StudyError, match=r"^config file .*twice\.yaml"):
        wire(base, files=[twice])
    # an empty --config flag
    with pytest.raises(StudyError, match="replay"):
        wire(base, flags={"replay": None})
    # an evidence folder that is not there
    with pytest.raises(StudyError, match="nowhere"):
        wire({**base, "evidence": str(tmp_path / "nowhere")})


def test_release_without_a_lock_says_how_to_pin_one(here, base):
    w = wire(base)
    with pytest.raises(StudyError, match="pin it first with `snakemake -c1 lock`"):
        w.outputs.release_lock()
    lock = here / w.lock
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({}))
    assert w.outputs.release_lock() == w.lock


def test_a_replay_without_a_lock_warns_that_the_store_is_unverified(here, base):
    (here / "store").mkdir()
    w = wire({**base, "replay": True, "store": "store"})
    assert any(x.startswith("replay: the response store store/ is unverified")
               for x in w.warnings)


def test_every_name_the_rule_files_call_on_w_is_there(here, base):
    """A rule file calls W.<core member> or W.<part>.<member>: a member moved between
    parts would otherwise fail only when Snakemake loads the Snakefile."""
    w = wire(base)
    called = set()
    for smk in [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]:
        called |= set(re.findall(r"\bW((?:\.\w+)+)", smk.read_text(encoding="utf-8")))
    assert ".runs.run_params" in called and ".lock" in called
    for chain in sorted(called):
        target = w
        for name in chain.strip(".").split("."):
            target = getattr(target, name)  # AttributeError names what is missing


def test_each_part_reads_the_core_and_no_other_part():
    """Parts reach each other only through the core (wiring/core.py), so a part is read
    alone, and what two parts both need is found in one place."""
    folder = ROOT / "workflow/foldstudy/wiring"
    parts = {"sessions", "runs", "decision", "outputs"}
    assert parts | {"__init__", "core"} == {p.stem for p in folder.glob("*.py")}
    for part in sorted(parts):
        tree = ast.parse((folder / f"{part}.py").read_text(encoding="utf-8"))
        siblings = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.level == 1}
        assert siblings == {"core"}, part


LOOK = {"done": False, "models": {
    "a": {"status": "continue", "repeats": 8, "next": 16},
    "b": {"status": "difference", "repeats": 8},
    "c": {"status": "continue", "repeats": 16}}}


def test_a_looks_state_says_which_runs_the_next_stage_adds():
    assert repeats_after(LOOK) == {"a": 16, "b": 8, "c": 16}
    assert repeats_stopped(LOOK) == {"a": 8, "b": 8, "c": 16}
    assert not look_is_final(LOOK, 1, 3)
    assert look_is_final(LOOK, 3, 3)  # the last look, whatever it says
    assert look_is_final({**LOOK, "done": True}, 1, 3)
