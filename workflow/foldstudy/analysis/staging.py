"""One look of a staged decision (config `decide:`): the checkpoint
rules/decide.smk runs after each stage of a sweep that runs the pair.

A look grades the runs made so far, tests the pair on every model still running
(sequential.look: the sign-flip p against the Lan–DeMets nominal level), and writes
results/decide/<sweep>/look<k>.json: per model its repeats so far, its status and, for a
model that goes on, the repeats it will have after the next stage. A model stops when
its contrast is decided (a difference or equivalence), when both arms lost every fact
(sequential.ALL_LOST: nothing to compare, so never "equivalent"), at max_repeats, or
when the next stage would pass budget_usd at its worst case priced as the ledger
reserves now (audit.RunPrices with the ledger: listed prices times the ratios learned
on the endpoint): then it is undecided, with what it spent, the repeats left to
max_repeats and their price. A budget that runs out
in the middle of a stage (its runs end as not_run:budget records, run/fold.py) stops the
model the same way unless the complete repeats before the first stopped run decide it;
the partial repeat is left out. The workflow reads the file to know which runs the next
stage adds (study/design.py `repeats_after`, read by common.smk).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pandas as pd

from ..backends.ledger import read_ledger, reported_cost
from ..evidence import columns
from ..grade.rows import frame, grade_runs, read_record
from ..grade.validity import BUDGET
from ..io import read_json, write_text
from ..records.run_record import RunRecord, as_record
from .cells import pairs, valid_rows
from .decision import planned_family_size
from .plan import AnalysisPlan
from .power import PAPER_ICC
from .sequential import ALL_LOST, CONTINUE, UNDECIDED, look, next_stage
from .verdict import cell_icc

log = logging.getLogger(__name__)

# a row's invalid_reason when budget_usd stopped its run part-way (grade/validity.py)
BUDGET_STOPPED = f"not_run:{BUDGET}"


def first_budget_stop(cell: pd.DataFrame) -> int | None:
    """The repeat of one model's first run the budget stopped part-way, or None: the
    repeats before it are complete, and none from it on is (a repeat after the stop was
    never whole, and a block missing a run compares nothing)."""
    stopped = cell.loc[cell["invalid_reason"] == BUDGET_STOPPED, "repeat"]
    return None if stopped.empty else int(stopped.min())


def block_diffs(cell: pd.DataFrame, pair: tuple[str, str]) -> np.ndarray:
    """One model's paired differences (second arm minus first), a block each, over the
    blocks where both arms have a valid row: what each look tests."""
    pr = pairs(valid_rows(cell), *pair)
    return (pr["recall_second"] - pr["recall_first"]).to_numpy()


def pair_lost_everything(cell: pd.DataFrame, pair: tuple[str, str]) -> bool:
    """Did both arms of the pair recall no graded value in any valid row of the model?
    Then the look stops as the card reads it (decision.ALL_LOST), never as equivalence."""
    valid = valid_rows(cell)
    valid = valid[valid["arm"].isin(pair)]
    return not valid.empty and int(valid["n_correct"].sum()) == 0


def model_look(model: str, prev: dict[str, Any] | None, rows: pd.DataFrame,
               checks: pd.DataFrame, pair: tuple[str, str], decide: dict[str, Any],
               alpha: float, power: float, rotation: int, seed: int) -> dict[str, Any]:
    """One model's look: its state after this stage (a stopped model keeps its state).

    Where budget_usd stopped a run of the stage, only the complete repeats before it
    count, and unless they decide the model it ends *undecided* with stop "budget"
    (budget_stop adds the spend, the repeats left and their price)."""
    if prev is not None and prev["status"] != CONTINUE:
        return prev
    mx, looks = int(decide["max_repeats"]), int(decide["looks"])
    cell = rows[rows["model"] == model]
    stop = first_budget_stop(cell)
    if stop is not None:
        return _budget_look(model, prev, cell[cell["repeat"] < stop], stop, pair, decide,
                            alpha, seed)
    diffs = block_diffs(cell, pair)
    done = int(cell["repeat"].max()) + 1 if len(cell) else 0
    fractions = [*(prev["fractions"] if prev else []), done / mx]
    k = len(fractions)
    final = k >= looks or done >= mx
    if final:
        fractions[-1] = 1.0  # the last look spends what is left
    state: dict[str, Any] = {"repeats": done, "blocks": len(diffs), "fractions": fractions,
                             "looks": k}
    if len(diffs) < 2:
        return {**state, "status": CONTINUE if not final else UNDECIDED, "p": None,
                "nominal": None, "next": min(mx, done + rotation)}
    if pair_lost_everything(cell, pair):
        return {**state, "status": ALL_LOST, "p": None, "nominal": None,
                "difference": 0.0}
    lk = look(diffs, fractions, alpha, float(decide["margin"]), final, seed)
    state.update(status=lk.outcome, p=lk.p, nominal=lk.nominal,
                 difference=float(np.mean(diffs)))
    if lk.outcome == CONTINUE:
        icc = cell_icc(checks, valid_rows(cell), pair)
        kk = float(cell["n_graded"].mean())
        state["next"] = done + next_stage(
            done, fractions, diffs, icc.value if icc else PAPER_ICC, kk,
            float(decide["margin"]), alpha, power, mx, looks - k, rotation)
    return state


def _budget_look(model: str, prev: dict[str, Any] | None, cell: pd.DataFrame, done: int,
                 pair: tuple[str, str], decide: dict[str, Any], alpha: float, seed: int
                 ) -> dict[str, Any]:
    """A look where the budget ran out mid-stage: the test on the complete blocks at
    their information, and *undecided* at the budget unless it decides. A stop in the
    stage's first repeat adds no block: the last look's test stands, and is not repeated
    at the same information. No stage follows, so there is no `next`."""
    mx = int(decide["max_repeats"])
    diffs = block_diffs(cell, pair)
    before = prev["fractions"] if prev else []
    grew = done > (prev["repeats"] if prev else 0)
    fractions = [*before, done / mx] if grew else list(before)
    last = {k: prev[k] for k in ("p", "nominal", "difference") if k in prev} if prev else {}
    state: dict[str, Any] = {"p": None, "nominal": None, **last, "repeats": done,
                             "blocks": len(diffs), "fractions": fractions,
                             "looks": len(fractions), "status": UNDECIDED,
                             "stop": "budget", "stopped_mid_stage": True}
    if grew and len(diffs) >= 2:
        lk = look(diffs, fractions, alpha, float(decide["margin"]), False, seed)
        state.update(p=lk.p, nominal=lk.nominal, difference=float(np.mean(diffs)))
        if lk.outcome != CONTINUE:  # the complete blocks decide it: no budget stop
            state.update(status=lk.outcome)
            del state["stop"], state["stopped_mid_stage"]
    log.info("%s: budget_usd ran out mid-stage; %d complete repeats, %s", model, done,
             state["status"])
    return state


def budget_stop(states: dict[str, dict[str, Any]], per_repeat: dict[str, float | None],
                budget_usd: float | None, spent_usd: float, max_repeats: int) -> None:
    """Stop (in place) each continuing model whose next stage would pass the budget at
    the worst-case price of a repeat (models in name order share what is left), and give
    a model the budget stopped mid-stage (model_look) the same account: what is left of
    the budget, the repeats left to max_repeats and their price."""
    left = math.inf if budget_usd is None else budget_usd - spent_usd
    for model in sorted(states):
        s = states[model]
        price = per_repeat.get(model)
        if s.get("stopped_mid_stage") and "remaining_repeats" not in s:
            _stopped(s, price, left, max_repeats)
            continue
        if s["status"] != CONTINUE:
            continue
        cost = None if price is None else price * (s["next"] - s["repeats"])
        if cost is not None and cost > left:
            _stopped(s, price, left, max_repeats)
            continue
        left -= cost or 0.0


def _stopped(s: dict[str, Any], price: float | None, left: float, max_repeats: int
             ) -> None:
    """Undecided at the budget: the repeats left to max_repeats, their worst-case price
    (None where the model has no price) and what is left of the budget."""
    remaining = max_repeats - s["repeats"]
    s.update(status=UNDECIDED, stop="budget", remaining_repeats=remaining,
             remaining_usd=None if price is None else price * remaining,
             budget_left_usd=None if math.isinf(left) else max(left, 0.0))


def record_usd(record: RunRecord | dict[str, Any]) -> float:
    """What one run's calls cost as reported: its folds' and its recall turn's. A cost the
    gateway reported that is no cost ("abc", NaN, negative) counts 0 here: the ledger
    refused it by name and charged the call at its worst case."""
    r = as_record(record)
    replies = [f.reply or {} for f in r.folds]
    replies.append((r.recall or {}).get("reply") or {})
    return float(sum(reported_cost(r.get("cost_usd")) or 0.0 for r in replies))


def look_state(sweep: str, look: int, prev: dict[str, Any] | None, rows: pd.DataFrame,
               checks: pd.DataFrame, run_usd: dict[str, float], params: Any,
               per_repeat: dict[str, float | None], spent_usd: float, family_size: int = 1
               ) -> dict[str, Any]:
    """The look's file: every model's state, and whether the sweep is done.

    Each model's contrast is one of a family (decide.family; decision.planned_family_size
    counts it before any row): the looks spend alpha / family size, split before it is
    spent over the looks, so the family's chance of any false difference stays at most
    alpha whichever models stop when (Bonferroni)."""
    decide = params.decide
    pair = (decide["pair"][0], decide["pair"][1])
    family = max(1, int(family_size))
    states = {m: model_look(m, (prev or {}).get("models", {}).get(m), rows, checks, pair,
                            decide, params.alpha / family, params.power, params.rotation,
                            params.seed + look)
              for m in params.models}
    budget_stop(states, per_repeat, params.budget_usd, spent_usd, int(decide["max_repeats"]))
    for m, s in states.items():  # what the model's runs cost, as reported
        s["spent_usd"] = run_usd.get(m, 0.0)
        s["price_per_repeat_usd"] = per_repeat.get(m)
    done = all(s["status"] != CONTINUE for s in states.values())
    return {"sweep": sweep, "look": look, "pair": list(pair), "done": done,
            "max_repeats": int(decide["max_repeats"]), "family_size": family,
            "alpha": params.alpha / family, "models": states}


def look_stage(input: Any, output: Any, params: Any) -> dict[str, Any]:
    """Checkpoint decide_look: results/decide/<sweep>/look<k>.json."""
    import json

    from ..run.audit import plan_inputs, run_prices

    rows, checks, _, _, _ = grade_runs(input.fixture, list(input.runs), input.grading,
                                       input.arms_yaml)
    rows_df, checks_df = frame(rows, columns.ROWS), frame(checks, columns.CHECKS)
    checks_df["correct"] = checks_df["correct"].astype(bool)
    run_usd: dict[str, float] = {}
    for path in input.runs:
        record = read_record(path)
        run_usd[record.model] = run_usd.get(record.model, 0.0) + record_usd(record)
    prev = read_json(input.previous) if input.get("previous") else None
    prompts, fixtures = plan_inputs(input)
    # the next stage priced as the ledger would reserve its calls now
    price = run_prices(prompts, fixtures, params.arms, params.backends, params.probe_dir,
                       params.recall_max_tokens, params.ledger)
    per_repeat = {m: _repeat_usd(price, params.sweep, m, params.sweep_arms)
                  for m in params.models}
    spent = float(read_ledger(params.ledger)["spent_usd"])
    plan = AnalysisPlan.of_params(input.analysis, input.arms_yaml, params)
    family = planned_family_size(plan, params.compare_pairs, dict(params.own_arms),
                                 params.decide["pair"], params.sweep_arms,
                                 len(params.models), params.decide["family"],
                                 params.gate_pair, params.compare)
    state = look_state(params.sweep, int(params.look), prev, rows_df, checks_df, run_usd,
                       params, per_repeat, spent, family)
    write_text(json.dumps(state, indent=1, sort_keys=True) + "\n", output.state)
    log.info("look %s of %s: %s", params.look, params.sweep,
             ", ".join(f"{m} {s['status']} at {s['repeats']}" for m, s in
                       state["models"].items()))
    return state


def _repeat_usd(price: Any, sweep: str, model: str, arms: list[str]) -> float | None:
    """Worst-case dollars of one repeat (every arm of the block), priced as the ledger
    reserves."""
    usd = [price(sweep, model, a)[1] for a in arms]
    return None if None in usd else float(sum(usd))
