"""What the workflow decides while it loads, in one checked call, and each rule's inputs.

workflow/rules/common.smk calls `load_wiring` once and refuses, in one line, whatever it
raises (a StudyError); every other name there is wiring: an input function that hands a
job's wildcards to a method here. So what the DAG is planned from (evidence mode, the
lock, the budget note, the staged decision's first stage, each rule's params) is decided
in the package, where a unit test imports it (tests/wiring/test_wiring.py), and nothing
the config check does not refuse first can fail while Snakefile loads.

A package split by what each part decides, so a maintainer finds each in one small
module: core.py (the checked study, the config, the mode and the files every stage
shares), sessions.py (what the fixture jobs are made from), runs.py (what the probe and
fold jobs are planned from), decision.py (the audit, the repeat plan, their prices and a
staged decision) and outputs.py (what the statistics, pages, generated package and
release read). `Wiring` is the core with one attribute per part (`W.runs.run_params`);
each part holds the core and nothing else, so parts reach each other only through it.
Here: `Wiring`, `load_wiring` and the checks it makes, in the order a user would fix
them.

What needs Snakemake's checkpoints (a staged decision's looks: which runs the next stage
adds) stays in common.smk, reading each look's state through study/design.py's pure
functions (`repeats_after`, `look_is_final`). Light on purpose: Snakemake imports this on
every command, so nothing here imports pandas, scipy or matplotlib at load (evidence
mode's package check imports the analysis plan when it runs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends.prompt_states import STATES_DIR, STATES_ENV
from ..backends.store import store_dir_problem
from ..errors import StudyError
from ..evidence.load import evidence_dir_problem, evidence_package_problem, pilot_problem
from ..evidence.package import package_gate_problem
from ..io import load_yaml
from ..run.audit import budget_note
from ..study.config import load_study
from ..study.decide_checks import decide_evidence_note
from ..study.derived import package_arms
from ..study.flags import command_line_flags, empty_flag_problems
from ..study.plan import Run
from ..study.session_cache import CACHE_DIR, CACHE_ENV
from .core import LEDGER, NUMBERS, PLAN_TSV, Core
from .decision import Decision
from .outputs import Outputs
from .runs import Runs
from .sessions import Sessions

__all__ = ["LEDGER", "NUMBERS", "Wiring", "load_wiring", "run_refs"]


def run_refs(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Runs as the pages place them: by the config's names, never a record's fields."""
    return [{"sweep": r.sweep, "model": r.model, "repeat": r.repeat, "arm": r.arm,
             "position": r.position, "path": r.path} for r in runs]


@dataclass
class Wiring(Core):
    """The core (core.py: the checked study, the config, the mode, the shared files) and
    one attribute per part, each a small class holding the core: sessions (fixtures,
    rules/fixtures.smk), runs (probe and folds, threads, slots), decision (the audit, the
    repeat plan, prices, a staged decision) and outputs (evidence, statistics, pages,
    generate, release)."""

    sessions: Sessions = field(init=False, repr=False, compare=False)
    runs: Runs = field(init=False, repr=False, compare=False)
    decision: Decision = field(init=False, repr=False, compare=False)
    outputs: Outputs = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.sessions = Sessions(self)
        self.runs = Runs(self)
        self.decision = Decision(self)
        self.outputs = Outputs(self)


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
    # A long prompt the embedded model read is kept there too, for the next job that
    # reads the same words (backends/prompt_states.py).
    os.environ.setdefault(STATES_ENV, os.path.abspath(STATES_DIR))
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
        from ..analysis.plan import AnalysisPlan

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
    for s, n in w.decision.decide_first.items():
        w.notes.append(
            f"decide: sweep {s} runs {d['pair'][0]} against {d['pair'][1]} in stages: first "
            f"{n} repeats per model, at most {d['max_repeats']} over {d['looks']} looks "
            "(results/audit/plan.tsv prices both: its DECIDE_FIRST and DECIDE_MAX lines)")

