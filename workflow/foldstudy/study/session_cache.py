"""A session read once: the parsed transcript (and its secret scan) cached by the file's
content, so every later command reads the cache instead of parsing the file again.

Every Snakemake command checks the config before it plans a job, and the check reads each
session scenario's transcript (study/session_checks.py): a 3.5 MB file added 2.0-2.5 s to
each `snakemake -n`, and every cluster job pays it again. With the cache a command hashes
the file and loads one JSON entry.

Key: the sha256 of the file's bytes, the reading options (format, thinking), and a
digest of the code that made the entry (the reader modules' source, this module's, the
Python version; for the scan, the secret shapes' source and detect-secrets' version), so
an edited file or an edited reader is parsed again. Entries are written atomically (a
temporary file renamed into place), so two commands racing write the same bytes. The
MAX_ENTRIES most recently used entries of each kind are kept (a session that grows as its
agent works is a new entry at each change).

Trust: whoever can write the working directory can write this cache, so an entry is data
that cannot run code (JSON, rebuilt field by field into the reader's dataclasses, a value
of the wrong type refused), and it is signed with an HMAC-SHA256 over its kind, its key
and its bytes, under a key kept outside the working directory (io.cache_signing_key: the
file FOLDSTUDY_CACHE_KEY_FILE names, else `$XDG_CACHE_HOME/foldstudy/session-cache.key`,
made once, readable by the user alone). An edited entry (fixture text the transcript
never had, an emptied secret scan), an entry copied under another key, or a file the
cache did not write is discarded and rebuilt, and the log says so in one line; a pickle
of an earlier version is never opened, only removed.

Where: the directory FOLDSTUDY_SESSION_CACHE names; foldstudy/wiring/ (load_wiring) sets it to
`.snakemake/foldstudy/sessions/` of the working directory, so the cache lives and goes
with Snakemake's own state (`rm -rf .snakemake` clears it). Unset (a library call, a
test), nothing is cached and every read parses the file.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, TypeVar

from ..errors import StudyError
from ..io import cache_signing_key, signed_payload, write_signed
from ..transcripts import Transcript, read_transcript

log = logging.getLogger(__name__)

CACHE_ENV = "FOLDSTUDY_SESSION_CACHE"
# The cache's place under a working directory (wiring.load_wiring sets CACHE_ENV to it).
CACHE_DIR = Path(".snakemake") / "foldstudy" / "sessions"
FORMAT = 2  # the layout of an entry; bumped when it changes (1: a pickle)
# Entries kept a kind: a session that grows as its agent works is a new entry at every
# change, so the least recently used beyond these are removed when one is written.
MAX_ENTRIES = 8

T = TypeVar("T")


def cache_dir() -> Path | None:
    """The cache directory the environment names, or None (no caching)."""
    where = os.environ.get(CACHE_ENV)
    return Path(where) if where else None


@cache
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, hashed once a process for a given size and mtime
    (the transcript's key, its manifest's transcript_sha256 and its scan's key share it)."""
    st = os.stat(path)
    return _file_digest(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


def _sources_digest(files: list[Path], *extra: str) -> str:
    h = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]} {' '.join(extra)}".encode())
    for p in sorted(set(files)):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def reader_digest() -> str:
    """A digest of the code a parsed transcript depends on: every reader module of
    study/ (transcript*.py, or the transcripts/ package) and this module."""
    here = Path(__file__).parent
    return _sources_digest([*here.glob("transcript*.py"), *here.glob("transcripts/**/*.py"),
                            Path(__file__)])


@cache
def scan_digest() -> str:
    """A digest of what a secret scan depends on: the project's key shapes, its own
    detect-secrets plugins and the detect-secrets version whose plugins it runs."""
    from importlib.metadata import version

    pkg = Path(__file__).parent.parent
    return _sources_digest([pkg / "secrets.py", pkg / "secret_plugins.py", pkg / "credentials.py",
                            Path(__file__)],
                           version("detect-secrets"))


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class ForeignEntry(StudyError, ValueError):
    """An entry this cache did not write, or whose data is not of the type asked for:
    caught in memo, which discards the entry and says so in one line of the log."""


def to_data(value: Any) -> Any:
    """A value as JSON data: a dataclass as its fields (dataclasses.asdict), a tuple as a
    list. Generic, so a field a reader adds needs no change here."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_data(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    return value


_SCALARS = (str, int, float, bool, type(None))


def from_data(shape: Any, data: Any) -> Any:
    """`data` rebuilt as `shape` (a dataclass, tuple[X, ...], tuple[X, Y], list[X],
    dict[str, X], X | None, a scalar), read from the type hints; anything else in the
    data (a field the class has not, a string where a number is) is a ForeignEntry."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if shape is Any:
        return data
    if dataclasses.is_dataclass(shape) and isinstance(shape, type):
        hints = typing.get_type_hints(shape)
        names = {f.name for f in dataclasses.fields(shape) if f.init}
        if not isinstance(data, dict) or not set(data) <= names:
            raise ForeignEntry(f"not the fields of {shape.__name__}")
        return shape(**{k: from_data(hints[k], v) for k, v in data.items()})
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return from_data(option, data)
            except ForeignEntry:
                continue
        raise ForeignEntry(f"{type(data).__name__} is none of {shape}")
    if origin in (tuple, list):
        if not isinstance(data, list):
            raise ForeignEntry(f"{type(data).__name__} where a {origin.__name__} is")
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            items = [from_data(args[0] if args else Any, v) for v in data]
        elif len(args) == len(data):
            items = [from_data(a, v) for a, v in zip(args, data, strict=True)]
        else:
            raise ForeignEntry(f"{len(data)} items where {shape} has {len(args)}")
        return origin(items)
    if origin is dict:
        if not isinstance(data, dict):
            raise ForeignEntry(f"{type(data).__name__} where a dict is")
        return {k: from_data(args[1] if args else Any, v) for k, v in data.items()}
    if shape in _SCALARS:
        ok = isinstance(data, shape) and (shape is bool or not isinstance(data, bool))
        if shape is float and isinstance(data, int) and not isinstance(data, bool):
            return float(data)
        if not ok:
            raise ForeignEntry(f"{type(data).__name__} where a {shape.__name__} is")
        return data
    raise ForeignEntry(f"no rebuild for {shape}")


def _load(entry: Path, secret: bytes, kind: str, key: str, shape: Any) -> Any:
    """The value an entry holds, if this cache wrote it for this kind and key; a
    ForeignEntry (said in the log) where it did not; FileNotFoundError where none is."""
    payload = signed_payload(entry.read_bytes(), secret, kind, key)
    if payload is None:
        raise ForeignEntry("its signature does not match (edited, copied from another "
                           "entry or another machine, or not written by this cache)")
    try:
        data = json.loads(bytes(payload))
    except ValueError as e:
        raise ForeignEntry(f"it is not JSON ({e})") from e
    return from_data(shape, data)


def memo(kind: str, key: str, compute: Callable[[], T], shape: Any,
         where: Path | None = None, store: Callable[[T], bool] = lambda v: True) -> T:
    """compute(), or what an earlier compute() of the same key left in the cache, rebuilt
    as `shape` (the type compute() returns).

    An entry that is damaged or foreign (its signature or its data wrong) is discarded,
    said in one line of the log, and replaced; a value store() refuses is not kept; a
    cache that cannot be written (read-only, full) or a key that cannot be made only
    costs the next command a parse."""
    where = where if where is not None else cache_dir()
    secret = cache_signing_key() if where is not None else None
    if where is None or secret is None:
        return compute()
    entry = where / f"{kind}-{key}.json"
    try:
        value = _load(entry, secret, kind, key, shape)
        os.utime(entry)  # recently used: pruned last
        return value
    except FileNotFoundError:
        pass
    except (ForeignEntry, OSError, TypeError, RecursionError) as e:
        log.warning("session cache: discarded %s (%s); it is rebuilt from the transcript",
                    entry, str(e).splitlines()[0] if str(e) else type(e).__name__)
    value = compute()
    if not store(value):
        return value
    try:
        write_signed(entry, secret, kind, key,
                     json.dumps(to_data(value), ensure_ascii=False).encode())
        _prune(where, kind)
    except OSError:
        pass
    return value


def _prune(where: Path, kind: str) -> None:
    """Remove the least recently used entries of a kind beyond MAX_ENTRIES, and every
    pickle an earlier version left (never opened: a pickle can run code when loaded)."""
    for old in where.glob("*.pickle"):
        old.unlink(missing_ok=True)
    entries = sorted(where.glob(f"{kind}-*.json"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-MAX_ENTRIES]:
        old.unlink(missing_ok=True)


def read_cached(path: str | Path, fmt: str | None = None, include_thinking: bool = False,
                max_mb: float | None = None, where: Path | None = None,
                session: str | None = None) -> Transcript:
    """read_transcript(path, ...), parsed once a file content (a refusal is never
    cached: the next command reads the file again and refuses it again; nor is a parse
    that read another file as well, _one_file). A database's session is part of the key,
    and so is its write-ahead log (`<db>-wal`), where a CLI's committed rows sit until
    they are checkpointed into the file."""
    args = (fmt, include_thinking) + (() if max_mb is None else (max_mb,))
    named = {} if session is None else {"session": session}
    if where is None and cache_dir() is None:
        return read_transcript(path, *args, **named)
    options = (fmt, include_thinking) if session is None else (fmt, include_thinking, session)
    key = _key(file_sha256(path), reader_digest(), repr(options), _neighbours(path),
               *_wal(path))
    tr = memo("transcript", key, lambda: read_transcript(path, *args, **named),
              Transcript, where, store=_one_file)
    return tr if tr.path == str(path) else replace(tr, path=str(path))


def _wal(path: str | Path) -> tuple[str, ...]:
    """The sha256 of a database's write-ahead log beside it, where there is one."""
    wal = Path(f"{Path(path).expanduser()}-wal")
    return (file_sha256(wal),) if wal.is_file() else ()


def _neighbours(path: str | Path) -> str:
    """The subagents' own files beside a transcript, as names (Claude Code's
    `<session>/subagents/*.jsonl`, Gemini CLI's `chats/<session id>/*.json*`): a reader
    counts them without reading them, so a parse depends on which there are, and the
    same content in a folder with other subagent files is another parse."""
    here = Path(path).resolve()
    parent = here.parent
    found = [*parent.glob(f"{glob_escape(here.name.split('.')[0])}/subagents/*"),
             *(p for p in parent.glob("*/*.json*") if SESSION_DIR.fullmatch(p.parent.name))]
    names = sorted(p.relative_to(parent).as_posix() for p in found)
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


# A Gemini CLI subagent's folder beside its parent's chat: the parent session's id
SESSION_DIR = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                         r"[0-9a-fA-F]{12}")


def _one_file(tr: Transcript) -> bool:
    """Whether the parse read this file alone, so its content is the whole key: a Codex
    fork reads its parent's rollout too (the reader counts it as `fork_prefix`), and is
    parsed at every command rather than served stale when only the parent changed."""
    return not tr.inherited


def secrets_cached(path: str | Path, scan: Callable[[], list[tuple[int, str]]],
                   where: Path | None = None) -> list[tuple[int, str]]:
    """scan() of a transcript's lines (sessions.credential_lines), once a file content
    and scanner version: the scan reads every character with some sixty patterns, the
    slowest part of reading a large session."""
    if where is None and cache_dir() is None:
        return scan()
    key = _key(file_sha256(path), reader_digest(), scan_digest())
    return memo("secrets", key, scan, list[tuple[int, str]], where)
