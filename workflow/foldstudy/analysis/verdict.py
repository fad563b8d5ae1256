"""One contrast of a decision card and the family it is judged in (docs/design.md §6,
Decision).

A contrast's verdict over blocks (the paired difference b - a with its interval, the
exact sign-flip permutation p, TOST at the margin, one word), the repeats that would
decide an undecided one, priced, and the error control over the family (Holm, or a
staged look's alpha split) with the A/A noise floor. Pure: values in, verdicts out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import stats
from .card import AA_SOURCE, Card, ContrastVerdict, StagedSummary
from .plan import AnalysisPlan
from .power import PAPER_ICC, CellICC, repeats_to_decide, within_cell_icc

A_BETTER, B_BETTER = "{a} better", "{b} better"
EQUIVALENT, UNDECIDED = "equivalent within ±{margin:g}", "undecided"


@dataclass(frozen=True, kw_only=True)
class Price:
    """What one repeat of one arm costs, priced as the ledger reserves (audit.RunPrices):
    calls and dollars (None: unknown price)."""

    calls: int
    usd: float | None


# ----------------------------------------------------------------- one contrast


def word(difference: float, p: float | None, equivalent: bool, a: str, b: str,
         alpha: float, margin: float) -> str:
    """The one word: a difference where the permutation p reaches alpha, else
    equivalence where TOST passes at the margin, else undecided."""
    if p is not None and p <= alpha and difference != 0:
        return (B_BETTER if difference > 0 else A_BETTER).format(a=a, b=b)
    if equivalent:
        return EQUIVALENT.format(margin=margin)
    return UNDECIDED


def equivalence(a_vals: np.ndarray, b_vals: np.ndarray, margin: float, alpha: float
                ) -> tuple[bool, float | None]:
    """TOST of b - a inside ±margin (stats.tost_paired): (equivalent, p)."""
    t = stats.tost_paired(b_vals, a_vals, margin, alpha)
    return (False, None) if t is None else (t.equivalent, t.p)


def judge(a: str, b: str, source: str, a_vals: np.ndarray, b_vals: np.ndarray,
          icc: CellICC | None, k: float, plan: AnalysisPlan, margin: float,
          alpha: float | None = None) -> ContrastVerdict:
    """One contrast's verdict over its blocks (a_vals[i], b_vals[i]: block i's recalls)."""
    alpha = plan.alpha if alpha is None else alpha
    a_vals, b_vals = np.asarray(a_vals, float), np.asarray(b_vals, float)
    d = b_vals - a_vals
    boot = stats.paired_bootstrap(b_vals, a_vals, np.zeros(len(d)), plan.resamples, plan.seed,
                                  plan.confidence)
    p = stats.sign_flip_test(d, plan.seed).p_value if len(d) else None
    eq, tost_p = equivalence(a_vals, b_vals, margin, alpha)
    diff = float(d.mean()) if len(d) else float("nan")
    icc_value, icc_source = ((icc.value, f"within cells ({icc.n_rows} rows)") if icc
                             else (PAPER_ICC, "paper §4"))
    return ContrastVerdict(
        a=a, b=b, source=source, blocks=len(d),
        a_mean=float(a_vals.mean()) if len(d) else float("nan"),
        b_mean=float(b_vals.mean()) if len(d) else float("nan"), difference=diff,
        ci_low=boot.low if boot else None, ci_high=boot.high if boot else None,
        p_permutation=p, tost_p=tost_p, equivalent=eq,
        word=word(diff, p, eq, a, b, alpha, margin), icc=icc_value, icc_source=icc_source,
        k=k, p_adjusted=p, level=alpha)


def to_decide(v: ContrastVerdict, k: float, margin: float, alpha: float, power: float,
              rotation: int, price: Price | None) -> ContrastVerdict:
    """An undecided contrast with the repeats that would decide it at the observed
    difference and ICC, planned as the card would test it (power.repeats_to_decide, the
    plan a staged study's next stage uses too): at or beyond the margin the sign-flip
    test's simulated power, since the t formula understates the repeats below 32 blocks;
    inside it TOST at the margin, since a difference smaller than the margin is decided
    by equivalence, never by a difference test. Then what the more repeats cost."""
    if v.word != UNDECIDED:
        return v
    p_bar = min(max((v.a_mean + v.b_mean) / 2, 0.05), 0.95)
    try:
        plan = repeats_to_decide(v.difference, v.icc, k, margin, p_bar, alpha, power,
                                   rotation)
    except ValueError:  # no number of repeats decides it (power.PLAN_MAX_BLOCKS): no plan
        return v
    more = max(0, plan.repeats - v.blocks)
    calls = usd = None
    if price is not None:
        calls = price.calls * more
        usd = None if price.usd is None else price.usd * more
    return dataclasses.replace(v, repeats_to_decide=plan.repeats,
                               planned_difference=plan.difference, planned_test=plan.test,
                               more_repeats=more, more_calls=calls, more_usd=usd)

def cell_icc(checks: pd.DataFrame, cell: pd.DataFrame, arms: Sequence[str]
             ) -> CellICC | None:
    """The ICC within cells (power.within_cell_icc) of the contrast's arms in the cell."""
    rows = cell[cell["arm"].isin(arms)][["row_id", "sweep", "model", "arm"]]
    c = checks.merge(rows, on="row_id")
    if c.empty:
        return None
    label = c["sweep"].astype(str) + "|" + c["model"].astype(str) + "|" + c["arm"]
    return within_cell_icc(label, c["row_id"], c["correct"].astype(float))


def contrast_level(source: str, staged: StagedSummary | None, alpha: float) -> float:
    """The level a contrast is judged at: alpha, except the decide pair of a staged study,
    judged at the nominal level of the look that ended it (Lan–DeMets spending), so the
    card's word is the staged decision's and never a difference the looks did not grant."""
    if source == "decide" and staged is not None and staged.nominal:
        return float(staged.nominal)
    return alpha


def noise_floor(c: Card) -> Card:
    """A card whose cell ran an A/A control with every other contrast read against it:
    the floor is the A/A difference's interval, as a half-width (its sign is arbitrary:
    which of two copies is "a" is the design's order), and a difference inside it is
    never worded as a finding: its word becomes undecided, and the repeats that would
    decide it are planned as for any undecided contrast. A card without an A/A line, or
    whose A/A line has no interval, is returned as it was."""
    floors = [max(abs(v.ci_low), abs(v.ci_high)) for v in c.aa_lines
              if v.ci_low is not None and v.ci_high is not None]
    if not floors:
        return c
    w = max(floors)
    out = []
    for v in c.contrasts:
        if v.source == AA_SOURCE:
            out.append(v)
            continue
        inside = v.word.endswith(" better") and abs(v.difference) <= w
        out.append(dataclasses.replace(v, aa_floor=w, inside_noise=inside,
                                       word=UNDECIDED if inside else v.word))
    return dataclasses.replace(c, contrasts=out)


# ----------------------------------------------------------- error control (§ family)

FAMILIES = ("sweep", "model")
HOLM, SPLIT = "Holm", "alpha split"


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p over the last axis (Holm 1979): the i-th smallest of
    m times (m - i + 1), made monotone, at most 1. Valid under any dependence between
    the contrasts, as a sweep's pairs sharing an arm have. Rows of a 2-D array are
    adjusted apart (bench/decide_sim.py adjusts thousands of simulated sweeps at once)."""
    p = np.asarray(p, float)
    m = p.shape[-1]
    if m == 0:
        return p
    order = np.argsort(p, axis=-1, kind="stable")
    ps = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    adj = np.minimum(np.maximum.accumulate(ps, axis=-1), 1.0)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def family_of(c: Card, family: str) -> str:
    """The family a card's contrasts belong to: its sweep's, or its own (sweep, model)."""
    return f"sweep {c.sweep}" if family == "sweep" else f"{c.model} in sweep {c.sweep}"


def adjust_family(cs: Sequence[Card], family: str, alpha: float, margin: float
                  ) -> list[Card]:
    """Every contrast's p adjusted within its family, and its word read from that.

    A fixed design's contrasts take Holm's adjusted p, compared with alpha. A staged
    decision's contrast was tested at each look against alpha divided by the family's
    planned size, spent over the looks (staging.look_state; a Bonferroni split, since
    the looks of one model stop at different times): its adjusted p is the raw p times
    that size, compared with the look's nominal level times it. Where a family holds
    both, the staged contrasts keep their split shares and the fixed ones share the
    rest by Holm (Holm at alpha x fixed / size), so the family's error stays at most
    alpha by the union bound. Equivalence is TOST per contrast, as it was: a family of
    equivalence claims is not adjusted (each must pass on its own two one-sided tests)."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for i, c in enumerate(cs):
        for j, v in enumerate(c.contrasts):
            if v.p_permutation is not None:
                groups.setdefault(family_of(c, family), []).append((i, j))
    new = [list(c.contrasts) for c in cs]
    for name, members in groups.items():
        staged = [(i, j) for i, j in members if _split_size(cs[i], cs[i].contrasts[j])]
        fixed = [x for x in members if x not in staged]
        size = max([len(members), *(_split_size(cs[i], cs[i].contrasts[j]) or 0
                                    for i, j in staged)])
        share = len(fixed) / size if staged else 1.0
        adj = holm(np.array([cs[i].contrasts[j].p_permutation for i, j in fixed]))
        for (i, j), pa in zip(fixed, adj / share if len(fixed) else adj, strict=True):
            v = cs[i].contrasts[j]
            new[i][j] = dataclasses.replace(
                v, p_adjusted=min(float(pa), 1.0), family=name, family_size=size,
                adjustment=HOLM if size > 1 else "", level=alpha,
                word=word(v.difference, min(float(pa), 1.0), v.equivalent, v.a, v.b, alpha,
                          margin))
        for i, j in staged:
            v = cs[i].contrasts[j]
            m = _split_size(cs[i], v) or 1
            new[i][j] = dataclasses.replace(
                v, p_adjusted=min(1.0, float(v.p_permutation) * m), family=name,
                family_size=m, adjustment=SPLIT, level=float(v.level or alpha) * m)
    return [dataclasses.replace(c, contrasts=new[i]) for i, c in enumerate(cs)]


def _split_size(c: Card, v: ContrastVerdict) -> int | None:
    """The family size a staged contrast's looks split alpha by (None: not staged)."""
    if v.source != "decide" or c.staged is None or not c.staged.nominal:
        return None
    return int(c.staged.family_size or 1)


def plan_level(v: ContrastVerdict, alpha: float) -> float:
    """The level an undecided contrast's plan is made at: its family's share, alpha over
    the family's size (the first, strictest of Holm's steps), or the staged look's."""
    if v.adjustment == SPLIT:
        return float(v.level or alpha) / v.family_size
    return alpha / max(v.family_size, 1)

