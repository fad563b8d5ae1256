"""Hand-built evidence for the statistics tests: a few rows whose numbers are known."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from foldstudy.evidence import columns

CEILING = {"j": 9600, "p": 9600, "q": 9600, "t": 4800, "f": 1024, "n": 9600, "g": 1024}


def row(sweep: str, model: str, arm: str, repeat: int, n_correct: int, k: int = 14,
        scenario: str = "distributed", **extra: Any) -> dict[str, Any]:
    ceiling = CEILING.get(arm)
    fill = extra.pop("fill", 0.5 if ceiling else None)
    r = {c: None for c in columns.ROWS}
    r.update({
        "row_id": f"{sweep}/{model}/r{repeat}/{arm}", "sweep": sweep, "scenario": scenario,
        "model": model, "arm": arm, "repeat": repeat, "position": 0, "valid": True,
        "invalid_reason": "", "n_graded": k, "n_correct": n_correct, "recall": n_correct / k,
        "n_fields": 1, "declared_ceiling_chars": ceiling,
        "carried_chars": fill * ceiling if ceiling else 4000.0, "fill": fill,
        "headings_carried": 5, "json_envelope_carried": False, "folds": 5, "folds_clipped": 0,
        "parse_failures": 0, "finish_stop": 5, "finish_length": 0, "prompt_tokens": 1000,
        "completion_tokens": 500, "carrier_present": n_correct, "abstained": False,
        "catchup_fired": False, "system_prompt_sha256": "0" * 64, "n_stock_signature": 0,
        "schema_invalid_folds": 0,
    })
    r.update(extra)
    return r


def frames(rows: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rows.csv and checks.csv frames: each row's first n_correct checks are correct."""
    df = pd.DataFrame(rows, columns=columns.ROWS)
    checks = []
    for r in rows:
        for i in range(r["n_graded"]):
            ok = i < r["n_correct"]
            checks.append({"row_id": r["row_id"], "label": f"fact {i}", "fact_class": "port",
                           "expected": str(10000 + i), "in_carrier": ok, "correct": ok,
                           "correct_unit_lenient": ok, "abstained": False, "answered": True,
                           "fabricated": not ok, "stock_signature": False, "answer_line": ""})
    c = pd.DataFrame(checks, columns=columns.CHECKS)
    for col in ("recall", "fill", "carried_chars", "declared_ceiling_chars"):
        df[col] = pd.to_numeric(df[col]).astype(float)
    return df, c


def arm_rows(sweep: str, model: str, arm: str, recalls: list[float], k: int = 10,
             **extra: Any) -> list[dict[str, Any]]:
    """One row per repeat with recall given as a fraction of k checks."""
    return [row(sweep, model, arm, i, int(round(r * k)), k=k, **extra)
            for i, r in enumerate(recalls)]


def full(n: int, of: int) -> list[float]:
    """n rows of recall 1 and the rest 0.5 (never full): counts for a Fisher test."""
    return list(np.r_[np.ones(n), np.full(of - n, 0.5)])
