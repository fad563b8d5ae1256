"""The content-addressed response store every call goes through.

A crashed or re-run study never pays twice for a call; a reviewer can replay a whole
study from the store with no key. Entries are written atomically (temp file + rename),
so parallel jobs and a SIGKILL mid-write leave either a whole entry or none.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StudyError
from ..io import (
    canonical_json,
    read_json,
    read_json_object,
    sha256_file,
    sha256_text,
    write_text,
)
from .base import ChatRequest, Reply

if TYPE_CHECKING:
    from .ledger import Ledger

log = logging.getLogger(__name__)


def cache_key(request: ChatRequest, endpoint: dict[str, Any], sample: dict[str, Any]) -> str:
    """sha256 of what makes two calls the same call.

    In: the canonical request (messages, max_tokens, temperature, seed, response
    schema), the endpoint identity (backend, model, pinned provider or weights digest,
    context size), and the sample identity (sweep, model, arm, repeat, fold or "recall").
    The sample identity is in so that two repeats that send byte-identical requests (no
    seed, same fixture) stay two independent samples instead of one answer served twice.
    Out: anything secret (keys live in the environment only), latency, timestamps, and
    paths on this machine, so a store moves between machines intact.
    """
    payload = {"request": request.canonical(), "endpoint": endpoint, "sample": sample}
    return sha256_text(canonical_json(payload))


class StoreCorrupt(StudyError, RuntimeError):
    """A stored entry that is not what its key says: never served, and named by file."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"response store entry {path}: {why}; it is not served. Remove the "
                         "file to have the call made again (live), or restore it from the "
                         "study's own store (replay)")
        self.path = path


def entry_run(entry: dict[str, Any]) -> str:
    """The run a store entry answered, as its sample says (sweep, model, arm, repeat,
    turn; a probe's entry names the probed model and the request shape)."""
    sample = entry.get("sample") if isinstance(entry.get("sample"), dict) else {}
    if "probe" in sample:
        return f"probe of model {sample.get('probe')}, shape {sample.get('shape')}"
    return ", ".join(f"{k} {sample.get(k)}" for k in ("sweep", "model", "arm", "repeat", "turn")
                     if k in sample) or "no run named in it"


def describe_entry(path: Path) -> str:
    """"<path> (run ...)": an entry named by file and by the run it answered."""
    try:
        entry = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return f"{path} (unreadable: no run named)"
    return f"{path} ({entry_run(entry) if isinstance(entry, dict) else 'not a store entry'})"


def store_dir_problem(value: str, replay: bool) -> str | None:
    """Why `store=VALUE` cannot be the response store, before any job: a file, or (for a
    replay, which only reads) a folder that does not exist; said as what the path is,
    not as a call missing from the store."""
    p = Path(value)
    if p.is_symlink() and not p.exists():
        return (f"config.store: {value!r} is a symbolic link that leads nowhere (a loop, "
                "or a missing path); name the response store's folder itself")
    if p.exists() and not p.is_dir():
        return (f"config.store: {value!r} is a file, not a directory; the response store "
                "is a folder of entries (default results/store)")
    if replay and not p.exists():
        return (f"config.store: {value!r} does not exist, and a replay answers every call "
                "from the response store; name the folder the study stored its calls in "
                "(default results/store), or run without replay=true")
    return None


def lock_pins(lock_path: str | Path | None) -> dict[str, str] | None:
    """The store entries a study's lock pins (relative path -> sha256), or None where
    there is no lock, or the lock pins the store by one digest only (an older lock:
    pin it again with `snakemake -c1 lock`). Read at job start, from the path the rule
    passes as a plain param, so rewriting the lock reruns no job."""
    if not lock_path or not Path(lock_path).is_file():
        return None
    lock = read_json_object(lock_path, "a study lock", entries=("private", "public"))
    store = (lock.get("private") or {}).get("store") or {}
    listing = store.get("listing")
    return dict(listing) if isinstance(listing, dict) else None


class StoreUnpinned(StudyError, RuntimeError):
    """An entry that differs from the digest the study's lock pins, or that a replay
    under a lock finds unpinned: a forged reply passes the per-entry check (anyone can
    recompute reply_sha256), not the lock."""


class ResponseStore:
    """Entries live at <root>/<key[:2]>/<key>.json: one writer per key (the run job of
    that sample), written whole through a rename, so no lock is needed, on one machine
    or on a shared filesystem.

    pins: the lock's digest of each entry (lock_pins). Every pinned entry read must match
    its pin; pinned_only (a replay of a locked study) also refuses an entry the lock does
    not pin, since the locked study never made that call.

    ledger: the study's spend ledger, which every call this store does not answer is
    held to (call.cached_complete); None: a replay, which sends nothing.
    """

    def __init__(self, root: str | Path, pins: dict[str, str] | None = None,
                 pinned_only: bool = False, lock: str | Path | None = None,
                 ledger: Ledger | None = None) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0
        self.pins = pins
        self.pinned_only = pinned_only
        self.lock = lock
        self.ledger = ledger

    @classmethod
    def for_job(cls, root: str | Path, lock: str | Path | None, replay: bool,
                ledger: Ledger | None = None) -> ResponseStore:
        """The store a fold or probe job reads: checked against the study's lock where
        one pins the store entry by entry; a replay without one says it is unverified."""
        pins = lock_pins(lock)
        if pins is None and replay:
            log.warning("response store %s is unverified: %s, so a replay serves "
                        "whatever the entries say (pin the study with `snakemake -c1 lock` "
                        "and replay against its lock)", root,
                        f"no lock at {lock}" if not lock or not Path(lock).is_file() else
                        f"the lock {lock} pins no store entry by digest (an older lock)")
        return cls(root, pins, pinned_only=replay, lock=lock,
                   ledger=None if replay else ledger)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def check_pin(self, key: str, p: Path) -> None:
        """Refuse an entry that is not the one the lock pinned, naming it and its run."""
        if self.pins is None:
            return
        rel = f"{key[:2]}/{key}.json"
        pinned = self.pins.get(rel)
        if pinned is None:
            if self.pinned_only:
                raise StoreUnpinned(
                    f"response store entry {describe_entry(p)} is not pinned by the lock "
                    f"{self.lock}: the locked study never stored it, so a replay does not "
                    "serve it. Replay the store the lock was written from, or pin this "
                    "one with `snakemake -c1 lock`")
            return
        got = sha256_file(p)
        if got != pinned:
            raise StoreUnpinned(
                f"response store entry {describe_entry(p)}: sha256 {got[:12]}… differs "
                f"from the {pinned[:12]}… the lock {self.lock} pins; it is not served "
                "(edited after the study was locked: restore the study's own entry)")

    def get(self, key: str, endpoint: dict[str, Any] | None = None) -> Reply | None:
        """The stored reply for `key`, verified, or None if the call was never stored.

        Every read checks the entry against its key: the key recomputed from the stored
        request, endpoint and sample, and the reply against its stored digest. A reply
        edited on disk, or an entry copied over another key, is refused by name rather
        than served as the model's answer (a replay would otherwise grade it).
        """
        p = self.path(key)
        if p.exists() and not p.is_file():
            raise StoreCorrupt(p, "not a file (a directory or a special file stands where "
                               "the entry should be)")
        if not p.is_file():
            self.misses += 1
            return None
        self.check_pin(key, p)
        entry = _read_entry(p)
        stored = entry.get("endpoint", endpoint)
        if entry.get("key") != key or stored is None or cache_key(
                _request(entry, p), stored, entry.get("sample") or {}) != key:
            raise StoreCorrupt(p, "its request, endpoint and sample do not hash to its key "
                               f"{key[:16]}… (edited, or copied over another entry)")
        if entry.get("reply_sha256") != sha256_text(canonical_json(entry.get("reply"))):
            raise StoreCorrupt(p, "its reply does not match the digest stored with it "
                               "(edited after it was written)")
        self.hits += 1
        return Reply.from_dict(entry["reply"])

    def refused(self) -> None:
        """The last hit was not served (a retry sends the call again): count a miss."""
        self.hits, self.misses = self.hits - 1, self.misses + 1

    def put(self, key: str, request: ChatRequest, sample: dict[str, Any], reply: Reply,
            endpoint: dict[str, Any]) -> None:
        reply_dict = reply.to_dict()
        entry = {"key": key, "sample": sample, "request": request.canonical(),
                 "endpoint": endpoint, "reply": reply_dict,
                 "reply_sha256": sha256_text(canonical_json(reply_dict))}
        write_text(canonical_json(entry), self.path(key), fsync=True)


def _read_entry(p: Path) -> dict[str, Any]:
    try:
        entry = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StoreCorrupt(p, f"not readable JSON ({type(e).__name__}: {e})") from e
    if not isinstance(entry, dict) or not isinstance(entry.get("reply"), dict):
        raise StoreCorrupt(p, "not a store entry (no reply object)")
    return entry


def _request(entry: dict[str, Any], p: Path) -> ChatRequest:
    req = dict(entry.get("request") or {})
    req["messages"] = tuple(req.get("messages") or ())
    try:
        return ChatRequest(**req)
    except TypeError as e:
        raise StoreCorrupt(p, f"its request is malformed ({e})") from e
