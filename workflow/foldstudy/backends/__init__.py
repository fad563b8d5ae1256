"""Model backends behind one interface, and the response store that wraps them."""

from __future__ import annotations

from typing import Any

from .base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextOverflow,
    Reply,
)
from .registry import backend_class, backend_classes, register_backend, resolve_model_config

__all__ = ["Backend", "BackendError", "ChatRequest", "ContextOverflow", "Reply",
           "backend_class", "backend_classes", "make_backend", "register_backend",
           "resolve_model_config"]


def make_backend(name: str, model: dict[str, Any], pin: dict[str, Any] | None = None,
                 replay: bool = False) -> Backend:
    """The backend a model's config names (config already validated).

    pin: the endpoint the probe pinned (openrouter), from results/probe/{model}.json.
    replay: answer only from the response store, with the identity the live backend
    would have.
    """
    cls = backend_class(model["backend"])
    cfg = cls.resolve_config(model)
    if replay:
        from .replay import ReplayBackend

        return ReplayBackend(cls.describe(name, cfg, pin), cls.replay_tokenizer(cfg),
                             cls.wire_facts(cfg, pin), live=cls)
    return cls(name, cfg, pin)  # type: ignore[call-arg]
