"""Where the facts were lost (rule trace): the fact trace read per arm, as a table of
losses by kind and the fact-survival figure: the share of graded
facts still carried k folds after the fold that planted them.

Paper §4.10: "the carrier is a strict upper bound on recall: nothing is recovered after
the fold", and "retrieval from the carrier is itself lossy". The trace splits every
graded fact that the answer missed into the fold's loss (never taken into the carry
after planting, or carried and then dropped at a later fold) and the read's loss
(carried to the end, missed in the answer). Only rows the one validity rule admits are
counted (paper §3.3: "every reported statistic reads that one rule").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis.cells import arm_sort_key, valid_rows
from ..analysis.compare import NO_TRACE, fact_grid, fact_survival
from ..analysis.plan import AnalysisPlan, models_by_arm
from ..evidence import columns
from ..evidence.load import load_evidence, read_artifact
from ..evidence.provenance import check_same_study
from ..grade.trace import OPAQUE
from .plotting import pyplot
from .table import Body, Col, Table, render_template

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# The kinds of a graded fact's fate, in the order a fact meets them.
NEVER_CARRIED = "never_carried"  # no carry from its planting fold on held it
DROPPED = "dropped"  # some carry held it, the final carry did not
MISSED_IN_ANSWER = "missed_in_answer"  # the final carry held it, the answer missed it
RECALLED = "recalled"  # the answer holds it (label-bound grader)
KINDS = (NEVER_CARRIED, DROPPED, MISSED_IN_ANSWER, RECALLED)
# A fact of a run whose carry is opaque (a native arm's encrypted compaction)
# that the answer missed: neither carried nor lost as far as anyone can read. A column of
# the table only where some fact is opaque (a study without native arms prints as before).
KIND_TITLES = {NEVER_CARRIED: "never carried after planting",
               DROPPED: "carried, then dropped",
               MISSED_IN_ANSWER: "carried to the end, missed in the answer",
               RECALLED: "recalled",
               OPAQUE: "missed in the answer, carry opaque"}
FACT_LOSSES = ["row_id", "sweep", "model", "arm", "label", "kind", "planted_fold",
               "last_carried_fold", "lost_at_fold",
               # where the final fold kept it: carry, index (an index arm's), both, or
               # empty (lost; or a trace made before carried_in)
               "final_in"]
LOSS_TABLE = ["sweep", "arm", "rows", "facts", NEVER_CARRIED, DROPPED, "dropped_at",
              MISSED_IN_ANSWER, RECALLED]


def fact_losses(trace: pd.DataFrame, checks: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """One line per graded fact of a valid row that has a trace: its kind (KINDS), the fold
    that planted it, the last fold whose carry held it, and for a dropped fact the fold
    whose carry first lost it for good.

    Read from plain records, a fact at a time: a paper package's trace has a line per
    fact and fold, and a pandas selection per fact cost most of the trace job."""
    valid = valid_rows(rows)[["row_id", "sweep", "model", "arm"]]
    t = trace[trace["row_id"].isin(valid["row_id"])]
    last = t.groupby("row_id")["fold"].max().to_dict()
    correct = {(r["row_id"], r["label"]): bool(r["correct"])
               for r in checks[["row_id", "label", "correct"]].to_dict("records")}
    meta = {r["row_id"]: r for r in valid.to_dict("records")}
    facts: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for r in t.sort_values("fold").to_dict("records"):
        facts.setdefault((r["row_id"], r["label"]), []).append(r)
    out = []
    for (row_id, label), g in sorted(facts.items(), key=lambda kv: kv[0]):
        out.append(_fact_loss(row_id, label, g, last[row_id], correct, meta[row_id]))
    return pd.DataFrame(out, columns=FACT_LOSSES)


def _fact_loss(row_id: Any, label: Any, g: list[dict[str, Any]], last: Any,
               correct: dict[tuple[Any, Any], bool], m: dict[str, Any]) -> dict[str, Any]:
    """One fact's line of fact_losses, from its trace lines in fold order."""
    planted = int(g[0]["planted_fold"])
    after = [r for r in g if r["fold"] >= planted]
    opaque = all(pd.isna(r["present"]) for r in g)  # an opaque carry: nothing to read
    # a missing presence reads as held here (as astype(bool) reads NaN) and as not held
    # at the end (as any() skips it)
    held = [] if opaque else [int(r["fold"]) for r in after if bool(r["present"])]
    at_end = [r for r in after if r["fold"] == last]
    final = not opaque and any(not pd.isna(r["present"]) and bool(r["present"])
                               for r in at_end)
    final_in = (at_end[0]["carried_in"] if final and at_end
                and isinstance(at_end[0].get("carried_in"), str) else "")
    lost_at = None
    if correct.get((row_id, label), False):
        kind = RECALLED
    elif opaque:
        kind = OPAQUE
    elif final:
        kind = MISSED_IN_ANSWER
    elif held:
        kind = DROPPED
        lost_at = int(min(r["fold"] for r in after if r["fold"] > held[-1]))
    else:
        kind = NEVER_CARRIED
    return {"row_id": row_id, "sweep": m["sweep"], "model": m["model"], "arm": m["arm"],
            "label": label, "kind": kind, "planted_fold": planted,
            "last_carried_fold": held[-1] if held else None, "lost_at_fold": lost_at,
            "final_in": final_in}


def losses_by_arm(losses: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per (sweep, arm): valid rows, graded facts, and how many of them met each kind;
    dropped_at counts the dropped facts by the fold that lost them ("3: 2; 4: 1").
    Never pooled across sweeps (paper §4.7: contrasts are paired within a sweep)."""
    out = []
    for (sweep, arm), g in losses.groupby(["sweep", "arm"], sort=True):
        counts = g["kind"].value_counts()
        at = g[g["kind"] == DROPPED]["lost_at_fold"].astype(int).value_counts().sort_index()
        out.append({"sweep": sweep, "arm": arm, "rows": g["row_id"].nunique(),
                    "facts": len(g), **{k: int(counts.get(k, 0)) for k in (*KINDS, OPAQUE)},
                    "dropped_at": "; ".join(f"{f}: {n}" for f, n in at.items())})
    opaque = bool(out) and any(r[OPAQUE] for r in out)
    df = pd.DataFrame(out, columns=[*LOSS_TABLE, OPAQUE] if opaque else LOSS_TABLE)
    arm_rank = arm_sort_key(plan.arm_order)
    return df.sort_values(["sweep", "arm"], key=lambda s: arm_rank(s) if s.name == "arm"
                          else s).reset_index(drop=True)


def loss_table(losses: pd.DataFrame, plan: AnalysisPlan) -> Table:
    by_arm = losses_by_arm(losses, plan)
    recs = by_arm.to_dict("records")
    ran_on = models_by_arm(losses)
    for r in recs:
        r["title"] = plan.arm_title(r["arm"], *ran_on.get((str(r["sweep"]), str(r["arm"])), ()))
        r["_why_dropped_at"] = "none dropped"
        r["dropped_at"] = r["dropped_at"] or None
    if not recs:
        recs = [{"_why_row": "no valid row with a fact trace"}]
    body = Body(
        "Graded facts of valid rows by what the per-fold trace shows happened to them: never "
        "in a carry from the fold that planted them on; carried, then dropped (the fold "
        "whose carry lost it for good, as fold: facts); in the final carry but missed by "
        "the answer (paper §4.10's second loss); recalled. Presence is the grader's "
        "whole-token rule on each fold's carry.",
        [Col("sweep", "sweep"), Col("arm", "arm"), Col("title", "representation"),
         Col("rows", "rows", "int"), Col("facts", "graded facts", "int"),
         *[Col(k, KIND_TITLES[k], "int") for k in (NEVER_CARRIED, DROPPED)],
         Col("dropped_at", "dropped at fold"),
         *[Col(k, KIND_TITLES[k], "int") for k in (MISSED_IN_ANSWER, RECALLED)],
         *([Col(OPAQUE, KIND_TITLES[OPAQUE], "int")] if OPAQUE in by_arm.columns else [])],
        recs, csv=by_arm)
    body.notes += index_notes(losses, plan)
    return body.named("fact-losses", "Where the facts were lost")


def index_notes(losses: pd.DataFrame, plan: AnalysisPlan) -> list[str]:
    """Per (sweep, index arm), where the facts its final fold kept were: in the
    model's carry only, in the identifier index only, or in both."""
    out = []
    for (sweep, arm), g in losses[losses["arm"].isin(plan.index_bases)].groupby(
            ["sweep", "arm"], sort=True):
        n = g["final_in"].value_counts()
        out.append(f"{sweep}, index arm {arm}: of {int(n.drop('', errors='ignore').sum())} "
                   f"graded facts its final fold kept, {int(n.get('carry', 0))} in the carry "
                   f"only, {int(n.get('index', 0))} in the index only, "
                   f"{int(n.get('both', 0))} in both.")
    return out


def trace_figure(trace: pd.DataFrame | None, checks: pd.DataFrame, rows: pd.DataFrame,
                 plan: AnalysisPlan) -> Figure:
    """The fact-trace figure is the fact-survival figure (one, not two): per
    sweep, the share of valid rows' graded facts still carried k folds after the fold that
    planted them, per arm with its block-resampled band, so the loss at the first fold
    (never carried) stands apart from the loss over folds (paper §4.4)."""
    survival = (fact_survival(fact_grid(trace, checks, rows), plan) if trace is not None
                else None)
    return survival_figure(survival, plan, models=models_by_arm(rows))



def survival_figure(survival: pd.DataFrame | None, plan: AnalysisPlan,
                    why_empty: str = NO_TRACE,
                    models: dict[tuple[str, str], tuple[str, ...]] | None = None) -> Figure:
    """Fact survival: per sweep a panel, per arm the share of graded facts still carried
    k folds after the fold that planted them (the product-limit `survival`, so a run's
    end censors a late-planted fact instead of bending the curve up), with its
    block-resampled band. The gap below 1 at k = 0 is the loss at the first fold ("never
    carried"); the fall after it the loss over folds (paper §4.4). models: (sweep, arm) ->
    the models it ran on (analysis/plan.py models_by_arm), which a native arm's title in
    the legend is over."""
    s = survival if survival is not None else pd.DataFrame(
        columns=columns.FACT_SURVIVAL_TABLE)
    s = s[s["facts"] > 0]
    sweeps = sorted(set(s["sweep"])) or [None]
    fig, axes = pyplot().subplots(1, len(sweeps), figsize=(4.8 * len(sweeps) + 0.6, 3.6),
                             squeeze=False)
    for ax, sweep in zip(axes[0], sweeps, strict=True):
        if sweep is None:
            ax.text(0.5, 0.5, f"— {why_empty if survival is None else 'no valid row'}",
                    ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        _survival_panel(ax, s[s["sweep"] == sweep], plan, {
            a: m for (sw, a), m in (models or {}).items() if sw == str(sweep)})
        ax.set_title(f"sweep {sweep}", fontsize=9, loc="left")
    fig.tight_layout()
    return fig


def _survival_panel(ax: Axes, s: pd.DataFrame, plan: AnalysisPlan,
                    models: dict[str, tuple[str, ...]]) -> None:
    arms = [a for a in plan.arm_order if a in set(s["arm"])]
    arms += sorted(set(s["arm"]) - set(arms))
    ax.axhline(1.0, color="#bbbbbb", lw=1.5, zorder=0)
    for i, arm in enumerate(arms):  # hollow markers shrinking: equal lines stay visible
        a = s[s["arm"] == arm].sort_values("k")
        line, = ax.plot(a["k"], a["survival"].astype(float), marker="osD^v<>ph"[i % 9],
                        ms=max(3, 9 - 1.5 * i), mfc="none",
                        label=f"{arm} {plan.arm_title(arm, *models.get(arm, ()))} "
                              f"({int(a['rows'].max())} rows)")
        ax.fill_between(a["k"], a["survival_low"].astype(float),
                        a["survival_high"].astype(float), color=line.get_color(),
                        alpha=0.15, lw=0)
    ax.set_xticks(sorted(set(s["k"])))
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel("folds after the fold that planted the fact (k)")
    ax.set_ylabel("share of graded facts still carried")
    ax.text(0.99, 0.98, "k = 0: the planting fold's carry (below 1: never carried)\n"
            "after: lost over folds · band: blocks resampled", ha="right", va="top",
            fontsize=6.5, color="#666666", transform=ax.transAxes)
    ax.legend(fontsize=7, frameon=False, loc="lower left")


def read_trace(path: str | Path | None) -> pd.DataFrame | None:
    """trace.csv checked against its columns, or None where the evidence has none (a
    reviewer's package without the optional file)."""
    if not path or not Path(path).is_file():
        return None
    return read_artifact(Path(path), columns.TRACE_REQUIRED)


def write_trace_report(trace_csv: str | None, rows_csv: str, checks_csv: str, plan: AnalysisPlan,
                       template: str, figure_png: str, figure_svg: str, table_md: str,
                       table_csv: str, facts_csv: str) -> pd.DataFrame:
    """The figure (PNG, SVG), the losses table (Markdown, CSV) and every graded fact's
    kind (facts_csv); returns the per-fact losses."""
    rows = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    checks = read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED)
    trace = read_trace(trace_csv)
    losses = (fact_losses(trace, checks, rows) if trace is not None
              else pd.DataFrame(columns=FACT_LOSSES))
    fig = trace_figure(trace, checks, rows, plan)
    for p in (figure_png, figure_svg):
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=200, metadata={"Date": None} if p.endswith(".svg") else None)
    pyplot().close(fig)
    table = loss_table(losses, plan)
    Path(table_md).parent.mkdir(parents=True, exist_ok=True)
    Path(table_md).write_text(
        render_template(Path(template).parent, Path(template).name, t=table,
                        cells=table.cells(),
                        source="results/evidence/trace.csv" if trace is not None else None),
        encoding="utf-8")
    table.frame().to_csv(table_csv, index=False, lineterminator="\n")
    losses.to_csv(facts_csv, index=False, lineterminator="\n")
    return losses


def trace_stage(input: Any, output: Any, params: Any) -> pd.DataFrame:
    """Rule trace: results/figures/fact-trace.{png,svg} and results/trace/."""
    # Identity first: evidence of another study is refused before anything is written.
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    # with the config: its own arms and A/A copies (an A/A copy of an arm whose carry may
    # be opaque may be opaque too)
    plan = AnalysisPlan.load(input.analysis, input.arms, params.config)
    # This rule does not wait for stats: it checks the evidence itself, so an impossible
    # package leaves no trace figure behind either.
    load_evidence(Path(input.rows).parent, plan.arm_order, plan.scenarios, plan.opaque_arms)
    return write_trace_report(input.get("trace"), input.rows, input.checks, plan, input.template,
                              output.png, output.svg, output.table_md, output.table_csv,
                              output.facts)
