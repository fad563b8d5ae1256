"""Calls through the store: the one place caching wraps every backend."""

from __future__ import annotations

import logging
from typing import Any

from .base import Backend, ChatRequest, Reply
from .store import ResponseStore, cache_key

log = logging.getLogger(__name__)


def cached_complete(
    backend: Backend, store: ResponseStore, request: ChatRequest, sample: dict[str, Any]
) -> tuple[Reply, bool, str]:
    """The reply for this sample, from the store if it was ever paid for; (reply, hit, key)."""
    key = cache_key(request, backend.identity, sample)
    cached = store.get(key)
    if cached is not None:
        return cached, True, key
    reply = backend.complete(request)
    store.put(key, request, sample, reply)
    return reply, False, key
