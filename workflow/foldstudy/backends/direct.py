"""What the two providers' own APIs share: a key from the environment, prices from the
config, one POST through the one classifier, and the probe's removable parameters.

`anthropic` (Messages) and `openai_responses` (Responses) are paid, direct endpoints with
no listing to pin and no price to read, so the price a call is held to and settled at is
the provider's list price written in the model's config (`price_prompt_usd_per_mtok`,
`price_completion_usd_per_mtok`; docs/design.md §6, Spend: "settles to the reported cost").
Neither API reports a cost, only usage, so every reply is priced from its own usage fields at
those prices (Reply.cost_usd), and the ledger learns a ratio of 1.

Each provider is one small subclass that speaks its wire format (its `body`, `headers`,
`path` and `reply_of`); this class holds everything else, once.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from .base import RETRY_DEFAULTS, BackendError, ChatRequest, Reply
from .http import HTTPBackend, post_json

# Model keys both providers read with a default; model_id and the two prices have none
# (required_keys); each subclass adds its own.
DIRECT_DEFAULTS: dict[str, Any] = {"context_length": None, "timeout_s": 300.0,
                                   **RETRY_DEFAULTS}
PER_MTOK = 1e6


def system_text(request: ChatRequest) -> str:
    """The request's system messages as the one system text both APIs take apart from
    the conversation (Anthropic's `system`, OpenAI's `instructions`)."""
    return "\n\n".join(str(m["content"]) for m in request.messages if m["role"] == "system")


def conversation(request: ChatRequest) -> list[dict[str, Any]]:
    """The request's other messages, role and content as written."""
    return [{"role": m["role"], "content": m["content"]} for m in request.messages
            if m["role"] != "system"]


def chunk_of(request: ChatRequest) -> str:
    """The chunk of a compaction request (its last non-system message)."""
    return str(conversation(request)[-1]["content"])


class DirectBackend(HTTPBackend):
    """A provider's own API: paid, keyed from the environment, priced from the config."""

    required_keys = ("model_id", "price_prompt_usd_per_mtok", "price_completion_usd_per_mtok")
    paid = True
    #: what answered, recorded as Reply.served_by (there is no pin to compare it with)
    provider_name: ClassVar[str] = ""
    #: body keys that route or frame a request: the probe never removes them
    routing_keys: ClassVar[tuple[str, ...]] = ("model",)
    #: the config keys that change what is sent, beside the model: in the identity, so
    #: in every cache key
    identity_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> None:
        self.cfg = self.resolve_config(cfg)
        self.open(name, self.cfg, pin)

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        # Never the URL (it may name a private host) and never the key.
        cfg = cls.resolve_config(cfg)
        return {"backend": cls.kind, "model": name, "model_id": cfg["model_id"],
                **{k: cfg[k] for k in cls.identity_keys}}

    @classmethod
    def audit_prices(cls, probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
        """The list prices the probe recorded from the model's config (the audit sees the
        probe record only)."""
        pp = probe.get("price_prompt_usd_per_token")
        pc = probe.get("price_completion_usd_per_token")
        if pp is not None and pc is not None:
            return pp, pc, "list price in the config"
        return pp, pc, "unknown: run the probe"

    def listed_prices(self) -> tuple[float, float] | None:
        pp, pc = (self.cfg.get("price_prompt_usd_per_mtok"),
                  self.cfg.get("price_completion_usd_per_mtok"))
        return None if pp is None or pc is None else (pp / PER_MTOK, pc / PER_MTOK)

    def cost_of(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """A reply's cost from its usage at the list prices (neither API reports one)."""
        prices = self.listed_prices()
        if prices is None:
            return None
        return prompt_tokens * prices[0] + completion_tokens * prices[1]

    def missing_key(self) -> str | None:
        if self._key:
            return None
        return f"no API key: the environment variable {self.key_env} is not set"

    def key(self) -> str:
        """The key, or the refusal a call without one gets before anything is sent."""
        problem = self.missing_key()
        if problem:
            raise BackendError("auth", problem, retryable=False, detail={"no_key": True})
        return str(self._key)

    # -- the request -----------------------------------------------------------------

    @abstractmethod
    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The exact JSON body this request sends (before `omit`)."""

    @abstractmethod
    def headers(self, request: ChatRequest) -> dict[str, str]:
        """The headers this request sends, the key included (before `omit`)."""

    @abstractmethod
    def path(self, request: ChatRequest) -> str:
        """The endpoint path under base_url."""

    @abstractmethod
    def reply_of(self, request: ChatRequest, body: dict[str, Any], latency: float) -> Reply:
        """The recorded reply of one answered call."""

    def wire_body(self, request: ChatRequest) -> dict[str, Any] | None:
        return {k: v for k, v in self.body(request).items() if k not in self.omit}

    def wire_headers(self, request: ChatRequest) -> dict[str, str]:
        return {k: v for k, v in self.headers(request).items() if k not in self.omit}

    def wire_parameters(self, request: ChatRequest) -> list[str]:
        """Body keys (and, in a subclass, headers) the probe may leave off one at a time:
        `without` drops either kind."""
        return [k for k in self.body(request) if k not in self.routing_keys]

    def head(self, request: ChatRequest, system_key: str) -> dict[str, Any]:
        """A body's first keys: the model, and the system prompt under the API's name for
        it (left out when the request has none)."""
        system = system_text(request)
        return {"model": self.model_id, **({system_key: system} if system else {})}

    @classmethod
    def compaction_request(cls, previous: Any, chunk: str, system_prompt: str,
                           max_tokens: int, temperature: float,
                           instructions: str | None = None) -> ChatRequest:
        """The system prompt and the chunk as messages (the subclass's body puts the
        chunk on the wire as the item its endpoint compacts), and `native`: the
        mechanism, its beta, the previous item and the instructions where there are
        any, so the cache key holds them all (a request without instructions keys as
        it did before they existed)."""
        messages = ({"role": "system", "content": system_prompt},) if system_prompt else ()
        native = {"mechanism": cls.native_compaction, "beta": cls.compaction_beta,
                  "previous": previous}
        return ChatRequest(messages=(*messages, {"role": "user", "content": chunk}),
                           max_tokens=max_tokens, temperature=temperature,
                           native={**native, **({"instructions": instructions}
                                                if instructions else {})})

    def complete(self, request: ChatRequest) -> Reply:
        body, _, latency = post_json(self.session, f"{self.base_url}{self.path(request)}",
                                     self.wire_body(request) or {},
                                     self.wire_headers(request), self.timeout_s, self._key)
        return self.reply_of(request, body, round(latency, 3))


def usage_of(body: dict[str, Any]) -> dict[str, Any]:
    """A reply's usage object; a reply without one is malformed (retried): a call is
    never settled at zero tokens for want of its counts."""
    usage = body.get("usage")
    if not isinstance(usage, dict):
        raise BackendError("malformed", "reply carries no usage token counts", retryable=True)
    return usage


def usage_int(usage: dict[str, Any], key: str) -> int:
    """One usage count as an int (absent or null: 0); a count that is not a number is a
    malformed reply, retried, never read as zero."""
    v = usage.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise BackendError("malformed", f"usage.{key} is {v!r}, not a count", retryable=True)
    return int(v)
