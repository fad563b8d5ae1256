"""Model backends behind one interface, and the response store that wraps them."""

from __future__ import annotations

from typing import Any

from .base import Backend, BackendError, ChatRequest, ContextOverflow, Reply

__all__ = ["Backend", "BackendError", "ChatRequest", "ContextOverflow", "Reply", "make_backend"]

BACKENDS = ("embedded", "openai", "openrouter")


def make_backend(name: str, model: dict[str, Any], pin: dict[str, Any] | None = None,
                 replay: bool = False) -> Backend:
    """The backend a model's config names (config already validated).

    pin: the endpoint the probe pinned (openrouter), from results/probe/{model}.json.
    replay: answer only from the response store, with the live backend's identity.
    """
    kind = model["backend"]
    if replay:
        from .replay import ReplayBackend, embedded_replay

        if kind == "embedded":
            return embedded_replay(name, model)
        live = make_backend(name, model, pin=pin)
        identity = dict(live.identity)
        live.close()
        return ReplayBackend(identity)
    if kind == "embedded":
        from .embedded import EmbeddedBackend

        return EmbeddedBackend(
            model=name,
            gguf=model.get("gguf"),
            sha256=model.get("sha256"),
            n_ctx=int(model.get("n_ctx", 4096)),
            threads=int(model.get("threads", 1)),
        )
    if kind == "openai":
        from .openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(name, model)
    if kind == "openrouter":
        from .openrouter import OpenRouterBackend

        return OpenRouterBackend(name, model, pin=pin)
    raise BackendError("config", f"backend {kind!r} is not available (known: {BACKENDS})", False)
