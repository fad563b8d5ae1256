"""A long prompt's reading kept for the next job (backends/prompt_states.py): the reply is
the fresh reading's, bit for bit, and a state this cache did not sign is never read."""

from __future__ import annotations

import logging
import os

import llama_cpp
import numpy as np
import pytest

from foldstudy.backends.base import ChatRequest
from foldstudy.backends.embedded import EmbeddedBackend
from foldstudy.backends.prompt_states import (
    KIND,
    STATES_ENV,
    PromptStates,
    reading_salt,
)
from foldstudy.io import CACHE_KEY_FILE_ENV, cache_mac

# About 600 tokens: one whole batch of 512 is kept, the last 90 or so read each time.
SESSION = " ".join(f"[turn {i}] tool: port {8000 + i} moved to host h{i % 17}; "
                   f"id=ab{i * 7919 % 100000:05d}." for i in range(20))
MIN = 256  # the tests' threshold, so a short prompt is kept


def ask(seed: int, text: str = SESSION) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "You answer briefly."},
                                 {"role": "user", "content": "Summarise: " + text}),
                       max_tokens=16, temperature=0.2, seed=seed)


@pytest.fixture
def states(tmp_path, monkeypatch):
    where = tmp_path / "states"
    monkeypatch.setenv(STATES_ENV, str(where))
    return where


def model(min_tokens: int | None = MIN) -> EmbeddedBackend:
    """A model that keeps states (min_tokens) or, with None, reads every prompt afresh."""
    backend = EmbeddedBackend("m", {"threads": 1, "n_ctx": 1024})
    if min_tokens is None:
        backend.llm.prompt_states = None
    else:
        assert backend.llm.prompt_states is not None
        backend.llm.prompt_states.min_tokens = min_tokens
    return backend


def last_logits(backend: EmbeddedBackend, prompt: list[int]) -> np.ndarray:
    """The logits after reading a prompt's tokens from an empty cache."""
    llm = backend.llm
    llm.reset()
    llm.eval(prompt)
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1),
                                 shape=(llm.n_vocab(),)).copy()


@pytest.mark.model
def test_a_reply_read_from_a_kept_state_is_the_fresh_readings_bit_for_bit(states):
    """The job that reads a prompt first keeps its whole batches; another model (a new
    process's context) reads the rest and answers as a fresh reading does, under any
    seed, and says how many tokens it did not read."""
    fresh, keeper, reader = model(None), model(), model()
    try:
        first = keeper.complete(ask(1))
        assert "prompt_tokens_from_state" not in first.raw
        assert len(list(states.glob(f"{KIND}-*.bin"))) == 1
        want = {seed: fresh.complete(ask(seed)).text for seed in (1, 2)}
        assert first.text == want[1]
        for seed in (1, 2):
            again = reader.complete(ask(seed))
            assert again.raw["prompt_tokens_from_state"] == 512
            assert again.text == want[seed]
        # the logits after the reading, not only the sampled words, are the same bits
        prompt = list(fresh.llm.input_ids[:first.prompt_tokens])  # the chat template's
        assert np.array_equal(last_logits(reader, prompt), last_logits(fresh, prompt))
        assert reader.llm.prompt_states.restored == 512
    finally:
        for b in (fresh, keeper, reader):
            b.close()


@pytest.mark.model
def test_a_state_edited_on_disk_is_discarded_and_the_prompt_read_afresh(states, caplog):
    keeper = model()
    try:
        want = keeper.complete(ask(3)).text
        (entry,) = states.glob(f"{KIND}-*.bin")
        data = bytearray(entry.read_bytes())
        data[-1000] ^= 0xFF  # one flipped bit of the KV cache
        entry.write_bytes(bytes(data))
        with caplog.at_level(logging.WARNING):
            reply = keeper.complete(ask(3))
        assert "signature does not match" in caplog.text
        assert "prompt_tokens_from_state" not in reply.raw
        assert reply.text == want
        # read afresh, the state is kept again, and read from the next time
        assert keeper.complete(ask(3)).raw["prompt_tokens_from_state"] == 512
    finally:
        keeper.close()


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
