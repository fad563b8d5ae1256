"""Every table of the paper (§4) and the instrument tables, from the evidence and numbers.json.

Each table is declared once, in report/titles.TABLES (name, title, order, what it reads);
its builder is `t_<name>` in the module of its paper section, marked `@builder` there and
bound to its entry by that name here, at import. Importing the section modules is what
registers their builders: a new section module is imported below, a new table in an
existing one needs no line here. A builder says what its table holds as a Body
(report/table.py, which writes it three ways).

Descriptive cells come from the pure functions of analysis/, one module per section (the same ones
numbers.py flattens); inference (intervals, Fisher, TOST, r) is read from numbers.json, so
a table and the numbers file cannot disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...analysis.plan import AnalysisPlan
from ...analysis.scopes import Scopes
from ...analysis.view import Evidence, Numbers
from ...evidence import columns
from ...evidence.load import read_artifact
from ...evidence.package import load_probes
from ...evidence.provenance import check_same_study
from ...io import read_csv, read_json
from ..table import Table, render_template
from ..titles import TABLES, TableEntry, bind

# The sections; importing each registers its builders (their order is titles.TABLES').
from . import (  # noqa: F401
    capacity,
    comparison,
    headings,
    inference,
    instrument,
    partition,
    probe,
    recall,
    retained,
)
from .common import BUILDERS, Builder


def _bind(entries: tuple[TableEntry, ...], builders: dict[str, Builder]
          ) -> list[tuple[TableEntry, Builder]]:
    """Each registry entry with its builder, in reading order; a table without a builder,
    or a builder without an entry, fails at import, naming it."""
    return bind(entries, builders, "table", "builder", "report/tables/")  # type: ignore[return-value]


BOUND = _bind(TABLES, BUILDERS)


def build_tables(rows: pd.DataFrame, checks: pd.DataFrame, numbers: Numbers, plan: AnalysisPlan,
                 probes: pd.DataFrame | None = None, scopes: Scopes | None = None,
                 token_classes: pd.DataFrame | None = None,
                 trace: pd.DataFrame | None = None,
                 extra_pairs: list[list[str]] | None = None) -> list[Table]:
    """Every table, in reading order: pure, so a test can inspect any cell."""
    c = Evidence.of(rows, checks, plan, scopes, numbers, trace, extra_pairs or ())
    inputs = {"probes": probes, "token_classes": token_classes}
    out = []
    for entry, make in BOUND:
        body = make(c.reading(entry.reads) if entry.source == "evidence"
                    else inputs[entry.source])
        if not body.rows:  # a table with no row still says why
            body.rows = [{"_why_row": "no valid row for this table"}]
        out.append(body.named(entry.name, entry.title_for(plan.ladder)))
    return out


def write_tables(rows_csv: str | Path, checks_csv: str | Path, numbers_json: str | Path,
                 probes: list[str], plan: AnalysisPlan, template_dir: str | Path,
                 out_dir: str | Path, scopes: Scopes | None = None,
                 token_classes: list[str] | None = None, trace: list[str] | None = None,
                 extra_pairs: list[list[str]] | None = None) -> list[str]:
    """Every table as .md, .tex and .csv, plus an index.

    rows/checks were checked against the manifest by rule stats; here only the columns.
    """
    rows = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    checks = read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED)
    numbers = read_json(numbers_json)
    measured = read_csv(token_classes[0]) if token_classes else None
    traced = read_artifact(Path(trace[0]), columns.TRACE_REQUIRED) if trace else None
    tables = build_tables(rows, checks, numbers, plan, load_probes(probes[0]) if probes else None,
                          scopes, measured, traced, extra_pairs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tdir = Path(template_dir)
    for t in tables:
        ctx = {"t": t, "cells": t.cells()}
        (out / f"{t.name}.md").write_text(render_template(tdir, "table.md.j2", **ctx),
                                          encoding="utf-8")
        (out / f"{t.name}.tex").write_text(render_template(tdir, "table.tex.j2", **ctx),
                                           encoding="utf-8")
        t.frame().to_csv(out / f"{t.name}.csv", index=False, lineterminator="\n",
                         float_format="%.6g")
    (out / "index.md").write_text(render_template(tdir, "index.md.j2", tables=tables),
                                  encoding="utf-8")
    return [t.name for t in tables]


def tables_stage(input: Any, output: Any, params: Any) -> list[str]:
    """Rule tables: results/tables/ (the templates are the rule's inputs)."""
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    return write_tables(input.rows, input.checks, input.numbers, list(input.probes),
                        AnalysisPlan.load(input.analysis, input.arms, params.config),
                        Path(input.templates[0]).parent, output.tables,
                        Scopes.from_config(params.scopes), list(input.token_classes),
                        list(input.trace), params.compare_pairs)
