"""The carriers that keep the session itself, never a model's summary of it: no fold
calls the model; the harness builds each fold's carry from the session read so far, and
only the recall turn is a call (`uncompacted`, `clear_tool_output`, `trim`).

What they share is here, so each kind is its `keep` rule alone:

- a fold with no model call is still a fold record, in the shape every reader of a
  fold reads (grade/rows.py, report/viewer.py, report/compare.py, folds.csv): a reply
  of zero tokens whose finish_reason is "none", served by no endpoint (served_by "",
  so the validity rule's endpoint test has nothing to refuse), no request key, no seed,
  no budget (max_tokens 0); the carry is what the harness kept (docs/design.md "A fold
  with no model call");
- the probe's permission: no fold shape of the arm's own is sent, so the arm may run
  wherever the probe found the endpoint usable at all; the recall turn is a plain
  request, so a plain shape the probe refused refuses it too;
- the audit's price (run/audit.py run_tokens): one call, the recall turn, reading at
  most `recall_bound` tokens of carry;
- the arm is outside the matched comparison (its capacity is not a fold budget), read
  on its card against your best arm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..records.probe_record import Permission, ProbeRecord, ShapeVerdict
from ..records.run_record import Fold
from .base import Carrier
from .types import (
    ArmEntry,
    ArmView,
    BackendView,
    FoldResult,
    FoldStep,
)

# The finish_reason of a fold no model answered
NO_CALL_FINISH = "none"


def joined(chunks: list[str]) -> str:
    """Chunks as one text, joined as a fold joins the chunks it folds together
    (run/fold.py fold_step)."""
    return "\n".join(chunks)


def tail_within(text: str, cap: int, count_tokens: Callable[[str], int]) -> tuple[str, bool]:
    """(the longest suffix of `text` within `cap` tokens as the backend counts them,
    whether anything was evicted): the oldest text goes first. Found by bisection on
    where the suffix starts, so each kind's cap is held by the study's own count."""
    if count_tokens(text) <= cap:
        return text, False
    lo, hi = 0, len(text)  # text[hi:] fits (empty), text[lo:] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count_tokens(text[mid:]) <= cap:
            hi = mid
        else:
            lo = mid
    return text[hi:], True


def no_call_fold(backend: BackendView, pending: list[int], i: int, carry: str,
                 evicted: bool) -> Fold:
    """The record of fold i where no model was called: the fields of a model fold's
    record (run/fold.py fold_step), each saying so. The carried text is the session's
    own, no label of the harness's, so model_chars is the carry's length."""
    reply: dict[str, Any] = {
        "text": "", "finish_reason": NO_CALL_FINISH, "prompt_tokens": 0,
        "completion_tokens": 0, "token_count_method": backend.token_count_method,
        "latency_s": 0.0, "served_by": "", "cost_usd": 0.0, "raw": {}, "attempts": []}
    return Fold(fold=i, chunks=list(pending), request_key=None, store_hit=False, seed=None,
                max_tokens=0, reply=reply, parse_ok=True, schema_valid=True,
                schema_errors=[], carry=carry, carried_chars=len(carry), clipped=evicted,
                model_chars=len(carry), model_clipped=False)


class SessionCarrier(Carrier):
    """A carry kept from the session by a rule (`keep`), with no model call per fold."""

    calls_model = False
    sends_fold_shape = False
    own_arm = False  # its capacity is its own rule's, not a paper arm's
    matched = False

    def keep(self, arm: ArmView, chunks: list[str], backend: BackendView) -> tuple[str, bool]:
        """(the carry kept of the session's chunks read so far; whether any of their
        text was left out). Each kind's rule."""
        raise NotImplementedError

    def outside(self, spec: ArmEntry) -> str:
        return f"{self.words}, read on its card line against the best matched arm"

    def fold(self, step: FoldStep) -> FoldResult:
        """No call: the carry is the kept part of the session read so far."""
        backend = step.caller.backend
        carry, evicted = self.keep(step.arm, list(step.fixture.chunks[: step.i + 1]), backend)
        return FoldResult(no_call_fold(backend, step.pending, step.i, carry, evicted))

    def permission(self, probe: ProbeRecord, backend: str) -> Permission | None:
        """Allowed unless the probe found the endpoint unusable (its verdict before any
        shape) or refused the plain shape the recall turn sends."""
        plain = next((r for r in probe.get("shapes", []) if r.get("shape") == "plain"), None)
        refused: ProbeRecord | ShapeVerdict | None = None
        if probe.get("verdict", "ok") != "ok":
            refused = probe
        elif plain is not None and plain.get("verdict") != "ok":
            refused = plain
        if refused is not None:
            return {"allowed": False, "verdict": refused["verdict"],
                    "reason": refused.get("reason", ""),
                    "responsible_parameter": refused.get("responsible_parameter", "")}
        return {"allowed": True, "verdict": "ok", "responsible_parameter": "",
                "reason": "no fold calls the model; the recall turn is a plain request"}

    def recall_bound(self, arm: ArmView, session_tokens: float) -> float:
        """The most tokens of carry the recall turn reads (the audit's price): the
        session, at most the arm's carry cap."""
        return min(float(arm.carry_cap_tokens), session_tokens)
