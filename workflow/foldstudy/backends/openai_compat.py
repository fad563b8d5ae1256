"""Any OpenAI-compatible server: vLLM, llama.cpp's server, llama-cpp-python's, Ollama.

The servers differ in how they take a schema (reference B): vLLM and Ollama take
OpenAI's nested `json_schema`; llama.cpp's server and llama-cpp-python's take
`{"type": "json_object", "schema": ...}` (llama-cpp-python answers `json_schema` with
a validation error). The config names the style; the probe shows when it is wrong.
Token counts are the server's own (`usage`), recorded as exact.
"""

from __future__ import annotations

import copy
from typing import Any

import requests

from ..spec import grammar_schema
from .base import Backend, BackendError, ChatRequest, Reply
from .http import parse_choice, post_json, read_key
from .retry import RetryPolicy

STRUCTURED_STYLES = ("json_schema", "json_object_schema", "json_object")


def response_format(request: ChatRequest, style: str, strict: bool) -> dict[str, Any] | None:
    """The response_format a schema request sends in this style (None for plain arms).

    The decoder enforces the structure; the declared ceilings travel in the schema the
    model reads in its prompt and are checked on the reply (DESIGN §4).
    """
    if request.response_schema is None:
        return None
    schema = grammar_schema(request.response_schema)
    if style == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": request.schema_name, "strict": strict, "schema": schema}}
    if style == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_object"}


class Omittable:
    """A backend whose probe may remove wire parameters one at a time (DESIGN §5)."""

    identity: dict[str, Any]
    omit: frozenset[str] = frozenset()

    def without(self, params: frozenset[str] | set[str]) -> Backend:
        """A copy that leaves `params` off the wire; its identity (and cache key) says so."""
        other = copy.copy(self)
        other.omit = frozenset(params)
        other.identity = {**self.identity, "omit": sorted(other.omit)}
        return other  # type: ignore[return-value]

    def _strip(self, body: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in body.items() if k not in self.omit}


class OpenAICompatBackend(Omittable, Backend):
    def __init__(self, model: str, cfg: dict[str, Any]) -> None:
        self.base_url = str(cfg["base_url"]).rstrip("/")
        self.model_id = cfg.get("model_id") or model
        self.style = cfg.get("structured_output", "json_schema")
        self.strict = bool(cfg.get("strict_schema", True))
        self.extra_body = dict(cfg.get("extra_body") or {})
        self.timeout_s = float(cfg.get("timeout_s", 300))
        self.n_ctx = cfg.get("context_length")
        self._key = read_key(cfg.get("api_key_env"))
        self.retry_policy = RetryPolicy.from_model(cfg)
        self.session = requests.Session()
        # Never the URL (it may name a private host) and never the key.
        self.identity = {
            "backend": "openai",
            "model": model,
            "model_id": self.model_id,
            "server": cfg.get("server", "openai-compatible"),
            "structured_output": self.style,
            "extra_body": self.extra_body,
        }

    @property
    def token_count_method(self) -> str:
        return "exact"

    def body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        rf = response_format(request, self.style, self.strict)
        if rf is not None:
            body["response_format"] = rf
        body.update(self.extra_body)
        return self._strip(body)

    def wire_parameters(self, request: ChatRequest) -> list[str]:
        return [k for k in self.body(request) if k not in ("model", "messages")]

    def complete(self, request: ChatRequest) -> Reply:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        body, _, latency = post_json(self.session, f"{self.base_url}/chat/completions",
                                     self.body(request), headers, self.timeout_s, self._key)
        choice, finish = parse_choice(body, self._key)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        text = choice["message"].get("content") or ""
        if "prompt_tokens" not in usage:
            raise BackendError("malformed", "reply carries no usage token counts",
                               retryable=True)
        return Reply(
            text=text,
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            token_count_method="exact",
            latency_s=round(latency, 3),
            served_by=self.identity["server"],
            cost_usd=None,
            raw={"id": body.get("id"), "model": _model_name(body.get("model")), "usage": usage},
        )

    def close(self) -> None:
        self.session.close()


def _model_name(model: Any) -> str | None:
    """The served model's name without a local path (llama-cpp-python reports the file)."""
    if not isinstance(model, str):
        return None
    return model.replace("\\", "/").rsplit("/", 1)[-1]
