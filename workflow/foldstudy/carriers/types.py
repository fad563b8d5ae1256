"""What a carrier is handed and what a fold gives back, typed: the arm, the fixture, the
fold chain, the caller and its backend as a carrier reads them, what one fold needs
(FoldStep) and what it made (FoldResult), and the probe's record and permission.

The things a carrier reads come from above it (study/arm.py's Arm and
study/fixture_types.py's Fixture read this package; run/fold.py's Caller and FoldChain
sit above it; the backends are the fold job's), so each is a Protocol naming only what a
carrier reads of it, and nothing here imports them: any object of that shape will do, a
test's stand-in too. The run record and a fold's entry are records/run_record.py's own
dataclasses, below this package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..records.run_record import Fold

# A parsed JSON object (a schema reply, a JSON Schema): its values are whatever the JSON
# held, read by key where the schema says what is there.
JsonObject = dict[str, Any]
# An arm's entry as resources/arms.yaml (or an own arms file) writes it, before it is
# resolved: read by key, each key checked where it is read.
ArmEntry = Mapping[str, object]
# A provider's compaction item (Anthropic's signed block, OpenAI's compacted window): sent
# on unchanged and never read by the study, so nothing is assumed of its shape; None: no
# compaction yet.
CompactionItem = object


class ArmView(Protocol):
    """A resolved arm (study/arm.py Arm), as a carrier reads it."""

    @property
    def carry(self) -> str: ...

    @property
    def base(self) -> str | None: ...

    @property
    def schema(self) -> JsonObject | None: ...

    @property
    def sections(self) -> dict[str, list[str]]: ...

    @property
    def system_prompt(self) -> str: ...

    @property
    def instructions(self) -> str | None: ...

    @property
    def fold_budget_tokens(self) -> int: ...

    @property
    def carry_cap_tokens(self) -> int: ...

    @property
    def index_cap_tokens(self) -> int: ...

    @property
    def index_heading(self) -> str: ...


class FixtureView(Protocol):
    """A session cut into chunks (study/fixture_types.py Fixture): chunk i is fold i's."""

    @property
    def chunks(self) -> Sequence[str]: ...


class ChainView(Protocol):
    """What the folds of one run left so far (run/fold.py FoldChain)."""

    @property
    def carry(self) -> str: ...

    @property
    def folds(self) -> Sequence[Fold]: ...

    @property
    def item(self) -> CompactionItem: ...

    # an index arm's identifier index, oldest entry first: its carrier replaces it
    index: list[str]


class RequestView(Protocol):
    """A request the backend made for a carrier (a compaction request), as it reads it."""

    @property
    def max_tokens(self) -> int: ...


class ReplyView(Protocol):
    """A model's reply (backends/base.py Reply), as a carrier reads it."""

    @property
    def finish_reason(self) -> str: ...

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...


class CompactionView(Protocol):
    """What one native compaction returned (backends/base.py Compaction)."""

    @property
    def item(self) -> CompactionItem: ...

    @property
    def text(self) -> str | None: ...

    @property
    def opaque(self) -> bool: ...

    @property
    def mechanism(self) -> str: ...

    @property
    def retained_tokens(self) -> int | None: ...

    @property
    def failure(self) -> str: ...


class BackendView(Protocol):
    """The model's backend (backends/base.py Backend): how it counts tokens, and its
    provider's own compaction where it has one."""

    def count_tokens(self, text: str) -> int: ...

    @property
    def token_count_method(self) -> str: ...

    # the compaction its provider is asked for (None: it has none), the beta it is
    # under, and how the chunk goes on the wire (backends/base.py says each)
    @property
    def native_compaction(self) -> str | None: ...

    @property
    def compaction_beta(self) -> str | None: ...

    @property
    def chunk_presented_as(self) -> str: ...

    def compaction_request(self, previous: CompactionItem, chunk: str, system_prompt: str,
                           max_tokens: int, temperature: float,
                           instructions: str | None = None) -> RequestView: ...

    # the reply is the one the caller returned for the backend's own request, handed
    # back unread: its type is the backend's
    def compaction_of(self, reply: Any) -> CompactionView: ...


class SampleView(Protocol):
    """Which run this is (run/fold.py Sample): its row id names it in the log."""

    @property
    def row_id(self) -> str: ...


class CallerView(Protocol):
    """How a run's turns are called (run/fold.py Caller): through the response store
    and the ledger, as one sample, on one backend."""

    @property
    def backend(self) -> BackendView: ...

    @property
    def sample(self) -> SampleView: ...

    # (reply, store hit, request key) of one turn. The request is one the caller's own
    # backend made (compaction_request), handed over unread: its type is the backend's
    def call(self, request: Any, turn: str) -> tuple[ReplyView, bool, str]: ...


@dataclass(frozen=True)
class FoldStep:
    """What fold i needs: the chunks it folds, the run it belongs to, and the arm's own
    request to the model (`model_fold`: run/fold.py fold_step, ready to send; a carrier
    whose fold is another request, or none, leaves it unsent)."""

    i: int  # 0-based: the fold that takes in chunk i
    pending: list[int]  # the chunks it folds (more than i alone after a catch-up)
    temperature: float
    arm: ArmView
    fixture: FixtureView
    chain: ChainView
    caller: CallerView
    model_fold: Callable[[], Fold]


@dataclass
class FoldResult:
    """What one fold made: its entry in the record's folds, and (a native arm's fold) the
    compaction item the next fold and the recall turn send first (None: none)."""

    fold: Fold
    item: CompactionItem = None
