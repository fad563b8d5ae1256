"""The gate (config `decide.gate`): what must hold on the decision cards, as a pass or
fail per model a CI job can act on (docs/design.md §6, Decision).

`snakemake -c1 gate` first writes results/gate.json (rule gate_verdicts: every model's
pass or fail, with its verdict and why), then fails (rule gate) with one line per failing
model when any fails. A gate reads the cards' words, which read the family-adjusted p:
`{arm: mine, against: m, at_least: equivalent}` passes a model whose card says "mine
better" or "equivalent within ±margin"; `at_least: better` passes only "mine better". An
undecided model fails, and its line says how many more repeats (and dollars, at the
prices the card's plan names) would decide it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..analysis.card import Card, ContrastVerdict, Decision, read_decision
from ..errors import StudyError
from ..io import read_json, write_text
from .decision import json_safe

log = logging.getLogger(__name__)

BETTER, EQUIVALENT = "better", "equivalent"


class GateFailed(StudyError):
    """The gate does not hold on some model: each is named on its own line above."""


def gate_models(gate: dict[str, Any], sweeps: dict[str, dict[str, Any]]
                ) -> list[tuple[str | None, str]]:
    """(sweep, model) pairs the gate is checked on: every model of every sweep running
    both arms, or those the gate lists (a listed model no such sweep runs: sweep None)."""
    pair = {gate["arm"], gate["against"]}
    runs = [(s, m) for s, sw in sweeps.items() if pair <= set(sw["arms"])
            for m in sw["models"]]
    if not gate.get("models"):
        return runs
    out: list[tuple[str | None, str]] = []
    for m in gate["models"]:
        mine = [(s, x) for s, x in runs if x == m]
        out += mine or [(None, m)]
    return out


def _contrast(card: Card, gate: dict[str, Any]) -> ContrastVerdict | None:
    pair = {gate["arm"], gate["against"]}
    return next((v for v in card.contrasts if {v.a, v.b} == pair), None)


def verdict(gate: dict[str, Any], sweep: str | None, model: str,
            card: Card | None) -> dict[str, Any]:
    """One model's pass or fail, its card's word and why."""
    arm, against, need = gate["arm"], gate["against"], gate["at_least"]
    out: dict[str, Any] = {"sweep": sweep, "model": model, "arm": arm, "against": against,
                           "at_least": need, "verdict": None, "more_repeats": None,
                           "more_usd": None}
    if sweep is None:
        return {**out, "pass": False,
                "why": f"no sweep runs both {arm} and {against} on this model"}
    if card is None:
        return {**out, "pass": False, "why": "no valid row on this model: nothing was read"}
    if card.all_lost:
        return {**out, "pass": False, "verdict": "every arm lost every fact",
                "why": "every arm lost every fact: no contrast is read"}
    v = _contrast(card, gate)
    if v is None:
        return {**out, "pass": False, "why": f"no block holds both {arm} and {against}"}
    word = v.word
    out["verdict"] = word
    p = f"adjusted p {v.p_adjusted:.4f}" if v.p_adjusted is not None else "no p"
    at = (f"{word} ({v.blocks} blocks, {arm} − {against} "
          f"{_signed(v, arm):+.3f}, {p} in a family of {v.family_size})")
    if word == f"{arm} better":
        return {**out, "pass": True, "why": at}
    if word.startswith("equivalent"):
        ok = need == EQUIVALENT
        return {**out, "pass": ok,
                "why": at if ok else f"{at}, where the gate needs {arm} better"}
    if word == f"{against} better":
        return {**out, "pass": False, "why": f"{arm} loses: {at}"}
    out.update(more_repeats=v.more_repeats, more_usd=v.more_usd)
    return {**out, "pass": False, "why": f"undecided: {at}; {_to_decide(v, card)}"}


def _signed(v: ContrastVerdict, arm: str) -> float:
    """The difference arm − against from a contrast stored as b − a."""
    d = float(v.difference)
    return d if v.b == arm else -d


def _to_decide(v: ContrastVerdict, card: Card) -> str:
    """What would decide an undecided model: the card's plan, else the staged study's
    repeats left to max_repeats."""
    more, usd = v.more_repeats, v.more_usd
    staged = card.staged
    if more is None and staged is not None and staged.remaining_repeats:
        more, usd = staged.remaining_repeats, staged.remaining_usd
    if more is None:
        return "no plan to decide it (too few blocks to plan from)"
    money = "price unknown" if usd is None else f"${usd:.2f}"
    return f"{more} more repeats would decide it ({money})"


def gate_result(gate: dict[str, Any], sweeps: dict[str, dict[str, Any]],
                doc: Decision) -> dict[str, Any]:
    """results/gate.json: the gate, every model's verdict, and whether all pass."""
    cards = {(c.sweep, c.model): c for c in doc.cards}
    models = [verdict(gate, s, m, cards.get((s, m)) if s else None)
              for s, m in gate_models(gate, sweeps)]
    instrument = instrument_failures(doc)
    return {"gate": gate, "passed": bool(models) and all(m["pass"] for m in models)
            and not instrument, "family": doc.family, "models": models,
            "instrument": instrument}


def instrument_failures(doc: Decision) -> list[dict[str, Any]]:
    """Every card's A/A line declared different (Card.instrument_fails, analysis/card.py
    AA_SOURCE): an arm "better" than its exact copy is the instrument failing, and fails
    the gate whatever the gate's own pair reads, on any model."""
    return [{"sweep": c.sweep, "model": c.model, "arm": v.a, "copy": v.b,
             "verdict": v.word, "difference": v.difference, "p_adjusted": v.p_adjusted}
            for c in doc.cards for v in c.instrument_fails]


def failing_lines(result: dict[str, Any]) -> list[str]:
    """One line per failing model."""
    g = result["gate"]
    lines = [f"gate fails on {m['model']}" + (f" in sweep {m['sweep']}" if m["sweep"] else "")
             + f": {g['arm']} must be at least {g['at_least']} against {g['against']}; "
             f"{m['why']}" for m in result["models"] if not m["pass"]]
    if not result["models"]:
        lines.append(f"gate: no model runs both {g['arm']} and {g['against']}")
    lines += [f"gate fails on {x['model']} in sweep {x['sweep']}: the instrument fails its "
              f"A/A control, {x['arm']} against its exact copy {x['copy']} reads "
              f"{x['verdict']}" for x in result.get("instrument") or []]
    return lines


def gate_verdicts_stage(input: Any, output: Any, params: Any) -> dict[str, Any]:
    """Rule gate_verdicts: results/gate.json from results/decision.json."""
    if not params.gate:
        raise GateFailed("config.decide.gate: not set, so there is nothing to check; set "
                         "it, e.g. --config \"decide={pair: null, gate: {arm: m, against: "
                         "j, at_least: better}}\"")
    result = gate_result(dict(params.gate), dict(params.sweeps), read_decision(input.decision))
    write_text(json.dumps(json_safe(result), indent=1, sort_keys=True) + "\n", output.gate)
    return result


def gate_stage(input: Any) -> None:
    """Rule gate: fail, one line per failing model, where results/gate.json does."""
    result = read_json(input.gate)
    lines = failing_lines(result)
    for line in lines:
        log.error("%s", line)
    if lines:
        n = sum(not m["pass"] for m in result["models"])
        aa = len(result.get("instrument") or [])
        raise GateFailed(f"the gate does not hold on {n} of {len(result['models'])} models"
                         + (f" and {aa} A/A control{'s' if aa > 1 else ''} failed" if aa
                            else "") + f" ({input.gate}); each is named above")
    log.info("gate passes on all %d models (%s)", len(result["models"]), input.gate)
