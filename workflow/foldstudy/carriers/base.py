"""The one interface of a carrier kind: what resources/arms.yaml's `carry` names.

A carrier decides how a session is carried from fold to fold and what the recall turn
reads at the end (paper §3.1: "each fold receives the previous carry and the next chunk
and returns a replacement carry"). Every decision that differs between kinds is a class
attribute or a method here, with the paper's model-written carry as the default, so the
fold job, the probe, the grader, the analysis and the config check ask the arm's carrier
and never test a kind's name:

- whether a fold calls the model at all (`calls_model`), whether it sends the arm's own
  request (`sends_fold_shape`: the probe probes it), and what a fold is (`fold`);
- how the carry is built from a reply (`render`) and what goes on beside it
  (`after_fold`);
- whether the carry may be opaque (`may_be_opaque`);
- whether the arm is in the matched comparison (`matched`), and the card lines that read
  it otherwise (`against_best`, `outside`, `read_against`);
- the system prompt its arms must name (`system_prompt`), and whether a sweep may run it
  with another arm's prompt as the provider's instructions (`takes_instructions`);
- how its retained tokens are counted (`retained`);
- what the recall turn reads (`recall_carry`, `recall_context`, `recall_kept`) and, at
  most, how many tokens of it (`recall_bound`: plan.tsv's price).

A kind is one module in this package with one subclass under `@register_carrier`
(registry.py); docs/design.md "Adding a carrier" says how.

What a carrier is handed is typed by what it reads (types.py): the arm, the fixture, the
fold chain, the caller and its backend as Protocols (study/arm.py reads this package and
the fold job sits above it, so neither is imported here), one fold's needs as a FoldStep
and what it made as a FoldResult, around records/run_record.py's Fold and RunRecord.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ..records.probe_record import Permission, ProbeRecord
from ..records.run_record import Fold, RunRecord
from .render import Rendered, fields_rendered
from .types import (
    ArmEntry,
    ArmView,
    BackendView,
    ChainView,
    CompactionItem,
    FixtureView,
    FoldResult,
    FoldStep,
    JsonObject,
)


class Carrier:
    """A model-written carry (the paper's arms): each fold sends the arm's prompt, the
    previous carry and the chunk; the reply, as the kind renders it, is the next carry,
    clipped to the arm's carry cap; the recall turn reads the last one."""

    # What arms.yaml's `carry` says for this kind (a parametric kind: its stem, "field")
    kind: ClassVar[str] = ""
    # The names of this kind, as a regular expression (a parametric kind: "field:NAME")
    pattern: ClassVar[str] = ""
    # How the config check's refusal lists it among the known kinds
    shown: ClassVar[str] = ""
    # Can a user's own arm (config arms_file) name it: an own arm twins a paper arm's
    # capacity, so a kind whose capacity is not the study's cannot be an own arm's
    own_arm: ClassVar[bool] = True
    # Does a fold call the model at all (False: the harness keeps the session by a rule,
    # carriers/session.py; only the recall turn is a call, as plan.tsv prices it)
    calls_model: ClassVar[bool] = True
    # Does a fold send the arm's own request (system prompt, fold message, schema), so
    # the probe tries its shape before any fold (run/probe.py). Not a ClassVar, as the
    # next: a wrapped carrier's instance says its inner carrier's (carriers/wrapped.py)
    sends_fold_shape: bool = True
    # May a run's carry be opaque (an item the study cannot read: only the recall
    # answer is graded, grade/trace.py); a record claiming so on another kind is forged
    may_be_opaque: bool = False
    # Is the arm inside the paper's matched comparison (paper §3.2: "Prompt, input, fold
    # protocol, and output budget are held fixed within a comparison")
    matched: ClassVar[bool] = True
    # The source of the card line reading an arm of this kind against the best matched
    # arm that ran ("" : no such line); its words name the carrier on the card
    against_best: ClassVar[str] = ""
    # The carry of the plain arm each card reads an arm of this kind against ("" : none;
    # a `native:keep_recent=N` arm against `native`: analysis/decision.py
    # read_against_contrasts), on a line whose source `read_against_source` says
    read_against: ClassVar[str] = ""
    # Is the arm read on each card as the recall ceiling (every other arm's lost facts
    # split into the carrier's loss and the recall turn's: analysis/card_lines.py
    # ceiling_lines)
    ceiling: ClassVar[bool] = False
    # Does the recall turn read the whole session (the config check then asks the
    # model's context to hold it: study/capacity.py ceiling_context_problems)
    reads_whole_session: ClassVar[bool] = False
    # What is carried, in a reader's words (a carrier folder's README)
    words: ClassVar[str] = ""
    # What a fold recorded as failed (parse_ok false, counted in the row's
    # parse_failures) means for this kind, said on every card its arm is on as "k of n
    # folds <fold_failure>" ("" : not said; a model's reply that does not parse is
    # read through the row's own counts)
    fold_failure: ClassVar[str] = ""
    # The prompt (resources/prompts/<name>.md) an arm of this kind must name as its
    # system_prompt ("" : its own); resolving an arm that names another is refused
    system_prompt: ClassVar[str] = ""
    # May a sweep add, beside an arm of this kind, a copy sending another arm's prompt
    # as the provider's compaction instructions (config sweeps.X.native_with: the
    # generated arm `<arm>@<other>`, study/derived.py with_native_prompts)
    takes_instructions: ClassVar[bool] = False
    # Does a fold ask the model's backend for its provider's own compaction
    # (backends/base.py `native_compaction`): the config check refuses such an arm on a
    # model whose backend has none, whose runs could only be `not_run` records
    needs_native_compaction: ClassVar[bool] = False

    def __init__(self, name: str) -> None:
        self.name = name  # the arms.yaml value, e.g. "field:summary"

    @classmethod
    def names(cls, name: str) -> bool:
        """Is `name` (an arms.yaml `carry`) one of this kind's?"""
        return bool(cls.pattern) and re.fullmatch(cls.pattern, name) is not None

    # -- the arm's spec ------------------------------------------------------------------

    def check(self, arm_id: str, sections: dict[str, list[str]], headings: list[str],
              schema: JsonObject | None) -> None:
        """Refuse (SpecError) an arm whose other keys this kind cannot carry."""

    @property
    def index_base(self) -> str | None:
        """The arm whose fold this one wraps (an index arm's `base`), or None."""
        return None

    @classmethod
    def says_against_best(cls, source: str) -> bool:
        """Is `source` this kind's "against your best arm" card line (a kind whose words
        depend on the model, the native arm's, reads every model's)?"""
        return bool(cls.against_best) and source == cls.against_best

    def read_against_source(self, compaction: str) -> str:
        """The source of the card line reading this arm against its plain arm
        (`read_against`), on a card whose model's native arm is called `compaction` (the
        provider's, or a proxy's endpoint's: carriers/native.py native_words); "" here."""
        return ""

    @classmethod
    def says_read_against(cls, source: str) -> bool:
        """Is `source` this kind's `read_against_source` line, in any model's words (a
        card read back knows its lines by their sources alone)?"""
        return False

    def outside(self, spec: ArmEntry) -> str:
        """Why an arm of this kind is in no card verdict, in a refusal's words ("" : it
        is inside the matched comparison)."""
        return ""

    def describe(self, arm: ArmView) -> str:
        """What the arm carries, in a reader's words."""
        return self.words or self.name

    # -- a fold ---------------------------------------------------------------------------

    def render(self, arm: ArmView, obj: JsonObject, reply_text: str) -> Rendered:
        """The carry of a schema reply that parsed (`obj`): every field under its title."""
        assert arm.schema is not None
        return fields_rendered(obj, arm.schema)

    def carried_fields(self, arm: ArmView) -> list[str]:
        """The schema fields whose text reaches the next fold (every field here)."""
        return list((arm.schema or {}).get("properties", {}))

    def fold(self, step: FoldStep) -> FoldResult:
        """Fold i's record (`step.pending`: the chunks it folds; `step.chain`: the folds
        so far): here the arm's own request to the model, `step.model_fold` (run/fold.py
        fold_step). Raises ContextOverflow (the chunk is folded with the next) and
        BackendError."""
        return FoldResult(step.model_fold())

    def after_fold(self, step: FoldStep, fold: Fold) -> None:
        """What goes on beside the carry once fold i is made (in place); nothing here."""

    # -- the recall turn and the record ---------------------------------------------------

    def recall_carry(self, arm: ArmView, chain: ChainView) -> str:
        """What the recall turn reads where the summary goes: the last carry."""
        return chain.carry

    def recall_context(self, chain: ChainView) -> CompactionItem:
        """What the recall request continues from (ChatRequest.context); None here."""
        return None

    def folds_without_call(self) -> int:
        """How many of a run's first folds send no request (a `native:keep_recent=N`
        arm's first N: nothing is older than its kept tail yet); none here. What prices a
        run (run/audit.py) and what counts its failed folds (analysis/card_lines.py) leave
        them out."""
        return 0

    def recall_kept(self, chain: ChainView, fixture: FixtureView) -> list[str]:
        """The chunks the recall request sends verbatim after its context and before its
        question (a `native:keep_recent=N` arm's kept tail); none here."""
        return []

    def retained(self, backend: BackendView, chain: ChainView) -> int | None:
        """The tokens the run keeps at its end, counted as the study counts tokens (the
        backend's count_tokens); None: unknown, never an estimate."""
        return backend.count_tokens(chain.carry)

    def finish(self, record: RunRecord, backend: BackendView, chain: ChainView) -> None:
        """What this kind adds to a made run's record (in place); nothing here."""
        record.retained_tokens = self.retained(backend, chain)

    def recall_bound(self, arm: ArmView, session_tokens: float) -> float:
        """The most tokens of carry the recall turn reads (run/audit.py's price): the
        last reply, at most the carry cap and the fold budget."""
        return float(min(arm.carry_cap_tokens, arm.fold_budget_tokens))

    def permission(self, probe: ProbeRecord, backend: str) -> Permission | None:
        """The probe's permission of an arm that sends no fold shape of its own (None: its
        shape's verdict decides)."""
        return None
