"""The spend ledger (DESIGN §6, issue 26): reserve the worst case before a paid call,
settle to the reported cost after, stop before the call that would pass the budget, and
hold across processes sharing one file."""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

import pytest

from foldstudy.backends.base import Backend, BackendError, ChatRequest, Reply
from foldstudy.backends.call import cached_complete
from foldstudy.backends.ledger import (
    BudgetExhausted,
    Ledger,
    LedgerError,
    endpoint_key,
    read_ledger,
)
from foldstudy.backends.store import ResponseStore
from foldstudy.errors import StudyError

PP, PC = 1e-6, 4e-6  # listed USD per prompt / completion token


class Paid(Backend):
    """A priced endpoint whose calls cost `factor` times their listed price."""

    kind = "paid-test"
    paid = True

    def __init__(self, factor: float = 1.0, report_cost: bool = True,
                 prices: tuple[float, float] | None = (PP, PC)) -> None:
        self.identity = {"backend": self.kind, "model": "m", "model_id": "acme/m", "pin": "P"}
        self.factor, self.report_cost, self.prices = factor, report_cost, prices
        self.sent = 0

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        return {}

    def listed_prices(self) -> tuple[float, float] | None:
        return self.prices

    def complete(self, request: ChatRequest) -> Reply:
        self.sent += 1
        cost = (100 * PP + 10 * PC) * self.factor
        return Reply(text="ok", finish_reason="stop", prompt_tokens=100, completion_tokens=10,
                     token_count_method="exact", latency_s=0.0, served_by="P",
                     cost_usd=cost if self.report_cost else None)


REQ = ChatRequest(messages=({"role": "user", "content": "x" * 400},), max_tokens=50,
                  temperature=0.0)


def test_settles_to_the_reported_cost_and_learns_the_ratio(tmp_path):
    ledger, backend = Ledger(tmp_path / "l.json", None), Paid(factor=1.5)
    first = ledger.worst_case(backend, REQ, read_ledger(ledger.path))
    hold = ledger.reserve(backend, REQ, "call 1")
    ledger.settle(hold, backend.complete(REQ))
    state = read_ledger(ledger.path)
    assert state["spent_usd"] == pytest.approx((100 * PP + 10 * PC) * 1.5)
    assert state["reserved"] == {} and state["calls"] == 1
    assert state["ratios"][endpoint_key(backend.identity)] == pytest.approx(1.5)
    # the next reservation on that endpoint is the worst case times the ratio seen
    assert ledger.worst_case(backend, REQ, state).usd == pytest.approx(first.usd * 1.5)


def test_without_a_reported_cost_tokens_at_the_listed_price(tmp_path):
    ledger, backend = Ledger(tmp_path / "l.json", None), Paid(report_cost=False)
    ledger.settle(ledger.reserve(backend, REQ, "call"), backend.complete(REQ))
    assert read_ledger(ledger.path)["spent_usd"] == pytest.approx(100 * PP + 10 * PC)


def test_stops_before_the_call_that_would_pass_the_budget(tmp_path):
    backend = Paid()
    worst = Ledger(tmp_path / "l.json", None).worst_case(backend, REQ, read_ledger(
        tmp_path / "l.json")).usd
    ledger = Ledger(tmp_path / "l.json", worst * 2.5)
    sent = 0
    with pytest.raises(BudgetExhausted) as e:
        for _ in range(100):
            ledger.settle(ledger.reserve(backend, REQ, "run s/m/r0/j"), backend.complete(REQ))
            sent += 1
    state = read_ledger(ledger.path)
    assert state["spent_usd"] <= ledger.budget and sent == state["calls"] >= 2
    msg = str(e.value)
    assert isinstance(e.value, StudyError) and "\n" not in msg
    assert f"budget_usd {ledger.budget:g}" in msg and f"spent ${state['spent_usd']:.4f}" in msg
    assert "remains" in msg and "--config budget_usd=" in msg and "s/m/r0/j" in msg
    # Once stopped, no call starts at this budget, however small (a second stop sends
    # nothing); a higher budget goes on.
    tiny = ChatRequest(messages=({"role": "user", "content": "x"},), max_tokens=1,
                       temperature=0.0)
    with pytest.raises(BudgetExhausted):
        Ledger(ledger.path, ledger.budget).reserve(backend, tiny, "again")
    Ledger(ledger.path, ledger.budget * 2).reserve(backend, REQ, "raised")


def test_a_store_hit_costs_nothing_and_a_stop_stores_nothing(tmp_path):
    backend = Paid()
    store = ResponseStore(tmp_path / "store", ledger=Ledger(tmp_path / "l.json", 1.0))
    sample = {"sweep": "s", "model": "m", "arm": "j", "repeat": 0, "turn": "fold1"}
    cached_complete(backend, store, REQ, sample)
    spent = read_ledger(tmp_path / "l.json")["spent_usd"]
    cached_complete(backend, store, REQ, sample)  # served from the store
    assert backend.sent == 1 and read_ledger(tmp_path / "l.json")["spent_usd"] == spent
    broke = ResponseStore(tmp_path / "store", ledger=Ledger(tmp_path / "l.json", spent))
    with pytest.raises(BudgetExhausted):
        cached_complete(backend, broke, REQ, {**sample, "turn": "fold2"})
    assert backend.sent == 1 and len(list((tmp_path / "store").rglob("*.json"))) == 1


def test_failed_calls_cost_nothing_when_refused_and_the_worst_case_when_unknown(tmp_path):
    ledger, backend = Ledger(tmp_path / "l.json", None), Paid()
    ledger.fail(ledger.reserve(backend, REQ, "a"), BackendError("rate_limited", "429", True,
                                                                {"status": 429}))
    assert read_ledger(ledger.path)["spent_usd"] == 0
    hold = ledger.reserve(backend, REQ, "b")
    ledger.fail(hold, BackendError("transport", "timed out", True))
    state = read_ledger(ledger.path)
    assert state["spent_usd"] == pytest.approx(hold.usd) == state["unknown_usd"]


def test_a_killed_jobs_reservation_counts_at_its_worst_case(tmp_path):
    ledger, backend = Ledger(tmp_path / "l.json", None), Paid()
    hold = ledger.reserve(backend, REQ, "a")
    with ledger.locked() as state:  # as if the process that reserved it had died
        state["reserved"][hold.id]["pid"] = 2**22 + 12345
    ledger.reserve(backend, REQ, "b")
    state = read_ledger(ledger.path)
    assert hold.id not in state["reserved"] and state["spent_usd"] == pytest.approx(hold.usd)


def test_an_unpriced_paid_endpoint_is_refused_by_name(tmp_path):
    with pytest.raises(LedgerError, match="model m: its endpoint .* lists no price"):
        Ledger(tmp_path / "l.json", 1.0).reserve(Paid(prices=None), REQ, "a")


def _spend_until_stopped(path: str, budget: float, out: str) -> None:
    backend, ledger, n = Paid(factor=1.3), Ledger(path, budget), 0
    try:
        while True:
            ledger.settle(ledger.reserve(backend, REQ, "a"), backend.complete(REQ))
            n += 1
    except BudgetExhausted:
        Path(out).write_text(str(n))


def test_four_processes_never_spend_past_the_budget(tmp_path):
    """Jobs on one filesystem: the lock makes every reservation see every other."""
    budget = 0.01
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_spend_until_stopped,
                         args=(str(tmp_path / "l.json"), budget, str(tmp_path / f"n{i}")))
             for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    sent = sum(int((tmp_path / f"n{i}").read_text()) for i in range(4))
    state = read_ledger(tmp_path / "l.json")
    billed = sent * (100 * PP + 10 * PC) * 1.3
    assert state["calls"] == sent and state["spent_usd"] == pytest.approx(billed)
    assert billed <= budget and state["reserved"] == {}
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]


def test_the_lock_pins_the_ledger_and_not_the_budget(tmp_path):
    from foldstudy.release.lock import private_inputs

    ledger, backend = Ledger(tmp_path / "l.json", None), Paid()
    ledger.settle(ledger.reserve(backend, REQ, "a"), backend.complete(REQ))
    res = tmp_path / "res"
    res.mkdir()
    cfg = {"study": "x", "budget_usd": 5}
    pinned = private_inputs(None, None, None, str(res), cfg, str(ledger.path))
    assert "ledger" in pinned
    raised = private_inputs(None, None, None, str(res), {**cfg, "budget_usd": 50},
                            str(ledger.path))
    assert raised["config"] == pinned["config"]  # raising the budget is not a new study
    ledger.settle(ledger.reserve(backend, REQ, "b"), backend.complete(REQ))
    later = private_inputs(None, None, None, str(res), cfg, str(ledger.path))
    assert later["ledger"]["sha256"] != pinned["ledger"]["sha256"]
