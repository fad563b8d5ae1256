"""The run record's types: what a fold job writes and every reader reads back, one default per key.

A run record (results/runs/<sweep>/<model>/r<rep>/<arm>.json) is written by the fold
job (run/fold.py) and read by the grader (grade/), a staged decision's look
(analysis/staging.py) and the pages (report/). It lives in `study`, not beside the
fold job, for the layer order (docs/design.md): `grade` sits below `run` and reads it,
and the carriers (carriers/) build its fold entries. Its Fold is built where a
fold is made (run/fold.py fold_step, carriers/native.py native_step,
carriers/session.py no_call_fold) and written with `to_dict`; `from_dict` reads every
key once.

Reading never refuses: a record an older version wrote lacks the keys added since,
and each reads as the default written beside its field (the value every reader used
for it before the record was read typed). A key with no default reads None where it is
absent: only a record grade/rows.py read_record refuses, or a hand-cut one the
validity rule is asked of, lacks one. Keys the types do not name are ignored, as the
readers always did.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, TypeVar

RECORD_VERSION = 1

# the keys a record must hold to be graded (grade/rows.py read_record refuses one without)
REQUIRED = ("row_id", "status", "arm_spec", "folds")

T = TypeVar("T")


def _read(cls: type[T], d: dict[str, Any], **typed: Any) -> T:
    """An instance of dataclass cls from d: each field's key, else its default, else
    None; `typed` are the fields the caller read itself (nested types)."""
    kw: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in typed:
            kw[f.name] = typed[f.name]
        elif f.name in d:
            kw[f.name] = d[f.name]
        elif f.default is not MISSING:
            kw[f.name] = f.default
        elif f.default_factory is not MISSING:
            kw[f.name] = f.default_factory()
        else:
            kw[f.name] = None
    return cls(**kw)


def _without_none(d: dict[str, Any], optional: tuple[str, ...], keep: set[str]
                  ) -> dict[str, Any]:
    """d without its optional keys that are None (those in keep stay): an optional key is
    written only where it applies, as records always were."""
    return {k: v for k, v in d.items() if not (k in optional and v is None and k not in keep)}


@dataclass
class Fold:
    """One fold's entry in a record's `folds`: what was sent and what it carried on.

    The model-free carriers (carriers/session.py) write a fold with no call, each field
    saying so; a native arm's fold adds carry_opaque and retained_tokens, an index arm's
    its index.
    """

    fold: int  # 0-based index of the last chunk it took in (grade/trace.py fold_number)
    chunks: list[int]
    request_key: str | None
    store_hit: bool
    seed: int | None
    max_tokens: int
    reply: dict[str, Any]  # the backend's Reply.to_dict()
    parse_ok: bool
    schema_valid: bool
    schema_errors: list[str]
    carry: str
    carried_chars: int
    clipped: bool
    # the model's text in the carry and whether it alone exceeded the cap. None: a record
    # from before they were measured, read as the carry's (grade/rows.py fold_carried_chars)
    model_chars: int | None = None
    model_clipped: bool | None = None
    # a native arm's fold only: whether its compaction item is opaque, and that item's
    # own token count (None: the provider reports none, or no compaction)
    carry_opaque: bool | None = None
    retained_tokens: int | None = None
    # an index arm's fold only: its identifier index after the fold, and its tokens
    index: str | None = None
    index_tokens: int | None = None
    # a `native:keep_recent=N` arm's fold only: the chunks kept verbatim after the
    # compaction item once the fold is made, the last N seen (carriers/native_keep.py)
    kept: list[int] | None = None

    _OPTIONAL = ("model_chars", "model_clipped", "carry_opaque", "retained_tokens", "index",
                 "index_tokens", "kept")

    def to_dict(self) -> dict[str, Any]:
        # a native fold's retained_tokens stays, None where the provider reports no count
        keep = {"retained_tokens"} if self.carry_opaque is not None else set()
        return _without_none(asdict(self), self._OPTIONAL, keep)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fold:
        return _read(cls, d)


@dataclass
class RunRecord:
    """results/runs/.../{arm}.json: everything a grader or a reviewer needs of one run.

    status "run": every fold and the recall turn as they happened. status "not_run": the
    probe forbade the arm, no call was made, and not_run_reason says which verdict; or,
    in a staged decision's sweep, budget_usd stopped the run part-way (not_run_reason
    "budget", the ledger's words in not_run_detail): its folds are those made and paid
    before the stop, so a look counts their spend.
    """

    status: str
    row_id: str
    sweep: str
    scenario: str
    model: str
    arm: str
    repeat: int
    position: int
    arm_spec: dict[str, Any]
    folds: list[Fold] = field(default_factory=list)
    final_carry: str = ""
    # the recall turn: request_key, store_hit, seed, reply, answer; None: none was made
    recall: dict[str, Any] | None = None
    catchup_fired: bool = False
    missing_folds: int = 0
    infra_error: dict[str, Any] | None = None
    record_version: int = RECORD_VERSION
    attempt: int = 1
    previous_attempts: list[dict[str, Any]] = field(default_factory=list)
    # run only (None: a not_run record, or one from before the key)
    endpoint: dict[str, Any] | None = None
    ceiling_delivery: str | None = None
    token_count_method: str | None = None
    temperature: float | None = None
    n_chunks: int | None = None
    store: dict[str, int] | None = None
    wall_s: float | None = None
    # not_run only
    not_run_reason: str | None = None
    not_run_detail: str | None = None
    # a staged decision's run only: the budget_usd in force when it was made (the fold
    # rule reruns a budget-stopped run when it changes: validity.fold_budget)
    budget_usd: float | None = None
    # a native arm's run only: the provider's compaction (mechanism, beta,
    # whether its item is opaque, how the chunk was presented) and the last item, which
    # the recall turn continued from
    native: dict[str, Any] | None = None
    # an index arm's run only: the identifier index the recall turn read
    # (carriers/identifier_index.py)
    final_index: str | None = None
    # run only: the tokens the run retained at its end, the final carry's and the
    # index's, counted as the study counts tokens (the backend's count_tokens, whose
    # method token_count_method records): recall's x axis in the retained-token table. A
    # native arm's is the last compaction's own token count where the provider reports
    # one, else None (unknown, never an estimate; also a record from before the key)
    retained_tokens: int | None = None

    _OPTIONAL = ("endpoint", "ceiling_delivery", "token_count_method", "temperature",
                 "n_chunks", "store", "wall_s", "not_run_reason", "not_run_detail",
                 "budget_usd", "native", "final_index", "retained_tokens")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["folds"] = [f.to_dict() for f in self.folds]
        # a native arm's retained_tokens stays, None where the provider reports no count
        # (unknown); elsewhere an optional field that is None is left out
        keep = {"retained_tokens"} if self.native is not None else set()
        return _without_none(d, self._OPTIONAL, keep)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunRecord:
        """A record as written, by this version or an older one (see the module)."""
        return _read(cls, d, folds=[Fold.from_dict(f) for f in d.get("folds") or []])

    @property
    def answer(self) -> str:
        """The recall turn's answer; "" where no recall turn was made."""
        return (self.recall or {}).get("answer", "")


def as_record(record: RunRecord | dict[str, Any]) -> RunRecord:
    """The typed record of what a reader was handed: a RunRecord, or a record's dict as
    read from its file (the validity rule is asked of either)."""
    return record if isinstance(record, RunRecord) else RunRecord.from_dict(record)
