"""What the probe and fold jobs are planned from: each run's params, order, threads and slots.

The inputs, params and resources of rules/probe.smk, rules/fold.smk (and the graded
parts rules/evidence.smk gathers), as `W.runs.<method>`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from ..backends import backend_classes
from ..grade.validity import fold_attempt, fold_budget
from ..study.plan import run_path
from .core import Core


class Runs:
    """Probe and folds (rules/probe.smk, rules/fold.smk), read from the core alone."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def probe_fixtures(self, model: str) -> list[str]:
        """The fixtures this model will fold: the probe sizes the context a fold needs."""
        return [f"results/fixtures/{s}/fixture.json" for s in self.core.study.sweeps_of(model)]

    def folded_arm_params(self, model: str) -> list[dict[str, Any]]:
        """Every arm any sweep runs on this model, resolved at the study's scale: the
        probe decides whether each may fold."""
        return [self.core.arm_params[a] for a in self.core.study.folded_arms(model)]

    def probe_arm_params(self, model: str) -> list[dict[str, Any]]:
        """The model's `probe_arms`: probed and recorded, never folded, deciding nothing."""
        return [self.core.arm_params[a] for a in self.core.study.probe_arms(model)]

    def previous_run(self, sweep: str, model: str, repeat: str, arm: str) -> str | list:
        """The run before this one in its block: the DAG enforces the design's order."""
        run = self.core.study.run(sweep, model, repeat, arm)
        if run.previous_arm is None:
            return []
        return run_path(run.sweep, run.model, run.repeat, run.previous_arm)

    def run_params(self, sweep: str, model: str, repeat: str, arm: str) -> dict[str, Any]:
        core = self.core
        run = core.study.run(sweep, model, repeat, arm)
        sw = core.config["sweeps"][run.sweep]
        params = {"arm": core.arm_params[run.arm], "model": core.study.model_config(run.model),
                  "sample": {"sweep": run.sweep, "model": run.model, "arm": run.arm,
                             "repeat": run.repeat, "position": run.position,
                             "seed": sw["seed"]}}
        if run.sweep in core.decide_sweeps:
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
        return {"budget_usd": fold_budget(path, self.core.config["budget_usd"])}

    def run_attempt(self, sweep: str, model: str, repeat: str, arm: str) -> int:
        return fold_attempt(run_path(sweep, model, repeat, arm),
                            self.core.config["retry_infrastructure"])

    def threads(self, model: str) -> int:
        """Embedded jobs ask for the threads they use; other backends wait on a server."""
        return int(self.core.study.model_config(model).get("threads", 1))

    @cached_property
    def uniform_threads(self) -> int | None:
        """The threads every model asks for, where they all ask the same (Snakemake calls
        a job's callables once per job, 685 fold jobs in the paper study), else None."""
        asked = {self.threads(m) for m in self.core.config["models"]}
        return asked.pop() if len(asked) == 1 else None

    @cached_property
    def slot_resources(self) -> dict[str, int | Callable[[str], int]]:
        """The resources of a job that calls a model (rules probe_model, fold): one slot
        of its backend's resource, named by each backend (backends/registry.py). Only
        the backends the study's models use; a number when they all use one (the common
        case: the dry run then calls no function per job for them), else a function of
        the model. A replay sends nothing and loads no model (the tokenizer only): none."""
        config, study = self.core.config, self.core.study
        if config["replay"]:
            return {}
        used = {study.model_config(m)["backend"] for m in config["models"]}
        named = {k: c.slot_resource for k, c in backend_classes().items() if c.slot_resource}
        kinds = sorted(used & named.keys())
        if len(kinds) == 1:
            return {named[kinds[0]]: 1}
        return {named[k]: self._slots_of(k) for k in kinds}

    def _slots_of(self, kind: str) -> Callable[[str], int]:
        return lambda model: 1 if self.core.study.model_config(model)["backend"] == kind else 0

    def graded_parts(self, name: str) -> list[str]:
        return [f"results/graded/{s}/{name}.csv" for s in self.core.config["sweeps"]]

    @cached_property
    def folded_model_configs(self) -> dict[str, dict[str, Any]]:
        """Every model a sweep folds, with its config: token accounting measures each one
        that counts tokens exactly (rules/tokens.smk)."""
        study = self.core.study
        return {m: study.model_config(m) for m in study.folded_models}
