"""The summary's lines for a sweep on the user's own session (issue 25): per fact, the
fold that planted it, the session's own compaction as a baseline, and per arm over its
valid rows how often the fact reached the final carry and how often it was answered."""

from __future__ import annotations

import pandas as pd

from foldstudy.analysis.analysis import Analysis
from foldstudy.report.summary import session_lines


def test_each_fact_per_arm_with_the_baseline_beside_it():
    rows = pd.DataFrame({
        "row_id": ["s/x/r0/m", "s/x/r1/m", "s/x/r0/j", "s/x/r1/j"],
        "sweep": "s", "arm": ["m", "m", "j", "j"],
        "valid": [True, True, True, False], "recall": [1.0, 0.5, 0.0, 0.0],
        "n_correct": [2, 1, 0, 0], "n_graded": 2})
    checks = pd.DataFrame({
        "row_id": ["s/x/r0/m", "s/x/r0/m", "s/x/r1/m", "s/x/r1/m", "s/x/r0/j", "s/x/r0/j",
                   "s/x/r1/j", "s/x/r1/j"],
        "label": ["port", "tag"] * 4,
        "in_carrier": ["true", "true", "true", "false", "false", "", "true", "true"],
        "correct": ["true", "true", "true", "false", "false", "false", "true", "true"]})
    manifest = {"scenario": "atlas", "facts": [
        {"label": "port", "chunk": 0, "graded": True},
        {"label": "tag", "chunk": 4, "graded": True}],
        "own_compaction": {"summaries": 1, "summary_chars": 384, "held": ["port"]}}
    text = "\n".join(session_lines(rows, checks, {"s": manifest}, Analysis.load()))
    assert "| fact | planted in fold | the session's own compaction | j carried | j right | "\
           "m carried | m right |" in text  # the paper's arm order
    # j's second row is invalid: not counted; its empty in_carrier is not a "no"
    assert "| port | 1 | held | 0/1 | 0/1 | 2/2 | 2/2 |" in text
    assert "| tag | 5 | lost | 0/0 | 0/1 | 1/2 | 1/2 |" in text
    assert ("Baseline: the session's own compaction (1 summary, 384 characters) held 1 of 2 "
            "facts: port.") in text
