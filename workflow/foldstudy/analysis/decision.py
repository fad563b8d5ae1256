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
  arm and against ARM (native_with_contrasts);
- the pairs of matched arms the cell ran that no contrast reads, and the key that adds
  them; where the sweep runs more than power.PAIRS_UP_TO matched arms, what the family's
  size costs in power (family_cost);
- or, where every arm lost every fact, that verdict and no ranking.
Thresholds come from resources/analysis.yaml through AnalysisPlan; the failing and mode
definitions are analysis/partition.py's, the ones partition.csv uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..grade.validity import SERVED_BY_OTHER
from ..study.carriers.native import NATIVE_SOURCE  # noqa: F401 - the cards' readers name it
from ..study.carriers.registry import carrier_of
from ..study.spec import Arm, is_matched, native_with_title
from . import stats
from .cells import BLOCK, cell_summary, mean, pairs, valid_rows
from .instrument import abstention, failing_rows
from .partition import failure_mode
from .plan import AnalysisPlan
from .power import (
    PAIRS_UP_TO,
    PAPER_ICC,
    CellICC,
    contrasts,
    every_pair,
    matched_arms,
    min_blocks,
    repeats_needed,
    repeats_to_decide,
    sweep_contrasts,
    within_cell_icc,
)

A_BETTER, B_BETTER = "{a} better", "{b} better"
EQUIVALENT, UNDECIDED = "equivalent within ±{margin:g}", "undecided"
# Paper §4.7: the fill diagnostic names the failure, and so whether partitioning helps.
MODE_WORDS = {"over_writing": "description", "under_writing": "gist"}
BETWEEN = "between the paper's modes"
ALL_LOST = ("every arm lost every fact on this model: no arm recalled any graded value "
            "in any valid row, so no arm is ranked and no contrast is read")
# Paper §5, the rule an own arm is checked against.
SECTION5_RULE = "a memory carrier should not contain an undivided free-text slot"


@dataclass(frozen=True)
class Price:
    """What one repeat of one arm costs, priced as the ledger reserves (audit.RunPrices):
    calls and dollars (None:
    unknown price)."""

    calls: int
    usd: float | None


@dataclass(frozen=True)
class ContrastVerdict:
    a: str
    b: str
    source: str  # "analysis" (the sweep's pairs), "own arm", "decide", NATIVE_SOURCE
    blocks: int
    a_mean: float
    b_mean: float
    difference: float  # b - a, mean over blocks
    ci_low: float | None
    ci_high: float | None
    p_permutation: float | None
    tost_p: float | None
    equivalent: bool
    word: str
    icc: float
    icc_source: str
    # undecided only: the repeats in all that would decide it, the more to run, their cost
    repeats_to_decide: int | None = None
    planned_difference: float | None = None  # the difference that plan is made at
    planned_test: str | None = None  # power.DIFFERENCE or power.EQUIVALENCE
    more_repeats: int | None = None
    more_calls: int | None = None
    more_usd: float | None = None
    k: float = float("nan")  # checks per row, which the plan to decide reads
    # error control over the family (decide.family): the p the word reads, beside the raw
    # one; the family's name and size; how it was adjusted; the level the adjusted p
    # is compared with
    p_adjusted: float | None = None
    family: str = ""
    family_size: int = 1
    adjustment: str = ""
    level: float | None = None
    # the noise floor, where the cell ran an A/A control (noise_floor): the half-width of
    # the A/A difference's interval, and whether this contrast's difference lies inside
    # it (then its word is undecided, never a finding)
    aa_floor: float | None = None
    inside_noise: bool = False


@dataclass(frozen=True)
class Diagnosis:
    """Paper §4.6-4.7 on one model: the undivided arm j, its fill, and q's rescue."""

    j_n: int
    j_mean: float
    failing: bool
    borderline: bool
    j_fill: float | None
    mode: str  # "healthy", "description", "gist", BETWEEN, "unknown"
    q_mean: float | None
    rescued: bool | None


@dataclass(frozen=True)
class Loudness:
    """Paper §4.11 on one model: its failing rows, abstaining or fabricating."""

    failing_rows: int
    abstained: int
    fabricated: int  # no abstention marker anywhere in the answer
    stock: int  # failing rows with a stock-value signature among their values
    caught_by_abstention_log: float | None  # abstained / failing_rows
    # the stock rows split by the two classes above (they overlap: a row that abstains on
    # one label may answer another with a stock value); None where no row recorded its
    # stock values (a package without n_stock_signature)
    stock_fabricated: int | None = None
    stock_abstained: int | None = None


@dataclass(frozen=True)
class OwnArmCheck:
    arm: str
    twin: str
    undivided_slot: bool
    why: str


@dataclass(frozen=True)
class IndexLine:
    """An index arm against its base arm in one cell (b − a: index arm minus
    base over blocks, with its permutation p and TOST), and whether the index rescued a
    failing carrier: the base below failing_recall and the index arm at rescued_recall or
    more (paper §4.7's threshold, 0.5). rescued is None where the base was not failing."""

    arm: str
    base: str
    verdict: ContrastVerdict
    base_failing: bool
    rescued: bool | None


@dataclass(frozen=True)
class CeilingLine:
    """An arm read against the ceiling (carriers/base.py `ceiling`: `uncompacted`, whose
    recall turn reads the whole session) over the blocks that ran both: of the graded
    facts the arm lost, those the ceiling recalled in the same block are the carrier's
    loss, those it missed too the recall turn's (the model could not answer them even
    reading everything). ceiling_recall: the ceiling's mean recall over those blocks."""

    arm: str
    ceiling: str
    blocks: int
    lost: int
    carrier_lost: int
    recall_lost: int
    ceiling_recall: float


@dataclass(frozen=True)
class FamilyCost:
    """What a family of many contrasts costs each of them in power (Holm's first step
    judges the smallest p at alpha / size): the level, the fewest blocks whose sign-flip
    p can reach it against alpha's, and the repeats per model that detect a difference
    of `difference` (the margin) at the card's power, at the family's level and alone,
    at the family's median ICC and checks per row. repeats None: no number decides it."""

    size: int
    alpha: float
    level: float
    min_blocks: int
    min_blocks_alone: int
    difference: float
    power: float
    repeats: int | None
    repeats_alone: int | None
    key: str  # the config key that narrows the family (sweeps.X.compare)


@dataclass(frozen=True)
class Card:
    sweep: str
    model: str
    valid_rows: int
    all_lost: bool
    contrasts: list[ContrastVerdict] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    loudness: Loudness | None = None
    own_arms: list[OwnArmCheck] = field(default_factory=list)
    # decide: the repeats this model took and what they cost (filled by the staged run)
    staged: dict[str, Any] | None = None
    price_basis: str | None = None  # how the card's dollars are priced
    # A line per index arm that ran in the cell, against its base arm; outside
    # the verdicts' family (an index arm is outside the matched comparison)
    index_lines: list[IndexLine] = field(default_factory=list)
    # arm -> what its carrier's failed folds were in the cell ("3 of 12 folds returned
    # no compaction", fold_failures): said on the card and beside each of its contrasts
    fold_failures: dict[str, str] = field(default_factory=dict)
    # a line per arm of the cell read against the ceiling that ran beside it (outside
    # the verdicts' family: the ceiling is outside the matched comparison)
    ceiling_lines: list[CeilingLine] = field(default_factory=list)
    # arm -> its rows that missed a control fact the ceiling recalled in the same block,
    # and its rows read so (control_lost_rows): those rows' losses are not the carrier's alone
    control_lost: dict[str, tuple[int, int]] = field(default_factory=dict)
    # arm -> the row ids of those rows (each flagged "control lost" on the decision page)
    control_lost_rows: dict[str, list[str]] = field(default_factory=dict)
    # arm -> (folds the embedded backend ended at a repetition, folds) over the cell's
    # valid rows (repeat_stops): what those folds wrote is their text up to the stop
    repeat_stops: dict[str, tuple[int, int]] = field(default_factory=dict)
    # the cell's rows another model served (validity: served_by_other), each as
    # "row_id (served by model)": left out of every number on the card, and named there
    served_by_other: list[str] = field(default_factory=list)
    # the pairs of matched arms that ran in the cell which no contrast reads (a sweep of
    # more than PAIRS_UP_TO matched arms, or its own `compare`), and the config key that
    # adds them (sweeps.X.compare)
    unread_pairs: list[tuple[str, str]] = field(default_factory=list)
    compare_key: str = ""
    # a sweep of more than PAIRS_UP_TO matched arms: what the family's size costs in
    # power (FamilyCost), said on the card with how to narrow it
    family_cost: FamilyCost | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("fold_failures", "ceiling_lines", "control_lost", "control_lost_rows",
                    "repeat_stops", "served_by_other", "unread_pairs", "compare_key",
                    "family_cost"):
            if not d[key]:  # a card with none reads as it always did
                d.pop(key)
        return d

    @property
    def aa_lines(self) -> list[ContrastVerdict]:
        """The card's A/A lines (AA_SOURCE): each arm against its exact copy."""
        return [v for v in self.contrasts if v.source == AA_SOURCE]

    @property
    def instrument_fails(self) -> list[ContrastVerdict]:
        """The A/A lines declared different: an arm "better" than its exact copy is the
        instrument failing (the endpoint's drift, or noise the test does not hold), so no
        other word on the card can be read as the carriers'."""
        return [v for v in self.aa_lines if v.word.endswith(" better")]


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
        a, b, source, len(d), float(a_vals.mean()) if len(d) else float("nan"),
        float(b_vals.mean()) if len(d) else float("nan"), diff,
        boot.low if boot else None, boot.high if boot else None, p, tost_p, eq,
        word(diff, p, eq, a, b, alpha, margin), icc_value, icc_source, k=k, p_adjusted=p,
        level=alpha)


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
    return _replace(v, repeats_to_decide=plan.repeats, planned_difference=plan.difference,
                    planned_test=plan.test, more_repeats=more, more_calls=calls,
                    more_usd=usd)


def _replace(v: ContrastVerdict, **kw: Any) -> ContrastVerdict:
    return ContrastVerdict(**{**asdict(v), **kw})


# ----------------------------------------------------------------- the diagnosis


def fill_mode(fill: float | None, plan: AnalysisPlan) -> str:
    """A failing model's mode by its undivided fill (paper §4.7: "Ordering the failing
    models by how much of the declared ceiling their undivided carrier filled separates
    the outcomes completely"): partition.csv's split (analysis.failure_mode), in the
    card's words, and BETWEEN where the fill lies strictly between the highest fill the
    paper saw in the gist mode and the lowest it saw in the description mode."""
    if fill is None or np.isnan(fill):
        return "unknown"
    gist_top, description_bottom = plan.failure_mode_paper_fills
    if gist_top < fill < description_bottom:
        return BETWEEN
    return MODE_WORDS[failure_mode(True, fill, plan)]


def diagnosis(cell: pd.DataFrame, plan: AnalysisPlan) -> Diagnosis | None:
    """Paper §4.7 on the valid rows of one (sweep, model) of the primary scenario: j
    failing (mean below failing_recall), its fill's mode, q's rescue where q ran."""
    p = cell[cell["scenario"] == plan.primary_scenario]
    gj, gq = p[p["arm"] == plan.undivided], p[p["arm"] == plan.divided]
    if not gj["recall"].notna().any():
        return None
    sj = cell_summary(gj, plan.row_recalled)
    fill = mean(gj["fill"])
    failing = bool(sj["mean"] < plan.failing_recall)
    q_mean = cell_summary(gq, plan.row_recalled)["mean"] if gq["recall"].notna().any() else None
    rescued = None if q_mean is None or not failing else bool(q_mean >= plan.rescued_recall)
    return Diagnosis(
        sj["n"], sj["mean"], failing,
        bool(abs(sj["mean"] - plan.failing_recall) <= plan.borderline_margin),
        None if np.isnan(fill) else fill,
        fill_mode(fill, plan) if failing else "healthy", q_mean, rescued)


def loudness(cell: pd.DataFrame, plan: AnalysisPlan) -> Loudness:
    """Paper §4.11 over the failing rows of every arm of the cell (analysis.abstention's
    counts, summed): "a system that logs abstention would have caught it"."""
    ab = abstention(cell, plan)
    n = int(ab["failing_rows"].sum())
    abstained = int(ab["abstains"].sum())
    stock = ab["stock_rows"].dropna()
    split: tuple[int | None, int | None] = (None, None)
    failing = failing_rows(cell, plan)
    if "n_stock_signature" in failing:
        is_stock = failing["n_stock_signature"] > 0
        did_abstain = failing["abstained"].fillna(False).astype(bool)
        split = int((is_stock & ~did_abstain).sum()), int((is_stock & did_abstain).sum())
    return Loudness(n, abstained, int(ab["fabricates"].sum()), int(stock.sum()),
                    abstained / n if n else None, *split)


# --------------------------------------------------------------- the own arm (§5)


def carried_fields(arm: Arm) -> list[str]:
    """The schema fields whose text reaches the next fold (resources/arms.yaml `carry`, its
    carrier's to say): one for field:NAME (as n carries summary only), those under the
    headings for under_headings, every field otherwise."""
    if not arm.schema:
        return []
    return carrier_of(arm).carried_fields(arm)


def undivided_slot(arm: Arm) -> tuple[bool, str]:
    """Paper §5: "a memory carrier should not contain an undivided free-text slot". A
    schema arm whose carry holds exactly one free-text (string) field has one: one string
    field declared and carried (j), or several declared and one carried (n: "two of its
    three fields ... are discarded rather than carried, so what reaches the next fold is
    again a single free-text slot"). A plain-text arm has no schema slot (§4.8: "Zero
    sections is harmless without a schema")."""
    if not arm.schema:
        return False, "plain text: no schema, so no slot (paper §4.8)"
    props = arm.schema.get("properties", {})
    carried = carried_fields(arm)
    text = [f for f in carried if props.get(f, {}).get("type") == "string"]
    declared = len(props)
    if len(text) == 1:
        how = (f"one string field `{text[0]}` declared and carried" if declared == 1 else
               f"{declared} fields declared, one free-text field `{text[0]}` carried")
        return True, f"{how} (carry: {arm.carry})"
    return False, f"{len(text)} free-text fields carried of {declared} declared"


def own_arm_checks(own: dict[str, str], arms: dict[str, Arm], ran: set[str]
                   ) -> list[OwnArmCheck]:
    """Each own arm (config arms_file: arm -> twin) that ran in the cell, checked."""
    out = []
    for arm, twin in own.items():
        if arm in ran and arm in arms:
            flag, why = undivided_slot(arms[arm])
            out.append(OwnArmCheck(arm, twin, flag, why))
    return out


# --------------------------------------------------------------------- the cards


def cell_icc(checks: pd.DataFrame, cell: pd.DataFrame, arms: Sequence[str]
             ) -> CellICC | None:
    """The ICC within cells (power.within_cell_icc) of the contrast's arms in the cell."""
    rows = cell[cell["arm"].isin(arms)][["row_id", "sweep", "model", "arm"]]
    c = checks.merge(rows, on="row_id")
    if c.empty:
        return None
    label = c["sweep"].astype(str) + "|" + c["model"].astype(str) + "|" + c["arm"]
    return within_cell_icc(label, c["row_id"], c["correct"].astype(float))


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


def best_arm_contrasts(cell: pd.DataFrame, arms: dict[str, Arm], plan: AnalysisPlan
                       ) -> list[tuple[str, str, str]]:
    """Per arm that ran in the cell whose carrier is read against your best arm
    (carriers/base.py `against_best`: the native arm, NATIVE_SOURCE), (your best arm, the
    arm, its line's source): the best arm is the matched arm with the highest mean recall
    over the cell's valid rows, ties to the earlier in resources/arms.yaml. Matched means
    spec.is_matched and not in `plan.unmatched`: a resolved Arm cannot say `match: false`
    (its arms-file entry can), so an own arm at its own capacity is never "your best arm"
    here either. It is chosen after the fact, so the line says how far the carrier is from
    the best of what ran, not which arm to pick; the arm read so is in no matched contrast
    (its capacity is not the study's)."""
    ran = [a for a in dict.fromkeys(cell["arm"]) if a in arms]
    # an A/A copy is read against its original only (aa_contrasts), a native@ARM arm
    # against its native arm and ARM (native_with_contrasts)
    read = [a for a in ran if carrier_of(arms[a]).against_best and not arms[a].copy_of
            and not arms[a].instructions_from]
    matched = [a for a in ran if is_matched(arms[a]) and a not in plan.unmatched]
    if not read or not matched:
        return []
    rank = {a: i for i, a in enumerate(plan.arm_order)}
    means = cell.groupby("arm")["recall"].mean()
    best = min(matched, key=lambda a: (-float(means[a]), rank.get(a, len(rank)), a))
    return [(best, a, carrier_of(arms[a]).against_best)
            for a in sorted(read, key=lambda a: rank.get(a, 0))]


# The source of a card's A/A line (config sweeps.X.controls.aa): an arm against an exact
# copy of itself through the same endpoint. Any verdict but equivalent or undecided there
# is the instrument's own noise or drift, not a carrier's difference.
AA_SOURCE = "A/A control: the arm against its exact copy"


def aa_contrasts(cell: pd.DataFrame, plan: AnalysisPlan) -> list[tuple[str, str, str]]:
    """(arm, its copy, AA_SOURCE) per A/A copy that ran in the cell beside its original
    (AnalysisPlan.aa): judged like any contrast, adjusted within the family, so a family's
    error covers it too."""
    ran = set(cell["arm"])
    return [(a, c, AA_SOURCE) for c, a in plan.aa.items() if {a, c} <= ran]


def native_with_sources(arm: str) -> tuple[str, str]:
    """The sources of a `native@<arm>` arm's two card lines (config sweeps.X.native_with):
    against the native arm (the provider's default summarization) and against `arm`
    folding with the same prompt itself."""
    head = native_with_title(arm)
    return (f"{head} against the provider's default", f"{head} against {arm} as a fold arm")


def native_with_contrasts(cell: pd.DataFrame, plan: AnalysisPlan) -> list[tuple[str, str, str]]:
    """Per `native@ARM` arm that ran in the cell (AnalysisPlan.native_with), (the native
    arm, it, its source) where the native arm ran beside it and (ARM, it, its source)
    where ARM did: what the prompt did to the provider's compaction, and what the
    provider's compaction did to the prompt. Judged like any contrast, adjusted within
    the family."""
    ran = set(cell["arm"])
    out = []
    for made, (native, arm) in plan.native_with.items():
        default, fold = native_with_sources(arm)
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
    # decide: (sweep, model) -> what its staged run took (report/decision.staged_summary)
    staged: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
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
    failures = fold_failures(cell, ci.arms, ci.folds)
    repeats = repeat_stops(cell)
    # said on every card, every fact lost or not: where all were lost, it says whether
    # the model could have answered at all
    ceiling = ceiling_lines(cell, checks, ci.arms, plan)
    lost_rows = control_lost_rows(cell, ci.arms)
    lost_controls = {arm: (len(flagged), n) for arm, (flagged, n) in lost_rows.items()}
    flagged = {arm: flagged for arm, (flagged, _) in lost_rows.items() if flagged}
    if int(cell["n_correct"].sum()) == 0:
        return Card(sweep, model, len(cell), True, loudness=loudness(cell, plan),
                    staged=ci.staged.get((sweep, model)), price_basis=ci.price_basis(model),
                    fold_failures=failures, ceiling_lines=ceiling, control_lost=lost_controls,
                    control_lost_rows=flagged, repeat_stops=repeats)
    ran = set(cell["arm"])
    staged = ci.staged.get((sweep, model))
    sweep_pairs = ci.sweep_pairs(plan, sweep, list(dict.fromkeys(cell["arm"])))
    verdicts = []
    # lines that read an arm outside the matched comparison against another, by design
    outside = [*best_arm_contrasts(cell, ci.arms, plan), *aa_contrasts(cell, plan),
               *native_with_contrasts(cell, plan)]
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
    unread = unread_pairs(cell, plan, verdicts)
    return Card(sweep, model, len(cell), False, verdicts, diagnosis(cell, plan),
                loudness(cell, plan), own_arm_checks(ci.own, ci.arms, ran), staged,
                ci.price_basis(model), index_lines(cell, checks, plan, ci.margin), failures,
                ceiling, lost_controls, flagged, repeat_stops=repeats, unread_pairs=unread,
                compare_key=compare_key(sweep) if unread else "")


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
    return [(a, b) for a, b in every_pair(plan, list(dict.fromkeys(cell["arm"])))
            if frozenset((a, b)) not in read and not pairs(cell, a, b).empty]


def ceiling_lines(cell: pd.DataFrame, checks: pd.DataFrame, arms: dict[str, Arm],
                  plan: AnalysisPlan) -> list[CeilingLine]:
    """Each other arm of the cell against each ceiling arm that ran in it, over the
    blocks (sweep, model, repeat) with a valid row of both, in arms.yaml's order: the
    facts the arm lost, split by whether the ceiling recalled the same fact in the same
    block: was a lost fact the carrier's loss, or could the recall turn not answer it
    even reading the whole session? Without it a card that says every arm lost every
    fact cannot say whether the model could have answered at all."""
    ran = [a for a in dict.fromkeys(cell["arm"]) if a in arms]
    ceilings = [a for a in ran if carrier_of(arms[a]).ceiling]
    if not ceilings:
        return []
    rank = {a: i for i, a in enumerate(plan.arm_order)}
    facts = checks.merge(cell[["row_id", "arm", *BLOCK]], on="row_id")[
        ["arm", *BLOCK, "label", "correct"]]
    out = []
    for top in ceilings:
        mine = facts[facts["arm"] == top].drop(columns="arm").rename(
            columns={"correct": "ceiling_correct"})
        for arm in sorted((a for a in ran if a != top), key=lambda a: rank.get(a, 0)):
            both = facts[facts["arm"] == arm].merge(mine, on=[*BLOCK, "label"])
            if both.empty:
                continue
            lost = both[~both["correct"].astype(bool)]
            kept_by_ceiling = int(lost["ceiling_correct"].astype(bool).sum())
            blocks = both[BLOCK].drop_duplicates()
            top_rows = cell[(cell["arm"] == top)].merge(blocks, on=BLOCK)
            out.append(CeilingLine(arm, top, len(blocks), len(lost), kept_by_ceiling,
                                   len(lost) - kept_by_ceiling,
                                   float(top_rows["recall"].mean())))
    return out


def control_lost_rows(cell: pd.DataFrame, arms: dict[str, Arm]
                      ) -> dict[str, tuple[list[str], int]]:
    """Per arm of the cell read beside a ceiling arm (carriers/base.py `ceiling`) in blocks
    where control facts were asked (rows.csv n_control > 0): (the ids of the rows that
    missed a control fact the ceiling's row of the same block recalled, rows read). A
    control fact sits where every working carrier keeps it, and the ceiling's recall turn
    answered it, so such a row is "control lost": its recall turn or its grader failed,
    and its losses are not the carrier's alone. Both rows were asked the same labels (one
    fixture), so "the ceiling recalled it" is "not among the ceiling row's control_missed".

    Only the blocks where the ceiling recalled a control fact are read: where it recalled
    none, no row's miss says anything about its carrier (the recall turn fails reading
    everything), so an arm whose every block is such reads (no row, 0 rows read), which
    the card says as control facts that cannot be read, never as a recall turn that
    works."""
    if "n_control" not in cell or "control_missed" not in cell:
        return {}
    asked = cell[pd.to_numeric(cell["n_control"], errors="coerce").fillna(0) > 0]
    ran = [a for a in dict.fromkeys(asked["arm"]) if a in arms]
    tops = [a for a in ran if carrier_of(arms[a]).ceiling]
    if not tops:
        return {}

    def missed(row: pd.Series) -> set[str]:
        return {x for x in str(row.get("control_missed") or "").split(";") if x}

    top_rows = asked[asked["arm"] == tops[0]]
    top_missed = {tuple(r[BLOCK]): missed(r) for _, r in top_rows.iterrows()}
    readable = {tuple(r[BLOCK]) for _, r in top_rows.iterrows()
                if len(missed(r)) < int(float(r["n_control"]))}
    out: dict[str, tuple[list[str], int]] = {}
    for arm in (a for a in ran if a not in tops):
        beside = [r for _, r in asked[asked["arm"] == arm].iterrows()
                  if tuple(r[BLOCK]) in top_missed]
        rows = [r for r in beside if tuple(r[BLOCK]) in readable]
        lost = [str(r["row_id"]) for r in rows if missed(r) - top_missed[tuple(r[BLOCK])]]
        if beside:
            out[arm] = (lost, len(rows))
    return out


def repeat_stops(cell: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per arm of the cell with any, (folds the embedded backend ended because the reply
    repeated itself, folds) over the cell's valid rows (rows.csv finish_repeat; empty
    where the package predates it). Such a fold is what a fold cut at its token budget
    is, only sooner: the arm's own behaviour, in the means."""
    if "finish_repeat" not in cell:
        return {}
    out: dict[str, tuple[int, int]] = {}
    for arm, rows in cell.groupby("arm", sort=False):
        stopped = int(rows["finish_repeat"].fillna(0).sum())
        if stopped:
            out[str(arm)] = (stopped, int(rows["folds"].fillna(0).sum()))
    return out


# The study's finish_reason of a fold cut at the request's token cap (backends map the
# provider's own: Anthropic's `max_tokens`, OpenAI's `max_output_tokens`), and how a
# card names it: the request's parameter, whose value the study chose.
LENGTH, AT_CAP = "length", "max_tokens"


def fold_failures(cell: pd.DataFrame, arms: dict[str, Arm],
                  folds: pd.DataFrame | None = None) -> dict[str, str]:
    """Per arm of the cell whose carrier names its failed folds (carriers/base.py
    `fold_failure`: the native arm's "returned no compaction") and had any, "k of n folds
    <what they were>" over the cell's valid rows (rows.csv parse_failures over folds),
    and, where folds.csv is read, each stop reason of those folds with its count
    (stop_reasons): a fold stopped at max_tokens names the cap the request sent, which
    the study chose, so that stop may be the study's own and not the provider's.

    Such a fold is the arm's own behaviour, so its row stays valid and in the means
    (paper §3.3: "rows invalidated by an arm's own behaviour may not [be retried], since
    retrying those would select for the arm succeeding"); its recall difference is then
    partly that failure, which is why the card says it beside every contrast of the arm."""
    out: dict[str, str] = {}
    for arm, rows in cell.groupby("arm", sort=False):
        words = carrier_of(arms[arm]).fold_failure if arm in arms else ""
        failed = int(rows["parse_failures"].fillna(0).sum())
        if words and failed:
            said = f"{failed} of {int(rows['folds'].fillna(0).sum())} folds {words}"
            if folds is not None:
                said += stop_reasons(folds[folds["row_id"].isin(rows["row_id"])])
            out[str(arm)] = said
    return out


def stop_reasons(folds: pd.DataFrame) -> str:
    """" (stop reasons: max_tokens 2, at the cap the request sent, max_tokens 600;
    stop 1)": the failed folds (parse_ok false) of folds.csv by their finish_reason, most
    first; "" where none is there."""
    failed = folds[~folds["parse_ok"].astype(bool)]
    if failed.empty:
        return ""
    parts = []
    for reason, n in failed["finish_reason"].astype(str).value_counts().items():
        if reason != LENGTH:
            parts.append(f"{reason} {n}")
            continue
        caps = (sorted({int(x) for x in pd.to_numeric(
            failed.loc[failed["finish_reason"] == LENGTH, "max_tokens"], errors="coerce")
            .dropna()}) if "max_tokens" in failed else [])
        cap = (f", at the cap the request sent, {AT_CAP} {'/'.join(map(str, caps))}: the "
               "study's own fold budget, so the stop may be the study's and not the "
               "provider's" if caps else "")
        parts.append(f"{AT_CAP} {n}{cap}")
    return f" (stop reasons: {'; '.join(parts)})"


def index_lines(cell: pd.DataFrame, checks: pd.DataFrame, plan: AnalysisPlan, margin: float
                ) -> list[IndexLine]:
    """Each index arm of the cell against its base (resources/arms.yaml `base`), over the
    blocks that ran both, in arms.yaml's order."""
    out = []
    for arm, base in plan.index_bases.items():
        pr = pairs(cell, base, arm)
        if pr.empty:
            continue
        k = float(cell[cell["arm"].isin([base, arm])]["n_graded"].mean())
        v = judge(base, arm, "index arm", pr["recall_first"].to_numpy(),
                  pr["recall_second"].to_numpy(), cell_icc(checks, cell, [base, arm]), k,
                  plan, margin)
        failing = v.a_mean < plan.failing_recall
        out.append(IndexLine(arm, base, v, failing,
                             v.b_mean >= plan.rescued_recall if failing else None))
    return out


def contrast_level(source: str, staged: dict[str, Any] | None, alpha: float) -> float:
    """The level a contrast is judged at: alpha, except the decide pair of a staged study,
    judged at the nominal level of the look that ended it (Lan–DeMets spending), so the
    card's word is the staged decision's and never a difference the looks did not grant."""
    if source == "decide" and staged and staged.get("nominal"):
        return float(staged["nominal"])
    return alpha


def _pair_price(ci: CardInputs, sweep: str, model: str, a: str, b: str) -> Price | None:
    pa, pb = ci.price(sweep, model, a), ci.price(sweep, model, b)
    if pa is None or pb is None:
        return None
    usd = None if pa.usd is None or pb.usd is None else pa.usd + pb.usd
    return Price(pa.calls + pb.calls, usd)


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
        planned = [to_decide(x, x.k, ci.margin, _plan_level(x, plan.alpha), ci.power,
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

    return FamilyCost(size, plan.alpha, level, min_blocks(level), min_blocks(plan.alpha),
                      ci.margin, ci.power, need(level), need(plan.alpha),
                      compare_key(c.sweep))


def served_by_other_rows(rows: pd.DataFrame, sweep: str, model: str) -> list[str]:
    """The (sweep, model) cell's rows invalid as served_by_other, "row_id (served by
    X)" each in row order: another model answered a call of theirs (a provider's
    fallback, a gateway's substitute), so they are not this model's and no number on
    the card reads them; the card names them so a reader sees what was left out."""
    prefix = f"{SERVED_BY_OTHER}:"
    reason = rows["invalid_reason"].fillna("").astype(str)
    cell = rows[(rows["sweep"].astype(str) == sweep) & (rows["model"].astype(str) == model)
                & reason.str.startswith(prefix)]
    return [f"{r['row_id']} (served by {str(r['invalid_reason'])[len(prefix):]})"
            for _, r in cell.sort_values("row_id").iterrows()]


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
    if v.source != "decide" or not c.staged or not c.staged.get("nominal"):
        return None
    return int(c.staged.get("family_size") or 1)


def _plan_level(v: ContrastVerdict, alpha: float) -> float:
    """The level an undecided contrast's plan is made at: its family's share, alpha over
    the family's size (the first, strictest of Holm's steps), or the staged look's."""
    if v.adjustment == SPLIT:
        return float(v.level or alpha) / v.family_size
    return alpha / max(v.family_size, 1)


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
