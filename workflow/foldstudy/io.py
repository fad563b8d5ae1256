"""The package's only file I/O helpers: atomic writes, JSON/YAML/CSV, digests, job logs,
the caches' signing key.

Every stage reads its inputs and writes its outputs through these, so "a killed job
leaves the old file or the new one, never half" and "booleans are true/false" hold in
one place, not in each stage.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import hmac
import io
import json
import logging
import os
import secrets
import sys
import tempfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from .errors import StudyError

log = logging.getLogger("foldstudy")


@contextlib.contextmanager
def logged(path: str | None) -> Iterator[None]:
    """Log to the rule's log file (and stderr), and end a failed job with exit status 1.

    A refusal (a StudyError) is the package doing its job: it is logged as one line,
    `<ErrorClass>: <message>`, with no traceback, since its message already names what
    is wrong, where and what would be right. Any other exception is a bug: its traceback
    is logged once (log file and stderr), and nothing prints it a second time.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(message)s")
    try:
        yield
    except StudyError as e:
        log.error("%s%s", JOB_FAILED, refusal_line(e))
        raise SystemExit(1) from None
    except OSError as e:
        if e.errno not in _DISK_FULL:
            log.exception("%san unexpected error (a bug: please report it)", JOB_FAILED)
            raise SystemExit(1) from None
        # Not a bug: the disk under results/ (or the store) is full.
        log.error("%sDiskFull: no space left writing %s (%s); free space on that disk "
                  "and run the same command again", JOB_FAILED, e.filename or "a file",
                  os.strerror(e.errno))
        raise SystemExit(1) from None
    except Exception:
        log.exception("%san unexpected error (a bug: please report it)", JOB_FAILED)
        raise SystemExit(1) from None


# What every failed job's log says before its reason: `lock` refuses to pin a study
# while any job's log still says it (release/lock.py).
JOB_FAILED = "job failed: "
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT}


def refusal_line(e: StudyError) -> str:
    """A refusal as the one line a job prints: its class (what kind of refusal) and its
    message (what, where, what would be right); a message listing several problems
    (ConfigError's, one per line) has them joined by "; "."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    text = (lines[0] + " " + "; ".join(lines[1:])).strip() if lines else ""
    return f"{type(e).__name__}: {text}"


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


class MalformedFile(StudyError, ValueError):
    """A JSON file the workflow writes (a lock, a manifest) that is not of its shape: an
    edit or a truncation, named by file and key rather than met as an AttributeError."""


def read_json_object(path: str | Path, what: str, mappings: Sequence[str] = (),
                     entries: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON object as a file of `what` (a lock, a manifest) must be: an object whose
    keys `mappings` (where present) are objects, and whose `entries` keys map each name to
    an object. Anything else is refused by file and key, saying what it should be."""
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MalformedFile(f"{p}: not readable as {what} (JSON: {e}); rebuild it") from None
    except OSError as e:
        raise MalformedFile(f"{p}: cannot be read as {what} ({e.strerror or e})") from None
    if not isinstance(obj, dict):
        raise MalformedFile(f"{p}: {what} is a JSON object, not a {type(obj).__name__}; "
                            "rebuild it")
    for key in (*mappings, *entries):
        if key in obj and not isinstance(obj[key], dict):
            raise MalformedFile(f"{p}: key {key!r} of {what} is an object (name -> entry), "
                                f"not a {type(obj[key]).__name__}; rebuild it")
    for key in entries:
        for name, entry in (obj.get(key) or {}).items():
            if not isinstance(entry, dict):
                raise MalformedFile(f"{p}: {key}.{name} of {what} is an object, not a "
                                    f"{type(entry).__name__}; rebuild it")
    return obj


# libyaml's loader where PyYAML was built with it (the PyPI wheels are): the same safe
# constructors, ten times faster. A fold job read arms.yaml in 56 ms with the pure-Python
# one, most of its own work before the first call.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKey(StudyError, ValueError):
    """A YAML mapping that names one key twice: YAML keeps the last silently, so
    `temperature:` given twice would run with a value the reader did not see first."""


class YamlRefused(StudyError, ValueError):
    """A YAML file whose aliases expand past any config's size, or refer to themselves:
    a few lines of `&a [*a, *a, ...]` become billions of items (an "alias bomb") that
    hang every check walking them."""


# A config, an arm table or a schema is at most a few thousand nodes once every alias is
# expanded (the paper config: its `<<: *gateway` merges included, under 2,000).
MAX_YAML_NODES = 100_000


def _expanded_nodes(root: yaml.Node) -> int:
    """The nodes a document holds with every alias expanded, counted without expanding
    (each node's count is kept by identity); an alias inside its own anchor is refused."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in open_:
            raise YamlRefused(f"line {node.start_mark.line + 1}: an alias refers to a node "
                              "that contains it (a structure without end); write it out")
        if key not in sizes:
            open_.add(key)
            children: list = []
            if isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            elif isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            sizes[key] = 1 + sum(size(c) for c in children)
            open_.discard(key)
        return sizes[key]

    return size(root)


class _UniqueKeyLoader(_SAFE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml's parser where present) refusing a key given twice, and
    aliases that expand past MAX_YAML_NODES."""

    def construct_document(self, node: yaml.Node) -> Any:
        try:
            n = _expanded_nodes(node)
        except RecursionError:
            raise YamlRefused("nested deeper than any config; write it flatter") from None
        if n > MAX_YAML_NODES:
            raise YamlRefused(f"its aliases (*name) expand to {n:,} items, more than any "
                              f"config holds ({MAX_YAML_NODES:,}); write the repeated "
                              "parts out, or use fewer aliases")
        return super().construct_document(node)

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
    """A YAML file through the safe loader: plain data, never Python objects, a key
    given twice in one mapping refused by file, line and key, and an alias bomb refused
    before anything walks it."""
    try:
        return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except DuplicateKey as e:
        raise DuplicateKey(f"{path}: {e}") from None
    except YamlRefused as e:
        raise YamlRefused(f"{path}: {e}") from None


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


def write_records_csv(records: Sequence[dict[str, Any]], columns: Sequence[str],
                      path: str | Path, booleans: Collection[str] = ()) -> None:
    """What write_csv writes for `pd.DataFrame(records, columns=columns)`, without pandas.

    The grade job writes its tables from plain records, and importing pandas was most of
    its time (docs/benchmarks.md). So this follows pandas' rules, column by column: a
    column of ints alone is written as ints; of numbers with a missing value or a float,
    as pandas' float64 with "%.6g"; of booleans alone as True/False; any other as each
    value's str(); a missing value (None, NaN or no key) as an empty cell. A boolean
    column is written true/false, as write_csv writes it. tests/test_io.py checks it
    against pandas on records of every such kind (ints within int64, as every count is).
    """
    cells = [_csv_column([r.get(c) for r in records], c in booleans) for c in columns]
    write_text_table(columns, zip(*cells, strict=True), path)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _csv_column(values: list[Any], boolean: bool) -> list[str]:
    """One column's cells, as pandas infers its dtype from these values and writes it."""
    if boolean:  # a boolean column holds booleans and missing values
        return [("true" if v else "false") if isinstance(v, bool) else "" for v in values]
    present = [v for v in values if not _missing(v)]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
    if not present or not numbers:
        return ["" if _missing(v) else str(v) for v in values]  # object: each value's str
    if len(present) == len(values) and all(isinstance(v, int) for v in present):
        return [str(v) for v in values]  # int64
    return [_g(v) for v in values]  # float64


def _g(v: Any) -> str:
    """A float64 cell under float_format "%.6g": empty when missing."""
    return "" if _missing(v) else f"{float(v):.6g}"


def read_text_table(path: str | Path, delimiter: str = ",") -> tuple[list[str], list[list[str]]]:
    """A CSV (or TSV) as its header and its rows, every cell the text as written: what
    pandas reads with dtype=str and keep_default_na=False (a blank line skipped, a short
    row padded with empty cells), without importing pandas."""
    with open(path, newline="", encoding="utf-8") as f:
        lines = [r for r in csv.reader(f, delimiter=delimiter) if r]
    if not lines:
        return [], []
    header = lines[0]
    return header, [r + [""] * (len(header) - len(r)) for r in lines[1:]]


def concat_text_tables(tables: Sequence[tuple[list[str], list[list[str]]]]
                       ) -> tuple[list[str], list[list[str]]]:
    """Text tables one after another, as pd.concat joins their frames: the columns in
    the order they first appear, a column a table lacks empty in its rows."""
    header = list(dict.fromkeys(c for h, _ in tables for c in h))
    rows = []
    for h, rs in tables:
        at = {c: i for i, c in enumerate(h)}
        rows += rs if h == header else [[r[at[c]] if c in at else "" for c in header]
                                        for r in rs]
    return header, rows


def write_text_table(header: Sequence[str], rows: Iterable[Sequence[str]],
                     path: str | Path) -> None:
    """A text table as a CSV, as pandas' to_csv writes a frame of strings."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    write_text(buf.getvalue(), path)


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


# ---------------------------------------------------------------- signed caches
# The caches under .snakemake/foldstudy/ (a parsed session, study/session_cache.py; a
# read prompt's model state, backends/prompt_states.py) sign each entry, because whoever
# can write the working directory can plant one: an entry is used only if this user's
# key, kept outside the working directory, signed it for its kind and key.

# The file holding the key; unset, under the user's cache home.
CACHE_KEY_FILE_ENV = "FOLDSTUDY_CACHE_KEY_FILE"
CACHE_KEY_BYTES = 32


def cache_key_file() -> Path:
    """Where the signing key is kept: CACHE_KEY_FILE_ENV, else the user's cache home."""
    if named := os.environ.get(CACHE_KEY_FILE_ENV):
        return Path(named)
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(home) / "foldstudy" / "session-cache.key"


def cache_signing_key() -> bytes | None:
    """The key entries are signed with, made on first use (random, mode 0600); None
    where it cannot be read or made (a read-only home): then nothing is cached."""
    path = cache_key_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return None
    else:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(CACHE_KEY_BYTES))
    try:
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) >= CACHE_KEY_BYTES else None  # half-written by a racing command


def cache_mac(secret: bytes, kind: str, key: str, payload: bytes | memoryview) -> str:
    """The HMAC-SHA256 of an entry's kind, key and bytes (hex); the payload is hashed in
    place, not copied (a prompt state is a hundred megabytes)."""
    h = hmac.new(secret, f"{kind}\0{key}\0".encode(), hashlib.sha256)
    h.update(payload)
    return h.hexdigest()


def write_signed(path: Path, secret: bytes, kind: str, key: str,
                 payload: bytes | memoryview) -> None:
    """A cache entry: its signature (cache_mac) on the first line, then its bytes, written
    atomically (a temporary file beside it renamed into place), so two commands racing
    write the same bytes and a reader never sees half. OSError where it cannot be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{kind}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cache_mac(secret, kind, key, payload).encode() + b"\n")
            f.write(payload)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def signed_payload(raw: bytes, secret: bytes, kind: str, key: str) -> memoryview | None:
    """The bytes of an entry write_signed wrote for this kind and key (a view, not a
    copy), or None: edited, copied under another key, or signed by another key."""
    cut = raw.find(b"\n", 0, 128)
    if cut < 0:
        return None
    payload = memoryview(raw)[cut + 1:]
    ok = hmac.compare_digest(raw[:cut], cache_mac(secret, kind, key, payload).encode())
    return payload if ok else None


def print_if_written(path: str | Path, since: float) -> None:
    """Print a file at the end of a run that wrote it, not after a run that did nothing
    (the newcomer's summary, results/summary.md)."""
    p = Path(path)
    if p.is_file() and p.stat().st_mtime >= since:
        print("\n" + p.read_text(encoding="utf-8"), flush=True)
