"""Grade stage: run records -> the evidence tables (rows, checks, folds), with the one
grader and the one validity rule. grade_record is pure (a record in, rows out);
grade_sweep does the I/O of the rule's one job per sweep."""

from __future__ import annotations

import json
import logging
from typing import Any

import pandas as pd

from ..errors import StudyError
from ..evidence import columns
from ..evidence.load import write_table
from ..io import load_yaml, read_json
from ..study.carriers.registry import carrier_of, opaque_kinds
from ..study.config import run_of_path
from ..study.index import recall_carrier
from ..study.spec import Fact, Fixture
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


def fold_carried_chars(fold: dict[str, Any]) -> int:
    """The model's characters one fold carried: what fill divides by the ceiling (paper
    §4.9, "within 0.5% of the declared ceiling", is about what the model wrote). A
    record from before `model_chars` falls back to the carry's length, labels and all."""
    return fold.get("model_chars", fold["carried_chars"])


def fold_clipped(fold: dict[str, Any]) -> bool:
    """Whether the model's own text exceeded the carry cap (paper §4.5, "clipped on 17
    of about 53 folds"), not a heading pushing it over. A record from before
    `model_clipped` falls back to whether the carry was clipped."""
    return fold.get("model_clipped", fold["clipped"])


def measured_on_the_carry(folds: list[dict[str, Any]]) -> bool:
    """A record from before the model's text was measured: its fill and clipping are
    the carry's, labels included (fold_carried_chars, fold_clipped)."""
    return any("model_chars" not in f or "model_clipped" not in f for f in folds)


def grade_record(
    record: dict[str, Any],
    fixture: Fixture,
    markers: list[Any],
    stock: StockSignature,
    headings: list[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """One run record -> (row, checks, folds)."""
    valid, reason = validity(record)
    arm = record["arm_spec"]
    folds = record["folds"]
    final = record.get("final_carry", "")
    # A native arm's opaque carry (OpenAI's encrypted compaction) is recorded
    # as opaque: nothing in it is counted, only the answer is graded.
    opaque = carry_is_opaque(record)
    # what the recall turn read: the carry, and an index arm's identifier index beside it
    carrier = recall_carrier(final, record.get("final_index") or "",
                             arm.get("index_heading", ""))
    answer = (record.get("recall") or {}).get("answer", "")
    graded = fixture.graded
    checks, controls = [], []
    if record.get("recall") is not None:
        # every asked label is split out of the answer together (the graded facts alone
        # where the fixture has no control facts, as always); the controls are set apart
        for f, c in zip(fixture.asked, grade_answer(fixture.asked, answer,
                                                     None if opaque else carrier,
                                                     markers, stock), strict=True):
            (controls if f.control else checks).append({"row_id": record["row_id"], **c})
    n_correct = sum(c["correct"] for c in checks)
    ceilings = arm.get("ceilings") or {}
    declared = sum(ceilings.values()) if ceilings else None
    carried = None if opaque else _mean([fold_carried_chars(f) for f in folds])
    replies = [f["reply"] for f in folds]
    recall_reply = (record.get("recall") or {}).get("reply") or {}
    abstained, abstained_prefix = answer_abstains(answer, markers)
    row = {
        "row_id": record["row_id"],
        "sweep": record["sweep"],
        "scenario": record["scenario"],
        "model": record["model"],
        "arm": record["arm"],
        "repeat": record["repeat"],
        "position": record["position"],
        "valid": valid,
        "invalid_reason": reason,
        "n_graded": len(graded),
        "n_correct": n_correct,
        "recall": n_correct / len(graded) if checks else None,
        "n_fields": len((arm.get("schema") or {}).get("properties", {})),
        "declared_ceiling_chars": declared,
        "carried_chars": carried,
        "fill": carried / declared if (declared and carried is not None) else None,
        "headings_carried": None if opaque else headings_carried(final, headings),
        "json_envelope_carried": None if opaque else
        json_envelope_carried(final) if folds else False,
        "folds": len(folds),
        "folds_clipped": sum(fold_clipped(f) for f in folds),
        "parse_failures": sum(not f["parse_ok"] for f in folds),
        "finish_stop": sum(r["finish_reason"] == "stop" for r in replies),
        "finish_length": sum(r["finish_reason"] == "length" for r in replies),
        "prompt_tokens": sum(r["prompt_tokens"] for r in replies),
        "completion_tokens": sum(r["completion_tokens"] for r in replies),
        "carrier_present": None if opaque else sum(c["in_carrier"] for c in checks),
        "abstained": abstained,
        "catchup_fired": bool(record.get("catchup_fired")),
        "system_prompt_sha256": arm["system_prompt_sha256"],
        "n_correct_unit_lenient": sum(c["correct_unit_lenient"] for c in checks),
        "n_fabricated": sum(c["fabricated"] for c in checks),
        "n_stock_signature": sum(c["stock_signature"] for c in checks),
        "schema_invalid_folds": sum(f["parse_ok"] and not f["schema_valid"] for f in folds),
        "token_count_method": record.get("token_count_method", ""),
        "endpoint": json.dumps(record.get("endpoint") or {}, sort_keys=True),
        "served_by": ",".join(sorted({r.get("served_by", "") for r in replies})),
        "temperature": record.get("temperature"),
        "recall_finish_reason": recall_reply.get("finish_reason", ""),
        "answer": answer,
        "ceiling_delivery": record.get("ceiling_delivery") or "",
        "attempt": record.get("attempt", 1),
        "abstained_prefix400": abstained_prefix,
        "retained_tokens": record.get("retained_tokens"),
        **control_columns(fixture.controls, controls),
    }
    fold_rows = [
        {
            "row_id": record["row_id"],
            "fold": f["fold"],
            "chunks": " ".join(str(c) for c in f["chunks"]),
            "prompt_tokens": f["reply"]["prompt_tokens"],
            "completion_tokens": f["reply"]["completion_tokens"],
            "token_count_method": f["reply"]["token_count_method"],
            "finish_reason": f["reply"]["finish_reason"],
            "parse_ok": f["parse_ok"],
            "schema_valid": f["schema_valid"],
            "schema_errors": "; ".join(f["schema_errors"]),
            "carried_chars": None if opaque else fold_carried_chars(f),
            "clipped": fold_clipped(f),
            # Counted here from the carry, as the row's final carry is: a record's own
            # per-fold counts (records before this rule) are not read.
            "headings_carried": None if opaque else headings_carried(f["carry"], headings),
            "json_envelope_carried": None if opaque else json_envelope_carried(f["carry"]),
            "latency_s": f["reply"]["latency_s"],
            "cost_usd": f["reply"].get("cost_usd"),
            "served_by": f["reply"].get("served_by", ""),
            "attempts": max(1, len(f["reply"].get("attempts") or [])),
            "store_hit": f["store_hit"],
            "seed": f["seed"],
            "max_tokens": f["max_tokens"],
            "reply": f["reply"]["text"],
            "carry": f["carry"],
        }
        for f in folds
    ]
    return row, checks, fold_rows


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


def read_record(path: str) -> dict[str, Any]:
    """A run record as its fold job wrote it, or an error naming the file (a record cut
    short by a full disk or edited by hand must not end as a traceback)."""
    try:
        record = read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunRecordError(f"{path}: not a readable run record ({type(e).__name__}: {e}); "
                             f"delete it and rerun its fold job (snakemake {path})") from e
    missing = [k for k in ("row_id", "status", "arm_spec", "folds") if k not in record]
    if missing:
        raise RunRecordError(f"{path}: run record without {', '.join(missing)}; delete it "
                             f"and rerun its fold job (snakemake {path})")
    check_carry_claims(record, path)
    return record


def check_carry_claims(record: dict[str, Any], path: str) -> None:
    """The record's claims about its carry agree with its arm's carrier kind
    (carriers/base.py): an opaque carry (`native.opaque`, a fold's `carry_opaque`) is
    graded as nothing kept and nothing lost, so only a kind that may be opaque (the
    provider's compaction) may claim one. A record of arm m claiming it would take m's
    facts out of every survival count without a word."""
    try:
        carrier = carrier_of(record["arm_spec"])
    except (StudyError, TypeError, AttributeError) as e:
        raise RunRecordError(f"{path}: run record whose arm_spec names no carrier ({e}); "
                             f"delete it and rerun its fold job (snakemake {path})") from None
    where = [k for k, claimed in (
        ("native.opaque", (record.get("native") or {}).get("opaque")),
        ("folds[].carry_opaque", any(isinstance(f, dict) and f.get("carry_opaque")
                                     for f in record["folds"] or []))) if claimed]
    if where and not carrier.may_be_opaque:
        raise RunRecordError(
            f"{path}: run record of arm {record.get('arm')!r} claims an opaque carry "
            f"({', '.join(where)}), which its carrier ({carrier.kind}) never has (a carry "
            f"may be opaque only on {' '.join(opaque_kinds())}); delete it and rerun its "
            f"fold job (snakemake {path})")


def check_record_identity(record: dict[str, Any], path: str, run: dict[str, Any]) -> None:
    """The record is the run its path names: row_id, sweep, model, arm and repeat agree
    with `run` (the config's identity of the path, study/config.py run_of_path).

    A record claiming `arm: m` inside q.json would give m a second row and q none, and
    a record's own fields must never choose where anything is written.
    """
    want = {**{k: run[k] for k in ("sweep", "model", "arm")}, "repeat": int(run["repeat"])}
    want["row_id"] = f"{want['sweep']}/{want['model']}/r{want['repeat']}/{want['arm']}"
    wrong = [f"{k} {record.get(k)!r} (the path says {v!r})" for k, v in want.items()
             if (int(record[k]) if k == "repeat" and _is_int(record.get(k)) else
                 record.get(k)) != v]
    if wrong:
        raise RunRecordError(f"{path}: run record disagrees with its path: {'; '.join(wrong)}; "
                             f"a record is graded only as the run its path names: delete it "
                             f"and rerun its fold job (snakemake {path})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def frame(records: list[dict[str, Any]], cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame(records, columns=cols)


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
        older += measured_on_the_carry(record["folds"])
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
        write_table(frame(trace, columns.TRACE), trace_out)
    write_table(frame(rows, columns.ROWS), rows_out)
    write_table(frame(checks, columns.CHECKS), checks_out)
    write_table(frame(folds, columns.FOLDS), folds_out)
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
