"""What every section's analysis shares: the valid rows, means and cells with their denominators.

The analyses read only the rows the one validity rule (validity.py, recorded in rows.csv
`valid`) admits; nothing here decides validity again. A missing value is NaN/None here
and is rendered as an em dash with its reason, never as 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import stats

BLOCK = ["sweep", "model", "repeat"]


def valid_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows the one validity rule admitted (rows.csv `valid`), recall as an exact float.

    recall is n_correct / n_graded by contract (docs/design.md §8); the CSV keeps six significant
    digits, so a mean of printed recalls can land a hair under a threshold it meets
    exactly (0.4999998 against 0.5). The exact fraction is taken wherever the row has one.
    """
    valid = rows[rows["valid"].astype(bool)].copy()
    recall = pd.to_numeric(valid["recall"], errors="coerce")
    graded = pd.to_numeric(valid["n_graded"], errors="coerce")
    exact = pd.to_numeric(valid["n_correct"], errors="coerce") / graded.where(graded > 0)
    valid["recall"] = exact.where(recall.notna() & exact.notna(), recall)
    return valid


def mean(s: pd.Series) -> float:
    """Mean of the numeric values of s, NaN when it has none (never 0)."""
    s = pd.to_numeric(s, errors="coerce").dropna()
    return float(s.mean()) if len(s) else np.nan


def cell_summary(g: pd.DataFrame, recalled: float) -> dict[str, Any]:
    """Mean recall with its denominators: n, rows with recall 1, rows at/above `recalled`."""
    r = g["recall"].dropna()
    m = stats.mean_n(r)
    return {"n": m.n, "mean": np.nan if m.mean is None else m.mean,
            "rows_full": int((r >= 1.0).sum()), "rows_ge_half": int((r >= recalled).sum())}


def arm_sort_key(order: tuple[str, ...]):
    rank = {a: i for i, a in enumerate(order)}
    return lambda s: s.map(lambda a: rank.get(a, len(rank)))


def pairs(valid: pd.DataFrame, first: str, second: str, value: str = "recall") -> pd.DataFrame:
    """Blocks (sweep, model, repeat) where both arms have a valid row: paired values.

    A contrast is paired within a sweep and never pooled across sweeps (paper §4.7):
    the block key holds the sweep, so a pair never spans two.
    """
    a = valid.loc[valid["arm"] == first, BLOCK + [value]].dropna()
    b = valid.loc[valid["arm"] == second, BLOCK + [value]].dropna()
    a = a.groupby(BLOCK, as_index=False)[value].mean()
    b = b.groupby(BLOCK, as_index=False)[value].mean()
    return a.merge(b, on=BLOCK, suffixes=("_first", "_second"))


def arm_blocks(valid: pd.DataFrame, value: str = "recall") -> dict[str, set[tuple[Any, ...]]]:
    """Per arm, the blocks where it has a row with a value: two arms share a block in
    `pairs` exactly when their sets meet, so a card that only asks whether a pair ran
    together reads one set per arm instead of pairing every two arms."""
    have = valid[["arm", *BLOCK, value]].dropna()
    out: dict[str, set[tuple[Any, ...]]] = {}
    for arm, *block in have[["arm", *BLOCK]].itertuples(index=False, name=None):
        out.setdefault(arm, set()).add(tuple(block))
    return out
