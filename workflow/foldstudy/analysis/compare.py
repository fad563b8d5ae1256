"""Arm against arm, fold by fold: what one representation kept that another lost,
read from the evidence alone (trace.csv, checks.csv, rows.csv; docs/design.md §8). Pure: frames in,
frames out.

Paper §4.9: "Under one opaque field the model writes about the session ... Under five
named headings the same model writes the decisions themselves." The comparison that finds
such a mechanism puts two runs of one block side by side. A block is (sweep, model,
repeat): one fixture, one model, one repeat, the arms run in design order (rows.csv
`position`), so a difference between two of its arms is paired on everything else.

Definitions, used by the grid, the paired table and the survival curve alike:
- a graded fact of a row is *planted* at trace.csv `planted_fold`;
- it is *kept through* fold f when every carry from its planting fold to f holds it (the
  grader's whole-token rule, as trace.csv `present` records it); `kept_through` is the
  last such fold, none when the planting fold's own carry missed it ("never carried");
- `lost_at` is the first fold from planting on whose carry misses it, none when every
  carry to the end held it; `last_held` the last fold from planting on whose carry held
  it (later than kept_through only when a value came back after a loss);
- *kept* at the final carry means present in the row's last fold's carry (as checks.csv
  in_carrier), *recalled* means checks.csv `correct`.

Counts and intervals read only the rows the one validity rule admitted (valid_rows);
facts within a row are not independent (paper §4 opening: ICC 0.750), so every interval
resamples whole blocks, never facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..evidence import columns
from . import stats
from .cells import BLOCK, valid_rows
from .plan import AnalysisPlan
from .scopes import Group

EN_DASH = "–"
# One line per (run with a trace, graded fact): the fact-by-fold grid in long form.
GRID = ["sweep", "model", "repeat", "arm", "position", "row_id", "valid", "label",
        "planted_fold", "folds", "kept_through", "lost_at", "last_held", "final", "recalled",
        "present"]
# Why there is nothing to compare: evidence mode (a package of rows and checks only).
NO_TRACE = ("no fact trace in the evidence (a package without run records and trace.csv "
            "has no carries to compare)")
NO_RECORDS = ("no run records (evidence mode): the comparison pages need each fold's carry, "
              "which a package of rows, checks and trace does not hold")


def pair_label(a: str, b: str) -> str:
    """`j–q`: the pair as docs/design.md §8 writes it, with an en dash."""
    return f"{a}{EN_DASH}{b}"


def compare_pairs(plan: AnalysisPlan, extra: Iterable[Sequence[str]] = ()) -> list[tuple[str, str]]:
    """The pairs to compare: resources/analysis.yaml's `arms.compare_pairs`, then any pair
    a study config adds (in its order), each once."""
    out: list[tuple[str, str]] = []
    for p in [*plan.compare_pairs, *extra]:
        pair = (str(p[0]), str(p[1]))
        if pair not in out:
            out.append(pair)
    return out


def why_not_built(has_records: bool, has_trace: bool) -> str | None:
    """One line saying why the comparison cannot be built, or None when it can: the tables
    need trace.csv, the pages need the run records' carries too."""
    if not has_trace:
        return NO_TRACE
    if not has_records:
        return NO_RECORDS
    return None


# ------------------------------------------------------------------------ the grid

def fact_grid(trace: pd.DataFrame, checks: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Every run with a trace, fact by fact (GRID): when it was planted, how long its arm
    kept it, and whether the answer recalled it. Invalid rows are kept, flagged `valid`
    false by the one validity rule, so a page can show them; counts read valid ones only.
    `present` is the fact's presence per fold as a string ('1' held, '0' not, one
    character per fold made, in fold order).

    Of one fact's lines (folds ascending), those from its planting fold on decide its
    fate: `lost_at` is the first of them whose carry missed it, `kept_through` the last
    before that, `last_held` the last that held it; `final` is the last line's presence
    when that line is from the planting fold on. Computed over all facts at once (one
    sort, one pass of array operations), since the grid is rebuilt by every page that
    reads it."""
    valid = set(valid_rows(rows)["row_id"])
    t = trace[trace["row_id"].isin(set(rows["row_id"]))]
    # An opaque carry's lines (a native arm's encrypted compaction) say neither
    # kept nor lost: `present` is empty, so the grid, which asks how long a fact was
    # kept, has no line for them (their answers are graded in checks.csv).
    t = t[t["present"].notna()]
    if t.empty:
        return pd.DataFrame([], columns=GRID).astype(
            {c: "Int64" for c in ("kept_through", "lost_at", "last_held")})
    t = t.sort_values(["row_id", "label", "fold"], kind="stable")
    fold = t["fold"].to_numpy(dtype=np.int64)
    held = t["present"].to_numpy(dtype=bool)
    key = t[["row_id", "label"]]
    first = ~key.duplicated().to_numpy()
    start = np.flatnonzero(first)
    gid = np.cumsum(first) - 1
    last = np.append(start[1:], len(t)) - 1
    planted = t["planted_fold"].to_numpy(dtype=np.int64)[start]
    after = fold >= planted[gid]
    n = len(start)

    def per_fact(mask: np.ndarray, values: np.ndarray, fn: Any, empty: int) -> np.ndarray:
        out = np.full(n, empty, dtype=np.int64)
        fn.at(out, gid[mask], values[mask])
        return out

    big, none = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    lost = per_fact(after & ~held, fold, np.minimum, big)
    kept = per_fact(after & (fold < lost[gid]), fold, np.maximum, none)
    last_held = per_fact(after & held, fold, np.maximum, none)
    chars = np.where(held, "1", "0")
    text = "".join(chars.tolist())
    grid = pd.DataFrame({
        "row_id": key["row_id"].to_numpy()[start], "label": key["label"].to_numpy()[start],
        "planted_fold": planted, "folds": fold[last],
        "kept_through": pd.array(np.where(kept == none, 0, kept), dtype="Int64"),
        "lost_at": pd.array(np.where(lost == big, 0, lost), dtype="Int64"),
        "last_held": pd.array(np.where(last_held == none, 0, last_held), dtype="Int64"),
        "final": held[last] & after[last],
        "present": [text[a:b + 1] for a, b in zip(start, last, strict=True)],
    })
    for c, missing in (("kept_through", kept == none), ("lost_at", lost == big),
                       ("last_held", last_held == none)):
        grid.loc[missing, c] = pd.NA
    meta = rows[["row_id", "sweep", "model", "repeat", "arm", "position"]].drop_duplicates(
        "row_id", keep="last")
    grid = grid.merge(meta, on="row_id", how="left", validate="many_to_one")
    recalled = checks[["row_id", "label", "correct"]].drop_duplicates(
        ["row_id", "label"], keep="last")
    grid = grid.merge(recalled, on=["row_id", "label"], how="left",
                      validate="many_to_one")
    grid["recalled"] = grid.pop("correct").fillna(False).astype(bool)
    grid["valid"] = grid["row_id"].isin(valid)
    grid["repeat"] = grid["repeat"].astype(int)
    grid["position"] = grid["position"].astype(int)
    return grid[GRID].sort_values(BLOCK + ["position", "label"], kind="stable").reset_index(
        drop=True)


def block_arms(grid: pd.DataFrame) -> dict[tuple[str, str, int], list[str]]:
    """Per block (sweep, model, repeat), its arms in design order (rows.csv `position`)."""
    out: dict[tuple[str, str, int], list[str]] = {}
    g = grid.drop_duplicates(BLOCK + ["arm"]).sort_values(BLOCK + ["position"], kind="stable")
    for r in g[BLOCK + ["arm"]].itertuples(index=False):
        out.setdefault((r.sweep, r.model, int(r.repeat)), []).append(r.arm)
    return out


def _default_groups(grid: pd.DataFrame) -> list[Group]:
    """Each sweep on its own (docs/design.md §6, Scopes: never pooled across sweeps unless
    asked)."""
    return [Group(s, (s,), None, False) for s in sorted(set(grid["sweep"]))]


# ------------------------------------------------------------------ paired arms

def _paired(gv: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """One line per (block, fact) where both arms have a valid row: kept and recalled."""
    cols = BLOCK + ["label", "final", "recalled"]
    return gv.loc[gv["arm"] == a, cols].merge(gv.loc[gv["arm"] == b, cols],
                                              on=BLOCK + ["label"], suffixes=("_a", "_b"))


def _counts(p: pd.DataFrame, what: str) -> dict[str, int]:
    x, y = p[f"{what}_a"].astype(bool), p[f"{what}_b"].astype(bool)
    return {"both": int((x & y).sum()), "a_only": int((x & ~y).sum()),
            "b_only": int((~x & y).sum()), "neither": int((~x & ~y).sum())}


def _diff(p: pd.DataFrame, what: str, plan: AnalysisPlan) -> stats.PairedDiff | None:
    """b's share minus a's, one difference per block, blocks resampled within model."""
    per = p.groupby(BLOCK)[[f"{what}_a", f"{what}_b"]].mean().reset_index()
    return stats.paired_bootstrap(per[f"{what}_b"].to_numpy(), per[f"{what}_a"].to_numpy(),
                                  per["model"].to_numpy(), plan.resamples, plan.seed,
                                  plan.confidence)


def paired_arms(grid: pd.DataFrame, pairs: Sequence[tuple[str, str]], plan: AnalysisPlan,
                groups: Sequence[Group] | None = None) -> pd.DataFrame:
    """results/tables/paired-arms.csv (columns.PAIRED_ARMS_TABLE): per scope group and
    pair, over the blocks where both arms have a valid row, the facts both kept, a only,
    b only, neither, at the final carry and in the answer, and the paired interval of b's
    share minus a's (the mean over blocks of the block's difference; a block's arms share
    its fixture, so this is the pooled difference when blocks grade the same facts).

    A pair with no such block has no line. Facts are paired within a block, so a pooled
    scope group still pairs within a sweep.
    """
    valid = grid[grid["valid"].astype(bool)]
    out = []
    for g in groups if groups is not None else _default_groups(valid):
        gv = g.rows(valid)
        for a, b in pairs:
            p = _paired(gv, a, b)
            if p.empty:
                continue
            kept, rec = _counts(p, "final"), _counts(p, "recalled")
            dk, dr = _diff(p, "final", plan), _diff(p, "recalled", plan)
            n = len(p)
            out.append({
                "sweep": g.label, "pair": pair_label(a, b),
                "blocks": int(p[BLOCK].drop_duplicates().shape[0]), "facts": n,
                "both_kept": kept["both"], "a_only": kept["a_only"],
                "b_only": kept["b_only"], "neither": kept["neither"], "a": a, "b": b,
                "models": int(p["model"].nunique()),
                "a_kept_share": (kept["both"] + kept["a_only"]) / n,
                "b_kept_share": (kept["both"] + kept["b_only"]) / n,
                "kept_diff": dk.diff, "kept_diff_low": dk.low, "kept_diff_high": dk.high,
                "both_recalled": rec["both"], "a_only_recalled": rec["a_only"],
                "b_only_recalled": rec["b_only"], "neither_recalled": rec["neither"],
                "a_recalled_share": (rec["both"] + rec["a_only"]) / n,
                "b_recalled_share": (rec["both"] + rec["b_only"]) / n,
                "recalled_diff": dr.diff, "recalled_diff_low": dr.low,
                "recalled_diff_high": dr.high,
            })
    return pd.DataFrame(out, columns=columns.PAIRED_ARMS_TABLE)


# ---------------------------------------------------------------- fact survival

def _survival_counts(ga: pd.DataFrame, n: int) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per block of one arm, for k = 0..n, as (blocks x n+1) counts: `facts` observable k
    folds after planting (the row made fold planted + k), `carried` those kept through it,
    `taken` those the planting fold's carry took in, and for the product-limit estimate
    `at_risk` (observable at k, kept through k - 1) and `events` (of those, lost at k)."""
    ks = np.arange(n + 1)[None, :]
    planted = ga["planted_fold"].to_numpy()[:, None]
    seen = planted + ks <= ga["folds"].to_numpy()[:, None]
    kept = ga["kept_through"].astype("float").to_numpy()[:, None]  # nan: never carried
    at_risk = seen & (kept >= planted + ks - 1) & (ks >= 1)
    per = {"facts": seen, "carried": seen & (kept >= planted + ks),
           "taken": seen & (kept >= planted), "at_risk": at_risk,
           "events": at_risk & (kept == planted + ks - 1)}
    keys = ga[BLOCK].drop_duplicates().reset_index(drop=True)
    idx = ga[BLOCK].merge(keys.reset_index(), on=BLOCK)["index"].to_numpy()
    out = {}
    for name, m in per.items():
        out[name] = np.zeros((len(keys), n + 1))
        np.add.at(out[name], idx, m.astype(float))
    return keys, out


def product_limit(facts: np.ndarray, carried: np.ndarray, at_risk: np.ndarray,
                  events: np.ndarray) -> np.ndarray:
    """Survival k folds after planting with runs' ends as censoring (Kaplan-Meier): the
    share carried at k = 0, times, for each later k, the share of the facts still carried
    and observable that the fold kept. Counts are (... x n+1) sums; a fact planted late
    leaves the risk set when its run ends, so survival never rises because the facts
    observed change with k. nan where nothing is at risk and survival is not yet 0."""
    s = np.empty(np.shape(facts), dtype=float)
    s[..., 0] = stats.ratio(carried[..., 0], facts[..., 0])
    for k in range(1, s.shape[-1]):
        step = 1.0 - stats.ratio(events[..., k], at_risk[..., k])
        prev = s[..., k - 1]
        s[..., k] = np.where(at_risk[..., k] > 0, prev * step,
                             np.where(prev == 0, 0.0, np.nan))
    return s


def fact_survival(grid: pd.DataFrame, plan: AnalysisPlan, groups: Sequence[Group] | None = None
                  ) -> pd.DataFrame:
    """results/tables/fact-survival.csv (columns.FACT_SURVIVAL_TABLE): per scope group and
    arm, for k = 0 .. n (n: the group's last fold minus its first planting fold), the
    graded facts of valid rows observable k folds after planting, those kept through it,
    their share, and `survival` (product_limit: runs' ends censor late-planted facts),
    each with its band, blocks resampled within model (one set of draws for both).

    k = 0 is the planting fold's own carry: 1 - share there is the loss at the first fold
    ("never carried"); the fall from k = 0 on is the loss over folds, which
    share_of_taken_in isolates (of the facts the planting fold took in, those still
    carried). Paper §4.4: "Iteration is what makes it catastrophic".
    """
    valid = grid[grid["valid"].astype(bool)]
    out = []
    names = ("carried", "facts", "at_risk", "events")
    for g in groups if groups is not None else _default_groups(valid):
        gv = g.rows(valid)
        if gv.empty:
            continue
        n = max(0, int((gv["folds"] - gv["planted_fold"]).max()))
        for arm in _arms(gv, plan):
            ga = gv[gv["arm"] == arm]
            keys, c = _survival_counts(ga, n)
            sums = stats.block_bootstrap_sums(np.hstack([c[x] for x in names]),
                                              keys["model"].to_numpy(), plan.resamples,
                                              plan.seed)
            draw = dict(zip(names, np.split(sums, len(names), axis=1), strict=True))
            share_low, share_high = stats.percentile_band(
                stats.ratio(draw["carried"], draw["facts"]), plan.confidence)
            surv_low, surv_high = stats.percentile_band(product_limit(**draw), plan.confidence)
            total = {x: c[x].sum(axis=0) for x in (*names, "taken")}
            surv = product_limit(total["facts"], total["carried"], total["at_risk"],
                                 total["events"])
            for k in range(n + 1):
                f, kept, t = (int(total[x][k]) for x in ("facts", "carried", "taken"))
                out.append({"sweep": g.label, "arm": arm, "k": k, "facts": f,
                            "carried": kept, "share": kept / f if f else np.nan,
                            "share_low": share_low[k], "share_high": share_high[k],
                            "rows": int(ga["row_id"].nunique()), "blocks": len(keys),
                            "taken_in": t, "share_of_taken_in": kept / t if t else np.nan,
                            "survival": surv[k], "survival_low": surv_low[k],
                            "survival_high": surv_high[k]})
    return pd.DataFrame(out, columns=columns.FACT_SURVIVAL_TABLE)


def carried_to_end(grid: pd.DataFrame, plan: AnalysisPlan, groups: Sequence[Group] | None = None
                   ) -> pd.DataFrame:
    """Per scope group and arm, the share of valid rows' graded facts kept through the
    final fold (every carry from planting to the last held it), with its block-resampled
    band: the one number per arm the summary reads."""
    valid = grid[grid["valid"].astype(bool)]
    out = []
    for g in groups if groups is not None else _default_groups(valid):
        gv = g.rows(valid)
        for arm in _arms(gv, plan):
            ga = gv[gv["arm"] == arm]
            per = (ga.assign(kept=(ga["kept_through"] == ga["folds"]).fillna(False))
                   .groupby(BLOCK)["kept"].agg(["sum", "count"]).reset_index())
            low, high = stats.block_bootstrap_share(
                per[["sum"]].to_numpy(), per[["count"]].to_numpy(), per["model"].to_numpy(),
                plan.resamples, plan.seed, plan.confidence)
            f, c = int(per["count"].sum()), int(per["sum"].sum())
            out.append({"sweep": g.label, "arm": arm, "facts": f, "carried": c,
                        "share": c / f if f else np.nan, "share_low": low[0],
                        "share_high": high[0]})
    return pd.DataFrame(out, columns=["sweep", "arm", "facts", "carried", "share",
                                      "share_low", "share_high"])


def _arms(gv: pd.DataFrame, plan: AnalysisPlan) -> list[str]:
    """The arms of a frame in resources/arms.yaml's order (unknown ones last, by name)."""
    rank = {a: i for i, a in enumerate(plan.arm_order)}
    return sorted(set(gv["arm"]), key=lambda x: (rank.get(x, len(rank)), x))


def compare_tables(trace: pd.DataFrame, checks: pd.DataFrame, rows: pd.DataFrame,
                   plan: AnalysisPlan, extra_pairs: Iterable[Sequence[str]] = (),
                   groups: Sequence[Group] | None = None
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """paired-arms, fact-survival and the carried-to-the-end shares from the evidence in
    one pass over the grid (what the table builders and the summary read)."""
    grid = fact_grid(trace, checks, rows)
    return (paired_arms(grid, compare_pairs(plan, extra_pairs), plan, groups),
            fact_survival(grid, plan, groups), carried_to_end(grid, plan, groups))
