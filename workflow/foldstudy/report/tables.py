"""Every table of the paper (§4) and the instrument tables, from the evidence and numbers.json.

Descriptive cells come from the pure functions in analysis.py (the same ones
numbers.py flattens), inference (intervals, Fisher, TOST, r) is read from numbers.json,
so a table and the numbers file cannot disagree. Each table is written three ways by
jinja2 templates (resources/templates/table.{md,tex}.j2) and pandas (CSV). An empty cell
says why it is empty ("— (not run)"), never 0; in the CSV it is an empty field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from ..analysis import analysis as A
from ..analysis.analysis import Analysis
from ..evidence import columns
from ..evidence.load import load_probes, read_artifact
from ..evidence.provenance import check_same_study
from ..io import read_json
from .titles import TABLE_TITLES as TITLES

Numbers = dict[str, float | int]
DASH = "—"

def recall_by_model_arm(rows: pd.DataFrame) -> pd.DataFrame:
    """Recall per (sweep, model, arm) over valid rows, with denominators (DESIGN §8).

    Rows are near-binary (paper §4), so a mean stands for a small count: n_valid,
    rows_full and rows_ge_half travel with every mean.
    """
    out = []
    for (sweep, model, arm), g in rows.groupby(["sweep", "model", "arm"], sort=True):
        v = A.valid_rows(g)
        r = v["recall"].astype(float)
        out.append({
            "sweep": sweep, "model": model, "arm": arm,
            "n_valid": len(v),
            "mean_recall": round(r.mean(), 6) if len(v) else None,
            "rows_full": int((r >= 1.0).sum()),
            "rows_ge_half": int((r >= 0.5).sum()),
            "n_rows": len(g),
            "n_invalid": int((~g["valid"]).sum()),
        })
    return pd.DataFrame(out, columns=columns.RECALL_TABLE)


def render(template_dir: Path, name: str, **context: object) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tex"] = tex_escape
    return env.get_template(name).render(**context)


# ------------------------------------------------------------------------ cells

def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(x: Any, kind: str) -> str | None:
    """Text of one cell, or None when it has no data (the renderer says why)."""
    if isinstance(x, list):
        return ", ".join(filter(None, (fmt(v, kind) for v in x))) if x else None
    if _missing(x):
        return None
    if kind == "int":
        return f"{int(x):,}"
    if kind == "p3":
        return f"{float(x):.3f}"
    if kind == "signed3":
        return f"{float(x):+.3f}"
    if kind == "pct":
        return f"{100 * float(x):.0f}%"
    if kind == "pts":
        return f"{100 * float(x):.0f} pts"
    if kind == "pval":
        return f"{float(x):.2g}" if float(x) < 0.001 else f"{float(x):.4f}"
    if kind == "chars":
        return f"{float(x):,.0f}"
    if kind == "bool":
        return "yes" if x else "no"
    return str(x)


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    kind: str = "str"
    missing: str = "no data"  # why a cell of this column can be empty

    @property
    def numeric(self) -> bool:
        return self.kind not in ("str", "bool")


@dataclass
class Table:
    """One table: what it is (title, caption), its columns and rows, notes under it."""

    name: str
    title: str
    caption: str
    columns: list[Col]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    csv: pd.DataFrame | None = None  # when the CSV has a contract of its own

    def cells(self) -> list[list[str]]:
        out = []
        for r in self.rows:
            if r.get("_why_row"):  # a placeholder row: the table has nothing to show
                out.append([f"{DASH} ({r['_why_row']})"] + [DASH] * (len(self.columns) - 1))
                continue
            line = []
            for c in self.columns:
                text = fmt(r.get(c.key), c.kind)
                why = r.get("_why_" + c.key) or c.missing
                line.append(text if text is not None else f"{DASH} ({why})")
            out.append(line)
        return out

    def frame(self) -> pd.DataFrame:
        if self.csv is not None:
            return self.csv
        data = [{c.key: (";".join(f"{v:.6g}" if isinstance(v, float) else str(v)
                                  for v in r.get(c.key))
                         if isinstance(r.get(c.key), list) else r.get(c.key))
                 for c in self.columns} for r in self.rows]
        return pd.DataFrame(data, columns=[c.key for c in self.columns])


def tex_escape(s: object) -> str:
    text = str(s)
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"),
                 ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"),
                 ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}"),
                 (DASH, "---"), ("≥", r"$\geq$"), ("→", r"$\rightarrow$"),
                 ("±", r"$\pm$"), ("×", r"$\times$")):
        text = text.replace(a, b).replace(r"\textbackslash\{\}", r"\textbackslash{}")
    return text


def _n(numbers: Numbers, key: str) -> float | int | None:
    return numbers.get(key)


def _ci(numbers: Numbers, key: str, cell: str) -> str | None:
    d = numbers.get(f"{key}.diff[{cell}]")
    if d is None:
        return None
    lo, hi = numbers[f"{key}.ci_low[{cell}]"], numbers[f"{key}.ci_high[{cell}]"]
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _fisher_text(numbers: Numbers, key: str) -> str | None:
    if f"{key}.p" not in numbers:
        return None
    g = numbers.get
    return (f"{g(key + '.a')}/{g(key + '.n1')} vs {g(key + '.b')}/{g(key + '.n2')}, "
            f"Fisher exact p = {fmt(g(key + '.p'), 'pval')}")


def _arm_order(an: Analysis, arms: set[str]) -> list[str]:
    return [a for a in an.arm_order if a in arms] + sorted(arms - set(an.arm_order))


# ------------------------------------------------------------------------ the tables

def t_recall_long(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    df = recall_by_model_arm(rows)
    recs = df.to_dict("records")
    return Table(
        "recall-by-model-arm", TITLES["recall-by-model-arm"],
        "Mean label-bound recall over valid rows of each (sweep, model, arm). Rows are "
        "near-binary, so each mean comes with its denominators: n valid rows, rows with "
        "recall 1, rows with recall at least 0.5. Invalid rows are counted, never averaged.",
        [Col("sweep", "sweep"), Col("model", "model"), Col("arm", "arm"),
         Col("n_valid", "n", "int"), Col("mean_recall", "mean recall", "p3", "no valid row"),
         Col("rows_full", "full", "int"), Col("rows_ge_half", "≥0.5", "int"),
         Col("n_invalid", "invalid", "int")],
        recs, csv=df)


def t_table1(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    cells = A.recall_cells(v[v["scenario"] == an.primary_scenario], an)
    arms = _arm_order(an, set(cells["arm"]))
    out = []
    for model, g in cells.groupby("model", sort=True):
        r: dict[str, Any] = {"model": model}
        by = {a: s for a, s in zip(g["arm"], g.to_dict("records"), strict=True)}
        for a in arms:
            s = by.get(a)
            r[a] = f"{s['mean']:.3f} ({s['n']})" if s and s["n"] else None
            r[f"{a}_n"] = s["n"] if s else 0
            r[f"{a}_mean"] = s["mean"] if s else None
        out.append(r)
    csv = pd.DataFrame([{k: r[k] for k in ["model", *[f"{a}_{x}" for a in arms
                                                    for x in ("mean", "n")]]} for r in out])
    return Table(
        "table1-recall-model-arm", TITLES["table1-recall-model-arm"],
        f"Mean recall over the valid rows of the {an.primary_scenario} scenario, pooled over "
        "its sweeps, with the number of valid rows in brackets. Paired contrasts are read "
        "within a sweep (recall-by-model-arm); this is the overview. Arms: "
        + "; ".join(f"{a} {an.arm_title(a)}" for a in arms) + ".",
        [Col("model", "model"), *[Col(a, a, "str", "not run") for a in arms]],
        out, csv=csv)


def t_ladder(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    lad = A.ladder(v, an)
    out = []
    for i, r in lad.iterrows():
        arm, prev = r["arm"], (an.ladder[i - 1] if i else None)
        row = {"arm": arm, "change": an.arm_title(arm), "n": r["n"], "mean": r["mean"],
               "rows_full": r["rows_full"],
               "effect": _ci(nb, "ladder.effect", f"{arm}/{prev}") if prev else None,
               "_why_effect": "first rung" if not prev else "no paired block",
               "fisher": nb.get(f"ladder.fisher_full[{prev}/{arm}].p") if prev else None,
               "_why_fisher": "first rung" if not prev else "no rows"}
        out.append(row)
    notes = []
    last = an.ladder[-2:]
    t = _fisher_text(nb, f"ladder.fisher_full[{last[0]}/{last[1]}]")
    if t:
        notes.append(f"Full-recall rows, {last[0]} against {last[1]}: {t}.")
    return Table(
        "ladder", "The " + " → ".join(an.ladder) + " ladder",
        "Rungs share one system prompt and each moves one thing. Read within one design: "
        "only (sweep, model) cells that ran every rung. Effect: mean paired difference to "
        "the previous rung over blocks where both ran, with a 95% bootstrap interval "
        "resampling blocks within model. Fisher: full-recall rows against the previous rung.",
        [Col("arm", "rung"), Col("change", "change"), Col("n", "n", "int"),
         Col("mean", "mean recall", "p3", "no valid row"), Col("rows_full", "full", "int"),
         Col("effect", "effect [95% CI]"), Col("fisher", "Fisher p (full)", "pval")],
        out, notes)


def t_iteration(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    it = A.iteration(v, an)
    out = [{**r, "title": an.arm_title(r["arm"])} for r in it.to_dict("records")]
    return Table(
        "iteration", TITLES["iteration"],
        "Mean recall and valid rows per arm on each scenario, over the models measured on "
        "the single-chunk scenario. The scenarios differ in graded facts (7 against 14) as "
        "well as in iteration: a contrast of scenarios, not of one factor.",
        [Col("arm", "arm"), Col("title", "representation"),
         Col("single_n", "n (one chunk)", "int"),
         Col("single_mean", "one chunk", "p3", "not run"),
         Col("distributed_n", "n (distributed)", "int"),
         Col("distributed_mean", "distributed", "p3", "not run")], out)


def t_capacity(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    cap = A.capacity(v, an).to_dict("records")
    for r in cap:
        r["clipped"] = f"{r['folds_clipped']} of {r['folds']}" if r["folds"] else None
        if not r["n"]:  # a count over no rows is not a zero
            r["rows_recalled"] = r["nonconforming_folds"] = None
        r["title"] = an.arm_title(r["arm"])
    a, b = an.ceiling_pair
    notes = [t for t in (
        (lambda s: s and f"Ceiling halved ({a} against {b}, models that ran both), rows "
                         f"recalled: {s}.")(_fisher_text(nb, f"capacity.fisher_recalled[{a}/{b}]")),
        (lambda s: s and f"Representation ({'+'.join(an.representation_failing)} against "
                         f"{'+'.join(an.representation_healthy)}), rows recalled: {s}.")(
            _fisher_text(nb, "capacity.fisher_representation"))) if t]
    return Table(
        "capacity", TITLES["capacity"],
        "The capacity channel manipulated directly, in the (sweep, model) cells that ran a "
        "manipulation: declared ceiling halved (t) and carry cap reduced (u). Rows "
        f"recalled: recall ≥ {an.row_recalled}. Carried chars: mean over rows of the mean "
        "carry per fold. Non-conforming: folds that failed to parse or broke the schema.",
        [Col("arm", "arm"), Col("title", "change"), Col("n", "n", "int"),
         Col("rows_recalled", "rows recalled", "int"),
         Col("mean", "mean", "p3", "not run"),
         Col("carried_chars", "carried chars", "chars", "not run"),
         Col("clipped", "folds clipped at cap", "str", "not run"),
         Col("nonconforming_folds", "non-conforming folds", "int")], cap, notes)


def t_ceiling(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    a, b = an.ceiling_pair
    df = A.ceiling_replication(v, an).to_dict("records")
    for r in df:
        r["a"] = f"{r['a_recalled']}/{r['a_n']} rows"
        r["b"] = f"{r['b_recalled']}/{r['b_n']} rows"
    if not df:
        df = [{"_why_row": f"no model ran both {a} and {b}"}]
    return Table(
        "ceiling-replication", TITLES["ceiling-replication"],
        f"Rows recalled (recall ≥ {an.row_recalled}) of valid rows on the undivided arm at "
        f"its ceiling ({a}) and at half of it ({b}), per model that ran both in one cell; "
        f"{a} fill is the share of its declared ceiling the carrier used.",
        [Col("model", "model"), Col("a", f"{a} ceiling"), Col("b", f"{b} halved ceiling"),
         Col("a_fill", f"{a} fill", "pct", "no ceiling declared"),
         Col("b_fill", f"{b} fill", "pct", "no ceiling declared")], df)


def _class(r: dict[str, Any]) -> str:
    if not r["failing"]:
        return "works"
    return ("rescued" if r["rescued"] else "not rescued") + (" (borderline)"
                                                            if r["borderline"] else "")


def t_partition(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    part = A.partition(v, an).to_dict("records")
    for r in part:
        r["j"] = f"{r['j_mean']:.3f} ({r['j_n']})"
        r["q"] = f"{r['q_mean']:.3f} ({r['q_n']})"
        r["class"] = _class(r)
    notes = []
    if "partition.n_models" in nb:
        notes.append(
            f"The undivided arm fails (mean < {an.failing_recall}) on "
            f"{nb['partition.n_failing']} of {nb['partition.n_models']} models; partitioning "
            f"rescues {nb['partition.n_rescued']} of them (q ≥ {an.rescued_recall}).")
        if "partition.mean_gap_working" in nb:
            notes.append(f"Where the undivided arm works ({nb['partition.n_working']} models) "
                         f"partitioning changes recall by "
                         f"{nb['partition.mean_gap_working']:+.3f} on average.")
    return Table(
        "partition", TITLES["partition"],
        f"Undivided ({an.undivided}) against five named fields ({an.divided}) at the same "
        "declared capacity, paired within one sweep per model, ordered by the undivided arm; "
        "valid rows in brackets. j fill: share of the declared ceiling the undivided carrier "
        "used.",
        [Col("model", "model"), Col("sweep", "sweep"), Col("j", f"{an.undivided} undivided"),
         Col("q", f"{an.divided} five fields"), Col("gap", "gap", "signed3"),
         Col("j_fill", f"{an.undivided} fill", "pct", "no ceiling declared"),
         Col("class", "class")], part, notes,
        csv=pd.DataFrame(part, columns=["model", "sweep", "j_n", "j_mean", "q_n", "q_mean",
                                        "gap", "j_fill", "failing", "rescued", "mode",
                                        "borderline"]))


def t_fill_modes(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    part = A.partition(v, an).to_dict("records")
    for r in part:
        r["mode"] = r["mode"].replace("_", "-")
    r_note = ([f"Fill against recall across models (undivided arm): r = {nb['fill.r']:+.2f} "
               f"over {nb['fill.n_models']} models."] if "fill.r" in nb else [])
    return Table(
        "fill-and-failure-modes", TITLES["fill-and-failure-modes"],
        f"Per model: valid rows, mean carried chars and fill of the undivided arm "
        f"({an.undivided}), its recall, and the failure mode of a failing model: "
        f"over-writing when fill ≥ {an.failure_mode_fill_split:.0%}, under-writing below.",
        [Col("model", "model"), Col("j_n", "rows", "int"),
         Col("j_carried_chars", "carried chars", "chars", "not recorded"),
         Col("j_fill", "fill of ceiling", "pct", "no ceiling declared"),
         Col("j_mean", "recall", "p3"), Col("mode", "failure mode")], part, r_note)


def t_rescue(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    fm = A.failure_modes(A.partition(v, an)).to_dict("records")
    for r in fm:
        r["mode"] = {"over_writing": "fills the slot with description",
                     "under_writing": "writes a short gist instead"}.get(r["mode"], r["mode"])
        r["rescues"] = f"{r['rescued']} of {r['models']}" if r["models"] else None
        if not r["fills"]:
            r["_why_fills"] = r["_why_rescues"] = "no failing model of this mode"
    return Table(
        "rescue-by-failure-mode", TITLES["rescue-by-failure-mode"],
        f"Failing models (undivided mean < {an.failing_recall}) by failure mode, with their "
        f"fills of the undivided ceiling, and how many the five-field arm rescued "
        f"(mean ≥ {an.rescued_recall}).",
        [Col("mode", "failure mode"), Col("fills", "fills", "pct"),
         Col("models", "models", "int"), Col("rescues", "partitioning rescues")], fm)


def t_separation(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    sep = A.separation(A.partition(v, an)).to_dict("records")
    for r in sep:
        cl = r["classification"]
        r["label"] = {"all": "all failing models",
                      "excluding_borderline": "excluding borderline models"}[cl]
        r["weight"] = nb.get(f"separation.weight[{cl}]")
        r["_why_weight"] = "separation not complete"
        r["_why_margin"] = "needs rescued and non-rescued models"
        if not r["rescued_fills"]:
            r["_why_rescued_fills"] = "none rescued"
        if not r["non_rescued_fills"]:
            r["_why_non_rescued_fills"] = "all rescued"
    return Table(
        "borderline-separation", TITLES["borderline-separation"],
        f"Fills of the undivided ceiling of rescued and non-rescued failing models. Margin: "
        f"lowest rescued fill minus highest non-rescued fill. Borderline: undivided mean "
        f"within {an.borderline_margin} of {an.failing_recall}. Weight: 1/C(n, k), the "
        "chance that the k non-rescued models are exactly the k lowest-fill ones under "
        "random assignment; a post-hoc split on a continuous variable weighs no more.",
        [Col("label", "classification"), Col("rescued_fills", "rescued fills", "pct"),
         Col("non_rescued_fills", "non-rescued fills", "pct"),
         Col("margin", "margin", "pts"), Col("weight", "1/C(n,k)", "pval")], sep)


def t_depth(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    d = A.depth(v, A.partition(v, an), an).to_dict("records")
    if not d:
        d = [{"_why_row": "no failing model left unrescued"}]
    return Table(
        "depth", TITLES["depth"],
        "Both arms of every failing model partitioning did not rescue, in the sweep its "
        "contrast was read from (the deepest): n, mean, rows ≥ 0.5, fill and how many fixed "
        "headings arrived, row by row.",
        [Col("model", "model"), Col("arm", "arm"), Col("n", "n", "int"),
         Col("mean", "mean", "p3", "no valid row"), Col("rows_ge_half", "rows ≥ 0.5", "int"),
         Col("fill", "fill", "pct", "no ceiling declared"),
         Col("headings", "headings carried")], d)


def t_headings(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    h = A.headings_vs_recall(v, an).to_dict("records")
    for r in h:
        r["_why_mean"] = "no row"
    notes = []
    if "headings.r" in nb:
        notes.append(f"Over all {nb['headings.n_rows']} valid rows with the count recorded, "
                     f"r = {nb['headings.r']:+.2f} (Pearson, headings carried vs recall).")
    return Table(
        "headings-vs-recall", TITLES["headings-vs-recall"],
        f"Within the single-field-schema arms ({', '.join(an.single_field_schema)}): recall "
        "by how many of the five fixed headings the final carry held. An association: "
        "headings carried is post-treatment.",
        [Col("headings", "headings that arrived", "int"), Col("rows", "rows", "int"),
         Col("mean", "mean recall", "p3"), Col("rows_ge_half", "rows ≥ 0.5", "int")], h, notes)


def t_headings_by_arm(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    h = A.headings_by_arm(v, an).to_dict("records")
    return Table(
        "headings-by-arm", TITLES["headings-by-arm"],
        "Valid rows of each arm by the number of fixed headings in the final carry: a "
        "five-field schema guarantees five; a single field leaves it to the model.",
        [Col("arm", "arm"), Col("rows", "rows", "int"),
         *[Col(f"h{i}", f"{i}", "int") for i in range(6)],
         Col("mean", "mean recall", "p3")], h)


def t_carrier(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers,
              checks: pd.DataFrame | None = None) -> Table:
    cc = A.carrier_crosstab(v, checks, an).to_dict("records") if checks is not None else []
    for r in cc:
        r["missed"] = f"{r['missed_rows']} ({r['missed_rows'] / r['rows']:.1%})"
        r["title"] = an.arm_title(r["arm"])
    notes = []
    if "carrier.rows" in nb:
        notes.append(f"Carrier and answer agree on {nb['carrier.agree_rows']} of "
                     f"{nb['carrier.rows']} valid rows; the answer was right about a value "
                     f"the carrier lacked on {nb['carrier.reverse_rows']} rows.")
    return Table(
        "carrier-crosstab", TITLES["carrier-crosstab"],
        "Per arm, valid rows in which the final carry held a graded value and the answer "
        "missed it (label-bound grader), and the reverse (answer right, carrier without it).",
        [Col("arm", "arm"), Col("title", "representation"), Col("rows", "rows", "int"),
         Col("missed", "carrier had it, answer missed it"),
         Col("missed_checks", "such checks", "int"),
         Col("reverse_rows", "answer right, carrier lacked it", "int")], cc, notes)


def t_abstention(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    ab = A.abstention(v, an).to_dict("records")
    for r in ab:
        r["title"] = an.arm_title(r["arm"])
        r["_why_stock_rows"] = "not recorded"
    return Table(
        "abstention-vs-fabrication", TITLES["abstention-vs-fabrication"],
        f"Failing rows (recall < {an.failing_recall}) by whether the answer holds any "
        "abstention marker, or fabricates with none; stock-signature rows gave at least one "
        "high-frequency stand-in value (stock port, placeholder host, example UUID, round "
        "time).",
        [Col("arm", "arm"), Col("title", "representation"),
         Col("failing_rows", "failing rows", "int"),
         Col("fabricates", "fabricates, no abstention", "int"),
         Col("abstains", "abstains somewhere", "int"),
         Col("stock_rows", "stock-signature rows", "int")], ab)


def t_finish(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    fr = A.finish_reasons(v, an).to_dict("records")
    for r in fr:
        if r["rows_with_ceiling"]:
            r["at_ceiling"] = f"{r['rows_at_ceiling']} of {r['rows_with_ceiling']}"
        r["_why_at_ceiling"] = "no ceiling declared"
    return Table(
        "finish-reasons", TITLES["finish-reasons"],
        "Folds of valid rows by how the call finished: a declared ceiling is a target when "
        "folds stop on their own, a bound when they hit the output limit. At ceiling: rows "
        f"whose carry filled at least {an.at_ceiling_fill:.1%} of the declared ceiling.",
        [Col("arm", "arm"), Col("rows", "rows", "int"), Col("folds", "folds", "int"),
         Col("stop", "stop", "int"), Col("length", "length", "int"),
         Col("other", "other", "int"), Col("at_ceiling", "rows at ceiling")], fr)


def t_parse(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    pf = A.parse_failures(v, an).to_dict("records")
    for r in pf:
        r["_why_mean_with_failure"] = "no such row"
        r["_why_mean_clean"] = "no such row"
    return Table(
        "parse-failures", TITLES["parse-failures"],
        "Per arm: folds whose reply did not parse, folds that parsed but broke the schema, "
        "the parse-failure rate per fold, and the recall of rows that carry a parse failure "
        "against clean rows of the same arm. Such rows are the arm's own behaviour: valid.",
        [Col("arm", "arm"), Col("folds", "folds", "int"),
         Col("parse_failures", "parse failures", "int"),
         Col("schema_invalid_folds", "schema-invalid folds", "int"),
         Col("rate", "rate", "pct", "no fold"),
         Col("rows_with_failure", "rows with one", "int"),
         Col("mean_with_failure", "their recall", "p3"),
         Col("rows_clean", "clean rows", "int"), Col("mean_clean", "clean recall", "p3")], pf)


def t_tokens(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    out = []
    for a, b in an.token_deltas:
        cell = f"{a}/{b}"
        out.append({"pair": f"{a} − {b}", "n": nb.get(f"tokens.delta.n_pairs[{cell}]"),
                    "models": nb.get(f"tokens.delta.n_models[{cell}]"),
                    "delta": _ci(nb, "tokens.delta", cell),
                    "_why_delta": "no block ran both", "_why_n": "none", "_why_models": "none"})
    return Table(
        "prompt-token-deltas", TITLES["prompt-token-deltas"],
        "Mean paired difference in prompt tokens per row (all folds), first arm minus second, "
        "over blocks where both ran validly, with a 95% bootstrap interval resampling blocks "
        "within model. Token counts may come from an estimator (rows.csv token_count_method).",
        [Col("pair", "pair"), Col("n", "blocks", "int"), Col("models", "models", "int"),
         Col("delta", "mean delta [95% CI]")], out)


def t_invalid(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    inv = A.invalid_reasons(rows).to_dict("records")
    if not inv:
        inv = [{"_why_row": "every row is valid"}]
    return Table(
        "invalid-rows", TITLES["invalid-rows"],
        "Invalid rows by arm and reason (the one validity rule, recorded in rows.csv). "
        "Catch-up is not retried and can correlate with arm: reported, not hidden.",
        [Col("arm", "arm"), Col("reason", "reason"), Col("rows", "rows", "int")], inv)


def t_inference(rows: pd.DataFrame, v: pd.DataFrame, an: Analysis, nb: Numbers) -> Table:
    """The study-wide inferential numbers with their denominators, in one place."""
    a, b = an.equivalence
    eq = f"{a}/{b}"
    icc_n = f"{nb.get('icc.n_rows')} rows × k = {nb.get('icc.k', 0):.2f}"
    no_icc = "fewer than 2 rows, or no variation in the checks"
    items = [  # what, key, format, denominator, why it can be missing
        ("ICC(1) of the binary checks grouped by row", "icc.value", "p3", icc_n, no_icc),
        ("design effect 1 + (k − 1) ICC", "icc.design_effect", "p3", icc_n, no_icc),
        ("checks a row is worth (k / design effect)", "icc.effective_n_per_row", "p3", icc_n,
         no_icc),
        ("headings carried vs recall, Pearson r", "headings.r", "signed3",
         f"{nb.get('headings.n_rows')} rows", "fewer than 3 rows, or a constant side"),
        ("fill vs recall across models, Pearson r", "fill.r", "signed3",
         f"{nb.get('fill.n_models')} models", "fewer than 3 models, or a constant side"),
        (f"{a} − {b}, paired", f"equivalence.diff[{eq}]", "signed3",
         f"{nb.get(f'equivalence.n_pairs[{eq}]')} blocks", f"no block ran both {a} and {b}"),
        (f"{a} − {b}, TOST p at ±{an.equivalence_margin}", f"equivalence.tost_p[{eq}]", "pval",
         "equivalent" if nb.get(f"equivalence.equivalent[{eq}]") else "not shown equivalent",
         "fewer than 2 pairs, or no variation"),
        ("separation weight 1/C(n,k), all failing models", "separation.weight[all]", "pval",
         f"{nb.get('separation.n_failing[all]')} failing models", "separation not complete"),
    ]
    out = []
    for what, key, kind, n, why in items:
        have = key in nb
        out.append({"what": what, "key": key, "value": fmt(nb.get(key), kind),
                    "n": n if have else None, "_why_value": why, "_why_n": "no statistic"})
    return Table(
        "inference", TITLES["inference"],
        "Inferential numbers with their denominators; keys are those of numbers.json.",
        [Col("what", "statistic"), Col("value", "value"), Col("n", "denominator"),
         Col("key", "numbers.json key")], out)


def t_probes(probes: pd.DataFrame | None) -> Table:
    if probes is None or probes.empty:
        return Table("probe-verdicts", TITLES["probe-verdicts"],
                     "One verdict per (model, endpoint): what the probe found before any fold.",
                     [Col("model", "model"), Col("verdict", "verdict")],
                     [{"_why_row": "no probes.csv in the evidence"}])
    # probe.py's summary columns; a package's probes.csv may carry fewer.
    cols = [c for c in ("model", "backend", "pin", "quantization", "verdict",
                        "responsible_parameter", "arms_allowed", "arms_forbidden")
            if c in probes.columns] or list(probes.columns)[:6]
    return Table("probe-verdicts", TITLES["probe-verdicts"],
                 "One verdict per (model, endpoint): the conjunction of model, endpoint and "
                 "request the probe measured, never the model alone.",
                 [Col(c, c, "str", "not recorded") for c in cols],
                 [{c: (r[c] or None) for c in cols} for r in probes.to_dict("records")])


def t_reasoning_parameter(probes: pd.DataFrame | None) -> Table:
    """Paper §4.2's verdict table: each gateway model under both request shapes."""
    title, name = TITLES["probe-reasoning-parameter"], "probe-reasoning-parameter"
    blurb = ("Each gateway model's verdict for one request shape with and without the "
             "reasoning-suppression parameter; the study sends it only to endpoints that "
             "declare reasoning (paper §4.2).")
    cols = [Col("model", "model"), Col("shape", "request"), Col("verdict", "verdict"),
            Col("study", "the study's request"), Col("probe_only", "probe only")]
    need = {"verdict_with_reasoning", "verdict_without_reasoning", "sends_reasoning"}
    if probes is None or not need <= set(probes.columns):
        return Table(name, title, blurb, cols,
                     [{"_why_row": "the probe verdicts hold no reasoning comparison"}])
    rows = []
    for r in probes.to_dict("records"):
        if not r["verdict_with_reasoning"]:
            continue  # not a gateway model, or it failed before any request
        sends = r["sends_reasoning"] == "true"
        for with_it in (True, False):
            rows.append({"model": r["model"],
                         "shape": "with reasoning parameter" if with_it else "without it",
                         "verdict": r["verdict_with_reasoning" if with_it
                                      else "verdict_without_reasoning"],
                         "study": "yes" if with_it == sends else "",
                         "probe_only": "yes" if r.get("probe_only") == "true" else ""})
    return Table(name, title, blurb, cols,
                 rows or [{"_why_row": "no gateway model was probed"}])


TABLES: list[Callable[..., Table]] = [
    t_recall_long, t_table1, t_ladder, t_iteration, t_capacity, t_ceiling, t_fill_modes,
    t_partition, t_rescue, t_separation, t_depth, t_headings, t_headings_by_arm, t_carrier,
    t_abstention, t_finish, t_parse, t_tokens, t_invalid, t_inference,
]


def build_tables(rows: pd.DataFrame, checks: pd.DataFrame, numbers: Numbers, an: Analysis,
                 probes: pd.DataFrame | None = None) -> list[Table]:
    """Every table, in reading order: pure, so a test can inspect any cell."""
    v = A.valid_rows(rows)
    out = []
    for make in TABLES:
        t = (make(rows, v, an, numbers, checks=checks) if make is t_carrier
             else make(rows, v, an, numbers))
        if not t.rows:  # a table with no row still says why
            t.rows = [{"_why_row": "no valid row for this table"}]
        out.append(t)
    out.append(t_probes(probes))
    out.append(t_reasoning_parameter(probes))
    return out


def write_tables(rows_csv: str | Path, checks_csv: str | Path, numbers_json: str | Path,
                 probes: list[str], an: Analysis, template_dir: str | Path,
                 out_dir: str | Path) -> list[str]:
    """Every table as .md, .tex and .csv, plus an index.

    rows/checks were checked against the manifest by rule stats; here only the columns.
    """
    rows = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    checks = read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED)
    numbers = read_json(numbers_json)
    tables = build_tables(rows, checks, numbers, an, load_probes(probes[0]) if probes else None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tdir = Path(template_dir)
    for t in tables:
        ctx = {"t": t, "cells": t.cells()}
        (out / f"{t.name}.md").write_text(render(tdir, "table.md.j2", **ctx), encoding="utf-8")
        (out / f"{t.name}.tex").write_text(render(tdir, "table.tex.j2", **ctx),
                                           encoding="utf-8")
        t.frame().to_csv(out / f"{t.name}.csv", index=False, lineterminator="\n",
                         float_format="%.6g")
    (out / "index.md").write_text(render(tdir, "index.md.j2", tables=tables),
                                  encoding="utf-8")
    return [t.name for t in tables]


def tables_stage(input: Any, output: Any, params: Any) -> list[str]:
    """Rule tables: results/tables/ (the templates are the rule's inputs)."""
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    return write_tables(input.rows, input.checks, input.numbers, list(input.probes),
                        Analysis.load(input.analysis, input.arms),
                        Path(input.templates[0]).parent, output.tables)
