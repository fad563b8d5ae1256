"""Recall at retained tokens: one point per (sweep, model, arm), its mean recall
with an interval against the tokens its runs kept at their end, and the frontier.

A carrier is read the way agent builders read one: how much it recalls for the tokens it
keeps. Every arm is a point here, the paper's arms, index arms and own arms alike (those
outside the matched comparison included: arm.is_matched). Retained tokens are the
row's `retained_tokens` (the final carry's and the index's, counted as the study counts
tokens); a row whose record predates it is not a point.

The frontier (per sweep and model): the points no other point dominates, i.e. none keeps
at most as many tokens and recalls at least as much, better in one. The pick: the
frontier point at the fewest tokens whose mean recall is within the equivalence (TOST)
margin of the best point's (resources/analysis.yaml `equivalence_margin`), read on the
means, so it says where a cheaper carrier gives up no more than the margin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .plan import AnalysisPlan

COLUMNS = ["sweep", "model", "arm", "kind", "n", "mean_recall", "recall_low",
           "recall_high", "retained_tokens", "frontier", "pick"]
# Why a sweep has no point: every row predates retained_tokens (a package made before
# the column) or no row is valid.
NO_RETAINED = "no valid row records retained tokens (a package made before the column)"


def arm_kind(arm: str, plan: AnalysisPlan) -> str:
    """paper (an arm of the matched comparison), index (an index arm), own (an arm the
    config's arms file adds, matched with its twin) or unmatched (an own arm at its own
    capacity, `match: false`)."""
    if arm in plan.index_bases:
        return "index"
    if arm in plan.unmatched:
        return "unmatched"
    return "paper" if arm in plan.arm_order else "own"


def recall_band(recalls: np.ndarray, plan: AnalysisPlan, salt: str) -> tuple[float, float]:
    """A percentile bootstrap interval of a mean recall over rows (the rows of one cell
    are independent repeats), seeded by the plan's seed and the cell, so it is pinned."""
    if len(recalls) < 2:
        return float("nan"), float("nan")
    seed = plan.seed + sum(salt.encode())
    idx = np.random.default_rng(seed).integers(0, len(recalls),
                                               size=(plan.resamples, len(recalls)))
    means = recalls[idx].mean(axis=1)
    alpha = 1.0 - plan.confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def frontier(tokens: list[float], recall: list[float]) -> list[bool]:
    """Per point, whether no other point dominates it: none keeps at most its tokens and
    recalls at least as much, with one of the two strictly better."""
    out = []
    for i, (t, r) in enumerate(zip(tokens, recall, strict=True)):
        out.append(not any(
            j != i and tj <= t and rj >= r and (tj < t or rj > r)
            for j, (tj, rj) in enumerate(zip(tokens, recall, strict=True))))
    return out


def pick(points: pd.DataFrame, margin: float) -> int | None:
    """The index of the frontier point at the fewest tokens whose mean recall is within
    `margin` of the best point's (None: no point, or no point recalled anything: where
    every arm recalls nothing, the fewest tokens is no finding, and naming that arm as
    the cheapest carrier would read as one)."""
    if points.empty:
        return None
    best = float(points["mean_recall"].max())
    if best <= 0:
        return None
    near = points[points["frontier"] & (points["mean_recall"] >= best - margin - 1e-12)]
    return int(near.sort_values(["retained_tokens", "mean_recall"],
                                ascending=[True, False]).index[0])


def retained_points(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """The retained-token table of these valid rows: a line per (sweep, model, arm) with
    a recorded retained_tokens, the frontier and the pick per (sweep, model)."""
    if "retained_tokens" not in valid.columns:
        return pd.DataFrame(columns=COLUMNS)
    valid = valid.assign(retained_tokens=pd.to_numeric(valid["retained_tokens"], errors="coerce"))
    valid = valid[valid["retained_tokens"].notna() & valid["recall"].notna()]
    order = {a: i for i, a in enumerate(plan.arm_order)}
    out: list[dict[str, Any]] = []
    for (sweep, model), g in valid.groupby(["sweep", "model"], sort=True):
        recs = []
        for arm, ga in g.groupby("arm", sort=False):
            recalls = ga["recall"].to_numpy(dtype=float)
            lo, hi = recall_band(recalls, plan, f"{sweep}/{model}/{arm}")
            recs.append({"sweep": sweep, "model": model, "arm": arm,
                         "kind": arm_kind(str(arm), plan), "n": len(ga),
                         "mean_recall": float(recalls.mean()), "recall_low": lo,
                         "recall_high": hi,
                         "retained_tokens": float(ga["retained_tokens"].mean())})
        recs.sort(key=lambda r: (order.get(r["arm"], len(order)), str(r["arm"])))
        pts = pd.DataFrame(recs)
        pts["frontier"] = frontier(list(pts["retained_tokens"]), list(pts["mean_recall"]))
        chosen = pick(pts, plan.equivalence_margin)
        pts["pick"] = [i == chosen for i in pts.index]
        out += pts.to_dict("records")
    return pd.DataFrame(out, columns=COLUMNS)


def picks(points: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (sweep, model), the picked point and the best one (the summary's line); a cell
    where no arm recalled anything has no pick and no best arm (arm None)."""
    out: list[dict[str, Any]] = []
    for (sweep, model), g in points.groupby(["sweep", "model"], sort=True):
        chosen, best = g[g["pick"]], g.loc[g["mean_recall"].idxmax()]
        if chosen.empty:
            if float(best["mean_recall"]) <= 0:
                out.append({"sweep": sweep, "model": model, "arm": None})
            continue
        c = chosen.iloc[0]
        out.append({"sweep": sweep, "model": model, "arm": c["arm"],
                    "mean_recall": float(c["mean_recall"]),
                    "retained_tokens": float(c["retained_tokens"]), "best_arm": best["arm"],
                    "best_recall": float(best["mean_recall"]),
                    "best_tokens": float(best["retained_tokens"])})
    return out
