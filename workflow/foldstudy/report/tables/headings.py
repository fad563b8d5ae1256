"""Headings that arrived, and what the carrier held (paper §4.8, §4.10).

Paper §4.8: "Within the single-field-schema arms, recall is monotone in how many of the
five sections the carrier actually contained"; §4.10: "we can ask of every row how many
graded values are present in the carrier and how many the answer then gets right."
"""

from __future__ import annotations

from ...analysis.headings import (
    carrier_crosstab,
    headings_by_arm,
    headings_within_model,
    recall_by_headings,
)
from ...analysis.view import Evidence
from ..table import Body, Col
from .common import (
    SWEEP,
    builder,
    by_group,
    group_note,
    lines,
    pooled_lines,
    reads,
)


@builder
def t_headings_vs_recall(c: Evidence) -> Body:
    plan, nb = c.plan, c.numbers
    h, notes = [], []
    for g, recs in by_group(c, "headings", lambda valid: recall_by_headings(valid, plan)):
        h += [{**r, "_why_mean": "no row"} for r in recs]
        if g.key("headings.r") in nb:
            notes.append(group_note(g, (
                f"Over all {nb[g.key('headings.n_rows')]} valid rows with the count recorded, "
                f"r = {nb[g.key('headings.r')]:+.2f} (Pearson, headings carried vs recall; "
                f"95% CI [{nb.get(g.key('headings.ci_low'), float('nan')):+.2f}, "
                f"{nb.get(g.key('headings.ci_high'), float('nan')):+.2f}]).")))
    return Body(
        f"Within the single-field-schema arms ({', '.join(plan.single_field_schema)}): recall "
        "by how many of the five fixed headings the final carry held. An association: "
        "headings carried is post-treatment." + reads(c, "headings"),
        [SWEEP, Col("headings", "headings that arrived", "int"), Col("rows", "rows", "int"),
         Col("mean", "mean recall", "p3"),
         Col("rows_ge_half", f"rows ≥ {plan.row_recalled}", "int")], h, notes)


@builder
def t_headings_single_field(c: Evidence) -> Body:
    """Paper §4.8's table: over the single-field-schema arms, pooled over the headings
    scope (one group: its own lines; several: all of them at once)."""
    plan = c.plan
    make = lambda valid: recall_by_headings(valid, plan)  # noqa: E731
    h = pooled_lines(c, "headings", make) or lines(c, "headings", make)
    return Body(
        f"Valid rows of the single-field-schema arms ({', '.join(plan.single_field_schema)}) by "
        "how many of the five fixed headings the final carry held (0-5), pooled over every "
        f"group of the scope: rows, mean recall, rows ≥ {plan.row_recalled}. An association: "
        "headings carried is post-treatment." + reads(c, "headings"),
        [SWEEP, Col("headings", "headings", "int"), Col("rows", "rows", "int"),
         Col("mean", "mean", "p3", "no row"),
         Col("rows_ge_half", f"rows ≥ {plan.row_recalled}", "int")], h)


@builder
def t_headings_within_model(c: Evidence) -> Body:
    h = lines(c, "headings", lambda valid: headings_within_model(valid, c.plan))
    if not h:
        h = [{"_why_row": f"no model's {c.plan.undivided} rows differ in headings carried"}]
    return Body(
        f"Per model whose undivided-arm ({c.plan.undivided}) rows differ in how many fixed "
        "headings arrived: recall by headings carried, within that one model. An "
        "association: headings carried is post-treatment." + reads(c, "headings"),
        [SWEEP, Col("model", "model"), Col("headings", "headings that arrived", "int"),
         Col("n", "rows", "int"), Col("mean", "mean recall", "p3"),
         Col("rows_ge_half", f"rows ≥ {c.plan.row_recalled}", "int")], h)


@builder
def t_headings_by_arm(c: Evidence) -> Body:
    h = lines(c, "headings", lambda valid: headings_by_arm(valid, c.plan))
    return Body(
        "Valid rows of each arm by the number of fixed headings in the final carry."
        + reads(c, "headings"),
        [SWEEP, Col("arm", "arm"), Col("rows", "rows", "int"),
         *[Col(f"h{i}", f"{i}", "int") for i in range(6)],
         Col("mean", "mean recall", "p3")], h)


@builder
def t_carrier_crosstab(c: Evidence) -> Body:
    nb = c.numbers
    cc, notes = [], []
    for g, recs in by_group(c, "carrier", lambda valid: carrier_crosstab(valid, c.checks, c.plan)):
        for r in recs:
            r["missed_share"] = r["missed"] / r["rows"]
            r["title"] = c.plan.arm_title(r["arm"])
            cc.append(r)
        if g.key("carrier.rows") in nb:
            notes.append(group_note(g, (
                f"Read the {nb[g.key('carrier.rows')]} of {nb[g.key('carrier.valid_rows')]} "
                f"valid rows whose carrier was recorded. Carrier and answer agree on "
                f"{nb[g.key('carrier.agree')]} of them; the carrier held a value the answer "
                f"missed on {nb[g.key('carrier.missed')]} rows, and the answer was right "
                f"about a value the carrier lacked on "
                f"{nb[g.key('carrier.answer_beyond_carrier')]}.")))
        if g.key("grader.rows") in nb:
            notes.append(group_note(g, (
                f"Label-bound and presence grading of the answer agree on "
                f"{nb[g.key('grader.agree_rows')]} of {nb[g.key('grader.rows')]} valid "
                f"{c.plan.primary_scenario} rows.")))
    return Body(
        "Per arm, over the valid rows whose carrier was recorded (carrier_present not "
        "empty): rows in which the final carry held a graded value and the answer missed it "
        "(label-bound grader), and the reverse (answer right, carrier without it)."
        + reads(c, "carrier"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"), Col("rows", "rows", "int"),
         Col("missed", "carrier had it, answer missed it", "int"),
         Col("missed_share", "of rows", "pct1"),
         Col("missed_checks", "such checks", "int"),
         Col("answer_beyond_carrier", "answer right, carrier lacked it", "int")], cc, notes)

