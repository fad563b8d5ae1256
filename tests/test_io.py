"""foldstudy/io.py's record writer against pandas: the grade job writes its evidence
tables from plain records (write_records_csv), and every reader, the release's digests
included, expects the bytes that write_csv wrote for the same records' pandas frame."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest

from foldstudy.evidence import columns
from foldstudy.evidence.load import write_table
from foldstudy.grade.rows import write_rows
from foldstudy.io import (
    concat_text_tables,
    read_text_table,
    write_csv,
    write_records_csv,
    write_text_table,
)

from .support.synthetic import synthetic_package, synthetic_trace

# What a graded record's cell can hold: counts (ints within int64), measures (floats,
# nan and inf among them), flags, missing values, and text that a CSV must quote or
# that pandas could misread ("nan", "True", "1.0").
VALUES = {
    "int": [0, 1, -1, 7, 123456, 1234567, 10**12, -5, 2**63 - 1],
    "float": [0.1, 1.0, 3.0, -0.0, 1e20, 0.1234567, 1e-7, math.inf, -math.inf, 1234567.0],
    "nan": [math.nan],
    "none": [None],
    "bool": [True, False],
    "str": ["", "nan", "a,b", 'q"x', "x\ny", "True", " 1", "NA", "é", "null", "1.0"],
}


def both(tmp_path, records, cols, booleans=()):
    """(what write_csv writes for the records' frame, what write_records_csv writes)."""
    write_csv(pd.DataFrame(records, columns=cols), tmp_path / "pandas.csv", booleans)
    write_records_csv(records, cols, tmp_path / "records.csv", booleans)
    return ((tmp_path / "pandas.csv").read_text(encoding="utf-8"),
            (tmp_path / "records.csv").read_text(encoding="utf-8"))


def random_table(rng: random.Random) -> tuple[list[dict], list[str], set[str]]:
    """Up to five records of up to four columns, each column mixing one to three kinds
    of value, a key left out now and then, and a key beyond the columns."""
    cols = [f"c{i}" for i in range(rng.randint(1, 4))]
    kinds = {c: rng.sample(sorted(VALUES), rng.randint(1, 3)) for c in cols}
    records = []
    for _ in range(rng.randint(0, 5)):
        rec = {c: rng.choice(VALUES[rng.choice(kinds[c])]) for c in cols if rng.random() > 0.1}
        if rng.random() < 0.1:
            rec["not_a_column"] = 1
        records.append(rec)
    booleans = {c for c in cols if set(kinds[c]) <= {"bool", "none", "nan"}}
    return records, cols, booleans


@pytest.mark.parametrize("seed", range(2))
def test_records_are_written_as_pandas_writes_their_frame(tmp_path, seed):
    rng = random.Random(seed)
    for _ in range(750):
        records, cols, booleans = random_table(rng)
        theirs, ours = both(tmp_path, records, cols, booleans)
        assert ours == theirs, (records, cols, booleans)


EMPTY = '""'


@pytest.mark.parametrize(("values", "cells"), [
    ([1234567, 2], ["1234567", "2"]),  # ints alone: int64
    ([1234567, None], ["1.23457e+06", ""]),  # a missing value makes it float64: "%.6g"
    ([3, 0.5], ["3", "0.5"]),
    ([True, None], ["True", ""]),  # not a boolean column: object, str()
    ([1, "a"], ["1", "a"]),
    ([None, None], ["", ""]),
])
def test_each_column_is_written_as_the_dtype_pandas_infers(tmp_path, values, cells):
    records = [{"c": v} for v in values]
    theirs, ours = both(tmp_path, records, ["c"])
    # a row whose one cell is empty is written "" (else it would read as a blank line)
    assert ours == theirs == "c\n" + "".join(f"{c or EMPTY}\n" for c in cells)


def test_a_boolean_column_is_true_false_and_empty(tmp_path):
    records = [{"valid": True, "n": 1}, {"valid": False, "n": 2}, {"n": 3}]
    theirs, ours = both(tmp_path, records, ["valid", "n"], {"valid"})
    assert ours == theirs == "valid,n\ntrue,1\nfalse,2\n,3\n"


def test_no_records_is_the_header_alone(tmp_path):
    assert both(tmp_path, [], ["a", "b"]) == ("a,b\n", "a,b\n")


def test_the_paper_sized_package_is_the_same_bytes_from_records(tmp_path):
    """The synthetic package at the paper's 620 rows (and its checks and trace), turned
    into records as the grade job holds them, is written byte for byte as its frames."""
    rows, checks = synthetic_package(620, seed=3)
    for name, df, cols in (("rows", rows, columns.ROWS), ("checks", checks, columns.CHECKS),
                           ("trace", synthetic_trace(checks), columns.TRACE)):
        records = df.to_dict("records")
        write_table(pd.DataFrame(records, columns=cols), tmp_path / f"{name}-pandas.csv")
        write_rows(records, cols, str(tmp_path / f"{name}.csv"))
        assert (tmp_path / f"{name}.csv").read_bytes() == \
            (tmp_path / f"{name}-pandas.csv").read_bytes(), name


def pandas_join(paths, out, sep=","):
    """What the evidence job wrote before: each part read as text by pandas, the parts
    concatenated, the frame written."""
    dfs = [pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False) for p in paths]
    (pd.concat(dfs, ignore_index=True) if dfs else pd.DataFrame()).to_csv(
        out, index=False, lineterminator="\n")


@pytest.mark.parametrize("seed", range(2))
def test_text_tables_are_joined_as_pandas_joins_them(tmp_path, seed):
    """Parts written by the record writer (or with their columns in another order, or
    one column fewer) joined as text give the bytes pandas gave."""
    rng = random.Random(seed)
    for _ in range(300):
        paths = []
        records, cols, booleans = random_table(rng)
        for i in range(rng.randint(0, 3)):
            part = cols[::-1] if rng.random() < 0.2 else \
                cols[:-1] if len(cols) > 1 and rng.random() < 0.2 else cols
            write_records_csv(records[i:], part, tmp_path / f"part{i}.csv", booleans)
            paths.append(tmp_path / f"part{i}.csv")
        pandas_join(paths, tmp_path / "pandas.csv")
        write_text_table(*concat_text_tables([read_text_table(p) for p in paths]),
                         tmp_path / "ours.csv")
        assert (tmp_path / "ours.csv").read_text(encoding="utf-8") == \
            (tmp_path / "pandas.csv").read_text(encoding="utf-8"), (records, cols)


def test_a_tsv_is_rewritten_as_a_csv_as_pandas_did(tmp_path):
    tsv = tmp_path / "summary.tsv"
    tsv.write_text('model\tverdict\treason\na\tok\t\nb\trefused\tno key, "none"\n',
                   encoding="utf-8")
    pandas_join([tsv], tmp_path / "pandas.csv", sep="\t")
    write_text_table(*read_text_table(tsv, delimiter="\t"), tmp_path / "ours.csv")
    assert (tmp_path / "ours.csv").read_text() == (tmp_path / "pandas.csv").read_text() \
        == 'model,verdict,reason\na,ok,\nb,refused,"no key, ""none"""\n'
