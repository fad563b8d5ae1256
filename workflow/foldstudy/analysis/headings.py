"""Headings that arrived and what the carrier held (paper §4.7, §4.8, §4.10).

The analyses behind report/tables/headings.py and the headings.* and carrier.* numbers:
pure functions of the valid rows, checks.csv and the plan.
"""

from __future__ import annotations

import logging

import pandas as pd

from .cells import arm_sort_key, cell_summary, mean, valid_rows
from .plan import AnalysisPlan

log = logging.getLogger(__name__)


def recall_by_headings(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Recall by headings that arrived, within the single-field-schema arms (paper §4.8)."""
    g = valid[valid["arm"].isin(plan.single_field_schema) & valid["headings_carried"].notna()]
    out = []
    for h in range(6):
        s = cell_summary(g[g["headings_carried"].astype(int) == h], plan.row_recalled)
        out.append({"headings": h, "rows": s["n"], "mean": s["mean"],
                    "rows_ge_half": s["rows_ge_half"]})
    return pd.DataFrame(out)


def headings_by_arm(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Rows per arm by headings carried: a five-field schema guarantees five."""
    g = valid[valid["headings_carried"].notna()]
    out = []
    for arm, ga in g.groupby("arm"):
        h = ga["headings_carried"].astype(int)
        out.append({"arm": arm, "rows": int(len(ga)),
                    **{f"h{i}": int((h == i).sum()) for i in range(6)},
                    "mean": mean(ga["recall"])})
    df = pd.DataFrame(out, columns=["arm", "rows", *[f"h{i}" for i in range(6)], "mean"])
    return df.sort_values("arm", key=arm_sort_key(plan.arm_order)).reset_index(drop=True)


def headings_within_model(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per model whose undivided-arm rows differ in headings carried: recall by headings
    (paper §4.7: granite's "14 rows that carried no headings average 0.194, the 2 that
    carried five average 0.643")."""
    g = valid[(valid["arm"] == plan.undivided) & valid["headings_carried"].notna()]
    out = []
    for model, gm in g.groupby("model", sort=True):
        h = gm["headings_carried"].astype(int)
        if h.nunique() < 2:
            continue
        for k, gk in gm.groupby(h, sort=True):
            s = cell_summary(gk, plan.row_recalled)
            out.append({"model": model, "headings": int(k), "n": s["n"], "mean": s["mean"],
                        "rows_ge_half": s["rows_ge_half"]})
    return pd.DataFrame(out, columns=["model", "headings", "n", "mean", "rows_ge_half"])


def carrier_recorded(valid: pd.DataFrame) -> pd.DataFrame:
    """The rows whose carrier was recorded (carrier_present not empty): the only rows the
    cross-tab can read. Paper §4.10: "Over 215 valid rows the two agree on 171", of its
    620; a package leaves carrier_present and in_carrier empty on the others (docs/design.md §8)."""
    return valid[pd.to_numeric(valid["carrier_present"], errors="coerce").notna()]


def carrier_crosstab(valid: pd.DataFrame, checks: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per arm, over the rows whose carrier was recorded: rows where the carrier held a
    graded value and the answer missed it, and the reverse (the answer right about a
    value the carrier lacked; the loader refuses such a check, so 0), paper §4.10: "All
    44 disagreements run the same way ... There is not a single row in which the answer
    was right about a fact the carrier did not contain"."""
    c = carrier_checks(valid, checks)
    per_row = c[["row_id", "arm", "missed", "beyond"]].groupby(
        ["row_id", "arm"], as_index=False)[["missed", "beyond"]].sum()
    out = []
    for arm, g in per_row.groupby("arm"):
        out.append({"arm": arm, "rows": int(len(g)),
                    "missed": int((g["missed"] > 0).sum()),
                    "missed_checks": int(g["missed"].sum()),
                    "answer_beyond_carrier": int((g["beyond"] > 0).sum()),
                    "agree": int(((g["missed"] == 0) & (g["beyond"] == 0)).sum())})
    df = pd.DataFrame(out, columns=CARRIER_COLUMNS)
    return df.sort_values("arm", key=arm_sort_key(plan.arm_order)).reset_index(drop=True)


def carrier_checks(valid: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame:
    """The checks of the rows whose carrier was recorded, in file order, each with its
    row's arm and two flags: `missed` (the carrier held the value, the answer missed it)
    and `beyond` (the answer right about a value the carrier lacked)."""
    rec = carrier_recorded(valid)
    c = checks[checks["row_id"].isin(rec["row_id"])]
    c = c.merge(rec[["row_id", "arm"]], on="row_id")
    c_in = c["in_carrier"].fillna(False).astype(bool)
    c_ok = c["correct"].astype(bool)
    return c.assign(missed=c_in & ~c_ok, beyond=c_ok & ~c_in)


# carrier_crosstab's columns: each is also a carrier.* number, per arm and summed.
CARRIER_COLUMNS = ["arm", "rows", "missed", "missed_checks", "answer_beyond_carrier", "agree"]


def warn_answers_beyond_carrier(rows: pd.DataFrame, checks: pd.DataFrame) -> None:
    """Said once, in the stats job's log: valid rows whose answer was right about a fact
    their carrier lacked. Paper §4.10 found "not a single row in which the answer was
    right about a fact the carrier did not contain"; such a row is counted
    (`carrier.answer_beyond_carrier`), yet a count in numbers.json is easily read past,
    and the row is where to look (a carrier recorded wrong, or an answer from elsewhere)."""
    beyond = carrier_checks(valid_rows(rows), checks)
    beyond = beyond[beyond["beyond"]]
    if beyond.empty:
        return
    first = beyond.iloc[0]
    log.warning("%d valid row(s) answer a fact right that their carrier lacked (checks.csv: "
                "correct true, in_carrier false), counted in carrier.answer_beyond_carrier "
                "(paper §4.10 found none); the first: row %r, label %r",
                beyond["row_id"].nunique(), first["row_id"], first["label"])
