"""The checks of a staged decision (config `decide:`) and of its gate, made before any
job runs: a pair some sweep runs, looks each stage can take, a maximum the DAG can hold,
arms inside the matched comparison, and in evidence mode a pair the package holds.

decide_sweeps and staged_maximum also say which sweeps run in stages and plan their
maximum, so the plan (-n, the audit) shows the most a decision may run.
"""

from __future__ import annotations

import math
from typing import Any

from ..carriers.registry import carrier_of
from .arm import is_matched
from .design import cycle_length


def decide_sweeps(cfg: dict[str, Any]) -> list[str]:
    """The sweeps a staged decision (config `decide:`) runs in stages: those running both
    arms of its pair. None without `decide:`, and none in evidence mode, which folds
    nothing (the cards read the package's rows of the pair as they are)."""
    d = cfg.get("decide")
    if not isinstance(d, dict) or cfg.get("evidence") or not d.get("pair"):
        return []
    pair = set(d["pair"])
    return [s for s, sw in cfg["sweeps"].items() if pair <= set(sw.get("arms", []))]


def staged_maximum(cfg: dict[str, Any]) -> None:
    """A decide sweep plans its maximum (decide.max_repeats) as its repeats, so the plan
    (-n, the audit) shows the most it may run; the checkpoint runs the stages."""
    for s in decide_sweeps(cfg):
        cfg["sweeps"][s]["repeats"] = int(cfg["decide"]["max_repeats"])


# The most runs a staged decision may plan over its sweeps' models and arms: the DAG holds
# every run of the maximum, so `snakemake -n` shows it, and a maximum of a billion planned
# for minutes while its memory grew past 4 GB. The paper's 24 models at 24 repeats of a
# pair plan 1,152.
DECIDE_RUN_CEILING = 10_000


def decide_problems(cfg: dict[str, Any]) -> list[str]:
    """`decide:` must name a pair some sweep runs, looks each stage can take (a stage adds
    at least one rotation of the sweep's design), and a maximum whose runs stay under
    DECIDE_RUN_CEILING."""
    d = cfg.get("decide")
    if not isinstance(d, dict):
        return []
    pair, out = d.get("pair") or [], []
    if len(pair) == 2 and pair[0] == pair[1]:
        out.append(f"config.decide.pair: [{pair[0]}, {pair[1]}] compares arm {pair[0]!r} "
                   "with itself; a pair names two different arms")
    elif len(pair) == 2 and not cfg.get("evidence") and not any(
            set(pair) <= set(sw.get("arms", [])) for sw in cfg.get("sweeps", {}).values()):
        out.append(f"config.decide.pair: no sweep runs both {pair[0]} and {pair[1]}; add "
                   "them to a sweep's arms or name a pair a sweep runs")
    if d.get("looks", 1) > d.get("max_repeats", 1):
        out.append(f"config.decide.looks: {d['looks']} looks cannot fit in max_repeats "
                   f"{d['max_repeats']} (at most one look per repeat)")
    elif "sweeps" in cfg and "max_repeats" in d:
        out += _rotation_looks(cfg, d) + _run_ceiling(cfg, d)
    # in evidence mode the gate holds on the package's sweeps, checked where the package
    # is read (evidence/package.py: package_gate_problem)
    return out + ([] if cfg.get("evidence") else gate_problems(d.get("gate"),
                                                               cfg.get("sweeps", {})))


def unmatched_verdict_problems(cfg: dict[str, Any], arm_table: dict[str, Any]) -> list[str]:
    """decide.pair and decide.gate name arms inside the matched comparison
    (arm.is_matched): an arm outside it is in no card verdict, so a staged
    decision on it would stop on nothing and a gate on it would fail every model. Each
    arm is named by its key, with what reads it instead."""
    d = cfg.get("decide")
    if not isinstance(d, dict):
        return []
    arms = arm_table.get("arms", {})
    named = [(f"config.decide.pair[{i}]", a) for i, a in enumerate(d.get("pair") or [])]
    gate = d.get("gate") if isinstance(d.get("gate"), dict) else {}
    named += [(f"config.decide.gate.{k}", gate[k]) for k in ("arm", "against") if k in gate]
    out = []
    for key, a in named:
        spec = arms.get(a)
        if not isinstance(spec, dict) or is_matched(spec):
            continue
        why = (carrier_of(spec).outside(spec) or
               "an own arm at its own capacity (match: false), in no matched contrast")
        out.append(f"{key}: {a!r} is {why}; it is in no "
                   "card verdict, so name an arm inside the matched comparison")
    return out


def gate_problems(gate: dict[str, Any] | None, sweeps: dict[str, Any]) -> list[str]:
    """decide.gate holds one arm against another that some sweep runs both of, on models
    such a sweep runs (report/gate.py checks it on the cards)."""
    if not isinstance(gate, dict) or not {"arm", "against"} <= set(gate):
        return []
    arm, against = gate["arm"], gate["against"]
    if arm == against:
        return [f"config.decide.gate: arm and against are both {arm!r}; a gate holds one "
                "arm against another"]
    both = [s for s, sw in sweeps.items() if {arm, against} <= set(sw.get("arms", []))]
    if not both:
        return [f"config.decide.gate: no sweep runs both {arm} and {against}; add them "
                "to a sweep's arms, or gate a pair a sweep runs"]
    ran = {m for s in both for m in sweeps[s].get("models", [])}
    return [f"config.decide.gate.models[{i}]: {m!r} is not a model of a sweep running "
            f"{arm} and {against} (those run: {', '.join(sorted(ran))})"
            for i, m in enumerate(gate.get("models") or []) if m not in ran]


def _rotation_looks(cfg: dict[str, Any], d: dict[str, Any]) -> list[str]:
    """Each stage adds whole rotations of the sweep's order design (study/design.py), so a
    sweep allows ceil(max_repeats / rotation) looks; alpha spread over more is alpha no
    look can spend."""
    out = []
    for s in decide_sweeps(cfg):
        sw = cfg["sweeps"][s]
        rotation = cycle_length(sw.get("design", "latin"), len(sw["arms"]))
        most = math.ceil(int(d["max_repeats"]) / rotation)
        if int(d.get("looks", 1)) > most:
            out.append(f"config.decide.looks: {d['looks']} looks cannot be taken in sweep "
                       f"{s}: each stage adds at least one rotation of its design "
                       f"({rotation} repeats for {len(sw['arms'])} arms), so max_repeats "
                       f"{d['max_repeats']} allows at most {most}")
    return out


def _run_ceiling(cfg: dict[str, Any], d: dict[str, Any]) -> list[str]:
    """The runs the maximum plans, against DECIDE_RUN_CEILING, said before the DAG."""
    sweeps = [cfg["sweeps"][s] for s in decide_sweeps(cfg)]
    per_repeat = sum(len(sw["models"]) * len(sw["arms"]) for sw in sweeps)
    runs = per_repeat * int(d["max_repeats"])
    if runs <= DECIDE_RUN_CEILING:
        return []
    budget = cfg.get("budget_usd")
    spend = (f"; budget_usd {budget:g} stops the spend, not the plan, which holds every "
             "run of the maximum" if isinstance(budget, int | float) else "")
    return [f"config.decide.max_repeats: {d['max_repeats']} plans {runs:,} runs "
            f"({per_repeat} a repeat over the decide sweeps' models and arms), above the "
            f"{DECIDE_RUN_CEILING:,} a staged decision may plan; at most "
            f"{DECIDE_RUN_CEILING // per_repeat} repeats fit{spend}"]


def decide_evidence_note(cfg: dict[str, Any], package_arms: dict[str, set[str]]
                         ) -> tuple[str | None, str | None]:
    """(refusal, note) for `decide:` in evidence mode, checked against the package's
    sweeps (sweep -> the arms its rows hold): nothing is staged there, so the note says
    once which sweeps' cards read the pair; a pair no package sweep holds is refused."""
    d = cfg.get("decide")
    if not isinstance(d, dict) or not cfg.get("evidence") or not d.get("pair"):
        return None, None
    a, b = d["pair"]
    have = sorted(s for s, arms in package_arms.items() if {a, b} <= arms)
    if not have:
        held = "; ".join(f"{s}: {' '.join(sorted(arms))}"
                         for s, arms in sorted(package_arms.items()))
        return (f"config.decide.pair: [{a}, {b}]: no sweep of the evidence package "
                f"{cfg['evidence']} holds both arms ({held}); name a pair it holds, or "
                "unset decide"), None
    return None, (f"decide: evidence mode stages nothing (a package folds no call); the "
                  f"cards read {a} against {b} from the package's rows of sweep"
                  f"{'s' if len(have) > 1 else ''} {', '.join(have)} as they are")

