"""The spend ledger (docs/design.md §6, Spend): reserve the worst case before a paid call,
settle to the reported cost after, stop before the call that would pass the budget, and
hold across processes sharing one file."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from foldstudy.backends.base import Backend, BackendError, ChatRequest, Reply
from foldstudy.backends.call import cached_complete
from foldstudy.backends.ledger import (
    RATIO_MARGIN,
    BudgetExhausted,
    Ledger,
    LedgerError,
    endpoint_key,
    journal_path,
    prompt_estimate,
    read_ledger,
    spent_line,
)
from foldstudy.backends.store import ResponseStore
from foldstudy.errors import StudyError

PP, PC = 1e-6, 4e-6  # listed USD per prompt / completion token


class Paid(Backend):
    """A priced endpoint whose calls cost `factor` (k) times their listed price and report
    `prompt_factor` (m) times the prompt tokens the 4-characters-a-token estimate gives,
    as identifier-dense text does (paper §6). `sleep_s`: how long a call takes."""

    kind = "paid-test"
    paid = True

    def __init__(self, factor: float = 1.0, report_cost: bool = True,
                 prices: tuple[float, float] | None = (PP, PC), prompt_factor: float = 1.0,
                 sleep_s: float = 0.0, cost: Any = None, generation: float | None = None
                 ) -> None:
        self.identity = {"backend": self.kind, "model": "m", "model_id": "acme/m", "pin": "P"}
        self.factor, self.report_cost, self.prices = factor, report_cost, prices
        self.prompt_factor, self.sleep_s, self.cost, self.generation = (
            prompt_factor, sleep_s, cost, generation)
        self.sent = 0

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        return {}

    def listed_prices(self) -> tuple[float, float] | None:
        return self.prices

    def generation_cost(self, generation_id: str) -> float | None:
        return self.generation

    def complete(self, request: ChatRequest) -> Reply:
        self.sent += 1
        time.sleep(self.sleep_s)
        chars = sum(len(m["content"]) for m in request.messages)
        prompt = round(chars / 4 * self.prompt_factor)
        cost = (prompt * PP + 10 * PC) * self.factor if self.cost is None else self.cost
        return Reply(text="ok", finish_reason="stop", prompt_tokens=prompt,
                     completion_tokens=10, token_count_method="exact", latency_s=0.0,
                     served_by="P", cost_usd=cost if self.report_cost else None,
                     raw={"id": f"gen-{self.sent}"})


def _call(ledger: Ledger, backend: Paid, req: ChatRequest | None = None) -> float:
    """One paid call through the ledger, as the retry wrapper makes it; its cost."""
    hold = ledger.reserve(backend, req or REQ, "a call")
    reply = backend.complete(req or REQ)
    ledger.received(hold, reply.raw["id"])
    ledger.settle(hold, reply)
    return reply.cost_usd


REQ = ChatRequest(messages=({"role": "user", "content": "x" * 400},), max_tokens=50,
                  temperature=0.0)


def test_settles_to_the_reported_cost_and_learns_both_ratios(tmp_path):
    ledger, backend = Ledger(tmp_path / "l.json", None), Paid(factor=1.5, prompt_factor=3)
    first = ledger.worst_case(backend, REQ, read_ledger(ledger.path))
    # before anything is learned: the whole request at two characters a token
    assert first.prompt_estimate == prompt_estimate(backend, REQ) > 400 / 2
    assert not first.learned
    cost = _call(ledger, backend)
    state = read_ledger(ledger.path)
    assert state["spent_usd"] == pytest.approx(cost) and cost == pytest.approx(
        (300 * PP + 10 * PC) * 1.5)
    assert state["reserved"] == {} and state["calls"] == 1
    ep = endpoint_key(backend.identity)
    assert state["ratios"][ep] == pytest.approx(1.5)
    assert state["token_ratios"][ep] == pytest.approx(300 / first.prompt_estimate)
    # the next reservation: the largest of each ratio seen, times the margin
    nxt = ledger.worst_case(backend, REQ, state)
    tokens = max(1.0, 300 / first.prompt_estimate * RATIO_MARGIN)
    assert nxt.learned and nxt.usd == pytest.approx(
        (first.prompt_estimate * tokens * PP + REQ.max_tokens * PC) * 1.5 * RATIO_MARGIN)


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


def test_a_call_that_never_connected_costs_nothing_and_a_dropped_one_its_worst_case(
        tmp_path):
    """A refused connection sent nothing, so nothing can have been billed; a connection
    the server closed after reading the request may have been generated and billed, so
    it costs its worst case (Ledger.fail). Both on real sockets, through the one HTTP
    path every backend sends on."""
    import socket
    import threading

    import requests

    from foldstudy.backends.http import post_json

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens here now: the connection is refused
    with pytest.raises(BackendError) as refused:
        post_json(requests.Session(), f"http://127.0.0.1:{port}/v1", {}, {}, 5, None)
    assert refused.value.kind == "unreachable" and refused.value.detail["sent"] is False

    server = socket.create_server(("127.0.0.1", 0))

    def read_then_hang_up() -> None:
        conn, _ = server.accept()
        conn.recv(65536)  # the whole request arrived
        conn.close()

    threading.Thread(target=read_then_hang_up, daemon=True).start()
    with pytest.raises(BackendError) as dropped:
        post_json(requests.Session(), f"http://127.0.0.1:{server.getsockname()[1]}/v1",
                  {"model": "m"}, {}, 5, None)
    server.close()
    assert "sent" not in dropped.value.detail

    ledger, backend = Ledger(tmp_path / "l.json", None), Paid()
    ledger.fail(ledger.reserve(backend, REQ, "a"), refused.value)
    assert read_ledger(ledger.path)["spent_usd"] == 0
    hold = ledger.reserve(backend, REQ, "b")
    ledger.fail(hold, dropped.value)
    assert read_ledger(ledger.path)["spent_usd"] == pytest.approx(hold.usd)


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


# -- what cannot be undercounted, what the gateway says, what was paid ------


def _wait_for_reserve(path: str, out: str) -> None:
    """A second job on the same endpoint: reserve, note when it got the reservation."""
    Ledger(path, None).reserve(Paid(), REQ, "second")
    Path(out).write_text(repr(time.time()))


def test_until_an_endpoint_settled_once_one_call_is_in_flight_on_it(tmp_path):
    ledger = Ledger(tmp_path / "l.json", None)
    hold = ledger.reserve(Paid(), REQ, "first")
    child = mp.get_context("fork").Process(
        target=_wait_for_reserve, args=(str(ledger.path), str(tmp_path / "t")))
    child.start()
    time.sleep(1.0)
    assert not (tmp_path / "t").exists()  # still waiting for the first call
    settled = time.time()
    ledger.settle(hold, Paid().complete(REQ))
    child.join(30)
    assert child.exitcode == 0 and float((tmp_path / "t").read_text()) >= settled
    # learned: now calls overlap freely
    a, b = ledger.reserve(Paid(), REQ, "a"), ledger.reserve(Paid(), REQ, "b")
    assert a.learned and b.learned


def test_a_first_call_costing_more_than_it_reserved_is_named_in_the_log(tmp_path, caplog):
    """The one exception to "billed never passes the budget" (docs/design.md §6, Spend):
    nothing is known of an endpoint's prices before its first call, here billed at 50x its
    listing."""
    ledger = Ledger(tmp_path / "l.json", None)
    with caplog.at_level(logging.WARNING):
        _call(ledger, Paid(factor=50))
        _call(ledger, Paid(factor=50))  # learned: reserved at 50 x 1.25, no overrun
    over = read_ledger(ledger.path)["overruns"]
    assert len(over) == 1 and over[0]["first_call"] and over[0]["cost_usd"] > over[0][
        "reserved_usd"]
    assert "more than the" in caplog.text and "first call, before anything was learned" \
        in caplog.text


def _spend_until_stopped(path: str, budget: float, k: float, m: float, out: str) -> None:
    backend, ledger, n = Paid(factor=k, prompt_factor=m, sleep_s=0.01), Ledger(path, budget), 0
    try:
        while True:
            _call(ledger, backend)
            n += 1
    except BudgetExhausted:
        Path(out).write_text(str(n))


@pytest.mark.parametrize(("k", "m", "budget"), [(1.3, 1, 0.01), (5, 3, 0.01),
                                                (5, 3, 0.0234), (5, 3, 0.05)])
def test_four_processes_never_pass_the_budget(tmp_path, k, m, budget):
    """Jobs on one filesystem: the lock makes every reservation see every other. Issue
    32's case: calls billed k = 5 times their listing, prompts m = 3 times the estimate
    of four characters a token, four jobs at once; what is billed stays in the budget."""
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_spend_until_stopped, args=(
        str(tmp_path / "l.json"), budget, k, m, str(tmp_path / f"n{i}"))) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    sent = sum(int((tmp_path / f"n{i}").read_text()) for i in range(4))
    billed = sent * (round(100 * m) * PP + 10 * PC) * k
    state = read_ledger(tmp_path / "l.json")
    assert sent == state["calls"] >= 2 and state["spent_usd"] == pytest.approx(billed)
    assert billed <= budget and state["reserved"] == {}
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]
    # the budget is used, not merely refused: it stopped within four reservations of it
    assert budget - billed < 4 * Ledger(tmp_path / "l.json", budget).worst_case(
        Paid(), REQ, state).usd


def _reserve_then_hang(path: str) -> None:
    Ledger(path, None).reserve(Paid(), REQ, "run s/m/r0/j")
    time.sleep(60)


def test_a_sigkill_between_reserve_and_settle_shows_held_then_settles_next_run(tmp_path):
    _call(Ledger(tmp_path / "l.json", None), Paid())  # learned: a second job may overlap
    child = mp.get_context("fork").Process(target=_reserve_then_hang,
                                           args=(str(tmp_path / "l.json"),))
    child.start()
    deadline = time.time() + 20
    while not read_ledger(tmp_path / "l.json")["reserved"] and time.time() < deadline:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    state = read_ledger(tmp_path / "l.json")
    (held,) = state["reserved"].values()
    line = spent_line(state, 1.0)
    assert f"${held['usd']:.4f} held by 1 calls" in line and "killed" in line
    spent = state["spent_usd"]
    # the next run settles it at its worst case: no generation was named
    _call(Ledger(tmp_path / "l.json", None), Paid())
    after = read_ledger(tmp_path / "l.json")
    assert after["reserved"] == {} and after["unknown_usd"] == pytest.approx(held["usd"])
    assert after["spent_usd"] > spent + held["usd"]


def test_a_killed_call_whose_generation_is_known_settles_to_the_gateways_record(tmp_path):
    ledger = Ledger(tmp_path / "l.json", None)
    hold = ledger.reserve(Paid(), REQ, "a")
    ledger.received(hold, "gen-7")
    with ledger.locked() as state:  # as if the process that reserved it had died
        state["reserved"][hold.id]["pid"] = 2**22 + 12345
    ledger.reserve(Paid(generation=0.000123), REQ, "b")
    state = read_ledger(ledger.path)
    assert state["spent_usd"] == pytest.approx(0.000123) and state["unknown_usd"] == 0


@pytest.mark.parametrize(("detail", "charged"), [
    ({"status": 502, "cost_usd": 0.0003}, 0.0003),   # an error status with a cost
    ({"status": 200, "cost_usd": 0.0002}, 0.0002),   # an error inside HTTP 200, costed
    ({"status": 502}, 0.0),                          # answered, no cost: nothing generated
    ({"status": 502, "cost_usd": float("nan")}, None),  # refused: the worst case
    ({"status": 502, "cost_usd": -1.0}, None),
])
def test_an_error_reply_is_charged_what_its_body_reports(tmp_path, detail, charged, caplog):
    ledger = Ledger(tmp_path / "l.json", None)
    hold = ledger.reserve(Paid(), REQ, "a")
    with caplog.at_level(logging.WARNING):
        ledger.fail(hold, BackendError("server", "upstream", True, detail))
    spent = read_ledger(ledger.path)["spent_usd"]
    assert spent == pytest.approx(hold.usd if charged is None else charged)
    assert (charged is None) == ("refused" in caplog.text)


@pytest.mark.parametrize("cost", [float("nan"), -0.5, float("inf")])
def test_a_reported_cost_that_is_no_cost_is_refused_by_name(tmp_path, cost, caplog):
    """`float(usage.cost)` of "NaN" would make every later comparison false: the budget
    off for good. The figure is refused and the call counted at its worst case."""
    ledger = Ledger(tmp_path / "l.json", 1.0)
    hold = ledger.reserve(Paid(), REQ, "a")
    with caplog.at_level(logging.WARNING):
        ledger.settle(hold, Paid(cost=cost).complete(REQ))
    state = read_ledger(ledger.path)
    assert state["spent_usd"] == pytest.approx(hold.usd) == state["unknown_usd"]
    assert f"usage.cost {cost!r}" in caplog.text and "refused" in caplog.text
    assert state["learned"] == {}


def _ledger_with(tmp_path: Path, edit) -> Ledger:
    ledger = Ledger(tmp_path / "l.json", 1.0)
    _call(ledger, Paid())
    state = json.loads(ledger.path.read_text())
    edit(state)
    ledger.path.write_text(json.dumps(state))
    return Ledger(ledger.path, 1.0)


@pytest.mark.parametrize(("edit", "named"), [
    (lambda s: s.update(spent_usd=float("nan")), "spent_usd is NaN, not a finite number"),
    (lambda s: s.update(spent_usd=-1), "spent_usd is -1, not a finite number"),
    (lambda s: s.update(spent_usd="12"), 'spent_usd is "12", not a finite number'),
    (lambda s: s.update(calls=True), "calls is true, not a finite number"),
    (lambda s: s.update(budget_usd=float("inf")), "budget_usd is Infinity"),
    (lambda s: s["ratios"].update({"x": -2}), "ratios.x is -2"),
    (lambda s: s["reserved"].update({"h": {"usd": "lots"}}), 'reserved.h.usd is "lots"'),
    (lambda s: s.update(reserved=[]), "not a ledger (no `reserved` object)"),
    (lambda s: s.update(spent_usd=s["spent_usd"] / 10), "is below the $"),
    (lambda s: s.update(spent_usd=0), "records as paid"),
])
def test_every_ledger_that_is_not_what_was_paid_is_refused_in_one_line(tmp_path, edit, named):
    ledger = _ledger_with(tmp_path, edit)
    with pytest.raises(LedgerError) as e:
        ledger.reserve(Paid(), REQ, "b")
    msg = str(e.value)
    assert named in msg and str(ledger.path) in msg and "\n" not in msg
    assert Paid().sent == 0


def test_a_ledger_that_is_not_json_or_not_a_file_is_refused_in_one_line(tmp_path):
    p = tmp_path / "l.json"
    p.write_text("{spent")
    with pytest.raises(LedgerError, match="not readable JSON"):
        read_ledger(p)
    p.unlink()
    p.mkdir()
    with pytest.raises(LedgerError, match="spend ledger .*l.json: not a file"):
        Ledger(p, 1.0).reserve(Paid(), REQ, "a")
    p.rmdir()
    (tmp_path / "l.json.lock").unlink(missing_ok=True)
    (tmp_path / "l.json.lock").mkdir()
    with pytest.raises(LedgerError, match="spend ledger lock .*l.json.lock: not a file"):
        Ledger(p, 1.0).reserve(Paid(), REQ, "a")


def test_a_deleted_ledger_is_rebuilt_before_any_call_and_the_budget_still_holds(tmp_path):
    """Deleting the ledger mid-study let a study spend 2.1x its budget."""
    ledger = Ledger(tmp_path / "l.json", 1.0)
    paid = sum(_call(ledger, Paid()) for _ in range(3))
    ledger.path.unlink()
    state = read_ledger(ledger.path)
    assert state["spent_usd"] == 0  # what a reader without the journal sees
    with Ledger(ledger.path, 1.0).locked() as state:
        assert state["spent_usd"] == pytest.approx(paid) and state["calls"] == 3
    # both gone: the response store's paid replies say what was paid
    store = ResponseStore(tmp_path / "store", ledger=Ledger(tmp_path / "l2.json", None))
    for i in range(2):
        cached_complete(Paid(), store, REQ, {"sweep": "s", "repeat": i})
    (tmp_path / "l2.json").unlink()
    journal_path(tmp_path / "l2.json").unlink()
    rebuilt = Ledger(tmp_path / "l2.json", None, store_root=tmp_path / "store")
    with rebuilt.locked() as state:
        assert state["spent_usd"] == pytest.approx(2 * (100 * PP + 10 * PC))
    # ...and the rebuilt figure is the journal's from now on
    (tmp_path / "l2.json").write_text(json.dumps({**state, "spent_usd": 0.0}))
    with pytest.raises(LedgerError, match="below"):
        Ledger(tmp_path / "l2.json", None).reserve(Paid(), REQ, "c")


def _store_calls(tmp_path: Path, n: int, budget: float | None = None) -> tuple[Ledger, float]:
    """n paid calls through a store and its ledger; (a new handle on it, what was paid)."""
    ledger = Ledger(tmp_path / "l.json", budget, store_root=tmp_path / "store")
    store = ResponseStore(tmp_path / "store", ledger=ledger)
    paid = sum(cached_complete(Paid(), store, REQ, {"sweep": "s", "repeat": i})[0].cost_usd
               for i in range(n))
    return Ledger(ledger.path, budget, store_root=tmp_path / "store"), paid


def test_a_ledger_lowered_with_its_journal_deleted_is_refused_against_the_store(tmp_path):
    """A spend below what the store says was paid is refused, naming both."""
    ledger, paid = _store_calls(tmp_path, 3)
    journal_path(ledger.path).unlink()
    state = json.loads(ledger.path.read_text())
    ledger.path.write_text(json.dumps({**state, "spent_usd": paid / 3}))
    with pytest.raises(LedgerError) as e:
        ledger.reserve(Paid(), REQ, "b")
    msg = str(e.value)
    assert f"spent_usd ${paid / 3:.6f} is below the ${paid:.6f}" in msg
    assert "response store" in msg and "paid replies" in msg and "\n" not in msg
    # a ledger deleted beside a lowered journal: rebuilt from it, then refused the same
    ledger.path.unlink()
    journal_path(ledger.path).write_text(json.dumps(
        {"id": "x", "endpoint": "e", "usd": paid / 2}) + "\n")
    with pytest.raises(LedgerError, match=rf"\${paid / 2:.6f} is below the \${paid:.6f}"):
        Ledger(ledger.path, None, store_root=tmp_path / "store").reserve(Paid(), REQ, "c")


def test_a_rebuilt_ledger_keeps_calls_in_flight_and_what_was_learned(tmp_path):
    """A ledger deleted while a call is in flight is rebuilt holding it (the journal has
    the reservation), with the ratios its endpoint taught, so no job reserves past it."""
    backend = Paid(factor=3, prompt_factor=3)
    ledger = Ledger(tmp_path / "l.json", None)
    _call(ledger, backend)
    released = ledger.reserve(backend, REQ, "refused by the gateway")
    ledger.fail(released, BackendError("rate_limited", "429", True, {"status": 429}))
    hold = ledger.reserve(backend, REQ, "in flight")
    before = read_ledger(ledger.path)
    ledger.path.unlink()
    with Ledger(ledger.path, None).locked() as state:
        assert list(state["reserved"]) == [hold.id]  # the released one is not held
        assert state["reserved"][hold.id]["usd"] == pytest.approx(hold.usd)
        for kind in ("learned", "ratios", "token_ratios"):
            assert state[kind] == pytest.approx(before[kind])
        spent = state["spent_usd"]
    # a budget that the call in flight leaves no room under stops the next reservation
    room = spent + hold.usd + 0.5 * hold.usd
    with pytest.raises(BudgetExhausted, match="held by calls in flight"):
        Ledger(ledger.path, room).reserve(backend, REQ, "another job")
    ledger.settle(hold, backend.complete(REQ))
    after = read_ledger(ledger.path)
    assert after["reserved"] == {} and after["calls"] == 2
    # both deleted: the store cannot say what the endpoint bills against its listing,
    # so the endpoint is one not yet settled again (one call in flight, at ratio 1)
    (tmp_path / "s").mkdir()
    rebuilt, _ = _store_calls(tmp_path / "s", 2)
    rebuilt.path.unlink()
    journal_path(rebuilt.path).unlink()
    with rebuilt.locked() as state:
        assert state["learned"] == {} and state["reserved"] == {} and state["calls"] == 2
    assert not rebuilt.reserve(Paid(), REQ, "d").learned


def test_an_unreadable_ledger_or_journal_is_refused_in_one_line(tmp_path, monkeypatch):
    """Mode 000 (simulated: the tests run as root, who reads anything)."""
    ledger = Ledger(tmp_path / "l.json", 1.0)
    _call(ledger, Paid())
    real = Path.read_text

    for locked in (ledger.path, journal_path(ledger.path)):
        def read_text(self, *a, _locked=locked, **k):
            if self == _locked:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *a, **k)

        monkeypatch.setattr(Path, "read_text", read_text)
        with pytest.raises(LedgerError) as e:
            Ledger(ledger.path, 1.0).reserve(Paid(), REQ, "b")
        msg = str(e.value)
        assert f"{locked}: cannot be read (Permission denied)" in msg and "\n" not in msg


def test_a_charge_written_twice_in_the_journal_counts_once(tmp_path, caplog):
    """A charge line written twice (a copied journal, a replayed append) was
    counted twice by a rebuilt ledger, so the study stopped early and its rebuilt spend
    was above what was billed; with the ledger present, the refusal named two figures
    and not the line. A charge id counts once, its repeat said by line."""
    ledger = Ledger(tmp_path / "l.json", 1.0)
    paid = sum(_call(ledger, Paid()) for _ in range(2))
    j = journal_path(ledger.path)
    lines = j.read_text().splitlines()
    charge = next(i for i, ln in enumerate(lines) if '"id"' in ln)
    j.write_text("\n".join([*lines, lines[charge]]) + "\n")
    with caplog.at_level(logging.WARNING), Ledger(ledger.path, 1.0).locked() as state:
        assert state["spent_usd"] == pytest.approx(paid)  # the ledger present: no refusal
    ledger.path.unlink()
    with caplog.at_level(logging.WARNING), Ledger(ledger.path, 1.0).locked() as state:
        assert state["spent_usd"] == pytest.approx(paid) and state["calls"] == 2
    cid = json.loads(lines[charge])["id"]
    assert (f"line {len(lines) + 1} repeats the charge {cid!r} of line {charge + 1}"
            in caplog.text)
    # the same id with another figure is no copy: refused, naming both lines
    twice = {**json.loads(lines[charge]), "usd": 1.5}
    j.write_text("\n".join([*lines, json.dumps(twice)]) + "\n")
    with pytest.raises(LedgerError) as e:
        Ledger(ledger.path, 1.0).reserve(Paid(), REQ, "b")
    msg = str(e.value)
    assert f"line {len(lines) + 1} charges {cid!r} $1.500000 where line {charge + 1}" in msg
    assert "\n" not in msg
