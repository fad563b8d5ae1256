"""One view of the evidence: what every numbers section and every table reads.

The rows, their checks, the plan, the rows the one validity rule admitted, the study
config's scopes and, for the tables, numbers.json. A reader (a section of numbers.py, a
table of report/tables.py) declares the analyses it reads; `reading` gives it a view that
refuses any other, so the analyses a config may name (study/scopes.py) are exactly those
some reader declares, and a declaration cannot fall behind the code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd

from . import analysis as A
from .analysis import Analysis
from .scopes import Group, Scopes

Number = float | int
Numbers = Mapping[str, Number]


@dataclass(frozen=True)
class Evidence:
    """The evidence as every section and table reads it (module docstring)."""

    rows: pd.DataFrame
    checks: pd.DataFrame
    an: Analysis
    scopes: Scopes
    v: pd.DataFrame  # rows the one validity rule admitted
    numbers: Numbers = field(default_factory=dict)  # numbers.json, for the tables
    declared: frozenset[str] | None = None  # analyses this reader may read (None: any)
    trace: pd.DataFrame | None = None  # trace.csv, where the evidence has one
    extra_pairs: tuple[tuple[str, str], ...] = ()  # arm pairs the study config adds

    @classmethod
    def of(cls, rows: pd.DataFrame, checks: pd.DataFrame, an: Analysis,
           scopes: Scopes | None = None, numbers: Numbers | None = None,
           trace: pd.DataFrame | None = None,
           extra_pairs: Sequence[Sequence[str]] = ()) -> Evidence:
        """The view of these rows. A scope naming a sweep or model the evidence lacks
        fails here, by name (ScopeError)."""
        sc = scopes or Scopes()
        sc.check(rows)
        return cls(rows, checks, an, sc, A.valid_rows(rows),
                   numbers if numbers is not None else {}, trace=trace,
                   extra_pairs=tuple((str(a), str(b)) for a, b in extra_pairs))

    def reading(self, analyses: Collection[str]) -> Evidence:
        """This view for a reader that declared these analyses, and may read no other."""
        return replace(self, declared=frozenset(analyses))

    def groups(self, analysis: str, primary: bool = False
               ) -> list[tuple[Group, pd.DataFrame]]:
        """(group, its valid rows) per group of the analysis' scope; `primary` keeps the
        distributed-facts scenario only."""
        if self.declared is not None and analysis not in self.declared:
            raise KeyError(f"analysis {analysis!r} is read but not declared by its reader "
                           f"(declared: {', '.join(sorted(self.declared)) or 'none'})")
        out = []
        for g, vg in self.scopes.select(analysis, self.v):
            if primary:
                vg = vg[vg["scenario"] == self.an.primary_scenario]
            out.append((g, vg))
        return out
