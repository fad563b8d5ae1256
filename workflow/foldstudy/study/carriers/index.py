"""The index arm (resources/arms.yaml `base`, `index_share`): its base arm's kind,
wrapped, with an identifier index carried beside the model's carry (study/index.py).

It is not a kind an arm's `carry` names: the base's prompt, schema, ceilings and carry
rule stay unchanged ("The model's fold prompt is the base arm's, unchanged"), and this
wrapper adds what the index changes: after each fold the index takes the chunk's
identifiers, the recall turn reads it under the arm's index heading, and the tokens the
run retains are the carry's and the index's. An index arm is outside the matched
comparison: it is read on its card line against its base arm only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..index import index_text, recall_carrier, update_index
from .base import Carrier
from .render import Rendered


class IndexCarrier(Carrier):
    """The base's carrier (`inner`; None where only the arms.yaml entry is known, which
    names its base and not the base's kind), with the identifier index beside it."""

    kind = "index"
    matched = False

    def __init__(self, base: str, inner: Carrier | None) -> None:
        super().__init__(inner.name if inner else "")
        self.base, self.inner = base, inner

    def _inner(self) -> Carrier:
        if self.inner is None:
            raise TypeError(f"the index arm on {self.base} was not resolved (its carry is "
                            "its base's)")
        return self.inner

    @property
    def index_base(self) -> str | None:
        return self.base

    @property
    def sends_fold_shape(self) -> bool:  # type: ignore[override]
        return self._inner().sends_fold_shape

    @property
    def may_be_opaque(self) -> bool:  # type: ignore[override]
        return self.inner is not None and self.inner.may_be_opaque

    def outside(self, spec: dict[str, Any]) -> str:
        return f"an index arm, read on its card line against its base arm {self.base}"

    def describe(self, arm: Any) -> str:
        return self._inner().describe(arm)

    def check(self, arm_id: str, sections: dict[str, list[str]], headings: list[str],
              schema: dict[str, Any] | None) -> None:
        self._inner().check(arm_id, sections, headings, schema)

    def render(self, arm: Any, obj: dict[str, Any], reply_text: str) -> Rendered:
        return self._inner().render(arm, obj, reply_text)

    def carried_fields(self, arm: Any) -> list[str]:
        return self._inner().carried_fields(arm)

    def fold(self, model_fold: Callable[[], dict[str, Any]], caller: Any, arm: Any,
             fixture: Any, chain: Any, pending: list[int], i: int, temperature: float
             ) -> dict[str, Any]:
        return self._inner().fold(model_fold, caller, arm, fixture, chain, pending, i,
                                  temperature)

    def after_fold(self, caller: Any, arm: Any, fixture: Any, chain: Any,
                   pending: list[int], fold: dict[str, Any]) -> None:
        """The index is mechanical: the chunk just folded, never the model's reply."""
        self._inner().after_fold(caller, arm, fixture, chain, pending, fold)
        chain.index = update_index(chain.index, "\n".join(fixture.chunks[c] for c in pending),
                                   arm.index_cap_tokens, caller.backend.count_tokens)
        fold["index"] = index_text(chain.index)
        fold["index_tokens"] = caller.backend.count_tokens(fold["index"])

    def recall_carry(self, arm: Any, chain: Any) -> str:
        """The base's carry, then the index under the arm's index heading."""
        return recall_carrier(self._inner().recall_carry(arm, chain), index_text(chain.index),
                              arm.index_heading)

    def recall_context(self, chain: Any) -> Any:
        return self._inner().recall_context(chain)

    def retained(self, backend: Any, chain: Any) -> int | None:
        """The carry's tokens and the index's, each counted by the backend."""
        carry = self._inner().retained(backend, chain)
        index = index_text(chain.index)
        return None if carry is None else carry + (backend.count_tokens(index) if index
                                                   else 0)

    def finish(self, record: Any, backend: Any, chain: Any) -> None:
        self._inner().finish(record, backend, chain)
        record.final_index = index_text(chain.index)
        record.retained_tokens = self.retained(backend, chain)
