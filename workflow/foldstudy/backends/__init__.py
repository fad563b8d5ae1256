"""Model backends behind one interface, and the response store that wraps them."""

from __future__ import annotations

from typing import Any

from .base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextOverflow,
    Reply,
    resolve_model_config,
)

__all__ = ["Backend", "BackendError", "ChatRequest", "ContextOverflow", "Reply", "make_backend"]

BACKENDS = ("embedded", "openai", "openrouter")


def backend_class(kind: str) -> type[Backend]:
    """The class of a backend kind, imported only when a job needs it."""
    if kind == "embedded":
        from .embedded import EmbeddedBackend

        return EmbeddedBackend
    if kind == "openai":
        from .openai_compat import OpenAICompatBackend

        return OpenAICompatBackend
    if kind == "openrouter":
        from .openrouter import OpenRouterBackend

        return OpenRouterBackend
    raise BackendError("config", f"backend {kind!r} is not available (known: "
                       f"{', '.join(BACKENDS)})", False)


def make_backend(name: str, model: dict[str, Any], pin: dict[str, Any] | None = None,
                 replay: bool = False) -> Backend:
    """The backend a model's config names (config already validated).

    pin: the endpoint the probe pinned (openrouter), from results/probe/{model}.json.
    replay: answer only from the response store, with the identity the live backend
    would have.
    """
    cfg = resolve_model_config(model)
    cls = backend_class(cfg["backend"])
    if replay:
        from .replay import ReplayBackend

        return ReplayBackend(cls.describe(name, cfg, pin), cls.replay_tokenizer(cfg),
                             cls.wire_facts(cfg, pin))
    return cls(name, cfg, pin)  # type: ignore[call-arg]
