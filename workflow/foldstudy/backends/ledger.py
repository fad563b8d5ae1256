"""The spend ledger every job of a study shares: reserve before a paid call, settle after.

DESIGN §6 (Spend): "`budget_usd` caps the study. Each paid call reserves its worst case
(prompt plus max_tokens at listed prices, times the largest actual/listed ratio seen on
that endpoint) in a ledger all jobs share, then settles to the reported cost. Past the
budget no new call starts; a rerun with a higher budget resumes from the store."

One JSON file under results/ holds what was settled, what is reserved by calls in
flight, and the largest actual/listed ratio seen per endpoint. Every read-modify-write
happens under a POSIX record lock (fcntl.lockf, which NFS and the SLURM profile's shared
filesystem honour, unlike a lock held in one process) on a sibling `.lock` file, and
the file is replaced whole (temp file, fsync, rename), so two jobs never both spend the
last dollar and a SIGKILL leaves the old ledger or the new one.

Store hits and replays never reach it (backends/call.py asks it only for a call it is
about to send), so they cost nothing; an unpriced, local backend (embedded, a local
OpenAI-compatible server) is free and never reaches it either.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StudyError
from ..io import canonical_json, write_text
from .base import Backend, BackendError, ChatRequest, Reply

log = logging.getLogger(__name__)

LEDGER_VERSION = 1
# A reservation no live process holds any more (its job was killed mid-call) is settled
# at its worst case: the call may have been generated and billed, and nobody can know.
# A reservation made on another host cannot be checked that way; after this long it is
# settled the same (no call of a study waits an hour for its reply).
STALE_AFTER_S = 3600.0


class BudgetExhausted(StudyError):
    """The next call's worst case would pass budget_usd: the job stops before sending it."""


class LedgerError(StudyError):
    """A ledger that cannot be read, or a paid call that cannot be priced."""


@dataclass(frozen=True)
class Hold:
    """One reservation: what a call in flight may cost at most, on which endpoint."""

    id: str
    usd: float
    endpoint: str
    price_prompt: float
    price_completion: float


def endpoint_key(identity: dict[str, Any]) -> str:
    """The endpoint a ratio is kept for: backend, model and pinned provider."""
    return "/".join(str(identity.get(k) or "") for k in ("backend", "model_id", "pin"))


def empty_ledger() -> dict[str, Any]:
    return {"ledger_version": LEDGER_VERSION, "spent_usd": 0.0, "calls": 0,
            "unknown_usd": 0.0, "reserved": {}, "ratios": {}, "by_endpoint": {},
            "stopped_at_budget": None, "budget_usd": None}


def read_ledger(path: str | Path) -> dict[str, Any]:
    """The ledger at path (an empty one where there is none yet)."""
    p = Path(path)
    if not p.is_file():
        return empty_ledger()
    try:
        state = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LedgerError(f"spend ledger {p}: not readable JSON ({e}); it is written whole "
                          "by rename, so this file was edited by hand: restore it, since "
                          "deleting it forgets what was spent") from e
    if not isinstance(state, dict) or not isinstance(state.get("reserved"), dict):
        raise LedgerError(f"spend ledger {p}: not a ledger (no `reserved` object)")
    return {**empty_ledger(), **state}


def spent_line(state: dict[str, Any], budget: float | None) -> str:
    """"spent $X of $Y": what the log says after every settled call."""
    of = f" of ${budget:.4f}" if budget is not None else " (no budget_usd set)"
    return f"spent ${state['spent_usd']:.4f}{of} over {state['calls']} paid calls"


def _alive(r: dict[str, Any]) -> bool:
    if r.get("host") != socket.gethostname():
        return time.time() - float(r.get("at", 0)) < STALE_AFTER_S
    try:
        os.kill(int(r["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, KeyError):
        return True
    return True


def reap(state: dict[str, Any]) -> None:
    """Settle every reservation whose job is gone at its worst case (see STALE_AFTER_S)."""
    for rid, r in list(state["reserved"].items()):
        if not _alive(r):
            del state["reserved"][rid]
            state["spent_usd"] += float(r["usd"])
            state["unknown_usd"] += float(r["usd"])
            log.warning("a call reserved by process %s on %s never settled (its job was "
                        "killed): counted at its worst case, $%.4f", r.get("pid"),
                        r.get("host"), r["usd"])


class Ledger:
    """The study's ledger at `path`, holding every paid call to `budget` (None: no cap,
    the spend is still kept)."""

    def __init__(self, path: str | Path, budget: float | None) -> None:
        self.path = Path(path)
        self.budget = None if budget is None else float(budget)

    @contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """The ledger, read and written back under the study-wide lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a+") as lock:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            try:
                state = read_ledger(self.path)
                yield state
                state["budget_usd"] = self.budget
                write_text(canonical_json(state), self.path, fsync=True)
            finally:
                fcntl.lockf(lock, fcntl.LOCK_UN)

    def worst_case(self, backend: Backend, request: ChatRequest, state: dict[str, Any]
                   ) -> Hold:
        """Prompt tokens plus max_tokens at the listed prices, times the largest
        actual/listed ratio seen on this endpoint (at least 1)."""
        prices = backend.listed_prices()
        ep = endpoint_key(backend.identity)
        if prices is None:
            raise LedgerError(
                f"model {backend.identity.get('model')}: its endpoint ({ep}) lists no price, "
                "so no call can be held to budget_usd; probe it again so the pin records "
                "its prices, or unset budget_usd")
        pp, pc = prices
        # The whole request as sent (messages and schema): an over- rather than an
        # under-count of the prompt the endpoint bills.
        prompt = backend.count_tokens(canonical_json(request.canonical()))
        ratio = max(1.0, float(state["ratios"].get(ep, 1.0)))
        usd = (prompt * pp + request.max_tokens * pc) * ratio
        return Hold(uuid.uuid4().hex, usd, ep, pp, pc)

    def reserve(self, backend: Backend, request: ChatRequest, what: str) -> Hold:
        """Reserve this call's worst case, or stop the job (BudgetExhausted) before it is
        sent. Once one job has stopped at this budget no job starts another call, however
        small: the study stops as one, and a rerun at the same budget sends nothing."""
        stop = None
        with self.locked() as state:
            reap(state)
            hold = self.worst_case(backend, request, state)
            if self.budget is not None:
                stopped = state["stopped_at_budget"]
                if stopped is not None and self.budget > stopped:
                    state["stopped_at_budget"] = stopped = None  # raised: go on
                committed = state["spent_usd"] + sum(
                    float(r["usd"]) for r in state["reserved"].values())
                if stopped is not None or committed + hold.usd > self.budget:
                    # written with the ledger (raising inside would skip the write)
                    state["stopped_at_budget"] = self.budget
                    stop = self._stop_message(state, committed, hold, what)
            if stop is None:
                state["reserved"][hold.id] = {
                    "usd": hold.usd, "endpoint": hold.endpoint, "pid": os.getpid(),
                    "host": socket.gethostname(), "at": time.time()}
        if stop is not None:
            raise BudgetExhausted(stop)
        return hold

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

    def settle(self, hold: Hold, reply: Reply) -> None:
        """Settle a call to what it cost: the gateway's usage.cost where it reports one,
        else tokens times the listed prices; keep the endpoint's actual/listed ratio."""
        listed = reply.prompt_tokens * hold.price_prompt + \
            reply.completion_tokens * hold.price_completion
        actual = float(reply.cost_usd) if reply.cost_usd is not None else listed
        with self.locked() as state:
            state["reserved"].pop(hold.id, None)
            self._spend(state, hold.endpoint, actual)
            if listed > 0 and reply.cost_usd is not None:
                state["ratios"][hold.endpoint] = max(
                    float(state["ratios"].get(hold.endpoint, 1.0)), actual / listed)
            line = spent_line(state, self.budget)
        log.info("%s", line)

    def fail(self, hold: Hold, error: BackendError) -> None:
        """Settle a call that brought no reply. One the gateway answered with an error
        status (429, 5xx, a refusal) generated nothing and costs nothing; one that timed
        out, or came back broken or failed inside an HTTP 200, may have been generated and
        billed (the gateway's documentation is silent), so it costs its worst case."""
        answered = error.detail.get("status") not in (None, 200)
        with self.locked() as state:
            state["reserved"].pop(hold.id, None)
            if not answered:
                self._spend(state, hold.endpoint, hold.usd)
                state["unknown_usd"] += hold.usd

    @staticmethod
    def _spend(state: dict[str, Any], endpoint: str, usd: float) -> None:
        state["spent_usd"] += usd
        state["calls"] += 1
        ep = state["by_endpoint"].setdefault(endpoint, {"spent_usd": 0.0, "calls": 0})
        ep["spent_usd"] += usd
        ep["calls"] += 1


def job_ledger(path: str | None, budget: float | None, replay: bool) -> Ledger | None:
    """The ledger a fold or probe job holds its paid calls to (none for a replay, which
    sends nothing, or where the rule names no ledger)."""
    return None if replay or not path else Ledger(path, budget)
