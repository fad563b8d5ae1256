"""A loopback stand-in for OpenAI's Responses API and its compact endpoint.

Allowed only because the provider cannot be reached from here. It follows the docs
foldstudy/backends/openai_responses.py names (read 2026-12-03):
  POST /v1/responses          (https://platform.openai.com/docs/api-reference/responses/create)
  POST /v1/responses/compact  (https://platform.openai.com/docs/api-reference/responses/compact;
                               https://developers.openai.com/api/docs/guides/compaction)
- `Authorization: Bearer <key>` (401 invalid_api_key otherwise).
- Errors in the envelope {"error": {"message", "type", "param", "code"}}
  (https://platform.openai.com/docs/guides/error-codes): queued faults answer 429
  rate_limit_exceeded with `retry-after` (and `retry-after-ms`), 429 insufficient_quota,
  500 server_error, 503 "overloaded"; a parameter the API does not take (`seed`) is a 400
  unknown_parameter naming it in `param`.
- A reply: `status` completed, or incomplete with incomplete_details.reason
  max_output_tokens; `output` message items of output_text parts; usage input_tokens,
  output_tokens (with output_tokens_details.reasoning_tokens), total_tokens.
- Compaction returns, as the client's CompactedResponse says, "all user messages,
  followed by a single compaction item": the user messages whole, then one item whose
  `encrypted_content` the client cannot read. Here it encodes the identifiers kept (with
  the seeded loss of provider_standin.compact) from every other item sent, a previous
  compaction item's included; this stand-in alone decodes it, on a later call.
  `compact_endpoint=False` plays a server without the endpoint (a gateway that serves
  /responses only): 404. `configuration_update=True` plays the newer window, where a
  `configuration_update` item ({"id", "type", "reasoning"}: "a configuration update that
  applies to subsequent responses until it is replaced", the API's OpenAPI document as
  the public generated clients carry it) follows the compaction item.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from .provider_standin import Call, LoopbackStandin, answer, compact, tokens

FAULTS = {429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests"),
          500: ("server_error", None, "The server had an error processing your request."),
          503: ("server_error", None, "The engine is currently overloaded, please try "
                                      "again later.")}


def error(message: str, kind: str = "invalid_request_error", code: str | None = None,
          param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def item_texts(item: dict[str, Any]) -> list[str]:
    """The text of one input item: a message's content (a string or its parts)."""
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [str(p.get("text", "")) for p in content or [] if isinstance(p, dict)]


class OpenAIResponsesStandin(LoopbackStandin):
    def __init__(self, models: tuple[str, ...] = ("gpt-standin",),
                 key: str = "openai-standin-key", seed: int = 0, loss: float = 0.0,
                 compact_endpoint: bool = True, configuration_update: bool = False) -> None:
        super().__init__(seed, loss)
        self.models, self.key, self.compact_endpoint = models, key, compact_endpoint
        self.configuration_update = configuration_update

    # The "encryption": opaque to the client, read back only here.
    def _mask(self, data: bytes) -> bytes:
        pad = hashlib.sha256(f"{self.key}:{self.seed}".encode()).digest()
        return bytes(b ^ pad[i % len(pad)] for i, b in enumerate(data))

    def encrypt(self, kept: list[str]) -> str:
        return "gAAAAB" + base64.urlsafe_b64encode(self._mask(json.dumps(kept).encode())
                                                   ).decode()

    def decrypt(self, content: str) -> list[str]:
        return json.loads(self._mask(base64.urlsafe_b64decode(content.removeprefix("gAAAAB"))))

    def handle(self, call: Call) -> tuple[int, dict[str, Any], dict[str, str]]:
        body = call.body
        if call.headers.get("authorization") != f"Bearer {self.key}":
            return 401, error("Incorrect API key provided.", code="invalid_api_key"), {}
        if call.path not in ("/v1/responses", "/v1/responses/compact") or (
                call.path.endswith("/compact") and not self.compact_endpoint):
            return 404, error(f"Invalid URL (POST {call.path})"), {}
        if fault := self.next_fault():
            return self.fault(fault)
        if body.get("model") not in self.models:
            return 404, error(f"The model `{body.get('model')}` does not exist or you do "
                              "not have access to it.", code="model_not_found"), {}
        for param in ("seed", *(("max_output_tokens", "temperature")
                                if call.path.endswith("/compact") else ())):
            if param in body:
                return 400, error(f"Unknown parameter: '{param}'.", code="unknown_parameter",
                                  param=param), {}
        if call.path.endswith("/compact"):
            return 200, self.compacted(body), {}
        return 200, self.response(body), {}

    def fault(self, fault: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        status = fault["status"]
        if fault.get("quota"):
            return 429, error("You exceeded your current quota, please check your plan and "
                              "billing details.", kind="insufficient_quota",
                              code="insufficient_quota"), {}
        kind, code, message = FAULTS[status]
        headers = {}
        if "retry_after" in fault:
            headers = {"retry-after": str(fault["retry_after"]),
                       "retry-after-ms": str(int(fault["retry_after"] * 1000))}
        return status, error(message, kind=kind, code=code), headers

    def sent_text(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """Everything a call sends as one text (compaction items decoded), and its user
        messages."""
        texts, users = [str(body.get("instructions") or "")], []
        items = body.get("input")
        for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
            if item.get("type") == "compaction":
                texts += self.decrypt(str(item.get("encrypted_content")))
                continue
            texts += item_texts(item)
            if item.get("role") == "user":
                users.append(item)
        return "\n".join(texts), users

    def usage(self, prompt: int, out: int) -> dict[str, Any]:
        return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + out}

    def compacted(self, body: dict[str, Any]) -> dict[str, Any]:
        sent, users = self.sent_text(body)
        # Kept whole: the user messages; compacted: everything else sent.
        whole = "\n".join(t for u in users for t in item_texts(u))
        kept = [t for t in compact(sent, self.seed, self.loss) if t not in whole]
        window = [{"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": t} for t in item_texts(u)]}
                  for u in users]
        encrypted = self.encrypt(kept)
        window.append({"id": f"cmp_standin_{len(self.calls):04d}", "type": "compaction",
                       "encrypted_content": encrypted})
        if self.configuration_update:
            window.append({"id": f"cfg_standin_{len(self.calls):04d}",
                           "type": "configuration_update", "reasoning": {"effort": "none"}})
        return {"id": f"resp_standin_{len(self.calls):04d}", "object": "response.compaction",
                "created_at": 1764720000, "output": window,
                "usage": self.usage(tokens(sent), tokens(encrypted))}

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        sent, _ = self.sent_text(body)
        fmt = (body.get("text") or {}).get("format") or {}
        text = answer(sent, fmt.get("schema") if fmt.get("type") == "json_schema" else None)
        out, budget = tokens(text), int(body.get("max_output_tokens") or 10**6)
        if out > budget:
            text, out = text[: budget * 4], budget
        done = out < budget
        return {"id": f"resp_standin_{len(self.calls):04d}", "object": "response",
                "created_at": 1764720000, "model": body["model"],
                "status": "completed" if done else "incomplete",
                "incomplete_details": None if done else {"reason": "max_output_tokens"},
                "output": [{"id": f"msg_standin_{len(self.calls):04d}", "type": "message",
                            "status": "completed" if done else "incomplete",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": text,
                                         "annotations": []}]}],
                "usage": self.usage(tokens(sent), out)}
