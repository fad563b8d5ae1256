"""The partition contrast and the failure modes (paper §4.7).

Paper §4.7: "Extending the capacity-matched pair to every model where both arms could be
run (?@tbl-partition) gives a much less comfortable picture, and it is the one that
should be believed." Every table here reads the `partition` scope (the depth table its
own), each model's pair from one sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from ...analysis.partition import depth, failure_modes, partition, partition_class, separation
from ...analysis.scopes import Group
from ...analysis.view import Evidence
from ...evidence import columns
from ..table import Body, Col
from .common import (
    SWEEP,
    builder,
    by_group,
    group_note,
    lines,
    reads,
)


def _partition_of(c: Evidence, then: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                  own_sweep: bool = False) -> list[tuple[Group, list[dict[str, Any]]]]:
    """by_group over the partition scope: each group's partition frame, or what `then`
    makes of it."""
    def make(valid: pd.DataFrame) -> pd.DataFrame:
        part = partition(valid, c.plan)
        return then(part) if then else part
    return by_group(c, "partition", make, own_sweep=own_sweep)


@builder
def t_partition(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    part, notes = [], []
    for g, recs in _partition_of(c, own_sweep=True):
        for r in recs:
            r["j"] = f"{r['j_mean']:.3f} ({r['j_n']})"
            r["q"] = f"{r['q_mean']:.3f} ({r['q_n']})"
            r["class"] = partition_class(r)
            part.append(r)
        if g.key("partition.n_models") in nb:
            notes.append(group_note(g, (
                f"The undivided arm's mean is below {plan.failing_recall} on "
                f"{nb[g.key('partition.n_failing')]} of {nb[g.key('partition.n_models')]} "
                f"models; the five-field arm reaches {plan.rescued_recall} on "
                f"{nb[g.key('partition.n_rescued')]} of those.")))
            if g.key("partition.mean_gap_working") in nb:
                notes.append(group_note(g, (
                    f"Where the undivided arm's mean reaches {plan.failing_recall} "
                    f"({nb[g.key('partition.n_working')]} models) the five-field arm's mean "
                    f"differs from it by {nb[g.key('partition.mean_gap_working')]:+.3f} on "
                    "average.")))
    return Body(
        f"Undivided ({plan.undivided}) against five named fields ({plan.divided}) at the same "
        "declared capacity, each model's pair from one sweep (paper §4.7: never pooled "
        "across runs), ordered by the undivided arm; valid rows in brackets. j fill: share "
        "of the declared ceiling the undivided carrier used." + reads(c, "partition"),
        [Col("model", "model"), SWEEP, Col("j", f"{plan.undivided} undivided"),
         Col("q", f"{plan.divided} five fields"), Col("gap", "gap", "signed3"),
         Col("j_fill", f"{plan.undivided} fill", "pct", "no ceiling declared"),
         Col("class", "class")], part, notes,
        csv=pd.DataFrame(part, columns=columns.PARTITION_TABLE))


@builder
def t_fill_and_failure_modes(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    part, notes = [], []
    for _, recs in _partition_of(c):
        for r in recs:
            r["mode"] = r["mode"].replace("_", "-")
            part.append(r)
    for g, _ in c.groups("fill"):
        if g.key("fill.r") in nb:
            lo, hi = nb.get(g.key("fill.ci_low")), nb.get(g.key("fill.ci_high"))
            ci = f", 95% CI [{lo:+.2f}, {hi:+.2f}]" if lo is not None else ""
            notes.append(group_note(g, f"Fill against recall of the undivided arm, one point "
                                       f"per measured model (scope `fill`): r = "
                                       f"{nb[g.key('fill.r')]:+.2f}{ci} over "
                                       f"{nb[g.key('fill.n_models')]} models."))
    return Body(
        f"Per model: valid rows, mean carried chars and fill of the undivided arm "
        f"({plan.undivided}), its recall, and the failure mode of a failing model: "
        f"over-writing when fill ≥ {plan.failure_mode_fill_split:.0%}, under-writing below."
        + reads(c, "partition"),
        [SWEEP, Col("model", "model"), Col("j_n", "rows", "int"),
         Col("j_carried_chars", "carried chars", "chars", "not recorded"),
         Col("j_fill", "fill of ceiling", "pct", "no ceiling declared"),
         Col("j_mean", "recall", "p3"), Col("mode", "failure mode")], part, notes)


@builder
def t_rescue_by_failure_mode(c: Evidence) -> Body:
    plan = c.plan
    fm, notes = [], []
    for g, recs in _partition_of(c, failure_modes):
        for r in recs:
            r["mode_name"] = r["mode"].replace("_", "-")
            r["rescues"] = f"{r['rescued']} of {r['models']}" if r["models"] else None
            if not r["fills"]:
                r["_why_fills"] = r["_why_rescues"] = "no failing model of this mode"
            fm.append(r)
        said = [f"{r['rescued']} of {r['models']} {r['mode_name']} failing models"
                for r in recs if r["models"]]
        if said:
            notes.append(group_note(g, "The five-field arm reached the rescue threshold on "
                                       + " and ".join(said) + "."))
    return Body(
        f"Failing models (undivided mean < {plan.failing_recall}) by failure mode (over-writing: "
        f"undivided fill ≥ {plan.failure_mode_fill_split:.0%}; under-writing: below), with "
        "their fills of the undivided ceiling, and how many reach "
        f"{plan.rescued_recall} on the five-field arm." + reads(c, "partition"),
        [SWEEP, Col("mode_name", "failure mode"), Col("fills", "fills", "pct"),
         Col("models", "models", "int"), Col("rescues", "rescued by five fields")], fm, notes)


@builder
def t_borderline_separation(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    sep = []
    for g, recs in _partition_of(c, separation):
        for r in recs:
            cl = r["classification"]
            r["label"] = {"all": "all failing models",
                          "excluding_borderline": "excluding borderline models"}[cl]
            r["weight"] = nb.get(g.at("separation.weight", cl))
            r["_why_weight"] = "separation not complete"
            r["_why_margin"] = "needs rescued and non-rescued models"
            if not r["rescued_fills"]:
                r["_why_rescued_fills"] = "none rescued"
            if not r["non_rescued_fills"]:
                r["_why_non_rescued_fills"] = "all rescued"
            sep.append(r)
    return Body(
        f"Fills of the undivided ceiling of rescued and non-rescued failing models. Margin: "
        f"lowest rescued fill minus highest non-rescued fill. Borderline: undivided mean "
        f"within {plan.borderline_margin} of {plan.failing_recall}. Weight: 1/C(n, k), the "
        "chance that the k non-rescued models are exactly the k lowest-fill ones under "
        "random assignment; a post-hoc split on a continuous variable weighs no more."
        + reads(c, "partition"),
        [SWEEP, Col("label", "classification"), Col("rescued_fills", "rescued fills", "pct"),
         Col("non_rescued_fills", "non-rescued fills", "pct"),
         Col("margin", "margin", "pts"), Col("weight", "1/C(n,k)", "pval")], sep)


@builder
def t_depth(c: Evidence) -> Body:
    d = lines(c, "depth", lambda valid: depth(valid, c.plan), own_sweep=True)
    if not d:
        d = [{"_why_row": "no model of the depth scope ran both arms"}]
    return Body(
        "Both arms of every model of the depth scope, from that scope's rows alone (never "
        f"merged with the partition table): n, mean, rows ≥ {c.plan.row_recalled}, fill, how "
        "many fixed headings arrived row by row, and the class those rows give the model."
        + reads(c, "depth"),
        [SWEEP, Col("model", "model"), Col("arm", "arm"), Col("n", "n", "int"),
         Col("mean", "mean", "p3", "no valid row"),
         Col("rows_ge_half", f"rows ≥ {c.plan.row_recalled}", "int"),
         Col("fill", "fill", "pct", "no ceiling declared"),
         Col("headings", "headings carried"), Col("class", "class")], d)

