"""Loading an evidence package (rows.csv, checks.csv and the optional files) as the
contract in columns.py says it must be; every failure names the file and the column.

Every stage that reads evidence reads it here: statistics, tables, figures, verify.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..io import read_csv, write_csv
from . import columns


def read_table(path: str | Path) -> pd.DataFrame:
    """An evidence CSV with its booleans as booleans and empty cells missing."""
    return read_csv(path, columns.BOOLEAN)


def write_table(df: pd.DataFrame, path: str | Path) -> None:
    """An evidence CSV as the contract writes it: booleans true/false, empty for missing."""
    write_csv(df, path, columns.BOOLEAN)


class EvidenceError(ValueError):
    """An evidence package that cannot be read as the contract says: names the column."""


# ------------------------------------------------------------------------- evidence

def _check_columns(df: pd.DataFrame, required: list[str], name: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise EvidenceError(f"{name}: missing column(s) {', '.join(missing)} "
                            f"(the contract, foldstudy/evidence/columns.py, requires them)")
    for c in df.columns:
        col = df[c]
        if c in columns.NUMERIC and not pd.api.types.is_numeric_dtype(col):
            num = pd.to_numeric(col, errors="coerce")
            bad = col[num.isna() & col.notna()]
            if len(bad):
                raise EvidenceError(f"{name}: column {c} is malformed: {bad.iloc[0]!r} on line "
                                    f"{bad.index[0] + 2} is not a number")
        if c in columns.BOOLEAN and col.isna().any():
            src = {p: a for a, p in df.attrs.get("aliases", {}).items()}.get(c, c)
            raw = pd.read_csv(df.attrs["path"], usecols=[src], dtype=str,
                              keep_default_na=False)[src]
            bad = raw[~raw.isin(["true", "false", ""])]
            if len(bad):
                raise EvidenceError(f"{name}: column {c} is malformed: {bad.iloc[0]!r} on line "
                                    f"{bad.index[0] + 2} is not true/false")
            if c in columns.BOOLEAN_REQUIRED:
                line = int(col.isna().to_numpy().argmax()) + 2
                raise EvidenceError(f"{name}: column {c} is empty on line {line}; "
                                    "it must be true or false")


def read_artifact(path: Path, required: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise EvidenceError(f"{path}: no such evidence file")
    try:
        df = read_table(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise EvidenceError(f"{path.name}: not a readable CSV ({e})") from e
    df.attrs["path"] = str(path)
    df = _with_project_names(df, path.name)
    _check_columns(df, required, path.name)
    return df


def _with_project_names(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """The paper's column names (columns.ALIASES) read as the project's; a file holding
    both names of one column is ambiguous and fails naming both."""
    both = [f"{a}/{c}" for a, c in columns.ALIASES.items() if a in df.columns and c in df.columns]
    if both:
        raise EvidenceError(f"{name}: holds both names of one column ({', '.join(both)}); "
                            "keep one (the paper's name or the project's)")
    renamed = df.rename(columns={a: c for a, c in columns.ALIASES.items() if a in df.columns})
    renamed.attrs = df.attrs
    renamed.attrs["aliases"] = {a: c for a, c in columns.ALIASES.items() if a in df.columns}
    return renamed


def load_evidence(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rows.csv and checks.csv of an evidence package, checked against the contract.

    folds.csv and manifest.json are optional; when present, folds.csv must carry its
    columns and every artifact must match the manifest's sha256 and row count (the lead's
    provenance.check_manifest, reused so both stages agree on what "matches" means).
    Fails with an EvidenceError naming the file and column.
    """
    d = Path(directory)
    rows = read_artifact(d / "rows.csv", columns.ROWS_REQUIRED)
    checks = read_artifact(d / "checks.csv", columns.CHECKS_REQUIRED)
    bad = rows[rows["valid"] & rows["recall"].isna()]
    if len(bad):
        raise EvidenceError(f"rows.csv: column recall is empty on valid row "
                            f"{bad['row_id'].iloc[0]!r}")
    off = rows[(rows["recall"] - rows["n_correct"] / rows["n_graded"]).abs() > 1e-5]
    if len(off):
        r = off.iloc[0]
        raise EvidenceError(f"rows.csv: column recall is malformed: {r['recall']} on row "
                            f"{r['row_id']!r} is not n_correct / n_graded "
                            f"({r['n_correct']}/{r['n_graded']})")
    for name, required in (("folds.csv", columns.FOLDS_REQUIRED),
                           ("probes.csv", columns.PROBES_REQUIRED),
                           ("trace.csv", columns.TRACE_REQUIRED)):
        if (d / name).is_file():
            head = pd.read_csv(d / name, nrows=0)
            _check_columns(head, required, name)
    if (d / "manifest.json").is_file():
        from .provenance import check_manifest  # hashlib only when a manifest is there

        manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        files = {n: d / n for n in manifest.get("artifacts", {})}
        problems = check_manifest(manifest, files)
        if problems:
            raise EvidenceError("manifest.json: " + "; ".join(str(p) for p in problems))
    return rows, checks


def load_probes(path: str | Path) -> pd.DataFrame | None:
    """Probe verdicts: a package's probes.csv or this run's summary.tsv; None if absent."""
    p = Path(path)
    if not p.is_file():
        return None
    return pd.read_csv(p, dtype=str, keep_default_na=False,
                       sep="\t" if p.suffix == ".tsv" else ",")
