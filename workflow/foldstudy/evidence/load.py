"""Loading an evidence package (rows.csv, checks.csv and the optional files) as the
contract in columns.py says it must be; every failure names the file and the column.

Every stage that reads evidence reads it here: statistics, tables, figures, verify.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import StudyError
from ..io import read_csv, read_json_object, write_csv
from ..study.derived import derived_from
from . import columns


def read_table(path: str | Path) -> pd.DataFrame:
    """An evidence CSV with its booleans as booleans and empty cells missing."""
    return read_csv(path, columns.BOOLEAN)


def write_table(df: pd.DataFrame, path: str | Path) -> None:
    """An evidence CSV as the contract writes it: booleans true/false, empty for missing."""
    write_csv(df, path, columns.BOOLEAN)


class EvidenceError(StudyError, ValueError):
    """An evidence package that cannot be read as the contract says: names the column."""


# ------------------------------------------------------------------------- evidence

def evidence_dir_problem(value: str, checkout: str | Path) -> str | None:
    """Why `--config evidence=VALUE` cannot be read as a package, before any job: not a
    directory (a file ends in NotADirectoryError deep in a job), or this checkout's own
    results/evidence, which the rules that read a package would rewrite (its manifest)."""
    p = Path(value)
    if p.is_symlink() and not p.exists():
        return (f"config.evidence: {value!r} is a symbolic link to {_link_target(p)!r}, which "
                "leads nowhere (a loop, or a missing path); point evidence= at the package's "
                "evidence/ folder itself")
    if not p.exists():
        return f"config.evidence: {value!r} does not exist (a released package's evidence/ folder)"
    if not p.is_dir():
        return (f"config.evidence: {value!r} is a file, not a directory; point it at a "
                "package's evidence/ folder (the one holding rows.csv and checks.csv)")
    own = (Path(checkout) / "results" / "evidence").resolve()
    if p.resolve() == own:
        return (f"config.evidence: {value!r} is this checkout's own results/evidence, which "
                "this run would rewrite; copy the package elsewhere first (cp -r "
                "results/evidence /tmp/package) and point evidence= at the copy")
    return None


def evidence_package_problem(directory: str | Path, arms: Collection[str],
                             scenarios: Collection[str], config: dict[str, Any]
                             ) -> str | None:
    """Why the package at `directory` cannot be read for the study `config` asks for
    (another study's evidence, said first since it explains every other difference; then
    load_evidence's every check: identity, bounds, agreement with its manifest), said
    once before any job and naming the package, as the config is checked; None when it
    loads. The stages still check what they read."""
    from .provenance import check_same_study

    try:
        check_same_study(Path(directory) / "manifest.json", config)
        load_evidence(directory, arms, scenarios)
    except StudyError as e:
        return f"config.evidence: the package {directory} is refused: {e}"
    return None


def pilot_problem(pilot: str | None) -> str | None:
    """Why `power.pilot` (the repeat plan's pilot) is not an evidence package,
    before any job (None: it is, or none is set)."""
    if not pilot:
        return None
    p = Path(pilot)
    if not p.is_dir():
        return (f"config.power.pilot: {pilot!r} is not a directory; point it at an evidence "
                "package (the folder holding rows.csv and checks.csv, e.g. results/evidence "
                "of a pilot study)")
    for name, required in (("rows.csv", columns.ROWS_REQUIRED),
                           ("checks.csv", columns.CHECKS_REQUIRED)):
        f = p / name
        if not f.is_file():
            return (f"config.power.pilot: {pilot!r} has no {name}, so it is not an evidence "
                    "package (rows.csv and checks.csv, docs/design.md §8)")
        missing = [c for c in required if c not in _header(f)]
        if missing:
            return (f"config.power.pilot: {f} lacks the column(s) {', '.join(missing)} "
                    "(docs/design.md §8), so it is not an evidence package")
    return None


def _header(path: Path) -> list[str]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


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
                raise EvidenceError(f"{name}: column {c} is malformed: {_cell(bad.iloc[0])} on "
                                    f"line {bad.index[0] + 2} is not a number")
        if c in columns.NUMERIC:
            # counts, sizes, fills and positions: none of them can be below zero
            num = pd.to_numeric(col, errors="coerce")
            negative = (num < 0).to_numpy(dtype=bool)
            if negative.any():
                i = int(negative.argmax())
                raise EvidenceError(f"{name}: column {c} is malformed: {_cell(col.iloc[i])} "
                                    f"on line {col.index[i] + 2} is negative")
            _check_bounds(num, c, name)
        if c in columns.BOOLEAN and col.isna().any():
            src = {p: a for a, p in df.attrs.get("aliases", {}).items()}.get(c, c)
            raw = pd.read_csv(df.attrs["path"], usecols=[src], dtype=str,
                              keep_default_na=False)[src]
            bad = raw[~raw.isin(["true", "false", ""])]
            if len(bad):
                raise EvidenceError(f"{name}: column {c} is malformed: {_cell(bad.iloc[0])} on "
                                    f"line {bad.index[0] + 2} is not true/false")
            if c in columns.BOOLEAN_REQUIRED:
                line = int(col.isna().to_numpy().argmax()) + 2
                raise EvidenceError(f"{name}: column {c} is empty on line {line}; "
                                    "it must be true or false")


def _check_bounds(num: pd.Series, c: str, name: str) -> None:
    """A number the column's type cannot hold (columns.py: COUNTS, SHARES, MAX_COUNT):
    infinity anywhere, a count that is not a whole number or beyond any count. Each would
    move a statistic without failing it. (recall and fill are checked as the quotients
    they are, in check_consistency and check_rows_agree.)"""
    def refuse(mask: pd.Series, why: str) -> None:
        bad = mask.fillna(False).to_numpy(dtype=bool) & num.notna().to_numpy()
        if bad.any():
            i = int(bad.argmax())
            raise EvidenceError(f"{name}: column {c} is malformed: {float(num.iloc[i])!r} on line "
                                f"{num.index[i] + 2} {why}")

    refuse(np.isinf(num), "is not a finite number")
    if c in columns.COUNTS:
        refuse(num % 1 != 0, "is not a whole number (it counts something)")
    if c in columns.COUNTS or c == "carried_chars":
        refuse(num > columns.MAX_COUNT, f"is beyond any count (at most {columns.MAX_COUNT})")


def _check_shape(path: Path) -> None:
    """Every line has as many cells as the header names, and every header cell a name.

    pandas reads data lines one cell longer than the header (a trailing comma on each)
    by silently taking the first column as the index, which shifts every column by one
    and makes every later message name the wrong line; refused here by line instead.
    """
    name = path.name
    line = 0  # the last line read whole (a csv.Error is on the next)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            line = 1
            if not header:
                raise EvidenceError(f"{name}: empty file; the first line must name the "
                                    "columns (foldstudy/evidence/columns.py)")
            unnamed = [i for i, h in enumerate(header, start=1) if not h.strip()]
            if unnamed:
                raise EvidenceError(f"{name}: the header's column {unnamed[0]} has no name on "
                                    "line 1 (a trailing comma?)")
            twice = next((h for i, h in enumerate(header) if h in header[:i]), None)
            if twice is not None:
                first, second = [i + 1 for i, h in enumerate(header) if h == twice][:2]
                raise EvidenceError(f"{name}: the header on line 1 names column {twice} twice "
                                    f"(columns {first} and {second}); one column, one name")
            for line, cells in enumerate(reader, start=2):
                if cells and len(cells) != len(header):
                    raise EvidenceError(
                        f"{name}: line {line} has {len(cells)} cells, the header on line 1 "
                        f"names {len(header)} columns (a trailing comma, or an unquoted "
                        "comma inside a cell?)")
    except UnicodeDecodeError as e:
        raise EvidenceError(f"{name}: not a readable CSV ({e})") from e
    except csv.Error as e:  # e.g. "field larger than field limit": the line it reached
        raise EvidenceError(f"{name}: not a readable CSV on line {line + 1} ({e}; "
                            "an evidence cell is never that long)") from e


def _link_target(p: Path) -> str:
    try:
        return os.readlink(p)
    except OSError:
        return "?"


def read_artifact(path: Path, required: list[str]) -> pd.DataFrame:
    if path.is_symlink():
        # A package holds its files: a link reads whatever it points at today (a system
        # file, or itself in a loop), and the file's cell count would be the only clue.
        raise EvidenceError(f"{path}: a symbolic link to {_link_target(path)!r}, not an "
                            "evidence file; copy the file itself into the package")
    if not path.is_file():
        raise EvidenceError(f"{path}: no such evidence file")
    _check_shape(path)
    try:
        df = read_table(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise EvidenceError(f"{path.name}: not a readable CSV ({e})") from e
    df.attrs["path"] = str(path)
    df = _with_project_names(df, path.name)
    _check_columns(df, required, path.name)
    _check_text(df, path.name)
    return df


# NUL and the bidirectional embeddings, overrides and isolates: invisible, and each
# reorders or cuts what a reader sees; no cell of a package holds one.
_HIDDEN = "\x00\u202a-\u202e\u2066-\u2069"
# Control and invisible formatting characters (Unicode Cc and the Cf a name could hide):
# never in a name.
_CONTROL = ("\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
            "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f")
_FORMULA = ("=", "+", "-", "@")


def _check_text(df: pd.DataFrame, name: str) -> None:
    """Text no package holds, refused by file, column and line: a hidden character in any
    cell, a control character or an overlong value in a name (columns.NAME_MAX_CHARS),
    and a printed cell beginning like a spreadsheet formula (columns.PRINTED), which a
    table CSV would carry into a reader's spreadsheet as a live formula."""
    for c in df.columns:
        if df[c].dtype != object and not pd.api.types.is_string_dtype(df[c]):
            continue
        text = df[c].astype("string")
        cell_rule = f"[{_HIDDEN}]" if c not in columns.NAME_MAX_CHARS else f"[{_CONTROL}]"
        if (hit := _first(df, text.str.contains(cell_rule, regex=True))) is not None:
            r, line = hit
            ch = next(ch for ch in str(r[c]) if re.match(cell_rule, ch))
            raise EvidenceError(f"{name}: column {c} is malformed: line {line} holds the "
                                f"invisible character U+{ord(ch):04X}; a package's "
                                f"{'names' if c in columns.NAME_MAX_CHARS else 'cells'} "
                                "hold none (it would hide or reorder what a reader sees)")
        limit = columns.NAME_MAX_CHARS.get(c)
        if limit and (hit := _first(df, text.str.len() > limit)) is not None:
            r, line = hit
            raise EvidenceError(f"{name}: column {c} is malformed: line {line} holds a name of "
                                f"{len(str(r[c])):,} characters; a {c} is at most {limit}")
        if c in columns.PRINTED:
            formula = text.str.startswith(_FORMULA)
            if (hit := _first(df, formula)) is not None:
                r, line = hit
                raise EvidenceError(f"{name}: column {c} is malformed: {str(r[c])[:40]!r} on "
                                    f"line {line} begins with {str(r[c])[0]!r}, as a "
                                    "spreadsheet formula does; a table CSV would carry it "
                                    "into a reader's spreadsheet as one")


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


def load_evidence(directory: str | Path, arms: Collection[str],
                  scenarios: Collection[str] | None = None,
                  opaque_arms: Collection[str] | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rows.csv and checks.csv of an evidence package, checked against the contract.

    Beyond the columns, the two files must agree with each other and with the study's
    arms (check_consistency): a package without a manifest still passes every one of
    those checks. folds.csv and manifest.json are optional; when present, folds.csv must
    carry its columns and every artifact must match the manifest's sha256 and row count
    (provenance.check_manifest, the one verify uses, so both stages agree on what
    "matches" means). arms: the study's arm ids (AnalysisPlan.arm_order, from the arms.yaml
    the caller loaded): given, never read here, so evidence stays below analysis and never reads a
    checkout's arms.yaml behind its caller's back. scenarios: the known scenarios
    (AnalysisPlan.scenarios), given by the caller for the same reason; a package's manifest
    config also names each sweep's own (check_against_config). The same rules hold for
    a reviewer's package (evidence=) and this checkout's own evidence, so the release
    of any study this checkout made rebuilds from its package. opaque_arms: the arms
    whose carry may be opaque (AnalysisPlan.opaque_arms, from their carrier kinds), given
    for the same reason; given, a trace line of any other arm's run left opaque is
    refused (a package forging it would take that run's facts out of every survival
    count).
    Fails with an EvidenceError naming the file, the column and the line.
    """
    d = Path(directory)
    rows = read_artifact(d / "rows.csv", columns.ROWS_REQUIRED)
    checks = read_artifact(d / "checks.csv", columns.CHECKS_REQUIRED)
    # A file edited after its manifest was written is said first: it names the edit.
    made: dict | None = None
    if (d / "manifest.json").is_file():
        from .provenance import check_manifest  # hashlib only when a manifest is there

        manifest = read_json_object(d / "manifest.json", "an evidence manifest",
                                    mappings=("config",), entries=("artifacts",))
        files = {n: d / n for n in manifest.get("artifacts", {})}
        problems = check_manifest(manifest, files)
        if problems:
            raise EvidenceError("manifest.json: " + "; ".join(str(p) for p in problems))
        made = manifest.get("config") if isinstance(manifest.get("config"), dict) else None
    if made and made.get("arms_file") and isinstance(made.get("sweeps"), dict):
        # a study's own arms (config arms_file), checked when that config was
        # loaded, as the sweeps that ran them name them
        arms = [*arms, *sorted({a for sw in made["sweeps"].values()
                                for a in sw.get("arms") or [] if a not in set(arms)})]
    check_consistency(rows, checks, arms)
    check_rows_agree(rows, checks)
    if made and isinstance(made.get("sweeps"), dict):
        check_against_config(rows, made["sweeps"])
    if scenarios is not None and made and isinstance(made.get("scenarios"), dict):
        # a study's own session scenarios, as the config that made it names them
        scenarios = (*scenarios, *made["scenarios"])
    if scenarios is not None:
        if (hit := _first(rows, ~rows["scenario"].astype(str).isin(set(scenarios)))):
            r, line = hit
            raise EvidenceError(f"rows.csv: column scenario is malformed: {r['scenario']!r} on "
                                f"line {line} is not a scenario (known: "
                                f"{' '.join(sorted(scenarios))})")
    for name, required in (("folds.csv", columns.FOLDS_REQUIRED),
                           ("probes.csv", columns.PROBES_REQUIRED),
                           ("trace.csv", columns.TRACE_REQUIRED)):
        if (d / name).is_file():
            head = pd.read_csv(d / name, nrows=0)
            _check_columns(head, required, name)
    if (d / "trace.csv").is_file():
        _check_opaque_trace(rows, pd.read_csv(d / "trace.csv", usecols=["row_id", "present"],
                                              dtype=str, keep_default_na=False),
                            opaque_arms)
    return rows, checks


def _check_opaque_trace(rows: pd.DataFrame, trace: pd.DataFrame,
                        opaque_arms: Collection[str] | None = None) -> None:
    """A run's carry is opaque (a native arm's encrypted compaction) on every
    fold or on none, and its row says so too: trace.csv's present is empty on all of the
    run's lines exactly where rows.csv's carrier_present is empty, neither kept nor lost.
    A present left empty beside a recorded carrier would drop the fact from the survival
    tables while its row still counts it carried. With opaque_arms, only their runs may
    be opaque (their carrier kind's may_be_opaque). Refused naming the trace line."""
    empty = trace["present"].str.strip() == ""
    if not empty.any():
        return
    if opaque_arms is not None:
        arm = trace["row_id"].map(dict(zip(rows["row_id"].astype(str),
                                           rows["arm"].astype(str), strict=True)))
        if (hit := _first(trace.assign(arm=arm),
                          empty & arm.notna() & ~arm.isin(set(opaque_arms)))):
            t, line = hit
            may = " ".join(sorted(opaque_arms)) or "none"
            raise EvidenceError(f"trace.csv: column present is empty on line {line}: row "
                                f"{t['row_id']!r} of arm {t['arm']!r} claims an opaque "
                                f"carry, which its carrier kind never has (arms whose "
                                f"carry may be opaque: {may})")
    per = empty.groupby(trace["row_id"], sort=False).agg(["sum", "size"])
    part = per[(per["sum"] > 0) & (per["sum"] < per["size"])]
    recorded = set(rows.loc[rows["carrier_present"].notna(), "row_id"].astype(str))
    for mask, why in (
            (trace["row_id"].isin(part.index), lambda r: (
                f"present is empty on {int(part.loc[r, 'sum'])} of the "
                f"{int(part.loc[r, 'size'])} lines of row {r!r}; a run's carry is opaque "
                "on every fold or on none")),
            (trace["row_id"].isin(recorded), lambda r: (
                f"present is empty for row {r!r}, whose carrier_present in rows.csv is "
                "recorded; present is empty only on a run whose carry is opaque, where "
                "carrier_present is empty too"))):
        if (hit := _first(trace, empty & mask)) is not None:
            t, line = hit
            raise EvidenceError(f"trace.csv: column present is empty on line {line}: "
                                f"{why(t['row_id'])}")


def _first(df: pd.DataFrame, mask: pd.Series) -> tuple[dict[str, Any], int] | None:
    """The first row where mask holds, its cells as Python values (so a refusal says `2`,
    never numpy's `np.int64(2)`), and its line in the file (line 1 is the header)."""
    if not mask.index.equals(df.index):
        mask = mask.reindex(df.index)
    hit = mask.fillna(False).to_numpy(dtype=bool)
    if not hit.any():  # the common case: nothing to refuse, no frame filtered
        return None
    i = int(hit.argmax())
    return {k: _python(v) for k, v in df.iloc[i].items()}, int(df.index[i]) + 2


def _python(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _cell(v: Any) -> str:
    """A cell's value as a refusal shows it: the Python value's repr, never numpy's."""
    return repr(_python(v))


def check_consistency(rows: pd.DataFrame, checks: pd.DataFrame, arms: Collection[str]
                      ) -> None:
    """Numbers that cannot be: each one moves a statistic, so each is refused by file,
    column and line (docs/design.md §8: recall = n_correct / n_graded, one check per graded fact,
    one row per run, the arms of resources/arms.yaml)."""
    if rows.empty:
        raise EvidenceError("rows.csv: no data line, only the header; an evidence package "
                            "holds one line per run")
    if (hit := _first(rows, rows["row_id"].duplicated(keep="first"))) is not None:
        r, line = hit
        first = int(rows.index[rows["row_id"] == r["row_id"]][0]) + 2
        raise EvidenceError(f"rows.csv: column row_id is malformed: {r['row_id']!r} on line "
                            f"{line} repeats line {first}; one line per run")
    # an arm the config derives from known arms (an A/A copy, config controls.aa; a native
    # arm sending a known arm's prompt, native_with) is known by its id (derived.py)
    known = set(arms) | {a for a in set(rows["arm"].astype(str)) if derived_from(a, arms)}
    if (hit := _first(rows, ~rows["arm"].astype(str).isin(known))) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column arm is malformed: {r['arm']!r} on line {line} "
                            f"is not an arm (known: {' '.join(sorted(arms))}; "
                            "resources/arms.yaml)")
    if (hit := _first(rows, rows["n_correct"] > rows["n_graded"])) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column n_correct is malformed: {r['n_correct']} on "
                            f"line {line} is more than n_graded ({r['n_graded']})")
    if (hit := _first(rows, rows["recall"].notna() & (rows["n_graded"] < 1))) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column n_graded is malformed: {r['n_graded']} on line "
                            f"{line} grades no fact, yet recall is {r['recall']}")
    if (hit := _first(rows, rows["valid"] & rows["recall"].isna())) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column recall is empty on valid row "
                            f"{r['row_id']!r} (line {line})")
    off = (rows["recall"] - rows["n_correct"] / rows["n_graded"]).abs() > 1e-5
    if (hit := _first(rows, off)) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column recall is malformed: {r['recall']} on row "
                            f"{r['row_id']!r} is not n_correct / n_graded "
                            f"({r['n_correct']}/{r['n_graded']}) on line {line}")
    known = set(rows["row_id"])
    if (hit := _first(checks, ~checks["row_id"].isin(known))) is not None:
        c, line = hit
        raise EvidenceError(f"checks.csv: column row_id is malformed: {c['row_id']!r} on line "
                            f"{line} is not a row of rows.csv")
    per_row = checks.groupby("row_id", sort=False)["correct"].agg(["size", "sum"])
    graded = rows.join(per_row, on="row_id")
    has = graded["size"].notna()
    if (hit := _first(graded, rows["valid"] & ~has)) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: valid row {r['row_id']!r} on line {line} has no "
                            "check in checks.csv (one check per graded fact)")
    if (hit := _first(graded, has & (graded["size"] != graded["n_graded"]))) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column n_graded is malformed: {r['n_graded']} on line "
                            f"{line}, but checks.csv holds {int(r['size'])} checks of row "
                            f"{r['row_id']!r}")
    if (hit := _first(graded, has & (graded["sum"] != graded["n_correct"]))) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column n_correct is malformed: {r['n_correct']} on "
                            f"line {line}, but checks.csv marks {int(r['sum'])} checks of row "
                            f"{r['row_id']!r} correct")


def check_rows_agree(rows: pd.DataFrame, checks: pd.DataFrame) -> None:
    """A row's numbers against its own cells and its checks, each refused by file, column
    and line: fill is carried_chars / declared_ceiling_chars, a valid row had no catch-up
    (grade/validity.py: a catch-up fold invalidates its row), the carrier rules
    (_check_carrier), a row checks each label once, and a scenario grades one set
    of labels (no more distinct labels than its rows grade facts)."""
    declared, carried = rows["declared_ceiling_chars"], rows["carried_chars"]
    quotient = carried / declared.where(declared > 0)
    off = (rows["fill"] - quotient).abs() > columns.FILL_TOLERANCE * (1 + quotient.abs())
    lone = rows["fill"].notna() & quotient.isna()
    if (hit := _first(rows, off | lone)) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column fill is malformed: {r['fill']} on line {line} is "
                            f"not carried_chars / declared_ceiling_chars ({r['carried_chars']}"
                            f" / {r['declared_ceiling_chars']})")
    if (hit := _first(rows, rows["valid"] & rows["catchup_fired"].fillna(False).astype(bool))):
        r, line = hit
        raise EvidenceError(f"rows.csv: column valid is malformed: true on line {line} with "
                            "catchup_fired true; a row whose catch-up fired is invalid "
                            "(paper §3.3)")
    twice = checks.duplicated(["row_id", "label"], keep="first")
    if (hit := _first(checks, twice)) is not None:
        c, line = hit
        raise EvidenceError(f"checks.csv: column label is malformed: {c['label']!r} on line "
                            f"{line} is checked twice for row {c['row_id']!r}; one check per "
                            "graded fact")
    _check_carrier(rows, checks)
    _check_labels(rows, checks)


def _check_carrier(rows: pd.DataFrame, checks: pd.DataFrame) -> None:
    """The carrier rules (paper §4.10, docs/design.md §8), each refused naming the row.

    A row's carrier is recorded or not as a whole: carrier_present and its checks'
    in_carrier are empty together (a package may record carriers on some rows only, as
    the paper's 215 of 620). Where recorded, carrier_present counts the in_carrier
    checks. An answer right beyond its carrier is no refusal, in a package or here: it is
    counted (`carrier.answer_beyond_carrier`) and §4.10's "not a single row" is a claim
    verify reports as reproduced or not (resources/claims/paper.yaml).
    """
    held = checks["in_carrier"].map({True: 1.0, False: 0.0})  # empty: NaN
    per = held.groupby(checks["row_id"], sort=False).agg(["count", "size", "sum"])
    joined = rows.join(per, on="row_id")
    has = joined["size"].notna()
    part = has & (joined["count"] > 0) & (joined["count"] < joined["size"])
    if (hit := _first(joined, part)) is not None:
        r, line = hit
        raise EvidenceError(f"checks.csv: column in_carrier is empty on "
                            f"{int(r['size'] - r['count'])} of the {int(r['size'])} checks of "
                            f"row {r['row_id']!r} (rows.csv line {line}); a row's carrier is "
                            "recorded on every check or on none")
    for empty_here, there, which in (
            (joined["carrier_present"].isna(), has & (joined["count"] > 0), "in_carrier set"),
            (has & (joined["count"] == 0), joined["carrier_present"].notna(),
             "in_carrier empty")):
        if (hit := _first(joined, empty_here & there)) is not None:
            r, line = hit
            state = "empty" if pd.isna(r["carrier_present"]) else int(r["carrier_present"])
            raise EvidenceError(f"rows.csv: column carrier_present is {state} on line {line} "
                                f"(row {r['row_id']!r}), but checks.csv has {which} on its "
                                "checks; carrier_present and in_carrier are empty together "
                                "(carrier not recorded) or filled together")
    if (hit := _first(joined, joined["carrier_present"].notna() & (joined["count"] > 0)
                      & (joined["carrier_present"] != joined["sum"]))) is not None:
        r, line = hit
        raise EvidenceError(f"rows.csv: column carrier_present is malformed: "
                            f"{r['carrier_present']} on line {line}, but checks.csv marks "
                            f"{int(r['sum'])} checks of row {r['row_id']!r} in_carrier")


def _check_labels(rows: pd.DataFrame, checks: pd.DataFrame) -> None:
    """A scenario grades a fixed set of facts: its rows' labels number at most the facts
    a row grades. A label beyond that is refused where it occurs least (a forged one)."""
    scen = checks.join(rows.set_index("row_id")["scenario"], on="row_id")
    for scenario, group in scen.groupby("scenario", sort=False):
        n = rows.loc[rows["scenario"] == scenario, "n_graded"].max()
        counts = group["label"].value_counts()
        if pd.notna(n) and len(counts) > n:
            rare = counts.sort_values(kind="stable").index[0]
            line = int(group.index[group["label"] == rare][0]) + 2
            raise EvidenceError(f"checks.csv: column label is malformed: {rare!r} on line "
                                f"{line} is not a graded label of scenario {scenario!r} (its "
                                f"rows grade {int(n)} facts; the package's checks name "
                                f"{len(counts)} labels)")


def check_against_config(rows: pd.DataFrame, sweeps: dict) -> None:
    """Rows against the config the package's manifest carries: each row's sweep, its
    scenario, repeat and position (a block runs each arm once), and a valid row's model
    and arm must be the sweep's."""
    def refuse(mask: pd.Series, column: str, why: Any) -> None:
        if (hit := _first(rows, mask)) is not None:
            r, line = hit
            raise EvidenceError(f"rows.csv: column {column} is malformed: {r[column]!r} on line "
                                f"{line} {why(r)} (manifest.json's config)")

    known = rows["sweep"].astype(str).isin(set(sweeps))
    refuse(rows["valid"] & ~known, "sweep",
           lambda r: f"is not a sweep of the package's config ({' '.join(sorted(sweeps))})")

    def sweep_of(r: pd.Series) -> dict:
        return sweeps[str(r["sweep"])]

    def field(key: str) -> pd.Series:
        return rows["sweep"].astype(str).map(lambda s: sweeps.get(s, {}).get(key))

    refuse(known & (rows["scenario"] != field("scenario")), "scenario",
           lambda r: f"is not sweep {r['sweep']}'s scenario ({sweep_of(r).get('scenario')!r})")
    refuse(known & (rows["repeat"] >= field("repeats").astype(float)), "repeat",
           lambda r: f"is beyond sweep {r['sweep']}'s {sweep_of(r).get('repeats')} repeats")
    n_arms = field("arms").map(lambda a: len(a) if isinstance(a, list) else None)
    refuse(known & (rows["position"] >= n_arms.astype(float)), "position",
           lambda r: f"is beyond sweep {r['sweep']}'s {len(sweep_of(r).get('arms') or [])} "
                     "arms (positions count from 0)")
    for column, key in (("model", "models"), ("arm", "arms")):
        listed = [str(v) in (sweeps.get(str(s), {}).get(key) or [])
                  for s, v in zip(rows["sweep"], rows[column], strict=True)]
        refuse(rows["valid"] & known & ~pd.Series(listed, index=rows.index), column,
               lambda r, key=key: f"is not one of sweep {r['sweep']}'s {key} "
                                  f"({' '.join(map(str, sweep_of(r).get(key) or []))})")
