"""Grade stage: run records -> the evidence tables (rows, checks, folds), with the one
grader and the one validity rule. grade_record is pure (a record in, rows out);
grade_sweep does the I/O of the rule's one job per sweep."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..backends.base import REPETITION
from ..carriers.identifier_index import recall_carrier
from ..carriers.registry import carrier_of, opaque_kinds
from ..errors import StudyError
from ..evidence import columns
from ..io import load_yaml, read_json, write_records_csv
from ..records.run_record import REQUIRED, Fold, RunRecord, as_record
from ..study.fixture_types import Fact, Fixture
from ..study.plan import run_of_path
from .grader import (
    StockSignature,
    answer_abstains,
    grade_answer,
    headings_carried,
    json_envelope_carried,
)
from .trace import carry_is_opaque, fact_trace
from .validity import validity

log = logging.getLogger(__name__)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def fold_carried_chars(fold: Fold) -> int:
    """The model's characters one fold carried: what fill divides by the ceiling (paper
    §4.9, "within 0.5% of the declared ceiling", is about what the model wrote). A
    record from before `model_chars` falls back to the carry's length, labels and all."""
    return fold.carried_chars if fold.model_chars is None else fold.model_chars


def fold_clipped(fold: Fold) -> bool:
    """Whether the model's own text exceeded the carry cap (paper §4.5, "clipped on 17
    of about 53 folds"), not a heading pushing it over. A record from before
    `model_clipped` falls back to whether the carry was clipped."""
    return fold.clipped if fold.model_clipped is None else fold.model_clipped


def measured_on_the_carry(folds: list[Fold] | list[dict[str, Any]]) -> bool:
    """A record from before the model's text was measured: its fill and clipping are
    the carry's, labels included (fold_carried_chars, fold_clipped)."""
    typed = [f if isinstance(f, Fold) else Fold.from_dict(f) for f in folds]
    return any(f.model_chars is None or f.model_clipped is None for f in typed)


def grade_record(
    record: RunRecord | dict[str, Any],
    fixture: Fixture,
    markers: list[Any],
    stock: StockSignature,
    headings: list[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """One run record -> (row, checks, folds). Each group of the row's columns is its
    own step below, so a column is found by what it measures; the row is put in
    rows.csv's column order (evidence/columns.py ROWS)."""
    r = as_record(record)
    # A native arm's opaque carry (OpenAI's encrypted compaction) is recorded
    # as opaque: nothing in it is counted, only the answer is graded.
    opaque = carry_is_opaque(r)
    checks, controls = recall_checks(r, fixture, markers, stock, opaque)
    cols = {**identity_columns(r), **answer_columns(r, fixture, checks, markers, opaque),
            **carry_columns(r, headings, opaque), **fold_columns(r.folds),
            **run_columns(r), **control_columns(fixture.controls, controls)}
    row = {k: cols[k] for k in columns.ROWS}
    return row, checks, [fold_row(r.row_id, f, headings, opaque) for f in r.folds]


def recall_checks(r: RunRecord, fixture: Fixture, markers: list[Any],
                  stock: StockSignature, opaque: bool
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(checks of the graded facts, checks of the control facts) of the recall answer;
    none where no recall turn was made. Every asked label is split out of the answer
    together (the graded facts alone where the fixture has no control facts, as
    always); the controls are then set apart, never counted in recall (control_columns)."""
    checks: list[dict[str, Any]] = []
    controls: list[dict[str, Any]] = []
    if r.recall is None:
        return checks, controls
    # what the recall turn read: the carry, and an index arm's identifier index beside it
    carrier = recall_carrier(r.final_carry, r.final_index or "",
                             r.arm_spec.get("index_heading", ""))
    graded = grade_answer(fixture.asked, r.answer, None if opaque else carrier, markers,
                          stock)
    for f, c in zip(fixture.asked, graded, strict=True):
        (controls if f.control else checks).append({"row_id": r.row_id, **c})
    return checks, controls


def identity_columns(r: RunRecord) -> dict[str, Any]:
    """Which run the row is, and whether it may enter an aggregate (the one validity
    rule, grade/validity.py)."""
    valid, reason = validity(r)
    return {"row_id": r.row_id, "sweep": r.sweep, "scenario": r.scenario, "model": r.model,
            "arm": r.arm, "repeat": r.repeat, "position": r.position, "valid": valid,
            "invalid_reason": reason}


def answer_columns(r: RunRecord, fixture: Fixture, checks: list[dict[str, Any]],
                   markers: list[Any], opaque: bool) -> dict[str, Any]:
    """What the recall answer got right, wrong or declined, from its checks; recall is
    empty where no recall turn was made (no checks), never a zero."""
    n_correct = sum(c["correct"] for c in checks)
    abstained, abstained_prefix = answer_abstains(r.answer, markers)
    recall_reply = (r.recall or {}).get("reply") or {}
    return {
        "n_graded": len(fixture.graded),
        "n_correct": n_correct,
        "recall": n_correct / len(fixture.graded) if checks else None,
        "carrier_present": None if opaque else sum(c["in_carrier"] for c in checks),
        "abstained": abstained,
        "n_correct_unit_lenient": sum(c["correct_unit_lenient"] for c in checks),
        "n_fabricated": sum(c["fabricated"] for c in checks),
        "n_stock_signature": sum(c["stock_signature"] for c in checks),
        "recall_finish_reason": recall_reply.get("finish_reason", ""),
        "answer": r.answer,
        "abstained_prefix400": abstained_prefix,
    }


def carry_columns(r: RunRecord, headings: list[str], opaque: bool) -> dict[str, Any]:
    """What the carry held against what the arm declared (paper §4.8, §4.9): the model's
    mean carried characters, its fill of the declared ceiling, and the final carry's
    fixed headings and JSON envelope. Empty on an opaque carry: nothing in it is read."""
    ceilings = r.arm_spec.get("ceilings") or {}
    declared = sum(ceilings.values()) if ceilings else None
    carried = None if opaque else _mean([fold_carried_chars(f) for f in r.folds])
    return {
        "n_fields": len((r.arm_spec.get("schema") or {}).get("properties", {})),
        "declared_ceiling_chars": declared,
        "carried_chars": carried,
        "fill": carried / declared if (declared and carried is not None) else None,
        "headings_carried": None if opaque else headings_carried(r.final_carry, headings),
        "json_envelope_carried": None if opaque else
        json_envelope_carried(r.final_carry) if r.folds else False,
    }


def fold_columns(folds: list[Fold]) -> dict[str, Any]:
    """The run's folds summed: how many, how they ended (clipped, unparsed,
    schema-invalid, stopped or cut at the token budget), their tokens and who served
    them."""
    replies = [f.reply for f in folds]
    return {
        "folds": len(folds),
        "folds_clipped": sum(fold_clipped(f) for f in folds),
        "parse_failures": sum(not f.parse_ok for f in folds),
        "finish_stop": sum(x["finish_reason"] == "stop" for x in replies),
        "finish_length": sum(x["finish_reason"] == "length" for x in replies),
        "finish_repeat": sum(x["finish_reason"] == REPETITION for x in replies),
        "prompt_tokens": sum(x["prompt_tokens"] for x in replies),
        "completion_tokens": sum(x["completion_tokens"] for x in replies),
        "schema_invalid_folds": sum(f.parse_ok and not f.schema_valid for f in folds),
        "served_by": ",".join(sorted({x.get("served_by", "") for x in replies})),
    }


def run_columns(r: RunRecord) -> dict[str, Any]:
    """How the run was made: its arm's prompt, its endpoint and sampling, how tokens were
    counted and the ceiling delivered, its attempt and what it retained. A key an older
    record lacks reads as its documented default (records/run_record.py), written as the row
    always wrote it ("" for a missing text)."""
    return {
        "catchup_fired": bool(r.catchup_fired),
        "system_prompt_sha256": r.arm_spec["system_prompt_sha256"],
        "token_count_method": r.token_count_method or "",
        "endpoint": json.dumps(r.endpoint or {}, sort_keys=True),
        "temperature": r.temperature,
        "ceiling_delivery": r.ceiling_delivery or "",
        "attempt": r.attempt,
        "retained_tokens": r.retained_tokens,
    }


def fold_row(row_id: str, f: Fold, headings: list[str], opaque: bool) -> dict[str, Any]:
    """One fold's line of folds.csv: its reply, its carry and what the carry holds."""
    reply = f.reply
    return {
        "row_id": row_id,
        "fold": f.fold,
        "chunks": " ".join(str(c) for c in f.chunks),
        "prompt_tokens": reply["prompt_tokens"],
        "completion_tokens": reply["completion_tokens"],
        "token_count_method": reply["token_count_method"],
        "finish_reason": reply["finish_reason"],
        "parse_ok": f.parse_ok,
        "schema_valid": f.schema_valid,
        "schema_errors": "; ".join(f.schema_errors),
        "carried_chars": None if opaque else fold_carried_chars(f),
        "clipped": fold_clipped(f),
        # Counted here from the carry, as the row's final carry is: a record's own
        # per-fold counts (records before this rule) are not read.
        "headings_carried": None if opaque else headings_carried(f.carry, headings),
        "json_envelope_carried": None if opaque else json_envelope_carried(f.carry),
        "latency_s": reply["latency_s"],
        "cost_usd": reply.get("cost_usd"),
        "served_by": reply.get("served_by", ""),
        "attempts": max(1, len(reply.get("attempts") or [])),
        "store_hit": f.store_hit,
        "seed": f.seed,
        "max_tokens": f.max_tokens,
        "reply": reply["text"],
        "carry": f.carry,
    }


def control_columns(asked: list[Fact], graded: list[dict[str, Any]]) -> dict[str, Any]:
    """A row's control facts (Fact.control), graded apart and never in its recall:
    how many were asked, how many the answer got right, and the labels it missed. Empty
    where the fixture plants none, or where no recall turn was made."""
    if not asked or not graded:
        return {"n_control": len(asked), "n_control_correct": None, "control_missed": ""}
    return {"n_control": len(asked),
            "n_control_correct": sum(c["correct"] for c in graded),
            "control_missed": ";".join(c["label"] for c in graded if not c["correct"])}


class RunRecordError(StudyError, ValueError):
    """A run record that cannot be graded: names the file and how to remake it."""


def read_record(path: str) -> RunRecord:
    """A run record as its fold job wrote it, read typed (records/run_record.py), or an error
    naming the file (a record cut short by a full disk or edited by hand must not end as
    a traceback)."""
    try:
        raw = read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunRecordError(f"{path}: not a readable run record ({type(e).__name__}: {e}); "
                             f"delete it and rerun its fold job (snakemake {path})") from e
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise RunRecordError(f"{path}: run record without {', '.join(missing)}; delete it "
                             f"and rerun its fold job (snakemake {path})")
    try:
        record = RunRecord.from_dict(raw)
    except (TypeError, AttributeError) as e:  # a fold that is no object, folds no list
        raise RunRecordError(f"{path}: run record whose folds are not fold entries ({e}); "
                             f"delete it and rerun its fold job (snakemake {path})") from None
    check_carry_claims(record, path)
    return record


def check_carry_claims(record: RunRecord, path: str) -> None:
    """The record's claims about its carry agree with its arm's carrier kind
    (carriers/base.py): an opaque carry (`native.opaque`, a fold's `carry_opaque`) is
    graded as nothing kept and nothing lost, so only a kind that may be opaque (the
    provider's compaction) may claim one. A record of arm m claiming it would take m's
    facts out of every survival count without a word."""
    try:
        carrier = carrier_of(record.arm_spec)
    except (StudyError, TypeError, AttributeError) as e:
        raise RunRecordError(f"{path}: run record whose arm_spec names no carrier ({e}); "
                             f"delete it and rerun its fold job (snakemake {path})") from None
    where = [k for k, claimed in (
        ("native.opaque", (record.native or {}).get("opaque")),
        ("folds[].carry_opaque", any(f.carry_opaque for f in record.folds))) if claimed]
    if where and not carrier.may_be_opaque:
        raise RunRecordError(
            f"{path}: run record of arm {record.arm!r} claims an opaque carry "
            f"({', '.join(where)}), which its carrier ({carrier.kind}) never has (a carry "
            f"may be opaque only on {' '.join(opaque_kinds())}); delete it and rerun its "
            f"fold job (snakemake {path})")


def check_record_identity(record: RunRecord, path: str, run: dict[str, Any]) -> None:
    """The record is the run its path names: row_id, sweep, model, arm and repeat agree
    with `run` (the config's identity of the path, study/plan.py run_of_path).

    A record claiming `arm: m` inside q.json would give m a second row and q none, and
    a record's own fields must never choose where anything is written.
    """
    want = {**{k: run[k] for k in ("sweep", "model", "arm")}, "repeat": int(run["repeat"])}
    want["row_id"] = f"{want['sweep']}/{want['model']}/r{want['repeat']}/{want['arm']}"
    have = {k: getattr(record, k) for k in want}
    wrong = [f"{k} {have[k]!r} (the path says {v!r})" for k, v in want.items()
             if (int(have[k]) if k == "repeat" and _is_int(have[k]) else have[k]) != v]
    if wrong:
        raise RunRecordError(f"{path}: run record disagrees with its path: {'; '.join(wrong)}; "
                             f"a record is graded only as the run its path names: delete it "
                             f"and rerun its fold job (snakemake {path})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def frame(records: list[dict[str, Any]], cols: list[str]) -> Any:
    """The records as a pandas frame (a staged decision's look reads them so)."""
    import pandas as pd  # not at the top: the grade job writes its tables without pandas

    return pd.DataFrame(records, columns=cols)


def write_rows(records: list[dict[str, Any]], cols: list[str], path: str) -> None:
    """An evidence table from records, as evidence.load.write_table writes their frame."""
    write_records_csv(records, cols, path, columns.BOOLEAN)


def grade_runs(fixture_path: str, run_paths: list[str], grading_yaml: str, arms_yaml: str
               ) -> tuple[list[dict], list[dict], list[dict], list[dict], int]:
    """(rows, checks, folds, fact trace, records measured on the carry) of these runs of
    one sweep: the grade rule's, and a staged decision's look (analysis/staging.py)."""
    fixture = Fixture.from_dict(read_json(fixture_path))
    grading = load_yaml(grading_yaml)
    headings = load_yaml(arms_yaml)["fixed_headings"]
    stock = StockSignature.from_dict(grading["stock_signature"])
    rows, checks, folds, trace = [], [], [], []
    older = 0
    for p in run_paths:
        record = read_record(p)
        check_record_identity(record, p, run_of_path(p))
        older += measured_on_the_carry(record.folds)
        row, c, f = grade_record(record, fixture, grading["abstention_markers"], stock,
                                 headings)
        rows.append(row)
        checks += c
        folds += f
        trace += fact_trace(record, fixture)
    return rows, checks, folds, trace, older


def grade_sweep(fixture_path: str, run_paths: list[str], grading_yaml: str, arms_yaml: str,
                rows_out: str, checks_out: str, folds_out: str,
                trace_out: str | None = None) -> None:
    """Grade every run of one sweep in one job (per-row jobs would cost a process each);
    with trace_out, also its per-fold fact trace (grade/trace.py)."""
    rows, checks, folds, trace, older = grade_runs(fixture_path, run_paths, grading_yaml,
                                                   arms_yaml)
    if trace_out:
        write_rows(trace, columns.TRACE, trace_out)
    write_rows(rows, columns.ROWS, rows_out)
    write_rows(checks, columns.CHECKS, checks_out)
    write_rows(folds, columns.FOLDS, folds_out)
    if older:
        log.warning("%d of %d records predate model_chars/model_clipped: their fill and "
                    "folds clipped are measured on the carry, labels included (a record "
                    "this version writes measures the model's text)", older, len(rows))
    n_valid = sum(r["valid"] for r in rows)
    log.info("graded %d rows (%d valid), %d checks, %d folds", len(rows), n_valid,
             len(checks), len(folds))


def grade_stage(input: Any, output: Any, params: Any) -> None:
    """Rule grade: one sweep's rows, checks, folds and fact trace."""
    grade_sweep(input.fixture, list(input.runs), input.grading, input.arms, output.rows,
                output.checks, output.folds, output.trace)
