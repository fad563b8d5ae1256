"""The one validity rule (paper §3.3): may this row enter any aggregate, and why not.

Infrastructure faults (a call that failed after its retries, an endpoint other than
the pin, a fold that never happened) are invalid and may be retried. Catch-up is invalid
and is not retried: that row answered a different question. The arm's own behaviour
(parse failure, truncation, abstention) stays valid and in the means: retrying it would
select for the arm succeeding.
"""

from __future__ import annotations

from typing import Any

RETRYABLE_PREFIXES = ("infrastructure:", "endpoint_mismatch", "missing_folds")


def validity(record: dict[str, Any]) -> tuple[bool, str]:
    """(valid, invalid_reason) of one run record; the reason is '' for a valid row."""
    if record.get("status") == "not_run":
        return False, f"not_run:{record.get('not_run_reason', 'unknown')}"
    err = record.get("infra_error")
    if err:
        return False, f"infrastructure:{err['kind']}"
    pin = (record.get("endpoint") or {}).get("pin")
    if pin:
        for fold in record.get("folds", []):
            served = fold["reply"].get("served_by")
            if served and served != pin:
                return False, f"endpoint_mismatch:{served}"
    if record.get("catchup_fired"):
        return False, "catchup_fired"
    if record.get("missing_folds", 0) or record.get("recall") is None:
        return False, "missing_folds"
    return True, ""


def retryable(reason: str) -> bool:
    """May a row invalid for this reason be run again without biasing the study."""
    return reason.startswith(RETRYABLE_PREFIXES)
