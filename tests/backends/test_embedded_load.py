"""How the embedded backend loads its model (backends/embedded.py)."""

from __future__ import annotations

import llama_cpp
import pytest

from foldstudy.backends.base import ChatRequest
from foldstudy.backends.embedded import EmbeddedBackend, _identity

pytestmark = pytest.mark.model


@pytest.mark.parametrize(("given", "flash"), [({}, True), ({"flash_attn": False}, False)])
def test_flash_attention_is_on_unless_the_config_turns_it_off(given, flash, tmp_path):
    backend = EmbeddedBackend("m", {"threads": 1, "n_ctx": 512, **given})
    try:
        want = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash
                else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        assert backend.llm.context_params.flash_attn_type == want
        # the order of a sum is no part of what was asked: a stored reply serves either
        assert "flash_attn" not in backend.identity
    finally:
        backend.close()
    assert _identity("m", tmp_path / "w.gguf", "0" * 64, EmbeddedBackend.resolve_config(given)) \
        == _identity("m", tmp_path / "w.gguf", "0" * 64, EmbeddedBackend.resolve_config({}))


def test_under_flash_attention_a_reply_depends_on_its_request_not_the_call_before():
    """A longer prompt read first left its start in the cache; under flash attention the
    next prompt sharing that start was then read in another order (2026-12-05: another
    reply). Each call starts from an empty cache, so both backends answer alike. Without
    that reset the brief reply differed from its first token on after a longer prompt of
    71, 83 or 143 tokens, and not after one of 35, 47 or 59 (checked 2026-12-06): this
    one has 83."""
    def ask(text: str, tokens: int) -> ChatRequest:
        return ChatRequest(messages=({"role": "system", "content": "You answer briefly."},
                                     {"role": "user", "content": text}),
                           max_tokens=tokens, temperature=0.2, seed=1)

    brief = ask("What is the capital of France?", 8)
    used, fresh = (EmbeddedBackend("m", {"threads": 1, "n_ctx": 1024}) for _ in range(2))
    try:
        used.complete(ask("Summarise: " + "the port 8443 moved to host alpha; " * 5, 8))
        assert used.complete(brief).text == fresh.complete(brief).text
    finally:
        used.close()
        fresh.close()
