"""Replay: answers only from the response store, so a reviewer re-runs the whole DAG
with no key, no server and no model call. A miss is an error naming the request.

The replay backend carries the identity the live backend had (so every cache key is
the one the live run wrote) and counts and clips tokens as the live backend did (so
every carry is clipped byte-for-byte the same): for the embedded model that needs the
GGUF's vocabulary only, loaded without its weights.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from .base import Backend, BackendError, ChatRequest, Reply


class ReplayMiss(BackendError):
    def __init__(self, message: str, detail: dict | None = None):
        super().__init__("replay_miss", message, retryable=False, detail=detail)


class ReplayBackend(Backend):
    """Serves nothing itself: cached_complete answers from the store or raises ReplayMiss."""

    replay = True

    def __init__(self, identity: dict[str, Any], tokenizer: Backend | None = None,
                 token_count_method: str = "exact") -> None:
        self.identity = identity
        self._tokenizer = tokenizer
        self._method = token_count_method

    @property
    def token_count_method(self) -> str:
        return self._method

    def count_tokens(self, text: str) -> int:
        if self._tokenizer is not None:
            return self._tokenizer.count_tokens(text)
        return super().count_tokens(text)

    def clip(self, text: str, max_tokens: int) -> str:
        if self._tokenizer is not None:
            return self._tokenizer.clip(text, max_tokens)
        return super().clip(text, max_tokens)

    def complete(self, request: ChatRequest) -> Reply:
        raise ReplayMiss("replay serves only from the response store; this request was "
                         "never stored")

    def close(self) -> None:
        if self._tokenizer is not None:
            self._tokenizer.close()


def embedded_replay(name: str, cfg: dict[str, Any]) -> ReplayBackend:
    """The embedded model's identity and tokenizer, without loading its weights."""
    from .embedded import DEFAULT_SHA256, EmbeddedBackend, packaged_weights

    gguf = cfg.get("gguf")
    path = Path(gguf) if gguf else packaged_weights()
    sha = cfg.get("sha256") or (DEFAULT_SHA256 if not gguf else None)
    if sha is None:
        raise BackendError("config", f"models.{name}: replay of a custom GGUF needs its "
                           "sha256 in the config (the live run's identity names it)", False)
    identity = {
        "backend": "embedded",
        "model": name,
        "weights": path.name,
        "weights_sha256": sha,
        "n_ctx": int(cfg.get("n_ctx", 4096)),
        "llama_cpp_python": metadata.version("llama-cpp-python"),
    }
    from llama_cpp import Llama

    tok = EmbeddedBackend.__new__(EmbeddedBackend)
    tok.n_ctx = identity["n_ctx"]
    tok.llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    return ReplayBackend(identity, tokenizer=tok)
