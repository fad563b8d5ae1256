"""A results/ tree built from hand-made run records: the evidence (rows, checks, trace) as
the grade stage writes it, the fold viewer and the comparison pages. For the
tests of report/compare.py, with and without Chromium; no model, no workflow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.evidence import columns
from foldstudy.evidence.load import write_table
from foldstudy.grade.grader import StockSignature
from foldstudy.grade.rows import grade_record
from foldstudy.grade.trace import fact_trace
from foldstudy.io import load_yaml, write_json
from foldstudy.report.compare import build_compare
from foldstudy.report.viewer import build_viewer
from foldstudy.study.plan import run_path

from . import records

TEMPLATES = records.RESOURCES / "templates"
HEADINGS = load_yaml(records.RESOURCES / "arms.yaml")["fixed_headings"]


def run(carries: list[str], arm: str, position: int, answer: str = "", repeat: int = 0,
        model: str = "toy", **kw: Any) -> dict[str, Any]:
    """A finished run of sweep s (records.record) for any model."""
    return records.record(carries, answer=answer, arm=arm, repeat=repeat, position=position,
                          model=model, row_id=f"s/{model}/r{repeat}/{arm}", **kw)


def build(root: Path, recs: list[dict[str, Any]], grading: dict[str, Any],
          plan: AnalysisPlan | None = None) -> Path:
    """root/results with runs, fixtures, evidence, viewer/ and compare/ (titled by `plan`,
    the checkout's by default); returns results."""
    fx = records.fixture()
    stock = StockSignature.from_dict(grading["stock_signature"])
    rows, checks, trace, runs = [], [], [], []
    for rec in recs:
        path = root / run_path(rec["sweep"], rec["model"], rec["repeat"], rec["arm"])
        write_json(rec, path)
        runs.append({k: rec[k] for k in ("sweep", "model", "repeat", "arm", "position")}
                    | {"path": str(path)})
        row, c, _ = grade_record(rec, fx, grading["abstention_markers"], stock, [])
        rows.append(row)
        checks += c
        trace += fact_trace(rec, fx)
    results = root / "results"
    fixture = results / "fixtures/s/fixture.json"
    write_json(fx.to_dict(), fixture)
    ev = results / "evidence"
    for name, data, cols in (("rows", rows, columns.ROWS), ("checks", checks, columns.CHECKS),
                             ("trace", trace, columns.TRACE)):
        write_table(pd.DataFrame(data, columns=cols), ev / f"{name}.csv")
    build_viewer(runs, {"s": str(fixture)}, str(ev / "rows.csv"),
                 str(ev / "checks.csv"), TEMPLATES, results / "viewer", HEADINGS)
    build_compare(runs, {"s": str(fixture)}, str(ev / "rows.csv"), str(ev / "checks.csv"),
                  str(ev / "trace.csv"), plan or AnalysisPlan.load(), TEMPLATES,
                  results / "compare", HEADINGS)
    return results
