"""One backend interface: a chat request in, a recorded reply out.

Retry, caching and recording wrap this interface once (see store.py and call.py), never
inside a provider, so every provider is a small class that only speaks its wire format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

CHARS_PER_TOKEN_ESTIMATE = 4.0


@dataclass(frozen=True)
class ChatRequest:
    """The request shape a fold or recall turn sends; fixed per comparison."""

    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float
    seed: int | None = None
    # The full response schema (ceilings included); a provider decides how to enforce it.
    response_schema: dict[str, Any] | None = None
    schema_name: str = "carrier"

    def canonical(self) -> dict[str, Any]:
        d = asdict(self)
        d["messages"] = [dict(m) for m in self.messages]
        return d


@dataclass
class Reply:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    token_count_method: str  # "exact" (the model's tokenizer or server) or "estimate"
    latency_s: float
    served_by: str
    cost_usd: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        return cls(**d)


class BackendError(Exception):
    """A call that produced no usable reply.

    kind names the class of failure (transport, rate_limited, server, auth, ...);
    retryable says whether sending the same request again may succeed.
    """

    def __init__(self, kind: str, message: str, retryable: bool, detail: dict | None = None):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.detail = detail or {}


class ContextOverflow(BackendError):
    """The prompt plus the output budget does not fit the endpoint's context window.

    The fold protocol answers this with catch-up (fold the pending chunk with the next),
    and the row becomes invalid; it is never retried.
    """

    def __init__(self, message: str, detail: dict | None = None):
        super().__init__("context_overflow", message, retryable=False, detail=detail)


class Backend(ABC):
    """A model behind one endpoint."""

    #: what answered: recorded on every row, part of every cache key
    identity: dict[str, Any]

    @abstractmethod
    def complete(self, request: ChatRequest) -> Reply: ...

    def count_tokens(self, text: str) -> int:
        return max(1, round(len(text) / CHARS_PER_TOKEN_ESTIMATE)) if text else 0

    @property
    def token_count_method(self) -> str:
        return "estimate"

    def clip(self, text: str, max_tokens: int) -> str:
        """The longest prefix of text that fits max_tokens."""
        if self.count_tokens(text) <= max_tokens:
            return text
        return text[: int(max_tokens * CHARS_PER_TOKEN_ESTIMATE)]

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
