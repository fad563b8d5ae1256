"""How the probe picks a gateway's endpoint for a model (paper §3.4: endpoints with at
least the context a fold needs and structured-output support, then by price), or checks
the one the config pins. run/probe.py lists the endpoints and pins the backend to the
one chosen here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .verdicts import CONTEXT_TOO_SHORT, ENDPOINT_NOT_LISTED, NO_STRUCTURED_OUTPUTS, OK


@dataclass(frozen=True)
class PinRule:
    """How the probe picks an endpoint (paper §3.4; config `probe`).

    The paper selected endpoints with at least 131,072 tokens of context and
    structured-output support, then by price: `study-paper.yaml` says so. Unset, the
    context floor is what the largest fold needs and structured outputs are preferred.
    """

    min_context_tokens: int | None = None
    require_structured_outputs: bool = False

    @classmethod
    def from_config(cls, d: dict[str, Any] | None) -> PinRule:
        d = d or {}
        return cls(d.get("min_context_tokens"), bool(d.get("require_structured_outputs")))


DEFAULT_PIN_RULE = PinRule()  # the rule a config without `probe` gets


def pick_endpoint(endpoints: list[dict[str, Any]], provider: str | None,
                  quantization: str | None, required_context: int, needs_schema: bool,
                  rule: PinRule = PinRule()) -> tuple[dict[str, Any] | None, str, str]:
    """(endpoint, verdict, reason): the configured pin checked, or the best one chosen.

    A model with no endpoint meeting the rule gets a verdict naming the requirement.
    """
    cands = endpoints
    if provider:
        p = provider.lower()
        cands = [e for e in cands if str(e.get("tag", "")).lower() in (p,)
                 or str(e.get("tag", "")).lower().split("/")[0] == p
                 or str(e.get("provider_name", "")).lower() == p]
        if not cands:
            listed = ", ".join(sorted(str(e.get("tag")) for e in endpoints)) or "none"
            return None, ENDPOINT_NOT_LISTED, f"provider {provider!r} is not listed ({listed})"
    if quantization:
        q = [e for e in cands if e.get("quantization") == quantization]
        if not q:
            have = ", ".join(sorted({str(e.get("quantization")) for e in cands}))
            return None, ENDPOINT_NOT_LISTED, (f"no endpoint at quantization {quantization} "
                                               f"(listed: {have})")
        cands = q
    floor = max(required_context, rule.min_context_tokens or 0)
    roomy = [e for e in cands if int(e.get("context_length") or 0) >= floor]
    if not roomy:
        best = max(int(e.get("context_length") or 0) for e in cands)
        why = ("the study's pin rule requires" if floor > required_context
               else "a fold needs")
        return None, CONTEXT_TOO_SHORT, f"largest context {best} tokens < {floor} {why}"
    healthy = [e for e in roomy if not e.get("status")] or roomy
    if needs_schema:
        structured = [e for e in healthy if "structured_outputs" in
                      (e.get("supported_parameters") or [])]
        if not structured and rule.require_structured_outputs:
            return None, NO_STRUCTURED_OUTPUTS, (
                f"no endpoint with context >= {floor} declares structured_outputs, which "
                "the study's pin rule requires")
        healthy = structured or healthy

    def price(e: dict[str, Any]) -> float:
        pr = e.get("pricing") or {}
        try:
            return float(pr.get("prompt") or 0) + float(pr.get("completion") or 0)
        except ValueError:
            return float("inf")

    return min(healthy, key=price), OK, ""
