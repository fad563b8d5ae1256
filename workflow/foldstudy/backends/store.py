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


class ResponseStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Reply | None:
        p = self.path(key)
        if not p.is_file():
            self.misses += 1
            return None
        self.hits += 1
        return Reply.from_dict(json.loads(p.read_text(encoding="utf-8"))["reply"])

    def put(self, key: str, request: ChatRequest, sample: dict[str, Any], reply: Reply) -> None:
        entry = {"key": key, "sample": sample, "request": request.canonical(),
                 "reply": reply.to_dict()}
        write_text(canonical_json(entry), self.path(key), fsync=True)
