"""A backend added as a new one is: this module and its registration, nothing else.

tests/workflow/test_backend_plugin.py installs it as a plugin (an entry point in the group
foldstudy.backends) and runs a study on it through the real workflow. It answers
itself, with no model and no server: a reply is the request's last message cut short,
or, where a schema is asked for, every field filled from it.
"""

from __future__ import annotations

import json
from typing import Any

from foldstudy.backends.base import Backend, ChatRequest, Reply
from foldstudy.backends.registry import register_backend

REPLY_CHARS = 160


@register_backend
class StubBackend(Backend):
    kind = "stub"
    summary = "a test backend that answers itself"
    defaults = {"model_id": None}
    slot_resource = "stub_calls"

    def __init__(self, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> None:
        self.identity = self.describe(name, cfg, pin)

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        cfg = cls.resolve_config(cfg)
        return {"backend": cls.kind, "model": name, "model_id": cfg["model_id"] or name}

    def complete(self, request: ChatRequest) -> Reply:
        text = request.messages[-1]["content"][:REPLY_CHARS]
        if request.response_schema is not None:
            text = json.dumps(_filled(request.response_schema, text))
        return Reply(text=text, finish_reason="stop",
                     prompt_tokens=sum(self.count_tokens(m["content"])
                                       for m in request.messages),
                     completion_tokens=self.count_tokens(text),
                     token_count_method=self.token_count_method, latency_s=0.0,
                     served_by=self.kind, cost_usd=0.0)


def _filled(schema: dict[str, Any], text: str) -> dict[str, Any]:
    """Every field of an object schema: strings within their ceiling, lists empty."""
    out: dict[str, Any] = {}
    for key, prop in schema.get("properties", {}).items():
        if prop.get("type") == "array":
            out[key] = []
        else:
            out[key] = text[: min(40, prop.get("maxLength", 40))]
    return out
