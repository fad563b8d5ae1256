"""Which sweeps, and which models, each analysis reads: the study config's `scopes:`.

Paper §4.7: "Each contrast is paired within a sweep. A model's j and q means come from
the same run, never pooled across runs." docs/design.md §6, Scopes: every analysis reads the
sweeps, and where the paper restricts it the models, that the study config names for it.

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

Three more keys say the paper's own scopes (docs/design.md §6, Scopes), each as data:
- `scenario`: the rows of one scenario only, taken before the grouping, so a sweep of
  another scenario is never a group. The pooled analyses
  (study/scopes.PRIMARY_SCENARIO_ANALYSES) read the primary scenario unless it is named.
- `prefer` (with `arms`): per model, the first sweep of the list in which it has valid
  rows of every arm of `arms`; that model's rows come from that one sweep only, never
  pooled across sweeps (the partition table: depth before partition). One group, named
  by the listed sweeps joined with '+'.
- `sources`: model -> arm -> sweeps, where a table mixes corpora within a row (the
  ceiling replication: qwen's j from the anchor, its t from the ceiling sweeps). Only
  the (model, arm) pairs named are read. One group, named by its sweeps.
`arms` alone restricts the arms read.

The analyses a config may name, and the check of the config's `scopes:` at load, are
study/scopes.py's (below analysis/, so the config check imports nothing from here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import StudyError
from ..study.scopes import ANALYSES, PRIMARY_SCENARIO_ANALYSES, problems_in, source_triples
from . import keys

if TYPE_CHECKING:
    import pandas as pd

class ScopeError(StudyError, ValueError):
    """A scope that names a sweep or model the evidence does not hold: names each one."""


@dataclass(frozen=True)
class Group:
    """One set of sweeps an analysis reads as a whole; `qualified` when its scope has
    several groups, so its keys carry its label. `prefer`, `arms` and `sources` are its
    scope's (module docstring)."""

    label: str
    sweeps: tuple[str, ...]
    models: tuple[str, ...] | None
    qualified: bool
    prefer: bool = False
    arms: tuple[str, ...] | None = None
    sources: tuple[tuple[str, str, str], ...] | None = None

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
        if self.sources is not None:
            # '/' joins: names cannot hold it (config schema), so the key is unambiguous
            key = v["model"].astype(str) + "/" + v["arm"].astype(str) + "/" + v["sweep"]
            sel = key.isin({"/".join(t) for t in self.sources})
        else:
            sel = v["sweep"].isin(self.sweeps)
        if self.models is not None:
            sel &= v["model"].isin(self.models)
        if self.arms is not None:
            sel &= v["arm"].isin(self.arms)
        out = v[sel]
        return self._preferred(out) if self.prefer else out

    def _preferred(self, v: pd.DataFrame) -> pd.DataFrame:
        """Per model, the rows of the first sweep (in `sweeps` order) holding every arm
        of `arms` (any row when `arms` is not named): one sweep per model, never pooled."""
        keep = []
        for _, gm in v.groupby("model", sort=True):
            for sw in self.sweeps:
                gs = gm[gm["sweep"] == sw]
                need = self.arms or tuple(gs["arm"].unique())
                if len(gs) and all((gs["arm"] == a).any() for a in need):
                    keep.append(gs)
                    break
        return v.loc[[i for gs in keep for i in gs.index]] if keep else v.iloc[:0]


@dataclass(frozen=True)
class Scope:
    sweeps: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    pool: bool = False
    scenario: str | None = None
    prefer: tuple[str, ...] | None = None
    arms: tuple[str, ...] | None = None
    sources: tuple[tuple[str, str, str], ...] | None = None

    def named_sweeps(self) -> tuple[str, ...] | None:
        """The sweeps the scope names, by whichever key names them (None: every sweep)."""
        if self.sources is not None:
            return tuple(dict.fromkeys(sw for _, _, sw in self.sources))
        return self.prefer if self.prefer is not None else self.sweeps

    def groups(self, evidence_sweeps: list[str]) -> list[Group]:
        if self.prefer is not None or self.sources is not None:
            sweeps = self.named_sweeps() or ()
            return [Group("+".join(sweeps), sweeps, self.models, False,
                          self.prefer is not None, self.arms, self.sources)]
        sweeps = list(self.sweeps) if self.sweeps is not None else sorted(evidence_sweeps)
        if self.pool and sweeps:
            return [Group("+".join(sweeps), tuple(sweeps), self.models, False,
                          arms=self.arms)]
        return [Group(s, (s,), self.models, len(sweeps) > 1, arms=self.arms) for s in sweeps]


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
                _names(s, "sweeps"), _names(s, "models"), bool(s.get("pool", False)),
                s.get("scenario"), _names(s, "prefer"), _names(s, "arms"),
                tuple(source_triples(s["sources"])) if s.get("sources") else None)
        return cls(out)

    def scope(self, analysis: str) -> Scope:
        if analysis not in ANALYSES:
            raise KeyError(f"{analysis!r} is not an analysis (known: {', '.join(ANALYSES)})")
        return self.by_analysis.get(analysis, Scope())

    def scenario(self, analysis: str, primary: str | None) -> str | None:
        """The scenario the analysis reads (None: every one): its scope's, or for a
        pooled analysis the primary scenario `primary`."""
        s = self.scope(analysis).scenario
        return s if s is not None else (primary if analysis in PRIMARY_SCENARIO_ANALYSES
                                        else None)

    def groups(self, analysis: str, rows: pd.DataFrame, primary: str | None = None
               ) -> list[Group]:
        scen = self.scenario(analysis, primary)
        read = rows[rows["scenario"] == scen] if scen is not None else rows
        return self.scope(analysis).groups(sorted(set(read["sweep"])))

    def select(self, analysis: str, v: pd.DataFrame, primary: str | None = None
               ) -> list[tuple[Group, pd.DataFrame]]:
        """(group, its rows of v) for each group the analysis reads, in scope order. The
        scenario filter comes first (`primary`: the primary scenario, read by the pooled
        analyses unless their scope names one), then the grouping."""
        scen = self.scenario(analysis, primary)
        if scen is not None:
            v = v[v["scenario"] == scen]
        return [(g, g.rows(v)) for g in self.scope(analysis).groups(sorted(set(v["sweep"])))]

    def check(self, rows: pd.DataFrame) -> None:
        """Fail naming every scope sweep or model the evidence does not hold."""
        sweeps = sorted(set(rows["sweep"]))
        problems = []
        for name, s in self.by_analysis.items():
            for key, named in (("sweeps", s.sweeps), ("prefer", s.prefer)):
                for sw in named or ():
                    if sw not in sweeps:
                        problems.append(f"scopes.{name}.{key}: {sw!r} is not a sweep of "
                                        f"the evidence (sweeps: {', '.join(sweeps)})")
            for m, a, sw in s.sources or ():
                if not ((rows["sweep"] == sw) & (rows["model"] == m)
                        & (rows["arm"] == a)).any():
                    problems.append(f"scopes.{name}.sources.{m}.{a}: no row of {m} on arm "
                                    f"{a} in sweep {sw!r}")
            named = s.named_sweeps()
            read = rows[rows["sweep"].isin(named)] if named is not None else rows
            where = ", ".join(named) if named is not None else "any sweep"
            for key, column, wanted in (("arms", "arm", s.arms), ("models", "model", s.models)):
                have = sorted(set(read[column]))
                for x in wanted or ():
                    if x not in have:
                        problems.append(f"scopes.{name}.{key}: {x!r} has no row in {where} "
                                        f"({key} there: {', '.join(have) or 'none'})")
        if problems:
            raise ScopeError("study config scopes do not match the evidence: "
                             + "; ".join(problems))

    def describe(self, primary: str | None = None) -> dict[str, str]:
        """Per analysis, in words, what it reads (for captions and the README); `primary`
        names the primary scenario the pooled analyses read."""
        out = {}
        for name in ANALYSES:
            out[name] = _words(self.scope(name), name, primary)
        return out


def _names(s: dict[str, Any], key: str) -> tuple[str, ...] | None:
    return tuple(s[key]) if s.get(key) is not None else None


def _words(s: Scope, name: str, primary: str | None) -> str:
    """What one scope reads, in words (the default scope's words are today's)."""
    if s.sources is not None:
        per: dict[str, list[str]] = {}
        for m, a, sw in s.sources:
            per.setdefault(f"{m} {a}", []).append(sw)
        text = "per (model, arm): " + "; ".join(f"{k} from {'+'.join(v)}"
                                                for k, v in per.items())
    elif s.prefer is not None:
        need = f" with both arms {'/'.join(s.arms)}" if s.arms else ""
        text = (f"per model, the first of {', '.join(s.prefer)}{need} (one sweep per "
                "model, never pooled)")
    else:
        sweeps = ", ".join(s.sweeps) if s.sweeps is not None else "every sweep"
        how = "pooled" if s.pool else "each on its own"
        text = f"{sweeps} ({how})"
    if s.models is not None:
        text += f"; models {', '.join(s.models)}"
    if s.arms is not None and s.prefer is None:
        text += f"; arms {', '.join(s.arms)}"
    scen = s.scenario or ((primary or "primary-scenario")
                          if name in PRIMARY_SCENARIO_ANALYSES else None)
    if scen is not None:
        text += f"; {scen} rows only"
    return text
