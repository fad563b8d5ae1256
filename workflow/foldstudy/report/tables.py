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
from ..analysis.scopes import Group, Scopes
from ..evidence import columns
from ..evidence.load import load_probes, read_artifact
from ..evidence.provenance import check_same_study
from ..io import read_csv, read_json
from .titles import TABLE_TITLES as TITLES

Numbers = dict[str, float | int]
DASH = "—"

def recall_by_model_arm(rows: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Recall per (sweep, model, arm) over valid rows, with denominators (DESIGN §8): one
    line per sweep, never pooled across sweeps (paper §4.7).

    Rows are near-binary (paper §4), so a mean stands for a small count: n_valid,
    rows_full and rows_ge_half travel with every mean. The counts are cell_summary's,
    the one function numbers.json's recall keys read (row_recalled of analysis.yaml).
    """
    out = []
    for (sweep, model, arm), g in rows.groupby(["sweep", "model", "arm"], sort=True):
        v = A.valid_rows(g)
        s = A.cell_summary(v, an.row_recalled)
        out.append({
            "sweep": sweep, "model": model, "arm": arm,
            "n_valid": s["n"],
            "mean_recall": round(s["mean"], 6) if s["n"] else None,
            "rows_full": s["rows_full"],
            "rows_ge_half": s["rows_ge_half"],
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
    if kind == "signed_pct":
        return f"{100 * float(x):+.0f}%"
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


@dataclass(frozen=True)
class Ctx:
    """What every table reads: the evidence, its valid rows, the plan, numbers.json and
    the study config's scopes (which sweeps, and models, each table reads)."""

    rows: pd.DataFrame
    v: pd.DataFrame
    checks: pd.DataFrame
    an: Analysis
    nb: Numbers
    sc: Scopes

    def groups(self, analysis: str, primary: bool = False
               ) -> list[tuple[Group, pd.DataFrame]]:
        out = []
        for g, vg in self.sc.select(analysis, self.v):
            if primary:
                vg = vg[vg["scenario"] == self.an.primary_scenario]
            out.append((g, vg))
        return out

    def reads(self, analysis: str) -> str:
        """The caption's sentence on what the table reads (its scope, in words)."""
        return (f" Reads {self.sc.describe()[analysis]} (scope `{analysis}` of the study "
                "config); the sweep column names the sweep, or the sweeps pooled, of each "
                "line.")


SWEEP = Col("sweep", "sweep")


def _note(g: Group, text: str) -> str:
    return f"{g.label}: {text}" if g.qualified else text


def _fisher_reading(nb: Numbers, key: str, a: str, b: str, alpha: float) -> str | None:
    """The sentence a Fisher test supports, generated from its counts: the direction of
    the point estimate and whether the test separates the two at alpha."""
    if f"{key}.p" not in nb:
        return None
    ra, rb = nb[f"{key}.a"] / nb[f"{key}.n1"], nb[f"{key}.b"] / nb[f"{key}.n2"]
    way = ("a higher" if rb > ra else "a lower" if rb < ra else "the same")
    sig = ("the difference is significant" if nb[f"{key}.p"] < alpha
           else "the test does not separate them")
    return f"{b} recalled {way} share of rows than {a} ({_fisher_text(nb, key)}; {sig} at {alpha})"


# ------------------------------------------------------------------------ the tables

def t_recall_long(c: Ctx) -> Table:
    df = recall_by_model_arm(c.rows, c.an)
    recs = df.to_dict("records")
    return Table(
        "recall-by-model-arm", TITLES["recall-by-model-arm"],
        "Mean label-bound recall over valid rows of each (sweep, model, arm), one line per "
        "sweep, never pooled across sweeps. Rows are near-binary, so each mean comes with "
        "its denominators: n valid rows, rows with recall 1, rows with recall at least "
        f"{c.an.row_recalled}. Invalid rows are counted, never averaged.",
        [SWEEP, Col("model", "model"), Col("arm", "arm"),
         Col("n_valid", "n", "int"), Col("mean_recall", "mean recall", "p3", "no valid row"),
         Col("rows_full", "full", "int"), Col("rows_ge_half", f"≥{c.an.row_recalled}", "int"),
         Col("n_invalid", "invalid", "int")],
        recs, csv=df)


def t_table1(c: Ctx) -> Table:
    an = c.an
    out = []
    arms_seen: set[str] = set()
    per_group = []
    for g, vg in c.groups("table1", primary=True):
        cells = A.recall_cells(vg, an)
        arms_seen |= set(cells["arm"])
        per_group.append((g, cells))
    arms = _arm_order(an, arms_seen)
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
    return Table(
        "table1-recall-model-arm", TITLES["table1-recall-model-arm"],
        f"Mean recall over the valid rows of the {an.primary_scenario} scenario, with the "
        "number of valid rows in brackets." + c.reads("table1") + " Arms: "
        + "; ".join(f"{a} {an.arm_title(a)}" for a in arms) + ".",
        [SWEEP, Col("model", "model"), *[Col(a, a, "str", "not run") for a in arms]],
        out, csv=csv)


def t_ladder(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    out, notes = [], []
    for g, vg in c.groups("ladder"):
        lad = A.ladder(vg, an)
        for i, r in lad.iterrows():
            arm, prev = r["arm"], (an.ladder[i - 1] if i else None)
            out.append({
                "sweep": g.label, "arm": arm, "change": an.arm_title(arm), "n": r["n"],
                "mean": r["mean"], "rows_full": r["rows_full"],
                "effect": _ci(nb, "ladder.effect", g.cell(arm, prev)) if prev else None,
                "_why_effect": "first rung" if not prev else "no paired block",
                "fisher": nb.get(f"ladder.fisher_full[{g.cell(prev, arm)}].p") if prev else None,
                "_why_fisher": "first rung" if not prev else "no rows"})
        last = an.ladder[-2:]
        t = _fisher_reading(nb, f"ladder.fisher_full[{g.cell(*last)}]", last[0], last[1],
                            an.alpha)
        if t:
            notes.append(_note(g, f"Full-recall rows: {t}."))
    return Table(
        "ladder", "The " + " → ".join(an.ladder) + " ladder",
        "Rungs share one system prompt and each moves one thing. Read within one design: "
        "only (sweep, model) cells that ran every rung. Effect: mean paired difference to "
        "the previous rung over blocks where both ran (a block never spans two sweeps), "
        "with a 95% bootstrap interval resampling blocks within model. Fisher: full-recall "
        "rows against the previous rung." + c.reads("ladder"),
        [SWEEP, Col("arm", "rung"), Col("change", "change"), Col("n", "n", "int"),
         Col("mean", "mean recall", "p3", "no valid row"), Col("rows_full", "full", "int"),
         Col("effect", "effect [95% CI]"), Col("fisher", "Fisher p (full)", "pval")],
        out, notes)


def t_iteration(c: Ctx) -> Table:
    out = []
    for g, vg in c.groups("iteration"):
        out += [{**r, "sweep": g.label, "title": c.an.arm_title(r["arm"])}
                for r in A.iteration(vg, c.an).to_dict("records")]
    return Table(
        "iteration", TITLES["iteration"],
        "Mean recall and valid rows per arm on each scenario, over the models measured on "
        "the single-chunk scenario. The scenarios differ in graded facts (7 against 14) as "
        "well as in iteration: a contrast of scenarios, not of one factor." + c.reads(
            "iteration"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"),
         Col("single_n", "n (one chunk)", "int"),
         Col("single_mean", "one chunk", "p3", "not run"),
         Col("distributed_n", "n (distributed)", "int"),
         Col("distributed_mean", "distributed", "p3", "not run")], out)


def t_capacity(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    a, b = an.ceiling_pair
    cap, notes = [], []
    for g, vg in c.groups("capacity"):
        for r in A.capacity(vg, an).to_dict("records"):
            r["sweep"] = g.label
            r["clipped"] = f"{r['folds_clipped']} of {r['folds']}" if r["folds"] else None
            if not r["n"]:  # a count over no rows is not a zero
                r["rows_recalled"] = r["nonconforming_folds"] = None
            r["title"] = an.arm_title(r["arm"])
            cap.append(r)
        t = _fisher_reading(nb, f"capacity.fisher_recalled[{g.cell(a, b)}]", a, b, an.alpha)
        if t:
            notes.append(_note(g, f"Ceiling halved (models that ran both): {t}."))
        fa, fb = "+".join(an.representation_failing), "+".join(an.representation_healthy)
        t = _fisher_reading(nb, g.key("capacity.fisher_representation"), fa, fb, an.alpha)
        if t:
            notes.append(_note(g, f"Representation: {t}."))
    return Table(
        "capacity", TITLES["capacity"],
        "The capacity channel manipulated directly, in the (sweep, model) cells that ran a "
        "manipulation: declared ceiling halved (t) and carry cap reduced (u). Rows "
        f"recalled: recall ≥ {an.row_recalled}. Carried chars: mean over rows of the mean "
        "carry per fold. Non-conforming: folds that failed to parse or broke the schema."
        + c.reads("capacity"),
        [SWEEP, Col("arm", "arm"), Col("title", "change"), Col("n", "n", "int"),
         Col("rows_recalled", "rows recalled", "int"),
         Col("mean", "mean", "p3", "not run"),
         Col("carried_chars", "carried chars", "chars", "not run"),
         Col("clipped", "folds clipped at cap", "str", "not run"),
         Col("nonconforming_folds", "non-conforming folds", "int")], cap, notes)


def t_ceiling(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    a, b = an.ceiling_pair
    df, notes = [], []
    for g, vg in c.groups("ceiling"):
        for r in A.ceiling_replication(vg, an).to_dict("records"):
            r["sweep"] = g.label
            r["a"] = f"{r['a_recalled']}/{r['a_n']} rows"
            r["b"] = f"{r['b_recalled']}/{r['b_n']} rows"
            df.append(r)
        t = _fisher_reading(nb, f"ceiling.fisher_recalled[{g.cell(a, b)}]", a, b, an.alpha)
        if t:
            notes.append(_note(g, f"Over the models that ran both: {t}."))
    if not df:
        df = [{"_why_row": f"no model ran both {a} and {b}"}]
    return Table(
        "ceiling-replication", TITLES["ceiling-replication"],
        f"Rows recalled (recall ≥ {an.row_recalled}) of valid rows on the undivided arm at "
        f"its ceiling ({a}) and at half of it ({b}), per model that ran both; {a} fill is "
        "the share of its declared ceiling the carrier used." + c.reads("ceiling"),
        [SWEEP, Col("model", "model"), Col("a", f"{a} ceiling"), Col("b", f"{b} halved ceiling"),
         Col("a_fill", f"{a} fill", "pct", "no ceiling declared"),
         Col("b_fill", f"{b} fill", "pct", "no ceiling declared")], df, notes)


def _partition_groups(c: Ctx) -> list[tuple[Group, pd.DataFrame]]:
    return [(g, A.partition(vg, c.an)) for g, vg in c.groups("partition")]


def t_partition(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    part, notes = [], []
    for g, pg in _partition_groups(c):
        for r in pg.to_dict("records"):
            r["sweep"] = r["sweep"] if not g.qualified else g.label
            r["j"] = f"{r['j_mean']:.3f} ({r['j_n']})"
            r["q"] = f"{r['q_mean']:.3f} ({r['q_n']})"
            r["class"] = A.partition_class(r)
            part.append(r)
        if g.key("partition.n_models") in nb:
            notes.append(_note(g, (
                f"The undivided arm's mean is below {an.failing_recall} on "
                f"{nb[g.key('partition.n_failing')]} of {nb[g.key('partition.n_models')]} "
                f"models; the five-field arm reaches {an.rescued_recall} on "
                f"{nb[g.key('partition.n_rescued')]} of those.")))
            if g.key("partition.mean_gap_working") in nb:
                notes.append(_note(g, (
                    f"Where the undivided arm's mean reaches {an.failing_recall} "
                    f"({nb[g.key('partition.n_working')]} models) the five-field arm's mean "
                    f"differs from it by {nb[g.key('partition.mean_gap_working')]:+.3f} on "
                    "average.")))
    return Table(
        "partition", TITLES["partition"],
        f"Undivided ({an.undivided}) against five named fields ({an.divided}) at the same "
        "declared capacity, each model's pair from one sweep (paper §4.7: never pooled "
        "across runs), ordered by the undivided arm; valid rows in brackets. j fill: share "
        "of the declared ceiling the undivided carrier used." + c.reads("partition"),
        [Col("model", "model"), SWEEP, Col("j", f"{an.undivided} undivided"),
         Col("q", f"{an.divided} five fields"), Col("gap", "gap", "signed3"),
         Col("j_fill", f"{an.undivided} fill", "pct", "no ceiling declared"),
         Col("class", "class")], part, notes,
        csv=pd.DataFrame(part, columns=columns.PARTITION_TABLE))


def t_fill_modes(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    part, notes = [], []
    for g, pg in _partition_groups(c):
        for r in pg.to_dict("records"):
            r["sweep"] = g.label
            r["mode"] = r["mode"].replace("_", "-")
            part.append(r)
    for g, _ in c.groups("fill"):
        if g.key("fill.r") in nb:
            lo, hi = nb.get(g.key("fill.ci_low")), nb.get(g.key("fill.ci_high"))
            ci = f", 95% CI [{lo:+.2f}, {hi:+.2f}]" if lo is not None else ""
            notes.append(_note(g, f"Fill against recall of the undivided arm, one point per "
                                  f"measured model (scope `fill`): r = "
                                  f"{nb[g.key('fill.r')]:+.2f}{ci} over "
                                  f"{nb[g.key('fill.n_models')]} models."))
    return Table(
        "fill-and-failure-modes", TITLES["fill-and-failure-modes"],
        f"Per model: valid rows, mean carried chars and fill of the undivided arm "
        f"({an.undivided}), its recall, and the failure mode of a failing model: "
        f"over-writing when fill ≥ {an.failure_mode_fill_split:.0%}, under-writing below."
        + c.reads("partition"),
        [SWEEP, Col("model", "model"), Col("j_n", "rows", "int"),
         Col("j_carried_chars", "carried chars", "chars", "not recorded"),
         Col("j_fill", "fill of ceiling", "pct", "no ceiling declared"),
         Col("j_mean", "recall", "p3"), Col("mode", "failure mode")], part, notes)


def t_rescue(c: Ctx) -> Table:
    an = c.an
    fm, notes = [], []
    for g, pg in _partition_groups(c):
        recs = A.failure_modes(pg).to_dict("records")
        for r in recs:
            r["sweep"] = g.label
            r["mode_name"] = r["mode"].replace("_", "-")
            r["rescues"] = f"{r['rescued']} of {r['models']}" if r["models"] else None
            if not r["fills"]:
                r["_why_fills"] = r["_why_rescues"] = "no failing model of this mode"
            fm.append(r)
        said = [f"{r['rescued']} of {r['models']} {r['mode_name']} failing models"
                for r in recs if r["models"]]
        if said:
            notes.append(_note(g, "The five-field arm reached the rescue threshold on "
                                  + " and ".join(said) + "."))
    return Table(
        "rescue-by-failure-mode", TITLES["rescue-by-failure-mode"],
        f"Failing models (undivided mean < {an.failing_recall}) by failure mode (over-writing: "
        f"undivided fill ≥ {an.failure_mode_fill_split:.0%}; under-writing: below), with "
        "their fills of the undivided ceiling, and how many reach "
        f"{an.rescued_recall} on the five-field arm." + c.reads("partition"),
        [SWEEP, Col("mode_name", "failure mode"), Col("fills", "fills", "pct"),
         Col("models", "models", "int"), Col("rescues", "rescued by five fields")], fm, notes)


def t_separation(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    sep = []
    for g, pg in _partition_groups(c):
        for r in A.separation(pg).to_dict("records"):
            cl = r["classification"]
            r["sweep"] = g.label
            r["label"] = {"all": "all failing models",
                          "excluding_borderline": "excluding borderline models"}[cl]
            r["weight"] = nb.get(f"separation.weight[{g.cell(cl)}]")
            r["_why_weight"] = "separation not complete"
            r["_why_margin"] = "needs rescued and non-rescued models"
            if not r["rescued_fills"]:
                r["_why_rescued_fills"] = "none rescued"
            if not r["non_rescued_fills"]:
                r["_why_non_rescued_fills"] = "all rescued"
            sep.append(r)
    return Table(
        "borderline-separation", TITLES["borderline-separation"],
        f"Fills of the undivided ceiling of rescued and non-rescued failing models. Margin: "
        f"lowest rescued fill minus highest non-rescued fill. Borderline: undivided mean "
        f"within {an.borderline_margin} of {an.failing_recall}. Weight: 1/C(n, k), the "
        "chance that the k non-rescued models are exactly the k lowest-fill ones under "
        "random assignment; a post-hoc split on a continuous variable weighs no more."
        + c.reads("partition"),
        [SWEEP, Col("label", "classification"), Col("rescued_fills", "rescued fills", "pct"),
         Col("non_rescued_fills", "non-rescued fills", "pct"),
         Col("margin", "margin", "pts"), Col("weight", "1/C(n,k)", "pval")], sep)


def t_depth(c: Ctx) -> Table:
    d = []
    for g, vg in c.groups("depth"):
        d += [{**r, "sweep": r["sweep"] if not g.qualified else g.label}
              for r in A.depth(vg, c.an).to_dict("records")]
    if not d:
        d = [{"_why_row": "no model of the depth scope ran both arms"}]
    return Table(
        "depth", TITLES["depth"],
        "Both arms of every model of the depth scope, from that scope's rows alone (never "
        f"merged with the partition table): n, mean, rows ≥ {c.an.row_recalled}, fill, how "
        "many fixed headings arrived row by row, and the class those rows give the model."
        + c.reads("depth"),
        [SWEEP, Col("model", "model"), Col("arm", "arm"), Col("n", "n", "int"),
         Col("mean", "mean", "p3", "no valid row"),
         Col("rows_ge_half", f"rows ≥ {c.an.row_recalled}", "int"),
         Col("fill", "fill", "pct", "no ceiling declared"),
         Col("headings", "headings carried"), Col("class", "class")], d)


def t_headings(c: Ctx) -> Table:
    an, nb = c.an, c.nb
    h, notes = [], []
    for g, vg in c.groups("headings"):
        for r in A.headings_vs_recall(vg, an).to_dict("records"):
            h.append({**r, "sweep": g.label, "_why_mean": "no row"})
        if g.key("headings.r") in nb:
            notes.append(_note(g, (
                f"Over all {nb[g.key('headings.n_rows')]} valid rows with the count recorded, "
                f"r = {nb[g.key('headings.r')]:+.2f} (Pearson, headings carried vs recall; "
                f"95% CI [{nb.get(g.key('headings.ci_low'), float('nan')):+.2f}, "
                f"{nb.get(g.key('headings.ci_high'), float('nan')):+.2f}]).")))
    return Table(
        "headings-vs-recall", TITLES["headings-vs-recall"],
        f"Within the single-field-schema arms ({', '.join(an.single_field_schema)}): recall "
        "by how many of the five fixed headings the final carry held. An association: "
        "headings carried is post-treatment." + c.reads("headings"),
        [SWEEP, Col("headings", "headings that arrived", "int"), Col("rows", "rows", "int"),
         Col("mean", "mean recall", "p3"),
         Col("rows_ge_half", f"rows ≥ {an.row_recalled}", "int")], h, notes)


def t_headings_within_model(c: Ctx) -> Table:
    h = []
    for g, vg in c.groups("headings"):
        h += [{**r, "sweep": g.label} for r in A.headings_within_model(vg, c.an).to_dict(
            "records")]
    if not h:
        h = [{"_why_row": f"no model's {c.an.undivided} rows differ in headings carried"}]
    return Table(
        "headings-within-model", TITLES["headings-within-model"],
        f"Per model whose undivided-arm ({c.an.undivided}) rows differ in how many fixed "
        "headings arrived: recall by headings carried, within that one model. An "
        "association: headings carried is post-treatment." + c.reads("headings"),
        [SWEEP, Col("model", "model"), Col("headings", "headings that arrived", "int"),
         Col("n", "rows", "int"), Col("mean", "mean recall", "p3"),
         Col("rows_ge_half", f"rows ≥ {c.an.row_recalled}", "int")], h)


def t_headings_by_arm(c: Ctx) -> Table:
    h = []
    for g, vg in c.groups("headings"):
        h += [{**r, "sweep": g.label} for r in A.headings_by_arm(vg, c.an).to_dict("records")]
    return Table(
        "headings-by-arm", TITLES["headings-by-arm"],
        "Valid rows of each arm by the number of fixed headings in the final carry."
        + c.reads("headings"),
        [SWEEP, Col("arm", "arm"), Col("rows", "rows", "int"),
         *[Col(f"h{i}", f"{i}", "int") for i in range(6)],
         Col("mean", "mean recall", "p3")], h)


def t_carrier(c: Ctx) -> Table:
    nb = c.nb
    cc, notes = [], []
    for g, vg in c.groups("carrier"):
        for r in A.carrier_crosstab(vg, c.checks, c.an).to_dict("records"):
            r["sweep"] = g.label
            r["missed"] = f"{r['missed_rows']} ({r['missed_rows'] / r['rows']:.1%})"
            r["title"] = c.an.arm_title(r["arm"])
            cc.append(r)
        if g.key("carrier.rows") in nb:
            notes.append(_note(g, (
                f"Carrier and answer agree on {nb[g.key('carrier.agree_rows')]} of "
                f"{nb[g.key('carrier.rows')]} valid rows; the carrier held a value the answer "
                f"missed on {nb[g.key('carrier.missed_rows')]} rows, and the answer was right "
                f"about a value the carrier lacked on {nb[g.key('carrier.reverse_rows')]}.")))
        if g.key("grader.rows") in nb:
            notes.append(_note(g, (
                f"Label-bound and presence grading of the answer agree on "
                f"{nb[g.key('grader.agree_rows')]} of {nb[g.key('grader.rows')]} valid "
                f"{c.an.primary_scenario} rows.")))
    return Table(
        "carrier-crosstab", TITLES["carrier-crosstab"],
        "Per arm, valid rows in which the final carry held a graded value and the answer "
        "missed it (label-bound grader), and the reverse (answer right, carrier without it)."
        + c.reads("carrier"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"), Col("rows", "rows", "int"),
         Col("missed", "carrier had it, answer missed it"),
         Col("missed_checks", "such checks", "int"),
         Col("reverse_rows", "answer right, carrier lacked it", "int")], cc, notes)


def t_abstention(c: Ctx) -> Table:
    ab, notes = [], []
    for g, vg in c.groups("abstention"):
        recs = A.abstention(vg, c.an).to_dict("records")
        for r in recs:
            r["sweep"] = g.label
            r["title"] = c.an.arm_title(r["arm"])
            r["_why_stock_rows"] = "not recorded"
            ab.append(r)
        if recs:
            fab = sum(r["fabricates"] for r in recs)
            tot = sum(r["failing_rows"] for r in recs)
            notes.append(_note(g, f"{fab} of {tot} failing rows hold no abstention marker "
                                  f"anywhere in the answer; {tot - fab} hold one."))
    return Table(
        "abstention-vs-fabrication", TITLES["abstention-vs-fabrication"],
        f"Failing rows (recall < {c.an.failing_recall}) by whether the answer holds any "
        "abstention marker, or fabricates with none; stock-signature rows gave at least one "
        "high-frequency stand-in value (stock port, placeholder host, example UUID, round "
        "time)." + c.reads("abstention"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"),
         Col("failing_rows", "failing rows", "int"),
         Col("fabricates", "fabricates, no abstention", "int"),
         Col("abstains", "abstains somewhere", "int"),
         Col("stock_rows", "stock-signature rows", "int")], ab, notes)


def t_finish(c: Ctx) -> Table:
    fr = []
    for g, vg in c.groups("finish"):
        for r in A.finish_reasons(vg, c.an).to_dict("records"):
            r["sweep"] = g.label
            if r["rows_with_ceiling"]:
                r["at_ceiling"] = f"{r['rows_at_ceiling']} of {r['rows_with_ceiling']}"
            r["_why_at_ceiling"] = "no ceiling declared"
            fr.append(r)
    return Table(
        "finish-reasons", TITLES["finish-reasons"],
        "Folds of valid rows by how the call finished: stop (the model ended the fold) or "
        "length (it hit the output limit). At ceiling: rows whose carry filled at least "
        f"{c.an.at_ceiling_fill:.1%} of the declared ceiling." + c.reads("finish"),
        [SWEEP, Col("arm", "arm"), Col("rows", "rows", "int"), Col("folds", "folds", "int"),
         Col("stop", "stop", "int"), Col("length", "length", "int"),
         Col("other", "other", "int"), Col("at_ceiling", "rows at ceiling")], fr)


def t_parse(c: Ctx) -> Table:
    pf = []
    for g, vg in c.groups("parse"):
        for r in A.parse_failures(vg, c.an).to_dict("records"):
            pf.append({**r, "sweep": g.label, "_why_mean_with_failure": "no such row",
                       "_why_mean_clean": "no such row"})
    return Table(
        "parse-failures", TITLES["parse-failures"],
        "Per arm: folds whose reply did not parse, folds that parsed but broke the schema, "
        "the parse-failure rate per fold, and the recall of rows that carry a parse failure "
        "against clean rows of the same arm. Such rows are the arm's own behaviour: valid, "
        "and in the means." + c.reads("parse"),
        [SWEEP, Col("arm", "arm"), Col("folds", "folds", "int"),
         Col("parse_failures", "parse failures", "int"),
         Col("schema_invalid_folds", "schema-invalid folds", "int"),
         Col("rate", "rate", "pct", "no fold"),
         Col("rows_with_failure", "rows with one", "int"),
         Col("mean_with_failure", "their recall", "p3"),
         Col("rows_clean", "clean rows", "int"), Col("mean_clean", "clean recall", "p3")], pf)


def t_tokens(c: Ctx) -> Table:
    out = []
    for g, _ in c.groups("tokens"):
        for a, b in c.an.token_deltas:
            cell = g.cell(a, b)
            described = (a, b) == c.an.described
            out.append({"sweep": g.label, "pair": f"{a} − {b}",
                        "n": c.nb.get(f"tokens.delta.n_pairs[{cell}]"),
                        "models": c.nb.get(f"tokens.delta.n_models[{cell}]"),
                        "delta": _ci(c.nb, "tokens.delta", cell),
                        "expected": c.nb.get(f"tokens.expected_delta[{cell}]"),
                        "_why_delta": "no block ran both", "_why_n": "none",
                        "_why_models": "none",
                        "_why_expected": "no block ran both" if described else
                        "adds no description"})
    return Table(
        "prompt-token-deltas", TITLES["prompt-token-deltas"],
        "Mean paired difference in prompt tokens per row (all folds), first arm minus second, "
        "over blocks where both ran validly, with a 95% bootstrap interval resampling blocks "
        "within model. Token counts may come from an estimator (rows.csv token_count_method). "
        f"'If delivered' is the delta {c.an.described[0]}'s field description would add had "
        "it reached the model on every fold (its characters / 4 per token x folds, §4.3)."
        + c.reads("tokens"),
        [SWEEP, Col("pair", "pair"), Col("n", "blocks", "int"), Col("models", "models", "int"),
         Col("delta", "mean delta [95% CI]"), Col("expected", "if delivered", "chars")], out)


def t_invalid(c: Ctx) -> Table:
    inv = A.invalid_reasons(c.rows).to_dict("records")
    if not inv:
        inv = [{"_why_row": "every row is valid"}]
    return Table(
        "invalid-rows", TITLES["invalid-rows"],
        "Invalid rows by arm and reason (the one validity rule, recorded in rows.csv). "
        "Catch-up is not retried and can correlate with arm: reported, not hidden.",
        [Col("arm", "arm"), Col("reason", "reason"), Col("rows", "rows", "int")], inv)


def t_inference(c: Ctx) -> Table:
    """The study-wide inferential numbers with their denominators, in one place."""
    an, nb = c.an, c.nb
    a, b = an.equivalence
    out = []
    no_icc = "fewer than 2 rows, or no variation in the checks"

    def ci(key: str, lo: str, hi: str) -> str:
        if lo in nb and hi in nb:
            return f"{fmt(nb[key], 'p3')} [{nb[lo]:.3f}, {nb[hi]:.3f}]"
        return fmt(nb.get(key), "p3") or ""

    for g, _ in c.groups("icc"):
        icc_n = f"{nb.get(g.key('icc.n_rows'))} rows × k = {nb.get(g.key('icc.k'), 0):.2f}"
        for what, key in (("ICC(1) of the binary checks grouped by row", "icc.value"),
                          ("design effect 1 + (k − 1) ICC", "icc.design_effect"),
                          ("checks a row is worth (k / design effect)",
                           "icc.effective_n_per_row")):
            k = g.key(key)
            lo, hi = (g.key("icc.ci_low"), g.key("icc.ci_high")) if key == "icc.value" else (
                g.key(f"{key}_ci_low"), g.key(f"{key}_ci_high"))
            out.append({"sweep": g.label, "what": what + " [95% CI, exact F]", "key": k,
                        "value": ci(k, lo, hi) if k in nb else None,
                        "n": icc_n if k in nb else None, "_why_value": no_icc})
    for scope, name, what, unit in (("headings", "headings", "headings carried vs recall", "rows"),
                                    ("partition", "fill", "fill vs recall across models",
                                     "models")):
        for g, _ in c.groups(scope):
            k = g.key(f"{name}.r")
            n = nb.get(g.key(f"{name}.n_rows" if name == "headings" else f"{name}.n_models"))
            out.append({"sweep": g.label, "what": f"{what}, Pearson r [95% CI, Fisher z]",
                        "key": k, "value": ci(k, g.key(f"{name}.ci_low"),
                                              g.key(f"{name}.ci_high")) if k in nb else None,
                        "n": f"{n} {unit}" if k in nb else None,
                        "_why_value": f"fewer than 3 {unit}, or a constant side"})
    for g, _ in c.groups("equivalence"):
        eq = g.cell(a, b)
        out.append({"sweep": g.label, "what": f"{a} − {b}, paired",
                    "key": f"equivalence.diff[{eq}]",
                    "value": fmt(nb.get(f"equivalence.diff[{eq}]"), "signed3"),
                    "n": f"{nb.get(f'equivalence.n_pairs[{eq}]')} blocks",
                    "_why_value": f"no block ran both {a} and {b}"})
        out.append({"sweep": g.label, "what": f"{a} − {b}, TOST p at ±{an.equivalence_margin}",
                    "key": f"equivalence.tost_p[{eq}]",
                    "value": fmt(nb.get(f"equivalence.tost_p[{eq}]"), "pval"),
                    "n": "equivalent" if nb.get(f"equivalence.equivalent[{eq}]")
                    else "not shown equivalent",
                    "_why_value": "fewer than 2 pairs, or no variation"})
    for g, _ in c.groups("partition"):
        k, nk = (f"separation.{x}[{g.cell('all')}]" for x in ("weight", "n_failing"))
        out.append({"sweep": g.label, "what": "separation weight 1/C(n,k), all failing models",
                    "key": k, "value": fmt(nb.get(k), "pval"),
                    "n": f"{nb.get(nk)} failing models",
                    "_why_value": "separation not complete"})
        cell = g.cell(an.divided, an.undivided)
        k = f"partition.carried_less[{cell}]"
        out.append({"sweep": g.label,
                    "what": f"text carried, {an.divided} against {an.undivided} (share less)",
                    "key": k, "value": fmt(nb.get(k), "pct"),
                    "n": f"{nb.get(f'partition.carried_pairs[{cell}]')} paired blocks",
                    "_why_value": f"no block ran both {an.divided} and {an.undivided}"})
    for r in out:
        if r["value"] is None:
            r["n"] = None
        r["_why_n"] = "no statistic"
    return Table(
        "inference", TITLES["inference"],
        "Inferential numbers with their denominators and intervals; keys are those of "
        "numbers.json. Each reads the scope its section names in the study config.",
        [SWEEP, Col("what", "statistic"), Col("value", "value"), Col("n", "denominator"),
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


def t_chars_per_token(measured: pd.DataFrame | None) -> Table:
    """Paper §6: "We report the measured per-class ratios rather than a single
    multiplier" (run/tokens.py measures them)."""
    cols = [Col("model", "tokenizer of"), Col("text_class", "text"),
            Col("items", "items", "int"), Col("chars", "chars", "int"),
            Col("tokens", "tokens", "int"), Col("chars_per_token", "chars/token", "p3"),
            Col("estimate_error", "estimator (4 chars/token) off by", "signed_pct")]
    blurb = ("Each fact class's planted values (each distinct value on its own) and the "
             "session's prose (the chunks with every planted value cut out), counted by the "
             "exact tokenizer of each study model that has one. The estimator divides "
             "characters by 4: a negative error is an undercount. Gateway models count by "
             "the estimator, so they have no row.")
    if measured is None:
        why = "not measured here: an evidence package carries no fixtures"
    elif measured.empty:
        why = "no study model counts tokens exactly (every one uses the estimator)"
    else:
        return Table("chars-per-token", TITLES["chars-per-token"], blurb, cols,
                     measured.to_dict("records"))
    return Table("chars-per-token", TITLES["chars-per-token"], blurb, cols,
                 [{"_why_row": why}])


TABLES: list[Callable[[Ctx], Table]] = [
    t_recall_long, t_table1, t_ladder, t_iteration, t_capacity, t_ceiling, t_fill_modes,
    t_partition, t_rescue, t_separation, t_depth, t_headings, t_headings_within_model,
    t_headings_by_arm, t_carrier, t_abstention, t_finish, t_parse, t_tokens, t_invalid,
    t_inference,
]


def build_tables(rows: pd.DataFrame, checks: pd.DataFrame, numbers: Numbers, an: Analysis,
                 probes: pd.DataFrame | None = None, scopes: Scopes | None = None,
                 token_classes: pd.DataFrame | None = None) -> list[Table]:
    """Every table, in reading order: pure, so a test can inspect any cell."""
    sc = scopes or Scopes()
    sc.check(rows)
    c = Ctx(rows, A.valid_rows(rows), checks, an, numbers, sc)
    out = []
    for make in TABLES:
        t = make(c)
        if not t.rows:  # a table with no row still says why
            t.rows = [{"_why_row": "no valid row for this table"}]
        out.append(t)
    out.append(t_probes(probes))
    out.append(t_reasoning_parameter(probes))
    out.append(t_chars_per_token(token_classes))
    return out


def write_tables(rows_csv: str | Path, checks_csv: str | Path, numbers_json: str | Path,
                 probes: list[str], an: Analysis, template_dir: str | Path,
                 out_dir: str | Path, scopes: Scopes | None = None,
                 token_classes: list[str] | None = None) -> list[str]:
    """Every table as .md, .tex and .csv, plus an index.

    rows/checks were checked against the manifest by rule stats; here only the columns.
    """
    rows = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    checks = read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED)
    numbers = read_json(numbers_json)
    measured = read_csv(token_classes[0]) if token_classes else None
    tables = build_tables(rows, checks, numbers, an, load_probes(probes[0]) if probes else None,
                          scopes, measured)
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
                        Path(input.templates[0]).parent, output.tables,
                        Scopes.from_config(params.scopes), list(input.token_classes))
