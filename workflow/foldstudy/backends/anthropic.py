"""Anthropic's Messages API (`backend: anthropic`), and its on-demand compaction.

What is sent, and where it was learned (all read 2026-12-03):
- POST {base_url}/messages, base_url https://api.anthropic.com/v1. Body fields `model`,
  `max_tokens`, `system`, `messages`, `temperature`, and a schema as
  `output_config.format = {"type": "json_schema", "schema": ...}`: as the Messages API
  reference (https://platform.claude.com/docs/en/api/messages) and the stored client,
  anthropic-sdk-python 0.121.0 (commit 009b035, types/message_create_params.py,
  output_config_param.py), define them. No seed: the API takes none.
- Headers. The docs' copies (compaction pages, https://platform.claude.com/docs/en/api/
  versioning) send `x-api-key: $ANTHROPIC_API_KEY` and `anthropic-version: 2023-06-01`,
  and so does the stored client (`_api_key_auth` sends X-Api-Key, `default_headers`
  anthropic-version 2023-06-01; a bearer token goes only with an OAuth auth_token). A
  client sending `anthropic-version: 2026-10-21` with the key as a bearer token was not
  found in any source read here, so this backend sends what the docs and the client
  agree on: x-api-key and 2023-06-01 (config `anthropic_version` changes the version).
- Errors (https://platform.claude.com/docs/en/api/errors): the envelope
  `{"type": "error", "error": {"type", "message"}, "request_id"}`; 429 rate_limit_error
  with a `retry-after` header, 529 overloaded_error, 500 api_error: retried; 400
  invalid_request_error, 401, 403, 404: final. An unknown or unavailable beta is a 400
  invalid_request_error "Unexpected value(s) `<beta>` for the `anthropic-beta` header"
  (https://platform.claude.com/docs/en/api/beta-headers). All go through the one
  classifier, http.classify_http_error; "prompt is too long" is a context overflow.
- Usage: `input_tokens`, `output_tokens`, `cache_creation_input_tokens`,
  `cache_read_input_tokens`; with compaction, `usage.iterations` (one entry of type
  "compaction" per compaction pass). Bedrock's Compaction page
  (https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-compaction.html)
  says the top-level counts leave the compaction iteration out and the billed total is
  the sum over `iterations`, so a reply is counted and priced from that sum where it is
  there. No request sends cache_control, so every input token is priced at the input
  list price.

- Server-side fallback (https://platform.claude.com/docs/en/build-with-claude/
  refusals-and-fallback; anthropic-sdk-python's BetaFallbackBlock,
  BetaFallbackMessageIterationUsage and BetaMessageIterationUsage, read 2026-12-05):
  asked for with beta `server-side-fallback-2026-06-01` (or `-2026-07-01`) and a
  `fallbacks` field, a turn the requested model declines is answered by another model in
  the same reply, marked by a `fallback` content block (`from.model`, `to.model`) and a
  `usage.iterations` entry of type `fallback_message`; a turn "routed directly by the
  sticky decision" carries the iteration and no block. This backend never asks for it;
  each reply records its `model`, the blocks and the iteration types (Reply.served), so
  a fallback served anyway makes its row invalid (validity: served_by_other).

Compaction: two mechanisms exist, and one is usable at a fold's size.
- Threshold: `context_management.edits = [{"type": "compact_20260112", "trigger":
  {"type": "input_tokens", "value": N}}]` under beta `compact-2026-01-12`
  (https://platform.claude.com/docs/en/build-with-claude/compaction-threshold; Bedrock's
  page, and anthropic-sdk-python 0.121.0's BetaCompact20260112EditParam: "Defaults to
  150000 input tokens"). Its trigger must be at least 50,000 input tokens, so a fold's
  request never reaches it. Not sent.
- On demand, under beta `compact-2026-09-04`
  (https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand and
  .../compaction-keep-recent-turns; release notes of 2026-09-14). The page itself was
  not in the corpus; its rules were read in the keep-recent-turns page, the release
  notes and third-party copies quoting it: a request with the top-level
  `"compaction": {"type": "summarize"}` answers `stop_reason: "compaction"` and one
  signed `compaction` block with a readable `content`; the next request sends that block
  first, as an assistant message, unchanged, in place of the messages it summarized,
  and every request carrying it sends the beta header; `compaction` cannot be combined
  with `context_management`; on-demand usage is reported in `usage.iterations`. The
  anthropic-sdk-python snapshot read (2026-08-07) predates this beta and has no type
  for it, so the block is kept and replayed as the dict the API returned, whatever
  fields it has (`content`, `signature`, `encrypted_content`).
The chunk goes as a user message: the endpoint summarizes every message it is sent.
A plain request that continues from a compaction (a native arm's recall turn,
ChatRequest.context) sends the block first in the same way, under the beta header.

The system prompt of a compaction request is the recall turn's (carriers/
native.py): the on-demand page asks for "the same system prompt and tools as the rest of
the conversation". A native@ARM arm (config sweeps.X.native_with) sends ARM's prompt as
`"compaction": {"type": "summarize", "instructions": PROMPT}`, beside that same system
prompt: the SDK's compaction config documents `instructions` as replacing "the server's
default summarization prompt for this request" (anthropic-sdk-ruby's
BetaSummarizeCompaction and BetaCompactionConfig, rubydoc.info; the Python SDK's compact
edit: "Additional instructions for summarization"). Neither says how long instructions
may be; the config check refuses a prompt over the model's configured context_length.
"""

from __future__ import annotations

from typing import Any

from .base import BackendError, ChatRequest, Compaction, Reply, served_record
from .direct import DIRECT_DEFAULTS, DirectBackend, chunk_of, conversation, usage_int, usage_of
from .registry import register_backend

ON_DEMAND = "on_demand"
ON_DEMAND_BETA = "compact-2026-09-04"
# stop_reason -> the study's finish_reason (rows count "stop" and "length")
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def billed_tokens(usage: dict[str, Any]) -> tuple[int, int]:
    """(input, output) tokens a reply is billed for: the sum over `usage.iterations`
    where the reply has them (the top level leaves compaction out), else the top level;
    cache writes and reads count as input."""
    iterations = usage.get("iterations")
    parts = [i for i in iterations if isinstance(i, dict)] if isinstance(iterations, list) \
        and iterations else [usage]
    return (sum(usage_int(p, k) for p in parts for k in INPUT_KEYS),
            sum(usage_int(p, "output_tokens") for p in parts))


def compaction_tokens(usage: dict[str, Any]) -> int | None:
    """The output tokens of the compaction pass (the summary's own size), where the
    reply reports the pass; None where it does not."""
    iterations = usage.get("iterations")
    if not isinstance(iterations, list):
        return None
    passes = [i for i in iterations if isinstance(i, dict) and i.get("type") == "compaction"]
    return sum(usage_int(i, "output_tokens") for i in passes) if passes else None


def carries_compaction(messages: list[dict[str, Any]]) -> bool:
    """Does a message carry a compaction block (so the request needs the beta)?"""
    return any(isinstance(m.get("content"), list) and any(
        isinstance(b, dict) and b.get("type") == "compaction" for b in m["content"])
        for m in messages)


def served_of(asked: str, body: dict[str, Any], content: list[dict[str, Any]],
              usage: dict[str, Any]) -> dict[str, Any]:
    """What served this reply: the response's `model`, each `fallback` block's hop
    ({"from": model, "to": model}) and the `usage.iterations` types. This backend never
    asks for a fallback, so any of them naming another model is a fallback it was
    served anyway (validity: served_by_other)."""
    hops = [{"from": (b.get("from") or {}).get("model"), "to": (b.get("to") or {}).get("model")}
            for b in content if b.get("type") == "fallback"]
    iterations = usage.get("iterations")
    types = [str(i.get("type")) for i in iterations if isinstance(i, dict)] \
        if isinstance(iterations, list) else []
    return served_record(asked, body.get("model"), fallbacks=hops, iterations=types)


@register_backend
class AnthropicBackend(DirectBackend):
    kind = "anthropic"
    summary = "Anthropic's Messages API, with its on-demand compaction"
    defaults = {
        "base_url": "https://api.anthropic.com/v1", "api_key_env": "ANTHROPIC_API_KEY",
        "anthropic_version": "2023-06-01", **DIRECT_DEFAULTS,
    }
    slot_resource = "api_anthropic"
    seed_sent = False
    provider_name = "anthropic"
    routing_keys = ("model", "messages", "system", "max_tokens")  # max_tokens is required
    native_compaction: str | None = ON_DEMAND
    compaction_beta: str | None = ON_DEMAND_BETA
    provider_hosts = ("api.anthropic.com",)
    chunk_presented_as = "user message"
    chunk_role = "user"
    identity_keys = ("anthropic_version",)

    # -- the request -----------------------------------------------------------------

    def path(self, request: ChatRequest) -> str:
        return "/messages"

    def body(self, request: ChatRequest) -> dict[str, Any]:
        if request.native is not None:
            return self.compaction_body(request)
        body: dict[str, Any] = {**self.head(request, "system"),
                                "max_tokens": request.max_tokens,
                                "messages": [*self.replayed(request.context),
                                             *conversation(request)],
                                "temperature": request.temperature}
        if request.response_schema is not None:
            body["output_config"] = {"format": {"type": "json_schema",
                                                "schema": request.response_schema}}
        return body

    @staticmethod
    def replayed(block: Any) -> list[dict[str, Any]]:
        """A compaction block as the next request sends it: first, as an assistant
        message holding the block alone, unchanged (none: no message)."""
        return [{"role": "assistant", "content": [block]}] if block else []

    def compaction_body(self, request: ChatRequest) -> dict[str, Any]:
        """The on-demand compaction request: the previous block first (an assistant
        message, unchanged), the chunk as a user message, and `compaction`, with the
        arm's `instructions` where it sends any (the system prompt stays the
        conversation's)."""
        native = request.native or {}
        messages = self.replayed(native.get("previous"))
        messages.append({"role": "user", "content": chunk_of(request)})
        compaction: dict[str, Any] = {"type": "summarize"}
        if native.get("instructions"):
            compaction["instructions"] = native["instructions"]
        return {**self.head(request, "system"), "max_tokens": request.max_tokens,
                "messages": messages, "temperature": request.temperature,
                "compaction": compaction}

    def headers(self, request: ChatRequest) -> dict[str, str]:
        out = {"x-api-key": self.key(), "anthropic-version": self.cfg["anthropic_version"],
               "content-type": "application/json"}
        if request.native is not None or carries_compaction(self.body(request)["messages"]):
            out["anthropic-beta"] = ON_DEMAND_BETA
        return out

    def wire_parameters(self, request: ChatRequest) -> list[str]:
        params = super().wire_parameters(request)
        return [*params, "anthropic-beta"] if request.native is not None else params

    # -- the reply -------------------------------------------------------------------

    def reply_of(self, request: ChatRequest, body: dict[str, Any], latency: float) -> Reply:
        content = body.get("content")
        if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
            raise BackendError("malformed", "reply has no content blocks", retryable=True)
        usage = usage_of(body)
        prompt, completion = billed_tokens(usage)
        stop = str(body.get("stop_reason") or "unknown")
        blocks = [b for b in content if b.get("type") == "compaction"]
        return Reply(
            served=served_of(self.model_id, body, content, usage),
            text="".join(str(b.get("text", "")) for b in content if b.get("type") == "text"),
            finish_reason=FINISH.get(stop, stop),
            prompt_tokens=prompt, completion_tokens=completion, token_count_method="exact",
            latency_s=latency, served_by=self.provider_name,
            cost_usd=self.cost_of(prompt, completion),
            raw={"id": body.get("id"), "model": body.get("model"), "usage": usage,
                 "stop_reason": stop,
                 "reasoning_returned": any(b.get("type") in ("thinking", "redacted_thinking")
                                           for b in content),
                 # the signed block, kept whole: the next request sends it unchanged
                 "compaction": blocks[0] if blocks else None})

    @classmethod
    def compaction_of(cls, reply: Reply) -> Compaction:
        block = reply.raw.get("compaction")
        failure = ""
        if reply.finish_reason != "compaction" or not isinstance(block, dict):
            failure = f"stop_reason {reply.raw.get('stop_reason')!r} and no compaction block"
        elif not isinstance(block.get("content"), str) or not block["content"]:
            failure = "the compaction block's content is null (the summary failed)"
        return Compaction(
            item=None if failure else block, text=None if failure else block["content"],
            opaque=False, mechanism=ON_DEMAND, beta=ON_DEMAND_BETA,
            retained_tokens=None if failure else compaction_tokens(reply.raw.get("usage", {})),
            reply=reply, failure=failure)

    @classmethod
    def refused_parameter(cls, error: BackendError) -> str:
        lowered = error.message.lower()
        if "anthropic-beta" in lowered or ON_DEMAND_BETA in lowered:
            return f"anthropic-beta: {ON_DEMAND_BETA}"
        if "compaction" in lowered:
            return "compaction"
        return ""
