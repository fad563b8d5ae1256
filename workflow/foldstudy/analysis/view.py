"""One view of the evidence: what every numbers section and every table reads.

The rows, their checks, the plan, the rows the one validity rule admitted, the study
config's scopes and, for the tables, numbers.json. A reader (a section of numbers.py, a
table of report/tables/) declares the analyses it reads; `reading` gives it a view that
refuses any other, so the analyses a config may name (study/scopes.py) are exactly those
some reader declares, and a declaration cannot fall behind the code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd

from ..study.scopes import EVERY_ARM_ANALYSES
from .cells import valid_rows
from .plan import AnalysisPlan
from .scopes import Group, Scopes

Number = float | int
Numbers = Mapping[str, Number]


@dataclass(frozen=True)
class Evidence:
    """The evidence as every section and table reads it (module docstring)."""

    rows: pd.DataFrame
    checks: pd.DataFrame
    plan: AnalysisPlan
    scopes: Scopes
    valid: pd.DataFrame  # rows the one validity rule admitted
    numbers: Numbers = field(default_factory=dict)  # numbers.json, for the tables
    declared: frozenset[str] | None = None  # analyses this reader may read (None: any)
    trace: pd.DataFrame | None = None  # trace.csv, where the evidence has one
    extra_pairs: tuple[tuple[str, str], ...] = ()  # arm pairs the study config adds

    @classmethod
    def of(cls, rows: pd.DataFrame, checks: pd.DataFrame, plan: AnalysisPlan,
           scopes: Scopes | None = None, numbers: Numbers | None = None,
           trace: pd.DataFrame | None = None,
           extra_pairs: Sequence[Sequence[str]] = ()) -> Evidence:
        """The view of these rows. A scope naming a sweep or model the evidence lacks
        fails here, by name (ScopeError)."""
        sc = scopes or Scopes()
        sc.check(rows)
        return cls(rows, checks, plan, sc, valid_rows(rows),
                   numbers if numbers is not None else {}, trace=trace,
                   extra_pairs=tuple((str(a), str(b)) for a, b in extra_pairs))

    def reading(self, analyses: Collection[str]) -> Evidence:
        """This view for a reader that declared these analyses, and may read no other.

        A reader of a matched analysis (any but study/scopes.EVERY_ARM_ANALYSES) sees no
        row of an arm outside the matched comparison (arm.is_matched): a carrier beyond
        the paper's never enters a paper table or a matched number."""
        view = replace(self, declared=frozenset(analyses))
        if set(analyses) & EVERY_ARM_ANALYSES:
            return view
        return view.matched()

    def matched(self) -> Evidence:
        """This view without the rows (and their checks and trace) of the arms outside
        the matched comparison; itself where it has none."""
        out = self.plan.unmatched
        if not out or not self.rows["arm"].isin(out).any():
            return self
        keep = ~self.rows["arm"].isin(out)
        ids = set(self.rows.loc[keep, "row_id"])

        def of(df: pd.DataFrame | None) -> pd.DataFrame | None:
            return None if df is None else df[df["row_id"].isin(ids)]

        return replace(self, rows=self.rows[keep], checks=of(self.checks),
                       valid=self.valid[~self.valid["arm"].isin(out)], trace=of(self.trace))

    def groups(self, analysis: str, primary: bool = False, every_row: bool = False
               ) -> list[tuple[Group, pd.DataFrame]]:
        """(group, its valid rows) per group of the analysis' scope; `primary` keeps the
        distributed-facts scenario only, within groups formed over every scenario (a
        pooled analysis, study/scopes.PRIMARY_SCENARIO_ANALYSES, filters before the
        grouping instead); `every_row` gives the groups' rows valid or not."""
        if self.declared is not None and analysis not in self.declared:
            raise KeyError(f"analysis {analysis!r} is read but not declared by its reader "
                           f"(declared: {', '.join(sorted(self.declared)) or 'none'})")
        out = []
        rows = self.rows if every_row else self.valid
        for g, vg in self.scopes.select(analysis, rows, self.plan.primary_scenario):
            if primary:
                vg = vg[vg["scenario"] == self.plan.primary_scenario]
            out.append((g, vg))
        return out

    def every_row(self, analysis: str) -> dict[str, pd.DataFrame]:
        """Group label -> the group's rows valid or not: beside `groups`' valid rows, for a
        count the paper makes over every row (§4.5: "4 of 60 folds")."""
        return {g.label: vg for g, vg in self.groups(analysis, every_row=True)}

    def pooled(self, analysis: str, every_row: bool = False
               ) -> tuple[str, pd.DataFrame] | None:
        """The rows of every group of the analysis' scope as one, with the label of a line
        pooled over them (their sweeps joined by '+'); None when the scope reads one group,
        whose own lines are already the pooled ones."""
        gs = self.groups(analysis, every_row=every_row)
        if len(gs) < 2:
            return None
        sweeps = list(dict.fromkeys(s for g, _ in gs for s in g.sweeps))
        rows = pd.concat([vg for _, vg in gs]).drop_duplicates("row_id")
        return "+".join(sweeps), rows
