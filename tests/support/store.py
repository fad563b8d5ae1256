"""A response store with two verified entries, for tests that tamper with one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldstudy.backends.base import ChatRequest, Reply
from foldstudy.backends.store import ResponseStore, cache_key


def two_entries(root: Path) -> tuple[ResponseStore, dict[str, Any], list[str]]:
    """(store, endpoint, keys): fold 0 answers "0 of 14 facts", fold 1 "port 48213"."""
    store = ResponseStore(root)
    endpoint = {"backend": "embedded", "model": "m"}
    keys = []
    for i, text in enumerate(("0 of 14 facts", "port 48213")):
        req = ChatRequest(messages=({"role": "user", "content": f"fold {i}"},), max_tokens=8,
                          temperature=0.2, seed=i)
        sample = {"sweep": "s", "turn": f"fold{i}"}
        key = cache_key(req, endpoint, sample)
        store.put(key, req, sample, Reply(text, "stop", 5, 3, "exact", 0.1, "embedded"),
                  endpoint)
        keys.append(key)
    return store, endpoint, keys
