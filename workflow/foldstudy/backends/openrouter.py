"""The hosted gateway (OpenRouter) over HTTP with `requests`, pinned to one endpoint.

One model has several endpoints that differ in quantization, context and whether they
honour a strict schema (paper §3.4), so an unpinned sweep silently varies the
treatment. Every call therefore names one provider with fallbacks off and
require_parameters on (reference A2), and the provider that actually served it is
recorded and checked against the pin by the validity rule (validity.py compares
identity["pin"] with Reply.served_by).
"""

from __future__ import annotations

from typing import Any

import requests

from .base import Backend, BackendError, ChatRequest, Reply
from .http import get_json, parse_choice, post_json, read_key
from .openai_compat import Omittable, response_format
from .retry import RetryPolicy

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_KEY_ENV = "OPENROUTER_API_KEY"
ROUTING_KEYS = ("model", "messages", "provider")


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


def _price(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class OpenRouterBackend(Omittable, Backend):
    def __init__(self, model: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None):
        self.model = model
        self.model_id = cfg.get("model_id") or model
        self.base_url = str(cfg.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
        self.key_env = cfg.get("api_key_env") or DEFAULT_KEY_ENV
        self._key = read_key(self.key_env)
        self.timeout_s = float(cfg.get("timeout_s", 300))
        self.reasoning = cfg.get("reasoning", {"effort": "none"})
        self.require_parameters = bool(cfg.get("require_parameters", True))
        self.strict = bool(cfg.get("strict_schema", True))
        self.quantization = cfg.get("quantization")
        self.retry_policy = RetryPolicy.from_model(cfg)
        self.session = requests.Session()
        self.pin = pin
        self.identity = {
            "backend": "openrouter",
            "model": model,
            "model_id": self.model_id,
            "pin": (pin or {}).get("provider_name") or cfg.get("provider"),
            "pin_tag": (pin or {}).get("tag") or cfg.get("provider"),
            "quantization": (pin or {}).get("quantization") or self.quantization,
            "allow_fallbacks": False,
            "require_parameters": self.require_parameters,
            "reasoning": self.reasoning,
        }

    @property
    def has_key(self) -> bool:
        return self._key is not None

    @property
    def token_count_method(self) -> str:
        return "exact"  # usage counts come from the model's native tokenizer (reference A4)

    def _headers(self) -> dict[str, str]:
        if not self._key:
            raise BackendError("auth", f"no API key: set the environment variable "
                               f"{self.key_env}", retryable=False, detail={"no_key": True})
        return {"Authorization": f"Bearer {self._key}", "X-OpenRouter-Title": "foldstudy"}

    # -- discovery (reference A5) --------------------------------------------------

    def list_endpoints(self) -> list[dict[str, Any]]:
        author_slug = self.model_id.split(":", 1)[0]
        body = get_json(self.session, f"{self.base_url}/models/{author_slug}/endpoints",
                        self._headers(), min(self.timeout_s, 60), self._key)
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        eps = data.get("endpoints")
        if not isinstance(eps, list):
            raise BackendError("malformed", "endpoint listing has no data.endpoints",
                               retryable=True)
        return eps

    def model_info(self) -> dict[str, Any] | None:
        body = get_json(self.session, f"{self.base_url}/models", self._headers(),
                        min(self.timeout_s, 60), self._key)
        for m in body.get("data") or []:
            if isinstance(m, dict) and m.get("id") == self.model_id:
                return m
        return None

    def pinned(self, pin: dict[str, Any]) -> OpenRouterBackend:
        """This backend pinned to one listed endpoint."""
        cfg = {"model_id": self.model_id, "base_url": self.base_url,
               "api_key_env": self.key_env, "timeout_s": self.timeout_s,
               "reasoning": self.reasoning, "require_parameters": self.require_parameters,
               "strict_schema": self.strict, "quantization": pin.get("quantization"),
               "max_attempts": self.retry_policy.max_attempts,
               "retry_initial_wait_s": self.retry_policy.initial_wait_s,
               "retry_max_wait_s": self.retry_policy.max_wait_s}
        return OpenRouterBackend(self.model, cfg, pin)

    # -- the call ------------------------------------------------------------------

    def body(self, request: ChatRequest) -> dict[str, Any]:
        provider: dict[str, Any] = {"allow_fallbacks": False,
                                    "require_parameters": self.require_parameters}
        tag = self.identity["pin_tag"]
        if tag:
            provider["only"] = [tag]
            provider["order"] = [tag]
        if self.identity["quantization"]:
            provider["quantizations"] = [self.identity["quantization"]]
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "provider": provider,
            # Benchmarks disable middle-out compression explicitly (reference A1).
            "plugins": [{"id": "context-compression", "enabled": False}],
        }
        if request.seed is not None:
            body["seed"] = request.seed
        rf = response_format(request, "json_schema", self.strict)
        if rf is not None:
            body["response_format"] = rf
        if self.reasoning:
            body["reasoning"] = self.reasoning
        return self._strip(body)

    def wire_parameters(self, request: ChatRequest) -> list[str]:
        return [k for k in self.body(request) if k not in ROUTING_KEYS]

    def complete(self, request: ChatRequest) -> Reply:
        headers = self._headers()
        body, resp_headers, latency = post_json(
            self.session, f"{self.base_url}/chat/completions", self.body(request), headers,
            self.timeout_s, self._key)
        choice, finish = parse_choice(body, self._key)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
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
            cost_usd=_price(usage.get("cost")),
            raw={
                "id": body.get("id"),
                "model": body.get("model"),
                "native_finish_reason": choice.get("native_finish_reason"),
                "usage": usage,
                "reasoning_tokens": int(details.get("reasoning_tokens") or 0),
                "reasoning_returned": bool(message.get("reasoning")),
                "pin": self.identity["pin"],
            },
        )

    def _served_by(self, generation_id: Any) -> str | None:
        """The serving provider from generation stats, when the reply body lacks it."""
        if not generation_id:
            return None
        try:
            body = get_json(self.session, f"{self.base_url}/generation", self._headers(),
                            min(self.timeout_s, 30), self._key, params={"id": generation_id})
        except BackendError:
            return None
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        return data.get("provider_name")

    def close(self) -> None:
        self.session.close()
