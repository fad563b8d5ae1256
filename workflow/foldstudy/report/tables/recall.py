"""Per-model recall and the ladder (paper §4, §4.1, §4.3, §4.4).

Paper §4: "Cells are therefore reported with their denominators wherever a table has
room"; §4.3: "Three arms do share one system prompt exactly, and they form a ladder
(Table 2) in which each rung moves one thing"; §4.4: "The same ablation run on a scenario
whose facts all arrive in a single chunk, rather than distributed across folds".
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...analysis import keys
from ...analysis.plan import AnalysisPlan
from ...analysis.recall import iteration, ladder_rungs, recall_by_model_arm, recall_cells
from ...analysis.view import Evidence
from ..table import Body, Col
from .common import (
    SWEEP,
    builder,
    by_group,
    fisher_reading,
    group_note,
    lines,
    paired_ci,
    reads,
)


def _arm_order(plan: AnalysisPlan, arms: set[str]) -> list[str]:
    return [a for a in plan.arm_order if a in arms] + sorted(arms - set(plan.arm_order))


@builder
def t_recall_by_model_arm(c: Evidence) -> Body:
    df = recall_by_model_arm(c.rows, c.plan)
    recs = df.to_dict("records")
    return Body(
        "Mean label-bound recall over valid rows of each (sweep, model, arm), one line per "
        "sweep, never pooled across sweeps. Rows are near-binary, so each mean comes with "
        "its denominators: n valid rows, rows with recall 1, rows with recall at least "
        f"{c.plan.row_recalled}. Invalid rows are counted, never averaged.",
        [SWEEP, Col("model", "model"), Col("arm", "arm"),
         Col("n_valid", "n", "int"), Col("mean_recall", "mean recall", "p3", "no valid row"),
         Col("rows_full", "full", "int"), Col("rows_ge_half", f"≥{c.plan.row_recalled}", "int"),
         Col("n_invalid", "invalid", "int")],
        recs, csv=df)


@builder
def t_table1_recall_model_arm(c: Evidence) -> Body:
    plan = c.plan
    out = []
    arms_seen: set[str] = set()
    per_group = []
    for g, vg in c.groups("table1", primary=True):
        cells = recall_cells(vg, plan)
        arms_seen |= set(cells["arm"])
        per_group.append((g, cells))
    arms = _arm_order(plan, arms_seen)
    for g, cells in per_group:
        for model, gm in cells.groupby("model", sort=True):
            r: dict[str, Any] = {"sweep": g.label, "model": model}
            by = {a: s for a, s in zip(gm["arm"], gm.to_dict("records"), strict=True)}
            for a in arms:
                s = by.get(a)
                r[a] = f"{s['mean']:.3f} ({s['n']})" if s and s["n"] else None
                r[f"{a}_n"] = s["n"] if s else 0
                r[f"{a}_mean"] = s["mean"] if s else None
            out.append(r)
    csv = pd.DataFrame([{k: r[k] for k in ["sweep", "model", *[f"{a}_{x}" for a in arms
                                                             for x in ("mean", "n")]]}
                        for r in out])
    return Body(
        f"Mean recall over the valid rows of the {plan.primary_scenario} scenario, with the "
        "number of valid rows in brackets." + reads(c, "table1") + " Arms: "
        + "; ".join(f"{a} {plan.arm_title(a)}" for a in arms) + ".",
        [SWEEP, Col("model", "model"), *[Col(a, a, "str", "not run") for a in arms]],
        out, csv=csv)


@builder
def t_ladder(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    out, notes = [], []
    for g, recs in by_group(c, "ladder", lambda valid: ladder_rungs(valid, plan)):
        for i, r in enumerate(recs):
            arm, prev = r["arm"], (plan.ladder[i - 1] if i else None)
            fisher = keys.fisher_key(g.at("ladder.fisher_full", prev, arm), "p") if prev else ""
            out.append({
                "sweep": g.label, "arm": arm, "change": plan.arm_title(arm), "n": r["n"],
                "mean": r["mean"], "rows_full": r["rows_full"],
                "effect": paired_ci(nb, "ladder.effect", g.cell(arm, prev)) if prev else None,
                "_why_effect": "first rung" if not prev else "no paired block",
                "fisher": nb.get(fisher) if prev else None,
                "_why_fisher": "first rung" if not prev else "no rows"})
        last = plan.ladder[-2:]
        t = fisher_reading(nb, g.at("ladder.fisher_full", *last), last[0], last[1],
                           plan.alpha)
        if t:
            notes.append(group_note(g, f"Full-recall rows: {t}."))
    return Body(
        "Rungs share one system prompt and each moves one thing. Read within one design: "
        "only (sweep, model) cells that ran every rung. Effect: mean paired difference to "
        "the previous rung over blocks where both ran (a block never spans two sweeps), "
        "with a 95% bootstrap interval resampling blocks within model. Fisher: full-recall "
        "rows against the previous rung." + reads(c, "ladder"),
        [SWEEP, Col("arm", "rung"), Col("change", "change"), Col("n", "n", "int"),
         Col("mean", "mean recall", "p3", "no valid row"), Col("rows_full", "full", "int"),
         Col("effect", "effect [95% CI]"), Col("fisher", "Fisher p (full)", "pval")],
        out, notes)


@builder
def t_iteration(c: Evidence) -> Body:
    out = lines(c, "iteration", lambda valid: iteration(valid, c.plan))
    for r in out:
        r["title"] = c.plan.arm_title(r["arm"])
    return Body(
        "Mean recall and valid rows per arm on each scenario, over the models measured on "
        "the single-chunk scenario. The scenarios differ in graded facts (7 against 14) as "
        "well as in iteration: a contrast of scenarios, not of one factor." + reads(c, "iteration"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"),
         Col("single_n", "n (one chunk)", "int"),
         Col("single_mean", "one chunk", "p3", "not run"),
         Col("distributed_n", "n (distributed)", "int"),
         Col("distributed_mean", "distributed", "p3", "not run")], out)

