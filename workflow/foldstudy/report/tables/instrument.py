"""The instrument's tables, each with its pooled line (paper §4.9, §4.11, §5, §6).

Abstention (§4.11: "Classifying every failing row (recall < 0.5) by whether its answer
contains any abstention marker at all"), finish reasons (§4.9: "80 of 80 calls finished
with stop"), parse failures and invalid rows (§6), the raw JSON envelope (§5) and prompt
tokens between arms (§4.3). Where a scope reads several groups, their last lines pool
them (docs/design.md §8 "Pooled tables").
"""

from __future__ import annotations

from ...analysis import keys
from ...analysis.instrument import (
    ALL_ARMS,
    abstention,
    envelope,
    finish_reasons,
    invalid_reasons,
    parse_failures,
    parse_line,
)
from ...analysis.view import Evidence
from ..table import Body, Col
from .common import (
    SWEEP,
    builder,
    by_group,
    group_note,
    lines,
    paired_ci,
    pooled_lines,
    reads,
    with_pooled,
)


@builder
def t_abstention_vs_fabrication(c: Evidence) -> Body:
    ab, notes = [], []
    make = lambda valid: abstention(valid, c.plan)  # noqa: E731
    why = {"_why_stock_rows": "not recorded",
           "_why_fabricates_prefix400": "no abstained_prefix400 in rows.csv",
           "_why_abstains_prefix400": "no abstained_prefix400 in rows.csv"}
    for g, recs in by_group(c, "abstention", make):
        for r in recs:
            r["title"] = c.plan.arm_title(r["arm"])
            ab.append({**r, **why})
        if recs:
            fab = sum(r["fabricates"] for r in recs)
            tot = sum(r["failing_rows"] for r in recs)
            notes.append(group_note(g, f"{fab} of {tot} failing rows hold no abstention "
                                       f"marker anywhere in the answer; {tot - fab} hold one."))
    for r in pooled_lines(c, "abstention", make):
        ab.append({**r, "title": c.plan.arm_title(r["arm"]), **why})
    return Body(
        f"Failing rows (recall < {c.plan.failing_recall}) by whether the answer holds any "
        "abstention marker anywhere, or fabricates with none; then the same test on the "
        "answer's first 400 characters, the only part the paper kept: its §4.11 counts "
        "compare with those two columns. Stock-signature rows gave at least one "
        "high-frequency stand-in value (stock port, placeholder host, example UUID, round "
        "time). Where the scope reads several groups, the last lines pool them, one per "
        "arm." + reads(c, "abstention"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"),
         Col("failing_rows", "failing rows", "int"),
         Col("fabricates", "fabricates, no abstention", "int"),
         Col("abstains", "abstains somewhere", "int"),
         Col("fabricates_prefix400", "first 400 chars: no abstention", "int"),
         Col("abstains_prefix400", "first 400 chars: abstains", "int"),
         Col("stock_rows", "stock-signature rows", "int")], ab, notes)


@builder
def t_finish_reasons(c: Evidence) -> Body:
    fr = with_pooled(c, "finish", lambda valid: finish_reasons(valid, c.plan))
    for r in fr:
        if r["rows_with_ceiling"]:
            r["at_ceiling"] = f"{r['rows_at_ceiling']} of {r['rows_with_ceiling']}"
        r["_why_at_ceiling"] = "no ceiling declared"
    return Body(
        "Folds of valid rows by how the call finished: stop (the model ended the fold) or "
        "length (it hit the output limit). At ceiling: rows whose carry filled at least "
        f"{c.plan.at_ceiling_fill:.1%} of the declared ceiling. Where the scope reads several "
        "groups, the last lines pool them, one per arm." + reads(c, "finish"),
        [SWEEP, Col("arm", "arm"), Col("rows", "rows", "int"), Col("folds", "folds", "int"),
         Col("stop", "stop", "int"), Col("length", "length", "int"),
         Col("other", "other", "int"), Col("at_ceiling", "rows at ceiling")], fr)


@builder
def t_parse_failures(c: Evidence) -> Body:
    pf = [{**r, "_why_mean_with_failure": "no such row", "_why_mean_clean": "no such row"}
          for r in lines(c, "parse", lambda valid: parse_failures(valid, c.plan))]
    groups = c.groups("parse", every_row=True)
    pooled = c.pooled("parse", every_row=True)
    label, every = pooled if pooled is not None else (
        (groups[0][0].label, groups[0][1]) if groups else (None, None))
    for arms in (c.plan.single_field_schema, None):  # §6: every row, valid or not
        line = parse_line(every, c.plan, arms, None if arms else ALL_ARMS) if (
            every is not None) else None
        if line is not None:
            pf.append({**line, "sweep": label, "_why_mean_with_failure": "no such row",
                       "_why_mean_clean": "no such row", "_why_folds": "pooled line",
                       "_why_parse_failures": "pooled line",
                       "_why_schema_invalid_folds": "pooled line", "_why_rate": "pooled line"})
    return Body(
        "Per arm: folds whose reply did not parse, folds that parsed but broke the schema, "
        "the parse-failure rate per fold, and the recall of rows that carry a parse failure "
        "against clean rows of the same arm. Such rows are the arm's own behaviour: valid, "
        "and in the means. The last two lines pool the single-field-schema arms "
        f"({'+'.join(c.plan.single_field_schema)}) and then {ALL_ARMS} over every group: "
        "their rows with one count every row, valid or not (§6: \"63 rows carrying a parse "
        "failure, 57 valid\"), and the valid ones are beside them; recalls are of valid "
        "rows." + reads(c, "parse"),
        [SWEEP, Col("arm", "arm"), Col("folds", "folds", "int"),
         Col("parse_failures", "parse failures", "int"),
         Col("schema_invalid_folds", "schema-invalid folds", "int"),
         Col("rate", "rate", "pct", "no fold"),
         Col("rows_with_failure", "rows with one", "int"),
         Col("mean_with_failure", "their recall", "p3"),
         Col("rows_clean", "clean rows", "int"), Col("mean_clean", "clean recall", "p3"),
         Col("valid_with_failure", "valid with one", "int", "per-arm lines count valid rows")],
        pf)


@builder
def t_json_envelope(c: Evidence) -> Body:
    """Paper §5: "carried_json_envelope is false on 575 of the 620 valid rows; the 45
    that carry a raw envelope are all f"."""
    env = with_pooled(c, "envelope", lambda valid: envelope(valid, c.plan))
    return Body(
        "Valid rows per arm, and those whose final carry is a raw JSON envelope rather "
        "than text rendered from its fields. Where the scope reads several groups, the "
        "last lines pool them, one per arm." + reads(c, "envelope"),
        [SWEEP, Col("arm", "arm"), Col("rows", "rows", "int"),
         Col("carried", "envelope carried", "int")], env)


@builder
def t_prompt_token_deltas(c: Evidence) -> Body:
    out = []
    for g, _ in c.groups("tokens"):
        for a, b in c.plan.token_deltas:
            cell = g.cell(a, b)
            described = (a, b) == c.plan.described
            out.append({"sweep": g.label, "pair": f"{a} − {b}",
                        "n": c.numbers.get(keys.paired("tokens.delta", "n_pairs", cell)),
                        "models": c.numbers.get(keys.paired("tokens.delta", "n_models", cell)),
                        "delta": paired_ci(c.numbers, "tokens.delta", cell),
                        "expected": c.numbers.get(keys.at("tokens.expected_delta", cell)),
                        "_why_delta": "no block ran both", "_why_n": "none",
                        "_why_models": "none",
                        "_why_expected": "no block ran both" if described else
                        "adds no description"})
    pooled = c.pooled("tokens")
    if pooled is not None:  # §1: q − j "pooled over every sweep"
        a, b, key = c.plan.divided, c.plan.undivided, "tokens.delta_pooled"
        cell = keys.cell(a, b)
        out.append({"sweep": pooled[0], "pair": f"{a} − {b}",
                    "n": c.numbers.get(keys.paired(key, "n_pairs", cell)),
                    "models": c.numbers.get(keys.paired(key, "n_models", cell)),
                    "delta": paired_ci(c.numbers, key, cell), "expected": None,
                    "_why_delta": "no block ran both", "_why_n": "none",
                    "_why_models": "none", "_why_expected": "pooled line"})
    return Body(
        "Mean paired difference in prompt tokens per row (all folds), first arm minus second, "
        "over blocks where both ran validly, with a 95% bootstrap interval resampling blocks "
        "within model. Token counts may come from an estimator (rows.csv token_count_method). "
        f"'If delivered' is the delta {c.plan.described[0]}'s field description would add had "
        "it reached the model on every fold (its characters / 4 per token x folds, §4.3). "
        f"Where the scope reads several groups, a last line pools {c.plan.divided} − "
        f"{c.plan.undivided} over all of them." + reads(c, "tokens"),
        [SWEEP, Col("pair", "pair"), Col("n", "blocks", "int"), Col("models", "models", "int"),
         Col("delta", "mean delta [95% CI]"), Col("expected", "if delivered", "chars")], out)


@builder
def t_invalid_rows(c: Evidence) -> Body:
    """Paper §6: "That happened on 6 rows, every one of them a schema arm (j four times,
    p once, q once) ... Their recalls were 1.000, 1.000, 0.000, 0.000, 0.000 and 0.000"."""
    inv = [{**r, "sweep": g.label} for g, rows in c.groups("invalid", every_row=True)
           for r in invalid_reasons(rows).to_dict("records")]
    if not inv:
        inv = [{"_why_row": "every row of the scope is valid"}]
    return Body(
        "Invalid rows by arm and reason (the one validity rule, recorded in rows.csv). "
        "Catch-up is not retried and can correlate with arm: reported, not hidden. Recalls: "
        "each row's recall, in rows.csv order." + reads(c, "invalid"),
        [SWEEP, Col("arm", "arm"), Col("reason", "reason"), Col("rows", "rows", "int"),
         Col("recalls", "recalls", "p3", "no recall recorded")], inv)

