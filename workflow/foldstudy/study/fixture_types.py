"""The fixture's types: a planted Fact and the Fixture, a session cut into chunks with
its facts, as fixture.json keeps them (study/fixtures.py generates one, study/sessions.py
reads one from a user's session).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Fact:
    """One planted fact and where the fixture put it."""

    fact_id: str
    fact_class: str
    value: str
    graded: bool
    label: str = ""
    unit: str = ""
    segment: int = -1
    chunk: int = -1
    offset: int = -1  # character offset inside the chunk text
    statement: str = ""
    # a control fact (config sweeps.X.controls.tail; own sessions: `control: true` in the
    # facts file): asked by the recall turn beside the graded facts, graded apart and never
    # counted in recall, so no paper number reads it. It sits where every working carrier
    # keeps it, so a row that loses it shows a broken recall turn or grader.
    control: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fact as fixture.json keeps it; a fact that is no control writes no
        `control` key, so a fixture without controls is byte for byte what it was."""
        d = asdict(self)
        if not self.control:
            d.pop("control")
        return d


@dataclass(frozen=True)
class Fixture:
    """A generated session cut into chunks, one chunk per fold."""

    scenario: str
    seed: int
    scale: float
    chunks: tuple[str, ...]
    facts: tuple[Fact, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def graded(self) -> list[Fact]:
        return [f for f in self.facts if f.graded]

    @property
    def controls(self) -> list[Fact]:
        """The control facts, graded apart from the graded ones (Fact.control)."""
        return [f for f in self.facts if f.control]

    @property
    def asked(self) -> list[Fact]:
        """What the recall turn asks for, in this order: the graded facts, then the
        controls (none: the graded facts alone, so the recall turn is what it was)."""
        return self.graded + self.controls

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "scale": self.scale,
            "chunks": list(self.chunks),
            "facts": [f.to_dict() for f in self.facts],
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fixture:
        return cls(
            scenario=d["scenario"],
            seed=d["seed"],
            scale=d["scale"],
            chunks=tuple(d["chunks"]),
            facts=tuple(Fact(**f) for f in d["facts"]),
            meta=d.get("meta", {}),
        )
