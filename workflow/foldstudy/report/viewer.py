"""The fold viewer (rule viewer): one HTML page per run showing the fold chain, and an index.

Paper §3.1: "Each fold receives the previous running summary and one chunk, and returns a
replacement. Nothing re-reads the transcript." The page shows that chain as it happened:
each fold's carry with the graded values it holds highlighted and the ones already
planted but absent listed as lost, with its tokens, finish reason and headings; then the
recall answer with each check marked. Presence is the grader's whole-token rule
(grader.whole_token_pattern), the same as trace.csv and checks.csv.

Every string from a model (replies, carries, answers) is text: the templates are
rendered with autoescape on, so a reply holding <script> shows as written and never runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from ..carriers.native import PROVIDER, NativeWords, native_words_of
from ..evidence.load import read_table
from ..evidence.provenance import check_same_study
from ..grade.grader import headings_carried, whole_token_pattern
from ..grade.rows import check_record_identity, fold_carried_chars, fold_clipped, read_record
from ..grade.trace import OPAQUE, carry_is_opaque, fact_trace, fold_number
from ..io import load_yaml, read_json
from ..records.run_record import RunRecord, as_record
from ..study.derived import spec_title
from ..study.fixture_types import Fact, Fixture
from .paths import block_path

log = logging.getLogger(__name__)

INDEX = "index.html"


def page_path(run: dict[str, Any]) -> str:
    """A run's page relative to the viewer's root: <sweep>/<model>/r<repeat>/<arm>.html.

    `run` is the study config's identity of the run (the rule's params.runs), never the
    record's own fields: a record claiming model `../../x` must not choose where a page
    is written (and check_record_identity refuses it first)."""
    return f"{run['sweep']}/{run['model']}/r{int(run['repeat'])}/{run['arm']}.html"


def segments(text: str, facts: list[Fact]) -> list[dict[str, Any]]:
    """The text cut into plain and highlighted spans: a span is highlighted where a graded
    value stands in it as a whole token (the grader's rule). Text only; the template
    escapes every span."""
    spans: list[tuple[int, int, Fact]] = []
    for f in facts:
        for m in whole_token_pattern(f.value).finditer(text):
            spans.append((m.start(), m.end(), f))
    spans.sort(key=lambda s: (s[0], -s[1]))
    out, pos = [], 0
    for start, end, fact in spans:
        if start < pos:  # overlapping values: the first (longest) one wins
            continue
        if start > pos:
            out.append({"text": text[pos:start], "fact": None})
        out.append({"text": text[start:end], "fact": fact.label})
        pos = end
    if pos < len(text):
        out.append({"text": text[pos:], "fact": None})
    return out


def run_page(record: RunRecord | dict[str, Any], fixture: Fixture,
             checks: list[dict[str, Any]], row: dict[str, Any] | None, headings: list[str],
             words: NativeWords = PROVIDER) -> dict[str, Any]:
    """What one run's page shows (pure: the record, its fixture and its graded checks).

    headings: the fixed headings of arms.yaml, counted in each fold's carry by the
    grader's rule, as folds.csv counts them (a record holds the carry, not the count).
    words: the model's native words (carriers/native.py native_words), in which a native
    arm's title is said (the record's arm spec holds the provider's).
    """
    record = as_record(record)
    graded = fixture.graded
    trace = fact_trace(record, fixture)
    present = {(t["label"], t["fold"]): t["present"] for t in trace}
    where = {(t["label"], t["fold"]): t["carried_in"] for t in trace}
    planted = {t["label"]: t["planted_fold"] for t in trace}
    folds = []
    opaque = carry_is_opaque(record)
    for f in record.folds:
        n = fold_number(f)
        held = [x for x in graded if present.get((x.label, n))]
        # an opaque carry (a native arm's encrypted compaction) keeps and loses nothing
        # that can be read: its facts are opaque, not lost
        lost = [] if opaque else [
            {"label": x.label, "value": x.value,
             "how": ("dropped" if any(present.get((x.label, k)) for k in range(1, n))
                     else "never taken in")}
            for x in graded if planted.get(x.label, n + 1) <= n
            and not present.get((x.label, n))]
        reply = f.reply
        folds.append({
            "n": n, "chunks": [c + 1 for c in f.chunks], "catchup": len(f.chunks) > 1,
            "carry": segments(f.carry, graded), "held": [x.label for x in held],
            # an index arm's identifier index, its own column beside the carry, and where
            # each held value was: carry, index or both (grade/trace.py carried_in)
            "index": segments(f.index, graded) if f.index is not None else None,
            "index_tokens": f.index_tokens,
            "held_in": {x.label: where.get((x.label, n), "") for x in held}
            if f.index is not None else {},
            "lost": lost, "opaque": OPAQUE if opaque else None,
            "planted_here": [x.label for x in graded if planted.get(x.label) == n],
            "prompt_tokens": reply["prompt_tokens"],
            "completion_tokens": reply["completion_tokens"],
            "finish_reason": reply["finish_reason"],
            "headings": headings_carried(f.carry, headings),
            "parse_ok": f.parse_ok, "schema_valid": f.schema_valid,
            "schema_errors": f.schema_errors or [], "clipped": fold_clipped(f),
            "carried_chars": fold_carried_chars(f),
            "reply": reply["text"] if reply["text"].strip() != f.carry else None,
        })
    recall = record.recall
    answer = recall["answer"] if recall else None
    by_label = {c["label"]: c for c in checks}
    marks = [{"label": x.label, "expected": x.value, **{
        k: by_label.get(x.label, {}).get(k) for k in ("correct", "in_carrier", "abstained",
                                                      "answer_line")}}
             for x in graded]
    return {
        "record": record, "row": row or {}, "folds": folds, "n_graded": len(graded),
        "answer": segments(answer, [x for x in graded if by_label.get(x.label, {})
                                    .get("correct")]) if answer is not None else None,
        "recall_finish": ((recall or {}).get("reply") or {}).get("finish_reason"),
        "checks": marks, "root": "../../../" + INDEX,
        # the arm's title where its spec has one (the page says none where it has none)
        **({"arm_title": spec_title(record.arm_spec, words)}
           if "title" in record.arm_spec else {}),
        # what an opaque carry is, said beside each opaque fold: whose compaction item
        "opaque_item": ("the provider's compaction item" if words == PROVIDER
                        else f"the item of {words.compaction}"),
    }


def environment(template_dir: str | Path) -> jinja2.Environment:
    """Templates with autoescape on: model output is text, never markup."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def records_by(df: pd.DataFrame | None, key: str) -> dict[str, list[dict[str, Any]]]:
    """The frame's rows as dicts grouped by `key` (a missing value is None): what a
    page's template reads."""
    out: dict[str, list[dict[str, Any]]] = {}
    if df is not None:
        for r in df.to_dict("records"):
            out.setdefault(r[key], []).append(
                {k: (None if isinstance(v, float) and pd.isna(v) else v) for k, v in r.items()})
    return out


def build_viewer(runs: Sequence[dict[str, Any]], fixture_paths: dict[str, str],
                 rows_csv: str | None, checks_csv: str | None, template_dir: str | Path,
                 out_dir: str | Path, headings: list[str], compare: str | None = "compare",
                 native: dict[str, NativeWords] | None = None) -> list[Path]:
    """Every run's page and the index; returns the pages written (index last). `runs`:
    the study config's runs (sweep, model, repeat, arm, path); each record must agree
    with its run (grade.rows.check_record_identity), and pages are placed by the run.
    `compare`: the comparison pages' folder beside the viewer's (rule compare), which
    every run page and the index link by block; None: no links. native: model -> its
    native words where they are not the provider's (carriers/native.py native_words_of)."""
    env = environment(template_dir)
    fixtures = {s: Fixture.from_dict(read_json(p)) for s, p in fixture_paths.items()}
    rows = records_by(read_table(rows_csv) if rows_csv else None, "row_id")
    checks = records_by(read_table(checks_csv) if checks_csv else None, "row_id")
    records = []
    for run in sorted(runs, key=lambda r: str(r["path"])):
        record = read_record(str(run["path"]))
        check_record_identity(record, str(run["path"]), run)
        records.append((run, record))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, index = [], []
    for run, record in records:  # every record checked before the first page is written
        row = (rows.get(record.row_id) or [None])[0]
        ctx = run_page(record, fixtures[run["sweep"]], checks.get(record.row_id, []),
                       row, headings, (native or {}).get(str(run["model"]), PROVIDER))
        block = (None if compare is None else
                 f"{compare}/{block_path(run['sweep'], run['model'], int(run['repeat']))}")
        ctx["compare_href"] = None if block is None else "../../../../" + block
        dest = out / page_path(run)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(env.get_template("viewer-run.html.j2").render(**ctx), encoding="utf-8")
        written.append(dest)
        index.append({"href": page_path(run), "record": record, "row": row or {},
                      "compare_href": None if block is None else "../" + block})
    (out / INDEX).write_text(env.get_template("viewer-index.html.j2").render(
        runs=index, compare_index=None if compare is None else f"../{compare}/index.html"),
        encoding="utf-8")
    written.append(out / INDEX)
    log.info("viewer: %d run pages and %s", len(index), out / INDEX)
    return written


def viewer_stage(input: Any, output: Any, params: Any) -> list[Path]:
    """Rule viewer: results/viewer/index.html and one page per run. params.runs: the
    study config's runs as dicts (sweep, model, repeat, arm, position, path)."""
    # Identity first: evidence of another study is refused before anything is written.
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    fixtures = {Path(p).parent.name: p for p in input.fixtures}
    return build_viewer(list(params.runs), fixtures, input.rows, input.checks,
                        Path(input.templates[0]).parent, output.viewer,
                        load_yaml(input.arms)["fixed_headings"],
                        native=native_words_of(params.config.get("models")))
