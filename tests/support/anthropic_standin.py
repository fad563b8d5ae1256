"""A loopback stand-in for Anthropic's Messages API, with its on-demand compaction.

Allowed only because the provider cannot be reached from here. It follows the docs
foldstudy/backends/anthropic.py names (read 2026-12-03):
  POST /v1/messages  (https://platform.claude.com/docs/en/api/messages)
- x-api-key and anthropic-version are required (401 authentication_error, 400).
- Errors in the envelope {"type": "error", "error": {"type", "message"}, "request_id"}
  (https://platform.claude.com/docs/en/api/errors): queued faults answer 529
  overloaded_error, 429 rate_limit_error with `retry-after`, 500 api_error.
- A beta this account lacks (the `betas` it is built with) is the 400 of
  https://platform.claude.com/docs/en/api/beta-headers: "Unexpected value(s) `<beta>` for
  the `anthropic-beta` header. ...".
- On-demand compaction (https://platform.claude.com/docs/en/build-with-claude/
  compaction-on-demand): `compaction: {"type": "summarize"}` needs beta
  compact-2026-09-04 (else 400 "Extra inputs are not permitted") and cannot be combined
  with `context_management`; its one other field is `instructions`, a string replacing
  the default summarization prompt (the SDKs' BetaSummarizeCompaction). It answers
  stop_reason "compaction" and one signed `compaction` block whose `content` is the
  summary; top-level usage is 0 and the pass is in usage.iterations. A request carrying
  a block needs the beta, must send it first, and unchanged: a block whose signature does
  not match its content is a 400. A summary longer than max_tokens fails: stop_reason
  "max_tokens", no block.
The summary keeps identifiers with a seeded loss (provider_standin.compact), from the
previous block's content and the messages after it alike.

Two ways another model answers, each off unless asked for:
- `fallback_to` (with `fallback_when`): server-side fallback as it is documented
  (https://platform.claude.com/docs/en/build-with-claude/refusals-and-fallback, beta
  server-side-fallback-2026-06-01; anthropic-sdk-python's BetaFallbackBlock,
  BetaFallbackMessageIterationUsage, BetaMessageIterationUsage): the requested model
  declines and the fallback model answers in the same reply, which carries a `fallback`
  block `{"type": "fallback", "from": {"model": asked}, "to": {"model": fallback}}`
  before the fallback's text, and `usage.iterations` holding the declined hop's
  `message` entry and the serving hop's `fallback_message` entry (its `model` the
  fallback's); the top-level `model` names the fallback. `sticky=True` answers as a
  turn "routed directly by the sticky decision": no block, the `fallback_message`
  entry alone. Every plain request falls back, or those `fallback_when(body, seen)`
  picks, `seen` counting the times this very body came before (a study's repeats send
  byte-identical requests: `seen == 0` picks one of them, whichever came first).
  The real API falls back only when asked (`fallbacks`); this stand-in does it
  unasked, as an account or a proxy in between may.
- `serves`: a model id answered under another one (`{"claude-standin":
  "claude-standin-20260101"}`: the dated id of an alias; or another model entirely),
  as a gateway may serve a pinned id from another model.

And one way another party compacts: `polyfill=True` answers as a proxy that writes the
summary itself (LiteLLM's compaction polyfill, BerriAI/litellm PR 28868: its synthesized
block is `{"type": "compaction", "content": ...}`, typed `CompactionBlock` with those two
keys), so the block carries no signature, and a block sent back is taken unsigned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from .provider_standin import Call, LoopbackStandin, answer, compact, summary_text, tokens

ON_DEMAND_BETA = "compact-2026-09-04"
THRESHOLD_BETA = "compact-2026-01-12"
FAULT_TYPES = {529: ("overloaded_error", "Overloaded"),
               429: ("rate_limit_error", "Number of request tokens has exceeded your "
                                         "per-minute rate limit"),
               500: ("api_error", "Internal server error")}


def error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message},
            "request_id": "req_standin"}


def block_texts(content: Any) -> list[str]:
    """The text a message's content carries (a string, text blocks, compaction blocks)."""
    if isinstance(content, str):
        return [content]
    out = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") in ("text", "compaction"):
            out.append(str(b.get("text") or b.get("content") or ""))
    return out


class AnthropicStandin(LoopbackStandin):
    """The Messages API of one account: its key, the models it serves, its betas."""

    def __init__(self, models: tuple[str, ...] = ("claude-standin",),
                 key: str = "anthropic-standin-key",
                 betas: tuple[str, ...] = (THRESHOLD_BETA, ON_DEMAND_BETA),
                 seed: int = 0, loss: float = 0.0, fallback_to: str | None = None,
                 fallback_when: Callable[[dict[str, Any], int], bool] | None = None,
                 sticky: bool = False, serves: dict[str, str] | None = None,
                 polyfill: bool = False) -> None:
        super().__init__(seed, loss)
        self.models, self.key, self.betas = models, key, betas
        self.fallback_to, self.fallback_when, self.sticky = fallback_to, fallback_when, sticky
        self.serves = serves or {}
        self.polyfill = polyfill
        self.fell_back: list[dict[str, Any]] = []  # each request a fallback model answered
        self.seen: dict[str, int] = {}  # plain request body -> times it came

    def falls_back(self, body: dict[str, Any]) -> bool:
        """Does this plain request fall back (never a compaction)?"""
        if not self.fallback_to or "compaction" in body:
            return False
        text = json.dumps(body, sort_keys=True)
        with self.lock:
            seen = self.seen.get(text, 0)
            self.seen[text] = seen + 1
        return self.fallback_when is None or self.fallback_when(body, seen)

    def sign(self, content: Any) -> str:
        return hashlib.sha256(f"{self.key}:{content}".encode()).hexdigest()[:32]

    def handle(self, call: Call) -> tuple[int, dict[str, Any], dict[str, str]]:
        h, body = call.headers, call.body
        if call.path != "/v1/messages":
            return 404, error("not_found_error", f"Not found: {call.path}"), {}
        if h.get("x-api-key") != self.key:
            return 401, error("authentication_error", "invalid x-api-key"), {}
        if "anthropic-version" not in h:
            return 400, error("invalid_request_error", "anthropic-version: header is "
                              "required"), {}
        betas = [b.strip() for b in h.get("anthropic-beta", "").split(",") if b.strip()]
        if unknown := [b for b in betas if b not in self.betas]:
            return 400, error("invalid_request_error", f"Unexpected value(s) "
                              f"`{', '.join(unknown)}` for the `anthropic-beta` header. Please "
                              "consult our documentation at platform.claude.com/docs or try "
                              "again without the header."), {}
        if fault := self.next_fault():
            kind, message = FAULT_TYPES[fault["status"]]
            extra = {"retry-after": str(fault["retry_after"])} if "retry_after" in fault else {}
            return fault["status"], error(kind, message), extra
        if body.get("model") not in self.models:
            return 404, error("not_found_error", f"model: {body.get('model')}"), {}
        if problem := self.refusal(body, betas):
            return 400, error("invalid_request_error", problem), {}
        return 200, self.message(body), {}

    def refusal(self, body: dict[str, Any], betas: list[str]) -> str:
        """Why a well-addressed request is refused, or ""."""
        if "max_tokens" not in body:
            return "max_tokens: Field required"
        if "seed" in body:
            return "seed: Extra inputs are not permitted"
        if "compaction" in body and ON_DEMAND_BETA not in betas:
            return "compaction: Extra inputs are not permitted"
        if "compaction" in body and "context_management" in body:
            return "compaction cannot be combined with context_management"
        compaction = body.get("compaction")
        if compaction is not None:
            if not isinstance(compaction, dict) or compaction.get("type") != "summarize":
                return "compaction.type: Input should be 'summarize'"
            if extra := sorted(set(compaction) - {"type", "instructions"}):
                return f"compaction.{extra[0]}: Extra inputs are not permitted"
            if not isinstance(compaction.get("instructions", ""), str):
                return "compaction.instructions: Input should be a valid string"
        for i, m in enumerate(body.get("messages") or []):
            content = m.get("content") if isinstance(m, dict) else None
            for b in content if isinstance(content, list) else []:
                if not (isinstance(b, dict) and b.get("type") == "compaction"):
                    continue
                if ON_DEMAND_BETA not in betas:
                    return (f"messages.{i}.content.0.type: a compaction block needs the "
                            f"{ON_DEMAND_BETA} beta")
                if i != 0:
                    return f"messages.{i}: a compaction block must come first in messages"
                if not self.polyfill and b.get("signature") != self.sign(b.get("content")):
                    return "messages.0.content.0: the compaction block was changed"
        return ""

    def message(self, body: dict[str, Any]) -> dict[str, Any]:
        """The 200 reply: a compaction, or a plain message."""
        texts = [str(body.get("system") or "")] + [
            t for m in body.get("messages") or [] for t in block_texts(m.get("content"))]
        sent = "\n".join(texts)
        prompt = tokens(sent) + 4 * len(body.get("messages") or [])
        budget = int(body["max_tokens"])
        reply = {"id": f"msg_standin_{len(self.calls):04d}", "type": "message",
                 "role": "assistant", "model": self.serves.get(body["model"], body["model"]),
                 "stop_sequence": None}
        if "compaction" in body:
            summary = summary_text(compact(sent, self.seed, self.loss))
            out = tokens(summary)
            fits = out <= budget
            block = {"type": "compaction", "content": summary}
            if not self.polyfill:
                block["signature"] = self.sign(summary)
            content = [block] if fits else []
            return {**reply, "content": content,
                    "stop_reason": "compaction" if fits else "max_tokens",
                    "usage": {"input_tokens": 0, "output_tokens": 0,
                              "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                              "iterations": [{"type": "compaction", "input_tokens": prompt,
                                              "output_tokens": min(out, budget),
                                              "cache_creation_input_tokens": 0,
                                              "cache_read_input_tokens": 0}]}}
        fmt = (body.get("output_config") or {}).get("format") or {}
        text = answer(sent, fmt.get("schema") if fmt.get("type") == "json_schema" else None)
        out = tokens(text)
        if out > budget:
            text, out = text[: budget * 4], budget
        usage = {"input_tokens": prompt, "output_tokens": out,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if self.falls_back(body):
            with self.lock:
                self.fell_back.append(body)
            to = str(self.fallback_to)
            if not self.sticky:  # the declined hop ran: its boundary is marked
                content.insert(0, {"type": "fallback", "from": {"model": body["model"]},
                                   "to": {"model": to}})
            usage["iterations"] = [
                *([] if self.sticky else [{"type": "message", "model": body["model"],
                                           "input_tokens": prompt, "output_tokens": 0,
                                           "cache_creation_input_tokens": 0,
                                           "cache_read_input_tokens": 0}]),
                {"type": "fallback_message", "model": to, **usage}]
            reply["model"] = to
        return {**reply, "content": content,
                "stop_reason": "max_tokens" if out >= budget else "end_turn",
                "usage": usage}

