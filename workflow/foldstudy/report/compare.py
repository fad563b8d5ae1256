"""Arm against arm, fold by fold: the side-by-side pages of results/compare/.

A block's page (`<sweep>/<model>/r<repeat>.html`) puts its arms side by side in design
order, one row per fold: each cell the carry (its first lines, the full text one click
away) with the graded values it holds highlighted by the viewer's whole-token rule
(viewer.segments), the values planted by then and absent listed as lost, and a strip of
every graded fact as held, lost or not yet planted; the last row each arm's answer with
its checks marked. The page opens with the fact-by-fold grid (analysis/compare.py), so
"q kept the port through fold 4; j lost it at fold 3" is one line. A two-model page
(`<sweep>/arm-<arm>.html`) lays one arm out the same way with the models as columns, one
section per repeat (paper §4.8: "the same model given five enforced fields carries five").

Every string from a model is text: the templates render with autoescape on (viewer
.environment), so a carry or answer holding <script> shows as written and never runs.
Page paths come from the study config's values (sweep, model, repeat, arm), never from a
record's own fields.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.compare import fact_grid
from ..analysis.plan import AnalysisPlan
from ..evidence import columns
from ..evidence.load import read_artifact
from ..evidence.provenance import check_same_study
from ..grade.rows import read_record
from ..io import load_yaml, read_json
from ..records.run_record import RunRecord
from ..study.fixture_types import Fixture
from .paths import arm_path, block_path
from .viewer import environment, page_path, records_by, run_page, segments

log = logging.getLogger(__name__)

INDEX = "index.html"
TEMPLATES = ("compare-page.html.j2", "compare-index.html.j2", "compare-style.css.j2")
# A cell shows this much of its carry before "the full carry" (one click away).
PREVIEW_LINES = 4
PREVIEW_CHARS = 320
HELD, LOST, UNPLANTED = "held", "lost", "unplanted"
STATE_TITLES = {HELD: "held", LOST: "lost", UNPLANTED: "not yet planted"}


@dataclass(frozen=True)
class RunRef:
    """One run as the study config names it (the page's paths come from here)."""

    sweep: str
    model: str
    repeat: int
    arm: str
    position: int
    path: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRef:
        return cls(str(d["sweep"]), str(d["model"]), int(d["repeat"]), str(d["arm"]),
                   int(d["position"]), str(d["path"]))

    @property
    def viewer_page(self) -> str:
        """The run's page under results/viewer/ (viewer.page_path's layout)."""
        return page_path({"sweep": self.sweep, "model": self.model, "repeat": self.repeat,
                          "arm": self.arm})


# ------------------------------------------------------------------ page contexts

def _preview(text: str) -> tuple[str, bool]:
    """The carry's first lines, and whether that is all of it."""
    lines = text.splitlines()
    head = "\n".join(lines[:PREVIEW_LINES])[:PREVIEW_CHARS]
    return head, head == text


def _cell(fold: dict[str, Any], carry: str, fixture: Fixture) -> dict[str, Any]:
    """One fold of one run, from the viewer's own fold view: the preview, the strip."""
    held, lost = set(fold["held"]), {x["label"] for x in fold["lost"]}
    head, whole = _preview(carry)
    strip = [{"label": f.label, "state": (HELD if f.label in held else
                                          LOST if f.label in lost else UNPLANTED)}
             for f in fixture.graded]
    for s in strip:
        s["title"] = f"{s['label']}: {STATE_TITLES[s['state']]}"
    return {**fold, "preview": segments(head, fixture.graded), "whole": whole,
            "lines": len(carry.splitlines()), "strip": strip}


def _column(ref: RunRef, record: RunRecord, fixture: Fixture,
            checks: list[dict[str, Any]], row: dict[str, Any] | None, title: str,
            viewer: str | None, headings: list[str]) -> dict[str, Any]:
    """One run as a column: its cells by fold number, its answer and checks."""
    page = run_page(record, fixture, checks, row, headings)
    carries = {int(f.fold) + 1: f.carry for f in record.folds}
    return {"title": title, "ref": ref, "record": record, "row": page["row"],
            "href": (viewer + ref.viewer_page) if viewer is not None else None,
            "cells": {f["n"]: _cell(f, carries[f["n"]], fixture) for f in page["folds"]},
            "answer": page["answer"], "checks": page["checks"]}


def index_column(carry_col: dict[str, Any], record: RunRecord, fixture: Fixture
                 ) -> dict[str, Any]:
    """An index arm's identifier index as its own column beside its carry's:
    each fold's index, the strip of the run's carrier (carry and index) as the carry's
    column shows it; its answer is the run's, said once, in the carry's column."""
    index = {int(f.fold) + 1: f.index or "" for f in record.folds}
    cells = {}
    for n, cell in carry_col["cells"].items():
        text = index.get(n, "")
        head, whole = _preview(text)
        cells[n] = {**cell, "preview": segments(head, fixture.graded), "whole": whole,
                    "lines": len(text.splitlines()), "carry": segments(text, fixture.graded),
                    "carried_chars": len(text), "lost": [], "planted_here": []}
    return {**carry_col, "title": f"{carry_col['title']} · its identifier index",
            "href": None, "cells": cells, "index_of": carry_col["title"]}


def _fate_text(r: dict[str, Any]) -> tuple[str, str]:
    """A grid cell's words and its class: how long the arm kept the fact."""
    kept, lost, last = r["kept_through"], r["lost_at"], r["last_held"]
    if pd.isna(kept):
        text, cls = f"never carried (lost at fold {r['planted_fold']})", "never"
    elif pd.isna(lost):
        text, cls = f"kept through fold {kept}", "kept"
    else:
        text, cls = f"kept through fold {kept}; lost at fold {lost}", "dropped"
    if not pd.isna(last) and (pd.isna(kept) or last > kept):
        text += f"; back at fold {last}"
    return text, cls


def grid_lines(grid: pd.DataFrame, keys: Sequence[str], key: str,
               fixture: Fixture) -> list[dict[str, Any]]:
    """The page's summary: one line per graded fact, its planted fold, and per column
    (arm or model, `key`) how long it was kept and whether the answer recalled it."""
    by = {(r[key], r["label"]): r for r in grid.to_dict("records")}
    out = []
    for f in fixture.graded:
        cells, planted = [], []
        for k in keys:
            r = by.get((k, f.label))
            if r is None:
                cells.append(None)
                continue
            text, cls = _fate_text(r)
            planted.append(int(r["planted_fold"]))
            cells.append({"text": text, "cls": cls, "recalled": bool(r["recalled"])})
        out.append({"label": f.label, "value": f.value, "cells": cells,
                    "planted": sorted(set(planted))})
    return out


def side_by_side(refs: Sequence[RunRef], key: str, records: dict[str, RunRecord],
                 fixture: Fixture, grid: pd.DataFrame,
                 checks: dict[str, list[dict[str, Any]]],
                 rows: dict[str, list[dict[str, Any]]], plan: AnalysisPlan,
                 viewer: str | None, headings: list[str]) -> dict[str, Any]:
    """One side-by-side table: a column per run (`key`: "arm" or "model" names it), a row
    per fold, the answers last, the fact-by-fold grid above it."""
    cols = []
    for ref in refs:
        rec = records[ref.path]
        rid = rec.row_id
        title = (f"{ref.arm} {plan.arm_title(ref.arm, ref.model)}".strip() if key == "arm"
                 else ref.model)
        cols.append(_column(ref, rec, fixture, checks.get(rid, []),
                            (rows.get(rid) or [None])[0], title, viewer, headings))
        if any(f.index is not None for f in rec.folds):
            cols.append(index_column(cols[-1], rec, fixture))
    folds = sorted({n for c in cols for n in c["cells"]})
    keys = [r.arm if key == "arm" else r.model for r in refs]
    return {"columns": cols, "folds": folds, "graded": list(fixture.graded),
            "grid": grid_lines(grid, keys, key, fixture)}


# ----------------------------------------------------------------------- building

def _blocks(refs: Sequence[RunRef]) -> dict[tuple[str, str, int], list[RunRef]]:
    out: dict[tuple[str, str, int], list[RunRef]] = {}
    for r in sorted(refs, key=lambda r: (r.sweep, r.model, r.repeat, r.position)):
        out.setdefault((r.sweep, r.model, r.repeat), []).append(r)
    return out


def _ran(refs: Sequence[RunRef], records: dict[str, RunRecord]) -> list[RunRef]:
    """The runs that made at least one fold (a not_run record has no carry to show)."""
    return [r for r in refs if records[r.path].folds]


def build_compare(runs: Sequence[dict[str, Any]], fixture_paths: dict[str, str],
                  rows_csv: str, checks_csv: str, trace_csv: str, plan: AnalysisPlan,
                  template_dir: str | Path, out_dir: str | Path, headings: list[str],
                  viewer: str | None = "viewer", decision: str | None = None) -> list[Path]:
    """Every block's page, every two-model page and the index; returns the pages written
    (index last). `runs` are the study config's runs (sweep, model, repeat, arm, position,
    path); `viewer` is the viewer's root relative to out_dir's parent (None: no links);
    `decision` the decision's page relative to the index (None: no link)."""
    env = environment(template_dir)
    refs = [RunRef.from_dict(d) for d in runs]
    records = {r.path: read_record(r.path) for r in refs}
    fixtures = {s: Fixture.from_dict(read_json(p)) for s, p in fixture_paths.items()}
    rows_df = read_artifact(Path(rows_csv), columns.ROWS_REQUIRED)
    checks_df = read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED)
    grid = fact_grid(read_artifact(Path(trace_csv), columns.TRACE_REQUIRED), checks_df,
                       rows_df)
    rows, checks = records_by(rows_df, "row_id"), records_by(checks_df, "row_id")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, index_blocks, index_arms = [], [], []

    def write(rel: str, depth: int, title: str, sections: list[dict[str, Any]]) -> None:
        up = "../" * depth
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(env.get_template("compare-page.html.j2").render(
            title=title, sections=sections, root=up + INDEX), encoding="utf-8")
        written.append(dest)

    link = None if viewer is None else f"../../../{viewer.rstrip('/')}/"
    for (sweep, model, repeat), block in _blocks(refs).items():
        ran = _ran(block, records)
        if not ran:
            continue
        g = grid[(grid["sweep"] == sweep) & (grid["model"] == model)
                 & (grid["repeat"] == repeat)]
        sec = side_by_side(ran, "arm", records, fixtures[sweep], g, checks, rows, plan,
                           link, headings)
        rel = block_path(sweep, model, repeat)
        write(rel, 2, f"{sweep} · {model} · repeat {repeat}: arm against arm",
              [{**sec, "id": f"r{repeat}", "heading": None}])
        index_blocks.append({"href": rel, "sweep": sweep, "model": model, "repeat": repeat,
                             "arms": [r.arm for r in ran]})
    link = None if viewer is None else f"../../{viewer.rstrip('/')}/"
    for (sweep, arm), group in _arm_groups(refs, records).items():
        sections = []
        for repeat in sorted({r.repeat for r in group}):
            ran = sorted((r for r in group if r.repeat == repeat), key=lambda r: r.model)
            g = grid[(grid["sweep"] == sweep) & (grid["arm"] == arm)
                     & (grid["repeat"] == repeat)]
            sections.append({**side_by_side(ran, "model", records, fixtures[sweep], g,
                                            checks, rows, plan, link, headings),
                             "id": f"r{repeat}", "heading": f"repeat {repeat}"})
        rel = arm_path(sweep, arm)
        models = sorted({r.model for r in group})
        title = plan.arm_title(arm, *models)  # a native arm's: over the models it ran on
        write(rel, 1, f"{sweep} · arm {arm} {title}: model against model", sections)
        index_arms.append({"href": rel, "sweep": sweep, "arm": arm, "title": title,
                           "models": models})
    (out / INDEX).write_text(env.get_template("compare-index.html.j2").render(
        blocks=index_blocks, arms=index_arms, decision=decision,
        viewer=None if viewer is None else f"../{viewer.rstrip('/')}/index.html"),
        encoding="utf-8")
    written.append(out / INDEX)
    log.info("compare: %d block pages, %d model pages and %s", len(index_blocks),
             len(index_arms), out / INDEX)
    return written


def _arm_groups(refs: Sequence[RunRef], records: dict[str, RunRecord]
                ) -> dict[tuple[str, str], list[RunRef]]:
    """(sweep, arm) -> its runs with a carry, where two or more models ran the arm."""
    out: dict[tuple[str, str], list[RunRef]] = {}
    for r in sorted(_ran(refs, records), key=lambda r: (r.sweep, r.arm, r.repeat, r.model)):
        out.setdefault((r.sweep, r.arm), []).append(r)
    return {k: v for k, v in out.items() if len({r.model for r in v}) >= 2}


def compare_stage(input: Any, output: Any, params: Any) -> list[Path]:
    """Rule compare: results/compare/index.html, a page per block and per (sweep, arm)
    run by two or more models. params.runs: the study config's runs as dicts (sweep,
    model, repeat, arm, position, path), so paths come from validated config values."""
    # Identity first: evidence of another study is refused before anything is written.
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    plan = AnalysisPlan.load(input.analysis, input.arms, params.config)  # its copies titled
    fixtures = {Path(p).parent.name: p for p in input.fixtures}
    return build_compare(list(params.runs), fixtures, input.rows, input.checks, input.trace,
                         plan, Path(input.templates[0]).parent, output.compare,
                         load_yaml(input.arms)["fixed_headings"],
                         decision="../decision.html" if input.get("decision_page") else None)
