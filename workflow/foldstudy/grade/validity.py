"""The one validity rule (paper §3.3): may this row enter any aggregate, and why not.

Infrastructure faults (a call that failed after its retries, an endpoint other than
the pin, a fold that never happened) are invalid and may be retried. A call another
model served (the provider's fallback, a gateway's substitute: the response's own
`model`, `fallback` blocks and `usage.iterations` say so) makes the row invalid as
`served_by_other:<model>`, never retried: the row does not measure the model it names.
Catch-up is invalid and is not retried: that row answered a different question. The
arm's own behaviour (parse failure, truncation, abstention) stays valid and in the means:
retrying it would select for the arm succeeding. So does a native fold whose provider
answered without compacting (content null, no block, a stop reason other than compaction
such as max_tokens): the provider's compaction is the arm, so its failure is the arm's. The
row's parse_failures count those folds, and the card says "k of n folds returned no
compaction" beside every recall difference of the arm (analysis/card_lines.py
fold_failures).

A run a staged decision's budget stopped part-way (not_run:budget) is invalid and is not
retried either: it is run again only when budget_usd is raised (fold_budget), from the
response store for the folds it paid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..backends.base import served_by_other, served_elsewhere
from ..io import read_json
from ..records.run_record import RunRecord, as_record

RETRYABLE_PREFIXES = ("infrastructure:", "endpoint_mismatch", "missing_folds")
# a row a call of which another model served (a provider's fallback, a gateway's
# substitute): not retried, since the store would serve the same reply again and a
# fallback answers the requested model's refusal, the model's own behaviour
SERVED_BY_OTHER = "served_by_other"
# not_run_reason of a staged run that budget_usd stopped before its last call
BUDGET = "budget"


def validity(record: RunRecord | dict[str, Any]) -> tuple[bool, str]:
    """(valid, invalid_reason) of one run record; the reason is '' for a valid row."""
    r = as_record(record)
    if r.status == "not_run":
        return False, f"not_run:{r.not_run_reason or 'unknown'}"
    if r.infra_error:
        return False, f"infrastructure:{r.infra_error['kind']}"
    pin = (r.endpoint or {}).get("pin")
    if pin:
        for fold in r.folds:
            served = fold.reply.get("served_by")
            if served_elsewhere(served, pin):
                return False, f"endpoint_mismatch:{served}"
    if other := served_by_other_call(r):
        return False, f"{SERVED_BY_OTHER}:{other}"
    if r.catchup_fired:
        return False, "catchup_fired"
    if r.missing_folds or r.recall is None:
        return False, "missing_folds"
    return True, ""


def served_by_other_call(r: RunRecord) -> str:
    """The first model other than the one asked that served a call of this run (a fold
    or the recall turn), as the response said (backends/base.served_by_other); ''
    where none did. A reply recorded before Reply.served existed says nothing."""
    replies = [f.reply for f in r.folds] + [(r.recall or {}).get("reply") or {}]
    return next((o for reply in replies if (o := served_by_other(reply.get("served")))), "")


def retryable(reason: str) -> bool:
    """May a row invalid for this reason be run again without biasing the study."""
    return reason.startswith(RETRYABLE_PREFIXES)


def budget_stopped(record: RunRecord) -> bool:
    """Did budget_usd stop this run part-way (a staged decision's record)."""
    return record.status == "not_run" and record.not_run_reason == BUDGET


def attempts_dir(record_path: str | Path) -> Path:
    """Where a run's earlier, infrastructure-invalid attempts are kept (beside it)."""
    p = Path(record_path)
    return p.with_name(f"{p.stem}.attempts")


def fold_attempt(record_path: str | Path, retry_infrastructure: bool) -> int:
    """The attempt a fold job is to make: the rule's `attempt` param.

    Paper §3.3: "Rows invalidated by infrastructure faults may be retried; rows
    invalidated by an arm's own behaviour may not, since retrying those would select for
    the arm succeeding." With retry_infrastructure on, a run whose record is invalid for
    a retryable reason (validity.retryable) gets the next attempt number; the changed
    param makes Snakemake run exactly those jobs again. Every other run keeps its number,
    so nothing else reruns.
    """
    p = Path(record_path)
    if not p.is_file():
        return 1
    try:
        record = RunRecord.from_dict(read_json(p))
    except (ValueError, UnicodeDecodeError):
        return 1  # unreadable: the grade stage names it
    n = int(record.attempt)
    if retry_infrastructure and record.status == "run":
        valid, reason = validity(record)
        if not valid and retryable(reason):
            return n + 1
    return n


def fold_budget(record_path: str | Path, budget_usd: float | None) -> float | None:
    """The budget a staged run's fold job is made under: its rule's param.

    A run budget_usd stopped part-way gets the budget configured now, so raising it
    changes the param and Snakemake reruns exactly those jobs, their paid folds from the
    response store; at the same budget the param is what it was and nothing reruns. Any
    other run keeps the budget its record was made under, so a raised budget reruns none
    of them; a run with no record yet gets the budget it will be made under, which its
    record then keeps (a param that went back to None after the rerun would rerun it once
    more).
    """
    p = Path(record_path)
    if not p.is_file():
        return budget_usd
    try:
        record = RunRecord.from_dict(read_json(p))
    except (ValueError, UnicodeDecodeError):
        return budget_usd  # unreadable: the grade stage names it
    return budget_usd if budget_stopped(record) else record.budget_usd
