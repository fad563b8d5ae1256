"""Run records and fixtures built by hand, in the exact shape run/fold.py writes them.

For tests of what reads a run record (the trace, the viewer) without running a model:
each fold's carry is given, everything else is filled in plausibly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldstudy.study.fixture_types import Fact, Fixture
from foldstudy.study.spec import arm_ids, load_arm_table, resolve_arm

RESOURCES = Path(__file__).resolve().parents[2] / "resources"

PORT = Fact("ingress_port", "port", "52677", True, label="primary ingress port", chunk=0)
ZONE = Fact("dns_zone", "dns_zone", "ranir.lasetot.lan", True,
            label="DNS zone for the new records", chunk=1)
SHARDS = Fact("shard_count", "shard_count", "19 shards", True,
              label="shard count of the event store", unit="shards", chunk=2)
TENANT = Fact("tenant", "tenant_code", "TN-4471", False, chunk=0)  # planted, never asked
FACTS = (PORT, ZONE, SHARDS, TENANT)


def fixture(n_chunks: int = 4, facts: tuple[Fact, ...] = FACTS) -> Fixture:
    chunks = tuple(
        f"chunk {i}: " + " ".join(f.statement or f"{f.label} is {f.value}."
                                  for f in facts if f.chunk == i)
        for i in range(n_chunks))
    return Fixture("distributed", 7, 0.01, chunks, facts)


def arm_spec(arm: str = "m") -> dict[str, Any]:
    table = load_arm_table(RESOURCES)
    assert arm in arm_ids(table)
    return resolve_arm(arm, table, RESOURCES, 0.01).to_dict()


def fold(i: int, carry: str, chunks: list[int] | None = None, reply: str | None = None,
         finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "fold": i, "chunks": chunks if chunks is not None else [i], "request_key": f"k{i}",
        "store_hit": False, "seed": None, "max_tokens": 64,
        "reply": {"text": reply if reply is not None else carry, "raw": {},
                  "finish_reason": finish_reason, "prompt_tokens": 100 + i,
                  "completion_tokens": 20 + i, "token_count_method": "tokenizer",
                  "latency_s": 0.5, "cost_usd": None, "served_by": "embedded",
                  "attempts": []},
        "parse_ok": True, "schema_valid": True, "schema_errors": [], "carry": carry,
        "carried_chars": len(carry), "clipped": False, "model_chars": len(carry),
        "model_clipped": False,
    }


def record(carries: list[str], answer: str = "", arm: str = "m", repeat: int = 0,
           folds: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    """A finished run: one fold per carry (fold i took chunk i), then the recall answer."""
    folds = folds if folds is not None else [fold(i, c) for i, c in enumerate(carries)]
    rec = {
        "status": "run", "row_id": f"s/toy/r{repeat}/{arm}", "sweep": "s",
        "scenario": "distributed", "model": "toy", "arm": arm, "repeat": repeat,
        "position": 0, "arm_spec": arm_spec(arm), "folds": folds,
        "final_carry": folds[-1]["carry"] if folds else "",
        "recall": {"request_key": "r", "store_hit": False, "seed": None, "answer": answer,
                   "reply": {"text": answer, "finish_reason": "stop", "prompt_tokens": 50,
                             "completion_tokens": 30}},
        "catchup_fired": False, "missing_folds": 0, "infra_error": None,
        "endpoint": {"backend": "embedded"}, "token_count_method": "tokenizer",
        "temperature": 0.0, "n_chunks": len(folds),
    }
    rec.update(kw)
    return rec


def not_run(arm: str = "q", repeat: int = 0) -> dict[str, Any]:
    return {"status": "not_run", "not_run_reason": "schema_unsupported",
            "row_id": f"s/toy/r{repeat}/{arm}", "sweep": "s", "scenario": "distributed",
            "model": "toy", "arm": arm, "repeat": repeat, "position": 1,
            "arm_spec": arm_spec(arm), "folds": [], "final_carry": "", "recall": None,
            "catchup_fired": False, "missing_folds": 0, "infra_error": None}


def graded_frames(recs: list[dict[str, Any]], tmp_path: Path, grading: dict[str, Any],
                  fx: Fixture | None = None) -> list[Any]:
    """rows, checks and trace of these records, graded and written as the evidence
    writes them, then read back as every reader reads them."""
    from foldstudy.evidence import columns
    from foldstudy.evidence.load import read_table
    from foldstudy.grade.grader import StockSignature
    from foldstudy.grade.rows import grade_record, write_rows
    from foldstudy.grade.trace import fact_trace

    fx = fx or fixture()
    stock = StockSignature.from_dict(grading["stock_signature"])
    rows, checks, trace = [], [], []
    for rec in recs:
        row, c, _ = grade_record(rec, fx, grading["abstention_markers"], stock, [])
        rows.append(row)
        checks += c
        trace += fact_trace(rec, fx)
    out = []
    for name, data, cols in (("rows", rows, columns.ROWS), ("checks", checks, columns.CHECKS),
                             ("trace", trace, columns.TRACE)):
        path = tmp_path / f"{name}.csv"
        write_rows(data, cols, str(path))
        out.append(read_table(path))
    return out
