"""The study's plan: the runs a checked config resolves into (Study, Run), and the path
of the record each run writes (run_path, and run_of_path, its inverse).

study/config.py `load_study` builds the Study once every check has passed; the rules'
wiring (foldstudy/wiring/) reads it. Nothing here checks a config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .arm import Arm
from .design import block_order
from .fixture_types import Fixture
from .spec import arm_ids, resolve_arm


@dataclass(frozen=True)
class Run:
    sweep: str
    model: str
    repeat: int
    arm: str
    position: int
    previous_arm: str | None

    @property
    def path(self) -> str:
        return run_path(self.sweep, self.model, self.repeat, self.arm)


def run_path(sweep: str, model: str, repeat: int | str, arm: str) -> str:
    return f"results/runs/{sweep}/{model}/r{repeat}/{arm}.json"


def run_of_path(path: str) -> dict[str, Any]:
    """The run a record path names (run_path's inverse): sweep, model, repeat, arm.

    Unambiguous because no name holds a slash (the schema's name rule); a path of another
    shape raises ValueError naming it."""
    parts = str(path).replace("\\", "/").split("/")
    if (len(parts) < 4 or not parts[-2].startswith("r") or not parts[-2][1:].isdigit()
            or not parts[-1].endswith(".json")):
        raise ValueError(f"{path}: not a run record path (<sweep>/<model>/r<repeat>/<arm>.json)")
    return {"sweep": parts[-4], "model": parts[-3], "repeat": int(parts[-2][1:]),
            "arm": parts[-1].removesuffix(".json")}


# A model config's keys that are the study's word about the model, not the backend's:
# `probe_arms` (arms probed and never folded) and `native_via` (whose compaction a
# native arm grades, study/checks.py). No fold request depends on them.
STUDY_KEYS = ("probe_arms", "native_via")

# A plan larger than this says its size first thing (Study.plan_size).
PLAN_SAID_ABOVE_JOBS = 2_000


class Study:
    """A validated config resolved into arms and the full list of runs."""

    def __init__(self, config: dict[str, Any], arm_table: dict[str, Any], resources: Path):
        self.config = config
        self.resources = resources
        self.arm_table = arm_table
        self.scale = float(config["scale"])  # the haystack: session and chunks
        # capacity: ceilings, budgets, caps (study/capacity.py; set by load_study)
        self.capacity_scale = float(config.get("capacity_scale") or self.scale)
        self.warnings: list[str] = []
        # the fixtures of the config's own session scenarios, built by load_study
        self.sessions: dict[str, Fixture] = {}
        self.arms: dict[str, Arm] = {
            a: resolve_arm(a, arm_table, resources, self.capacity_scale)
            for a in arm_ids(arm_table)
        }
        self.runs: list[Run] = []
        for sname, sw in config["sweeps"].items():
            for model in sw["models"]:
                for r in range(sw["repeats"]):
                    order = block_order(list(sw["arms"]), r, sw["design"])
                    for pos, arm in enumerate(order):
                        prev = order[pos - 1] if pos else None
                        self.runs.append(Run(sname, model, r, arm, pos, prev))
        self._index = {(x.sweep, x.model, x.repeat, x.arm): x for x in self.runs}
        self._backend_configs = {m: {k: v for k, v in c.items() if k not in STUDY_KEYS}
                                 for m, c in config["models"].items()}

    def run(self, sweep: str, model: str, repeat: int | str, arm: str) -> Run:
        return self._index[(sweep, model, int(repeat), arm)]

    def plan_size(self) -> str | None:
        """The plan's size as the first line a large plan prints (jobs, model calls, and
        what they cost where a backend knows its price before any probe), or None for a
        plan under PLAN_SAID_ABOVE_JOBS jobs. A typo in `repeats` otherwise plans twenty
        thousand jobs in silence."""
        from ..backends.registry import backend_class
        from .fixtures import PAPER_CHUNK_TOKENS, PAPER_SESSION_TOKENS

        # one fold job per run; a fixture and a grade per sweep; a probe per model; and
        # the ten of results/tables (probe summary, token classes, evidence, compare,
        # stats, trace, viewer, figures, summary, tables): 2,013 for 1,000 repeats of j, m
        jobs = len(self.runs) + 2 * len(self.config["sweeps"]) + len(self.probed_models) + 10
        if jobs <= PLAN_SAID_ABOVE_JOBS:
            return None
        per_run = PAPER_SESSION_TOKENS // PAPER_CHUNK_TOKENS + 1  # a fold per chunk, a recall
        calls = len(self.runs) * per_run
        unpriced = sorted(m for m in self.folded_models if backend_class(
            self.model_config(m)["backend"]).audit_prices({})[0] is None)
        cost = ("$0 (local backends)" if not unpriced else
                f"unknown until the probe pins {', '.join(unpriced)}'s price (snakemake -c1 "
                "audit writes results/audit/plan.tsv)")
        return (f"plan: about {jobs:,} jobs ({len(self.runs):,} runs), {calls:,} model calls "
                f"at most, estimated cost {cost}")

    def sweep_runs(self, sweep: str) -> list[Run]:
        return [r for r in self.runs if r.sweep == sweep]

    def model_config(self, model: str) -> dict[str, Any]:
        """The model's backend config: what its backend, fold and token jobs read.

        STUDY_KEYS are the study's word, not the backend's: left out, so naming one
        changes no fold job's params."""
        return self._backend_configs[model]

    def folded_arms(self, model: str) -> list[str]:
        """Every arm any sweep runs on this model (a probe-only model: every sweep's)."""
        sweeps = self.config["sweeps"]
        return sorted({a for s in self.sweeps_of(model) for a in sweeps[s]["arms"]})

    def probe_arms(self, model: str) -> list[str]:
        """The arms probed on this model and never folded (paper §4.2): its config's
        `probe_arms`, none of them an arm its sweeps run (load_study refuses that)."""
        return sorted(self.config["models"][model].get("probe_arms") or [])

    @property
    def folded_models(self) -> list[str]:
        """Every model some sweep runs."""
        return sorted({m for sw in self.config["sweeps"].values() for m in sw["models"]})

    @property
    def probed_models(self) -> list[str]:
        """Every model some sweep runs, and the probe-only ones: one verdict each."""
        return sorted(set(self.folded_models) | set(self.config["probe_only"]))

    def sweeps_of(self, model: str) -> list[str]:
        """The sweeps a model runs in; a probe-only model is probed for all of them."""
        return sweeps_of(self.config, model)


def sweeps_of(cfg: dict[str, Any], model: str) -> list[str]:
    """The sweeps a model runs in; a probe-only model is probed for all of them."""
    mine = [s for s, sw in cfg["sweeps"].items() if model in sw["models"]]
    return mine or list(cfg["sweeps"])

