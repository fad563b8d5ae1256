"""Model backends behind one interface, and the response store that wraps them."""

from __future__ import annotations

from typing import Any

from .base import Backend, BackendError, ChatRequest, ContextOverflow, Reply

__all__ = ["Backend", "BackendError", "ChatRequest", "ContextOverflow", "Reply", "make_backend"]

BACKENDS = ("embedded",)


def make_backend(name: str, model: dict[str, Any]) -> Backend:
    """The backend a model's config names (config already validated)."""
    kind = model["backend"]
    if kind == "embedded":
        from .embedded import EmbeddedBackend

        return EmbeddedBackend(
            model=name,
            gguf=model.get("gguf"),
            sha256=model.get("sha256"),
            n_ctx=int(model.get("n_ctx", 4096)),
            threads=int(model.get("threads", 1)),
        )
    raise BackendError("config", f"backend {kind!r} is not available (known: {BACKENDS})", False)
