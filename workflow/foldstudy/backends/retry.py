"""Bounded retries of infrastructure faults, with every attempt recorded.

Wraps Backend.complete once for every provider (call.py uses it), so no provider
writes its own loop. Retries use tenacity: exponential backoff with jitter, capped,
except that a server's Retry-After (429, 503) is honoured up to the same cap. Only
errors a provider marks retryable are retried; final verdicts (401, 402, a 404 "no
endpoints", a context overflow) fail on the first attempt, because sending them again
would cost time and prove nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from .base import Backend, BackendError, ChatRequest, Reply, RetryPolicy

if TYPE_CHECKING:
    from .ledger import Ledger

T = TypeVar("T")


def _retryable(e: BaseException) -> bool:
    return isinstance(e, BackendError) and e.retryable


def _retrying(policy: RetryPolicy) -> Retrying:
    """The one retry schedule: bounded attempts, exponential backoff with jitter, and a
    server's Retry-After honoured up to the same cap."""
    backoff = wait_exponential_jitter(multiplier=policy.initial_wait_s, max=policy.max_wait_s,
                                      jitter=policy.initial_wait_s)

    def wait(state: RetryCallState) -> float:
        e = state.outcome.exception() if state.outcome else None
        retry_after = e.detail.get("retry_after_s") if isinstance(e, BackendError) else None
        if retry_after is not None:
            return min(float(retry_after), policy.max_wait_s)
        return backoff(state)

    return Retrying(stop=stop_after_attempt(policy.max_attempts), wait=wait,
                    retry=retry_if_exception(_retryable), reraise=True)


def read_with_retries(read: Callable[[], T], policy: RetryPolicy) -> T:
    """A free read (an endpoint listing, a generation's stats) with the same bounded
    retries as a call. Nothing is billed for it, so a transient fault must not decide a
    verdict or a row: one 502 on the listing made a model `unreachable` for good, and one
    on the generation lookup left a reply's endpoint unknown (its row invalid)."""
    return _retrying(policy)(read)


def complete_with_retries(backend: Backend, request: ChatRequest, policy: RetryPolicy,
                          ledger: Ledger | None = None, what: str = "a call") -> Reply:
    """backend.complete(request) with bounded retries; the reply carries every attempt.

    A call that still fails raises its last BackendError with detail["attempts"] set, so
    the run record keeps what was tried even when no reply came back.

    ledger (a paid backend's, docs/design.md §6, Spend): every attempt, retries included, is
    reserved before it is sent and settled after, so a retry storm is held to the budget too; a
    reservation the budget refuses raises BudgetExhausted before anything is sent.
    """
    attempts: list[dict[str, Any]] = []

    def once() -> Reply:
        hold = ledger.reserve(backend, request, what) if ledger is not None else None
        started = datetime.now(UTC).isoformat(timespec="seconds")
        t0 = time.monotonic()
        try:
            reply = backend.complete(request)
        except BackendError as e:
            if ledger is not None and hold is not None:
                ledger.fail(hold, e)
            attempts.append({
                "attempt": len(attempts) + 1, "started": started,
                "latency_s": round(time.monotonic() - t0, 3), "outcome": e.kind,
                "message": e.message[:500], "retryable": e.retryable,
                **({"status": e.detail["status"]} if "status" in e.detail else {}),
                **({"retry_after_s": e.detail["retry_after_s"]}
                   if "retry_after_s" in e.detail else {}),
            })
            raise
        if ledger is not None and hold is not None:
            ledger.received(hold, reply.raw.get("id"))
            ledger.settle(hold, reply)
        attempts.append({"attempt": len(attempts) + 1, "started": started,
                         "latency_s": round(time.monotonic() - t0, 3), "outcome": "ok",
                         "served_by": reply.served_by})
        return reply

    try:
        reply = _retrying(policy)(once)
    except BackendError as e:
        e.detail["attempts"] = attempts
        raise
    reply.attempts = attempts
    return reply
