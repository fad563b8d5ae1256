"""Every table of the paper (§4) and the instrument tables, from the evidence and numbers.json.

Descriptive cells come from the pure functions in analysis.py (the same ones
numbers.py flattens), inference (intervals, Fisher, TOST, r) is read from numbers.json,
so a table and the numbers file cannot disagree. Each table is declared once, in
report/titles.TABLES (name, title, order, what it reads); its builder here is
`t_<name>`, bound to it by that name at import, and says what the table holds as a Body
(report/table.py, which writes it three ways).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis import analysis as A
from ..analysis import compare as C
from ..analysis import keys
from ..analysis.analysis import Analysis
from ..analysis.scopes import Group, Scopes
from ..analysis.view import Evidence, Numbers
from ..evidence import columns
from ..evidence.load import load_probes, read_artifact
from ..evidence.provenance import check_same_study
from ..io import read_csv, read_json
from .table import Body, Col, Table, fmt, render
from .titles import TABLES, TableEntry

# ------------------------------------------------------------------------ reading

def _ci(numbers: Numbers, key: str, cell: str) -> str | None:
    d = numbers.get(keys.paired(key, "diff", cell))
    if d is None:
        return None
    lo, hi = (numbers[keys.paired(key, part, cell)] for part in ("ci_low", "ci_high"))
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _fisher_text(numbers: Numbers, key: str) -> str | None:
    if keys.fisher(key, "p") not in numbers:
        return None
    a, n1, b, n2, p = (numbers.get(keys.fisher(key, part)) for part in ("a", "n1", "b", "n2",
                                                                       "p"))
    return f"{a}/{n1} vs {b}/{n2}, Fisher exact p = {fmt(p, 'pval')}"


def _arm_order(an: Analysis, arms: set[str]) -> list[str]:
    return [a for a in an.arm_order if a in arms] + sorted(arms - set(an.arm_order))


def reads(c: Evidence, analysis: str) -> str:
    """The caption's sentence on what the table reads (its scope, in words)."""
    said = c.scopes.describe(c.an.primary_scenario)[analysis]
    return (f" Reads {said} (scope `{analysis}` of the study "
            "config); the sweep column names the sweep, or the sweeps pooled, of each "
            "line.")


def by_group(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame],
             primary: bool = False, own_sweep: bool = False
             ) -> list[tuple[Group, list[dict[str, Any]]]]:
    """Per group of the analysis' scope, the lines `make` builds from its valid rows, as
    records whose `sweep` names the group (the tables' first column). `own_sweep` keeps
    the sweep `make` gives each line (a pooled group's lines name their own sweep)."""
    out = []
    for g, vg in c.groups(analysis, primary):
        recs = make(vg).to_dict("records")
        if not own_sweep:
            for r in recs:
                r["sweep"] = g.label
        out.append((g, recs))
    return out


def lines(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame],
          own_sweep: bool = False) -> list[dict[str, Any]]:
    """by_group's lines of every group, in scope order."""
    return [r for _, recs in by_group(c, analysis, make, own_sweep=own_sweep) for r in recs]


def pooled_lines(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame]
                 ) -> list[dict[str, Any]]:
    """The lines `make` builds from every group's rows at once, named by their sweeps
    joined with '+' (DESIGN §8 "Pooled tables"); none when the scope reads one group,
    whose lines are already pooled."""
    pooled = c.pooled(analysis)
    if pooled is None:
        return []
    return [{**r, "sweep": pooled[0]} for r in make(pooled[1]).to_dict("records")]


def with_pooled(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame]
                ) -> list[dict[str, Any]]:
    """Each group's lines, then the pooled ones."""
    return lines(c, analysis, make) + pooled_lines(c, analysis, make)


SWEEP = Col("sweep", "sweep")


def _note(g: Group, text: str) -> str:
    return f"{g.label}: {text}" if g.qualified else text


def _fisher_reading(nb: Numbers, key: str, a: str, b: str, alpha: float) -> str | None:
    """The sentence a Fisher test supports, generated from its counts: the direction of
    the point estimate and whether the test separates the two at alpha."""
    if keys.fisher(key, "p") not in nb:
        return None
    x = {part: nb[keys.fisher(key, part)] for part in ("a", "n1", "b", "n2", "p")}
    ra, rb = x["a"] / x["n1"], x["b"] / x["n2"]
    way = ("a higher" if rb > ra else "a lower" if rb < ra else "the same")
    sig = ("the difference is significant" if x["p"] < alpha
           else "the test does not separate them")
    return f"{b} recalled {way} share of rows than {a} ({_fisher_text(nb, key)}; {sig} at {alpha})"


# ------------------------------------------------------------------------ the tables

# A builder takes its entry's source (titles.TableEntry.source): the evidence view, the
# probe verdicts or the measured token classes.
Builder = Callable[..., Body]
BUILDERS: dict[str, Builder] = {}


def builder(fn: Builder) -> Builder:
    """Mark fn as the builder of the table its name names (report/titles.TableEntry)."""
    BUILDERS[fn.__name__] = fn
    return fn


@builder
def t_recall_by_model_arm(c: Evidence) -> Body:
    df = A.recall_by_model_arm(c.rows, c.an)
    recs = df.to_dict("records")
    return Body(
        "Mean label-bound recall over valid rows of each (sweep, model, arm), one line per "
        "sweep, never pooled across sweeps. Rows are near-binary, so each mean comes with "
        "its denominators: n valid rows, rows with recall 1, rows with recall at least "
        f"{c.an.row_recalled}. Invalid rows are counted, never averaged.",
        [SWEEP, Col("model", "model"), Col("arm", "arm"),
         Col("n_valid", "n", "int"), Col("mean_recall", "mean recall", "p3", "no valid row"),
         Col("rows_full", "full", "int"), Col("rows_ge_half", f"≥{c.an.row_recalled}", "int"),
         Col("n_invalid", "invalid", "int")],
        recs, csv=df)


@builder
def t_table1_recall_model_arm(c: Evidence) -> Body:
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
    return Body(
        f"Mean recall over the valid rows of the {an.primary_scenario} scenario, with the "
        "number of valid rows in brackets." + reads(c, "table1") + " Arms: "
        + "; ".join(f"{a} {an.arm_title(a)}" for a in arms) + ".",
        [SWEEP, Col("model", "model"), *[Col(a, a, "str", "not run") for a in arms]],
        out, csv=csv)


@builder
def t_ladder(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    out, notes = [], []
    for g, recs in by_group(c, "ladder", lambda v: A.ladder(v, an)):
        for i, r in enumerate(recs):
            arm, prev = r["arm"], (an.ladder[i - 1] if i else None)
            fisher = keys.fisher(g.at("ladder.fisher_full", prev, arm), "p") if prev else ""
            out.append({
                "sweep": g.label, "arm": arm, "change": an.arm_title(arm), "n": r["n"],
                "mean": r["mean"], "rows_full": r["rows_full"],
                "effect": _ci(nb, "ladder.effect", g.cell(arm, prev)) if prev else None,
                "_why_effect": "first rung" if not prev else "no paired block",
                "fisher": nb.get(fisher) if prev else None,
                "_why_fisher": "first rung" if not prev else "no rows"})
        last = an.ladder[-2:]
        t = _fisher_reading(nb, g.at("ladder.fisher_full", *last), last[0], last[1],
                            an.alpha)
        if t:
            notes.append(_note(g, f"Full-recall rows: {t}."))
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
    out = lines(c, "iteration", lambda v: A.iteration(v, c.an))
    for r in out:
        r["title"] = c.an.arm_title(r["arm"])
    return Body(
        "Mean recall and valid rows per arm on each scenario, over the models measured on "
        "the single-chunk scenario. The scenarios differ in graded facts (7 against 14) as "
        "well as in iteration: a contrast of scenarios, not of one factor." + reads(c, "iteration"),
        [SWEEP, Col("arm", "arm"), Col("title", "representation"),
         Col("single_n", "n (one chunk)", "int"),
         Col("single_mean", "one chunk", "p3", "not run"),
         Col("distributed_n", "n (distributed)", "int"),
         Col("distributed_mean", "distributed", "p3", "not run")], out)


@builder
def t_capacity(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    a, b = an.ceiling_pair
    cap, notes = [], []
    every = c.every_row("capacity")
    for g, vg in c.groups("capacity"):
        recs = A.capacity(vg, an, every.get(g.label)).to_dict("records")
        for r in recs:
            r["sweep"] = g.label
            r["clipped"] = f"{r['folds_clipped']} of {r['folds']}" if r["folds"] else None
            r["nonconforming"] = (f"{r['nonconforming_folds']} of {r['folds_all']}"
                                  if r["folds_all"] else None)
            if not r["n"]:  # a count over no rows is not a zero
                r["rows_recalled"] = None
            r["title"] = an.arm_title(r["arm"])
            cap.append(r)
        t = _fisher_reading(nb, g.at("capacity.fisher_recalled", a, b), a, b, an.alpha)
        if t:
            both = _ran_both(c, g, a, b)
            who = (f"the one model that ran both, {both[0]}" if len(both) == 1 else
                   f"the {len(both)} models that ran both"
                   + (f" ({', '.join(both)})" if len(both) <= 3 else ""))
            notes.append(_note(g, f"Ceiling halved, over {who}: {t}."))
        fa, fb = "+".join(an.representation_failing), "+".join(an.representation_healthy)
        t = _fisher_reading(nb, g.key("capacity.fisher_representation"), fa, fb, an.alpha)
        if t:
            notes.append(_note(g, f"Representation: {t}."))
    return Body(
        "The capacity channel manipulated directly, in the (sweep, model) cells that ran a "
        "manipulation: declared ceiling halved (t) and carry cap reduced (u). Rows "
        f"recalled: recall ≥ {an.row_recalled}. Carried chars: mean over rows of the mean "
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
    cr = A.capacity_rows(g.rows(c.v), c.an)
    return sorted(set(cr.loc[cr["arm"] == a, "model"]) & set(cr.loc[cr["arm"] == b, "model"]))


@builder
def t_ceiling_replication(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    a, b = an.ceiling_pair
    df, notes = [], []
    for g, vg in c.groups("ceiling"):
        for r in A.ceiling_replication(vg, an).to_dict("records"):
            # a line names the sweeps its model's rows came from (the group's, in order)
            have = set(vg.loc[(vg["model"] == r["model"]) & vg["arm"].isin([a, b]), "sweep"])
            r["sweep"] = "+".join(sw for sw in g.sweeps if sw in have)
            r["a"] = f"{r['a_recalled']}/{r['a_n']} rows"
            r["b"] = f"{r['b_recalled']}/{r['b_n']} rows"
            df.append(r)
        t = _fisher_reading(nb, g.at("ceiling.fisher_recalled", a, b), a, b, an.alpha)
        if t:
            notes.append(_note(g, f"Over the models that ran both: {t}."))
    if not df:
        df = [{"_why_row": f"no model ran both {a} and {b}"}]
    return Body(
        f"Rows recalled (recall ≥ {an.row_recalled}) of valid rows on the undivided arm at "
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
    ft = lines(c, "fill_table", lambda v: A.fill_table(v, c.an))
    for r in ft:
        r["title"] = c.an.arm_title(r["arm"])
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


def _partition_of(c: Evidence, then: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                  own_sweep: bool = False) -> list[tuple[Group, list[dict[str, Any]]]]:
    """by_group over the partition scope: each group's partition frame, or what `then`
    makes of it."""
    def make(v: pd.DataFrame) -> pd.DataFrame:
        part = A.partition(v, c.an)
        return then(part) if then else part
    return by_group(c, "partition", make, own_sweep=own_sweep)


@builder
def t_partition(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    part, notes = [], []
    for g, recs in _partition_of(c, own_sweep=True):
        for r in recs:
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
    return Body(
        f"Undivided ({an.undivided}) against five named fields ({an.divided}) at the same "
        "declared capacity, each model's pair from one sweep (paper §4.7: never pooled "
        "across runs), ordered by the undivided arm; valid rows in brackets. j fill: share "
        "of the declared ceiling the undivided carrier used." + reads(c, "partition"),
        [Col("model", "model"), SWEEP, Col("j", f"{an.undivided} undivided"),
         Col("q", f"{an.divided} five fields"), Col("gap", "gap", "signed3"),
         Col("j_fill", f"{an.undivided} fill", "pct", "no ceiling declared"),
         Col("class", "class")], part, notes,
        csv=pd.DataFrame(part, columns=columns.PARTITION_TABLE))


@builder
def t_fill_and_failure_modes(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    part, notes = [], []
    for _, recs in _partition_of(c):
        for r in recs:
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
    return Body(
        f"Per model: valid rows, mean carried chars and fill of the undivided arm "
        f"({an.undivided}), its recall, and the failure mode of a failing model: "
        f"over-writing when fill ≥ {an.failure_mode_fill_split:.0%}, under-writing below."
        + reads(c, "partition"),
        [SWEEP, Col("model", "model"), Col("j_n", "rows", "int"),
         Col("j_carried_chars", "carried chars", "chars", "not recorded"),
         Col("j_fill", "fill of ceiling", "pct", "no ceiling declared"),
         Col("j_mean", "recall", "p3"), Col("mode", "failure mode")], part, notes)


@builder
def t_rescue_by_failure_mode(c: Evidence) -> Body:
    an = c.an
    fm, notes = [], []
    for g, recs in _partition_of(c, A.failure_modes):
        for r in recs:
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
    return Body(
        f"Failing models (undivided mean < {an.failing_recall}) by failure mode (over-writing: "
        f"undivided fill ≥ {an.failure_mode_fill_split:.0%}; under-writing: below), with "
        "their fills of the undivided ceiling, and how many reach "
        f"{an.rescued_recall} on the five-field arm." + reads(c, "partition"),
        [SWEEP, Col("mode_name", "failure mode"), Col("fills", "fills", "pct"),
         Col("models", "models", "int"), Col("rescues", "rescued by five fields")], fm, notes)


@builder
def t_borderline_separation(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    sep = []
    for g, recs in _partition_of(c, A.separation):
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
        f"within {an.borderline_margin} of {an.failing_recall}. Weight: 1/C(n, k), the "
        "chance that the k non-rescued models are exactly the k lowest-fill ones under "
        "random assignment; a post-hoc split on a continuous variable weighs no more."
        + reads(c, "partition"),
        [SWEEP, Col("label", "classification"), Col("rescued_fills", "rescued fills", "pct"),
         Col("non_rescued_fills", "non-rescued fills", "pct"),
         Col("margin", "margin", "pts"), Col("weight", "1/C(n,k)", "pval")], sep)


@builder
def t_depth(c: Evidence) -> Body:
    d = lines(c, "depth", lambda v: A.depth(v, c.an), own_sweep=True)
    if not d:
        d = [{"_why_row": "no model of the depth scope ran both arms"}]
    return Body(
        "Both arms of every model of the depth scope, from that scope's rows alone (never "
        f"merged with the partition table): n, mean, rows ≥ {c.an.row_recalled}, fill, how "
        "many fixed headings arrived row by row, and the class those rows give the model."
        + reads(c, "depth"),
        [SWEEP, Col("model", "model"), Col("arm", "arm"), Col("n", "n", "int"),
         Col("mean", "mean", "p3", "no valid row"),
         Col("rows_ge_half", f"rows ≥ {c.an.row_recalled}", "int"),
         Col("fill", "fill", "pct", "no ceiling declared"),
         Col("headings", "headings carried"), Col("class", "class")], d)


@builder
def t_headings_vs_recall(c: Evidence) -> Body:
    an, nb = c.an, c.numbers
    h, notes = [], []
    for g, recs in by_group(c, "headings", lambda v: A.headings_vs_recall(v, an)):
        h += [{**r, "_why_mean": "no row"} for r in recs]
        if g.key("headings.r") in nb:
            notes.append(_note(g, (
                f"Over all {nb[g.key('headings.n_rows')]} valid rows with the count recorded, "
                f"r = {nb[g.key('headings.r')]:+.2f} (Pearson, headings carried vs recall; "
                f"95% CI [{nb.get(g.key('headings.ci_low'), float('nan')):+.2f}, "
                f"{nb.get(g.key('headings.ci_high'), float('nan')):+.2f}]).")))
    return Body(
        f"Within the single-field-schema arms ({', '.join(an.single_field_schema)}): recall "
        "by how many of the five fixed headings the final carry held. An association: "
        "headings carried is post-treatment." + reads(c, "headings"),
        [SWEEP, Col("headings", "headings that arrived", "int"), Col("rows", "rows", "int"),
         Col("mean", "mean recall", "p3"),
         Col("rows_ge_half", f"rows ≥ {an.row_recalled}", "int")], h, notes)


@builder
def t_headings_single_field(c: Evidence) -> Body:
    """Paper §4.8's table: over the single-field-schema arms, pooled over the headings
    scope (one group: its own lines; several: all of them at once)."""
    an = c.an
    make = lambda v: A.headings_vs_recall(v, an)  # noqa: E731
    h = pooled_lines(c, "headings", make) or lines(c, "headings", make)
    return Body(
        f"Valid rows of the single-field-schema arms ({', '.join(an.single_field_schema)}) by "
        "how many of the five fixed headings the final carry held (0-5), pooled over every "
        f"group of the scope: rows, mean recall, rows ≥ {an.row_recalled}. An association: "
        "headings carried is post-treatment." + reads(c, "headings"),
        [SWEEP, Col("headings", "headings", "int"), Col("rows", "rows", "int"),
         Col("mean", "mean", "p3", "no row"),
         Col("rows_ge_half", f"rows ≥ {an.row_recalled}", "int")], h)


@builder
def t_headings_within_model(c: Evidence) -> Body:
    h = lines(c, "headings", lambda v: A.headings_within_model(v, c.an))
    if not h:
        h = [{"_why_row": f"no model's {c.an.undivided} rows differ in headings carried"}]
    return Body(
        f"Per model whose undivided-arm ({c.an.undivided}) rows differ in how many fixed "
        "headings arrived: recall by headings carried, within that one model. An "
        "association: headings carried is post-treatment." + reads(c, "headings"),
        [SWEEP, Col("model", "model"), Col("headings", "headings that arrived", "int"),
         Col("n", "rows", "int"), Col("mean", "mean recall", "p3"),
         Col("rows_ge_half", f"rows ≥ {c.an.row_recalled}", "int")], h)


@builder
def t_headings_by_arm(c: Evidence) -> Body:
    h = lines(c, "headings", lambda v: A.headings_by_arm(v, c.an))
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
    for g, recs in by_group(c, "carrier", lambda v: A.carrier_crosstab(v, c.checks, c.an)):
        for r in recs:
            r["missed_share"] = r["missed"] / r["rows"]
            r["title"] = c.an.arm_title(r["arm"])
            cc.append(r)
        if g.key("carrier.rows") in nb:
            notes.append(_note(g, (
                f"Read the {nb[g.key('carrier.rows')]} of {nb[g.key('carrier.valid_rows')]} "
                f"valid rows whose carrier was recorded. Carrier and answer agree on "
                f"{nb[g.key('carrier.agree')]} of them; the carrier held a value the answer "
                f"missed on {nb[g.key('carrier.missed')]} rows, and the answer was right "
                f"about a value the carrier lacked on "
                f"{nb[g.key('carrier.answer_beyond_carrier')]}.")))
        if g.key("grader.rows") in nb:
            notes.append(_note(g, (
                f"Label-bound and presence grading of the answer agree on "
                f"{nb[g.key('grader.agree_rows')]} of {nb[g.key('grader.rows')]} valid "
                f"{c.an.primary_scenario} rows.")))
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


def _compare(c: Evidence) -> tuple[pd.DataFrame, pd.DataFrame] | str:
    """paired-arms and fact-survival over the `compare` scope's groups, or why there are
    none: both read the fact trace, which a package of rows and checks alone lacks."""
    if c.trace is None:
        return C.NO_TRACE
    groups = [g for g, _ in c.groups("compare")]
    paired, survival, _ = C.compare_tables(c.trace, c.checks, c.rows, c.an, c.extra_pairs,
                                           groups)
    return paired, survival


@builder
def t_paired_arms(c: Evidence) -> Body:
    """Issue 21: for each pair of arms the study contrasts within a block (same sweep,
    model, repeat and fixture), the graded facts both kept, one only, or neither, at the
    final carry and in the answer. Facts within a row are not independent (paper §4: ICC
    0.750), so the interval resamples blocks, never facts."""
    an = c.an
    pairs = ", ".join(C.pair_label(a, b) for a, b in C.compare_pairs(an, c.extra_pairs))
    got = _compare(c)
    recs = [{"_why_row": got}] if isinstance(got, str) else got[0].to_dict("records")
    if not isinstance(got, str) and not recs:
        recs = [{"_why_row": f"no block ran both arms of a pair ({pairs})"}]
    for r in recs:
        if "pair" in r:
            r["kept"] = _diff_text(r, "kept")
            r["recalled"] = _diff_text(r, "recalled")
    return Body(
        "Per pair of arms (a–b), over the blocks where both have a valid row: the graded "
        "facts both arms kept to the final carry, a only, b only, neither; then the same in "
        f"the answer. Pairs: {pairs} (resources/analysis.yaml `arms.compare_pairs`, and "
        "any the study config's `compare_pairs` adds). The difference is b's kept share "
        f"minus a's, with a {an.confidence:.0%} interval resampling blocks within model, "
        "never facts (the facts of a row are not independent)." + reads(c, "compare"),
        [SWEEP, Col("pair", "pair"), Col("blocks", "blocks", "int"),
         Col("facts", "facts", "int"), Col("both_kept", "both kept", "int"),
         Col("a_only", "a only", "int"), Col("b_only", "b only", "int"),
         Col("neither", "neither", "int"),
         Col("kept", "b − a, kept [CI]", "str", "fewer than 2 blocks"),
         Col("both_recalled", "both recalled", "int"),
         Col("a_only_recalled", "a only", "int"), Col("b_only_recalled", "b only", "int"),
         Col("neither_recalled", "neither", "int"),
         Col("recalled", "b − a, recalled [CI]", "str", "fewer than 2 blocks")],
        recs, csv=None if isinstance(got, str) else got[0])


def _diff_text(r: dict[str, Any], what: str) -> str | None:
    d, lo, hi = r[f"{what}_diff"], r[f"{what}_diff_low"], r[f"{what}_diff_high"]
    if pd.isna(d):
        return None
    band = f" [{lo:+.3f}, {hi:+.3f}]" if not (pd.isna(lo) or pd.isna(hi)) else ""
    return f"{d:+.3f}{band}"


@builder
def t_fact_survival(c: Evidence) -> Body:
    """Issue 21, paper §4.4 ("Iteration is what makes it catastrophic"): the share of
    graded facts still carried k folds after the fold that planted them. k = 0 is the
    planting fold's own carry, so its gap below 1 is the loss at the first fold (never
    carried) and the fall after it the loss over folds."""
    an = c.an
    got = _compare(c)
    recs = [{"_why_row": got}] if isinstance(got, str) else got[1].to_dict("records")
    for r in recs:
        if "k" in r and not pd.isna(r["share_low"]):
            r["band"] = f"{r['share_low']:.3f}–{r['share_high']:.3f}"
    return Body(
        "Per arm, of the graded facts of valid rows observable k folds after their planting "
        "fold, those carried by every carry from planting through that fold. k = 0 is the "
        "planting fold's carry: 1 minus its share is the loss at the first fold (never "
        "carried); the fall after it is the loss over folds. Of those taken in: the share "
        "of the facts the planting fold's carry held. Survival: the same with each run's "
        "end censoring a late-planted fact (product-limit), so it never rises. Band: "
        f"{an.confidence:.0%}, blocks resampled within model." + reads(c, "compare"),
        [SWEEP, Col("arm", "arm"), Col("k", "k (folds after planting)", "int"),
         Col("facts", "facts", "int"), Col("carried", "carried", "int"),
         Col("share", "share", "p3", "no fact observable"),
         Col("band", "band", "str", "fewer than 2 blocks"),
         Col("share_of_taken_in", "of those taken in", "p3", "none taken in"),
         Col("survival", "survival", "p3", "nothing at risk")],
        recs, csv=None if isinstance(got, str) else got[1])


@builder
def t_abstention_vs_fabrication(c: Evidence) -> Body:
    ab, notes = [], []
    make = lambda v: A.abstention(v, c.an)  # noqa: E731
    why = {"_why_stock_rows": "not recorded",
           "_why_fabricates_prefix400": "no abstained_prefix400 in rows.csv",
           "_why_abstains_prefix400": "no abstained_prefix400 in rows.csv"}
    for g, recs in by_group(c, "abstention", make):
        for r in recs:
            r["title"] = c.an.arm_title(r["arm"])
            ab.append({**r, **why})
        if recs:
            fab = sum(r["fabricates"] for r in recs)
            tot = sum(r["failing_rows"] for r in recs)
            notes.append(_note(g, f"{fab} of {tot} failing rows hold no abstention marker "
                                  f"anywhere in the answer; {tot - fab} hold one."))
    for r in pooled_lines(c, "abstention", make):
        ab.append({**r, "title": c.an.arm_title(r["arm"]), **why})
    return Body(
        f"Failing rows (recall < {c.an.failing_recall}) by whether the answer holds any "
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
    fr = with_pooled(c, "finish", lambda v: A.finish_reasons(v, c.an))
    for r in fr:
        if r["rows_with_ceiling"]:
            r["at_ceiling"] = f"{r['rows_at_ceiling']} of {r['rows_with_ceiling']}"
        r["_why_at_ceiling"] = "no ceiling declared"
    return Body(
        "Folds of valid rows by how the call finished: stop (the model ended the fold) or "
        "length (it hit the output limit). At ceiling: rows whose carry filled at least "
        f"{c.an.at_ceiling_fill:.1%} of the declared ceiling. Where the scope reads several "
        "groups, the last lines pool them, one per arm." + reads(c, "finish"),
        [SWEEP, Col("arm", "arm"), Col("rows", "rows", "int"), Col("folds", "folds", "int"),
         Col("stop", "stop", "int"), Col("length", "length", "int"),
         Col("other", "other", "int"), Col("at_ceiling", "rows at ceiling")], fr)


@builder
def t_parse_failures(c: Evidence) -> Body:
    pf = [{**r, "_why_mean_with_failure": "no such row", "_why_mean_clean": "no such row"}
          for r in lines(c, "parse", lambda v: A.parse_failures(v, c.an))]
    groups = c.groups("parse", every_row=True)
    pooled = c.pooled("parse", every_row=True)
    label, every = pooled if pooled is not None else (
        (groups[0][0].label, groups[0][1]) if groups else (None, None))
    for arms in (c.an.single_field_schema, None):  # §6: every row, valid or not
        line = A.parse_line(every, c.an, arms, None if arms else A.ALL_ARMS) if (
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
        f"({'+'.join(c.an.single_field_schema)}) and then {A.ALL_ARMS} over every group: "
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
    env = with_pooled(c, "envelope", lambda v: A.envelope(v, c.an))
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
        for a, b in c.an.token_deltas:
            cell = g.cell(a, b)
            described = (a, b) == c.an.described
            out.append({"sweep": g.label, "pair": f"{a} − {b}",
                        "n": c.numbers.get(keys.paired("tokens.delta", "n_pairs", cell)),
                        "models": c.numbers.get(keys.paired("tokens.delta", "n_models", cell)),
                        "delta": _ci(c.numbers, "tokens.delta", cell),
                        "expected": c.numbers.get(keys.at("tokens.expected_delta", cell)),
                        "_why_delta": "no block ran both", "_why_n": "none",
                        "_why_models": "none",
                        "_why_expected": "no block ran both" if described else
                        "adds no description"})
    pooled = c.pooled("tokens")
    if pooled is not None:  # §1: q − j "pooled over every sweep"
        a, b, key = c.an.divided, c.an.undivided, "tokens.delta_pooled"
        cell = keys.cell(a, b)
        out.append({"sweep": pooled[0], "pair": f"{a} − {b}",
                    "n": c.numbers.get(keys.paired(key, "n_pairs", cell)),
                    "models": c.numbers.get(keys.paired(key, "n_models", cell)),
                    "delta": _ci(c.numbers, key, cell), "expected": None,
                    "_why_delta": "no block ran both", "_why_n": "none",
                    "_why_models": "none", "_why_expected": "pooled line"})
    return Body(
        "Mean paired difference in prompt tokens per row (all folds), first arm minus second, "
        "over blocks where both ran validly, with a 95% bootstrap interval resampling blocks "
        "within model. Token counts may come from an estimator (rows.csv token_count_method). "
        f"'If delivered' is the delta {c.an.described[0]}'s field description would add had "
        "it reached the model on every fold (its characters / 4 per token x folds, §4.3). "
        f"Where the scope reads several groups, a last line pools {c.an.divided} − "
        f"{c.an.undivided} over all of them." + reads(c, "tokens"),
        [SWEEP, Col("pair", "pair"), Col("n", "blocks", "int"), Col("models", "models", "int"),
         Col("delta", "mean delta [95% CI]"), Col("expected", "if delivered", "chars")], out)


@builder
def t_invalid_rows(c: Evidence) -> Body:
    """Paper §6: "That happened on 6 rows, every one of them a schema arm (j four times,
    p once, q once) ... Their recalls were 1.000, 1.000, 0.000, 0.000, 0.000 and 0.000"."""
    inv = [{**r, "sweep": g.label} for g, rows in c.groups("invalid", every_row=True)
           for r in A.invalid_reasons(rows).to_dict("records")]
    if not inv:
        inv = [{"_why_row": "every row of the scope is valid"}]
    return Body(
        "Invalid rows by arm and reason (the one validity rule, recorded in rows.csv). "
        "Catch-up is not retried and can correlate with arm: reported, not hidden. Recalls: "
        "each row's recall, in rows.csv order." + reads(c, "invalid"),
        [SWEEP, Col("arm", "arm"), Col("reason", "reason"), Col("rows", "rows", "int"),
         Col("recalls", "recalls", "p3", "no recall recorded")], inv)


@builder
def t_inference(c: Evidence) -> Body:
    """The study-wide inferential numbers with their denominators, in one place."""
    an, nb = c.an, c.numbers
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
                                    ("fill", "fill", "fill vs recall across models",
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
        diff = keys.paired("equivalence", "diff", eq)
        out.append({"sweep": g.label, "what": f"{a} − {b}, paired", "key": diff,
                    "value": fmt(nb.get(diff), "signed3"),
                    "n": f"{nb.get(keys.paired('equivalence', 'n_pairs', eq))} blocks",
                    "_why_value": f"no block ran both {a} and {b}"})
        verdict = nb.get(keys.at("equivalence.equivalent", eq))
        p = fmt(nb.get(keys.at("equivalence.tost_p", eq)), "pval")
        if p is None and verdict is not None:  # every paired difference the same
            p = "none (every paired difference the same)"
        out.append({"sweep": g.label, "what": f"{a} − {b}, TOST p at ±{an.equivalence_margin}",
                    "key": keys.at("equivalence.tost_p", eq), "value": p,
                    "n": "equivalent" if verdict else "not shown equivalent",
                    "_why_value": "fewer than 2 pairs"})
    for g, _ in c.groups("partition"):
        k, nk = (g.at(f"separation.{x}", "all") for x in ("weight", "n_failing"))
        out.append({"sweep": g.label, "what": "separation weight 1/C(n,k), all failing models",
                    "key": k, "value": fmt(nb.get(k), "pval"),
                    "n": f"{nb.get(nk)} failing models",
                    "_why_value": "separation not complete"})
        cell = g.cell(an.divided, an.undivided)
        k = keys.at("partition.carried_less", cell)
        out.append({"sweep": g.label,
                    "what": f"text carried, {an.divided} against {an.undivided} (share less)",
                    "key": k, "value": fmt(nb.get(k), "pct"),
                    "n": f"{nb.get(keys.at('partition.carried_pairs', cell))} paired blocks",
                    "_why_value": f"no block ran both {an.divided} and {an.undivided}"})
    for r in out:
        if r["value"] is None:
            r["n"] = None
        r["_why_n"] = "no statistic"
    return Body(
        "Inferential numbers with their denominators and intervals; keys are those of "
        "numbers.json. Each reads the scope its section names in the study config.",
        [SWEEP, Col("what", "statistic"), Col("value", "value"), Col("n", "denominator"),
         Col("key", "numbers.json key")], out)


@builder
def t_probe_verdicts(probes: pd.DataFrame | None) -> Body:
    if probes is None or probes.empty:
        return Body("One verdict per (model, endpoint): what the probe found before any fold.",
                    [Col("model", "model"), Col("verdict", "verdict")],
                    [{"_why_row": "no probes.csv in the evidence"}])
    # probe.py's summary columns; a package's probes.csv may carry fewer.
    cols = [c for c in ("model", "backend", "pin", "quantization", "verdict",
                        "responsible_parameter", "arms_allowed", "arms_forbidden")
            if c in probes.columns] or list(probes.columns)[:6]
    # Arms probed and never folded (a model's probe_arms, paper §4.2): shown when a
    # study names any, so a study that names none keeps its table.
    extra = ("probe_arms" in probes.columns
             and bool((probes["probe_arms"].fillna("").astype(str) != "").any()))
    return Body("One verdict per (model, endpoint): the conjunction of model, endpoint and "
                "request the probe measured, never the model alone."
                + (" probe_arms: arms probed on the model and never folded, with their "
                   "verdicts (deciding no fold)." if extra else ""),
                [Col(c, c, "str", "not recorded") for c in cols]
                + ([Col("probe_arms", "probe_arms", "str", "none named")] if extra else []),
                [{c: (r[c] or None) for c in cols + ["probe_arms"] * extra}
                 for r in probes.to_dict("records")])


@builder
def t_probe_reasoning_parameter(probes: pd.DataFrame | None) -> Body:
    """Paper §4.2's verdict table: each gateway model under both request shapes."""
    blurb = ("Each gateway model's verdict for one request shape with and without the "
             "reasoning-suppression parameter; the study sends it only to endpoints that "
             "declare reasoning (paper §4.2).")
    cols = [Col("model", "model"), Col("shape", "request"), Col("verdict", "verdict"),
            Col("study", "the study's request"), Col("probe_only", "probe only")]
    need = {"verdict_with_reasoning", "verdict_without_reasoning", "sends_reasoning"}
    if probes is None or not need <= set(probes.columns):
        return Body(blurb, cols, [{"_why_row": "the probe verdicts hold no reasoning comparison"}])
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
    return Body(blurb, cols, rows or [{"_why_row": "no gateway model was probed"}])


@builder
def t_chars_per_token(measured: pd.DataFrame | None) -> Body:
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
        return Body(blurb, cols, measured.to_dict("records"))
    return Body(blurb, cols, [{"_why_row": why}])


def _bind(entries: tuple[TableEntry, ...], builders: dict[str, Builder]
          ) -> list[tuple[TableEntry, Builder]]:
    """Each registry entry with its builder, in reading order; a table without a builder,
    or a builder without an entry, fails at import, naming it."""
    missing = [f"{e.name} (no {e.builder})" for e in entries if e.builder not in builders]
    extra = sorted(set(builders) - {e.builder for e in entries})
    if missing or extra:
        raise LookupError("report/titles.TABLES and the builders of report/tables.py differ: "
                          + "; ".join([*(f"table {m}" for m in missing),
                                       *(f"builder {x} has no entry" for x in extra)]))
    return [(e, builders[e.builder]) for e in entries]


BOUND = _bind(TABLES, BUILDERS)


def build_tables(rows: pd.DataFrame, checks: pd.DataFrame, numbers: Numbers, an: Analysis,
                 probes: pd.DataFrame | None = None, scopes: Scopes | None = None,
                 token_classes: pd.DataFrame | None = None,
                 trace: pd.DataFrame | None = None,
                 extra_pairs: list[list[str]] | None = None) -> list[Table]:
    """Every table, in reading order: pure, so a test can inspect any cell."""
    c = Evidence.of(rows, checks, an, scopes, numbers, trace, extra_pairs or ())
    inputs = {"probes": probes, "token_classes": token_classes}
    out = []
    for entry, make in BOUND:
        body = make(c.reading(entry.reads) if entry.source == "evidence"
                    else inputs[entry.source])
        if not body.rows:  # a table with no row still says why
            body.rows = [{"_why_row": "no valid row for this table"}]
        out.append(body.named(entry.name, entry.title_for(an.ladder)))
    return out


def write_tables(rows_csv: str | Path, checks_csv: str | Path, numbers_json: str | Path,
                 probes: list[str], an: Analysis, template_dir: str | Path,
                 out_dir: str | Path, scopes: Scopes | None = None,
                 token_classes: list[str] | None = None, trace: list[str] | None = None,
                 extra_pairs: list[list[str]] | None = None) -> list[str]:
    """Every table as .md, .tex and .csv, plus an index.

    rows/checks were checked against the manifest by rule stats; here only the columns.
    """
    rows = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    checks = read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED)
    numbers = read_json(numbers_json)
    measured = read_csv(token_classes[0]) if token_classes else None
    traced = read_artifact(Path(trace[0]), columns.TRACE_REQUIRED) if trace else None
    tables = build_tables(rows, checks, numbers, an, load_probes(probes[0]) if probes else None,
                          scopes, measured, traced, extra_pairs)
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
                        Scopes.from_config(params.scopes), list(input.token_classes),
                        list(input.trace), params.compare_pairs)
