"""The decision cards (docs/design.md §6, Decision): per (sweep, model), what the study
decided, read from the evidence alone. Pure: frames and specs in, cards out.

A card gives, for one model in one sweep:
- each contrast that ran (the sweep's pairs, power.sweep_contrasts: every pair of two to
  four matched arms, else the ladder's rungs and the compare pairs, or the sweep's own
  `compare`; a user's own arm against its twin; the `decide:` pair): the paired
  difference b - a over blocks with its interval, the exact sign-flip permutation p
  (stats.sign_flip_test: the study's own verdict test, docs/design.md §6 Small-sample
  inference), TOST at the margin, and one word. An undecided contrast carries the
  repeats that would decide it at the observed difference and the within-cell ICC, by
  the test that would (a difference beyond the margin, equivalence inside it:
  power.repeats_to_decide), priced;
- the paper's diagnosis where the undivided arm ran (paper §4.6-4.7);
- how the model's failing rows fail (paper §4.11);
- whether a user's own arm holds an undivided free-text slot (paper §5);
- the arms outside the matched comparison on lines of their own: the native arm against
  your best arm, an A/A copy against its original, a `native@ARM` arm against the native
  arm and against ARM (native_with_contrasts), a `native:keep_recent=N` arm against the
  native arm (read_against_contrasts);
- the pairs of matched arms the cell ran that no contrast reads, and the key that adds
  them; where the sweep runs more than power.PAIRS_UP_TO matched arms, what the family's
  size costs in power (family_cost);
- or, where every arm lost every fact, that verdict and no ranking.
Thresholds come from resources/analysis.yaml through AnalysisPlan; the failing and mode
definitions are analysis/partition.py's, the ones partition.csv uses.

This module assembles the cards; the card's record is analysis/card.py's, one contrast's
verdict and the family's error control analysis/verdict.py's, and the lines beyond the
contrasts (diagnosis, loudness, own arm, index, ceiling, control, fold failures)
analysis/card_lines.py's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..carriers.native import (
    NATIVE_SOURCE,  # noqa: F401 - the cards' readers name it
    PROVIDER,
    NativeWords,
)
from ..carriers.registry import carrier_of
from ..study.arm import Arm
from ..study.derived import native_with_title
from .card import AA_SOURCE, Card, ContrastVerdict, FamilyCost, StagedSummary
from .card_lines import (
    best_arm,
    ceiling_lines,
    control_lost_rows,
    diagnosis,
    fold_failures,
    index_lines,
    loudness,
    own_arm_checks,
    own_compaction_line,
    repeat_stops,
    served_by_other_rows,
)
from .cells import arm_blocks, pairs, valid_rows
from .plan import AnalysisPlan
from .power import (
    PAIRS_UP_TO,
    contrasts,
    every_pair,
    matched_arms,
    min_blocks,
    repeats_needed,
    sweep_contrasts,
)
from .verdict import (
    HOLM,
    Price,
    adjust_family,
    cell_icc,
    contrast_level,
    judge,
    noise_floor,
    plan_level,
    to_decide,
)

ALL_LOST = ("every arm lost every fact on this model: no arm recalled any graded value "
            "in any valid row, so no arm is ranked and no contrast is read")


def cell_contrasts(plan: AnalysisPlan, extra_pairs: Sequence[Sequence[str]], own: dict[str, str],
                   decide_pair: Sequence[str] | None,
                   gate_pair: Sequence[str] | None = None,
                   sweep_pairs: Sequence[tuple[str, str]] | None = None
                   ) -> list[tuple[str, str, str]]:
    """Every contrast a card may read, each once: the decide pair, the own arms against
    their twins (twin as a, own as b), then the sweep's pairs (sweep_pairs, from
    power.sweep_contrasts; without them, the ladder's rungs and the compare pairs), then
    the gate's pair (decide.gate: against as a, its arm as b) where none of those reads
    it. A pair read once in one order is not read again in the other."""
    out: list[tuple[str, str, str]] = []
    if decide_pair:
        out.append((decide_pair[0], decide_pair[1], "decide"))
    out += [(twin, arm, "own arm") for arm, twin in own.items()]
    seen = {frozenset((a, b)) for a, b, _ in out}
    analysis = (list(sweep_pairs) if sweep_pairs is not None
                else contrasts(plan, [list(p) for p in extra_pairs]))
    out += [(a, b, "analysis") for a, b in analysis if frozenset((a, b)) not in seen]
    if gate_pair and not any({a, b} == set(gate_pair) for a, b, _ in out):
        out.append((gate_pair[0], gate_pair[1], "gate"))
    return out


def best_arm_contrasts(cell: pd.DataFrame, arms: dict[str, Arm], plan: AnalysisPlan,
                       model: str = "") -> list[tuple[str, str, str]]:
    """Per arm that ran in the cell whose carrier is read against your best arm
    (carriers/base.py `against_best`: the native arm, NATIVE_SOURCE), (your best arm, the
    arm, its line's source): the best arm is the matched arm with the highest mean recall
    over the cell's valid rows, ties to the earlier in resources/arms.yaml. Matched means
    spec.is_matched and not in `plan.unmatched`: a resolved Arm cannot say `match: false`
    (its arms-file entry can), so an own arm at its own capacity is never "your best arm"
    here either. It is chosen after the fact, so the line says how far the carrier is from
    the best of what ran, not which arm to pick; the arm read so is in no matched contrast
    (its capacity is not the study's). A native arm's source is in `model`'s native words
    (AnalysisPlan.against_best_source: a proxy's compaction is never called the
    provider's)."""
    ran = [a for a in dict.fromkeys(cell["arm"]) if a in arms]
    # an A/A copy is read against its original only (aa_contrasts), a native@ARM arm
    # against its native arm and ARM (native_with_contrasts)
    read = [a for a in ran if carrier_of(arms[a]).against_best and not arms[a].copy_of
            and not arms[a].instructions_from]
    best = best_arm(cell, arms, plan)
    if not read or best is None:
        return []
    rank = {a: i for i, a in enumerate(plan.arm_order)}
    return [(best, a, plan.against_best_source(a, model, carrier_of(arms[a]).against_best))
            for a in sorted(read, key=lambda a: rank.get(a, 0))]


def aa_contrasts(cell: pd.DataFrame, plan: AnalysisPlan) -> list[tuple[str, str, str]]:
    """(arm, its copy, AA_SOURCE) per A/A copy that ran in the cell beside its original
    (AnalysisPlan.aa): judged like any contrast, adjusted within the family, so a family's
    error covers it too."""
    ran = set(cell["arm"])
    return [(a, c, AA_SOURCE) for c, a in plan.aa.items() if {a, c} <= ran]


def native_with_sources(arm: str, words: NativeWords = PROVIDER) -> tuple[str, str]:
    """The sources of a `native@<arm>` arm's two card lines (config sweeps.X.native_with),
    in a model's native words (the provider's by default): against the native arm (its
    default summarization) and against `arm` folding with the same prompt itself."""
    head = native_with_title(arm, words)
    return (f"{head} against {words.default}", f"{head} against {arm} as a fold arm")


def read_against_contrasts(cell: pd.DataFrame, arms: dict[str, Arm], plan: AnalysisPlan,
                           model: str = "") -> list[tuple[str, str, str]]:
    """Per arm that ran in the cell whose carrier is read against a plain arm of another
    kind (carriers/base.py `read_against`: a `native:keep_recent=N` arm against
    `native`), (that plain arm, it, its source) for each such arm that ran beside it; a
    plain arm is one of exactly that carry, neither an A/A copy nor a `native@ARM` arm.
    Its source names the compaction in `model`'s native words (a proxy's is its
    endpoint's). Judged like any contrast, adjusted within the family."""
    ran = [a for a in dict.fromkeys(cell["arm"]) if a in arms]
    compaction = plan.words_of(model).compaction
    out = []
    for made in ran:
        carrier = carrier_of(arms[made])
        if not carrier.read_against or arms[made].copy_of:
            continue
        out += [(a, made, carrier.read_against_source(compaction)) for a in ran
                if arms[a].carry == carrier.read_against and not arms[a].copy_of
                and not arms[a].instructions_from]
    return out


def native_with_contrasts(cell: pd.DataFrame, plan: AnalysisPlan, model: str = ""
                          ) -> list[tuple[str, str, str]]:
    """Per `native@ARM` arm that ran in the cell (AnalysisPlan.native_with), (the native
    arm, it, its source) where the native arm ran beside it and (ARM, it, its source)
    where ARM did: what the prompt did to the provider's compaction, and what the
    provider's compaction did to the prompt (in `model`'s native words: a proxy's is
    named as its endpoint's). Judged like any contrast, adjusted within the family."""
    ran = set(cell["arm"])
    out = []
    for made, (native, arm) in plan.native_with.items():
        default, fold = native_with_sources(arm, plan.words_of(model))
        out += [(a, made, source) for a, source in ((native, default), (arm, fold))
                if {a, made} <= ran]
    return out


@dataclass(frozen=True)
class CardInputs:
    """What the cards read beside the evidence: from the study config and the audit."""

    margin: float
    power: float = 0.8
    extra_pairs: tuple[tuple[str, str], ...] = ()
    own: dict[str, str] = field(default_factory=dict)  # own arm -> twin
    arms: dict[str, Arm] = field(default_factory=dict)
    decide_pair: tuple[str, str] | None = None
    rotation: Callable[[str], int] = lambda sweep: 1  # noqa: E731 - a default
    price: Callable[[str, str, str], Price | None] = lambda s, m, a: None  # noqa: E731
    # decide: (sweep, model) -> what its staged run took (report/decision.staged_summaries)
    staged: dict[tuple[str, str], StagedSummary] = field(default_factory=dict)
    family: str = "sweep"  # decide.family: the contrasts one error rate covers
    gate_pair: tuple[str, str] | None = None  # decide.gate: (against, arm)
    # model -> how its dollars are priced (audit.RunPrices.basis), said on its card
    price_basis: Callable[[str], str] = lambda m: "no prices"  # noqa: E731 - a default
    # sweep -> its arms and `compare` (config sweeps.X; evidence/load.decision_sweeps):
    # which pairs its cards read (power.sweep_contrasts). A sweep not here reads as one
    # whose arms are those its cell ran, `compare` unset.
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)
    # folds.csv (where the evidence holds it): the stop reason and max_tokens of each
    # failed fold, named on its arm's line (fold_failures)
    folds: pd.DataFrame | None = None
    # sweep -> the CLI's own compaction of its session (the fixture manifest's
    # `own_compaction` and `facts`, the graded facts' count): own_compaction_line
    own_compactions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def sweep_arms(self, sweep: str, ran: Sequence[str]) -> list[str]:
        """The sweep's arms as the config names them, else the arms its cell ran."""
        return list((self.sweeps.get(sweep) or {}).get("arms") or ran)

    def sweep_pairs(self, plan: AnalysisPlan, sweep: str, ran: Sequence[str]
                    ) -> list[tuple[str, str]]:
        """The matched contrasts the sweep's cards read (power.sweep_contrasts)."""
        return sweep_contrasts(plan, self.extra_pairs, self.sweep_arms(sweep, ran),
                               (self.sweeps.get(sweep) or {}).get("compare"))


def card(sweep: str, model: str, cell: pd.DataFrame, checks: pd.DataFrame,
         plan: AnalysisPlan, ci: CardInputs) -> Card:
    """One card over the valid rows of one (sweep, model), each contrast at its own level
    (the family's adjustment and the plans to decide come after, in `cards`)."""
    lost_rows = control_lost_rows(cell, ci.arms)
    # said on every card, every fact lost or not: where all were lost, the ceiling's
    # lines say whether the model could have answered at all
    every_card: dict[str, Any] = dict(
        sweep=sweep, model=model, valid_rows=len(cell), loudness=loudness(cell, plan),
        staged=ci.staged.get((sweep, model)), price_basis=ci.price_basis(model),
        fold_failures=fold_failures(cell, ci.arms, ci.folds),
        ceiling_lines=ceiling_lines(cell, checks, ci.arms, plan),
        control_lost={arm: (len(flagged), n) for arm, (flagged, n) in lost_rows.items()},
        control_lost_rows={arm: flagged for arm, (flagged, _) in lost_rows.items() if flagged},
        repeat_stops=repeat_stops(cell),
        own_compaction=own_compaction_line(cell, checks, ci.arms, plan,
                                           ci.own_compactions.get(sweep)))
    if int(cell["n_correct"].sum()) == 0:
        return Card(all_lost=True, **every_card)
    verdicts = cell_verdicts(sweep, model, cell, checks, plan, ci)
    unread = unread_pairs(cell, plan, verdicts)
    return Card(all_lost=False, contrasts=verdicts, diagnosis=diagnosis(cell, plan),
                own_arms=own_arm_checks(ci.own, ci.arms, set(cell["arm"])),
                index_lines=index_lines(cell, checks, plan, ci.margin), unread_pairs=unread,
                compare_key=compare_key(sweep) if unread else "", **every_card)


def cell_verdicts(sweep: str, model: str, cell: pd.DataFrame, checks: pd.DataFrame,
                  plan: AnalysisPlan, ci: CardInputs) -> list[ContrastVerdict]:
    """Each contrast the cell's card reads (cell_contrasts, then the lines outside the
    matched comparison) over the blocks that ran both arms, at its own level."""
    staged = ci.staged.get((sweep, model))
    sweep_pairs = ci.sweep_pairs(plan, sweep, list(dict.fromkeys(cell["arm"])))
    verdicts = []
    # lines that read an arm outside the matched comparison against another, by design
    outside = [*best_arm_contrasts(cell, ci.arms, plan, model), *aa_contrasts(cell, plan),
               *native_with_contrasts(cell, plan, model),
               *read_against_contrasts(cell, ci.arms, plan, model)]
    for a, b, source in [*cell_contrasts(plan, ci.extra_pairs, ci.own, ci.decide_pair,
                                         ci.gate_pair, sweep_pairs), *outside]:
        if (a in plan.unmatched or b in plan.unmatched) and (a, b, source) not in outside:
            continue  # outside the matched comparison (spec.is_matched): no verdict
        pr = pairs(cell, a, b)
        if pr.empty:
            continue
        level = contrast_level(source, staged, plan.alpha)
        k = float(cell[cell["arm"].isin([a, b])]["n_graded"].mean())
        verdicts.append(judge(a, b, source, pr["recall_first"].to_numpy(),
                              pr["recall_second"].to_numpy(), cell_icc(checks, cell, [a, b]),
                              k, plan, ci.margin, level))
    return verdicts


def compare_key(sweep: str) -> str:
    """The config key that says which pairs a sweep's cards read."""
    return f"sweeps.{sweep}.compare"


def unread_pairs(cell: pd.DataFrame, plan: AnalysisPlan, verdicts: Sequence[ContrastVerdict]
                 ) -> list[tuple[str, str]]:
    """The pairs of matched arms that ran in the cell with a block in common which no
    contrast of the card reads, in either order: a card that reads fewer pairs than its
    sweep runs says which (a sweep of more than PAIRS_UP_TO matched arms keeps the
    paper's rungs and the compare pairs, or its own `compare` names fewer)."""
    read = {frozenset((v.a, v.b)) for v in verdicts}
    blocks = arm_blocks(cell)
    return [(a, b) for a, b in every_pair(plan, list(dict.fromkeys(cell["arm"])))
            if frozenset((a, b)) not in read and blocks.get(a, set()) & blocks.get(b, set())]


def _pair_price(ci: CardInputs, sweep: str, model: str, a: str, b: str) -> Price | None:
    pa, pb = ci.price(sweep, model, a), ci.price(sweep, model, b)
    if pa is None or pb is None:
        return None
    usd = None if pa.usd is None or pb.usd is None else pa.usd + pb.usd
    return Price(calls=pa.calls + pb.calls, usd=usd)


def cards(rows: pd.DataFrame, checks: pd.DataFrame, plan: AnalysisPlan, ci: CardInputs
          ) -> list[Card]:
    """One card per (sweep, model) with valid rows, in sweep then model order; every
    contrast adjusted within its family (ci.family), then each undecided one planned."""
    valid = valid_rows(rows)
    raw = [card(str(s), str(m), g, checks, plan, ci)
           for (s, m), g in valid.groupby(["sweep", "model"], sort=True)]
    ran = {str(s): list(dict.fromkeys(g["arm"])) for s, g in valid.groupby("sweep")}
    out = []
    for c in map(noise_floor, adjust_family(raw, ci.family, plan.alpha, ci.margin)):
        planned = [to_decide(x, x.k, ci.margin, plan_level(x, plan.alpha), ci.power,
                             ci.rotation(c.sweep), _pair_price(ci, c.sweep, c.model, x.a, x.b))
                   for x in c.contrasts]
        many = len(matched_arms(plan, ci.sweep_arms(c.sweep, ran[c.sweep]))) > PAIRS_UP_TO
        out.append(dataclasses.replace(
            c, contrasts=planned, served_by_other=served_by_other_rows(rows, c.sweep, c.model),
            family_cost=family_cost(c, plan, ci) if many else None))
    return out


def family_cost(c: Card, plan: AnalysisPlan, ci: CardInputs) -> FamilyCost | None:
    """What the card's family size costs each contrast in power, for a sweep of many
    arms: Holm's first step judges the smallest p at alpha over the family's size, which
    needs more blocks before a sign-flip p can reach it at all (min_blocks), and more
    repeats to detect a difference of the margin (power.repeats_needed at the contrasts'
    median ICC and checks per row). None where no contrast of the card was adjusted by
    Holm in a family of more than one."""
    held = [v for v in c.contrasts if v.adjustment == HOLM and v.family_size > 1]
    if not held:
        return None
    size = max(v.family_size for v in held)
    level = plan.alpha / size
    icc = float(np.median([v.icc for v in held]))
    k = float(np.nanmedian([v.k for v in held]))

    def need(alpha: float) -> int | None:
        try:
            return repeats_needed(ci.margin, icc, k, alpha=alpha, power=ci.power,
                                  rotation=ci.rotation(c.sweep))
        except ValueError:  # no number of repeats reaches the power (PLAN_MAX_BLOCKS)
            return None

    return FamilyCost(size=size, alpha=plan.alpha, level=level, min_blocks=min_blocks(level),
                      min_blocks_alone=min_blocks(plan.alpha), difference=ci.margin,
                      power=ci.power, repeats=need(level), repeats_alone=need(plan.alpha),
                      key=compare_key(c.sweep))


def planned_family_size(plan: AnalysisPlan, extra_pairs: Sequence[Sequence[str]],
                        own: dict[str, str], decide_pair: Sequence[str] | None,
                        sweep_arms: Sequence[str], models: int, family: str,
                        gate_pair: Sequence[str] | None = None,
                        compare: str | Sequence[Sequence[str]] | None = None) -> int:
    """The contrasts a decide sweep's cards will read, before any row: the pairs of
    cell_contrasts both of whose arms the sweep runs (its pairs by its `compare`,
    power.sweep_contrasts), and one line per arm read against
    your best arm where the sweep runs a matched arm (best_arm_contrasts), on every model for
    the `sweep` family, on one for `model`. What a staged look splits alpha by: a line
    the plan left out would take a share of alpha the looks had already spent."""
    ran = set(sweep_arms)
    mine = sweep_contrasts(plan, extra_pairs, sweep_arms, compare)
    n = sum(1 for a, b, _ in cell_contrasts(plan, extra_pairs, own, decide_pair, gate_pair,
                                            mine)
            if {a, b} <= ran)
    if ran - plan.unmatched:
        n += len(ran & set(plan.against_best))
    n += sum(1 for c, a in plan.aa.items() if {a, c} <= ran)  # the A/A lines
    n += sum(1 for made, pair in plan.native_with.items() for a in pair
             if {a, made} <= ran)  # a native@ARM arm's two lines
    return max(1, n * (models if family == "sweep" else 1))
