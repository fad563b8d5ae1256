"""Capacity and ceilings: the capacity arms, the ceiling replication and fill (paper §4.5, §4.6).

The analyses behind report/tables/capacity.py and the capacity.*, ceiling.* and fill
numbers: pure functions of the valid rows and the plan.
"""

from __future__ import annotations

import pandas as pd

from .cells import cell_summary, mean, pairs
from .plan import AnalysisPlan


def capacity_rows(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Rows of the (sweep, model) cells where a capacity manipulation (t or u) ran."""
    manip = [a for a in plan.capacity if a not in plan.ladder]  # t and u: the manipulations
    cells = valid.loc[valid["arm"].isin(manip), ["sweep", "model"]].drop_duplicates()
    return valid[valid["arm"].isin(plan.capacity)].merge(cells, on=["sweep", "model"])


def capacity(valid: pd.DataFrame, plan: AnalysisPlan, every: pd.DataFrame | None = None
             ) -> pd.DataFrame:
    """j t m u: n, rows recalled, mean, carried chars, folds clipped (paper §4.5), over
    the valid rows; and the non-conforming folds over every row of the arm, valid or not
    (`every`: the scope's rows before the validity rule; default valid), of `folds_all`.

    Paper §4.5: "j fails to produce a conforming fold on 4 of 60 folds (6.7%)": 60 is
    twelve rows of five folds, j's 11 valid rows and its catch-up row; "clipped on 17 of
    about 53 folds" is the valid rows'.
    """
    cr = capacity_rows(valid, plan)
    cells = cr[["sweep", "model"]].drop_duplicates()
    er = (every if every is not None else valid).merge(cells, on=["sweep", "model"])
    out = []
    for arm in plan.capacity:
        g, ge = cr[cr["arm"] == arm], er[er["arm"] == arm]
        s = cell_summary(g, plan.row_recalled)
        bad = ge["parse_failures"].fillna(0)
        if "schema_invalid_folds" in ge:
            bad = bad + ge["schema_invalid_folds"].fillna(0)
        out.append({
            "arm": arm, "n": s["n"], "rows_recalled": s["rows_ge_half"], "mean": s["mean"],
            "declared_ceiling_chars": mean(g["declared_ceiling_chars"]),
            "carried_chars": mean(g["carried_chars"]),
            "folds_clipped": int(g["folds_clipped"].sum()), "folds": int(g["folds"].sum()),
            "nonconforming_folds": int(bad.sum()), "folds_all": int(ge["folds"].sum()),
            "rows_all": int(len(ge)),
        })
    return pd.DataFrame(out)


def ceiling_replication(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per model, the undivided arm at its ceiling against the halved ceiling (paper §4.6:
    "Repeating the ceiling manipulation on a second model").

    Reads the rows of one scope group: the paper's pools its anchor corpus (j only) with
    the ceiling sweep (j and t), so a model's j rows are every j row of the group.
    """
    a, b = plan.ceiling_pair
    g = valid[valid["arm"].isin([a, b])]
    out = []
    for model, gm in g.groupby("model", sort=True):
        ga, gb = gm[gm["arm"] == a], gm[gm["arm"] == b]
        if ga.empty or gb.empty:
            continue
        sa, sb = cell_summary(ga, plan.row_recalled), cell_summary(gb, plan.row_recalled)
        out.append({"model": model, "a_recalled": sa["rows_ge_half"], "a_n": sa["n"],
                    "a_mean": sa["mean"], "b_recalled": sb["rows_ge_half"], "b_n": sb["n"],
                    "b_mean": sb["mean"], "a_fill": mean(ga["fill"]),
                    "b_fill": mean(gb["fill"])})
    return pd.DataFrame(out, columns=["model", "a_recalled", "a_n", "a_mean", "b_recalled",
                                      "b_n", "b_mean", "a_fill", "b_fill"])


def carried_chars_pairs(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Carried chars of the divided against the undivided arm, paired within block (paper
    §8: "with 45% less text carried")."""
    return pairs(valid, plan.divided, plan.undivided, "carried_chars")


def fill_by_model(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per model, the undivided arm's mean fill and mean recall over the rows given: the
    points of the fill-vs-recall correlation (paper §4.6).

    Paper §4.6: "On the first seven models we measured, the fraction of its declared
    ceiling a model chose to fill was strongly inversely associated with recall
    (r = -0.89) ... Extended to twenty-five measured models it does not hold: r = -0.23".
    A measured model is one with valid undivided rows of the primary scenario whose fill
    was measured; it need not have run the divided arm, which is why the paper's 25 are
    more than the partition's 20. The caller passes the `fill` scope: where it pools
    sweeps, a model is still one point.
    """
    j = valid[(valid["scenario"] == plan.primary_scenario) & (valid["arm"] == plan.undivided)]
    j = j[pd.to_numeric(j["fill"], errors="coerce").notna() & j["recall"].notna()]
    out = [{"model": m, "sweeps": ",".join(sorted(g["sweep"].unique())), "n": len(g),
            "j_fill": mean(g["fill"]), "j_mean": mean(g["recall"])}
           for m, g in j.groupby("model", sort=True)]
    return pd.DataFrame(out, columns=["model", "sweeps", "n", "j_fill", "j_mean"])


def fill_table(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per (model, arm) with a declared ceiling, over the rows given pooled across the
    model's sweeps: rows, mean carried chars, mean fill, mean recall; fullest first.

    Paper §4.6: "there are at least two ways to lose the facts, and they sit at opposite
    ends of the fill scale" (p 9 rows 94%; qwen3.6-35b-a3b 28 rows 8,501 chars 89%;
    deepseek-v4-pro 4 rows 49%; granite-4.1-8b 16 rows 3,238 34%; ling-2.6-flash 16 rows
    621 6%). The table's row counts pool each model's sweeps (granite's 16 = its 4-row
    partition cell + 12 depth rows), so the caller passes the `fill_table` scope.
    """
    g = valid[pd.to_numeric(valid["declared_ceiling_chars"], errors="coerce") > 0]
    out = []
    for (model, arm), gm in g.groupby(["model", "arm"], sort=True):
        s = cell_summary(gm, plan.row_recalled)
        out.append({"model": model, "arm": arm, "sweeps": "+".join(sorted(gm["sweep"].unique())),
                    "rows": s["n"], "carried_chars": mean(gm["carried_chars"]),
                    "declared_ceiling_chars": mean(gm["declared_ceiling_chars"]),
                    "fill": mean(gm["fill"]), "mean": s["mean"]})
    df = pd.DataFrame(out, columns=FILL_TABLE_COLUMNS)
    return df.sort_values("fill", ascending=False, kind="stable").reset_index(drop=True)


FILL_TABLE_COLUMNS = ["model", "arm", "sweeps", "rows", "carried_chars",
                      "declared_ceiling_chars", "fill", "mean"]
