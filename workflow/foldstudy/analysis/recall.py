"""Recall per model and arm, the ladder, iteration and prompt tokens (paper §4.1, §4.3, §4.4).

The analyses behind report/tables/recall.py and the recall.*, ladder.*, iteration.* and
token numbers: pure functions of the valid rows and the plan.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..evidence import columns
from .cells import BLOCK, cell_summary, pairs, valid_rows
from .plan import AnalysisPlan


def recall_by_model_arm(rows: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Recall per (sweep, model, arm) over valid rows, with denominators (docs/design.md §8): one
    line per sweep, never pooled across sweeps (paper §4.7).

    Rows are near-binary (paper §4), so a mean stands for a small count: n_valid,
    rows_full and rows_ge_half travel with every mean. The counts are cell_summary's,
    the one function numbers.json's recall keys read (row_recalled of analysis.yaml).
    """
    out = []
    for (sweep, model, arm), g in rows.groupby(["sweep", "model", "arm"], sort=True):
        valid = valid_rows(g)
        s = cell_summary(valid, plan.row_recalled)
        out.append({
            "sweep": sweep, "model": model, "arm": arm,
            "n_valid": s["n"],
            "mean_recall": round(s["mean"], 6) if s["n"] else None,
            "rows_full": s["rows_full"],
            "rows_ge_half": s["rows_ge_half"],
            "n_rows": len(g),
            "n_invalid": int((~g["valid"]).sum()),
        })
    return pd.DataFrame(out, columns=columns.RECALL_TABLE)


def recall_cells(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Recall per (scenario, model, arm) over the rows given (Table 1 form): the caller
    passes one scope group, so rows of two sweeps meet here only when the study config
    pools them (paper §4.7: never pooled across runs unless asked)."""
    out = []
    for (scenario, model, arm), g in valid.groupby(["scenario", "model", "arm"], sort=True):
        out.append({"scenario": scenario, "model": model, "arm": arm,
                    **cell_summary(g, plan.row_recalled)})
    return pd.DataFrame(out, columns=["scenario", "model", "arm", "n", "mean", "rows_full",
                                      "rows_ge_half"])


def ladder_rows(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Valid rows of the (sweep, model) cells of the primary scenario that ran every rung.

    A contrast has to come from one design (paper §4.3): j is read where q and m were
    measured, not over every sweep that happened to run j.
    """
    p = valid[(valid["scenario"] == plan.primary_scenario) & valid["arm"].isin(plan.ladder)]
    arms_per_cell = p.groupby(["sweep", "model"])["arm"].nunique()
    cells = arms_per_cell[arms_per_cell == len(plan.ladder)].index
    return p.set_index(["sweep", "model"]).loc[lambda d: d.index.isin(cells)].reset_index()


def ladder_rungs(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Each rung of the ladder (plan.ladder) with its cell over ladder_rows and the rung
    before it: the rows of the ladder table and of the ladder.* numbers."""
    lr = ladder_rows(valid, plan)
    out = []
    for i, arm in enumerate(plan.ladder):
        row = {"arm": arm, **cell_summary(lr[lr["arm"] == arm], plan.row_recalled),
               "previous": plan.ladder[i - 1] if i else None}
        out.append(row)
    return pd.DataFrame(out)


def iteration(valid: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """Each arm with its facts in one chunk and distributed over folds (paper §4.4).

    Only models measured on the single-chunk scenario enter either column, so the two
    columns describe the same models.
    """
    sc = valid[valid["scenario"] == plan.single_chunk_scenario]
    models = set(sc["model"])
    out = []
    for arm in plan.iteration:
        row: dict[str, Any] = {"arm": arm}
        for key, scen in (("single", plan.single_chunk_scenario),
                          ("distributed", plan.primary_scenario)):
            g = valid[(valid["scenario"] == scen) & (valid["arm"] == arm)
                      & valid["model"].isin(models)]
            s = cell_summary(g, plan.row_recalled)
            row[f"{key}_n"], row[f"{key}_mean"] = s["n"], s["mean"]
        out.append(row)
    return pd.DataFrame(out)


def token_pairs(valid: pd.DataFrame, plan: AnalysisPlan) -> dict[tuple[str, str], pd.DataFrame]:
    """Prompt tokens of each configured arm pair, paired within block."""
    return {(a, b): pairs(valid, a, b, "prompt_tokens") for a, b in plan.token_deltas}


def description_delta(valid: pd.DataFrame, plan: AnalysisPlan) -> dict[str, Any] | None:
    """What the described arm's prompt should exceed its twin's by, had the description
    reached the model on every fold, beside what it measured (paper §4.3).

    Paper §4.3: "if the description reached the model on all five folds the arm's
    prompt should exceed the undivided arm's by roughly 2,294 tokens, and the observed
    difference is +298". The expected delta is the description the arm adds (its field
    descriptions' characters, 1,835 for p) over the character-ratio estimator the paper
    sized prompts with (backends.base.CHARS_PER_TOKEN_ESTIMATE, 4 characters per token),
    times the folds of the pair's described row: 1,835 / 4 x 5 = 2,293.75. The measured
    delta is the mean paired difference of the rows' prompt tokens (all folds) over the
    same blocks. None where no block ran both arms validly or the arm has no description.
    """
    from ..backends.base import CHARS_PER_TOKEN_ESTIMATE

    a, b = plan.described
    chars = plan.description_chars.get(a, 0)
    pt = pairs(valid, a, b, "prompt_tokens")
    if not chars or pt.empty:
        return None
    folds = pairs(valid, a, b, "folds")[BLOCK + ["folds_first"]]
    pt = pt.merge(folds, on=BLOCK)
    expected = chars / CHARS_PER_TOKEN_ESTIMATE * pt["folds_first"]
    measured = pt["prompt_tokens_first"] - pt["prompt_tokens_second"]
    return {"description_chars": chars, "chars_per_token": CHARS_PER_TOKEN_ESTIMATE,
            "n_pairs": len(pt), "folds": float(pt["folds_first"].mean()),
            "expected": float(expected.mean()), "measured": float(measured.mean()),
            "share": float(measured.mean() / expected.mean())}
