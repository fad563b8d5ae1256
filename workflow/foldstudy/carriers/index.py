"""The index arm (resources/arms.yaml `base`, `index_share`): its base arm's kind,
wrapped, with an identifier index carried beside the model's carry (carriers/identifier_index.py).

It is not a kind an arm's `carry` names: the base's prompt, schema, ceilings and carry
rule stay unchanged ("The model's fold prompt is the base arm's, unchanged"), and this
wrapper adds what the index changes: after each fold the index takes the chunk's
identifiers, the recall turn reads it under the arm's index heading, and the tokens the
run retains are the carry's and the index's. An index arm is outside the matched
comparison: it is read on its card line against its base arm only.
"""

from __future__ import annotations

from ..records.run_record import Fold, RunRecord
from .base import Carrier
from .identifier_index import index_text, recall_carrier, update_index
from .types import ArmEntry, ArmView, BackendView, ChainView, FoldStep
from .wrapped import WrappedCarrier


class IndexCarrier(WrappedCarrier):
    """The base's carrier (`inner`; None where only the arms.yaml entry is known, which
    names its base and not the base's kind), with the identifier index beside it: every
    hook is the base carrier's but those the index changes, below."""

    kind = "index"
    matched = False

    def __init__(self, base: str, inner: Carrier | None) -> None:
        super().__init__(inner, f"the index arm on {base} was not resolved (its carry is "
                                "its base's)")
        self.base = base
        # what its base's fold decides (an entry that names no kind: never opaque)
        self.may_be_opaque = inner is not None and inner.may_be_opaque
        if inner is not None:
            self.sends_fold_shape = inner.sends_fold_shape

    @property
    def index_base(self) -> str | None:
        return self.base

    def outside(self, spec: ArmEntry) -> str:
        return f"an index arm, read on its card line against its base arm {self.base}"

    def after_fold(self, step: FoldStep, fold: Fold) -> None:
        """The index is mechanical: the chunk just folded, never the model's reply."""
        super().after_fold(step, fold)
        count_tokens = step.caller.backend.count_tokens
        step.chain.index = update_index(
            step.chain.index, "\n".join(step.fixture.chunks[c] for c in step.pending),
            step.arm.index_cap_tokens, count_tokens)
        fold.index = index_text(step.chain.index)
        fold.index_tokens = count_tokens(fold.index)

    def recall_carry(self, arm: ArmView, chain: ChainView) -> str:
        """The base's carry, then the index under the arm's index heading."""
        return recall_carrier(super().recall_carry(arm, chain), index_text(chain.index),
                              arm.index_heading)

    def retained(self, backend: BackendView, chain: ChainView) -> int | None:
        """The carry's tokens and the index's, each counted by the backend."""
        carry = super().retained(backend, chain)
        index = index_text(chain.index)
        return None if carry is None else carry + (backend.count_tokens(index) if index
                                                   else 0)

    def finish(self, record: RunRecord, backend: BackendView, chain: ChainView) -> None:
        super().finish(record, backend, chain)
        record.final_index = index_text(chain.index)
        record.retained_tokens = self.retained(backend, chain)
