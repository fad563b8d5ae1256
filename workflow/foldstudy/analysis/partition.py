"""The partition contrast, its failure modes and the depth re-run (paper §4.7).

The analyses behind report/tables/partition.py and the partition.* numbers: pure
functions of the valid rows and the plan.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .cells import cell_summary, mean
from .plan import AnalysisPlan


def partition(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """The capacity-matched contrast per model, paired within one sweep (paper §4.7:
    "A model's j and q means come from the same run, never pooled across runs").

    One row per (sweep, model) of the rows given that ran both arms; the caller passes
    the partition scope (the study config names its sweeps and models), so a depth
    re-run in another sweep never replaces a model's row. Failing / rescued / failure
    mode / borderline follow resources/analysis.yaml.
    """
    j, q = plan.undivided, plan.divided
    p = valid[(valid["scenario"] == plan.primary_scenario) & valid["arm"].isin([j, q])]
    out = []
    for (sweep, model), gs in p.groupby(["sweep", "model"], sort=True):
        gj, gq = gs[gs["arm"] == j], gs[gs["arm"] == q]
        if not gj["recall"].notna().any() or not gq["recall"].notna().any():
            continue
        sj, sq = cell_summary(gj, plan.row_recalled), cell_summary(gq, plan.row_recalled)
        fill = mean(gj["fill"])
        failing = sj["mean"] < plan.failing_recall
        mode = failure_mode(failing, fill, plan)
        out.append({
            "model": model, "sweep": sweep,
            "j_n": sj["n"], "j_mean": sj["mean"], "j_rows_ge_half": sj["rows_ge_half"],
            "q_n": sq["n"], "q_mean": sq["mean"], "q_rows_ge_half": sq["rows_ge_half"],
            "gap": sq["mean"] - sj["mean"], "j_fill": fill,
            "j_carried_chars": mean(gj["carried_chars"]), "q_fill": mean(gq["fill"]),
            "failing": bool(failing),
            "rescued": bool(failing and sq["mean"] >= plan.rescued_recall),
            "mode": mode,
            "borderline": bool(abs(sj["mean"] - plan.failing_recall) <= plan.borderline_margin),
        })
    cols = ["model", "sweep", "j_n", "j_mean", "j_rows_ge_half", "q_n", "q_mean",
            "q_rows_ge_half", "gap", "j_fill", "j_carried_chars", "q_fill", "failing",
            "rescued", "mode", "borderline"]
    df = pd.DataFrame(out, columns=cols).astype({"failing": bool, "rescued": bool,
                                                 "borderline": bool})
    return df.sort_values(["j_mean", "model"], kind="stable").reset_index(drop=True)


def failure_mode(failing: bool, fill: float, plan: AnalysisPlan) -> str:
    """partition.csv's `mode` of a model: healthy where its undivided arm does not fail,
    else by its fill against failure_mode_fill_split (paper §4.7: "fills the slot with
    description" at or above, "writes a short gist instead" below)."""
    if not failing:
        return "healthy"
    if np.isnan(fill):
        return "unknown"
    return "over_writing" if fill >= plan.failure_mode_fill_split else "under_writing"


def failure_modes(part: pd.DataFrame) -> pd.DataFrame:
    """Failing models by failure mode: their fills and how many partitioning rescued."""
    f = part[part["failing"]]
    out = []
    for mode in ("over_writing", "under_writing", "unknown"):
        g = f[f["mode"] == mode].sort_values("j_fill")
        if mode == "unknown" and g.empty:
            continue
        out.append({"mode": mode, "fills": list(g["j_fill"]), "models": int(len(g)),
                    "rescued": int(g["rescued"].sum()), "model_names": list(g["model"])})
    return pd.DataFrame(out, columns=["mode", "fills", "models", "rescued", "model_names"])


def separation(part: pd.DataFrame) -> pd.DataFrame:
    """Do rescued and non-rescued failing models separate by j fill, with and without
    the borderline models (paper §4.7)? margin = lowest rescued fill minus highest
    non-rescued fill; complete when it is positive."""
    out = []
    for label, sel in (("all", part["failing"]),
                       ("excluding_borderline", part["failing"] & ~part["borderline"])):
        f = part[sel & part["j_fill"].notna()]
        res = sorted(f.loc[f["rescued"], "j_fill"])
        non = sorted(f.loc[~f["rescued"], "j_fill"])
        margin = (min(res) - max(non)) if res and non else np.nan
        out.append({"classification": label, "rescued_fills": res, "non_rescued_fills": non,
                    "n_failing": len(f), "n_non_rescued": len(non), "margin": margin,
                    "complete": bool(margin > 0) if not np.isnan(margin) else False})
    return pd.DataFrame(out)


def partition_class(r: dict[str, Any] | pd.Series) -> str:
    """works / rescued / not rescued, with (borderline): how a partition row reads."""
    if not r["failing"]:
        return "works"
    return ("rescued" if r["rescued"] else "not rescued") + (" (borderline)"
                                                            if r["borderline"] else "")


def headings_distribution(h: pd.Series) -> str:
    """'0 on 10 rows, 5 on 2' — how many fixed headings arrived, row by row."""
    counts = h.dropna().astype(int).value_counts().sort_index()
    if len(counts) == 1:
        return f"{counts.index[0]} on all {int(counts.iloc[0])}"
    parts = [f"{k} on {int(c)}" for k, c in counts.items()]
    return ", ".join([parts[0] + " rows", *parts[1:]])  # the paper's §4.7 depth table


def depth(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Both arms in full of every model in the rows given (paper §4.7: "The negative half
    was re-run at three times the depth"), with the class its own rows give it.

    The caller passes the depth scope: the paper's names the depth sweep, whose models
    are the ones re-run, so this table is its own and never replaces a partition row.
    """
    part = partition(valid, plan)
    out = []
    for _, pm in part.iterrows():
        g = valid[(valid["sweep"] == pm["sweep"]) & (valid["model"] == pm["model"])]
        for arm in (plan.undivided, plan.divided):
            ga = g[g["arm"] == arm]
            s = cell_summary(ga, plan.row_recalled)
            out.append({"model": pm["model"], "sweep": pm["sweep"], "arm": arm, "n": s["n"],
                        "mean": s["mean"], "rows_ge_half": s["rows_ge_half"],
                        "fill": mean(ga["fill"]),
                        "headings": headings_distribution(ga["headings_carried"]),
                        "class": partition_class(pm)})
    return pd.DataFrame(out, columns=["model", "sweep", "arm", "n", "mean", "rows_ge_half",
                                      "fill", "headings", "class"])
