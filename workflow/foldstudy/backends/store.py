"""The content-addressed response store every call goes through.

A crashed or re-run study never pays twice for a call; a reviewer can replay a whole
study from the store with no key. Entries are written atomically (temp file + rename),
so parallel jobs and a SIGKILL mid-write leave either a whole entry or none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..io import canonical_json, sha256_text, write_text
from .base import ChatRequest, Reply


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


class StoreCorrupt(RuntimeError):
    """A stored entry that is not what its key says: never served, and named by file."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"response store entry {path}: {why}; it is not served. Remove the "
                         "file to have the call made again (live), or restore it from the "
                         "study's own store (replay)")
        self.path = path


class ResponseStore:
    """Entries live at <root>/<key[:2]>/<key>.json: one writer per key (the run job of
    that sample), written whole through a rename, so no lock is needed, on one machine
    or on a shared filesystem."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, endpoint: dict[str, Any] | None = None) -> Reply | None:
        """The stored reply for `key`, verified, or None if the call was never stored.

        Every read checks the entry against its key: the key recomputed from the stored
        request, endpoint and sample, and the reply against its stored digest. A reply
        edited on disk, or an entry copied over another key, is refused by name rather
        than served as the model's answer (a replay would otherwise grade it).
        """
        p = self.path(key)
        if not p.is_file():
            self.misses += 1
            return None
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
