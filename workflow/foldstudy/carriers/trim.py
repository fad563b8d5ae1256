"""`trim`: keep the most recent tokens of the session, drop the rest; no fold calls the
model. The naive baseline every summary must beat (inspect_ai's `CompactionTrim`,
https://inspect.aisi.org.uk/compaction.html): the carry is the last `carry_cap_tokens`
tokens of the session read so far, as the study counts tokens, and the recall turn reads
it. A fact planted inside that window is kept whole; one before it is gone.
"""

from __future__ import annotations

from .registry import register_carrier
from .session import SessionCarrier, joined, tail_within
from .types import ArmView, BackendView

TRIM_SOURCE = "the session trimmed to its newest tokens against your best arm"


@register_carrier
class Trim(SessionCarrier):
    """The newest carry_cap_tokens of the session, as written."""

    kind = "trim"
    pattern = "trim"
    words = "the newest tokens of the session, the rest dropped"
    against_best = TRIM_SOURCE

    def describe(self, arm: ArmView) -> str:
        return f"the newest {arm.carry_cap_tokens} tokens of the session, the rest dropped"

    def keep(self, arm: ArmView, chunks: list[str], backend: BackendView) -> tuple[str, bool]:
        return tail_within(joined(chunks), arm.carry_cap_tokens, backend.count_tokens)
