"""The stand-in's random faults and its billing, which test_faults's sums rest on.

If the stand-in billed a fault it never generated for, or drew faults differently from
one run to the next, "billed equals the minimum" would test the stand-in, not the client.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldstudy.backends.base import ChatRequest
from foldstudy.backends.call import cached_complete
from foldstudy.backends.openrouter import OpenRouterBackend, endpoint_pin
from foldstudy.backends.store import ResponseStore

from ..support.gateway_standin import (
    ALL_PARAMETERS,
    FAULT_CLASSES,
    Endpoint,
    GatewayStandin,
    Model,
    Standin,
    canonical,
    fault_class,
)

KEY = "sk-or-v1-standin-billing"
MODEL = "acme/ledger"


@pytest.fixture()
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[GatewayStandin]:
    monkeypatch.setenv("TEST_OR_KEY", KEY)
    with GatewayStandin([Model(MODEL, [Endpoint("L", "l", supported_parameters=ALL_PARAMETERS)])],
                        key=KEY) as g:
        yield g


def send(gateway: GatewayStandin, store_dir: Path, timeout_s: float = 5) -> list[str]:
    """One call with an attempt more than there are fault classes; each one's outcome."""
    cfg = {"backend": "openrouter", "model_id": MODEL, "base_url": gateway.base_url,
           "api_key_env": "TEST_OR_KEY", "timeout_s": timeout_s,
           "max_attempts": len(FAULT_CLASSES) + 1,
           "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05}
    b = OpenRouterBackend("ledger", cfg)
    b = b.pinned(endpoint_pin(b.list_endpoints()[0]))
    req = ChatRequest(messages=({"role": "user", "content": "Port 48213 is the relay."},),
                      max_tokens=32, temperature=0.2, seed=3)
    reply, _, _ = cached_complete(b, ResponseStore(store_dir), req, {"sample": "s0"})
    return [a["outcome"] for a in reply.attempts]


def test_the_random_faults_are_seeded_and_cycle_through_every_class() -> None:
    def draws(seed: int) -> list[str]:
        st = Standin({})
        st.inject_faults(1.0, seed, stall_s=2.0)
        return [fault_class(st.next_fault(MODEL) or {}) for _ in range(2 * len(FAULT_CLASSES))]

    first = draws(7)
    assert first == draws(7) and first != draws(8)
    # Every class once in each run of len(FAULT_CLASSES) faults, whatever the order.
    n = len(FAULT_CLASSES)
    assert sorted(first[:n]) == sorted(first[n:]) == sorted(FAULT_CLASSES)


def test_a_queued_fault_comes_first_and_rate_zero_draws_none() -> None:
    st = Standin({})
    assert st.next_fault(MODEL) is None
    st.inject_faults(1.0, 1, stall_s=2.0)
    st.queue_faults(MODEL, [{}])
    assert st.next_fault(MODEL) == {}  # the scripted "no fault" is not overridden
    assert st.next_fault(MODEL)


def test_only_a_generated_completion_is_billed(gateway: GatewayStandin, tmp_path: Path) -> None:
    faults = [dict(f) for f in FAULT_CLASSES.values()]
    for f in faults:
        if "stall" in f:
            f["stall"] = 0.6  # past the 0.3 s timeout below
        if "retry_after" in f:
            f["retry_after"] = 0
    gateway.state.queue_faults(MODEL, faults)
    outcomes = send(gateway, tmp_path, timeout_s=0.3)
    assert len(outcomes) == len(FAULT_CLASSES) + 1 and outcomes[-1] == "ok"
    assert dict(gateway.state.injected) == dict.fromkeys(FAULT_CLASSES, 1)
    # A faulted attempt of every class, then one completion, one completion: billed once.
    assert [canonical(b) for b in gateway.state.billed] == [canonical(gateway.state.calls[-1])]


def test_a_completion_the_client_timed_out_on_is_billed_all_the_same(
        gateway: GatewayStandin, tmp_path: Path) -> None:
    # Why the random mode never draws {"sleep"}: the retry pays for the body again, and no
    # client can know the first one was generated.
    gateway.state.queue_faults(MODEL, [{"sleep": 0.6}])
    assert send(gateway, tmp_path, timeout_s=0.3) == ["timeout", "ok"]
    deadline = time.monotonic() + 5  # the late completion lands after the retry's
    while len(gateway.state.billed) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    billed = [canonical(b) for b in gateway.state.billed]
    assert len(billed) == 2 and len(set(billed)) == 1
