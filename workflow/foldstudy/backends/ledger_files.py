"""The spend ledger's files, read and checked (backends/ledger.py holds the Ledger that
writes them): ledger.json, whose figures must be finite and never below what was paid,
and its append-only journal, one line per reservation and per settled charge, from which
a deleted ledger is rebuilt; and, where neither is left, what the response store's paid
replies say was spent."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import StudyError

log = logging.getLogger(__name__)

LEDGER_VERSION = 2
NUMBERS = ("spent_usd", "unknown_usd", "calls")


class BudgetExhausted(StudyError):
    """The next call's worst case would pass budget_usd: the job stops before sending it."""


class LedgerError(StudyError):
    """A ledger that cannot be read or is not what was paid, or a paid call that cannot
    be priced."""


def endpoint_key(identity: dict[str, Any]) -> str:
    """The endpoint a ratio is kept for: backend, model and pinned provider."""
    return "/".join(str(identity.get(k) or "") for k in ("backend", "model_id", "pin"))


def empty_ledger() -> dict[str, Any]:
    return {"ledger_version": LEDGER_VERSION, "spent_usd": 0.0, "calls": 0,
            "unknown_usd": 0.0, "reserved": {}, "ratios": {}, "token_ratios": {},
            "learned": {}, "by_endpoint": {}, "overruns": [], "stopped_at_budget": None,
            "budget_usd": None}


# -- reading, checked --------------------------------------------------------------


def read_ledger(path: str | Path) -> dict[str, Any]:
    """The ledger at path, every figure checked (an empty one where there is none yet)."""
    p = Path(path)
    refuse_non_file(p, "spend ledger")
    if not p.exists():
        return empty_ledger()
    try:
        state = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise LedgerError(f"spend ledger {p}: cannot be read ({e.strerror}); make it "
                          "readable by the study's user") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LedgerError(f"spend ledger {p}: not readable JSON ({e}); it is written whole "
                          "by rename, so this file was edited by hand: restore it, since "
                          "deleting it forgets what was spent") from e
    if not isinstance(state, dict) or not isinstance(state.get("reserved"), dict):
        raise LedgerError(f"spend ledger {p}: not a ledger (no `reserved` object)")
    state = {**empty_ledger(), **state}
    check_ledger(state, p)
    return state


def refuse_non_file(p: Path, what: str) -> None:
    if p.exists() and not p.is_file():
        raise LedgerError(f"{what} {p}: not a file (a directory or a special file stands "
                          "where it should be); move it away")


def check_ledger(state: dict[str, Any], p: Path | str) -> None:
    """Every figure a finite number >= 0 (a string, NaN or a negative is refused by its
    key): one NaN would switch the budget off, since every comparison with it is false."""
    for key in NUMBERS:
        _figure(state[key], f"{key}", p)
    for key in ("stopped_at_budget", "budget_usd"):
        if state[key] is not None:
            _figure(state[key], key, p)
    for kind in ("reserved", "ratios", "token_ratios", "learned", "by_endpoint"):
        if not isinstance(state[kind], dict):
            raise LedgerError(f"spend ledger {p}: `{kind}` is not an object")
    for rid, r in state["reserved"].items():
        if not isinstance(r, dict):
            raise LedgerError(f"spend ledger {p}: reserved.{rid} is not an object")
        _figure(r.get("usd"), f"reserved.{rid}.usd", p)
    for kind in ("ratios", "token_ratios", "learned"):
        for ep, v in state[kind].items():
            _figure(v, f"{kind}.{ep}", p)
    for ep, v in state["by_endpoint"].items():
        for key in ("spent_usd", "calls"):
            _figure((v or {}).get(key) if isinstance(v, dict) else v,
                    f"by_endpoint.{ep}.{key}", p)


def _figure(v: Any, key: str, p: Path | str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise LedgerError(f"spend ledger {p}: {key} is {json.dumps(v)}, not a finite number "
                          ">= 0; restore the ledger (a study's spend is never edited by hand)")
    return float(v)


def reported_cost(value: Any) -> float | None:
    """A cost the gateway reported, if it is one: a finite number >= 0 (None otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def held_usd(state: dict[str, Any]) -> float:
    return sum(float(r["usd"]) for r in state["reserved"].values())


def spent_line(state: dict[str, Any], budget: float | None) -> str:
    """"spent $X of $Y": what the log says after every settled call, and the summary
    with what is still held by calls that never settled."""
    of = f" of ${budget:.4f}" if budget is not None else " (no budget_usd set)"
    line = f"spent ${state['spent_usd']:.4f}{of} over {state['calls']} paid calls"
    if state["reserved"]:
        line += (f"; ${held_usd(state):.4f} held by {len(state['reserved'])} calls that "
                 "have not settled (in flight, or their job was killed: the next run "
                 "settles them)")
    return line


# -- the journal: what was paid, one line per charge -------------------------------


def journal_path(path: Path) -> Path:
    return path.with_name(path.name + ".journal")


Paid = tuple[float, int, dict[str, list[float]]]  # (usd, charges, endpoint -> [usd, n])


def read_journal(path: Path) -> Paid:
    """What the journal beside the ledger records as paid, each charge once. A line cut
    off by a kill is the last and is skipped; a charge line written twice (a copied
    journal, a replayed append) is said by line and counted once."""
    lines, repeats = _journal_records(path)
    if repeats:
        log.warning("spend journal %s: %s; each charge is counted once",
                    journal_path(path), _repeats_said(repeats))
    return _tally(_journal_charge(rec) for rec in lines)


def _journal_lines(path: Path) -> list[dict[str, Any]]:
    """The journal's lines as objects, each charge once (see _journal_records)."""
    return _journal_records(path)[0]


def _repeats_said(repeats: list[tuple[int, int, str]]) -> str:
    shown = [f"line {n} repeats the charge {cid!r} of line {first}"
             for n, first, cid in repeats[:3]]
    more = f" (and {len(repeats) - 3} more)" if len(repeats) > 3 else ""
    return ", ".join(shown) + more


def _charge_key(rec: dict[str, Any]) -> tuple[str, str] | None:
    """What names a charge line: its id on its endpoint (a store rebuild wrote one line
    per endpoint under the one id `rebuilt`); None for a hold or release line."""
    if "hold" in rec or "release" in rec or "id" not in rec:
        return None
    return str(rec["id"]), str(rec.get("endpoint"))


def _journal_records(path: Path) -> tuple[list[dict[str, Any]], list[tuple[int, int, str]]]:
    """The journal's lines as objects (one cut off by a kill, the last, is skipped) with
    each charge once, and each repeat as (line, line first written, charge id). A
    charge id is one call settled once: a repeat with another figure is no copy, and is
    refused naming both lines."""
    seen: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    out, repeats = [], []
    for n, rec in _numbered_lines(path):
        key = _charge_key(rec)
        if key is not None and key in seen:
            first, was = seen[key]
            if reported_cost(was.get("usd")) != reported_cost(rec.get("usd")):
                raise LedgerError(
                    f"spend journal {journal_path(path)}: line {n} charges {key[0]!r} "
                    f"${_usd(rec.get('usd'))} where line {first} charged it "
                    f"${_usd(was.get('usd'))}; one call is charged once: restore the "
                    "journal from its backup, or delete the line that is wrong")
            repeats.append((n, first, key[0]))
            continue
        if key is not None:
            seen[key] = (n, rec)
        out.append(rec)
    return out, repeats


def _usd(v: Any) -> str:
    cost = reported_cost(v)
    return f"{cost:.6f}" if cost is not None else str(v)


def _numbered_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line, object) of each readable line of the journal."""
    j = journal_path(path)
    refuse_non_file(j, "spend journal")
    if not j.exists():
        return []
    try:
        text = j.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise LedgerError(f"spend journal {j}: cannot be read ({e.strerror}); make it "
                          "readable by the study's user") from e
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append((n, rec))
    return out


def _journal_charge(rec: dict[str, Any]) -> tuple[str, float | None]:
    """A charge line's (endpoint, usd); a hold or release line is no charge."""
    if "hold" in rec or "release" in rec:
        return "", None
    try:
        return str(rec["endpoint"]), reported_cost(rec["usd"])
    except (KeyError, TypeError):
        return "", None


def journal_memory(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    """What a ledger rebuilt from its journal must not forget besides the spend: the
    reservations no charge or release line has closed yet (calls in flight, or held by
    a killed job), and per endpoint the ratios its settled calls taught (kind ->
    endpoint -> largest; "learned": settled calls)."""
    holds: dict[str, dict[str, Any]] = {}
    learned: dict[str, dict[str, float]] = {"learned": {}, "ratios": {}, "token_ratios": {}}
    for rec in _journal_lines(path):
        if "hold" in rec:
            holds[str(rec["hold"])] = {k: v for k, v in rec.items() if k != "hold"}
            continue
        holds.pop(str(rec.get("release", rec.get("id"))), None)
        ep = str(rec.get("endpoint"))
        if not rec.get("learned"):
            continue
        learned["learned"][ep] = learned["learned"].get(ep, 0) + 1
        for kind in ("ratios", "token_ratios"):
            v = reported_cost(rec.get(kind))
            if v is not None:
                learned[kind][ep] = max(learned[kind].get(ep, 0.0), v)
    holds = {h: r for h, r in holds.items() if reported_cost(r.get("usd")) is not None}
    return holds, learned


def store_paid(store_root: Path | None) -> Paid:
    """What the response store's replies say was paid: the sum of their reported costs
    (only a paid backend's reply carries one)."""
    if store_root is None or not Path(store_root).is_dir():
        return _tally([])
    return _tally(_store_charge(f) for f in Path(store_root).glob("*/*.json"))


def _store_charge(f: Path) -> tuple[str, float | None]:
    try:
        entry = json.loads(f.read_text(encoding="utf-8"))
        return (endpoint_key(entry.get("endpoint") or {}),
                reported_cost(entry["reply"].get("cost_usd")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "", None


def _tally(charges: Iterable[tuple[str, float | None]]) -> Paid:
    """Sum (endpoint, usd) charges, skipping those with no cost."""
    total, n, by = 0.0, 0, {}
    for ep, usd in charges:
        if usd is None:
            continue
        total, n = total + usd, n + 1
        e = by.setdefault(ep, [0.0, 0])
        e[0], e[1] = e[0] + usd, e[1] + 1
    return total, n, by
