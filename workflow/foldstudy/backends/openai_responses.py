"""OpenAI's Responses API (`backend: openai_responses`), and its compact endpoint.

Direct (base_url https://api.openai.com/v1), or through a gateway where it serves this
API for the model (base_url its root, e.g. https://openrouter.ai/api/v1). What is sent,
and where it was learned (all read 2026-12-03):
- POST {base_url}/responses with `Authorization: Bearer $OPENAI_API_KEY`
  (https://platform.openai.com/docs/api-reference/responses/create; the stored client,
  openai-python 3.3.1, commit e43b422, types/responses/response_create_params.py).
  Body: `model`, `instructions` (the system prompt), `input` (the other messages as
  input messages, role and content), `max_output_tokens`, `temperature`, `store: false`
  (the stateless form the compaction guide shows), a schema as
  `text.format = {"type": "json_schema", "name", "schema", "strict"}`
  (response_format_text_json_schema_config_param.py), and `reasoning` only where the
  config sets one. No seed: the API takes none.
- The reply: `status` ("completed"; "incomplete" with `incomplete_details.reason`
  max_output_tokens, read as finish "length"; "failed" with an `error`, a provider fault,
  retried), `output` items (`message` items' `output_text` parts are the text;
  `reasoning` items mean the model reasoned), `usage.input_tokens`, `output_tokens`,
  `output_tokens_details.reasoning_tokens` (response_usage.py).
- Errors (https://platform.openai.com/docs/guides/error-codes): the envelope
  `{"error": {"message", "type", "param", "code"}}`; 429 with `retry-after` (or the
  finer `retry-after-ms`, which the client reads first) and 5xx are retried; a 429
  `insufficient_quota` and 400/401/403/404 are final; `context_length_exceeded` is a
  context overflow. All through the one classifier, http.classify_http_error.

Compaction: POST {base_url}/responses/compact with `model`, `instructions` and `input`
(https://platform.openai.com/docs/api-reference/responses/compact; guide
https://developers.openai.com/api/docs/guides/compaction, read in copies quoting it; the
client's CompactedResponse: "This is a list of all user messages, followed by a single
compaction item", whose `encrypted_content` cannot be read). The endpoint takes no
output budget or temperature; `output` is the whole compacted window, which the next
request sends first, unchanged, before its new items. The threshold form
(`context_management: [{"type": "compaction", "compact_threshold": N}]` on /responses)
is not sent: the explicit endpoint exists.

The compact request's `instructions` is the recall turn's system prompt, as on
Anthropic (carriers/native.py: the same system prompt as the rest of the
conversation). A native@ARM arm (config sweeps.X.native_with) sends ARM's prompt there
instead: the endpoint takes `model`, `input` and `instructions` ("A system (or
developer) message inserted into the model's context") and no separate summarization
prompt, so the prompt can reach the compaction only as that message, and the compaction
request's system prompt then differs from the recall turn's. No maximum length is
documented; the config check refuses a prompt over the model's configured
context_length.

A user message comes back whole, never compacted, so the chunk goes as an assistant
message (`{"role": "assistant", "content": chunk}`, the form the compact reference's
example input shows): the kind of item the endpoint compacts. A plain request that
continues from a compaction (a native arm's recall turn, ChatRequest.context) sends the
compacted window first in `input`, unchanged, then its own messages.
"""

from __future__ import annotations

from typing import Any

from .base import BackendError, ChatRequest, Compaction, Reply, served_record
from .direct import DIRECT_DEFAULTS, DirectBackend, chunk_of, conversation, usage_int, usage_of
from .registry import register_backend

COMPACT_ENDPOINT = "compact_endpoint"
COMPACT_PATH = "/responses/compact"


def output_text(output: list[dict[str, Any]]) -> str:
    """The text of a reply's message items (their output_text parts, in order)."""
    return "".join(str(part.get("text", "")) for item in output
                   if item.get("type") == "message"
                   for part in item.get("content") or [] if isinstance(part, dict)
                   and part.get("type") == "output_text")


def finish_of(body: dict[str, Any]) -> str:
    """The study's finish_reason of a Responses reply (rows count "stop" and "length")."""
    status = str(body.get("status") or "unknown")
    if status == "completed":
        return "stop"
    if status == "incomplete":
        reason = (body.get("incomplete_details") or {}).get("reason")
        return "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    return status


@register_backend
class OpenAIResponsesBackend(DirectBackend):
    kind = "openai_responses"
    summary = "OpenAI's Responses API (direct or through a gateway), with its compact endpoint"
    defaults = {
        "base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY",
        "reasoning": None, "strict_schema": True, **DIRECT_DEFAULTS,
    }
    slot_resource = "api_openai_responses"
    seed_sent = False
    provider_name = "openai"
    routing_keys = ("model", "input", "instructions", "store")
    native_compaction: str | None = COMPACT_ENDPOINT
    provider_hosts = ("api.openai.com",)
    compaction_beta: str | None = None
    chunk_presented_as = "assistant message"
    chunk_role = "assistant"
    identity_keys = ("reasoning",)

    # -- the request -----------------------------------------------------------------

    def path(self, request: ChatRequest) -> str:
        return COMPACT_PATH if request.native is not None else "/responses"

    def body(self, request: ChatRequest) -> dict[str, Any]:
        if request.native is not None:
            return self.compaction_body(request)
        body: dict[str, Any] = {**self.head(request, "instructions"),
                                "input": [*(request.context or []),
                                          *conversation(request)],
                                "max_output_tokens": request.max_tokens,
                                "temperature": request.temperature, "store": False}
        if request.response_schema is not None:
            body["text"] = {"format": {"type": "json_schema", "name": request.schema_name,
                                       "schema": request.response_schema,
                                       "strict": bool(self.cfg["strict_schema"])}}
        if self.cfg["reasoning"]:
            body["reasoning"] = self.cfg["reasoning"]
        return body

    def compaction_body(self, request: ChatRequest) -> dict[str, Any]:
        """The compact request: the previous window first, unchanged, then the chunk as
        an assistant message; `instructions` the arm's own where it sends any, else the
        system prompt."""
        native = request.native or {}
        previous = native.get("previous") or []
        head = self.head(request, "instructions")
        if native.get("instructions"):
            head["instructions"] = native["instructions"]
        return {**head,
                "input": [*previous, {"role": "assistant", "content": chunk_of(request)}]}

    def headers(self, request: ChatRequest) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key()}", "Content-Type": "application/json"}

    # -- the reply -------------------------------------------------------------------

    def reply_of(self, request: ChatRequest, body: dict[str, Any], latency: float) -> Reply:
        if body.get("status") == "failed" or (body.get("error") and not body.get("output")):
            err = body.get("error") if isinstance(body.get("error"), dict) else {}
            raise BackendError("provider_error", str(err.get("message") or "status failed"),
                               retryable=True, detail={"status": 200,
                                                       "error_type": str(err.get("code", ""))})
        output = body.get("output")
        if not isinstance(output, list) or not all(isinstance(i, dict) for i in output):
            raise BackendError("malformed", "reply has no output items", retryable=True)
        usage = usage_of(body)
        prompt, completion = usage_int(usage, "input_tokens"), usage_int(usage, "output_tokens")
        details = usage.get("output_tokens_details") or {}
        compacted = any(i.get("type") == "compaction" for i in output)
        if request.native is not None:
            finish = "compaction" if compacted else "no_compaction"
        else:
            finish = finish_of(body)
        return Reply(
            text="" if request.native is not None else output_text(output),
            finish_reason=finish, prompt_tokens=prompt, completion_tokens=completion,
            token_count_method="exact", latency_s=latency,
            served_by=str(body.get("provider") or self.provider_name),
            cost_usd=self.cost_of(prompt, completion),
            served=served_record(self.model_id, body.get("model")),
            raw={"id": body.get("id"), "model": body.get("model"), "usage": usage,
                 "status": body.get("status"),
                 "reasoning_tokens": usage_int(details, "reasoning_tokens")
                 if isinstance(details, dict) else 0,
                 # a reasoning item with text (an empty one is what a model that did
                 # not reason may still return; reasoning_tokens counts the rest)
                 "reasoning_returned": any(i.get("type") == "reasoning" and (
                     i.get("summary") or i.get("content")) for i in output),
                 # the compacted window, kept whole: the next request sends it first
                 "compaction": output if request.native is not None and compacted
                 else None})

    @classmethod
    def compaction_of(cls, reply: Reply) -> Compaction:
        window = reply.raw.get("compaction")
        failure = "" if isinstance(window, list) else \
            "the compact endpoint returned no compaction item"
        return Compaction(item=None if failure else window, text=None, opaque=True,
                          mechanism=COMPACT_ENDPOINT, beta=None, retained_tokens=None,
                          reply=reply, failure=failure)

    @classmethod
    def refused_parameter(cls, error: BackendError) -> str:
        if error.kind == "not_found" or "compact" in error.message.lower():
            return f"POST {COMPACT_PATH}"
        return ""
