"""Calls through the store: the one place caching, retries and attempt records wrap
every backend (inspect_ai's shape: providers only speak their wire format)."""

from __future__ import annotations

import logging
from typing import Any

from .base import Backend, ChatRequest, ReplayMiss, Reply
from .retry import complete_with_retries
from .store import ResponseStore, cache_key, entry_run

log = logging.getLogger(__name__)


def cached_complete(
    backend: Backend, store: ResponseStore, request: ChatRequest, sample: dict[str, Any],
    recheck: bool = False,
) -> tuple[Reply, bool, str]:
    """The reply for this sample, from the store if it was ever paid for; (reply, hit, key).

    A miss is sent with bounded retries (the backend's retry_policy)
    and stored only once it succeeded, so a killed run resumes without re-sending any call
    that completed, and a failed call is tried again next time.

    A paid backend's call is held to the study's budget (store.ledger, docs/design.md §6, Spend):
    reserved before it is sent, settled after; past the budget BudgetExhausted stops
    the job before the call, so nothing partial is stored.

    recheck (a retried row, paper §3.3): a stored reply is served only as
    backend.recheck passes it. One whose endpoint was unknown is completed by a lookup and
    stored again; one another endpoint served is sent again, and its new reply replaces it.
    """
    key = cache_key(request, backend.identity, sample)
    cached = store.get(key, backend.identity)
    if cached is not None and recheck:
        checked = backend.recheck(cached)
        if checked is None:
            log.info("stored reply %s came from %s, not the pinned endpoint: sent again",
                     key[:16], cached.served_by)
            store.refused()
            cached = None
        elif checked != cached:
            log.info("stored reply %s: endpoint looked up again, %s", key[:16],
                     checked.served_by)
            store.put(key, request, sample, checked, backend.identity)
            cached = checked
    if cached is not None:
        return cached, True, key
    if backend.replay:
        raise ReplayMiss(
            f"request {key[:16]} (sample {sample}, model {backend.identity.get('model')}) "
            f"is not in the response store {store.root}/; replay never calls a model",
            detail={"key": key, "sample": sample})
    # Only a call about to be sent reaches the ledger: a store hit costs nothing.
    ledger = store.ledger if backend.paid else None
    reply = complete_with_retries(backend, request, backend.retry_policy, ledger,
                                  what=entry_run({"sample": sample}))
    store.put(key, request, sample, reply, backend.identity)
    return reply, False, key
