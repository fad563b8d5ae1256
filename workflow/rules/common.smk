# Wiring only: the one package call that checks the config and decides what the DAG is
# planned from (foldstudy/wiring/ load_wiring), the wildcard constraints, and the input
# functions the rule files name, each handing its wildcards to a method of W's part that
# decides it (W.sessions, W.runs, W.decision, W.outputs). A staged decision's looks are
# checkpoints, so what reads them is here too.

import os
import re
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from foldstudy.errors import StudyError
from foldstudy.evidence.package import decision_sweeps
from foldstudy.io import print_if_written, read_json
from foldstudy.report.titles import figure, table_titles
from foldstudy.study.design import look_is_final, repeats_after, repeats_stopped
from foldstudy.study.schema import name_wildcard
from foldstudy.study.spec import arm_ids, load_arm_table
from foldstudy.wiring import LEDGER, NUMBERS, load_wiring, run_refs

SNAKEFILE_START = time.time()  # the summary is printed when this run wrote it
ROOT = Path(workflow.basedir)
ENV = "../../envs/study.yaml"

# --- the config check: every problem at once, each naming its key and what is allowed ---

# The config files as given, each read again with the project's loader (Snakemake's keeps
# a key given twice silently and expands any alias).
CONFIG_FILES = list(
    dict.fromkeys([*workflow.configfiles, *(workflow.overwrite_configfiles or [])])
)
ARM_TABLE = load_arm_table(ROOT / "resources")
try:
    W = load_wiring(
        config, workflow.config_settings.config, CONFIG_FILES, ROOT, ARM_TABLE
    )
except StudyError as e:
    raise WorkflowError(str(e))
for _line in W.warnings:
    logger.warning(_line)
for _line in W.notes:
    logger.info(_line)  # in the -n output too: the plan against the budget, the stages

# Rules read STUDY.config, the checked and resolved copy, never the raw `config`.
STUDY = W.study
EVIDENCE_MODE = W.evidence_mode
GEN_EVIDENCE = W.evidence_dir
LOCK = W.lock
CLAIMS = W.claims
PROBED_MODELS = STUDY.probed_models
# Per-backend concurrency from the study config, where the command line or the profile
# set none (`--resources api_openrouter=4` always wins).
for _name, _limit in STUDY.config["limits"].items():
    if _name not in workflow.global_resources:
        workflow.register_resource(_name, _limit)

# --- wildcards: sweep and model names follow the schema's one name rule ---

NAME = name_wildcard(W.schema)


wildcard_constraints:
    sweep=NAME,
    model=NAME,
    # resources/arms.yaml and the config's own arms are the one place an arm is named
    arm="|".join(re.escape(a) for a in arm_ids(STUDY.arm_table)),
    repeat=r"\d+",
    look=r"\d+",
    # the config's own session scenarios (results/sessions/<scenario>/), none else
    scenario="|".join(re.escape(n) for n in STUDY.config["scenarios"]) or "(?!)",


# --- resource files each stage reads, declared as inputs: editing one reruns exactly the
# jobs that read it; relative to the working directory, so a moved checkout plans nothing ---

res = W.res
RESOURCES_REL = W.res()
PROMPT_FILES = W.prompt_files
ARMS_YAML = W.arms_yaml
GRADING_YAML = res("grading.yaml")
ANALYSIS_YAML = W.analysis_yaml
SCHEMA_FILES = W.schema_files
# What prices a repeat, the same for the audit, the power plan, a look and the cards.
PRICING = W.decision.pricing()
# Which arms a verdict reads how, the same for a look and the cards.
VERDICT_ARMS = W.decision.verdict_arms()

# --- fixtures and sessions (rules/fixtures.smk) ---


def fixture_params(wildcards):
    return W.sessions.fixture_params(wildcards.sweep)


def fixture_content(wildcards):
    return W.sessions.fixture_content(wildcards.sweep)


def fixture_session_inputs(wildcards):
    return W.sessions.fixture_session_inputs(wildcards.sweep)


def session_transcript(wildcards):
    return W.sessions.session_transcript(wildcards.scenario)


# --- probe and folds (rules/probe.smk, rules/fold.smk) ---


def probe_fixtures(wildcards):
    return W.runs.probe_fixtures(wildcards.model)


def folded_arm_params(wildcards):
    return W.runs.folded_arm_params(wildcards.model)


def probe_arm_params(wildcards):
    return W.runs.probe_arm_params(wildcards.model)


def _run(wildcards):
    return wildcards.sweep, wildcards.model, wildcards.repeat, wildcards.arm


def previous_run(wildcards):
    return W.runs.previous_run(*_run(wildcards))


def run_params(wildcards):
    return W.runs.run_params(*_run(wildcards))


def run_attempt(wildcards):
    return W.runs.run_attempt(*_run(wildcards))


# A number where every model asks the same (a callable costs a call per job).
model_threads = W.runs.uniform_threads or (
    lambda wildcards: W.runs.threads(wildcards.model)
)
BACKEND_SLOTS = {
    k: v if isinstance(v, int) else (lambda wildcards, f=v: f(wildcards.model))
    for k, v in W.runs.slot_resources.items()
}


# --- a staged decision (config decide:, rules/decide.smk): its looks are checkpoints, so
# which runs a sweep has is known once they ran. Without `decide:` none of this enters the
# DAG: a sweep's runs are all of its runs. ---


def repeats_at(sweep, look):
    """model -> repeats made when look `look` of a staged sweep is taken."""
    if look == 1:
        return W.decision.first_stage_repeats(sweep)
    return repeats_after(read_json(look_state(sweep, look - 1)))


def look_state(sweep, look):
    return checkpoints.decide_look.get(sweep=sweep, look=look).output.state


def final_look(sweep):
    """The look file of a staged sweep after which every model has stopped."""
    look = 1
    while not look_is_final(
        read_json(look_state(sweep, look)), look, W.decide["looks"]
    ):
        look += 1
    return look_state(sweep, look)


def runs_made(sweep):
    """The runs of a sweep: all of them, or those a staged decision's looks asked for."""
    runs = STUDY.sweep_runs(sweep)
    if sweep not in W.decide_sweeps:
        return runs
    reps = repeats_stopped(read_json(final_look(sweep)))
    return [r for r in runs if r.repeat < reps[r.model]]


def look_inputs(wildcards):
    """A look reads the runs made so far, the fixture (and the prices of the next stage),
    and the look before it."""
    look = int(wildcards.look)
    reps = repeats_at(wildcards.sweep, look)
    runs = [
        r.path for r in STUDY.sweep_runs(wildcards.sweep) if r.repeat < reps[r.model]
    ]
    return {"runs": runs, **W.decision.look_fixed_inputs(wildcards.sweep, look)}


def decision_inputs(wildcards):
    """The cards' inputs, and the final look of each staged sweep, which they read."""
    return {
        **W.outputs.decision_inputs(),
        **{f"decide_{s}": final_look(s) for s in W.decide_sweeps},
    }


def sweep_run_paths(wildcards):
    """The records a sweep's grade job reads."""
    return [r.path for r in runs_made(wildcards.sweep)]


# Every run as the config names it: pages are placed by these, never by a record's fields.
# The viewer and the comparison pages read the records at these paths when they run; they
# wait for them, and rerun when one changes, through rows.csv, which the grade jobs make
# from every record (declared as inputs too, the 663 records of the paper study would
# cost its dry run two more job lookups each). A staged sweep adds the runs its looks
# asked for, known once they ran.
PAGE_RUNS = run_refs(STUDY.runs)


def page_runs(wildcards):
    if not W.decide_sweeps:
        return PAGE_RUNS
    return run_refs([r for s in STUDY.config["sweeps"] for r in runs_made(s)])


def staged_run_paths(wildcards):
    """The runs a staged decision's looks asked for, as inputs; none without decide:."""
    if not W.decide_sweeps:
        return []
    return [r.path for s in STUDY.config["sweeps"] for r in runs_made(s)]


def release_lock(wildcards):
    try:
        return W.outputs.release_lock()
    except StudyError as e:
        raise WorkflowError(str(e))
