"""Capacity and ceilings (paper §4.5, §4.6).

Paper §4.5: "The capacity channel is manipulated directly rather than conditioned on.";
§4.6: "Repeating the ceiling manipulation on a second model ... gives a result worth
reporting in full because half of it does not transfer."
"""

from __future__ import annotations

from ...analysis.capacity import capacity, capacity_rows, ceiling_replication, fill_table
from ...analysis.scopes import Group
from ...analysis.view import Evidence
from ..table import Body, Col
from .common import (
    SWEEP,
    builder,
    fisher_reading,
    group_note,
    lines,
    reads,
)


@builder
def t_capacity(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    a, b = plan.ceiling_pair
    cap, notes = [], []
    every = c.every_row("capacity")
    for g, vg in c.groups("capacity"):
        recs = capacity(vg, plan, every.get(g.label)).to_dict("records")
        for r in recs:
            r["sweep"] = g.label
            r["clipped"] = f"{r['folds_clipped']} of {r['folds']}" if r["folds"] else None
            r["nonconforming"] = (f"{r['nonconforming_folds']} of {r['folds_all']}"
                                  if r["folds_all"] else None)
            if not r["n"]:  # a count over no rows is not a zero
                r["rows_recalled"] = None
            r["title"] = plan.arm_title(r["arm"])
            cap.append(r)
        t = fisher_reading(nb, g.at("capacity.fisher_recalled", a, b), a, b, plan.alpha)
        if t:
            both = _ran_both(c, g, a, b)
            who = (f"the one model that ran both, {both[0]}" if len(both) == 1 else
                   f"the {len(both)} models that ran both"
                   + (f" ({', '.join(both)})" if len(both) <= 3 else ""))
            notes.append(group_note(g, f"Ceiling halved, over {who}: {t}."))
        fa, fb = "+".join(plan.representation_failing), "+".join(plan.representation_healthy)
        t = fisher_reading(nb, g.key("capacity.fisher_representation"), fa, fb, plan.alpha)
        if t:
            notes.append(group_note(g, f"Representation: {t}."))
    return Body(
        "The capacity channel manipulated directly, in the (sweep, model) cells that ran a "
        "manipulation: declared ceiling halved (t) and carry cap reduced (u). Rows "
        f"recalled: recall ≥ {plan.row_recalled}. Carried chars: mean over rows of the mean "
        "carry per fold. Non-conforming: folds that failed to parse or broke the schema, "
        "over every row of the arm, valid or not (§4.5: \"4 of 60 folds\"); the other "
        "columns read the valid rows." + reads(c, "capacity"),
        [SWEEP, Col("arm", "arm"), Col("title", "change"), Col("n", "n", "int"),
         Col("rows_recalled", "rows recalled", "int"),
         Col("mean", "mean", "p3", "not run"),
         Col("carried_chars", "carried chars", "chars", "not run"),
         Col("clipped", "folds clipped at cap", "str", "not run"),
         Col("nonconforming", "non-conforming folds", "str", "no fold")], cap, notes)


def _ran_both(c: Evidence, g: Group, a: str, b: str) -> list[str]:
    """The models of a capacity group's manipulated cells that ran both arms."""
    cr = capacity_rows(g.rows(c.valid), c.plan)
    return sorted(set(cr.loc[cr["arm"] == a, "model"]) & set(cr.loc[cr["arm"] == b, "model"]))


@builder
def t_ceiling_replication(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    a, b = plan.ceiling_pair
    df, notes = [], []
    for g, vg in c.groups("ceiling"):
        for r in ceiling_replication(vg, plan).to_dict("records"):
            # a line names the sweeps its model's rows came from (the group's, in order)
            have = set(vg.loc[(vg["model"] == r["model"]) & vg["arm"].isin([a, b]), "sweep"])
            r["sweep"] = "+".join(sw for sw in g.sweeps if sw in have)
            r["a"] = f"{r['a_recalled']}/{r['a_n']} rows"
            r["b"] = f"{r['b_recalled']}/{r['b_n']} rows"
            df.append(r)
        t = fisher_reading(nb, g.at("ceiling.fisher_recalled", a, b), a, b, plan.alpha)
        if t:
            notes.append(group_note(g, f"Over the models that ran both: {t}."))
    if not df:
        df = [{"_why_row": f"no model ran both {a} and {b}"}]
    return Body(
        f"Rows recalled (recall ≥ {plan.row_recalled}) of valid rows on the undivided arm at "
        f"its ceiling ({a}) and at half of it ({b}), per model that ran both; a fill is "
        "the share of its declared ceiling the carrier used, over the same rows as the "
        "count beside it (where the scope names sources per model and arm, those rows). "
        "The sweep column names the sweeps the model's rows came from." + reads(c, "ceiling"),
        [SWEEP, Col("model", "model"), Col("a", f"{a} ceiling"), Col("b", f"{b} halved ceiling"),
         Col("a_fill", f"{a} fill", "pct", "no ceiling declared"),
         Col("b_fill", f"{b} fill", "pct", "no ceiling declared")], df, notes)


@builder
def t_fill_by_model_arm(c: Evidence) -> Body:
    """Paper §4.6: "One failure writes prose until the slot is full ... The other writes a
    short gist"; its table's rows pool each model's sweeps (granite 16 = 4 + 12)."""
    ft = lines(c, "fill_table", lambda valid: fill_table(valid, c.plan))
    for r in ft:
        r["title"] = c.plan.arm_title(r["arm"])
    if not ft:
        ft = [{"_why_row": "no valid row of an arm with a declared ceiling"}]
    return Body(
        "Per model and arm with a declared ceiling: valid rows, pooled over the model's "
        "sweeps in the scope (the sweeps column names them), the mean characters the model "
        "carried per fold, their share of the declared ceiling (fill), and mean recall; "
        "fullest first." + reads(c, "fill_table"),
        [SWEEP, Col("model", "model"), Col("arm", "arm"), Col("title", "representation"),
         Col("sweeps", "sweeps read"), Col("rows", "rows", "int"),
         Col("carried_chars", "carried chars", "chars", "not recorded"),
         Col("declared_ceiling_chars", "declared ceiling", "chars"),
         Col("fill", "fill of ceiling", "pct", "not recorded"),
         Col("mean", "recall", "p3")], ft)

