"""The hosted gateway (OpenRouter) over HTTP with `requests`, pinned to one endpoint.

One model has several endpoints that differ in quantization, context and whether they
honour a strict schema (paper §3.4), so an unpinned sweep silently varies the
treatment. Every call therefore names one provider with fallbacks off and
require_parameters on (docs/design.md §4, gateway A2), and the provider that actually
served it is recorded and checked against the pin by the validity rule (validity.py compares
identity["pin"] with Reply.served_by).

The request carries only what the measurement needs. Paper §4.2: "this harness adds a
reasoning-suppression parameter to every call that has nothing to do with what it
measures. An endpoint that honours response_format but does not declare reasoning is
refused" -- which made eight capable models look incapable. So reasoning suppression
goes only to a pinned endpoint that declares `reasoning` (one that declares none is not
a reasoning model: there is nothing to suppress), and the seed only where declared.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from .base import (
    RETRY_DEFAULTS,
    BackendError,
    ChatRequest,
    Reply,
    pinned_prices,
    served_elsewhere,
    served_record,
)
from .http import get_json, url_path
from .openai_compat import ROUTING_KEYS, OpenAICompatBackend, reasoning_returned
from .registry import register_backend
from .retry import read_with_retries


def endpoint_pin(ep: dict[str, Any]) -> dict[str, Any]:
    """What the run records about the endpoint it is pinned to (public listing fields)."""
    pricing = ep.get("pricing") or {}
    return {
        "provider_name": ep.get("provider_name"),
        "tag": ep.get("tag") or str(ep.get("provider_name", "")).lower(),
        "quantization": ep.get("quantization"),
        "context_length": ep.get("context_length"),
        "max_completion_tokens": ep.get("max_completion_tokens"),
        "supported_parameters": sorted(ep.get("supported_parameters") or []),
        "price_prompt_usd_per_token": _price(pricing.get("prompt")),
        "price_completion_usd_per_token": _price(pricing.get("completion")),
        "status": ep.get("status"),
    }


def declares(pin: dict[str, Any] | None, parameter: str) -> bool:
    """Whether the pinned endpoint lists `parameter` (unpinned: nothing is known)."""
    return parameter in ((pin or {}).get("supported_parameters") or [])


def wire_reasoning(cfg: dict[str, Any], pin: dict[str, Any] | None) -> dict[str, Any] | None:
    """The reasoning object the calls send: the configured one, to an endpoint that
    declares reasoning; None otherwise (docs/design.md §5)."""
    return cfg["reasoning"] if cfg["reasoning"] and declares(pin, "reasoning") else None


def _price(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _usage_cost(v: Any) -> Any:
    """usage.cost as the gateway reported it: a number (or a numeric string) as a float,
    anything else as given, so the ledger refuses it by name and counts the call at its
    worst case (read as None, "abc" would be charged at the listed price, unseen)."""
    if v is None or isinstance(v, bool):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


@register_backend
class OpenRouterBackend(OpenAICompatBackend):
    """The gateway: an OpenAI-compatible server plus endpoint listing and pinning."""

    kind = "openrouter"
    summary = "the hosted gateway, pinned"
    defaults = {
        "base_url": "https://openrouter.ai/api/v1", "api_key_env": "OPENROUTER_API_KEY",
        "provider": None, "quantization": None, "reasoning": {"effort": "none"},
        "require_parameters": True, "structured_output": "json_schema",
        "strict_schema": True, "extra_body": {}, "context_length": None,
        "timeout_s": 300.0, **RETRY_DEFAULTS,
    }
    required_keys = ("model_id",)
    slot_resource = "api_openrouter"
    lists_endpoints = True
    paid = True

    def __init__(self, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None):
        cfg = self.resolve_config(cfg)
        super().__init__(name, cfg, pin)
        self.cfg = cfg
        self.reasoning = wire_reasoning(cfg, pin)
        self.require_parameters = bool(cfg["require_parameters"])
        self.pin = pin
        self.seed_sent = declares(pin, "seed")

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        cfg = cls.resolve_config(cfg)
        return {
            "backend": cls.kind,
            "model": name,
            "model_id": cfg["model_id"] or name,
            "pin": (pin or {}).get("provider_name") or cfg["provider"],
            "pin_tag": (pin or {}).get("tag") or cfg["provider"],
            "quantization": (pin or {}).get("quantization") or cfg["quantization"],
            "allow_fallbacks": False,
            "require_parameters": bool(cfg["require_parameters"]),
            "reasoning": wire_reasoning(cfg, pin),
        }

    @classmethod
    def config_context_length(cls, cfg: dict[str, Any]) -> int | None:
        return None  # the endpoint listing says, once the probe pins one

    @classmethod
    def wire_facts(cls, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
        return {**super().wire_facts(cfg, pin), "seed_sent": declares(pin, "seed")}

    @classmethod
    def audit_prices(cls, probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
        return pinned_prices(probe)  # the pinned endpoint's, not a local server's none

    @classmethod
    def endpoint_pin(cls, endpoint: dict[str, Any]) -> dict[str, Any]:
        return endpoint_pin(endpoint)

    def listed_prices(self) -> tuple[float, float] | None:
        pp, pc, _ = pinned_prices(self.pin or {})
        return None if pp is None or pc is None else (pp, pc)

    def missing_key(self) -> str | None:
        if self._key:
            return None
        return f"no API key: the environment variable {self.key_env} is not set"

    def headers(self) -> dict[str, str]:
        problem = self.missing_key()
        if problem:
            raise BackendError("auth", problem, retryable=False, detail={"no_key": True})
        return {"Authorization": f"Bearer {self._key}", "X-OpenRouter-Title": "foldstudy"}

    # -- discovery (docs/design.md §4, gateway A5) ------------------------------------

    def list_endpoints(self) -> list[dict[str, Any]]:
        author_slug = self.model_id.split(":", 1)[0]
        body = get_json(self.session,
                        f"{self.base_url}/models/{url_path(author_slug)}/endpoints",
                        self.headers(), min(self.timeout_s, 60), self._key)
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        eps = data.get("endpoints")
        if not isinstance(eps, list):
            raise BackendError("malformed", "endpoint listing has no data.endpoints",
                               retryable=True)
        return eps

    def model_info(self) -> dict[str, Any] | None:
        body = get_json(self.session, f"{self.base_url}/models", self.headers(),
                        min(self.timeout_s, 60), self._key)
        for m in body.get("data") or []:
            if isinstance(m, dict) and m.get("id") == self.model_id:
                return m
        return None

    def pinned(self, pin: dict[str, Any]) -> OpenRouterBackend:
        """This backend pinned to one listed endpoint."""
        return OpenRouterBackend(self.name, {**self.cfg, "quantization": pin.get("quantization")},
                                 pin)

    # -- the call ------------------------------------------------------------------

    def routing_keys(self) -> tuple[str, ...]:
        return (*ROUTING_KEYS, "provider")

    def body(self, request: ChatRequest) -> dict[str, Any]:
        provider: dict[str, Any] = {"allow_fallbacks": False,
                                    "require_parameters": self.require_parameters}
        tag = self.identity["pin_tag"]
        if tag:
            provider["only"] = [tag]
            provider["order"] = [tag]
        if self.identity["quantization"]:
            provider["quantizations"] = [self.identity["quantization"]]
        body = {
            **super().body(request),
            "provider": provider,
            # Benchmarks disable middle-out compression explicitly (docs/design.md §4, gateway A1).
            "plugins": [{"id": "context-compression", "enabled": False}],
        }
        if not self.seed_sent:
            body.pop("seed", None)
        if self.reasoning:
            body["reasoning"] = self.reasoning
        return {k: v for k, v in body.items() if k not in self.omit}

    def with_reasoning_forced(self) -> OpenRouterBackend:
        """The paper's original request (§4.2): reasoning suppression on every call, the
        endpoint's declarations regardless. The probe sends it once, for the record."""
        other = copy.copy(self)
        other.reasoning = self.cfg["reasoning"] or {"effort": "none"}
        other.identity = {**self.identity, "reasoning": other.reasoning,
                          "reasoning_forced": True}
        return other

    def complete(self, request: ChatRequest) -> Reply:
        body, choice, finish, usage, latency = self.post(request)
        served = body.get("provider") or self._served_by(body.get("id"))
        details = usage.get("completion_tokens_details") or {}
        message = choice["message"]
        return Reply(
            text=message.get("content") or "",
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            token_count_method="exact" if "prompt_tokens" in usage else "estimate",
            latency_s=round(latency, 3),
            served_by=str(served or "unknown"),
            cost_usd=_usage_cost(usage.get("cost")),
            # the gateway answers with the slug it served (A4), compared with the one
            # asked; the provider beside it is the pin's check (endpoint_mismatch)
            served=served_record(self.model_id, body.get("model"),
                                 provider=str(served or "unknown")),
            raw={
                "id": body.get("id"),
                "model": body.get("model"),
                "native_finish_reason": choice.get("native_finish_reason"),
                "usage": usage,
                "reasoning_tokens": int(details.get("reasoning_tokens") or 0),
                "reasoning_returned": reasoning_returned(message),
                "pin": self.identity["pin"],
            },
        )

    def recheck(self, reply: Reply) -> Reply | None:
        """An endpoint the lookup could not name is looked up again (a free read); a
        reply another endpoint served is bought again, since the pinned endpoint is the
        study's (validity.py: endpoint_mismatch)."""
        if reply.served_by == "unknown":
            served = self._served_by(reply.raw.get("id"))
            if not served:
                return reply  # the lookup is still down: the row stays retryable
            reply = dataclasses.replace(
                reply, served_by=served,
                served={**reply.served, "provider": served} if reply.served else {})
        return None if served_elsewhere(reply.served_by, self.identity["pin"]) else reply

    def generation_cost(self, generation_id: str) -> float | None:
        """The generation record's total_cost (docs/design.md §4, gateway A4: GET
        /generation?id=), a free read with retries; None where the gateway has no record or
        cannot be reached."""
        data = self._generation(generation_id)
        return _price(data.get("total_cost")) if data else None

    def _served_by(self, generation_id: Any) -> str | None:
        """The serving provider from generation stats, when the reply body lacks it.

        A 404 is polled like a transient fault: the stats may not exist yet when the
        completion returns (docs/design.md §4, gateway A4, "poll with retry"), and giving up
        would leave the reply's endpoint unknown, its row invalid.
        """
        data = self._generation(generation_id)
        return data.get("provider_name") if data else None

    def _generation(self, generation_id: Any) -> dict[str, Any] | None:
        """The gateway's generation record (GET /generation?id=), None without one."""
        if not generation_id:
            return None

        def lookup() -> dict[str, Any]:
            try:
                return get_json(self.session, f"{self.base_url}/generation", self.headers(),
                                min(self.timeout_s, 30), self._key,
                                params={"id": generation_id})
            except BackendError as e:
                if e.kind != "not_found":
                    raise
                raise BackendError("not_ready", e.message, retryable=True,
                                   detail=e.detail) from e

        try:
            body = read_with_retries(lookup, self.retry_policy)
        except BackendError:
            return None
        return body.get("data") if isinstance(body.get("data"), dict) else {}
