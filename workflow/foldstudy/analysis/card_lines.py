"""The lines of a decision card beyond its contrasts (docs/design.md §6, Decision).

Each is read from one (sweep, model)'s valid rows: the paper's diagnosis (§4.6-4.7), how
the failing rows fail (§4.11), the own arm's slot (§5), the index arms against their
bases, the ceiling's split of each arm's lost facts, the control facts lost, the folds
that stopped at a repetition or failed, and the rows another model served. Pure: frames
in, line records (analysis/card.py) out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..carriers.registry import carrier_of
from ..grade.validity import SERVED_BY_OTHER
from ..study.arm import Arm, is_matched
from .card import (
    CeilingLine,
    Diagnosis,
    IndexLine,
    Loudness,
    OwnArmCheck,
    OwnCompactionLine,
)
from .cells import BLOCK, cell_summary, mean, pairs
from .instrument import abstention, failing_rows
from .partition import failure_mode
from .plan import AnalysisPlan
from .verdict import cell_icc, judge

# Paper §4.7: the fill diagnostic names the failure, and so whether partitioning helps.
MODE_WORDS = {"over_writing": "description", "under_writing": "gist"}
BETWEEN = "between the paper's modes"
# Paper §5, the rule an own arm is checked against.
SECTION5_RULE = "a memory carrier should not contain an undivided free-text slot"


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
        j_n=sj["n"], j_mean=sj["mean"], failing=failing,
        borderline=bool(abs(sj["mean"] - plan.failing_recall) <= plan.borderline_margin),
        j_fill=None if np.isnan(fill) else fill,
        mode=fill_mode(fill, plan) if failing else "healthy", q_mean=q_mean, rescued=rescued)


def loudness(cell: pd.DataFrame, plan: AnalysisPlan) -> Loudness:
    """Paper §4.11 over the failing rows of every arm of the cell (analysis.abstention's
    counts, summed): "a system that logs abstention would have caught it"."""
    ab = abstention(cell, plan)
    n = int(ab["failing_rows"].sum())
    abstained = int(ab["abstains"].sum())
    stock = ab["stock_rows"].dropna()
    stock_fabricated = stock_abstained = None
    failing = failing_rows(cell, plan)
    if "n_stock_signature" in failing:
        is_stock = failing["n_stock_signature"] > 0
        did_abstain = failing["abstained"].fillna(False).astype(bool)
        stock_fabricated = int((is_stock & ~did_abstain).sum())
        stock_abstained = int((is_stock & did_abstain).sum())
    return Loudness(failing_rows=n, abstained=abstained,
                    fabricated=int(ab["fabricates"].sum()), stock=int(stock.sum()),
                    caught_by_abstention_log=abstained / n if n else None,
                    stock_fabricated=stock_fabricated, stock_abstained=stock_abstained)


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
            out.append(OwnArmCheck(arm=arm, twin=twin, undivided_slot=flag, why=why))
    return out


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
            out.append(CeilingLine(arm=arm, ceiling=top, blocks=len(blocks), lost=len(lost),
                                   carrier_lost=kept_by_ceiling,
                                   recall_lost=len(lost) - kept_by_ceiling,
                                   ceiling_recall=float(top_rows["recall"].mean())))
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
        carrier = carrier_of(arms[arm]) if arm in arms else None
        words = carrier.fold_failure if carrier is not None else ""
        failed = int(rows["parse_failures"].fillna(0).sum())
        if words and failed and carrier is not None:
            # the folds that sent a request: a keep_recent arm's first N never do
            asked = int(rows["folds"].fillna(0).sum()) - carrier.folds_without_call() * len(rows)
            said = f"{failed} of {asked} folds {words}"
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
        out.append(IndexLine(arm=arm, base=base, verdict=v, base_failing=failing,
                             rescued=v.b_mean >= plan.rescued_recall if failing else None))
    return out


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


def best_arm(cell: pd.DataFrame, arms: dict[str, Arm], plan: AnalysisPlan) -> str | None:
    """Your best arm in the cell: the matched arm (arm.is_matched, not in
    `plan.unmatched`) with the highest mean recall over the cell's valid rows, ties to the
    earlier in resources/arms.yaml; None where no matched arm ran. It is chosen after the
    fact, so a line read against it says how far something is from the best of what ran,
    not which arm to pick."""
    ran = [a for a in dict.fromkeys(cell["arm"]) if a in arms]
    matched = [a for a in ran if is_matched(arms[a]) and a not in plan.unmatched]
    if not matched:
        return None
    rank = {a: i for i, a in enumerate(plan.arm_order)}
    means = cell.groupby("arm")["recall"].mean()
    return min(matched, key=lambda a: (-float(means[a]), rank.get(a, len(rank)), a))


def own_compaction_line(cell: pd.DataFrame, checks: pd.DataFrame, arms: dict[str, Arm],
                        plan: AnalysisPlan, own: dict[str, Any] | None
                        ) -> OwnCompactionLine | None:
    """The CLI's own compaction against your best arm, for a sweep on the user's own
    session whose file holds a readable one (own: the fixture manifest's
    `own_compaction`, with `facts`, the graded facts' count). None where the file holds
    none, or only an opaque one (it grades no fact), or no matched arm ran. Outside the
    matched comparison: the CLI compacted at its own moments and to its own size."""
    if not own or not own.get("summaries") or own.get("opaque") or not own.get("facts"):
        return None
    arm = best_arm(cell, arms, plan)
    if arm is None:
        return None
    mine = cell[cell["arm"] == arm]
    facts = checks[checks["row_id"].isin(mine["row_id"])]
    return OwnCompactionLine(
        summaries=int(own["summaries"]), summary_chars=int(own.get("summary_chars", 0)),
        held=len(own.get("held", [])), facts=int(own["facts"]), arm=arm, rows=len(mine),
        carried=float(facts["in_carrier"].astype(bool).mean()) if len(facts) else 0.0,
        recall=float(mine["recall"].mean()),
        carry_chars=float(pd.to_numeric(mine["carried_chars"], errors="coerce").mean()))
