"""Any OpenAI-compatible server: vLLM, llama.cpp's server, llama-cpp-python's, Ollama.

The servers differ in how they take a schema (reference B): vLLM and Ollama take
OpenAI's nested `json_schema`; llama.cpp's server and llama-cpp-python's take
`{"type": "json_object", "schema": ...}` (llama-cpp-python answers `json_schema` with
a validation error). The config names the style; the probe shows when it is wrong.
Token counts are the server's own (`usage`), recorded as exact.
"""

from __future__ import annotations

from typing import Any

from .base import (
    RETRY_DEFAULTS,
    BackendError,
    ChatRequest,
    Reply,
    chat_body,
    served_record,
)
from .http import HTTPBackend, parse_choice, post_json
from .registry import register_backend

# Keys that route a request rather than parameterise it: never removed by the probe.
ROUTING_KEYS = ("model", "messages")


@register_backend
class OpenAICompatBackend(HTTPBackend):
    kind = "openai"
    summary = "any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama)"
    defaults = {
        "model_id": None, "api_key_env": None, "server": "openai-compatible",
        "structured_output": "json_schema", "strict_schema": True, "extra_body": {},
        "context_length": None, "timeout_s": 300.0, **RETRY_DEFAULTS,
    }
    required_keys = ("base_url",)
    slot_resource = "api_openai"

    def __init__(self, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> None:
        cfg = self.resolve_config(cfg)
        self.open(name, cfg, pin)
        self.style = cfg["structured_output"]
        self.strict = bool(cfg["strict_schema"])
        self.extra_body = dict(cfg["extra_body"])

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        # Never the URL (it may name a private host) and never the key.
        cfg = cls.resolve_config(cfg)
        return {
            "backend": cls.kind,
            "model": name,
            "model_id": cfg["model_id"] or name,
            "server": cfg["server"],
            "structured_output": cfg["structured_output"],
            "extra_body": dict(cfg["extra_body"]),
        }

    @classmethod
    def audit_prices(cls, probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
        pp = probe.get("price_prompt_usd_per_token")
        pp = pc = 0.0 if pp is None else pp
        return pp, pc, "local server (no charge)"

    # -- the request ---------------------------------------------------------------

    def body(self, request: ChatRequest) -> dict[str, Any]:
        # extra_body first: the study's own fields always win (the config check refuses
        # an extra_body naming one, STUDY_FIXED_FIELDS), so what is sent is what is keyed.
        body = {**self.extra_body, "model": self.model_id,
                **chat_body(request, self.style, self.strict)}
        return {k: v for k, v in body.items() if k not in self.omit}

    def wire_body(self, request: ChatRequest) -> dict[str, Any] | None:
        return self.body(request)

    def wire_parameters(self, request: ChatRequest) -> list[str]:
        return [k for k in self.body(request) if k not in self.routing_keys()]

    def routing_keys(self) -> tuple[str, ...]:
        return ROUTING_KEYS

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def post(self, request: ChatRequest) -> tuple[dict[str, Any], dict[str, Any], str,
                                                   dict[str, Any], float]:
        """Send one chat completion: (body, choice, finish_reason, usage, latency_s)."""
        body, _, latency = post_json(self.session, f"{self.base_url}/chat/completions",
                                     self.body(request), self.headers(), self.timeout_s,
                                     self._key)
        choice, finish = parse_choice(body, self._key)
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return body, choice, finish, usage, latency

    def complete(self, request: ChatRequest) -> Reply:
        body, choice, finish, usage, latency = self.post(request)
        if "prompt_tokens" not in usage:
            raise BackendError("malformed", "reply carries no usage token counts",
                               retryable=True)
        message = choice["message"]
        text = message.get("content") or ""
        return Reply(
            text=text,
            finish_reason=finish,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            token_count_method="exact",
            latency_s=round(latency, 3),
            served_by=self.identity["server"],
            cost_usd=None,
            # recorded, not judged: a local server names what it loaded (llama.cpp's
            # server its file, whatever was asked), not the model it was asked for
            served=served_record(self.model_id, _model_name(body.get("model")), judged=False),
            raw={"id": body.get("id"), "model": _model_name(body.get("model")), "usage": usage,
                 # Qwen3.x on vLLM thinks unless the chat template is told not to
                 # (chat_template_kwargs: {enable_thinking: false}); the probe checks.
                 "reasoning_returned": reasoning_returned(message)},
        )



def reasoning_returned(message: dict[str, Any]) -> bool:
    """Whether a reply carries reasoning text: a reasoning field, or a <think> block."""
    content = message.get("content") or ""
    return bool(message.get("reasoning_content") or message.get("reasoning")
                or "<think>" in content)


def _model_name(model: Any) -> str | None:
    """The served model's name without a local path (llama-cpp-python reports the file)."""
    if not isinstance(model, str):
        return None
    return model.replace("\\", "/").rsplit("/", 1)[-1]
