"""Replay: answers only from the response store, so a reviewer re-runs the whole DAG
with no key, no server and no model call. A miss is an error naming the request.

The replay backend carries the identity the live backend would have (the backend class
describes it from the config, so every cache key is the one the live run wrote) and
counts and clips tokens as the live backend did (so every carry is clipped byte for
byte the same): for the embedded model that is the GGUF's vocabulary, without weights.
"""

from __future__ import annotations

from typing import Any

from .base import Backend, BackendError, ChatRequest, Compaction, ReplayMiss, Reply, Tokenizer


class ReplayBackend(Backend):
    """Serves nothing itself: cached_complete answers from the store or raises ReplayMiss."""

    replay = True

    def __init__(self, identity: dict[str, Any], tokenizer: Tokenizer | None = None,
                 wire_facts: dict[str, Any] | None = None,
                 live: type[Backend] | None = None) -> None:
        self.identity = identity
        self._tokenizer = tokenizer
        facts = wire_facts or {}
        self.context_length = facts.get("context_length")
        self.ceiling_delivery = facts.get("ceiling_delivery", Backend.ceiling_delivery)
        self.seed_sent = facts.get("seed_sent", Backend.seed_sent)
        # live: the class replayed. Its compaction requests and readings depend on its
        # kind alone, so a replay builds and reads each exactly as the live run did.
        self.live = live or Backend
        self.native_compaction = self.live.native_compaction
        self.compaction_beta = self.live.compaction_beta
        self.chunk_presented_as = self.live.chunk_presented_as
        self.chunk_role = self.live.chunk_role

    @classmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        raise NotImplementedError("a replay takes the identity of the backend it replays")

    @property
    def token_count_method(self) -> str:
        # Every live backend counts exactly (a tokenizer or the server's usage).
        return "exact"

    def count_tokens(self, text: str) -> int:
        if self._tokenizer is not None:
            return self._tokenizer.count_tokens(text)
        return super().count_tokens(text)

    def clip(self, text: str, max_tokens: int) -> str:
        if self._tokenizer is not None:
            return self._tokenizer.clip(text, max_tokens)
        return super().clip(text, max_tokens)

    def compaction_request(self, previous: Any, chunk: str, system_prompt: str,  # type: ignore[override]
                           max_tokens: int, temperature: float,
                           instructions: str | None = None) -> ChatRequest:
        return self.live.compaction_request(previous, chunk, system_prompt, max_tokens,
                                            temperature, instructions=instructions)

    def compaction_of(self, reply: Reply) -> Compaction:  # type: ignore[override]
        return self.live.compaction_of(reply)

    def refused_parameter(self, error: BackendError) -> str:  # type: ignore[override]
        return self.live.refused_parameter(error)

    def complete(self, request: ChatRequest) -> Reply:
        raise ReplayMiss("replay serves only from the response store; this request was "
                         "never stored")

    def close(self) -> None:
        if self._tokenizer is not None:
            self._tokenizer.close()
