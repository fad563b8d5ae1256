"""Arm against arm within a block: paired arms and fact survival (paper §4.4).

Paper §4.4: "Iteration is what makes it catastrophic". Both tables read the fact trace,
which a package of rows and checks alone lacks; they then say so in one line.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...analysis.compare import NO_TRACE, compare_pairs, compare_tables, pair_label
from ...analysis.view import Evidence
from ..table import Body, Col
from .common import (
    SWEEP,
    builder,
    reads,
)


def _compare(c: Evidence) -> tuple[pd.DataFrame, pd.DataFrame] | str:
    """paired-arms and fact-survival over the `compare` scope's groups, or why there are
    none: both read the fact trace, which a package of rows and checks alone lacks."""
    if c.trace is None:
        return NO_TRACE
    groups = [g for g, _ in c.groups("compare")]
    paired, survival, _ = compare_tables(c.trace, c.checks, c.rows, c.plan, c.extra_pairs,
                                           groups)
    return paired, survival


@builder
def t_paired_arms(c: Evidence) -> Body:
    """For each pair of arms the study contrasts within a block (same sweep,
    model, repeat and fixture), the graded facts both kept, one only, or neither, at the
    final carry and in the answer. Facts within a row are not independent (paper §4: ICC
    0.750), so the interval resamples blocks, never facts."""
    plan = c.plan
    pairs = ", ".join(pair_label(a, b) for a, b in compare_pairs(plan, c.extra_pairs))
    got = _compare(c)
    recs = [{"_why_row": got}] if isinstance(got, str) else got[0].to_dict("records")
    if not isinstance(got, str) and not recs:
        recs = [{"_why_row": f"no block ran both arms of a pair ({pairs})"}]
    for r in recs:
        if "pair" in r:
            r["kept"] = _diff_text(r, "kept")
            r["recalled"] = _diff_text(r, "recalled")
    return Body(
        "Per pair of arms (a–b), over the blocks where both have a valid row: the graded "
        "facts both arms kept to the final carry, a only, b only, neither; then the same in "
        f"the answer. Pairs: {pairs} (resources/analysis.yaml `arms.compare_pairs`, and "
        "any the study config's `compare_pairs` adds). The difference is b's kept share "
        f"minus a's, with a {plan.confidence:.0%} interval resampling blocks within model, "
        "never facts (the facts of a row are not independent)." + reads(c, "compare"),
        [SWEEP, Col("pair", "pair"), Col("blocks", "blocks", "int"),
         Col("facts", "facts", "int"), Col("both_kept", "both kept", "int"),
         Col("a_only", "a only", "int"), Col("b_only", "b only", "int"),
         Col("neither", "neither", "int"),
         Col("kept", "b − a, kept [CI]", "str", "fewer than 2 blocks"),
         Col("both_recalled", "both recalled", "int"),
         Col("a_only_recalled", "a only", "int"), Col("b_only_recalled", "b only", "int"),
         Col("neither_recalled", "neither", "int"),
         Col("recalled", "b − a, recalled [CI]", "str", "fewer than 2 blocks")],
        recs, csv=None if isinstance(got, str) else got[0])


def _diff_text(r: dict[str, Any], what: str) -> str | None:
    d, lo, hi = r[f"{what}_diff"], r[f"{what}_diff_low"], r[f"{what}_diff_high"]
    if pd.isna(d):
        return None
    band = f" [{lo:+.3f}, {hi:+.3f}]" if not (pd.isna(lo) or pd.isna(hi)) else ""
    return f"{d:+.3f}{band}"


@builder
def t_fact_survival(c: Evidence) -> Body:
    """Paper §4.4 ("Iteration is what makes it catastrophic"): the share of
    graded facts still carried k folds after the fold that planted them. k = 0 is the
    planting fold's own carry, so its gap below 1 is the loss at the first fold (never
    carried) and the fall after it the loss over folds."""
    plan = c.plan
    got = _compare(c)
    recs = [{"_why_row": got}] if isinstance(got, str) else got[1].to_dict("records")
    for r in recs:
        if "k" in r and not pd.isna(r["share_low"]):
            r["band"] = f"{r['share_low']:.3f}–{r['share_high']:.3f}"
    return Body(
        "Per arm, of the graded facts of valid rows observable k folds after their planting "
        "fold, those carried by every carry from planting through that fold. k = 0 is the "
        "planting fold's carry: 1 minus its share is the loss at the first fold (never "
        "carried); the fall after it is the loss over folds. Of those taken in: the share "
        "of the facts the planting fold's carry held. Survival: the same with each run's "
        "end censoring a late-planted fact (product-limit), so it never rises. Band: "
        f"{plan.confidence:.0%}, blocks resampled within model." + reads(c, "compare"),
        [SWEEP, Col("arm", "arm"), Col("k", "k (folds after planting)", "int"),
         Col("facts", "facts", "int"), Col("carried", "carried", "int"),
         Col("share", "share", "p3", "no fact observable"),
         Col("band", "band", "str", "fewer than 2 blocks"),
         Col("share_of_taken_in", "of those taken in", "p3", "none taken in"),
         Col("survival", "survival", "p3", "nothing at risk")],
        recs, csv=None if isinstance(got, str) else got[1])

