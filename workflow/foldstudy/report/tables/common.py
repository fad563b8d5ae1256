"""What the table builders share: reading numbers.json, a scope's groups, and the registry.

Every builder reads its rows through these helpers, so the caption's sentence on a scope,
a group's lines, the pooled line (docs/design.md §8 "Pooled tables") and an interval are written
once. Inference is read from numbers.json, never recomputed here, so a table and the
numbers file cannot disagree. `@builder` marks a function as the builder of the table its
name names (report/titles.TABLES declares the table; report/tables/__init__.py binds the
two by that name).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from ...analysis import keys
from ...analysis.scopes import Group
from ...analysis.view import Evidence, Numbers
from ..table import Body, Col, fmt


def paired_ci(numbers: Numbers, key: str, cell: str) -> str | None:
    """A paired difference with its interval, as one cell: "+0.123 [+0.010, +0.240]"."""
    d = numbers.get(keys.paired(key, "diff", cell))
    if d is None:
        return None
    lo, hi = (numbers[keys.paired(key, part, cell)] for part in ("ci_low", "ci_high"))
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _fisher_text(numbers: Numbers, key: str) -> str | None:
    """A Fisher test's counts and p, as one clause of a note."""
    if keys.fisher_key(key, "p") not in numbers:
        return None
    a, n1, b, n2, p = (numbers.get(keys.fisher_key(key, part)) for part in ("a", "n1", "b", "n2",
                                                                       "p"))
    return f"{a}/{n1} vs {b}/{n2}, Fisher exact p = {fmt(p, 'pval')}"


def reads(c: Evidence, analysis: str) -> str:
    """The caption's sentence on what the table reads (its scope, in words)."""
    said = c.scopes.describe(c.plan.primary_scenario)[analysis]
    return (f" Reads {said} (scope `{analysis}` of the study "
            "config); the sweep column names the sweep, or the sweeps pooled, of each "
            "line.")


def by_group(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame],
             primary: bool = False, own_sweep: bool = False
             ) -> list[tuple[Group, list[dict[str, Any]]]]:
    """Per group of the analysis' scope, the lines `make` builds from its valid rows, as
    records whose `sweep` names the group (the tables' first column). `own_sweep` keeps
    the sweep `make` gives each line (a pooled group's lines name their own sweep)."""
    out = []
    for g, vg in c.groups(analysis, primary):
        recs = make(vg).to_dict("records")
        if not own_sweep:
            for r in recs:
                r["sweep"] = g.label
        out.append((g, recs))
    return out


def lines(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame],
          own_sweep: bool = False) -> list[dict[str, Any]]:
    """by_group's lines of every group, in scope order."""
    return [r for _, recs in by_group(c, analysis, make, own_sweep=own_sweep) for r in recs]


def pooled_lines(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame]
                 ) -> list[dict[str, Any]]:
    """The lines `make` builds from every group's rows at once, named by their sweeps
    joined with '+' (docs/design.md §8 "Pooled tables"); none when the scope reads one group,
    whose lines are already pooled."""
    pooled = c.pooled(analysis)
    if pooled is None:
        return []
    return [{**r, "sweep": pooled[0]} for r in make(pooled[1]).to_dict("records")]


def with_pooled(c: Evidence, analysis: str, make: Callable[[pd.DataFrame], pd.DataFrame]
                ) -> list[dict[str, Any]]:
    """Each group's lines, then the pooled ones."""
    return lines(c, analysis, make) + pooled_lines(c, analysis, make)


SWEEP = Col("sweep", "sweep")


def group_note(g: Group, text: str) -> str:
    """A note of one group, named by the group where the scope reads several."""
    return f"{g.label}: {text}" if g.qualified else text


def fisher_reading(nb: Numbers, key: str, a: str, b: str, alpha: float) -> str | None:
    """The sentence a Fisher test supports, generated from its counts: the direction of
    the point estimate and whether the test separates the two at alpha."""
    if keys.fisher_key(key, "p") not in nb:
        return None
    x = {part: nb[keys.fisher_key(key, part)] for part in ("a", "n1", "b", "n2", "p")}
    ra, rb = x["a"] / x["n1"], x["b"] / x["n2"]
    way = ("a higher" if rb > ra else "a lower" if rb < ra else "the same")
    sig = ("the difference is significant" if x["p"] < alpha
           else "the test does not separate them")
    return f"{b} recalled {way} share of rows than {a} ({_fisher_text(nb, key)}; {sig} at {alpha})"


# A builder takes its entry's source (titles.TableEntry.source): the evidence view, the
# probe verdicts or the measured token classes.
Builder = Callable[..., Body]
BUILDERS: dict[str, Builder] = {}


def builder(fn: Builder) -> Builder:
    """Mark fn as the builder of the table its name names (report/titles.TableEntry)."""
    BUILDERS[fn.__name__] = fn
    return fn

