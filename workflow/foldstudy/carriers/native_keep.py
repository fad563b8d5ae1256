"""`native:keep_recent=N`: the provider's compaction (carriers/native.py) keeping the last
N chunks verbatim after the compaction item, the client-side cut the providers leave to
the caller.

Anthropic's page "Compaction that keeps recent turns"
(https://platform.claude.com/docs/en/build-with-claude/compaction-keep-recent-turns,
read 2026-12-05) says no parameter sets the turns kept: the client picks a cut point in
its history, the messages before it go into the compaction request, and the messages
from it on are kept. The API summarizes every message it is sent, so the kept turns are
left out of the compaction request; the next request sends the block first, then the
kept turns exactly as they are in the history, then the new message; both requests carry
the beta header. Kept turns go back at full length, so the more kept, the less room the
compaction frees: the arm is read against plain `native`. A cut may not leave a tool
call without its result; here every turn is a chunk, one message holding whole turns
(a tool call and its output stay in one chunk, transcripts/turns.py), so every cut
between chunks is one.

OpenAI's compact endpoint documents no such option either (its request takes `model`,
`input`, `instructions`, `previous_response_id` and prompt-cache fields; its guide: the
compacted window is sent first, then the new items); the same client-side cut is applied
there:
the compact request holds the previous window and the older chunks, and the next
request sends the window, then the kept chunks as the assistant messages a chunk is on
that wire (Backend.chunk_role), then its own.

The sequence. The turns are the chunks, one message each, in the form the backend's
compaction request gives a chunk (Anthropic: a user message; OpenAI: an assistant
message). At fold i the chunks seen are 0..i; the last N of them (max(0, i-N+1)..i) are
kept; the older ones not yet compacted go, after the previous item, into one compaction
request, joined as a catch-up joins them in a plain native fold. Where no chunk is older
(i < N) no request is sent and the fold is recorded as a fold with no call. With four
chunks c0..c3 and b_i the item fold i returned:

    N=1  fold0: no call                 kept c0
         fold1: compact [c0]       -> b1, kept c1
         fold2: compact [b1, c1]   -> b2, kept c2
         fold3: compact [b2, c2]   -> b3, kept c3
         recall: [b3, c3, question]
    N=2  fold0, fold1: no call          kept c0 c1
         fold2: compact [c0]       -> b2, kept c1 c2
         fold3: compact [b2, c1]   -> b3, kept c2 c3
         recall: [b3, c2, c3, question]

A fold whose compaction overflowed is folded with the next (run/fold.py catch-up): the
next request holds both older chunks. A compaction that returns none is the arm's own
behaviour, as in a plain native fold: the previous item goes on, and the chunk that fell
out of the kept tail is lost.

The record: each fold's `kept` names the chunks kept after it; its carry is what the
next request reads, the item's readable text then each kept chunk, one per line (empty
and opaque once an opaque item is in it, as a plain native arm's); its retained_tokens
is the item's own count (0 before the first) plus the kept chunks' (the backend's
count_tokens), None where the provider reports no count for the item. The run's
`native.kept` names the chunks the recall turn sent after the item.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from ..errors import SpecError
from ..records.run_record import Fold, RunRecord
from .native import PROVIDER, Native
from .registry import register_carrier
from .session import no_call_fold
from .types import (
    ArmView,
    BackendView,
    ChainView,
    FixtureView,
    FoldResult,
    FoldStep,
    JsonObject,
)

log = logging.getLogger(__name__)

# The card line reading a keep_recent arm against the plain native arm that ran beside
# it (what keeping the tail did to the compaction): the compaction, in the model's
# native words (carriers/native.py native_words), then this
KEEP_RECENT_LINE = "with recent chunks kept, against without"
KEEP_RECENT_SOURCE = f"{PROVIDER.compaction} {KEEP_RECENT_LINE}"
# what arms.yaml writes: the stem and its one key (a positive whole number of chunks)
STEM = "native:keep_recent"
KEEP_RECENT = re.compile(r"native:keep_recent=([1-9][0-9]*)")
MALFORMED = f"keep_recent must be a whole number of chunks, 1 or more (e.g. {STEM}=2)"


@register_carrier
class NativeKeepRecent(Native):
    """The provider compacts the chunks older than the last N; those N go on verbatim
    after the item, to the next compaction's cut and to the recall turn."""

    kind = STEM
    # any value after the stem is this kind's, so a malformed N is refused by `check`
    # in one line naming the arm and the key, not as an unknown kind
    pattern = r"native:keep_recent(=.*)?"
    shown = "native:keep_recent=N"
    # read against plain `native`, with the provider's default summarization: a sweep's
    # native_with copies the plain native arm, not this one
    takes_instructions = False
    read_against = Native.kind

    @property
    def keep_recent(self) -> int:
        """N: how many of the newest chunks are kept verbatim."""
        m = KEEP_RECENT.fullmatch(self.name)
        if m is None:
            raise SpecError(f"carry {self.name!r}: {MALFORMED}")
        return int(m.group(1))

    def check(self, arm_id: str, sections: dict[str, list[str]], headings: list[str],
              schema: JsonObject | None) -> None:
        if KEEP_RECENT.fullmatch(self.name) is None:
            raise SpecError(f"arms.{arm_id}.carry: {self.name!r}: {MALFORMED}")

    def read_against_source(self, compaction: str) -> str:
        return f"{compaction} {KEEP_RECENT_LINE}"

    @classmethod
    def says_read_against(cls, source: str) -> bool:
        return source.endswith(f" {KEEP_RECENT_LINE}")

    def describe(self, arm: ArmView) -> str:
        return (f"the provider's compaction of all but the last {self.keep_recent} chunks, "
                "those sent verbatim after it")

    def fold(self, step: FoldStep) -> FoldResult:
        return keep_recent_step(step, self.keep_recent)

    def folds_without_call(self) -> int:
        """The first N folds: no chunk is older than the kept tail yet."""
        return self.keep_recent

    def recall_kept(self, chain: ChainView, fixture: FixtureView) -> list[str]:
        """The chunks the last fold kept: sent after the item, before the question."""
        last = chain.folds[-1] if chain.folds else None
        return [fixture.chunks[c] for c in (last.kept or [])] if last else []

    def finish(self, record: RunRecord, backend: BackendView, chain: ChainView) -> None:
        super().finish(record, backend, chain)
        last = chain.folds[-1] if chain.folds else None
        assert record.native is not None
        record.native["kept"] = list(last.kept or []) if last else []
        # the item's count and the kept chunks', as the last fold counted them
        record.retained_tokens = last.retained_tokens if last else None


def cut(folds: list[Fold], i: int, n: int) -> tuple[list[int], list[int]]:
    """(the chunks fold i compacts, the chunks it keeps): the last n of 0..i are kept;
    the older ones the folds made so far did not compact go into this fold's request.
    Every fold made compacted all older than its own kept tail, so the first chunk not
    yet compacted follows the last fold's cut."""
    first = max(0, folds[-1].fold - n + 1) if folds else 0
    start = max(0, i - n + 1)
    return list(range(first, start)), list(range(start, i + 1))


def kept_tokens(backend: BackendView, fixture: FixtureView, kept: list[int]) -> int:
    """The kept chunks' tokens, each counted as the study counts tokens: they go back at
    full length, so they are retained as much as the item is."""
    return sum(backend.count_tokens(fixture.chunks[c]) for c in kept)


def carry_of(block: str | None, kept_text: list[str]) -> str:
    """The carry the next request reads: the item's text (None: no item yet), then each
    kept chunk, one per line."""
    return "\n".join(([] if block is None else [block]) + kept_text)


def previous_block(prev: Fold, fixture: FixtureView) -> str:
    """The readable text of the item the previous fold left (its carry less its kept
    chunks, as carry_of joined them)."""
    tail = "".join("\n" + fixture.chunks[c] for c in prev.kept or [])
    assert prev.carry.endswith(tail), "a kept fold's carry ends in its kept chunks"
    return prev.carry[: len(prev.carry) - len(tail)]


def previous_block_tokens(prev: Fold | None, backend: BackendView, fixture: FixtureView
                          ) -> int | None:
    """The previous item's own token count (0: no fold yet; None: unknown)."""
    if prev is None:
        return 0
    if prev.retained_tokens is None:
        return None
    return prev.retained_tokens - kept_tokens(backend, fixture, prev.kept or [])


def keep_recent_step(step: FoldStep, n: int) -> FoldResult:
    """Fold i of a `native:keep_recent=n` arm (the module says the sequence): a
    compaction request holding the previous item and the chunks that fell out of the
    kept tail, or no call where none did; the fold's record names the tail it kept."""
    caller, arm, chain, i, fixture = step.caller, step.arm, step.chain, step.i, step.fixture
    backend = caller.backend
    folds = list(chain.folds)
    prev = folds[-1] if folds else None
    older, kept = cut(folds, i, n)
    kept_text = [fixture.chunks[c] for c in kept]
    tail_tokens = kept_tokens(backend, fixture, kept)
    if not older:  # nothing fell out of the tail: the history is the tail, no request
        made = no_call_fold(backend, list(step.pending), i, carry_of(None, kept_text),
                            False)
        return FoldResult(replace(made, carry_opaque=False, retained_tokens=tail_tokens,
                                  kept=kept), chain.item)
    chunk = "\n".join(fixture.chunks[c] for c in older)
    request = backend.compaction_request(chain.item, chunk, arm.system_prompt,
                                         arm.fold_budget_tokens, step.temperature,
                                         instructions=arm.instructions)
    reply, hit, key = caller.call(request, f"fold{i}")
    c = backend.compaction_of(reply)
    compacted = c.item is not None
    block: str | None  # the item's readable text (None: no item yet)
    if compacted:
        item, opaque, block, block_tokens = c.item, c.opaque, c.text or "", c.retained_tokens
    else:  # the previous item goes on; the chunks that fell out are lost
        item = chain.item
        opaque = bool(prev and prev.carry_opaque) and item is not None
        block = (previous_block(prev, fixture) if prev and item is not None and not opaque
                 else None)
        block_tokens = previous_block_tokens(prev, backend, fixture) if item is not None \
            else 0
    carry = "" if opaque else carry_of(block, kept_text)
    log.info("%s fold %d/%d (native %s, chunks %s compacted, %s kept): %d prompt + %d "
             "completion tokens, %s%s%s", caller.sample.row_id, i + 1, len(fixture.chunks),
             c.mechanism, older, kept, reply.prompt_tokens, reply.completion_tokens,
             reply.finish_reason, "" if compacted else f" (NO COMPACTION: {c.failure})",
             " [store hit]" if hit else "")
    fold = Fold(
        fold=i, chunks=list(step.pending), request_key=key, store_hit=hit, seed=None,
        max_tokens=request.max_tokens, reply=reply.to_dict(), parse_ok=compacted,
        schema_valid=compacted, schema_errors=[] if compacted else [c.failure],
        carry=carry, carried_chars=len(carry), clipped=False, model_chars=len(carry),
        model_clipped=False, carry_opaque=opaque,
        retained_tokens=None if block_tokens is None else block_tokens + tail_tokens,
        kept=kept)
    return FoldResult(fold, item)
