"""A long prompt read once: the model's state after reading it, kept for the next job
that reads the same words.

The default study's ceiling asks one recall turn a repeat, each over the whole session
(about 6,700 tokens), the same words under another seed; reading them is most of that
call's time (docs/benchmarks.md). The embedded model reads a prompt from an empty cache in
batches of n_batch tokens, the first at token 0 (backends/embedded.py: so that a reply
depends on its request alone). Everything the model holds after the whole batches before
the last token (the KV cache of the first L tokens, L a multiple of n_batch) depends on
those L tokens alone, computed in the same batches whichever prompt they began. So the
first reading keeps that state in a file, and a later reading of a prompt that begins
with the same L tokens loads it and reads the rest, the last batch, as the first reading
did: the same sums in the same order, so the same logits bit for bit and the same reply
under the same seed (tests/backends/test_prompt_states.py). A prefix that ends inside a
batch is never reused: its remainder would be read in other batches than a fresh reading
reads it, and under flash attention the reply could differ.

Key: the sha256 of the L tokens and of everything the reading depends on besides them
(the weights' sha256, llama-cpp-python's version, every number of the context's
parameters: n_batch, the thread counts, flash attention, the cache's types). Only a
prompt of at least MIN_TOKENS is kept (below it the writing costs more than a repeat
saves: a state is about 23 KB a token), and the directory keeps the most recently used
states within MAX_BYTES.

Trust: as the session cache (study/session_cache.py), whoever can write the working
directory can write here, and a state decides what the model answers: each file is signed
with the user's cache key (io.cache_signing_key), and one this cache did not sign for its
key is discarded, said in one line of the log, and the prompt read afresh. llama.cpp reads
only signed bytes.

Where: the directory FOLDSTUDY_PROMPT_STATES names; foldstudy/wiring/ (load_wiring) sets
it to `.snakemake/foldstudy/prompt-states/` of the working directory (`rm -rf .snakemake`
clears it). Unset (a library call, a test), nothing is kept.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
from array import array
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..io import cache_signing_key, signed_payload, write_signed

log = logging.getLogger(__name__)

STATES_ENV = "FOLDSTUDY_PROMPT_STATES"
# The states' place under a working directory (wiring.load_wiring sets STATES_ENV to it).
STATES_DIR = Path(".snakemake") / "foldstudy" / "prompt-states"
KIND = "prompt-state"
FORMAT = 1  # the layout of a file; bumped when it changes
MIN_TOKENS = 4096
MAX_BYTES = 1 << 30


def states_dir() -> Path | None:
    """The directory the environment names, or None (nothing kept)."""
    where = os.environ.get(STATES_ENV)
    return Path(where) if where else None


class PromptStates:
    """The kept states of one loaded model: read() stands in for its reading of a prompt.

    salt: what the reading depends on besides the tokens (reading_salt)."""

    def __init__(self, where: Path, salt: str, secret: bytes,
                 min_tokens: int = MIN_TOKENS, max_bytes: int = MAX_BYTES) -> None:
        self.where, self.salt, self.secret = where, salt, secret
        self.min_tokens, self.max_bytes = min_tokens, max_bytes
        self.restored = 0  # tokens the last read() took from a kept state

    @classmethod
    def from_env(cls, salt: str, **kw: Any) -> PromptStates | None:
        """The states the environment names, or None: no directory named, or no key."""
        where = states_dir()
        secret = cache_signing_key() if where is not None else None
        return cls(where, salt, secret, **kw) if where is not None and secret else None

    def key(self, tokens: Sequence[int]) -> str:
        h = hashlib.sha256(f"{FORMAT}\0{self.salt}\0".encode())
        h.update(array("i", tokens).tobytes())
        return h.hexdigest()

    def path(self, key: str) -> Path:
        return self.where / f"{KIND}-{key}.bin"

    def read(self, llm: Any, tokens: Sequence[int],
             evaluate: Callable[[Sequence[int]], None]) -> None:
        """Read a prompt from an empty cache as evaluate(tokens) would (llama-cpp-python's
        Llama.eval, which reads in batches of llm.n_batch from the first token), taking
        its whole batches before the last token from a kept state where one is."""
        tokens = list(tokens)
        self.restored = 0
        kept = llm.n_batch * ((len(tokens) - 1) // llm.n_batch)
        if kept < self.min_tokens:
            evaluate(tokens)
            return
        key = self.key(tokens[:kept])
        if self._load(llm, key, tokens[:kept]):
            self.restored = kept
        else:
            evaluate(tokens[:kept])  # the same batches as evaluate(tokens) reads first
            self._keep(llm, key)
        evaluate(tokens[kept:])

    def _load(self, llm: Any, key: str, tokens: list[int]) -> bool:
        import llama_cpp

        entry = self.path(key)
        try:
            data = entry.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as e:
            log.warning("prompt state: cannot read %s (%s); the prompt is read afresh", entry, e)
            return False
        payload = signed_payload(data, self.secret, KIND, key)
        if payload is None:
            log.warning("prompt state: discarded %s (its signature does not match: edited, "
                        "copied from another entry or machine, or not written here); the "
                        "prompt is read afresh", entry)
            entry.unlink(missing_ok=True)
            return False
        ctx = llm._ctx.ctx
        start = len(data) - len(payload)  # the payload is a view of data's last bytes
        src = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value + start  # type: ignore[operator]
        read = llama_cpp.llama_state_set_data(
            ctx, ctypes.cast(src, ctypes.POINTER(ctypes.c_uint8)), len(payload))
        if read != len(payload):
            log.warning("prompt state: llama.cpp refused %s; the prompt is read afresh", entry)
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            return False
        llm.input_ids[:len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        with contextlib.suppress(OSError):  # another job may have pruned it since
            os.utime(entry)  # recently used: pruned last
        log.info("prompt state: %d of the prompt's tokens from %s", len(tokens), entry.name)
        return True

    def _keep(self, llm: Any, key: str) -> None:
        import llama_cpp

        ctx = llm._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buf = (ctypes.c_uint8 * size)()
        payload = memoryview(buf)[:llama_cpp.llama_state_get_data(ctx, buf, size)]
        try:
            write_signed(self.path(key), self.secret, KIND, key, payload)
        except OSError as e:  # a full or read-only disk costs the next reading, no more
            log.warning("prompt state: not kept (%s)", e)
            return
        self.prune()

    def prune(self) -> None:
        """Remove the least recently used states beyond max_bytes, the newest kept (a
        state another job removes meanwhile is passed over)."""
        entries = []
        for p in self.where.glob(f"{KIND}-*.bin"):
            with contextlib.suppress(OSError):
                st = p.stat()
                entries.append((st.st_mtime_ns, st.st_size, p))
        total = 0
        for i, (_, size, p) in enumerate(sorted(entries, reverse=True)):
            total += size
            if total > self.max_bytes and i:
                p.unlink(missing_ok=True)


def reading_salt(weights_sha256: str, context_params: Any) -> str:
    """What a reading depends on besides its tokens: the weights, llama-cpp-python's
    version, and every number of the context's parameters (a ctypes structure: pointers
    and callbacks left out)."""
    import llama_cpp

    numbers = {name: getattr(context_params, name)
               for name, kind in context_params._fields_
               if kind in _NUMBER_TYPES}
    return f"{weights_sha256} {llama_cpp.__version__} {sorted(numbers.items())}"


_NUMBER_TYPES = frozenset((ctypes.c_int, ctypes.c_int32, ctypes.c_uint32, ctypes.c_int64,
                           ctypes.c_uint64, ctypes.c_float, ctypes.c_double, ctypes.c_bool,
                           ctypes.c_int8, ctypes.c_uint8))


@cache
def stateful_llama() -> type:
    """llama_cpp.Llama whose reading of a prompt from an empty cache goes through its
    `prompt_states` (a PromptStates, or None: the reading as Llama's own). generate()
    reads every prompt and token through eval(); a prompt from an empty cache is the
    call with n_tokens 0 (backends/embedded.py resets before every call)."""
    from llama_cpp import Llama

    class StatefulLlama(Llama):  # type: ignore[misc]
        prompt_states: PromptStates | None = None

        def eval(self, tokens: Sequence[int]) -> None:
            if self.prompt_states is None or self.n_tokens:
                super().eval(tokens)
            else:
                self.prompt_states.read(self, tokens, super().eval)

    return StatefulLlama
