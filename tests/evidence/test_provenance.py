"""Manifest, lock and claims checks: every kind of drift is named."""

from __future__ import annotations

from pathlib import Path

from foldstudy.evidence import columns
from foldstudy.evidence.provenance import build_manifest, check_manifest, csv_rows
from foldstudy.release.claims import check_claims
from foldstudy.release.lock import (
    build_lock,
    check_contracts,
    check_lock,
    check_numbers,
    tree_digest,
)


def write_rows(path: Path, n: int = 3) -> None:
    lines = [",".join(columns.ROWS)]
    for i in range(n):
        cells = [f"r{i}" if c == "row_id" else ("true" if c == "valid" else "1")
                 for c in columns.ROWS]
        cells[columns.ROWS.index("answer")] = '"line one\nline two"'  # quoted newline
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def flip_byte(path: Path, offset: int = -3) -> None:
    b = bytearray(path.read_bytes())
    b[offset] = ord("x") if b[offset] != ord("x") else ord("y")
    path.write_bytes(bytes(b))


def test_csv_rows_counts_quoted_newlines(tmp_path):
    write_rows(tmp_path / "rows.csv", 4)
    assert csv_rows(tmp_path / "rows.csv") == 4


def test_manifest_names_a_changed_byte_and_a_changed_row_count(tmp_path):
    rows = tmp_path / "rows.csv"
    write_rows(rows)
    manifest = build_manifest({"rows.csv": rows}, {"study": "t"})
    assert manifest["artifacts"]["rows.csv"]["rows"] == 3
    assert check_manifest(manifest, {"rows.csv": rows}) == []
    flip_byte(rows)
    [m] = check_manifest(manifest, {"rows.csv": rows})
    assert m.what == "rows.csv" and "sha256" in m.detail
    write_rows(rows, 5)
    assert {m.detail.split()[0] for m in check_manifest(manifest, {"rows.csv": rows})} >= {"5"}
    rows.unlink()
    assert check_manifest(manifest, {"rows.csv": rows})[0].detail == "listed but missing"


def test_contract_names_the_missing_column(tmp_path):
    p = tmp_path / "checks.csv"
    p.write_text(",".join(c for c in columns.CHECKS if c != "in_carrier") + "\n")
    [m] = check_contracts({"checks.csv": p})
    assert "in_carrier" in m.detail
    # the contract's file, by the path a reader finds it at
    assert m.against == "column contract (foldstudy/evidence/columns.py)"
    assert (Path(columns.__file__).parents[1] / "evidence/columns.py").is_file()


def test_lock_names_changed_private_input_public_artifact_and_number(tmp_path):
    store = tmp_path / "store"
    (store / "ab").mkdir(parents=True)
    (store / "ab" / "abc.json").write_text("{}")
    pub = tmp_path / "numbers.json"
    pub.write_text('{"icc.value": 0.75}')
    private = {"store": tree_digest(store)}
    lock = build_lock("t", private, {"stats/numbers.json": pub}, {"icc.value": 0.75})
    assert check_lock(lock, private, {"stats/numbers.json": pub}, {"icc.value": 0.75}) == []

    (store / "ab" / "abc.json").write_text("{ }")
    drift = check_lock(lock, {"store": tree_digest(store)}, {"stats/numbers.json": pub},
                       {"icc.value": 0.75})
    assert [(m.what, m.against) for m in drift] == [("store", "lock (private input)")]

    flip_byte(pub, 2)
    drift = check_lock(lock, private, {"stats/numbers.json": pub}, {"icc.value": 0.7501})
    assert {(m.what, m.against) for m in drift} == {
        ("stats/numbers.json", "lock (public artifact)"), ("icc.value", "lock (numbers)")}


def test_absent_private_input_is_not_drift(tmp_path):
    lock = build_lock("t", {"store": {"sha256": "0" * 64, "files": 3}}, {}, {})
    assert check_lock(lock, {}, {}, {}) == []


def test_claims_within_tolerance_pass_and_a_changed_number_is_named():
    numbers = {"icc.value": 0.7504, "headings.r": 0.61}
    ok = [{"key": "icc.value", "value": 0.750, "tolerance": 0.0005},
          {"key": "headings.r", "value": 0.61, "tolerance": 0.005}]
    assert check_claims(ok, numbers, "paper.yaml") == []
    bad = [{"key": "icc.value", "value": 0.851, "tolerance": 0.0005, "where": "abstract"}]
    [m] = check_claims(bad, numbers, "paper.yaml")
    assert m.what == "icc.value" and "abstract" in m.against and "0.851" in m.detail
    [m] = check_claims([{"key": "nope", "value": 1}], numbers, "paper.yaml")
    assert "not recomputable" in m.detail


def test_numbers_compare_by_key():
    assert check_numbers({"a": 1.0, "b": 2}, {"a": 1.0, "b": 2}, "x") == []
    whats = {m.what for m in check_numbers({"a": 1.0, "c": 3}, {"a": 1.1, "b": 2}, "x")}
    assert whats == {"a", "b", "c"}
