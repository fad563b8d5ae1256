"""Which sweeps, and which models, each analysis reads: the study config's `scopes:`.

Paper §4.7: "Each contrast is paired within a sweep. A model's j and q means come from
the same run, never pooled across runs." DESIGN §6: every analysis reads the sweeps, and
where the paper restricts it the models, that the study config names for it.

A scope is data: `sweeps` (null = every sweep of the evidence), `models` (null = every
model of those sweeps) and `pool` (false = one result per sweep; true = the named sweeps
read as one group, contrasts still paired within a sweep's blocks). An analysis the
config does not name reads every sweep, each on its own: nothing is pooled across
sweeps unless the config asks.

A scope resolves to groups. When it resolves to one group (one sweep, or sweeps pooled)
its numbers keep their plain keys (`partition.n_models`, `ladder.mean[j]`); when it
resolves to several, each group's keys carry the group as the first part of the cell
(`partition.n_models[partition]`, `ladder.mean[decomposition_a/j]`). A pooled group is
named by its sweeps joined with '+' (sweep names cannot hold '+').

The analyses a config may name, and the check of the config's `scopes:` at load, are
study/scopes.py's (below analysis/, so the config check imports nothing from here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..study.scopes import ANALYSES, problems_in
from . import keys

if TYPE_CHECKING:
    import pandas as pd

class ScopeError(ValueError):
    """A scope that names a sweep or model the evidence does not hold: names each one."""


@dataclass(frozen=True)
class Group:
    """One set of sweeps an analysis reads as a whole; `qualified` when its scope has
    several groups, so its keys carry its label."""

    label: str
    sweeps: tuple[str, ...]
    models: tuple[str, ...] | None
    qualified: bool

    def cell(self, *parts: object) -> str:
        """The cell part of a key: 'j' alone, or 'decomposition_a/j' among several."""
        head = [self.label] if self.qualified else []
        return keys.cell(*head, *parts)

    def at(self, name: str, *parts: object) -> str:
        """A key about one cell of this group: 'ladder.mean[decomposition_a/j]'."""
        return keys.at(name, self.cell(*parts))

    def key(self, base: str) -> str:
        """A scalar key: 'partition.n_models', or 'partition.n_models[partition]'."""
        return keys.at(base, self.label) if self.qualified else base

    def rows(self, v: pd.DataFrame) -> pd.DataFrame:
        sel = v["sweep"].isin(self.sweeps)
        if self.models is not None:
            sel &= v["model"].isin(self.models)
        return v[sel]


@dataclass(frozen=True)
class Scope:
    sweeps: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    pool: bool = False

    def groups(self, evidence_sweeps: list[str]) -> list[Group]:
        sweeps = list(self.sweeps) if self.sweeps is not None else sorted(evidence_sweeps)
        if self.pool and sweeps:
            return [Group("+".join(sweeps), tuple(sweeps), self.models, False)]
        return [Group(s, (s,), self.models, len(sweeps) > 1) for s in sweeps]


@dataclass(frozen=True)
class Scopes:
    """The study config's `scopes:`, one Scope per analysis (default: every sweep, each
    on its own)."""

    by_analysis: dict[str, Scope] = field(default_factory=dict)

    @classmethod
    def from_config(cls, scopes: dict[str, Any] | None) -> Scopes:
        problems = problems_in(scopes, ANALYSES)
        if problems:
            raise ScopeError("; ".join(problems))
        out = {}
        for name, s in (scopes or {}).items():
            s = s or {}
            out[name] = Scope(
                tuple(s["sweeps"]) if s.get("sweeps") is not None else None,
                tuple(s["models"]) if s.get("models") is not None else None,
                bool(s.get("pool", False)))
        return cls(out)

    def scope(self, analysis: str) -> Scope:
        if analysis not in ANALYSES:
            raise KeyError(f"{analysis!r} is not an analysis (known: {', '.join(ANALYSES)})")
        return self.by_analysis.get(analysis, Scope())

    def groups(self, analysis: str, rows: pd.DataFrame) -> list[Group]:
        return self.scope(analysis).groups(sorted(set(rows["sweep"])))

    def select(self, analysis: str, v: pd.DataFrame) -> list[tuple[Group, pd.DataFrame]]:
        """(group, its rows of v) for each group the analysis reads, in scope order."""
        return [(g, g.rows(v)) for g in self.scope(analysis).groups(sorted(set(v["sweep"])))]

    def check(self, rows: pd.DataFrame) -> None:
        """Fail naming every scope sweep or model the evidence does not hold."""
        sweeps = sorted(set(rows["sweep"]))
        problems = []
        for name, s in self.by_analysis.items():
            for sw in s.sweeps or ():
                if sw not in sweeps:
                    problems.append(f"scopes.{name}.sweeps: {sw!r} is not a sweep of the "
                                    f"evidence (sweeps: {', '.join(sweeps)})")
            read = rows[rows["sweep"].isin(s.sweeps)] if s.sweeps is not None else rows
            have = sorted(set(read["model"]))
            for m in s.models or ():
                if m not in have:
                    where = ", ".join(s.sweeps) if s.sweeps is not None else "any sweep"
                    problems.append(f"scopes.{name}.models: {m!r} has no row in {where} "
                                    f"(models there: {', '.join(have) or 'none'})")
        if problems:
            raise ScopeError("study config scopes do not match the evidence: "
                             + "; ".join(problems))

    def describe(self) -> dict[str, str]:
        """Per analysis, in words, what it reads (for captions and the README)."""
        out = {}
        for name in ANALYSES:
            s = self.scope(name)
            sweeps = ", ".join(s.sweeps) if s.sweeps is not None else "every sweep"
            how = "pooled" if s.pool else "each on its own"
            models = f"; models {', '.join(s.models)}" if s.models is not None else ""
            out[name] = f"{sweeps} ({how}){models}"
        return out
