"""The per-fold fact trace (docs/design.md §8): for every run, graded fact and fold, is the value
in that fold's carry, and which fold's chunk planted it.

Paper §4.10: "Because the carried summary is recorded, not merely measured, we can ask of
every row how many graded values are present in the carrier and how many the answer then
gets right." The trace asks the same question of every fold's carry, not only the last,
so a loss is dated: never taken in after planting, dropped at a later fold, or carried to
the end and missed by the answer. Presence is the grader's boundary rule
(grader.has_whole_token), the same one that decides checks.csv in_carrier. On an index
arm a fold's carrier is its carry and its identifier index: `carried_in` says which held
the value, and `present` is either.
"""

from __future__ import annotations

from typing import Any

from ..records.run_record import Fold, RunRecord, as_record
from ..study.fixture_types import Fact, Fixture
from .grader import has_whole_token

# What the trace's readers say of a fact in an opaque carry: neither kept nor lost.
OPAQUE = "opaque"


def carry_is_opaque(record: RunRecord) -> bool:
    """Is this run's carry opaque (a native arm whose provider's compaction item cannot
    be read)? Then the carry is recorded as opaque, the trace says so, and
    only the recall answer is graded, as a session's encrypted compaction grades no fact
    (sessions.OPAQUE_NOTE)."""
    return bool((record.native or {}).get("opaque"))


def fold_number(fold: Fold) -> int:
    """A recorded fold's number, 1-based (docs/design.md §8).

    The record numbers a fold by the 0-based index of the last chunk it took in, so a
    catch-up fold (one carry covering two chunks) keeps the number of its last chunk and
    the overflowed fold before it has no carry, hence no trace line.
    """
    return int(fold.fold) + 1


def planted_fold(fact: Fact, folds: list[Fold]) -> int:
    """The 1-based fold whose chunk holds the fact: the fold that took in fact.chunk (a
    catch-up fold when its own fold overflowed), else the fold it was due in (a run cut
    short before reaching it)."""
    for f in folds:
        if fact.chunk in f.chunks:
            return fold_number(f)
    return fact.chunk + 1


def fact_trace(record: RunRecord | dict[str, Any], fixture: Fixture) -> list[dict[str, Any]]:
    """trace.csv lines of one run record: one per (graded fact, fold made).

    A not_run record made no fold, so it has no line; a run cut short by an
    infrastructure fault has lines for the folds it made. A run whose carry is opaque (a
    native arm's encrypted compaction) has its lines with `present` empty:
    neither kept nor lost, opaque (OPAQUE, as the trace's readers say it).
    """
    record = as_record(record)
    opaque = carry_is_opaque(record)
    folds = record.folds
    out = []
    for fact in fixture.graded:
        planted = planted_fold(fact, folds)
        for f in folds:
            where = carried_in(fact.value, f.carry, f.index or "")
            out.append({
                "row_id": record.row_id,
                "label": fact.label,
                "fold": fold_number(f),
                "present": None if opaque else bool(where),
                "planted_fold": planted,
                "carried_in": None if opaque else where,
            })
    return out


def carried_in(value: str, carry: str, index: str) -> str:
    """Where a fold kept a value: "carry", "index" (an index arm's identifier index,
    carriers/identifier_index.py), "both", or "" (neither: the fact is lost at this fold)."""
    in_carry = has_whole_token(value, carry)
    in_index = bool(index) and has_whole_token(value, index)
    return {(True, True): "both", (True, False): "carry", (False, True): "index"}.get(
        (in_carry, in_index), "")
