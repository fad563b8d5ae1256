# Config validation, wildcard constraints and input functions; rule files hold rules only.

import os
import re
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from foldstudy.backends import backend_classes
from foldstudy.backends.store import store_dir_problem
from foldstudy.errors import StudyError
from foldstudy.evidence.load import (
    decision_sweeps,
    evidence_dir_problem,
    evidence_package_problem,
    package_gate_problem,
    pilot_problem,
)
from foldstudy.io import load_yaml, print_if_written, read_json
from foldstudy.report.paths import block_path
from foldstudy.run.audit import budget_note
from foldstudy.report.titles import figure, table_titles
from foldstudy.grade.validity import fold_attempt, fold_budget
from foldstudy.study.config import (
    ConfigError,
    decide_evidence_note,
    decide_sweeps,
    load_study,
    run_path,
)
from foldstudy.study.flags import command_line_flags, empty_flag_problems
from foldstudy.study.schema import name_wildcard
from foldstudy.study.session_cache import CACHE_DIR, CACHE_ENV
from foldstudy.study.session_checks import session_content
from foldstudy.study.spec import (
    aa_copies,
    package_arms,
    arm_ids,
    arms_file_path,
    load_arm_table,
    native_prompts,
    own_arm_twins,
    unmatched_own_arms,
)
from foldstudy.study.design import cycle_length, first_stage

SNAKEFILE_START = time.time()  # the summary is printed when this run wrote it
ROOT = Path(workflow.basedir)
RESOURCES = ROOT / "resources"
ENV = "../../envs/study.yaml"


def res(*parts):
    """A file of resources/, as a rule input relative to the working directory.

    Relative, so a checkout moved to another path (working directory inside it) plans
    nothing: an absolute path would change every job's recorded inputs.
    """
    return os.path.relpath(RESOURCES.joinpath(*parts))


RESOURCES_REL = res()
ARM_TABLE = load_arm_table(RESOURCES)
# resources/arms.yaml is the one place an arm is named; the wildcard follows it.
ARMS = arm_ids(ARM_TABLE)

# One check of the config against the schema (every problem, each naming its key and
# what is allowed), which fills in every default. Rules read STUDY.config, that checked
# and resolved copy, never the raw `config`.
CONFIG_SCHEMA = load_yaml(ROOT / "config/schema/config.schema.yaml")
# Snakemake read the config files with a loader that keeps a key given twice silently
# (the last one wins) and expands any alias: read each again with ours, which refuses
# both by file and line before the config check walks them.
CONFIG_FILES = list(
    dict.fromkeys([*workflow.configfiles, *(workflow.overwrite_configfiles or [])])
)
for _configfile in CONFIG_FILES:
    try:
        load_yaml(_configfile)
    except StudyError as e:
        raise WorkflowError(f"config file {e}")
if _empty := empty_flag_problems(workflow.config_settings.config):
    raise WorkflowError("\n".join(_empty))
command_line_flags(config, CONFIG_SCHEMA)
# A session scenario's transcript is parsed once a file content, under .snakemake/ of the
# working directory, so a command's config check does not grow with the session's size.
os.environ.setdefault(CACHE_ENV, os.path.abspath(CACHE_DIR))
try:
    STUDY = load_study(
        config,
        CONFIG_SCHEMA,
        ARM_TABLE,
        RESOURCES,
        config_files=CONFIG_FILES,
    )
except ConfigError as e:
    raise WorkflowError(str(e))
if _size := STUDY.plan_size():
    logger.warning(_size)
for _warning in STUDY.warnings:
    logger.warning(f"config: {_warning}")
# The arms a run may name: the paper's and the config's own (arms_file).
ARMS = arm_ids(STUDY.arm_table)


# Sweep and model names follow the schema's one name rule (no `.` or `..`).
NAME = name_wildcard(CONFIG_SCHEMA)


wildcard_constraints:
    sweep=NAME,
    model=NAME,
    arm="|".join(re.escape(a) for a in ARMS),
    repeat=r"\d+",
    look=r"\d+",
    # the config's own session scenarios (results/sessions/<scenario>/), none else
    scenario="|".join(re.escape(n) for n in STUDY.config["scenarios"]) or "(?!)",


# Resource files each stage reads, declared as inputs: editing one reruns exactly the
# jobs that read it.
PROMPT_FILES = {
    "fold_user": res("prompts", "fold_user.md.j2"),
    "recall_system": res("prompts", "recall_system.md"),
    "recall_user": res("prompts", "recall_user.md.j2"),
}
ARMS_YAML = res("arms.yaml")
GRADING_YAML = res("grading.yaml")
ANALYSIS_YAML = res("analysis.yaml")
# The schemas arms.yaml names: the statistics read their field descriptions (§4.3).
SCHEMA_FILES = sorted(
    {
        res("schemas", f"{a['schema']}.json")
        for a in ARM_TABLE["arms"].values()
        if a.get("schema")
    }
)


def own_session(sweep):
    """The config's own session scenario this sweep runs, or None."""
    return STUDY.config["scenarios"].get(STUDY.config["sweeps"][sweep]["scenario"])


def fixture_params(wildcards):
    sw = STUDY.config["sweeps"][wildcards.sweep]
    own = own_session(wildcards.sweep)
    if own is not None:  # scale does not apply: the session's size is the transcript's
        return {"seed": sw["seed"], "session": {"name": sw["scenario"], **own}}
    fx = {"scenario": sw["scenario"], "seed": sw["seed"], "scale": STUDY.scale}
    # control facts only where configured: a sweep without them keeps its params, so
    # nothing of it reruns
    tail = (sw.get("controls") or {}).get("tail")
    return {**fx, "controls": tail} if tail else fx


def fixture_content(wildcards):
    """A session sweep's transcript by content (study/session_checks.py); None else."""
    scenario = STUDY.config["sweeps"][wildcards.sweep]["scenario"]
    return session_content(STUDY.sessions.get(scenario))


def fixture_session_inputs(wildcards):
    """A session sweep's transcript and facts file, declared so editing either reruns
    its fixture and everything after it."""
    own = own_session(wildcards.sweep)
    if own is None:
        return {}
    scenario = STUDY.config["sweeps"][wildcards.sweep]["scenario"]
    return {
        "transcript": os.path.expanduser(own["transcript"]),
        "own_facts": os.path.expanduser(own["facts"]),
        "inherited": session_inherited(scenario),
    }


def session_inherited(scenario):
    """The files a session's main thread inherited (a Codex fork's parent rollouts), as
    the config check read them: inputs like the transcript, so editing one reruns."""
    fx = STUDY.sessions.get(scenario)
    return (
        [f["path"] for f in fx.meta["session"]["inherited"]] if fx is not None else []
    )


def session_transcript(wildcards):
    return os.path.expanduser(
        STUDY.config["scenarios"][wildcards.scenario]["transcript"]
    )


def previous_run(wildcards):
    """The run before this one in its block: the DAG enforces the design's order."""
    run = STUDY.run(wildcards.sweep, wildcards.model, wildcards.repeat, wildcards.arm)
    if run.previous_arm is None:
        return []
    return run_path(run.sweep, run.model, run.repeat, run.previous_arm)


# Each arm as the params a job carries, built once (asdict per job cost 0.1 s of the
# paper study's dry run).
ARM_PARAMS = {a: arm.to_dict() for a, arm in STUDY.arms.items()}


def run_params(wildcards):
    run = STUDY.run(wildcards.sweep, wildcards.model, wildcards.repeat, wildcards.arm)
    sw = STUDY.config["sweeps"][run.sweep]
    params = {
        "arm": ARM_PARAMS[run.arm],
        "model": STUDY.model_config(run.model),
        "sample": {
            "sweep": run.sweep,
            "model": run.model,
            "arm": run.arm,
            "repeat": run.repeat,
            "position": run.position,
            "seed": sw["seed"],
        },
    }
    if run.sweep in DECIDE_SWEEPS:
        params["staged"] = staged_run(wildcards)
    return params


def staged_run(wildcards):
    """A staged decision's run: a budget that runs out part-way ends it as a
    not_run:budget record, and a changed budget_usd reruns exactly the runs it stopped
    (validity.fold_budget). Part of the `run` param, not a param of its own: a new param
    changes the params Snakemake recorded for every fold job, so every finished run of
    every study would run again; this key changes only the staged sweeps' runs."""
    path = run_path(wildcards.sweep, wildcards.model, wildcards.repeat, wildcards.arm)
    return {"budget_usd": fold_budget(path, STUDY.config["budget_usd"])}


def run_attempt(wildcards):
    path = run_path(wildcards.sweep, wildcards.model, wildcards.repeat, wildcards.arm)
    return fold_attempt(path, STUDY.config["retry_infrastructure"])


def _threads(model):
    # Embedded jobs ask for the threads they use; other backends wait on a server.
    return int(STUDY.model_config(model).get("threads", 1))


def _model_threads(wildcards):
    return _threads(wildcards.model)


# A number where every model asks the same: Snakemake calls a job's callables once per
# job (685 fold jobs in the paper study), and each call costs more than the plan's share.
_THREADS = {_threads(m) for m in STUDY.config["models"]}
model_threads = _THREADS.pop() if len(_THREADS) == 1 else _model_threads


def sweep_runs(wildcards):
    return [r.path for r in staged_runs(wildcards.sweep)]


def graded_parts(name):
    return [f"results/graded/{s}/{name}.csv" for s in STUDY.config["sweeps"]]


# --- generate and release (rules/generate.smk, rules/release.smk) ---

# Evidence mode (--config evidence=DIR): statistics and tables from a released package,
# with no fixture, fold or grade job in the DAG.
EVIDENCE_MODE = bool(STUDY.config["evidence"])
if EVIDENCE_MODE and (_problem := evidence_dir_problem(STUDY.config["evidence"], ".")):
    raise WorkflowError(_problem)
# The package's identity and bounds, checked once here (as the config is), so an
# impossible package is refused by name before any job; each stage still checks what
# it reads.
if EVIDENCE_MODE:
    # Imported here, not above: the analysis pulls in scipy, which only evidence mode's
    # check needs at DAG time (1.9 s of a loaded machine's dry run).
    from foldstudy.analysis.analysis import Analysis

    _plan = Analysis.load(ANALYSIS_YAML, ARMS_YAML)
    if _problem := evidence_package_problem(
        STUDY.config["evidence"], _plan.arm_order, _plan.scenarios, STUDY.config
    ):
        raise WorkflowError(_problem)
GEN_EVIDENCE = STUDY.config["evidence"] or "results/evidence"
# A released package carries its lock beside its evidence/ folder.
_PACKAGE_LOCK = Path(GEN_EVIDENCE).parent / "lock.json"
LOCK = (
    str(_PACKAGE_LOCK)
    if EVIDENCE_MODE and _PACKAGE_LOCK.is_file()
    else f"config/{STUDY.config['study']}.lock.json"
)
if not EVIDENCE_MODE and (
    _problem := store_dir_problem(STUDY.config["store"], STUDY.config["replay"])
):
    raise WorkflowError(_problem)
if STUDY.config["replay"] and not EVIDENCE_MODE and not Path(LOCK).is_file():
    # Said first: a forged entry passes its own digest; only a lock's pins catch it.
    logger.warning(
        f"replay: the response store {STUDY.config['store']}/ is unverified: no lock at "
        f"{LOCK}, so every entry is served as it stands (replay against the study's lock)"
    )
# The repeat plan's pilot is an evidence package, refused by name if not.
if _problem := pilot_problem(STUDY.config["power"]["pilot"]):
    raise WorkflowError(_problem)
CLAIMS = res("claims", f"{STUDY.config['study']}.yaml")
NUMBERS = "results/stats/numbers.json"


def generate_inputs(wildcards):
    ev = Path(GEN_EVIDENCE)
    return {
        "rows": str(ev / "rows.csv"),
        "checks": str(ev / "checks.csv"),
        "numbers": NUMBERS,
    }


def private_dirs():
    # A reviewer's evidence-only package has none of these; verify skips what is absent.
    if EVIDENCE_MODE:
        return {"store": None, "runs": None, "fixtures": None, "ledger": None}
    return {
        "store": STUDY.config["store"],
        "runs": "results/runs",
        "fixtures": "results/fixtures",
        "ledger": LEDGER,
    }


def release_lock(wildcards):
    if not Path(LOCK).is_file():
        raise WorkflowError(
            f"no lock for study {STUDY.config['study']!r} ({LOCK}); pin it first with "
            "`snakemake -c1 lock`, then run the release"
        )
    return LOCK


# --- probe and backends (rules/probe.smk, rules/fold.smk) ---

# The spend ledger every paid call of the study is held to (docs/design.md §6; backends/ledger.py).
LEDGER = "results/spend/ledger.json"
try:
    _note = budget_note(STUDY.config["budget_usd"], LEDGER, "results/audit/plan.tsv")
except StudyError as e:  # a ledger that is not what was paid: refused before any job
    raise WorkflowError(str(e))
if _note:
    logger.info(_note)  # in the -n output too: the plan against the budget

# Every model some sweep runs (one verdict before any of its folds), and the probe-only.
PROBED_MODELS = STUDY.probed_models

# Per-backend concurrency from the study config, where the command line or the profile
# set none (`--resources api_openrouter=4` always wins).
for _name, _limit in STUDY.config["limits"].items():
    if _name not in workflow.global_resources:
        workflow.register_resource(_name, _limit)


def probe_fixtures(wildcards):
    """The fixtures this model will fold: the probe sizes the context a fold needs."""
    return [
        f"results/fixtures/{s}/fixture.json" for s in STUDY.sweeps_of(wildcards.model)
    ]


def folded_arm_params(wildcards):
    """Every arm any sweep runs on this model, resolved at the study's scale: the probe
    decides whether each may fold."""
    return [ARM_PARAMS[a] for a in STUDY.folded_arms(wildcards.model)]


def probe_arm_params(wildcards):
    """The model's `probe_arms`: probed and recorded, never folded, deciding nothing."""
    return [ARM_PARAMS[a] for a in STUDY.probe_arms(wildcards.model)]


def _backend_slots(kind):
    def slots(wildcards):
        return 1 if STUDY.model_config(wildcards.model)["backend"] == kind else 0

    return slots


def _slot_resources():
    """The resources of a job that calls a model (rules probe_model, fold): one slot of
    its backend's resource, named by each backend (registry: backends/registry.py). Only
    the backends the study's models use; a number, not a function, when they all use one
    (the common case: the dry run then calls no function per job for them). A replay
    sends nothing and loads no model (the tokenizer only): no slot."""
    if STUDY.config["replay"]:
        return {}
    used = {STUDY.model_config(m)["backend"] for m in STUDY.config["models"]}
    named = {
        k: c.slot_resource for k, c in backend_classes().items() if c.slot_resource
    }
    used = sorted(used & named.keys())
    if len(used) == 1:
        return {named[used[0]]: 1}
    return {named[k]: _backend_slots(k) for k in used}


BACKEND_SLOTS = _slot_resources()


# --- statistics, tables and figures (rules/stats.smk, tables.smk, figures.smk) ---


def evidence_inputs(wildcards):
    """rows/checks the statistics read: this run's evidence, or a package's (evidence=DIR).

    In evidence mode these are plain files of the package, so no fixture, fold or grade
    job enters the DAG. The optional files are checked when present (rule stats).
    """
    ev = Path(GEN_EVIDENCE)
    out = {"rows": str(ev / "rows.csv"), "checks": str(ev / "checks.csv")}
    for name in ("folds.csv", "manifest.json"):
        if not EVIDENCE_MODE or (ev / name).is_file():
            out[name.split(".")[0]] = str(ev / name)
    return out


# Every model a sweep folds, with its config: token accounting measures each one that
# counts tokens exactly (rules/tokens.smk).
FOLDED_MODEL_CONFIGS = {m: STUDY.model_config(m) for m in STUDY.folded_models}


def token_class_table(wildcards):
    """Characters per token by text class (§6): measured on this run's fixtures; an
    evidence package has no fixtures, so its tables say it was not measured."""
    return [] if EVIDENCE_MODE else ["results/stats/chars-per-token.csv"]


def probe_table(wildcards):
    """Probe verdicts for the probe table: the package's probes.csv, or this run's summary."""
    if EVIDENCE_MODE:
        p = Path(GEN_EVIDENCE) / "probes.csv"
        return [str(p)] if p.is_file() else []
    return ["results/probe/summary.tsv"]


# --- audit (rules/audit.smk) ---


def audit_fixtures():
    return {
        f"fixture_{s}": f"results/fixtures/{s}/fixture.json"
        for s in STUDY.config["sweeps"]
    }


def audit_runs():
    return [
        {"sweep": r.sweep, "model": r.model, "arm": r.arm, "repeat": r.repeat}
        for r in STUDY.runs
    ]


def audit_arms():
    used = sorted({r.arm for r in STUDY.runs})
    return {a: ARM_PARAMS[a] for a in used}


def audit_backends():
    return {m: STUDY.model_config(m)["backend"] for m in PROBED_MODELS}


def power_sweeps():
    return {
        s: {k: sw[k] for k in ("arms", "models", "repeats", "design")}
        for s, sw in STUDY.config["sweeps"].items()
    }


def power_pilot():
    """A pilot's rows and checks, as inputs: a changed pilot replans."""
    pilot = STUDY.config["power"]["pilot"]
    if not pilot:
        return {}
    return {f"pilot_{n}": str(Path(pilot) / f"{n}.csv") for n in ("rows", "checks")}


# --- fact trace, viewer and summary (rules/trace.smk, viewer.smk, summary.smk) ---


def decision_inputs(wildcards):
    """The decision cards read rows and checks, and (outside evidence mode) what prices
    a repeat: the fixtures and turn templates, as the audit does (rules/decide.smk)."""
    out = {
        k: v for k, v in evidence_inputs(wildcards).items() if k in ("rows", "checks")
    }
    if not EVIDENCE_MODE:
        out.update(audit_fixtures(), **PROMPT_FILES)
        out.update(decided_looks())
    return out


# --- a staged decision (config decide:, rules/decide.smk) ---------------
# Without `decide:` none of this enters the DAG: staged_runs is every run, as before.
DECIDE = STUDY.config["decide"]
DECIDE_SWEEPS = decide_sweeps(STUDY.config)
# Evidence mode stages nothing: `decide:` is checked against the package's sweeps and
# what the cards read is said once.
_refusal, _note = decide_evidence_note(
    STUDY.config, package_arms(Path(GEN_EVIDENCE) / "rows.csv") if EVIDENCE_MODE else {}
)
if _refusal:
    raise WorkflowError(_refusal)
if _refusal := package_gate_problem(STUDY.config):
    raise WorkflowError(_refusal)
if _note:
    logger.info(_note)


def look_decide():
    """`decide:` as a look reads it: without the gate."""
    return {k: v for k, v in (DECIDE or {}).items() if k != "gate"} or None


def gate_pair():
    """The gate's two arms, in name order: all a look needs of the gate (whether the
    cards read one more contrast in the family), so turning the gate around reruns no
    look."""
    gate = (DECIDE or {}).get("gate")
    return sorted([gate["arm"], gate["against"]]) if gate else None


def decide_rotation(sweep):
    sw = STUDY.config["sweeps"][sweep]
    return cycle_length(sw["design"], len(sw["arms"]))


DECIDE_FIRST = {
    s: first_stage(DECIDE["max_repeats"], DECIDE["looks"], decide_rotation(s))
    for s in DECIDE_SWEEPS
}
for (
    _s,
    _n,
) in DECIDE_FIRST.items():  # in the -n output too: the first stage and the most
    logger.info(
        f"decide: sweep {_s} runs {DECIDE['pair'][0]} against {DECIDE['pair'][1]} in "
        f"stages: first {_n} repeats per model, at most {DECIDE['max_repeats']} over "
        f"{DECIDE['looks']} looks (results/audit/plan.tsv prices both: its DECIDE_FIRST "
        "and DECIDE_MAX lines)"
    )


def audit_staged():
    """The audit's view of a staged decision: per decide sweep the pair, the first stage
    and the maximum, so plan.tsv prices both (as -n names both)."""
    return {
        s: {
            "pair": list(DECIDE["pair"]),
            "first": n,
            "most": DECIDE["max_repeats"],
            "looks": DECIDE["looks"],
        }
        for s, n in DECIDE_FIRST.items()
    }


def repeats_at(sweep, look):
    """model -> repeats made when look `look` of a decide sweep is taken."""
    if look == 1:
        return {m: DECIDE_FIRST[sweep] for m in STUDY.config["sweeps"][sweep]["models"]}
    state = read_json(
        checkpoints.decide_look.get(sweep=sweep, look=look - 1).output.state
    )
    return {
        m: s.get("next", s["repeats"]) if s["status"] == "continue" else s["repeats"]
        for m, s in state["models"].items()
    }


def final_look(sweep):
    """The look file of a decide sweep after which every model has stopped."""
    look = 1
    while True:
        path = checkpoints.decide_look.get(sweep=sweep, look=look).output.state
        if look >= DECIDE["looks"] or read_json(path)["done"]:
            return path
        look += 1


def staged_runs(sweep):
    """The runs of a sweep: all of them, or those a staged decision's looks asked for."""
    if sweep not in DECIDE_SWEEPS:
        return STUDY.sweep_runs(sweep)
    state = read_json(final_look(sweep))
    reps = {m: s["repeats"] for m, s in state["models"].items()}
    return [r for r in STUDY.sweep_runs(sweep) if r.repeat < reps[r.model]]


def look_inputs(wildcards):
    """A look reads the runs made so far, the fixture (and the prices of the next stage),
    and the look before it."""
    reps = repeats_at(wildcards.sweep, int(wildcards.look))
    fixture = f"results/fixtures/{wildcards.sweep}/fixture.json"
    out = {
        "runs": [
            r.path
            for r in STUDY.sweep_runs(wildcards.sweep)
            if r.repeat < reps[r.model]
        ],
        "fixture": fixture,
        f"fixture_{wildcards.sweep}": fixture,
        **PROMPT_FILES,
    }
    if int(wildcards.look) > 1:
        out["previous"] = (
            f"results/decide/{wildcards.sweep}/look{int(wildcards.look) - 1}.json"
        )
    return out


def decided_looks():
    """The final look of each decide sweep, which the cards read."""
    return {f"decide_{s}": final_look(s) for s in DECIDE_SWEEPS}


def own_arm_sources():
    """Each own arm's files as the user wrote them (arms_file's system_prompt, schema):
    the carrier folder copies them as they are."""
    return {
        a: {
            k: spec[f"{k}_file"]
            for k in ("system_prompt", "schema")
            if spec.get(f"{k}_file")
        }
        for a, spec in STUDY.arm_table["arms"].items()
        if str(spec.get("system_prompt", "")).startswith("own:")
    }


def own_arm_files():
    return sorted({p for files in own_arm_sources().values() for p in files.values()})


def carrier_folders():
    """The decided cards' carrier folders (rule carriers), which the decision page links
    and the gate builds; none in evidence mode, where no run record is read."""
    return [] if EVIDENCE_MODE else "results/decision"


def trace_inputs(wildcards):
    """rows/checks and the fact trace: a package's trace.csv is optional (a reviewer's
    package may have none; the figure then says so)."""
    out = {
        k: v for k, v in evidence_inputs(wildcards).items() if k in ("rows", "checks")
    }
    trace = Path(GEN_EVIDENCE) / "trace.csv"
    if not EVIDENCE_MODE or trace.is_file():
        out["trace"] = str(trace)
    return out


def all_runs(wildcards):
    return [r.path for s in STUDY.config["sweeps"] for r in staged_runs(s)]


def _run_refs(runs):
    return [
        {
            "sweep": r.sweep,
            "model": r.model,
            "repeat": r.repeat,
            "arm": r.arm,
            "position": r.position,
            "path": r.path,
        }
        for r in runs
    ]


# Every run as the config names it: pages are placed by these, never by a record's fields.
# The viewer and the comparison pages read the records at these paths when they run; they
# wait for them, and rerun when one changes, through rows.csv, which the grade jobs make
# from every record. Declared as inputs too, the 663 records of the paper study cost its
# dry run two more job lookups each.
# A staged decision's sweeps (decide:) add the runs its looks asked for (run_refs).
RUN_REFS = _run_refs(STUDY.runs)


def staged_run_inputs(wildcards):
    """The runs a staged decision's looks asked for, as inputs (they are known only once
    its checkpoints ran, so run_refs can name them); none without decide:."""
    return all_runs(wildcards) if DECIDE_SWEEPS else []


def run_refs(wildcards):
    if not DECIDE_SWEEPS:
        return RUN_REFS
    return _run_refs([r for s in STUDY.config["sweeps"] for r in staged_runs(s)])


def trace_table(wildcards):
    """The fact trace the comparison tables read (paired-arms, fact-survival): this run's,
    or a package's when it has one (without it those tables say why)."""
    trace = trace_inputs(wildcards).get("trace")
    return [trace] if trace else []


def session_manifests():
    """The manifests of the sweeps that fold a session of the config's own: the summary
    reports each fact's fate and the session's own compaction as a baseline.
    """
    if EVIDENCE_MODE:
        return []
    return [
        f"results/fixtures/{s}/manifest.json"
        for s in STUDY.config["sweeps"]
        if own_session(s) is not None
    ]


def first_block_page():
    """The first block's comparison page (the summary links it), where pages are built."""
    if EVIDENCE_MODE or not STUDY.runs:
        return None
    r = STUDY.runs[0]
    return block_path(r.sweep, r.model, r.repeat)


def reader_outputs():
    """What one command (results/tables, the default target) brings besides the tables:
    the fact-trace figure, and the fold viewer and the comparison pages where there are
    run records (not in evidence mode, where a package has rows and checks only)."""
    out = [figure("fact-trace").png, "results/summary.md"]
    if not EVIDENCE_MODE:
        out += ["results/viewer", "results/compare"]
    return out
