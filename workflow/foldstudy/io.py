"""The package's only file I/O helpers: atomic writes, JSON/YAML/CSV, digests, job logs.

Every stage reads its inputs and writes its outputs through these, so "a killed job
leaves the old file or the new one, never half" and "booleans are true/false" hold in
one place, not in each stage.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import os
import sys
import tempfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger("foldstudy")


@contextlib.contextmanager
def logged(path: str | None) -> Iterator[None]:
    """Log to the rule's log file (and stderr), and record any failure there too."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(message)s")
    try:
        yield
    except Exception:
        log.exception("failed")
        raise


# ---------------------------------------------------------------- atomic writes

def write_text(text: str, path: str | Path, fsync: bool = False) -> None:
    """Write through a temp file and a rename in the same folder.

    A parallel reader or a SIGKILL mid-write sees the old file or the new one, never
    half of it. fsync: flush to disk before the rename (the response store, whose
    entries are paid for).
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def canonical_json(obj: Any) -> str:
    """Compact, key-sorted JSON: the text every digest of a JSON object is taken over."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def write_json(obj: Any, path: str | Path) -> None:
    """Readable JSON (sorted keys, one-space indent), written atomically."""
    write_text(json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n", path)


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


# libyaml's loader where PyYAML was built with it (the PyPI wheels are): the same safe
# constructors, ten times faster. A fold job read arms.yaml in 56 ms with the pure-Python
# one, most of its own work before the first call.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKey(ValueError):
    """A YAML mapping that names one key twice: YAML keeps the last silently, so
    `temperature:` given twice would run with a value the reader did not see first."""


class _UniqueKeyLoader(_SAFE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml's parser where present) refusing a key given twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<:` merges: an explicit key may override a merged one
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the constructor names it below
                continue
            if first is not None:
                raise DuplicateKey(f"line {line}: key {key!r} is given twice (first on "
                                   f"line {first}); a mapping names each key once, "
                                   "so remove one of them")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> Any:
    """A YAML file through the safe loader: plain data, never Python objects, and a key
    given twice in one mapping refused by file, line and key."""
    try:
        return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except DuplicateKey as e:
        raise DuplicateKey(f"{path}: {e}") from None


def write_yaml(obj: Any, path: str | Path) -> None:
    write_text(yaml.safe_dump(obj, sort_keys=True, allow_unicode=True), path)


# ---------------------------------------------------------------- CSV

def write_csv(df: Any, path: str | Path, booleans: Collection[str] = ()) -> None:
    """Booleans as true/false, empty cells for missing values, stable float text."""
    out = df.copy()
    for c in out.columns:
        if c in booleans:
            out[c] = out[c].map({True: "true", False: "false"}).fillna("")
    write_text(out.to_csv(index=False, lineterminator="\n", float_format="%.6g"), path)


def write_tsv(rows: Iterable[dict[str, Any]], columns: Sequence[str], path: str | Path) -> None:
    """A tab-separated table of dict rows in the given column order (the operator's
    pages: results/probe/summary.tsv, results/audit/plan.tsv), written atomically."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, columns, delimiter="\t", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_text(buf.getvalue(), path)


def read_csv(path: str | Path, booleans: Collection[str] = ()) -> Any:
    """A CSV written by write_csv: empty cells missing, true/false back to booleans."""
    import pandas as pd  # heavy; only the stages that read tables pay for it

    df = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"answer": str})
    for c in df.columns:
        if c in booleans:
            df[c] = df[c].map({"true": True, "false": False, True: True, False: False})
    return df


# ---------------------------------------------------------------- digests

def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_sha256(obj: Any) -> str:
    return sha256_text(canonical_json(obj))


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def print_if_written(path: str | Path, since: float) -> None:
    """Print a file at the end of a run that wrote it, not after a run that did nothing
    (the newcomer's summary, results/summary.md)."""
    p = Path(path)
    if p.is_file() and p.stat().st_mtime >= since:
        print("\n" + p.read_text(encoding="utf-8"), flush=True)
