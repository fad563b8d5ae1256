"""What the audit, the repeat plan and a staged decision are planned from, and their prices.

The inputs and params of rules/audit.smk and rules/decide.smk, as `W.decision.<method>`:
what prices a repeat (the same in every rule that prices one), which arms a verdict
reads how, and a staged decision's first stage, its gate and a look's inputs. Which
sweeps are staged is the core's (a fold job's params ask too); what reads a look's
state (a checkpoint) stays in common.smk.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import Any

from ..carriers.native import native_words_of
from ..study.derived import aa_copies, native_prompts
from ..study.design import cycle_length, first_stage
from ..study.own_arms import arms_file_path, own_arm_twins, unmatched_own_arms
from .core import Core


class Decision:
    """The audit, the repeat plan, the decision's prices and a staged decision
    (rules/audit.smk, rules/decide.smk), read from the core alone."""

    def __init__(self, core: Core) -> None:
        self.core = core

    # --- the audit, the repeat plan and the decision's prices (rules/audit.smk, decide.smk) ---

    def runs_planned(self) -> list[dict[str, Any]]:
        return [{"sweep": r.sweep, "model": r.model, "arm": r.arm, "repeat": r.repeat}
                for r in self.core.study.runs]

    def pricing(self) -> dict[str, Any]:
        """What prices a repeat, the same in each rule that prices one (audit, power, a
        look, the cards): every arm a run uses, each model's backend, the probes' prices
        and the recall turn's length."""
        study = self.core.study
        used = sorted({r.arm for r in study.runs})
        return {"arms": {a: self.core.arm_params[a] for a in used},
                "backends": {m: study.model_config(m)["backend"]
                             for m in study.probed_models},
                "probe_dir": "results/probe",
                "recall_max_tokens": self.core.config["recall_max_tokens"]}

    def power_sweeps(self) -> dict[str, dict[str, Any]]:
        return {s: {**{k: sw[k] for k in ("arms", "models", "repeats", "design")},
                    "compare": sw.get("compare")}
                for s, sw in self.core.config["sweeps"].items()}

    def power_pilot(self) -> dict[str, str]:
        """A pilot's rows and checks, as inputs: a changed pilot replans."""
        pilot = self.core.config["power"]["pilot"]
        return {f"pilot_{n}": str(Path(pilot) / f"{n}.csv")
                for n in ("rows", "checks")} if pilot else {}

    def verdict_arms(self) -> dict[str, Any]:
        """Which arms a verdict reads how, the same for a look and the cards: own arms'
        twins, unmatched own arms (outside every verdict), A/A copies (read against their
        originals only) and native@ARM arms (against native and ARM only)."""
        config = self.core.config
        arms_file = arms_file_path(config)
        return {"compare_pairs": config["compare_pairs"],
                "own_arms": own_arm_twins(arms_file),
                "unmatched": unmatched_own_arms(arms_file),
                "aa": aa_copies(config),
                "native_with": native_prompts(config, self.core.study.arm_table)}

    def native_words(self) -> dict[str, dict[str, str]]:
        """model -> what its native arms are called (carriers/native.py NativeWords, as a
        dict), for each model whose config says their compaction is not the provider's
        (native_via: proxy): the cards name that endpoint's compaction. Empty for every
        other study, so its cards read as they always did."""
        return {m: asdict(w) for m, w in native_words_of(self.core.config["models"]).items()}

    # --- a staged decision (config decide:, rules/decide.smk) ---

    @cached_property
    def decide_first(self) -> dict[str, int]:
        """Each staged sweep's first stage: an equal share of max_repeats per look."""
        d = self.core.decide
        return {s: first_stage(d["max_repeats"], d["looks"], self.decide_rotation(s))
                for s in self.core.decide_sweeps}

    def decide_rotation(self, sweep: str) -> int:
        sw = self.core.config["sweeps"][sweep]
        return cycle_length(sw["design"], len(sw["arms"]))

    def look_decide(self) -> dict[str, Any] | None:
        """`decide:` as a look reads it: without the gate."""
        return {k: v for k, v in (self.core.decide or {}).items() if k != "gate"} or None

    def gate_pair(self) -> list[str] | None:
        """The gate's two arms, in name order: all a look needs of the gate (whether the
        cards read one more contrast in the family), so turning the gate around reruns no
        look."""
        gate = (self.core.decide or {}).get("gate")
        return sorted([gate["arm"], gate["against"]]) if gate else None

    def audit_staged(self) -> dict[str, dict[str, Any]]:
        """The audit's view of a staged decision: per decide sweep the pair, the first
        stage and the maximum, so plan.tsv prices both (as -n names both)."""
        d = self.core.decide
        return {s: {"pair": list(d["pair"]), "first": n, "most": d["max_repeats"],
                    "looks": d["looks"]} for s, n in self.decide_first.items()}

    def first_stage_repeats(self, sweep: str) -> dict[str, int]:
        """model -> repeats the first look of a staged sweep is taken at."""
        models = self.core.config["sweeps"][sweep]["models"]
        return dict.fromkeys(models, self.decide_first[sweep])

    def look_fixed_inputs(self, sweep: str, look: int) -> dict[str, str]:
        """A look's inputs besides the runs: the fixture (and the prices of the next
        stage), and the look before it."""
        fixture = f"results/fixtures/{sweep}/fixture.json"
        out = {"fixture": fixture, f"fixture_{sweep}": fixture, **self.core.prompt_files}
        if look > 1:
            out["previous"] = f"results/decide/{sweep}/look{look - 1}.json"
        return out
