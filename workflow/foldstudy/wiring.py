"""What the workflow decides while it loads, in one checked call, and each rule's inputs.

workflow/rules/common.smk calls `load_wiring` once and refuses, in one line, whatever it
raises (a StudyError); every other name there is wiring: an input function that hands a
job's wildcards to a method here. So what the DAG is planned from (evidence mode, the
lock, the budget note, the staged decision's first stage, each rule's params) is decided
in the package, where a unit test imports it (tests/test_wiring.py), and nothing the
config check does not refuse first can fail while Snakefile loads.

What needs Snakemake's checkpoints (a staged decision's looks: which runs the next stage
adds) stays in common.smk, reading each look's state through study/design.py's pure
functions (`repeats_after`, `look_is_final`). Light on purpose: Snakemake imports this on
every command, so nothing here imports pandas, scipy or matplotlib at load (evidence
mode's package check imports the analysis plan when it runs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .backends import backend_classes
from .backends.store import store_dir_problem
from .errors import StudyError
from .evidence.load import evidence_dir_problem, evidence_package_problem, pilot_problem
from .evidence.package import package_gate_problem
from .grade.validity import fold_attempt, fold_budget
from .io import load_yaml
from .report.paths import block_path
from .report.titles import figure
from .run.audit import budget_note
from .study.config import load_study
from .study.decide_checks import decide_evidence_note, decide_sweeps
from .study.design import cycle_length, first_stage
from .study.flags import command_line_flags, empty_flag_problems
from .study.plan import Run, Study, run_path
from .study.session_cache import CACHE_DIR, CACHE_ENV
from .study.session_checks import session_content
from .study.spec import (
    aa_copies,
    arms_file_path,
    native_prompts,
    own_arm_twins,
    package_arms,
    unmatched_own_arms,
)

# The spend ledger every paid call of the study is held to (docs/design.md §6;
# backends/ledger.py), and the file the statistics write every number to.
LEDGER = "results/spend/ledger.json"
NUMBERS = "results/stats/numbers.json"
PLAN_TSV = "results/audit/plan.tsv"


def run_refs(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Runs as the pages place them: by the config's names, never a record's fields."""
    return [{"sweep": r.sweep, "model": r.model, "repeat": r.repeat, "arm": r.arm,
             "position": r.position, "path": r.path} for r in runs]


@dataclass
class Wiring:
    """The checked study and what the workflow planned from it while loading.

    study: the config checked against the schema (config/schema/) with every default
    filled (rules read `study.config`, never Snakemake's raw `config`); schema: that
    schema, whose name rule the wildcards follow. resources_rel: resources/ relative
    to the working directory (a moved checkout plans nothing new); paper_arm_table:
    resources/arms.yaml as read, before the config's own arms. warnings and notes:
    lines common.smk logs as warnings and as information, in the -n output too."""

    study: Study
    schema: dict[str, Any]
    paper_arm_table: dict[str, Any]
    resources_rel: str
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # --- the config, the mode and the files every stage shares ---

    @property
    def config(self) -> dict[str, Any]:
        return self.study.config

    @property
    def evidence_mode(self) -> bool:
        """--config evidence=DIR: statistics and tables from a released package, with no
        fixture, fold or grade job in the DAG."""
        return bool(self.config["evidence"])

    @property
    def evidence_dir(self) -> str:
        return self.config["evidence"] or "results/evidence"

    @property
    def lock(self) -> str:
        """The study's lock; a released package carries its own beside its evidence/."""
        packaged = Path(self.evidence_dir).parent / "lock.json"
        if self.evidence_mode and packaged.is_file():
            return str(packaged)
        return f"config/{self.config['study']}.lock.json"

    @property
    def analysis_yaml(self) -> str:
        return self.res("analysis.yaml")

    @property
    def arms_yaml(self) -> str:
        return self.res("arms.yaml")

    @property
    def claims(self) -> str:
        return self.res("claims", f"{self.config['study']}.yaml")

    def res(self, *parts: str) -> str:
        """A file of resources/, as a rule input relative to the working directory."""
        return os.path.join(self.resources_rel, *parts) if parts else self.resources_rel

    @cached_property
    def prompt_files(self) -> dict[str, str]:
        """The turn templates each stage reads, declared as inputs: editing one reruns
        exactly the jobs that read it."""
        return {"fold_user": self.res("prompts", "fold_user.md.j2"),
                "recall_system": self.res("prompts", "recall_system.md"),
                "recall_user": self.res("prompts", "recall_user.md.j2")}

    @cached_property
    def schema_files(self) -> list[str]:
        """The schemas the paper's arms name: the statistics read their field
        descriptions (§4.3)."""
        return sorted({self.res("schemas", f"{a['schema']}.json")
                       for a in self.paper_arm_table["arms"].values() if a.get("schema")})

    @cached_property
    def arm_params(self) -> dict[str, dict[str, Any]]:
        """Each arm as the params a job carries, built once (asdict per job cost 0.1 s of
        the paper study's dry run)."""
        return {a: arm.to_dict() for a, arm in self.study.arms.items()}

    # --- fixtures and sessions (rules/fixtures.smk) ---

    def own_session(self, sweep: str) -> dict[str, Any] | None:
        """The config's own session scenario this sweep runs, or None."""
        return self.config["scenarios"].get(self.config["sweeps"][sweep]["scenario"])

    def fixture_params(self, sweep: str) -> dict[str, Any]:
        sw = self.config["sweeps"][sweep]
        own = self.own_session(sweep)
        if own is not None:  # scale does not apply: the session's size is the transcript's
            return {"seed": sw["seed"], "session": {"name": sw["scenario"], **own}}
        fx = {"scenario": sw["scenario"], "seed": sw["seed"], "scale": self.study.scale}
        # control facts only where configured: a sweep without them keeps its params, so
        # nothing of it reruns
        tail = (sw.get("controls") or {}).get("tail")
        return {**fx, "controls": tail} if tail else fx

    def fixture_content(self, sweep: str) -> str | None:
        """A session sweep's transcript by content (study/session_checks.py); None else."""
        return session_content(self.study.sessions.get(self.config["sweeps"][sweep]["scenario"]))

    def fixture_session_inputs(self, sweep: str) -> dict[str, Any]:
        """A session sweep's transcript and facts file, declared so editing either reruns
        its fixture and everything after it."""
        own = self.own_session(sweep)
        if own is None:
            return {}
        return {"transcript": os.path.expanduser(own["transcript"]),
                "own_facts": os.path.expanduser(own["facts"]),
                "inherited": self.session_inherited(self.config["sweeps"][sweep]["scenario"])}

    def session_inherited(self, scenario: str) -> list[str]:
        """The files a session's main thread inherited (a Codex fork's parent rollouts), as
        the config check read them: inputs like the transcript, so editing one reruns."""
        fx = self.study.sessions.get(scenario)
        return [f["path"] for f in fx.meta["session"]["inherited"]] if fx is not None else []

    def session_transcript(self, scenario: str) -> str:
        return os.path.expanduser(self.config["scenarios"][scenario]["transcript"])

    def session_manifests(self) -> list[str]:
        """The manifests of the sweeps that fold a session of the config's own: the
        summary reports each fact's fate and the session's own compaction as a baseline."""
        if self.evidence_mode:
            return []
        return [f"results/fixtures/{s}/manifest.json" for s in self.config["sweeps"]
                if self.own_session(s) is not None]

    def fixtures(self) -> dict[str, str]:
        """Every sweep's fixture, keyed fixture_<sweep>: what prices a repeat."""
        return {f"fixture_{s}": f"results/fixtures/{s}/fixture.json"
                for s in self.config["sweeps"]}

    # --- probe and folds (rules/probe.smk, rules/fold.smk) ---

    def probe_fixtures(self, model: str) -> list[str]:
        """The fixtures this model will fold: the probe sizes the context a fold needs."""
        return [f"results/fixtures/{s}/fixture.json" for s in self.study.sweeps_of(model)]

    def folded_arm_params(self, model: str) -> list[dict[str, Any]]:
        """Every arm any sweep runs on this model, resolved at the study's scale: the
        probe decides whether each may fold."""
        return [self.arm_params[a] for a in self.study.folded_arms(model)]

    def probe_arm_params(self, model: str) -> list[dict[str, Any]]:
        """The model's `probe_arms`: probed and recorded, never folded, deciding nothing."""
        return [self.arm_params[a] for a in self.study.probe_arms(model)]

    def previous_run(self, sweep: str, model: str, repeat: str, arm: str) -> str | list:
        """The run before this one in its block: the DAG enforces the design's order."""
        run = self.study.run(sweep, model, repeat, arm)
        if run.previous_arm is None:
            return []
        return run_path(run.sweep, run.model, run.repeat, run.previous_arm)

    def run_params(self, sweep: str, model: str, repeat: str, arm: str) -> dict[str, Any]:
        run = self.study.run(sweep, model, repeat, arm)
        sw = self.config["sweeps"][run.sweep]
        params = {"arm": self.arm_params[run.arm], "model": self.study.model_config(run.model),
                  "sample": {"sweep": run.sweep, "model": run.model, "arm": run.arm,
                             "repeat": run.repeat, "position": run.position,
                             "seed": sw["seed"]}}
        if run.sweep in self.decide_sweeps:
            params["staged"] = self.run_budget(sweep, model, repeat, arm)
        return params

    def run_budget(self, sweep: str, model: str, repeat: str, arm: str) -> dict[str, Any]:
        """A staged decision's run: a budget that runs out part-way ends it as a
        not_run:budget record, and a changed budget_usd reruns exactly the runs it
        stopped (validity.fold_budget). Part of the `run` param, not a param of its own:
        a new param changes the params Snakemake recorded for every fold job, so every
        finished run of every study would run again; this key changes only the staged
        sweeps' runs."""
        path = run_path(sweep, model, repeat, arm)
        return {"budget_usd": fold_budget(path, self.config["budget_usd"])}

    def run_attempt(self, sweep: str, model: str, repeat: str, arm: str) -> int:
        return fold_attempt(run_path(sweep, model, repeat, arm),
                            self.config["retry_infrastructure"])

    def threads(self, model: str) -> int:
        """Embedded jobs ask for the threads they use; other backends wait on a server."""
        return int(self.study.model_config(model).get("threads", 1))

    @cached_property
    def uniform_threads(self) -> int | None:
        """The threads every model asks for, where they all ask the same (Snakemake calls
        a job's callables once per job, 685 fold jobs in the paper study), else None."""
        asked = {self.threads(m) for m in self.config["models"]}
        return asked.pop() if len(asked) == 1 else None

    @cached_property
    def slot_resources(self) -> dict[str, int | Callable[[str], int]]:
        """The resources of a job that calls a model (rules probe_model, fold): one slot
        of its backend's resource, named by each backend (backends/registry.py). Only
        the backends the study's models use; a number when they all use one (the common
        case: the dry run then calls no function per job for them), else a function of
        the model. A replay sends nothing and loads no model (the tokenizer only): none."""
        if self.config["replay"]:
            return {}
        used = {self.study.model_config(m)["backend"] for m in self.config["models"]}
        named = {k: c.slot_resource for k, c in backend_classes().items() if c.slot_resource}
        kinds = sorted(used & named.keys())
        if len(kinds) == 1:
            return {named[kinds[0]]: 1}
        return {named[k]: self._slots_of(k) for k in kinds}

    def _slots_of(self, kind: str) -> Callable[[str], int]:
        return lambda model: 1 if self.study.model_config(model)["backend"] == kind else 0

    def graded_parts(self, name: str) -> list[str]:
        return [f"results/graded/{s}/{name}.csv" for s in self.config["sweeps"]]

    @cached_property
    def folded_model_configs(self) -> dict[str, dict[str, Any]]:
        """Every model a sweep folds, with its config: token accounting measures each one
        that counts tokens exactly (rules/tokens.smk)."""
        return {m: self.study.model_config(m) for m in self.study.folded_models}

    # --- the audit, the repeat plan and the decision's prices (rules/audit.smk, decide.smk) ---

    def runs_planned(self) -> list[dict[str, Any]]:
        return [{"sweep": r.sweep, "model": r.model, "arm": r.arm, "repeat": r.repeat}
                for r in self.study.runs]

    def pricing(self) -> dict[str, Any]:
        """What prices a repeat, the same in each rule that prices one (audit, power, a
        look, the cards): every arm a run uses, each model's backend, the probes' prices
        and the recall turn's length."""
        used = sorted({r.arm for r in self.study.runs})
        return {"arms": {a: self.arm_params[a] for a in used},
                "backends": {m: self.study.model_config(m)["backend"]
                             for m in self.study.probed_models},
                "probe_dir": "results/probe",
                "recall_max_tokens": self.config["recall_max_tokens"]}

    def power_sweeps(self) -> dict[str, dict[str, Any]]:
        return {s: {**{k: sw[k] for k in ("arms", "models", "repeats", "design")},
                    "compare": sw.get("compare")}
                for s, sw in self.config["sweeps"].items()}

    def power_pilot(self) -> dict[str, str]:
        """A pilot's rows and checks, as inputs: a changed pilot replans."""
        pilot = self.config["power"]["pilot"]
        return {f"pilot_{n}": str(Path(pilot) / f"{n}.csv")
                for n in ("rows", "checks")} if pilot else {}

    def verdict_arms(self) -> dict[str, Any]:
        """Which arms a verdict reads how, the same for a look and the cards: own arms'
        twins, unmatched own arms (outside every verdict), A/A copies (read against their
        originals only) and native@ARM arms (against native and ARM only)."""
        arms_file = arms_file_path(self.config)
        return {"compare_pairs": self.config["compare_pairs"],
                "own_arms": own_arm_twins(arms_file),
                "unmatched": unmatched_own_arms(arms_file),
                "aa": aa_copies(self.config),
                "native_with": native_prompts(self.config, self.study.arm_table)}

    # --- a staged decision (config decide:, rules/decide.smk) ---

    @property
    def decide(self) -> dict[str, Any] | None:
        return self.config["decide"]

    @cached_property
    def decide_sweeps(self) -> list[str]:
        return decide_sweeps(self.config)

    @cached_property
    def decide_first(self) -> dict[str, int]:
        """Each staged sweep's first stage: an equal share of max_repeats per look."""
        d = self.decide
        return {s: first_stage(d["max_repeats"], d["looks"], self.decide_rotation(s))
                for s in self.decide_sweeps}

    def decide_rotation(self, sweep: str) -> int:
        sw = self.config["sweeps"][sweep]
        return cycle_length(sw["design"], len(sw["arms"]))

    def look_decide(self) -> dict[str, Any] | None:
        """`decide:` as a look reads it: without the gate."""
        return {k: v for k, v in (self.decide or {}).items() if k != "gate"} or None

    def gate_pair(self) -> list[str] | None:
        """The gate's two arms, in name order: all a look needs of the gate (whether the
        cards read one more contrast in the family), so turning the gate around reruns no
        look."""
        gate = (self.decide or {}).get("gate")
        return sorted([gate["arm"], gate["against"]]) if gate else None

    def audit_staged(self) -> dict[str, dict[str, Any]]:
        """The audit's view of a staged decision: per decide sweep the pair, the first
        stage and the maximum, so plan.tsv prices both (as -n names both)."""
        d = self.decide
        return {s: {"pair": list(d["pair"]), "first": n, "most": d["max_repeats"],
                    "looks": d["looks"]} for s, n in self.decide_first.items()}

    def first_stage_repeats(self, sweep: str) -> dict[str, int]:
        """model -> repeats the first look of a staged sweep is taken at."""
        return dict.fromkeys(self.config["sweeps"][sweep]["models"], self.decide_first[sweep])

    def look_fixed_inputs(self, sweep: str, look: int) -> dict[str, str]:
        """A look's inputs besides the runs: the fixture (and the prices of the next
        stage), and the look before it."""
        fixture = f"results/fixtures/{sweep}/fixture.json"
        out = {"fixture": fixture, f"fixture_{sweep}": fixture, **self.prompt_files}
        if look > 1:
            out["previous"] = f"results/decide/{sweep}/look{look - 1}.json"
        return out

    # --- evidence, statistics, pages (rules/stats.smk ... summary.smk) ---

    def evidence_inputs(self) -> dict[str, str]:
        """rows/checks the statistics read: this run's evidence, or a package's.

        In evidence mode these are plain files of the package, so no fixture, fold or
        grade job enters the DAG. The optional files are checked when present (rule
        stats)."""
        ev = Path(self.evidence_dir)
        out = {"rows": str(ev / "rows.csv"), "checks": str(ev / "checks.csv")}
        for name in ("folds.csv", "manifest.json"):
            if not self.evidence_mode or (ev / name).is_file():
                out[name.split(".")[0]] = str(ev / name)
        return out

    def trace_inputs(self) -> dict[str, str]:
        """rows/checks and the fact trace: a package's trace.csv is optional (a reviewer's
        package may have none; the figure then says so)."""
        ev = self.evidence_inputs()
        out = {"rows": ev["rows"], "checks": ev["checks"]}
        trace = Path(self.evidence_dir) / "trace.csv"
        if not self.evidence_mode or trace.is_file():
            out["trace"] = str(trace)
        return out

    def trace_table(self) -> list[str]:
        """The fact trace the comparison tables read (paired-arms, fact-survival): this
        run's, or a package's when it has one (without it those tables say why)."""
        trace = self.trace_inputs().get("trace")
        return [trace] if trace else []

    def decision_inputs(self) -> dict[str, str]:
        """The decision cards read rows and checks, folds.csv where there is one, and
        (outside evidence mode) what prices a repeat: the fixtures and turn templates,
        as the audit does. A staged
        sweep's final looks are added by common.smk (they are checkpoints)."""
        ev = self.evidence_inputs()
        out = {"rows": ev["rows"], "checks": ev["checks"]}
        if "folds" in ev:  # each failed fold's stop reason (decision.fold_failures)
            out["folds"] = ev["folds"]
        if not self.evidence_mode:
            out.update(self.fixtures(), **self.prompt_files)
        return out

    def token_class_table(self) -> list[str]:
        """Characters per token by text class (§6): measured on this run's fixtures; an
        evidence package has no fixtures, so its tables say it was not measured."""
        return [] if self.evidence_mode else ["results/stats/chars-per-token.csv"]

    def probe_table(self) -> list[str]:
        """Probe verdicts for the probe table: the package's probes.csv, or this run's
        summary."""
        if self.evidence_mode:
            p = Path(self.evidence_dir) / "probes.csv"
            return [str(p)] if p.is_file() else []
        return ["results/probe/summary.tsv"]

    def own_arm_sources(self) -> dict[str, dict[str, str]]:
        """Each own arm's files as the user wrote them (arms_file's system_prompt,
        schema): the carrier folder copies them as they are."""
        return {a: {k: spec[f"{k}_file"] for k in ("system_prompt", "schema")
                    if spec.get(f"{k}_file")}
                for a, spec in self.study.arm_table["arms"].items()
                if str(spec.get("system_prompt", "")).startswith("own:")}

    def own_arm_files(self) -> list[str]:
        return sorted({p for files in self.own_arm_sources().values() for p in files.values()})

    def carrier_folders(self) -> list[str] | str:
        """The decided cards' carrier folders (rule carriers), which the decision page
        links and the gate builds; none in evidence mode, where no run record is read."""
        return [] if self.evidence_mode else "results/decision"

    def first_block_page(self) -> str | None:
        """The first block's comparison page (the summary links it), where pages are
        built."""
        if self.evidence_mode or not self.study.runs:
            return None
        r = self.study.runs[0]
        return block_path(r.sweep, r.model, r.repeat)

    def reader_outputs(self) -> list[str]:
        """What one command (results/tables, the default target) brings besides the
        tables: the fact-trace figure, and the fold viewer and the comparison pages where
        there are run records (not in evidence mode, where a package has rows and checks
        only)."""
        out = [figure("fact-trace").png, "results/summary.md"]
        if not self.evidence_mode:
            out += ["results/viewer", "results/compare"]
        return out

    # --- generate and release (rules/generate.smk, rules/release.smk) ---

    def generate_inputs(self) -> dict[str, str]:
        ev = Path(self.evidence_dir)
        return {"rows": str(ev / "rows.csv"), "checks": str(ev / "checks.csv"),
                "numbers": NUMBERS}

    def private_dirs(self) -> dict[str, str | None]:
        """A reviewer's evidence-only package has none of these; verify skips what is
        absent."""
        if self.evidence_mode:
            return {"store": None, "runs": None, "fixtures": None, "ledger": None}
        return {"store": self.config["store"], "runs": "results/runs",
                "fixtures": "results/fixtures", "ledger": LEDGER}

    def release_lock(self) -> str:
        if not Path(self.lock).is_file():
            raise StudyError(f"no lock for study {self.config['study']!r} ({self.lock}); "
                             "pin it first with `snakemake -c1 lock`, then run the release")
        return self.lock


def load_wiring(config: dict[str, Any], flags: dict[str, Any], config_files: Sequence[str],
                root: Path, arm_table: dict[str, Any]) -> Wiring:
    """Check the config and everything the DAG is planned from, in the order a user
    would fix them, and return the wiring; raise a StudyError (one line per problem)
    on the first refusal.

    config: Snakemake's merged config; flags: the --config settings as given (an empty
    `--config key=` is refused by name); config_files: the files it was read from (each
    read again with the project's loader, which refuses a key given twice or an alias);
    root: the checkout; arm_table: resources/arms.yaml as read."""
    resources = root / "resources"
    schema = load_yaml(root / "config/schema/config.schema.yaml")
    for path in config_files:
        try:
            load_yaml(path)
        except StudyError as e:
            raise StudyError(f"config file {e}") from e
    if empty := empty_flag_problems(flags):
        raise StudyError("\n".join(empty))
    command_line_flags(config, schema)
    # A session scenario's transcript is parsed once a file content, under .snakemake/
    # of the working directory, so a command's config check does not grow with the
    # session's size.
    os.environ.setdefault(CACHE_ENV, os.path.abspath(CACHE_DIR))
    study = load_study(config, schema, arm_table, resources, config_files=config_files)
    w = Wiring(study, schema, arm_table, os.path.relpath(resources))
    if size := study.plan_size():
        w.warnings.append(size)
    w.warnings += [f"config: {line}" for line in study.warnings]
    _check_sources(w)
    _plan_spending(w)
    _plan_decision(w)
    return w


def _refuse(problem: str | None) -> None:
    if problem:
        raise StudyError(problem)


def _check_sources(w: Wiring) -> None:
    """The evidence package, the response store and the pilot, each refused by name
    before any job; each stage still checks what it reads."""
    cfg = w.config
    if w.evidence_mode:
        _refuse(evidence_dir_problem(cfg["evidence"], "."))
        # Imported here: the analysis plan pulls in scipy, which only evidence mode's
        # check needs at DAG time (1.9 s of a loaded machine's dry run).
        from .analysis.plan import AnalysisPlan

        plan = AnalysisPlan.load(w.analysis_yaml, w.arms_yaml)
        _refuse(evidence_package_problem(cfg["evidence"], plan.arm_order, plan.scenarios, cfg))
    else:
        _refuse(store_dir_problem(cfg["store"], cfg["replay"]))
        if cfg["replay"] and not Path(w.lock).is_file():
            # Said first: a forged entry passes its own digest; only a lock's pins catch it.
            w.warnings.append(f"replay: the response store {cfg['store']}/ is unverified: "
                              f"no lock at {w.lock}, so every entry is served as it "
                              "stands (replay against the study's lock)")
    _refuse(pilot_problem(cfg["power"]["pilot"]))


def _plan_spending(w: Wiring) -> None:
    """The plan against the budget, in the -n output too; a ledger that is not what was
    paid is refused before any job."""
    if note := budget_note(w.config["budget_usd"], LEDGER, PLAN_TSV):
        w.notes.append(note)


def _plan_decision(w: Wiring) -> None:
    """A staged decision: `decide:` checked against the package's sweeps in evidence
    mode (which stages nothing), the gate against the package, and each staged sweep's
    first stage and maximum said once."""
    packaged = package_arms(Path(w.evidence_dir) / "rows.csv") if w.evidence_mode else {}
    refusal, note = decide_evidence_note(w.config, packaged)
    _refuse(refusal)
    _refuse(package_gate_problem(w.config))
    if note:
        w.notes.append(note)
    d = w.decide
    for s, n in w.decide_first.items():
        w.notes.append(
            f"decide: sweep {s} runs {d['pair'][0]} against {d['pair'][1]} in stages: first "
            f"{n} repeats per model, at most {d['max_repeats']} over {d['looks']} looks "
            "(results/audit/plan.tsv prices both: its DECIDE_FIRST and DECIDE_MAX lines)")

