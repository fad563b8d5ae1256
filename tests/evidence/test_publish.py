"""The evidence job's refusals (foldstudy/evidence/publish.py), read from the per-sweep
tables as text."""

from __future__ import annotations

import pytest

from foldstudy.evidence.publish import (
    NothingRan,
    RowIdCollision,
    refuse_a_study_that_never_ran,
    refuse_row_id_collisions,
)


def table(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_study_whose_every_row_was_refused_names_each_models_verdict(tmp_path):
    rows = [table(tmp_path / "a.csv", "row_id,invalid_reason\ns/m1/r0/j,not_run:no key\n"),
            table(tmp_path / "b.csv", "row_id,invalid_reason\nt/m2/r0/j,not_run:no gguf\n")]
    probes = table(tmp_path / "summary.tsv", "model\tverdict\treason\n"
                   "m1\tunusable\tno key, none set\nm2\tunusable\tno GGUF\n")
    with pytest.raises(NothingRan) as e:
        refuse_a_study_that_never_ran(rows, probes)
    assert "all 2 rows were refused" in str(e.value)
    assert "  m1: unusable (no key, none set)\n  m2: unusable (no GGUF)" in str(e.value)


def test_one_row_that_ran_is_evidence(tmp_path):
    rows = [table(tmp_path / "a.csv", "row_id,invalid_reason\ns/m1/r0/j,not_run:no key\n"
                  "s/m1/r0/m,\n")]
    refuse_a_study_that_never_ran(rows, None)
    refuse_a_study_that_never_ran([table(tmp_path / "e.csv", "row_id,invalid_reason\n")],
                                  None)


def test_a_row_id_in_two_sweeps_tables_is_refused_naming_both(tmp_path):
    a = table(tmp_path / "a.csv", "valid,row_id\ntrue,s/m/r0/j\n")
    b = table(tmp_path / "b.csv", "valid,row_id\nfalse,s/m/r0/j\n")
    refuse_row_id_collisions([a])
    with pytest.raises(RowIdCollision, match=f"{b} and {a} both hold row_id 's/m/r0/j'"):
        refuse_row_id_collisions([a, b])
