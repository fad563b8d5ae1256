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
from datetime import UTC, datetime
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from .base import Backend, BackendError, ChatRequest, Reply, RetryPolicy


def _retryable(e: BaseException) -> bool:
    return isinstance(e, BackendError) and e.retryable


def complete_with_retries(backend: Backend, request: ChatRequest, policy: RetryPolicy) -> Reply:
    """backend.complete(request) with bounded retries; the reply carries every attempt.

    A call that still fails raises its last BackendError with detail["attempts"] set, so
    the run record keeps what was tried even when no reply came back.
    """
    attempts: list[dict[str, Any]] = []
    backoff = wait_exponential_jitter(multiplier=policy.initial_wait_s, max=policy.max_wait_s,
                                      jitter=policy.initial_wait_s)

    def wait(state: RetryCallState) -> float:
        e = state.outcome.exception() if state.outcome else None
        retry_after = e.detail.get("retry_after_s") if isinstance(e, BackendError) else None
        if retry_after is not None:
            return min(float(retry_after), policy.max_wait_s)
        return backoff(state)

    def once() -> Reply:
        started = datetime.now(UTC).isoformat(timespec="seconds")
        t0 = time.monotonic()
        try:
            reply = backend.complete(request)
        except BackendError as e:
            attempts.append({
                "attempt": len(attempts) + 1, "started": started,
                "latency_s": round(time.monotonic() - t0, 3), "outcome": e.kind,
                "message": e.message[:500], "retryable": e.retryable,
                **({"status": e.detail["status"]} if "status" in e.detail else {}),
                **({"retry_after_s": e.detail["retry_after_s"]}
                   if "retry_after_s" in e.detail else {}),
            })
            raise
        attempts.append({"attempt": len(attempts) + 1, "started": started,
                         "latency_s": round(time.monotonic() - t0, 3), "outcome": "ok",
                         "served_by": reply.served_by})
        return reply

    retrying = Retrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        retry=retry_if_exception(_retryable),
        reraise=True,
    )
    try:
        reply = retrying(once)
    except BackendError as e:
        e.detail["attempts"] = attempts
        raise
    reply.attempts = attempts
    return reply
