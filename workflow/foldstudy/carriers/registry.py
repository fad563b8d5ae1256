"""The one table of carrier kinds: each class registers itself under its kind.

A kind is written in two places, its class and the `@register_carrier` over it, as a
backend is (backends/registry.py). Everything that differs per kind follows from this
table: the kinds resources/arms.yaml and an own arms file may name (study/spec.py), how
a fold is made and recorded (run/fold.py), which arms the probe probes (run/probe.py),
which are in the matched comparison and which card line reads the others (analysis/).

Two ways in, and no list to keep: every module of this package is imported on first
use, so a module added here registers itself; a kind outside the package is a
distribution declaring its module under the entry-point group `foldstudy.carriers`.
An index arm (arms.yaml `base`) is its base arm's kind wrapped (carriers/index.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from ..errors import StudyError
from ..kinds import KindTable
from .base import Carrier
from .types import ArmEntry, ArmView

ENTRY_POINT_GROUP = "foldstudy.carriers"

C = TypeVar("C", bound=type[Carrier])

_TABLE: KindTable[type[Carrier]] = KindTable("carrier", __package__ or "",
                                             Path(__file__).parent, ENTRY_POINT_GROUP)


class CarrierError(StudyError, ValueError):
    """An arms.yaml `carry` that names no registered kind."""


def register_carrier(cls: C) -> C:
    """Class decorator: the carrier becomes known under its `kind`, once (with the
    `pattern` of the names arms.yaml may give it)."""
    if not cls.pattern:
        raise TypeError(f"{cls.__name__} declares no pattern")
    _TABLE.register(cls)
    return cls


def carrier_classes() -> dict[str, type[Carrier]]:
    """Every registered kind, by kind in sorted order."""
    return _TABLE.load()


def known_kinds() -> str:
    """The kinds an arms.yaml `carry` may name, as a refusal lists them."""
    return " ".join(cls.shown or cls.kind for cls in carrier_classes().values())


def carrier_for(name: object) -> Carrier:
    """The carrier an arms.yaml `carry` value names; CarrierError naming the known ones
    (a value that is no string, as YAML may give, names none)."""
    for cls in carrier_classes().values():
        if isinstance(name, str) and cls.names(name):
            return cls(name)
    raise CarrierError(f"{name!r} (known: {known_kinds()})")


def carrier_of(arm: ArmEntry | ArmView) -> Carrier:
    """The carrier of an arm: its resolved Arm, or its arms.yaml (or arms_file) entry.
    An index arm (`base`) is its base's kind wrapped; an entry that does not say its base's
    kind (arms.yaml's index arms name only the base) wraps no kind, which is all that its
    place in the comparison needs."""
    from .index import IndexCarrier

    carry = arm.get("carry") if isinstance(arm, Mapping) else arm.carry
    base = index_base(arm)
    if base is not None:
        return IndexCarrier(base, carrier_for(carry) if isinstance(carry, str) else None)
    return carrier_for(carry)


def index_base(arm: ArmEntry | ArmView) -> str | None:
    """The arm an index arm wraps (its `base`), or None: said by the entry alone, so an
    entry whose own keys are still to be checked is placed without resolving its kind."""
    base = arm.get("base") if isinstance(arm, Mapping) else arm.base
    return str(base) if base else None


def own_arm_pattern() -> str:
    """The `carry` an own arm may name (config/schema/arms.schema.yaml's pattern): the
    kinds whose capacity is the study's. It ends at the true end (`$(?!\n)`, as every
    pattern of config/schema does): Python's `$` alone matches before a final newline."""
    kinds = [cls.pattern for cls in carrier_classes().values() if cls.own_arm]
    return f"^({'|'.join(kinds)})$(?!\\n)"


def says_against_best(source: str) -> bool:
    """Is `source` an "against your best arm" card line of any kind, in any model's words
    (Carrier.says_against_best)?"""
    return any(c.says_against_best(source) for c in carrier_classes().values())


def says_read_against(source: str) -> bool:
    """Is `source` a card line reading an arm against a plain arm of another kind, of any
    kind, in any model's words (Carrier.says_read_against)?"""
    return any(c.says_read_against(source) for c in carrier_classes().values())


def opaque_kinds() -> list[str]:
    """The kinds whose carry may be opaque (a kind's `may_be_opaque`)."""
    return [k for k, cls in carrier_classes().items() if cls.may_be_opaque]
