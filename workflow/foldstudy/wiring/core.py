"""The checked study and what every part of the wiring reads: the config, the mode, the files.

Below the parts (sessions.py, runs.py, decision.py, outputs.py), each of which holds this
and nothing else of the others: what two parts both need (which sweeps are staged, every
sweep's fixture) is here, so no part imports another.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..study.decide_checks import decide_sweeps
from ..study.plan import Study

# The spend ledger every paid call of the study is held to (docs/design.md §6, Spend;
# backends/ledger.py), and the file the statistics write every number to.
LEDGER = "results/spend/ledger.json"
NUMBERS = "results/stats/numbers.json"
PLAN_TSV = "results/audit/plan.tsv"


@dataclass
class Core:
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

    def fixtures(self) -> dict[str, str]:
        """Every sweep's fixture, keyed fixture_<sweep>: what prices a repeat."""
        return {f"fixture_{s}": f"results/fixtures/{s}/fixture.json"
                for s in self.config["sweeps"]}

    # --- which sweeps a staged decision runs (config decide:): a fold job's params and
    # the decision's plan both ask ---

    @property
    def decide(self) -> dict[str, Any] | None:
        return self.config["decide"]

    @cached_property
    def decide_sweeps(self) -> list[str]:
        return decide_sweeps(self.config)
