"""The paper's figures (matplotlib, PNG and SVG), from the evidence and numbers.json.

Each figure is declared once, in report/titles.FIGURES (name, title, caption, what it
reads); a figure of rule figures is drawn by the function of its name here (dashes as
underscores), marked `@drawer`, and bound to its entry by that name: a figure without a
drawer, or a drawer without an entry, fails at import, naming it.

Descriptive positions come from analysis/ (the functions numbers.py flattens) and
intervals and r from numbers.json, so a figure and a table never disagree. Every mean is
drawn with its n: rows are near-binary and a mean is a small count. Sizes grow with the
number of models so a 60-model study stays legible.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..analysis.card import AA_SOURCE, ContrastVerdict, Decision
from ..analysis.cells import valid_rows
from ..analysis.headings import recall_by_headings
from ..analysis.partition import partition
from ..analysis.plan import AnalysisPlan
from ..analysis.recall import recall_cells
from ..analysis.retained import NO_RETAINED, retained_points
from ..analysis.scopes import Scopes
from ..carriers.uncompacted import UNCOMPACTED_SOURCE
from ..evidence import columns
from ..evidence.load import read_artifact
from ..evidence.provenance import check_same_study
from ..io import read_json
from .plotting import pyplot
from .titles import FigureEntry, bind, drawn_by

plt = pyplot()  # this module draws in every job that imports it

Numbers = dict[str, float | int]
CLASS_COLOURS = {"works": "#7f7f7f", "rescued": "#1b9e77", "not rescued": "#d95f02",
                 "over_writing": "#1b9e77", "under_writing": "#d95f02", "healthy": "#7f7f7f",
                 "unknown": "#7570b3"}

plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "svg.fonttype": "none",
                     "axes.spines.top": False, "axes.spines.right": False})

# A drawer draws one figure of rule figures from the rows its entry reads, numbers.json,
# the plan and the scopes, every drawer alike, so make_figures calls each the same way.
Drawer = Callable[[pd.DataFrame, Numbers, AnalysisPlan, Scopes], plt.Figure]
DRAWERS: dict[str, Drawer] = {}


def drawer(fn: Drawer) -> Drawer:
    """Mark fn as the drawer of the figure its name names (report/titles.FigureEntry)."""
    DRAWERS[fn.__name__] = fn
    return fn


def _empty(ax: plt.Axes, why: str) -> None:
    ax.text(0.5, 0.5, f"— {why}", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _scoped(rows: pd.DataFrame, sc: Scopes, analysis: str, make) -> pd.DataFrame:
    """make(group rows) per group of the analysis' scope, stacked; when the scope has
    several groups, model names carry their group ('sweep/model')."""
    valid = valid_rows(rows)
    parts = []
    for g, vg in sc.select(analysis, valid):
        df = make(vg)
        if g.qualified and len(df):
            df = df.assign(model=g.label + "/" + df["model"].astype(str))
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else make(valid.iloc[:0])


@drawer
def recall_heatmap(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                   sc: Scopes | None = None) -> plt.Figure:
    """Model x arm mean recall (primary scenario, Table 1's scope) with n in each cell."""
    sc = sc or Scopes()
    cells = _scoped(rows, sc, "table1",
                    lambda vg: recall_cells(vg[vg["scenario"] == plan.primary_scenario], plan))
    arms = [a for a in plan.arm_order if a in set(cells["arm"])]
    models = sorted(set(cells["model"]))
    fig, ax = plt.subplots(figsize=(max(5.5, 1.6 + 0.62 * len(arms)),
                                    1.6 + 0.3 * max(len(models), 3)))
    if cells.empty:
        _empty(ax, "no valid row")
        return fig
    mean = cells.pivot(index="model", columns="arm", values="mean").reindex(models)[arms]
    n = cells.pivot(index="model", columns="arm", values="n").reindex(models)[arms]
    m = np.ma.masked_invalid(mean.to_numpy(dtype=float))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#eeeeee")
    im = ax.imshow(m, cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    small = len(models) > 30
    for i in range(len(models)):
        for jx in range(len(arms)):
            val, cnt = mean.iat[i, jx], n.iat[i, jx]
            if np.isnan(val):
                ax.text(jx, i, "—", ha="center", va="center", fontsize=7, color="#777777")
                continue
            text = f"{val:.2f}" if small else f"{val:.2f}\nn={int(cnt)}"
            if small:
                text = f"{val:.2f} ({int(cnt)})"
            ax.text(jx, i, text, ha="center", va="center", fontsize=5.5 if small else 7,
                    color="white" if val < 0.6 else "black")
    ax.set_xticks(range(len(arms)), arms)
    ax.set_yticks(range(len(models)), models, fontsize=6.5 if small else 8)
    ax.xaxis.set_ticks_position("top")
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, shrink=min(1.0, 8 / len(models) + .2))
    cb.set_label("mean recall over valid rows")
    ax.set_title(f"Recall by model and arm, {plan.primary_scenario} scenario\n"
                 "(n = valid rows; — not run)", pad=18)
    fig.tight_layout()
    return fig


@drawer
def ladder(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan, sc: Scopes | None = None
           ) -> plt.Figure:
    """The j -> q -> m rungs per group of the ladder scope: mean with its within-model
    bootstrap interval; the paired effects between rungs when the scope is one group."""
    sc = sc or Scopes()
    groups = sc.groups("ladder", rows)
    colours = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(5.2 + 0.4 * max(len(groups) - 1, 0), 3.6))
    drawn = 0
    for gi, g in enumerate(groups):
        xs, ys = [], []
        off = (gi - (len(groups) - 1) / 2) * 0.12
        for i, arm in enumerate(plan.ladder):
            mu = numbers.get(f"ladder.mean[{g.cell(arm)}]")
            if mu is None:
                continue
            lo = numbers.get(f"ladder.ci_low[{g.cell(arm)}]", mu)
            hi = numbers.get(f"ladder.ci_high[{g.cell(arm)}]", mu)
            c = colours[gi % len(colours)] if g.qualified else "#1f4e79"
            ax.errorbar(i + off, mu, yerr=[[mu - lo], [hi - mu]], fmt="o", color=c,
                        capsize=5, ms=7, lw=1.5, label=g.label if g.qualified and not xs
                        else None)
            ax.annotate(f"{mu:.3f}\nn={numbers[f'ladder.n[{g.cell(arm)}]']}", (i + off, mu),
                        xytext=(12, 14 if mu < 0.15 else -4),  # clear of the axis near 0
                        textcoords="offset points", fontsize=8, va="center")
            xs.append(i + off)
            ys.append(mu)
        if xs:
            drawn += 1
            ax.plot(xs, ys, color="#1f4e79", alpha=0.35, lw=1)
        if g.qualified:
            continue
        for i, (prev, arm) in enumerate(zip(plan.ladder, plan.ladder[1:], strict=False)):
            cell = g.cell(arm, prev)
            d = numbers.get(f"ladder.effect.diff[{cell}]")
            if d is None:
                continue
            lo, hi = (numbers[f"ladder.effect.ci_low[{cell}]"],
                      numbers[f"ladder.effect.ci_high[{cell}]"])
            ax.text(i + 0.5, 1.13, f"{prev} → {arm}: {d:+.3f}\n[{lo:+.3f}, {hi:+.3f}]",
                    ha="center", va="center", fontsize=7.5, color="#444444")
    if not drawn:
        _empty(ax, "no (sweep, model) cell ran every rung")
        return fig
    if any(g.qualified for g in groups):
        ax.legend(fontsize=7.5, frameon=False, loc="lower right")
    ax.set_xticks(range(len(plan.ladder)),
                  [f"{a}\n{plan.arm_title(a)}" for a in plan.ladder], fontsize=8)
    ax.set_xlim(-0.5, len(plan.ladder) - 0.3)
    ax.set_ylim(-0.02, 1.22)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("mean recall (95% CI, blocks resampled within model)")
    ax.set_title("The ladder: each rung moves one thing\n(top: paired effect of each rung "
                 "[95% CI], one group only)", fontsize=9.5)
    fig.tight_layout()
    return fig


@drawer
def fill_vs_recall(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                   sc: Scopes | None = None) -> plt.Figure:
    """Per model of the partition scope, undivided fill against undivided recall, coloured
    by failure mode; the divided arm's recall is the hollow marker the line leads to."""
    sc = sc or Scopes()
    part = _scoped(rows, sc, "partition", lambda vg: partition(vg, plan))
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    part = part[part["j_fill"].notna()]
    if part.empty:
        _empty(ax, f"no model with a declared {plan.undivided} ceiling and both arms")
        return fig
    for mode, g in part.groupby("mode"):
        c = CLASS_COLOURS.get(mode, "#333333")
        label = {"healthy": f"{plan.undivided} works", "over_writing": "over-writing failure",
                 "under_writing": "under-writing failure"}.get(mode, mode)
        ax.vlines(g["j_fill"], g["j_mean"], g["q_mean"], colors=c, alpha=0.35, lw=1)
        ax.scatter(g["j_fill"], g["j_mean"], color=c, s=28, label=f"{label} ({len(g)})",
                   zorder=3)
        ax.scatter(g["j_fill"], g["q_mean"], facecolors="none", edgecolors=c, s=28, zorder=3)
    # Name a model where its label has room; crowded points stay unnamed (the
    # fill-and-failure-modes table names every model).
    placed: list[tuple[float, float]] = []
    for _, r in part.sort_values(["failing", "j_mean"], ascending=[False, True]).iterrows():
        x, y = r["j_fill"], r["j_mean"]
        if len(part) > 40 or any(abs(x - px) < 0.16 and abs(y - py) < 0.04 for px, py in placed):
            continue
        placed.append((x, y))
        ax.annotate(r["model"], (x, y), xytext=(4, -3), textcoords="offset points",
                    fontsize=6, color="#555555", annotation_clip=True)
    ax.axhline(plan.failing_recall, color="#999999", ls="--", lw=0.8)
    ax.axvline(plan.failure_mode_fill_split, color="#999999", ls=":", lw=0.8)
    ax.scatter([], [], facecolors="none", edgecolors="#333333", s=28,
               label=f"{plan.divided} recall, same model")
    r = numbers.get("fill.r")
    # r is the fill scope's (every measured model), which may hold more models than the
    # partition scope plotted here (paper §4.6: 25 measured, 20 in the partition)
    rtext = (f"r = {r:+.2f} over {numbers['fill.n_models']} measured models" if r is not None
             else "r: one per sweep, see the inference table"
             if any(k.startswith("fill.r[") for k in numbers) else "r: too few models")
    ax.set_title(f"Fill vs recall of the undivided carrier ({rtext})")
    ax.set_xlabel(f"{plan.undivided} fill of its declared ceiling (mean over valid rows)")
    ax.set_ylabel("mean recall")
    ax.set_xlim(0, 1.05)
    ax.set_ylim(-0.03, 1.05)
    ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.legend(fontsize=7.5, loc="upper center", frameon=False, bbox_to_anchor=(0.5, -0.13),
              ncol=2)
    fig.tight_layout()
    return fig


@drawer
def headings_vs_recall(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                       sc: Scopes | None = None) -> plt.Figure:
    """Row recall by fixed headings that arrived, single-field-schema arms: rows jittered,
    means with n."""
    valid = valid_rows(rows)
    g = valid[valid["arm"].isin(plan.single_field_schema) & valid["headings_carried"].notna()]
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    if g.empty:
        _empty(ax, "no single-field-schema row")
        return fig
    rng = np.random.default_rng(0)  # jitter only; fixed so the figure is reproducible
    h = g["headings_carried"].astype(int).to_numpy()
    alpha = float(np.clip(40 / max(len(g), 1), 0.03, 0.5))
    ax.scatter(h + rng.uniform(-0.25, 0.25, len(h)),
               g["recall"] + rng.uniform(-0.015, 0.015, len(h)), s=6, alpha=alpha,
               color="#1f4e79", linewidths=0)
    tab = recall_by_headings(valid, plan)
    t = tab[tab["rows"] > 0]
    ax.plot(t["headings"], t["mean"], "o-", color="#d95f02", ms=6, zorder=3,
            label="mean recall")
    for _, r in tab.iterrows():
        ax.text(int(r["headings"]), 1.09, f"n={int(r['rows']):,}", ha="center", fontsize=7.5)
    rr = numbers.get("headings.r")
    sub = (f"r = {rr:+.2f} over {numbers['headings.n_rows']:,} valid rows, all arms"
           if rr is not None else "r: not computable")
    ax.set_title(f"Headings that arrived vs recall ({', '.join(plan.single_field_schema)})\n{sub}",
                 fontsize=9.5)
    ax.set_xticks(range(6))
    ax.set_xlim(-0.5, 5.5)
    ax.set_xlabel("fixed headings present in the final carry")
    ax.set_ylabel("row recall")
    ax.set_ylim(-0.05, 1.15)
    ax.legend(fontsize=8, loc="lower right", frameon=False)
    fig.tight_layout()
    return fig


@drawer
def partition_gap(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                  sc: Scopes | None = None) -> plt.Figure:
    """q - j per model of the partition scope, ordered by the undivided arm, coloured by
    class."""
    sc = sc or Scopes()
    part = _scoped(rows, sc, "partition", lambda vg: partition(vg, plan))
    fig, ax = plt.subplots(figsize=(6.4, 1.4 + 0.22 * max(len(part), 4)))
    if part.empty:
        _empty(ax, f"no model ran both {plan.undivided} and {plan.divided}")
        return fig
    cls = part.apply(lambda r: "works" if not r["failing"] else
                     ("rescued" if r["rescued"] else "not rescued"), axis=1)
    y = np.arange(len(part))[::-1]
    colours = [CLASS_COLOURS[c] for c in cls]
    ax.barh(y, part["gap"], color=colours, height=0.7)
    ax.scatter(part["gap"], y, color=colours, s=12, zorder=3)  # a zero gap stays visible
    labels = [f"{m}  ({j:.2f}{' *' if b else ''})" for m, j, b in
              zip(part["model"], part["j_mean"], part["borderline"], strict=True)]
    ax.set_yticks(y, labels, fontsize=7 if len(part) > 30 else 8)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel(f"gap: {plan.divided} mean − {plan.undivided} mean (paired within one sweep)")
    ax.legend(handles=[Patch(color=CLASS_COLOURS[c], label=f"{c} ({int((cls == c).sum())})")
                       for c in ("works", "rescued", "not rescued")],
              fontsize=7.5, loc="lower left", frameon=False)
    ax.set_title(f"Partition gap per model (label: {plan.undivided} mean; * borderline)")
    ax.set_ylim(-0.8, len(part) - 0.2)
    fig.tight_layout()
    return fig


KIND_COLOURS = {"paper": "#1f77b4", "index": "#d95f02", "own": "#7570b3",
                "unmatched": "#e7298a"}


@drawer
def retained_tokens(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                    sc: Scopes | None = None) -> plt.Figure:
    """Per (sweep, model), each arm's mean recall with its interval against the
    tokens it retained at the end (analysis/retained.py), every arm a point, the
    frontier drawn through the points no other dominates and the pick ringed."""
    sc = sc or Scopes()
    pts = _scoped(rows, sc, "retained", lambda vg: retained_points(vg, plan))
    cells = list(pts.groupby(["sweep", "model"], sort=True)) if len(pts) else []
    n = max(1, len(cells))
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
    if not cells:
        _empty(axes[0][0], NO_RETAINED)
        return fig
    for ax in axes.flat[len(cells):]:
        ax.set_visible(False)
    for ax, ((sweep, model), g) in zip(axes.flat, cells, strict=False):
        for _, p in g.iterrows():
            colour = KIND_COLOURS.get(p["kind"], "#7f7f7f")
            if not np.isnan(p["recall_low"]):
                ax.plot([p["retained_tokens"]] * 2, [p["recall_low"], p["recall_high"]],
                        color=colour, lw=1.2)
            ax.scatter([p["retained_tokens"]], [p["mean_recall"]], color=colour, s=24,
                       zorder=3)
            if p["pick"]:
                ax.scatter([p["retained_tokens"]], [p["mean_recall"]], s=110,
                           facecolors="none", edgecolors="black", zorder=4)
            ax.annotate(f"{p['arm']} (n={p['n']})", (p["retained_tokens"], p["mean_recall"]),
                        xytext=(4, 3), textcoords="offset points", fontsize=7)
        front = g[g["frontier"]].sort_values("retained_tokens")
        ax.step(front["retained_tokens"], front["mean_recall"], where="post", color="black",
                lw=0.8, ls="--", label="frontier")
        ax.set_ylim(-0.05, 1.08)
        ax.set_xlabel("tokens retained at the end (carry + index)")
        ax.set_ylabel("mean recall")
        ax.set_title(f"{model} ({sweep})", fontsize=9)
    axes.flat[0].legend(handles=[*(Patch(color=c, label=k) for k, c in KIND_COLOURS.items()
                                   if k in set(pts["kind"])),
                                 plt.Line2D([], [], color="black", ls="--", label="frontier"),
                                 plt.Line2D([], [], marker="o", ls="", mfc="none",
                                            mec="black", label="pick")],
                        fontsize=7, loc="lower right", frameon=False)
    fig.tight_layout()
    return fig


def _bind(entries: tuple[FigureEntry, ...], drawers: dict[str, Drawer]
          ) -> list[tuple[FigureEntry, Drawer]]:
    """Each figure of rule figures with its drawer, in registry order; a figure without a
    drawer, or a drawer without an entry, fails naming it."""
    return bind(entries, drawers, "figure", "drawer", "report/figures.py")  # type: ignore[return-value]


_bind(drawn_by(), DRAWERS)  # at import, so a slip fails before any figure is drawn


def make_figures(rows: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                 sc: Scopes | None = None) -> dict[str, plt.Figure]:
    """Each figure of rule figures by name, in registry order (report/titles.FIGURES)."""
    sc = sc or Scopes()
    sc.check(rows)
    # the paper's figures are matched ones: no arm outside the comparison (is_matched);
    # a figure whose entry reads all arms gets every row
    matched = rows[~rows["arm"].isin(plan.unmatched)] if plan.unmatched else rows
    return {e.name: draw(rows if e.all_arms else matched, numbers, plan, sc)
            for e, draw in _bind(drawn_by(), DRAWERS)}


def write_figures(rows_csv: str | Path, numbers_json: str | Path, plan: AnalysisPlan,
                  out_dir: str | Path, scopes: Scopes | None = None) -> list[Path]:
    """Each figure as PNG (200 dpi) and SVG."""
    rows = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    numbers = read_json(numbers_json)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in make_figures(rows, numbers, plan, scopes).items():
        for ext in ("png", "svg"):
            p = out / f"{name}.{ext}"
            fig.savefig(p, dpi=200, metadata={"Date": None} if ext == "svg" else None)
            written.append(p)
        plt.close(fig)
    return written


def figures_stage(input: Any, output: Any, params: Any) -> list[Path]:
    """Rule figures: results/figures/."""
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    return write_figures(input.rows, input.numbers, AnalysisPlan.load(input.analysis, input.arms,
                                                                  params.config),
                         Path(output[0]).parent, Scopes.from_config(params.scopes))


# ------------------------------------------------------------- the decision's forest
VERDICT_COLOURS = {"better": "#1b9e77", "equivalent": "#7570b3", "undecided": "#7f7f7f"}


def verdict_kind(word: str) -> str:
    """better, equivalent or undecided: a card's word as the forest colours it."""
    if word.endswith(" better"):
        return "better"
    return "equivalent" if word.startswith("equivalent") else "undecided"


def forest_rows(doc: Decision) -> list[tuple[str, ContrastVerdict | None]]:
    """The forest's rows, top to bottom: per card a row saying why it has no point (every
    arm lost every fact, or no contrast), then a row per contrast, labelled b − a with
    each arm's failed folds (said beside each of its differences: report/decision.py)
    and, on the ceiling's line, the ceiling's own mean recall."""
    lines: list[tuple[str, ContrastVerdict | None]] = []
    for c in doc.cards:
        head = f"{c.model} ({c.sweep})"
        if c.all_lost or not c.contrasts:
            lines.append((f"{head}: every arm lost every fact" if c.all_lost else
                          f"{head}: no contrast", None))
        failed = c.fold_failures
        ceiling = {x.ceiling: x.ceiling_recall for x in c.ceiling_lines}
        for v in c.contrasts:
            label = f"{head}  {v.b} − {v.a}" + "".join(
                f" ({a}: {failed[a]})" for a in (v.a, v.b) if a in failed)
            if v.source == UNCOMPACTED_SOURCE:
                top = v.b if v.b in ceiling else v.a
                label += (f" [ceiling, recall {ceiling[top]:.2f}]" if top in ceiling
                          else " [ceiling]")
            lines.append((label, v))
    return lines


AA_BAND = "#f4c7a1"
LEGEND_INCHES = 0.6


def _number(x: float | None) -> float | None:
    """A contrast's number, or None where there is none (null in decision.json, NaN as
    computed)."""
    return None if x is None or math.isnan(x) else x


def decision_forest(doc: Decision) -> plt.Figure:
    """results/figures/decision.*: per (sweep, model) each contrast's difference b − a
    over blocks with its bootstrap interval, the TOST margin band, and the card's word
    (results/decision.json; report/decision.py writes it). Where the cell ran an A/A
    control, each contrast's row carries the A/A noise floor as a band (a difference
    inside it is never a finding: analysis/verdict.py noise_floor); the ceiling's line
    (the whole session against the best arm) is drawn as a diamond, its own recall in
    its label. A model where every arm lost every fact is a row saying so, with no
    point: no contrast is read there."""
    margin = float(doc.margin)
    lines = forest_rows(doc)
    fig, ax = plt.subplots(figsize=(7.6, 1.5 + LEGEND_INCHES + 0.3 * max(len(lines), 3)))
    if not lines:
        _empty(ax, "no card")
        return fig
    y = np.arange(len(lines))[::-1]
    ax.axvspan(-margin, margin, color="#dddddd", zorder=0,
               label=f"TOST margin ±{margin:g}")
    ax.axvline(0, color="black", lw=0.8)
    floors = ceilings = False
    for yi, (_, v) in zip(y, lines, strict=True):
        if v is None or (difference := _number(v.difference)) is None:
            continue
        if (floor := _number(v.aa_floor)) is not None:
            floors = True
            ax.fill_between([-floor, floor], yi - 0.32, yi + 0.32,
                            color=AA_BAND, zorder=1, lw=0)
        colour = VERDICT_COLOURS[verdict_kind(v.word)]
        low, high = _number(v.ci_low), _number(v.ci_high)
        if low is not None and high is not None:
            ax.plot([low, high], [yi, yi], color=colour, lw=1.6,
                    ls=":" if v.source == AA_SOURCE else "-")
        ceiling = v.source == UNCOMPACTED_SOURCE
        ceilings |= ceiling
        ax.scatter([difference], [yi], color=colour, s=34 if ceiling else 22,
                   marker="D" if ceiling else "o", zorder=3)
        ax.annotate(v.word, (1.0, yi), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=7.5,
                    color=colour, annotation_clip=False)
    ax.set_yticks(y, [label for label, _ in lines], fontsize=7 if len(lines) > 30 else 8)
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-0.8, len(lines) - 0.2)
    ax.set_xlabel("b − a: mean recall difference over blocks, with its 95% bootstrap "
                  "interval")
    handles = [Patch(color="#dddddd", label=f"TOST margin ±{margin:g}"),
               *(Patch(color=col, label=k) for k, col in VERDICT_COLOURS.items())]
    if floors:
        handles.append(Patch(color=AA_BAND, label="A/A noise floor (the card's A/A "
                                                  "interval)"))
    if ceilings:
        handles.append(Line2D([], [], color="black", marker="D", ls="",
                              label="the ceiling (whole session) − best arm"))
    # below the axes, never over a point: a strip of LEGEND_INCHES at the figure's foot
    ax.legend(handles=handles, fontsize=7.5, loc="lower center", frameon=False, ncol=3,
              bbox_to_anchor=(0.5, 0.0), bbox_transform=fig.transFigure)
    ax.set_title("Decision: each contrast's difference and verdict (adjusted within "
                 f"its family: {doc.family or 'sweep'})")
    fig.tight_layout(rect=(0, LEGEND_INCHES / fig.get_figheight(), 1, 1))
    return fig


def write_forest(doc: Decision, png: str | Path, svg: str | Path) -> None:
    """The forest as PNG (200 dpi) and SVG, as write_figures writes the others."""
    fig = decision_forest(doc)
    fig.savefig(png, dpi=200)
    fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
