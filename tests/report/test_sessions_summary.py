"""The summary's lines for a sweep on the user's own session: per fact, the
fold that planted it, the session's own compaction as a baseline, and per arm over its
valid rows how often the fact reached the final carry and how often it was answered."""

from __future__ import annotations

import pandas as pd

from foldstudy.analysis.plan import AnalysisPlan
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
    text = "\n".join(session_lines(rows, checks, {"s": manifest}, AnalysisPlan.load()))
    assert "| fact | planted in fold | the session's own compaction | j carried | j right | "\
           "m carried | m right |" in text  # the paper's arm order
    # j's second row is invalid: not counted; its empty in_carrier is not a "no"
    assert "| port | 1 | held | 0/1 | 0/1 | 2/2 | 2/2 |" in text
    assert "| tag | 5 | lost | 0/0 | 0/1 | 1/2 | 1/2 |" in text
    assert ("Baseline: the session's own compaction (1 summary, 384 characters) held 1 of 2 "
            "facts: port.") in text


def test_an_opaque_baseline_grades_no_fact_and_the_repairs_are_said():
    """A Codex summary stored encrypted: every fact's baseline cell says opaque, never
    held or lost, and the links the reader repaired are named by kind."""
    rows = pd.DataFrame({"row_id": ["s/x/r0/m"], "sweep": "s", "arm": ["m"], "valid": [True],
                         "recall": [1.0], "n_correct": [1], "n_graded": 1})
    checks = pd.DataFrame({"row_id": ["s/x/r0/m"], "label": ["port"],
                           "in_carrier": ["true"], "correct": ["true"]})
    manifest = {"scenario": "rollout", "facts": [{"label": "port", "chunk": 0, "graded": True}],
                "session": {"repaired": {"json_output": 6, "fork_prefix": 1}},
                "own_compaction": {"summaries": 1, "summary_chars": 0, "held": [],
                                   "opaque": "opaque: the CLI stored its summary encrypted"}}
    text = "\n".join(session_lines(rows, checks, {"s": manifest}, AnalysisPlan.load()))
    assert "| port | 1 | opaque | 1/1 | 1/1 |" in text
    assert ("Baseline: none; the session's own compaction is opaque: the CLI stored its "
            "summary encrypted, so it grades no fact.") in text
    assert "held 0 of" not in text
    assert "Read with repairs (the file as the CLI wrote it; docs/own-sessions.md): " \
           "1 fork_prefix, 6 json_output." in text


def test_a_label_holding_markup_is_text_in_the_summary():
    """A `<script>` fact label was written raw into results/summary.md, which a
    Markdown renderer passes through as HTML; a `|` in it would split the table's cell."""
    label = "<script>alert(1)</script> | a&b"
    rows = pd.DataFrame({"row_id": ["s/x/r0/m"], "sweep": "s", "arm": ["m"], "valid": [True],
                         "recall": [1.0], "n_correct": [1], "n_graded": 1})
    checks = pd.DataFrame({"row_id": ["s/x/r0/m"], "label": [label], "in_carrier": ["true"],
                           "correct": ["true"]})
    manifest = {"scenario": "atlas", "facts": [{"label": label, "chunk": 0, "graded": True}],
                "own_compaction": {"summaries": 1, "summary_chars": 9, "held": [label]}}
    text = "\n".join(session_lines(rows, checks, {"s": manifest}, AnalysisPlan.load()))
    shown = "&lt;script&gt;alert(1)&lt;/script&gt; \\| a&amp;b"
    assert f"| {shown} | 1 | held | 1/1 | 1/1 |" in text and f"facts: {shown}." in text
    assert "<script>" not in text


def test_an_absent_baseline_is_said_absent_never_no_compaction():
    """A Codex local compaction whose summary cannot be found in the file: the baseline
    cell and line say it is absent (a compaction happened; no text of it to grade), not
    that the file holds no compaction, and nothing is graded in its place."""
    from foldstudy.study.sessions import ABSENT_NOTE

    rows = pd.DataFrame({"row_id": ["s/x/r0/m"], "sweep": "s", "arm": ["m"], "valid": [True],
                         "recall": [0.0], "n_correct": [0], "n_graded": 1})
    checks = pd.DataFrame({"row_id": ["s/x/r0/m"], "label": ["port"],
                           "in_carrier": ["false"], "correct": ["false"]})
    manifest = {"scenario": "rollout", "facts": [{"label": "port", "chunk": 0, "graded": True}],
                "own_compaction": {"summaries": 0, "summary_chars": 0, "held": [],
                                   "absent": f"1 {ABSENT_NOTE}"}}
    text = "\n".join(session_lines(rows, checks, {"s": manifest}, AnalysisPlan.load()))
    assert "| port | 1 | absent | 0/1 | 0/1 |" in text
    assert f"Baseline: none; 1 {ABSENT_NOTE}, so it grades no fact" in text
    assert "no compaction in the file" not in text
