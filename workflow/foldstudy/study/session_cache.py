"""A session read once: the parsed transcript (and its secret scan) cached by the file's
content, so every later command reads the cache instead of parsing the file again.

Every Snakemake command checks the config before it plans a job, and the check reads each
session scenario's transcript (study/session_checks.py): a 3.5 MB file added 2.0-2.5 s to
each `snakemake -n`, and every cluster job pays it again. With the cache a command hashes
the file and loads one pickle.

Key: the sha256 of the file's bytes, the reading options (format, thinking), and a
digest of the code that made the entry (the reader modules' source, this module's, the
Python version; for the scan, the secret shapes' source and detect-secrets' version), so
an edited file or an edited reader is parsed again. An entry that cannot be loaded
(truncated, corrupt, another Python's pickle) is ignored and rewritten, never an error;
entries are written atomically (a temporary file renamed into place), so two commands
racing write the same bytes. The MAX_ENTRIES most recently used entries of each kind are
kept (a session that grows as its agent works is a new entry at each change).

Where: the directory FOLDSTUDY_SESSION_CACHE names; workflow/rules/common.smk sets it to
`.snakemake/foldstudy/sessions/` of the working directory, so the cache lives and goes
with Snakemake's own state (`rm -rf .snakemake` clears it). Unset (a library call, a
test), nothing is cached and every read parses the file.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from .transcripts import Transcript, read_transcript

CACHE_ENV = "FOLDSTUDY_SESSION_CACHE"
# The cache's place under a working directory (common.smk sets CACHE_ENV to it).
CACHE_DIR = Path(".snakemake") / "foldstudy" / "sessions"
FORMAT = 1  # the layout of an entry; bumped when it changes
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
    study/ (transcript*.py, or the study/transcripts/ package) and this module."""
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


def memo(kind: str, key: str, compute: Callable[[], T], check: Callable[[Any], bool],
         where: Path | None = None, store: Callable[[T], bool] = lambda v: True) -> T:
    """compute(), or what an earlier compute() of the same key left in the cache.

    An entry that cannot be loaded or fails check() is ignored and replaced; a value
    store() refuses is not kept; a cache that cannot be written (read-only, full) only
    costs the next command a parse."""
    where = where if where is not None else cache_dir()
    if where is None:
        return compute()
    entry = where / f"{kind}-{key}.pickle"
    try:
        with open(entry, "rb") as f:
            value = pickle.load(f)
        if check(value):
            os.utime(entry)  # recently used: pruned last
            return value
    except Exception:  # noqa: BLE001 - a missing or corrupt entry is a miss, never an error
        pass
    value = compute()
    if not store(value):
        return value
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=f".{kind}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, entry)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _prune(where, kind)
    except OSError:
        pass
    return value


def _prune(where: Path, kind: str) -> None:
    """Remove the least recently used entries of a kind beyond MAX_ENTRIES."""
    entries = sorted(where.glob(f"{kind}-*.pickle"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-MAX_ENTRIES]:
        old.unlink(missing_ok=True)


def read_cached(path: str | Path, fmt: str | None = None, include_thinking: bool = False,
                max_mb: float | None = None, where: Path | None = None) -> Transcript:
    """read_transcript(path, ...), parsed once a file content (a refusal is never
    cached: the next command reads the file again and refuses it again; nor is a parse
    that read another file as well, _one_file)."""
    args = (fmt, include_thinking) + (() if max_mb is None else (max_mb,))
    if where is None and cache_dir() is None:
        return read_transcript(path, *args)
    key = _key(file_sha256(path), reader_digest(), repr((fmt, include_thinking)))
    tr = memo("transcript", key, lambda: read_transcript(path, *args),
              lambda v: isinstance(v, Transcript), where, store=_one_file)
    return tr if tr.path == str(path) else replace(tr, path=str(path))


def _one_file(tr: Transcript) -> bool:
    """Whether the parse read this file alone, so its content is the whole key: a Codex
    fork reads its parent's rollout too (the reader counts it as `fork_prefix`), and is
    parsed at every command rather than served stale when only the parent changed."""
    return not tr.inherited


def secrets_cached(path: str | Path, scan: Callable[[], T], where: Path | None = None) -> T:
    """scan() of a transcript's lines (sessions.credential_lines), once a file content
    and scanner version: the scan reads every character with some sixty patterns, the
    slowest part of reading a large session."""
    if where is None and cache_dir() is None:
        return scan()
    key = _key(file_sha256(path), reader_digest(), scan_digest())
    return memo("secrets", key, scan, lambda v: isinstance(v, list), where)
