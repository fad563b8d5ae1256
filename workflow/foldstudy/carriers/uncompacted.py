"""`uncompacted`: no compaction at all, the recall ceiling. The recall turn reads the
whole session where a summary would go; no fold calls the model.

It answers what no arm can: whether a fact an arm lost was the carrier's loss (the
ceiling, reading everything, recalled it) or the recall turn's (the ceiling missed it
too). Each card reads it so, per arm (analysis/card_lines.py ceiling_lines). The session
must fit the model's context: the config check refuses one that does not, naming the
tokens it needs and the model's (study/capacity.py ceiling_context_problems).
"""

from __future__ import annotations

from .registry import register_carrier
from .session import SessionCarrier, joined
from .types import ArmView, BackendView

UNCOMPACTED_SOURCE = "the whole session (the ceiling) against your best arm"


@register_carrier
class Uncompacted(SessionCarrier):
    """The carry is the session read so far, whole."""

    kind = "uncompacted"
    pattern = "uncompacted"
    words = "the whole session, not compacted (the recall ceiling)"
    against_best = UNCOMPACTED_SOURCE
    ceiling = True
    reads_whole_session = True

    def keep(self, arm: ArmView, chunks: list[str], backend: BackendView) -> tuple[str, bool]:
        return joined(chunks), False

    def recall_bound(self, arm: ArmView, session_tokens: float) -> float:
        """The whole session: no cap applies."""
        return session_tokens
