"""The instrument: abstention, finish reasons, parse failures, envelopes and grading (paper §6).

The analyses behind report/tables/instrument.py (paper §3.1, §4.4, §4.11, §5, §6) and the
instrument's numbers: pure functions of the rows, checks.csv and the plan.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .cells import arm_sort_key, mean, valid_rows
from .plan import AnalysisPlan


def abstention(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Failing rows by whether the answer abstains anywhere or fabricates silently, and
    the same on the answer's first 400 characters (paper §4.11: "Classifying every
    failing row (recall < 0.5) by whether its answer contains any abstention marker at
    all"; "The counts above are likewise computed on that prefix"). The prefix columns
    are NaN for a package without rows.csv's abstained_prefix400."""
    f = failing_rows(valid, plan)
    out = []
    for arm, g in f.groupby("arm"):
        ab = g["abstained"].fillna(False).astype(bool)
        stock = (g["n_stock_signature"] > 0) if "n_stock_signature" in g else None
        rec = {"arm": arm, "failing_rows": int(len(g)),
               "fabricates": int((~ab).sum()), "abstains": int(ab.sum()),
               "stock_rows": int(stock.sum()) if stock is not None else np.nan,
               "fabricates_prefix400": np.nan, "abstains_prefix400": np.nan}
        if "abstained_prefix400" in g and g["abstained_prefix400"].notna().all():
            ap = g["abstained_prefix400"].astype(bool)
            rec.update(fabricates_prefix400=int((~ap).sum()), abstains_prefix400=int(ap.sum()))
        out.append(rec)
    df = pd.DataFrame(out, columns=ABSTENTION_COLUMNS)
    return df.sort_values("arm", key=arm_sort_key(plan.arm_order)).reset_index(drop=True)


def failing_rows(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """The failing rows of these (valid) rows: recall below the failing threshold (paper
    §4.11: "Classifying every failing row (recall < 0.5)")."""
    return valid[valid["recall"] < plan.failing_recall]


# abstention's columns: each but the arm is also an abstention.* number per arm.
ABSTENTION_COLUMNS = ["arm", "failing_rows", "fabricates", "abstains", "stock_rows",
                      "fabricates_prefix400", "abstains_prefix400"]


def finish_reasons(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Fold finish reasons per arm: a ceiling is a target if folds stop, a bound if cut."""
    out = []
    for arm, g in valid.groupby("arm"):
        folds = int(g["folds"].sum())
        stop, length = int(g["finish_stop"].sum()), int(g["finish_length"].sum())
        fill = pd.to_numeric(g["fill"], errors="coerce")
        out.append({"arm": arm, "rows": int(len(g)), "folds": folds, "stop": stop,
                    "length": length, "other": folds - stop - length,
                    "rows_with_ceiling": int(fill.notna().sum()),
                    "rows_at_ceiling": int((fill >= plan.at_ceiling_fill).sum())})
    df = pd.DataFrame(out, columns=["arm", "rows", "folds", "stop", "length", "other",
                                    "rows_with_ceiling", "rows_at_ceiling"])
    return df.sort_values("arm", key=arm_sort_key(plan.arm_order)).reset_index(drop=True)


def parse_failures(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Parse failures stay valid and in the means (paper §6): rates, and the recall of
    rows that carry one against clean rows of the same arm."""
    out = []
    for arm, g in valid.groupby("arm"):
        pf = g["parse_failures"].fillna(0) > 0
        folds = int(g["folds"].sum())
        inval = int(g["schema_invalid_folds"].sum()) if "schema_invalid_folds" in g else 0
        out.append({"arm": arm, "rows": int(len(g)), "folds": folds,
                    "parse_failures": int(g["parse_failures"].sum()),
                    "schema_invalid_folds": inval,
                    "rate": (g["parse_failures"].sum() / folds) if folds else np.nan,
                    "rows_with_failure": int(pf.sum()),
                    "mean_with_failure": mean(g.loc[pf, "recall"]),
                    "rows_clean": int((~pf).sum()), "mean_clean": mean(g.loc[~pf, "recall"])})
    df = pd.DataFrame(out, columns=["arm", "rows", "folds", "parse_failures",
                                    "schema_invalid_folds", "rate", "rows_with_failure",
                                    "mean_with_failure", "rows_clean", "mean_clean"])
    return df.sort_values("arm", key=arm_sort_key(plan.arm_order)).reset_index(drop=True)


def parse_line(rows: pd.DataFrame, plan: AnalysisPlan, arms: tuple[str, ...] | None = None,
               label: str | None = None) -> dict[str, Any] | None:
    """Parse failures over these arms (None: every arm), every row valid or not: rows with
    a failure (valid or not), the valid ones and their mean, the valid clean rows and
    theirs; `arm` is the line's label (the arms joined by '+', or `label`). None when no
    row is of those arms.

    Paper §6: "of the 23 single-field-schema rows carrying a parse failure, 18 are valid
    ... they average 0.560 recall against 0.399 for the 175 clean rows of the same arms"
    (arms: plan.single_field_schema), and "Over all arms the counts are 63 rows carrying a
    parse failure, 57 valid, averaging 0.476 against 0.553 for the 563 clean rows"
    (every arm): both count invalid rows among those with a failure.
    """
    g = rows[rows["arm"].isin(arms)] if arms is not None else rows
    if g.empty:
        return None
    valid = valid_rows(g)
    pf_all = g["parse_failures"].fillna(0) > 0
    pf = valid["parse_failures"].fillna(0) > 0
    return {"arm": label or "+".join(arms or ()), "rows_with_failure": int(pf_all.sum()),
            "valid_with_failure": int(pf.sum()), "mean_with_failure": mean(
                valid.loc[pf, "recall"]),
            "rows_clean": int((~pf).sum()), "mean_clean": mean(valid.loc[~pf, "recall"])}


# The all-arm line's label in parse-failures.csv (docs/design.md §8 names the j+p+t one).
ALL_ARMS = "all arms"


def envelope(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Per arm, valid rows and those whose final carry is a raw JSON envelope (paper §5:
    "false on 575 of the 620 valid rows; the 45 that carry a raw envelope are all f")."""
    out = []
    for arm, g in valid.groupby("arm"):
        out.append({"arm": arm, "rows": int(len(g)), "carried": int(
            g["json_envelope_carried"].fillna(False).astype(bool).sum())})
    df = pd.DataFrame(out, columns=["arm", "rows", "carried"])
    return df.sort_values("arm", key=arm_sort_key(plan.arm_order)).reset_index(drop=True)


def unit_lenient(valid: pd.DataFrame, checks: pd.DataFrame) -> dict[str, int] | None:
    """Checks of these rows that fail as graded and pass when the unit word may be dropped
    (paper §3.1), and the rows holding one; None when checks.csv has no lenient grade."""
    if "correct_unit_lenient" not in checks.columns:
        return None
    c = checks[checks["row_id"].isin(valid["row_id"])]
    lenient = c["correct_unit_lenient"].fillna(False).astype(bool)
    only = lenient & ~c["correct"].fillna(False).astype(bool)
    return {"checks": int(only.sum()), "rows": int(c.loc[only, "row_id"].nunique())}


def invalid_reasons(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows the validity rule kept out, by arm and reason (catch-up is arm-correlated),
    with their recalls in rows.csv order (paper §6: "Their recalls were 1.000, 1.000,
    0.000 ..."; n_correct / n_graded where the row has them)."""
    inv = rows[~rows["valid"].astype(bool)]
    reason = inv["invalid_reason"].fillna("").astype(str).str.split(":").str[0]
    graded = pd.to_numeric(inv["n_graded"], errors="coerce")
    exact = pd.to_numeric(inv["n_correct"], errors="coerce") / graded.where(graded > 0)
    recall = exact.where(exact.notna(), pd.to_numeric(inv["recall"], errors="coerce"))
    inv = inv.assign(reason=reason, _recall=recall)
    out = [{"arm": arm, "reason": r, "rows": len(g),
            "recalls": [float(x) for x in g["_recall"].dropna()]}
           for (arm, r), g in inv.groupby(["arm", "reason"])]
    return pd.DataFrame(out, columns=["arm", "reason", "rows", "recalls"])


def grader_agreement(valid: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame | None:
    """Per valid row: does the label-bound count equal the count of graded values found
    anywhere in the answer as a whole token (paper §4.4: "the label-bound and presence
    counts agree on 619 of 620 valid distributed rows")? None when rows.csv has no
    answer text (an optional column)."""
    if "answer" not in valid.columns:
        return None
    from ..grade.grader import has_whole_token  # the grader's own boundary rule

    answers = valid.set_index("row_id")["answer"].fillna("").astype(str)
    if not answers.str.strip().any():
        return None  # the column is there but no answer text was kept
    c = checks[checks["row_id"].isin(answers.index)]
    present = [has_whole_token(str(e), answers[r]) for r, e in
               zip(c["row_id"], c["expected"], strict=True)]
    per = pd.DataFrame({"row_id": c["row_id"].to_numpy(), "present": present,
                        "correct": c["correct"].astype(bool).to_numpy()})
    per = per.groupby("row_id", as_index=False)[["present", "correct"]].sum()
    per["agree"] = per["present"] == per["correct"]
    return per
