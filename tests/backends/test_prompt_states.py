"""A long prompt's reading kept for the next job (backends/prompt_states.py): the reply is
the fresh reading's, bit for bit, and a state this cache did not sign is never read."""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from typing import Any

import llama_cpp
import numpy as np
import pytest

from foldstudy.backends import embedded
from foldstudy.backends.base import ChatRequest
from foldstudy.backends.embedded import EmbeddedBackend, packaged_weights
from foldstudy.backends.prompt_states import (
    KIND,
    STATES_ENV,
    PromptStates,
    reading_salt,
    stateful_llama,
)
from foldstudy.io import CACHE_KEY_FILE_ENV, cache_mac

# LONG is read in batches of 64: one whole batch to keep and one whole batch read after
# it. A reading split in the wrong place (just before its last token) held another state
# than a fresh one when the rest it split was 64 tokens or more (at batches of 64, 128 and
# 256), and the same state when it was 63 or fewer (at batches of 32 to 256; 16, on an
# earlier version of this test), 2026-12-06. A rest is at most one batch, so 128 tokens
# in batches of 64 is the least reading in which this test can fail on a misplaced split
# (checked: it does).
LONG_BATCH = 64
LONG = "Summarise: " + " ".join(f"[turn {i}] tool: port {8000 + i} moved to host "
                                f"h{i % 17}; id=ab{i * 7919 % 100000:05d}." for i in range(5))

# The backend's test reads in batches of BATCH, so its prompt of 33 tokens (the chat
# template's included) has two whole batches to keep and its last token to read.
BATCH = 16
SESSION = "port 8443 moved to host alpha."
MIN = 32  # the tests' threshold, so a short prompt is kept


def ask(seed: int, text: str = SESSION) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "You answer briefly."},
                                 {"role": "user", "content": "Summarise: " + text}),
                       max_tokens=8, temperature=0.2, seed=seed)


@pytest.fixture
def states(tmp_path, monkeypatch):
    """The directory states are kept in, and models reading in batches of BATCH."""
    where = tmp_path / "states"
    monkeypatch.setenv(STATES_ENV, str(where))
    monkeypatch.setattr(embedded, "stateful_llama",
                        lambda: functools.partial(stateful_llama(), n_batch=BATCH))
    return where


def model() -> EmbeddedBackend:
    """A model reading in batches of BATCH that keeps the states of prompts of MIN tokens."""
    backend = EmbeddedBackend("m", {"threads": 1, "n_ctx": 256})
    assert backend.llm.n_batch == BATCH and backend.llm.prompt_states is not None
    backend.llm.prompt_states.min_tokens = MIN
    return backend


def last_logits(llm: Any) -> np.ndarray:
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1),
                                 shape=(llm.n_vocab(),)).copy()


def whole_state(llm: Any) -> bytes:
    """The model's state after a reading: the KV cache of every token read."""
    size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
    buf = (ctypes.c_uint8 * size)()
    return ctypes.string_at(buf, llama_cpp.llama_state_get_data(llm._ctx.ctx, buf, size))


@pytest.mark.model
def test_a_kept_state_and_the_rest_read_after_it_are_a_fresh_reading_byte_for_byte(
        tmp_path):
    """In batches of LONG_BATCH: one model reads LONG and keeps its first batch, another
    loads it and reads the rest; its whole state and its last logits are the bytes a model
    reading LONG afresh holds, so every reply after them is the same. The split is the
    same at any batch (`kept` is n_batch * ((n - 1) // n_batch)), the study's 512
    included; this batch is the smallest at which a misplaced split shows."""
    def load(kept: bool) -> Any:
        llm = stateful_llama()(model_path=str(packaged_weights()), n_ctx=256, n_threads=1,
                               n_threads_batch=1, n_batch=LONG_BATCH, seed=0, verbose=False,
                               flash_attn=True)
        if kept:
            llm.prompt_states = PromptStates(tmp_path, reading_salt("w", llm.context_params),
                                             b"k" * 32, min_tokens=LONG_BATCH)
        return llm

    fresh, keeper, reader = load(False), load(True), load(True)
    prompt = fresh.tokenize(LONG.encode())[:2 * LONG_BATCH]
    assert len(prompt) == 2 * LONG_BATCH  # a whole batch kept, a whole batch read after it
    try:
        for llm in (fresh, keeper, reader):
            llm.reset()
            llm.eval(prompt)
        assert keeper.prompt_states.restored == 0 and reader.prompt_states.restored == LONG_BATCH
        assert whole_state(reader) == whole_state(fresh) == whole_state(keeper)
        assert np.array_equal(last_logits(reader), last_logits(fresh))
    finally:
        for llm in (fresh, keeper, reader):
            llm.close()


@pytest.mark.model
def test_the_backend_keeps_a_reading_and_the_next_model_answers_from_it(states, caplog):
    """The job that reads a prompt first keeps its whole batches; another model (a new
    process's context) reads the rest, answers as the first did, and its reply says how
    many tokens it did not read. A state edited on disk is discarded, said in the log,
    and the prompt read afresh and kept again. (That the answer is a fresh reading's,
    bit for bit, is the test above, at the study's batch.)"""
    keeper, reader = model(), model()
    try:
        first = keeper.complete(ask(1))
        assert "prompt_tokens_from_state" not in first.raw
        (entry,) = states.glob(f"{KIND}-*.bin")
        kept = BATCH * ((first.prompt_tokens - 1) // BATCH)
        assert kept >= MIN
        again = reader.complete(ask(1))
        assert again.raw["prompt_tokens_from_state"] == kept and again.text == first.text

        original = entry.read_bytes()
        data = bytearray(original)
        data[-100] ^= 0x01  # one flipped bit of the KV cache
        entry.write_bytes(bytes(data))
        with caplog.at_level(logging.WARNING):
            afresh = reader.complete(ask(1))
        assert "signature does not match" in caplog.text
        assert "prompt_tokens_from_state" not in afresh.raw and afresh.text == first.text
        assert entry.read_bytes() == original  # kept again: the same reading, the same bytes
    finally:
        for b in (keeper, reader):
            b.close()


class Unloaded:
    """As much of a Llama as read() touches before it keeps or loads a state."""
    n_batch = 512


def test_a_prompt_whose_whole_batches_are_fewer_than_the_threshold_is_only_read(tmp_path):
    states = PromptStates(tmp_path, "salt", b"k" * 32, min_tokens=1024)
    read: list[list[int]] = []
    # 1,024 tokens: the second batch holds the last token, so 512 could be kept
    states.read(Unloaded(), range(1024), read.append)
    assert read == [list(range(1024))] and not list(tmp_path.iterdir())
    assert states.restored == 0


def test_nothing_is_kept_without_a_directory_or_a_key(tmp_path, monkeypatch):
    monkeypatch.delenv(STATES_ENV, raising=False)
    assert PromptStates.from_env("salt") is None
    monkeypatch.setenv(STATES_ENV, str(tmp_path / "states"))
    assert PromptStates.from_env("salt") is not None
    (tmp_path / "nodir").write_text("a file where a directory would be", encoding="utf-8")
    monkeypatch.setenv(CACHE_KEY_FILE_ENV, str(tmp_path / "nodir" / "k"))
    assert PromptStates.from_env("salt") is None


def test_a_state_copied_under_another_prompt_is_refused_before_llama_cpp_reads_it(
        tmp_path, caplog):
    """A state signed for one prompt's tokens, copied to where another prompt's would be,
    is removed unread (the llm is never touched: None here)."""
    states = PromptStates(tmp_path, "salt", b"k" * 32)
    one, other = states.key([1, 2, 3]), states.key([1, 2, 4])
    payload = b"\x00state bytes\n\x01"
    states.path(one).write_bytes(cache_mac(b"k" * 32, KIND, one, payload).encode()
                                 + b"\n" + payload)
    os.link(states.path(one), states.path(other))
    with caplog.at_level(logging.WARNING):
        assert states._load(None, other, [1, 2, 4]) is False
    assert "signature does not match" in caplog.text
    assert not states.path(other).exists() and states.path(one).exists()
    # nor is a file written under another user's key
    assert PromptStates(tmp_path, "salt", b"x" * 32)._load(None, one, [1, 2, 3]) is False


def test_the_key_names_everything_a_reading_depends_on():
    params = llama_cpp.llama_context_default_params()
    base = reading_salt("a" * 64, params)
    assert reading_salt("a" * 64, params) == base
    assert reading_salt("b" * 64, params) != base  # other weights
    assert llama_cpp.__version__ in base
    for field, value in (("n_threads", 7), ("n_batch", 64), ("flash_attn_type", 0),
                         ("type_k", 0), ("n_ubatch", 128)):
        other = llama_cpp.llama_context_default_params()
        setattr(other, field, value)
        assert reading_salt("a" * 64, other) != base, field
    states = PromptStates(None, base, b"k" * 32)  # type: ignore[arg-type]
    assert states.key([1, 2, 3]) != states.key([1, 2, 3, 4]) != states.key([3, 2, 1])
    assert states.key([1, 2, 3]) != PromptStates(None, "other", b"k").key([1, 2, 3])  # type: ignore[arg-type]


def test_the_directory_keeps_the_most_recently_used_states_within_its_bound(tmp_path):
    states = PromptStates(tmp_path, "salt", b"k" * 32, max_bytes=2500)
    for i in range(4):
        p = states.path(f"{i:064x}")
        p.write_bytes(b"x" * 1000)
        os.utime(p, ns=(i * 10**9, i * 10**9))
    (tmp_path / "other.txt").write_text("not a state", encoding="utf-8")
    states.prune()
    kept = sorted(p.name for p in tmp_path.glob(f"{KIND}-*.bin"))
    assert kept == [states.path(f"{i:064x}").name for i in (2, 3)]
    assert (tmp_path / "other.txt").exists()
    # one state larger than the bound is still kept: it is the one just read
    big = PromptStates(tmp_path, "salt", b"k", max_bytes=10)
    big.prune()
    assert [p.name for p in tmp_path.glob(f"{KIND}-*.bin")] == [states.path(f"{3:064x}").name]
