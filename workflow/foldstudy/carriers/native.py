"""`native`: the provider's own compaction (Anthropic's on-demand compaction, OpenAI's
POST /responses/compact), replayed as the providers' docs say.

Each fold sends the previous compaction item and the chunk and asks the provider to
compact now; the next fold and the recall turn send the last item first, unchanged. Its
capacity is the provider's, not the study's: fold_budget_tokens is the request's
max_tokens where the API takes one, no ceiling is declared, no carry cap is applied, so
the arm is outside the matched comparison and is read on its card against the best
matched arm that ran. An own arm cannot name it (an own arm twins a paper arm's
capacity).

The system prompt. A compaction request sends the recall turn's system prompt
(resources/prompts/recall_system.md), the one the rest of the conversation is sent
with: Anthropic's on-demand compaction page asks to "send the same system prompt and
tools as the rest of the conversation", and a provider may key its summary (and its
prompt cache) on that prompt. It is done in the data, not here: a native arm's entry in
resources/arms.yaml names `recall_system` as its system_prompt, and resolving an arm of
this kind that names another is refused (`system_prompt` below; study/spec.py
resolve_arm), so the prompt is read from the one file the recall turn reads, every row's
system_prompt_sha256 is the prompt that was sent, and the audit prices it, with no
second path to the recall prompt inside the fold.

With another arm's prompt (config sweeps.X.native_with: the generated arm
`native@ARM`, study/derived.py with_native_prompts): the same compaction, sending ARM's
system prompt as the provider's compaction instructions (Arm.instructions). Anthropic
takes them beside the summarize request (`compaction.instructions`, which replaces the
provider's default summarization prompt) and the system prompt stays the recall turn's;
OpenAI's compact endpoint has `instructions` alone, so there ARM's prompt takes the
system prompt's place (backends/openai_responses.py says why).

Whose compaction it is, in a reader's words (`native_words`): on the provider's own API
it is the provider's; on a model whose config says `native_via: proxy` (a gateway,
LiteLLM, a self-hosted server, which may answer with a summary of its own) it is
"compaction by <host[:port]>", never the provider's. Every title, card line and page
that names a native arm takes its words from there, per model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..records.probe_record import NativeVerdict, Permission, ProbeRecord
from ..records.run_record import Fold, RunRecord
from .base import Carrier
from .registry import register_carrier
from .types import (
    ArmEntry,
    BackendView,
    ChainView,
    CompactionItem,
    FoldResult,
    FoldStep,
)

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class NativeWords:
    """What a model's native arm is called where a reader sees it. compaction: the arm's
    title (resources/arms.yaml's for the provider's); default: what a `native@ARM` line
    reads ARM's prompt against, the same compaction sent no instructions."""

    compaction: str = "the provider's compaction"
    default: str = "the provider's default"

    @property
    def against_best(self) -> str:
        """The source of the card line reading the arm against your best arm."""
        return f"{self.compaction} against your best arm"


# The provider's own compaction, on its own API (or where native_via says provider)
PROVIDER = NativeWords()
# How a proxy's compaction is named: this, then the endpoint (native_words)
BY_ENDPOINT = "compaction by "
# Where one title stands for models whose words differ (a table row over several)
MIXED = NativeWords(f"{BY_ENDPOINT}each model's endpoint", "its default")
# The source of the card's line "the provider's compaction against your best arm": a
# native arm against the matched arm with the highest mean recall in the cell.
NATIVE_SOURCE = PROVIDER.against_best


def native_words(model_config: Mapping[str, Any] | None) -> NativeWords:
    """Whose compaction a model's native arm grades, in a reader's words: the provider's
    (PROVIDER), unless the model config says `native_via: proxy`, then "compaction by
    <endpoint>" (the host of its base_url, `endpoint`). The one place these words are
    decided (study/checks.py native_via_problem refuses a native arm off the provider's
    API until native_via says whose it is)."""
    config = model_config or {}
    if config.get("native_via") != "proxy":
        return PROVIDER
    return NativeWords(f"{BY_ENDPOINT}{endpoint(config.get('base_url'))}", "its default")


def endpoint(base_url: Any) -> str:
    """host[:port] of a base URL, lowercased as urlsplit reads it: never its scheme, path,
    query or userinfo (a key may sit in either), so a title cannot leak one. A URL with no
    host reads as "the model's endpoint"."""
    try:
        parts = urlsplit(str(base_url or ""))
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port that is no number: the host alone
        host, port = urlsplit(str(base_url or "")).hostname or "", None
    if not host:
        return "the model's endpoint"
    host = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    return f"{host}:{port}" if port is not None else host


def native_words_of(models: Mapping[str, Any] | None) -> dict[str, NativeWords]:
    """model -> its native words, for each model of a config's `models` whose words are not
    the provider's (native_words); a model not here reads as PROVIDER."""
    return {str(m): w for m, c in (models or {}).items()
            if isinstance(c, Mapping) and (w := native_words(c)) != PROVIDER}


def says_native_against_best(source: str) -> bool:
    """Is `source` a native arm's "against your best arm" card line, in any model's words
    (a card read back knows its lines by their sources alone)?"""
    proxy = source.startswith(BY_ENDPOINT) and source.endswith(" against your best arm")
    return source == NATIVE_SOURCE or proxy
# The probe's verdict of a native arm on a backend whose provider does not compact
NATIVE_UNSUPPORTED = "native_compaction_unsupported"
# The recall turn's system prompt (resources/prompts/<this>.md, which workflow/rules/
# wiring.Wiring.prompt_files hands the fold job as Prompts.recall_system): what every
# compaction request sends as its system prompt
RECALL_SYSTEM_PROMPT = "recall_system"


@register_carrier
class Native(Carrier):
    """The provider compacts: a fold is a compaction request, the carry is the item's
    readable text (empty where the item is opaque), the recall turn continues from the
    last item."""

    kind = "native"
    pattern = "native"
    own_arm = False
    sends_fold_shape = False  # its permission is the probe's native_compaction verdict
    may_be_opaque = True  # OpenAI's `encrypted_content`
    matched = False
    against_best = NATIVE_SOURCE
    # Its provider answered without compacting (content null, no block, a stop reason
    # other than compaction, e.g. max_tokens): the arm's own behaviour, kept valid
    # (grade/validity.py), and said beside every recall difference of the arm
    fold_failure = "returned no compaction"
    # the system prompt of the conversation the compaction belongs to: the recall turn's
    system_prompt = RECALL_SYSTEM_PROMPT
    takes_instructions = True
    needs_native_compaction = True

    @classmethod
    def says_against_best(cls, source: str) -> bool:
        return says_native_against_best(source)

    def outside(self, spec: ArmEntry) -> str:
        return "the provider's compaction, read on its card line against the best matched arm"

    def fold(self, step: FoldStep) -> FoldResult:
        """A compaction request, never the arm's own (native_step)."""
        return native_step(step)

    def recall_context(self, chain: ChainView) -> CompactionItem:
        return chain.item

    def finish(self, record: RunRecord, backend: BackendView, chain: ChainView) -> None:
        native_fields(record, backend, chain)

    def permission(self, probe: ProbeRecord, backend: str) -> Permission | None:
        return native_permission(probe.get("native_compaction"), backend)


def native_step(step: FoldStep) -> FoldResult:
    """Fold i of a native arm: the previous compaction item and the pending
    chunks in, the provider asked to compact now, the record of the fold out.

    The request is the backend's (Backend.compaction_request: Anthropic's on-demand
    `compaction`, OpenAI's POST /responses/compact with the chunk as an assistant
    message), with the arm's instructions where it has any (a `native@ARM` arm: ARM's
    prompt), through the store and the ledger like every paid call. A readable block
    (Anthropic's `content`) is the carry, graded and traced like any; an opaque item
    (OpenAI's `encrypted_content`) leaves the carry empty and marked opaque, so only the
    recall answer is graded. The item goes on unchanged: no carry cap is applied (the
    providers' docs require it byte for byte; its capacity is the provider's). A reply
    without a compaction is the arm's own behaviour, recorded like a reply that does not
    parse: the previous item goes on, and the fold's chunk is lost.
    """
    caller, arm, chain, i = step.caller, step.arm, step.chain, step.i
    backend = caller.backend
    chunk = "\n".join(step.fixture.chunks[c] for c in step.pending)
    turn = f"fold{i}"
    request = backend.compaction_request(chain.item, chunk, arm.system_prompt,
                                         arm.fold_budget_tokens, step.temperature,
                                         instructions=arm.instructions)
    reply, hit, key = caller.call(request, turn)
    c = backend.compaction_of(reply)
    compacted = c.item is not None
    carry = (c.text or "") if compacted else chain.carry
    log.info("%s fold %d/%d (native %s): %d prompt + %d completion tokens, %s%s%s",
             caller.sample.row_id, i + 1, len(step.fixture.chunks), c.mechanism,
             reply.prompt_tokens, reply.completion_tokens, reply.finish_reason,
             "" if compacted else f" (NO COMPACTION: {c.failure})",
             " [store hit]" if hit else "")
    fold = Fold(
        fold=i,
        chunks=list(step.pending),
        request_key=key,
        store_hit=hit,
        seed=None,
        max_tokens=request.max_tokens,
        reply=reply.to_dict(),
        parse_ok=compacted,
        schema_valid=compacted,
        schema_errors=[] if compacted else [c.failure],
        carry=carry,
        carried_chars=len(carry),
        clipped=False,
        model_chars=len(carry),
        model_clipped=False,
        carry_opaque=c.opaque,
        retained_tokens=c.retained_tokens if compacted else None,
    )
    # the item the next fold sends (not recorded twice: the reply's raw holds it)
    return FoldResult(fold, c.item if compacted else chain.item)


def native_fields(record: RunRecord, backend: BackendView, chain: ChainView) -> None:
    """A native arm's record (in place): the provider's compaction as the probe names it,
    whether its carry is opaque, the last item, and its retained tokens (the last
    compaction's own count where the provider reports one, else None: unknown)."""
    folds = chain.folds
    done = [f for f in folds if f.parse_ok]
    record.native = {"mechanism": backend.native_compaction,
                     "beta": backend.compaction_beta or "",
                     "chunk_presented_as": backend.chunk_presented_as,
                     "opaque": any(f.carry_opaque for f in folds),
                     "item": chain.item}
    record.retained_tokens = done[-1].retained_tokens if done else None
    record.ceiling_delivery = "none"


def native_permission(verdict: NativeVerdict | None, backend: str) -> Permission:
    """A native arm's permission: the native_compaction verdict (a fold whose probe
    refused compaction writes a record saying why and makes no call), or, on a backend
    whose provider does not compact, a refusal saying so."""
    if verdict is None:
        return {"allowed": False, "verdict": NATIVE_UNSUPPORTED, "responsible_parameter": "",
                "reason": f"backend {backend} has no native compaction (docs/models.md: "
                          "anthropic and openai_responses have)"}
    return {"allowed": bool(verdict["allowed"]), "verdict": verdict["verdict"],
            "reason": verdict.get("reason", ""),
            "responsible_parameter": verdict.get("responsible_parameter", "")}
