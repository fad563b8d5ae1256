"""The spend ledger every job of a study shares: reserve before a paid call, settle after.

docs/design.md §6 (Spend): "Each paid call reserves its worst case in a ledger all jobs share,
then settles to the reported cost. The worst case is the prompt at an estimate
identifier-dense text cannot exceed, plus max_tokens, at listed prices, times the largest
actual/listed price and reported/estimated token ratios learned on that endpoint."
  - Until an endpoint has settled once, one paid call is in flight on it.
  - The guarantee: billed never passes the budget. The one exception is a first call on an
    endpoint costing more than its reservation, and the log names it when it happens.
  - The ledger is checked when read: finite figures, and never below what was paid.

What cannot be undercounted. Paper §6: the 4-characters-a-token estimate "undercounts
identifier-dense text", so the prompt is reserved at one token per PROMPT_CHARS_PER_TOKEN
characters of the whole request as sent (or the backend's own tokenizer, where it has one
and counts more). A gateway may also bill more than it lists. Neither ratio is known
before an endpoint has answered once, so until then only one call is in flight on it: at
most one call can cost more than it reserved, and only before anything was learned. From
then on every reservation is priced at the largest ratio of each kind seen on that
endpoint, times RATIO_MARGIN.

One JSON file under results/ holds what was settled, what is held by calls in flight, and
the ratios per endpoint; beside it an append-only journal keeps one line per
reservation and per settled charge (with the ratios it taught), so a spend lowered by
hand, below the journal or below the response store's paid replies, is refused (naming
both figures) and a deleted ledger is rebuilt before any call (from the journal, with
its calls in flight and its ratios, else from the store's paid replies, knowing
neither). Every read-modify-write happens under a POSIX record lock (fcntl.lockf, which
NFS and the SLURM profile's shared filesystem honour) on a sibling `.lock` file, and the
file is replaced whole (temp file, fsync, rename), so two jobs never both spend the last
dollar and a SIGKILL leaves the old ledger or the new one.

Store hits and replays never reach it (backends/call.py asks it only for a call it is
about to send), so they cost nothing; an unpriced, local backend (embedded, a local
OpenAI-compatible server) is free and never reaches it either.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import canonical_json, write_text
from .base import Backend, BackendError, ChatRequest, Reply
from .ledger_files import (
    BudgetExhausted,
    LedgerError,
    empty_ledger,
    endpoint_key,
    held_usd,
    journal_memory,
    journal_path,
    read_journal,
    read_ledger,
    refuse_non_file,
    reported_cost,
    spent_line,
    store_paid,
)

log = logging.getLogger(__name__)

# A reservation no live process holds any more (its job was killed mid-call) is held
# until the next reservation settles it: from the gateway's record of the generation
# where the reservation knows its id and the backend can ask, else at its worst case (the
# call may have been generated and billed, and nobody can know). A reservation made on
# another host cannot be checked that way; after this long it is settled the same (no
# call of a study waits an hour for its reply).
STALE_AFTER_S = 3600.0
# The prompt estimate no text exceeds in practice: identifier-dense text (hex ids, codes)
# runs 2-3 characters a token, prose about 4 (paper §6's estimator).
PROMPT_CHARS_PER_TOKEN = 2
# Learned ratios are used at the largest seen times this: a later call of the same
# endpoint may run a little above every earlier one.
RATIO_MARGIN = 1.25
# How often a job waiting for an endpoint's first call to settle looks again.
FIRST_CALL_POLL_S = 0.2


@dataclass(frozen=True)
class Hold:
    """One reservation: what a call in flight may cost at most, on which endpoint."""

    id: str
    usd: float
    endpoint: str
    price_prompt: float
    price_completion: float
    prompt_estimate: int = 0  # the prompt tokens reserved before any ratio
    learned: bool = True  # the endpoint had settled a call when this was reserved


def _alive(r: dict[str, Any]) -> bool:
    if r.get("host") != socket.gethostname():
        return time.time() - float(r.get("at", 0)) < STALE_AFTER_S
    try:
        os.kill(int(r["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, KeyError, TypeError):
        return True
    return True


class Ledger:
    """The study's ledger at `path`, holding every paid call to `budget` (None: no cap,
    the spend is still kept). store_root: the response store, whose paid replies rebuild
    a ledger deleted together with its journal."""

    def __init__(self, path: str | Path, budget: float | None,
                 store_root: str | Path | None = None) -> None:
        self.path = Path(path)
        self.budget = None if budget is None else float(budget)
        self.store_root = None if store_root is None else Path(store_root)
        self._floor: float | None = None  # what the journal said was paid, plus ours since
        self._store_floor: float | None = None  # what the store's paid replies said
        self._pending: list[dict[str, Any]] = []  # charges of the write under way

    # -- the locked read-modify-write ------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """The ledger, read (checked, rebuilt if missing) and written back under the
        study-wide lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._store_floor is None:  # read once, outside the lock (a large store)
            self._store_floor = store_paid(self.store_root)[0]
        lock_path = self.path.with_name(self.path.name + ".lock")
        refuse_non_file(lock_path, "spend ledger lock")
        try:
            lock = open(lock_path, "a+")  # noqa: SIM115 - held across the yield
        except OSError as e:
            raise LedgerError(f"spend ledger lock {lock_path}: cannot be opened "
                              f"({e.strerror}); make it writable by the study's user") from e
        with lock:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            self._pending = []
            try:
                state = self._read_checked()
                yield state
                state["budget_usd"] = self.budget
                write_text(canonical_json(state), self.path, fsync=True)
                self._journal()
            finally:
                self._pending = []
                fcntl.lockf(lock, fcntl.LOCK_UN)

    def _journal(self) -> None:
        """Append this write's charges to the journal, after the ledger holding them was
        renamed into place: a kill between the two leaves the journal short, never
        ahead, so a crash is never mistaken for a hand-lowered spend."""
        if not self._pending:
            return
        with open(journal_path(self.path), "a", encoding="utf-8") as j:
            j.writelines(json.dumps(c) + "\n" for c in self._pending)
            j.flush()
            os.fsync(j.fileno())
        if self._floor is not None:
            self._floor += sum(c["usd"] for c in self._pending if "id" in c)

    def _read_checked(self) -> dict[str, Any]:
        """The ledger, never below what its journal or the response store's paid replies
        say was paid; a missing one rebuilt."""
        state = self._rebuilt() if not self.path.exists() else read_ledger(self.path)
        if self._floor is None:
            self._floor = read_journal(self.path)[0]
        spent = state["spent_usd"]
        for floor, source, fix in (
                (self._floor, f"its journal {journal_path(self.path).name}",
                 "delete it, and it is rebuilt from the journal"),
                (self._store_floor or 0.0, f"the response store {self.store_root}'s paid "
                 "replies", "delete it and its journal, and it is rebuilt from the store")):
            if spent + 1e-9 * (1 + floor) < floor:
                raise LedgerError(
                    f"spend ledger {self.path}: spent_usd ${spent:.6f} is below the "
                    f"${floor:.6f} {source} records as paid; the ledger (or its journal) "
                    f"was edited by hand: restore it (or {fix})")
        return state

    def _rebuilt(self) -> dict[str, Any]:
        """A ledger deleted mid-study, rebuilt before any call from its journal, else
        (both gone) from the response store's paid replies, whose sums then open a new
        journal."""
        state = empty_ledger()
        paid, n, by = read_journal(self.path)
        source, self._floor = f"its journal {journal_path(self.path).name}", paid
        # calls in flight and what was learned, as the journal has them (nothing where
        # it is gone: every endpoint is then one not yet settled, one call in flight)
        state["reserved"], learned = journal_memory(self.path)
        state.update(learned)
        if not n:
            paid, n, by = store_paid(self.store_root)
            source, self._floor = f"the response store {self.store_root}", 0.0
            self._pending = [{"id": f"rebuilt:{ep}", "endpoint": ep, "usd": u}
                             for ep, (u, _) in by.items()]
        if n:
            state["spent_usd"], state["calls"] = paid, n
            state["by_endpoint"] = {ep: {"spent_usd": u, "calls": c} for ep, (u, c) in
                                    by.items()}
            log.warning("spend ledger %s was missing: rebuilt from %s (%d paid calls, "
                        "$%.4f; %d calls held, %d endpoints' ratios known) before any call",
                        self.path, source, n, paid, len(state["reserved"]),
                        len(state["learned"]))
        return state

    # -- reserve -----------------------------------------------------------------

    def worst_case(self, backend: Backend, request: ChatRequest, state: dict[str, Any]
                   ) -> Hold:
        """The prompt at an estimate no text exceeds, plus max_tokens, at the listed
        prices, times the largest ratios learned on this endpoint (times RATIO_MARGIN)."""
        prices = backend.listed_prices()
        ep = endpoint_key(backend.identity)
        if prices is None:
            raise LedgerError(
                f"model {backend.identity.get('model')}: its endpoint ({ep}) lists no price, "
                "so no call can be held to budget_usd; probe it again so the pin records "
                "its prices, or unset budget_usd")
        pp, pc = prices
        estimate = prompt_estimate(backend, request)
        learned = ep in state["learned"]
        tokens = _factor(state["token_ratios"].get(ep)) if learned else 1.0
        price = _factor(state["ratios"].get(ep)) if learned else 1.0
        usd = (estimate * tokens * pp + request.max_tokens * pc) * price
        return Hold(uuid.uuid4().hex, usd, ep, pp, pc, estimate, learned)

    def reserve(self, backend: Backend, request: ChatRequest, what: str) -> Hold:
        """Reserve this call's worst case, or stop the job (BudgetExhausted) before it is
        sent. Until the endpoint has settled a call, wait while another call is in flight
        on it. Once one job has stopped at this budget no job starts another call, however
        small: the study stops as one, and a rerun at the same budget sends nothing."""
        waiting = False
        while True:
            hold, stop, busy = self._try_reserve(backend, request, what)
            if stop is not None:
                raise BudgetExhausted(stop)
            if not busy:
                return hold  # type: ignore[return-value]
            if not waiting:
                log.info("%s waits: the first paid call on %s is in flight, and until it "
                         "settles nothing is known of what the endpoint bills",
                         what, endpoint_key(backend.identity))
                waiting = True
            time.sleep(FIRST_CALL_POLL_S)

    def _try_reserve(self, backend: Backend, request: ChatRequest, what: str
                     ) -> tuple[Hold | None, str | None, bool]:
        with self.locked() as state:
            self.reap(state, backend)
            ep = endpoint_key(backend.identity)
            if ep not in state["learned"] and any(
                    r.get("endpoint") == ep for r in state["reserved"].values()):
                return None, None, True
            hold = self.worst_case(backend, request, state)
            stop = None
            if self.budget is not None:
                stopped = state["stopped_at_budget"]
                if stopped is not None and self.budget > stopped:
                    state["stopped_at_budget"] = stopped = None  # raised: go on
                committed = state["spent_usd"] + held_usd(state)
                if stopped is not None or committed + hold.usd > self.budget:
                    # written with the ledger (raising inside would skip the write)
                    state["stopped_at_budget"] = self.budget
                    stop = self._stop_message(state, committed, hold, what)
            if stop is None:
                state["reserved"][hold.id] = {
                    "usd": hold.usd, "endpoint": hold.endpoint, "pid": os.getpid(),
                    "host": socket.gethostname(), "at": time.time(),
                    "backend": backend.kind, "what": what}
                # journaled too, so a ledger deleted while the call is in flight is
                # rebuilt still holding it
                self._pending.append({"hold": hold.id, **state["reserved"][hold.id]})
        return hold, stop, False

    def _stop_message(self, state: dict[str, Any], committed: float, hold: Hold, what: str
                      ) -> str:
        budget = float(self.budget or 0.0)
        spent = state["spent_usd"]
        in_flight = committed - spent
        return (f"budget_usd {budget:g} reached at {what}: spent ${spent:.4f}, "
                f"${max(0.0, budget - spent):.4f} remains"
                + (f" (${in_flight:.4f} held by calls in flight)" if in_flight > 0 else "")
                + f", and the next call may cost up to ${hold.usd:.4f}; no new call is "
                "started. To go on, raise it (--config budget_usd=<more than "
                f"{budget:g}>): the calls already paid come from the response store")

    def reap(self, state: dict[str, Any], backend: Backend | None = None) -> None:
        """Settle every reservation whose job is gone (see STALE_AFTER_S): to the cost
        the gateway's generation record gives, where the reservation knows its generation
        and `backend` (the same kind) can ask, else at its worst case."""
        for rid, r in list(state["reserved"].items()):
            if _alive(r):
                continue
            del state["reserved"][rid]
            cost = None
            if r.get("generation_id") and backend is not None and \
                    r.get("backend") == backend.kind:
                cost = reported_cost(backend.generation_cost(str(r["generation_id"])))
            if cost is not None:
                self._spend(state, str(r.get("endpoint")), cost, rid)
                log.warning("a call reserved by process %s on %s (%s) never settled (its job "
                            "was killed): settled to the gateway's record of it, $%.4f",
                            r.get("pid"), r.get("host"), r.get("what", "?"), cost)
                continue
            self._spend(state, str(r.get("endpoint")), float(r["usd"]), rid)
            state["unknown_usd"] += float(r["usd"])
            log.warning("a call reserved by process %s on %s (%s) never settled (its job was "
                        "killed): counted at its worst case, $%.4f", r.get("pid"),
                        r.get("host"), r.get("what", "?"), r["usd"])

    # -- settle ------------------------------------------------------------------

    def received(self, hold: Hold, generation_id: str | None) -> None:
        """Note the generation a reply names before settling it, so a job killed between
        the two leaves a reservation the next run can settle from the gateway's record."""
        if not generation_id:
            return
        with self.locked() as state:
            if hold.id in state["reserved"]:
                state["reserved"][hold.id]["generation_id"] = generation_id

    def settle(self, hold: Hold, reply: Reply) -> None:
        """Settle a call to what it cost: the gateway's usage.cost where it reports one,
        else tokens times the listed prices; learn the endpoint's price and token ratios.
        A reported cost that is not a finite number >= 0 is refused by name and the call
        counted at its worst case."""
        listed = reply.prompt_tokens * hold.price_prompt + \
            reply.completion_tokens * hold.price_completion
        cost = reported_cost(reply.cost_usd)
        refused = reply.cost_usd is not None and cost is None
        if refused:
            log.warning("the gateway reported usage.cost %r for a call on %s: not a finite "
                        "number >= 0, refused; the call is counted at its worst case $%.6f",
                        reply.cost_usd, hold.endpoint, hold.usd)
        actual = hold.usd if refused else (cost if cost is not None else listed)
        with self.locked() as state:
            state["reserved"].pop(hold.id, None)
            self._spend(state, hold.endpoint, actual, hold.id)
            if refused:
                state["unknown_usd"] += actual
            else:
                self._learn(state, hold, reply, listed, cost)
            if actual > hold.usd + 1e-12:
                self._overrun(state, hold, actual)
            line = spent_line(state, self.budget)
        log.info("%s", line)

    def _learn(self, state: dict[str, Any], hold: Hold, reply: Reply, listed: float,
               cost: float | None) -> None:
        """Learn the endpoint's ratios from a settled call; its journal line keeps them,
        so a rebuilt ledger knows them too."""
        ep = hold.endpoint
        state["learned"][ep] = state["learned"].get(ep, 0) + 1
        line = self._pending[-1]  # this call's charge (_spend, just before)
        line["learned"] = True
        if cost is not None and listed > 0:
            line["ratios"] = cost / listed
            state["ratios"][ep] = max(float(state["ratios"].get(ep, 0.0)), cost / listed)
        if hold.prompt_estimate > 0 and reply.prompt_tokens > 0:
            line["token_ratios"] = reply.prompt_tokens / hold.prompt_estimate
            state["token_ratios"][ep] = max(float(state["token_ratios"].get(ep, 0.0)),
                                            line["token_ratios"])

    def _overrun(self, state: dict[str, Any], hold: Hold, actual: float) -> None:
        """A call that cost more than it reserved: the one way past the budget, named."""
        first = "its endpoint's first call, before anything was learned on it" \
            if not hold.learned else "after the endpoint's ratios were learned"
        state["overruns"].append({"endpoint": hold.endpoint, "reserved_usd": hold.usd,
                                  "cost_usd": actual, "first_call": not hold.learned})
        log.warning("a call on %s cost $%.6f, more than the $%.6f it reserved (%s): the "
                    "budget holds only up to this call's excess", hold.endpoint, actual,
                    hold.usd, first)

    def fail(self, hold: Hold, error: BackendError) -> None:
        """Settle a call that brought no reply. An error reply whose body reports a cost is
        charged that cost. One the gateway answered with an error status (429, 5xx, a
        refusal) and no cost generated nothing and costs nothing; one that timed out, or
        came back broken, may have been generated and billed (the gateway's documentation
        is silent), so it costs its worst case. One that never connected (refused,
        unresolved: detail `sent` False, backends/http.py) was never sent: nothing."""
        raw = error.detail.get("cost_usd")
        cost = reported_cost(raw)
        answered = (error.detail.get("status") not in (None, 200)
                    or error.detail.get("sent") is False)
        if raw is not None and cost is None:
            log.warning("the gateway reported usage.cost %r with an error on %s: not a "
                        "finite number >= 0, refused; counted at its worst case $%.6f",
                        raw, hold.endpoint, hold.usd)
        with self.locked() as state:
            state["reserved"].pop(hold.id, None)
            if cost is not None:
                self._spend(state, hold.endpoint, cost, hold.id)
                if cost > hold.usd + 1e-12:
                    self._overrun(state, hold, cost)
            elif raw is not None or not answered:
                self._spend(state, hold.endpoint, hold.usd, hold.id)
                state["unknown_usd"] += hold.usd
            else:  # nothing charged: the journal closes the hold all the same
                self._pending.append({"release": hold.id})

    def _spend(self, state: dict[str, Any], endpoint: str, usd: float, charge: str) -> None:
        state["spent_usd"] += usd
        state["calls"] += 1
        ep = state["by_endpoint"].setdefault(endpoint, {"spent_usd": 0.0, "calls": 0})
        ep["spent_usd"] += usd
        ep["calls"] += 1
        self._pending.append({"id": charge, "endpoint": endpoint, "usd": usd})


def _factor(seen: Any) -> float:
    """A learned ratio as a reservation uses it: the largest seen times the margin, never
    below 1 (the listed price and the prompt estimate are floors)."""
    return max(1.0, float(seen or 0.0) * RATIO_MARGIN)


def reservation_factors(state: dict[str, Any], endpoint: str) -> tuple[float, float] | None:
    """(prompt-token factor, price factor) a reservation on this endpoint is multiplied by
    now (worst_case's), read-only: None where the endpoint has settled no call yet, so a
    reservation is at the listed prices and the prompt estimate alone."""
    if endpoint not in state["learned"]:
        return None
    return _factor(state["token_ratios"].get(endpoint)), _factor(state["ratios"].get(endpoint))


def prompt_estimate(backend: Backend, request: ChatRequest) -> int:
    """Prompt tokens no text of this request exceeds: the whole request as sent (messages
    and schema) at PROMPT_CHARS_PER_TOKEN characters a token, or the backend's own count
    where that is higher (a backend with a real tokenizer)."""
    text = canonical_json(request.canonical())
    return max(backend.count_tokens(text), math.ceil(len(text) / PROMPT_CHARS_PER_TOKEN))


def job_ledger(path: str | None, budget: float | None, replay: bool,
               store_root: str | None = None) -> Ledger | None:
    """The ledger a fold or probe job holds its paid calls to (none for a replay, which
    sends nothing, or where the rule names no ledger)."""
    return None if replay or not path else Ledger(path, budget, store_root)
