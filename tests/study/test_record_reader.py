"""Run records read back typed (records/run_record.py): the evidence a fixed set of records
grades to is pinned byte for byte, and a record older than its newest keys reads with
each key's documented default."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from foldstudy.evidence import columns
from foldstudy.evidence.load import write_table
from foldstudy.grade.grader import StockSignature
from foldstudy.grade.rows import grade_record, measured_on_the_carry
from foldstudy.grade.trace import fact_trace
from foldstudy.study.fixture_types import Fact

from ..support.records import fixture, fold, not_run, record

CONTROL = Fact("standby_port", "port", "61847", False, label="standby listener port",
               chunk=3, control=True)
ANSWER = ("primary ingress port: 52677\nDNS zone for the new records: I do not know\n"
          "shard count of the event store: 19\nstandby listener port: 61847")


def _old(rec: dict[str, Any]) -> dict[str, Any]:
    """A record as an older version wrote it: none of the keys added since."""
    for k in ("endpoint", "token_count_method", "temperature", "n_chunks", "attempt",
              "retained_tokens", "native", "final_index", "ceiling_delivery"):
        rec.pop(k, None)
    for f in rec["folds"]:
        f.pop("model_chars")
        f.pop("model_clipped")
        f["reply"].pop("served_by")
        f["reply"].pop("cost_usd")
    return rec


def fixed_records() -> list[dict[str, Any]]:
    """One of every shape the grader meets: a finished run, a not_run, a record from
    before the newer keys, an index arm's, a native arm's opaque carry, a run a fault
    cut short after a catch-up, and one whose folds failed to parse."""
    carries = ["port 52677", "port 52677 zone ranir.lasetot.lan", "19 shards", "x"]
    plain = record(carries, answer=ANSWER, retained_tokens=12,
                     ceiling_delivery="prompt")
    jx = record(carries, answer=ANSWER, arm="jx", repeat=1, final_index="52677\nTN-4471")
    for i, f in enumerate(jx["folds"]):
        f["index"] = "52677" if i else ""
        f["index_tokens"] = 1
    native = record(carries, answer=ANSWER, arm="native", repeat=2, retained_tokens=None,
                      native={"mechanism": "compact", "beta": "", "opaque": True,
                              "chunk_presented_as": "assistant", "item": {"id": "x"}},
                      ceiling_delivery="none")
    for f in native["folds"]:
        f["carry_opaque"] = True
        f["retained_tokens"] = None
    cut = record(carries[:2], arm="t", repeat=3, recall=None, catchup_fired=True,
                   missing_folds=2, infra_error={"kind": "timeout", "message": "m",
                                                 "turn": "fold2", "retryable": True},
                   folds=[fold(1, carries[1], chunks=[0, 1]),
                          fold(2, "", reply="{not json", finish_reason="length")])
    cut["folds"][1].update(parse_ok=False, schema_valid=False,
                           schema_errors=["json: Expecting property name at char 1"],
                           clipped=True, model_clipped=True)
    j = record(carries, answer="I don't know", arm="j", repeat=4, attempt=2,
                 endpoint={"backend": "openrouter", "pin": "p1"}, temperature=0.2)
    j["folds"][0]["schema_valid"] = False
    j["folds"][0]["reply"]["served_by"] = "p2"
    j["folds"][0]["reply"]["attempts"] = [{"a": 1}, {"a": 2}]
    j["folds"][0]["reply"]["cost_usd"] = 0.001
    return [plain, not_run(), _old(record(carries, answer=ANSWER, repeat=5)), jx,
            native, cut, j]


def written(tmp_path: Path, grading: dict[str, Any]) -> dict[str, str]:
    """sha256 of rows, checks, folds and trace.csv of the fixed records, written as the
    grade rule writes them."""
    fx = replace(fixture(), facts=(*fixture().facts, CONTROL))
    stock = StockSignature.from_dict(grading["stock_signature"])
    rows, checks, folds, trace = [], [], [], []
    for rec in fixed_records():
        row, c, f = grade_record(rec, fx, grading["abstention_markers"], stock,
                                 ["Constraints", "Decisions"])
        rows.append(row)
        checks += c
        folds += f
        trace += fact_trace(rec, fx)
    out = {}
    for name, data, cols in (("rows", rows, columns.ROWS), ("checks", checks, columns.CHECKS),
                             ("folds", folds, columns.FOLDS), ("trace", trace, columns.TRACE)):
        path = tmp_path / f"{name}.csv"
        write_table(pd.DataFrame(data, columns=cols), path)
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# What the grader wrote for fixed_records() before records were read back typed.
PINNED = {
    "rows": "62477bfe64076cd6743cb38814494ffe0561a6c0224bcce4bbf2c0dc9edd4593",
    "checks": "505fd7912edb8a9a218a61cae8b5f357f8bed6cdee912a6d853d3923cdded512",
    "folds": "4659c91f3ff2fad11ed03bb4c4e51644223656332ce943efc4f7b3d2e2898dc5",
    "trace": "54c667d4dce74ecd1526fefc4741440de2a1da0b3e387d87afa009906590371b",
}


def test_the_fixed_records_grade_to_the_pinned_evidence(tmp_path, grading):
    assert written(tmp_path, grading) == PINNED


def test_an_old_record_is_measured_on_the_carry(grading):
    old = fixed_records()[2]
    assert measured_on_the_carry(old["folds"])
    assert not measured_on_the_carry(fixed_records()[0]["folds"])


@pytest.mark.parametrize("n", range(7))
def test_every_fixed_record_grades(n, grading):
    fx = fixture()
    row, _, _ = grade_record(fixed_records()[n], fx, grading["abstention_markers"],
                             StockSignature.from_dict(grading["stock_signature"]), [])
    assert row["row_id"] == fixed_records()[n]["row_id"]


def test_an_old_record_reads_with_each_keys_documented_default():
    """A record written before the newer keys (no retained_tokens, native, final_index,
    attempt, endpoint, ceiling_delivery, control fields; folds without model_chars and
    model_clipped) reads with the default written beside each field in records/run_record.py."""
    from foldstudy.records.run_record import RECORD_VERSION, RunRecord

    raw = _old(record(["port 52677", "x"], answer=ANSWER))
    for k in ("record_version", "previous_attempts", "budget_usd", "not_run_reason"):
        raw.pop(k, None)
    raw["unknown_key"] = {"kept": "as before: ignored"}
    r = RunRecord.from_dict(raw)
    assert (r.retained_tokens, r.native, r.final_index, r.endpoint, r.ceiling_delivery,
            r.token_count_method, r.temperature, r.budget_usd, r.not_run_reason) == (
        None, None, None, None, None, None, None, None, None)
    assert (r.attempt, r.previous_attempts, r.record_version) == (1, [], RECORD_VERSION)
    assert [(f.model_chars, f.model_clipped, f.carry_opaque, f.index) for f in r.folds] == [
        (None, None, None, None)] * 2
    assert r.answer == ANSWER and r.folds[0].carry == "port 52677"
    # what the grader reads of those defaults: the carry's measure, "" for a missing text
    from foldstudy.grade.rows import fold_carried_chars, fold_clipped, run_columns

    assert fold_carried_chars(r.folds[0]) == len("port 52677") and not fold_clipped(r.folds[0])
    cols = run_columns(r)
    assert (cols["attempt"], cols["token_count_method"], cols["ceiling_delivery"],
            cols["endpoint"], cols["retained_tokens"]) == (1, "", "", "{}", None)
    bare = RunRecord.from_dict({"status": "not_run", "row_id": "s/toy/r0/q"})
    assert (bare.folds, bare.final_carry, bare.recall, bare.catchup_fired,
            bare.missing_folds, bare.answer) == ([], "", None, False, 0, "")


def test_a_record_written_and_read_back_is_the_same_record():
    """to_dict then from_dict is the record again, and writes what it read: a native
    fold keeps its retained_tokens None (unknown), an index fold its index, and no
    optional key that is None is written elsewhere."""
    from foldstudy.records.run_record import RunRecord

    for n, raw in enumerate(fixed_records()):
        if n == 2:  # the old record: it gains its defaults
            continue
        r = RunRecord.from_dict(raw)
        assert RunRecord.from_dict(r.to_dict()) == r
        for f, g in zip(r.to_dict()["folds"], raw["folds"], strict=True):
            assert f == g
