"""A decision card in words (docs/design.md §6, Decision): each line of a card
(analysis/card.py) rendered as Markdown, quoting the paper's sentence behind each verdict;
results/decision.md and the decision page (report/decision.py) both read them.

A card line is one field of `Card` and one renderer here, registered under the field's
name with `card_line`; `card_markdown` says the lines in the order they are registered,
so a new line is that field and that function, and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis.card import (
    Card,
    CeilingLine,
    ContrastVerdict,
    Diagnosis,
    FamilyCost,
    IndexLine,
    Loudness,
    Overrun,
    OwnArmCheck,
    OwnCompactionLine,
    StagedSummary,
)
from ..analysis.card_lines import BETWEEN, SECTION5_RULE
from ..analysis.compare import pair_label
from ..analysis.decision import ALL_LOST
from ..analysis.plan import AnalysisPlan
from ..analysis.power import EQUIVALENCE
from ..analysis.verdict import UNDECIDED

# Paper §4.6-4.7, quoted on a card by the mode it names.
QUOTES = {
    "description": ("§4.6: \"One failure writes prose until the slot is full and carries "
                    "description instead of content.\" §4.7: partitioning rescued all six "
                    "such models (fills 59% to 100%), so it is expected to help here."),
    "gist": ("§4.6: \"The other writes a short gist\"; §4.7: partitioning rescued neither "
             "such model (fills 6% and 36%): \"It cannot help a model that was never going "
             "to write more than 900\", so it is not expected to help here."),
    BETWEEN: ("§4.7 saw the gist mode at fills up to {gist:.0%} and the description mode "
                "from {desc:.0%}: this fill is between them, so the paper does not say "
                "whether partitioning will help."),
    "unknown": "no fill recorded for j, so the paper's modes cannot be told apart.",
}


def _num(x: float | None, fmt: str = "{:.3f}") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _p(x: float | None) -> str:
    """A p-value: four decimals, or its two figures below 0.001."""
    return _num(x, "{:.2g}" if x is not None and x < 0.001 else "{:.4f}")


def _usd(x: float | None) -> str:
    return "price unknown" if x is None else f"${x:.2f}"


def contrast_line(v: ContrastVerdict, failures: dict[str, str] | None = None) -> str:
    """One table line of a card's contrasts."""
    return "| " + " | ".join(contrast_cells(v, failures)) + " |"


CONTRAST_COLUMNS = ("a–b", "blocks", "a", "b", "b − a", "permutation p", "adjusted p",
                    "TOST p", "verdict")


def contrast_cells(v: ContrastVerdict, failures: dict[str, str] | None = None
                   ) -> list[str]:
    """A contrast's cells under CONTRAST_COLUMNS (Markdown inline: the card and the page
    both read them). failures: the card's fold_failures; an arm of the contrast that has
    some has them said in the verdict cell, so its difference is never read without them."""
    band = (f" [{v.ci_low:+.3f}, {v.ci_high:+.3f}]" if v.ci_low is not None else "")
    if v.aa_floor is not None:  # the noise floor beside the contrast's own interval
        band += f"; A/A ±{v.aa_floor:.3f}"
    verdict = f"**{v.word}**"
    if v.inside_noise:
        verdict += (f" (inside the A/A noise floor ±{v.aa_floor:.3f}: an arm against its "
                    "exact copy differed as much, so this is no finding)")
    if v.word == UNDECIDED and v.repeats_to_decide is not None:
        how = ("as equivalent (TOST at the margin)" if v.planned_test == EQUIVALENCE
               else "as a difference (the sign-flip test)")
        verdict += (f": {v.repeats_to_decide} repeats would decide it {how} at the "
                    f"observed difference {v.planned_difference:.3f} and ICC {v.icc:.2f} "
                    f"({v.icc_source}); {v.more_repeats} more, ")
        verdict += (f"{v.more_calls} calls, {_usd(v.more_usd)}" if v.more_calls is not None
                    else "price unknown (no audit prices in evidence mode)")
    verdict += "".join(f"; {arm}: {(failures or {})[arm]}" for arm in (v.a, v.b)
                       if arm in (failures or {}))
    return [f"{pair_label(v.a, v.b)} ({v.source})", str(v.blocks), f"{v.a_mean:.3f}",
            f"{v.b_mean:.3f}", f"{v.difference:+.3f}{band}", _p(v.p_permutation),
            adjusted_cell(v), _p(v.tost_p), verdict]


def adjusted_cell(v: ContrastVerdict) -> str:
    """The adjusted p the word reads, how, and against what level, with the family's
    size: `0.0310 (Holm, 1 of 24) ≤ 0.05`."""
    if v.p_adjusted is None:
        return "—"
    how = f"{v.adjustment}, " if v.adjustment and v.family_size > 1 else ""
    level = f" vs {_p(v.level)}" if v.level is not None else ""
    return f"{_p(v.p_adjusted)} ({how}family of {v.family_size}){level}"


def diagnosis_lines(d: Diagnosis, plan: AnalysisPlan) -> list[str]:
    j, q = plan.undivided, plan.divided
    fails = "fails" if d.failing else "does not fail"
    cmp = "<" if d.failing else "≥"
    out = [f"Diagnosis (paper §4.6–4.7): {j} {fails} on this model (mean recall "
           f"{d.j_mean:.3f} {cmp} {plan.failing_recall:g} over {d.j_n} rows; §4.7: \"The "
           f"undivided slot fails on 8 of 20 models\")"
           + (", within the borderline margin of the threshold." if d.borderline else ".")]
    if d.j_fill is not None:
        out.append(f"{j} fills {d.j_fill:.0%} of its declared ceiling.")
    if d.failing:
        gist, desc = plan.failure_mode_paper_fills
        out.append(f"Mode: **{d.mode}**. " + QUOTES[d.mode].format(gist=gist, desc=desc))
    if d.q_mean is not None:
        res = ("" if d.rescued is None else
               " — rescued" if d.rescued else " — not rescued")
        out.append(f"{q} (the same capacity in five named fields): {d.q_mean:.3f}{res} "
                   f"(rescue: {q} ≥ {plan.rescued_recall:g} where {j} fails).")
    return [" ".join(out)]


def loudness_line(ld: Loudness) -> str:
    if not ld.failing_rows:
        return "How it fails (paper §4.11): no failing row (recall < 0.5)."
    share = f"{ld.abstained}/{ld.failing_rows} = {ld.caught_by_abstention_log:.0%}"
    rows = "row" if ld.failing_rows == 1 else "rows"
    return (f"How it fails (paper §4.11): of {ld.failing_rows} failing {rows}, {ld.abstained} "
            f"abstained and {ld.fabricated} fabricated with no abstention marker"
            f"{stock_words(ld)}. A log of abstention would catch {share} of the "
            "failures (§4.11: \"a system that logs abstention would have caught it\").")


def stock_words(ld: Loudness) -> str:
    """The stock-value rows as a part of the two classes, never beside them as a third:
    abstained and fabricated split the failing rows, and a row of either may also answer
    with a stock value."""
    if ld.stock_fabricated is None or ld.stock_abstained is None:
        return f"; {ld.stock} of the failing rows answered with a stock value"
    out = f"; of the {ld.fabricated} fabricated, {ld.stock_fabricated} answered with a stock value"
    if ld.stock_abstained:
        out += (f", and {ld.stock_abstained} of the {ld.abstained} that abstained gave a stock "
                "value elsewhere in the answer")
    return out


def own_line(o: OwnArmCheck) -> str:
    if o.undivided_slot:
        return (f"Your arm `{o.arm}` (twin {o.twin}): **holds an undivided free-text "
                f"slot** — {o.why}. Paper §5: \"{SECTION5_RULE}\".")
    return f"Your arm `{o.arm}` (twin {o.twin}): no undivided free-text slot ({o.why})."


def staged_line(s: StagedSummary) -> str:
    """What a model's staged decision took, against the fixed design at the maximum."""
    p = (f" (permutation p {_p(s.p)} against the look's nominal level "
         f"{_p(s.nominal)})" if s.p is not None and s.nominal else "")
    fixed = (f"; its {s.repeats} repeats' worst case {_usd(s.staged_worst_usd)}, "
             f"where the fixed design's {s.max_repeats} repeats' worst case is "
             f"{_usd(s.fixed_usd)}")
    left = (f"; {s.remaining_repeats} repeats remain to max_repeats, at "
            f"{_usd(s.remaining_usd)}" if s.remaining_repeats else "")
    return (f"Staged decision (`decide:`): **{s.stop}** after {s.repeats} repeats in "
            f"{s.looks} look{'s' if s.looks != 1 else ''}{p}; spent "
            f"{_usd(s.usd)}{fixed}{left}." + overrun_words(s.overrun)
            + (MID_STAGE if s.mid_stage else ""))


def overrun_words(o: Overrun | None) -> str:
    """Why what was spent passes the worst case, where it does: the overruns the ledger
    logged (a call billed above its reservation, the one way past it; docs/design.md §6, Spend)."""
    if o is None:
        return ""
    if not o.count:
        return (" What was spent passes that worst case, and the ledger logged no call "
                "above its reservation on this model's endpoint: the spend includes calls "
                "the ledger did not hold (a rerun of paid calls?); see results/spend/.")
    first = (f", {o.first_call} of them the endpoint's first call, before the ledger "
             "had learned what it bills" if o.first_call else "")
    return (f" What was spent passes that worst case: the ledger logged {o.count} "
            f"call{'s' if o.count != 1 else ''} on this model's endpoint costing "
            f"${o.excess_usd:.4f} more than {'they' if o.count != 1 else 'it'} "
            f"reserved{first} (results/spend/ledger.json, `overruns`).")


def prices_line(c: Card) -> str | None:
    """How the card's dollar figures are priced, where it has any."""
    if not c.price_basis or not (c.staged or any(v.more_usd is not None
                                                 for v in c.contrasts)):
        return None
    return f"Dollar figures on this card: {c.price_basis}."


# A budget that ran out in the middle of a stage (analysis/staging.py): what was left out,
# and how to go on.
MID_STAGE = (" The budget ran out in the middle of a stage: the repeat it stopped and any "
             "after it are left out. To go on, raise `budget_usd` and run again: the runs "
             "it stopped run again, their paid calls from the response store.")


def repeat_stop_line(arm: str, k: int, n: int) -> str:
    """An arm some of whose folds the embedded backend ended at a repetition
    (analysis/card_lines.py repeat_stops): a footnote, since such a fold is one cut at its
    budget, sooner."""
    return (f"*{arm}: {k} of {n} folds ended when the model repeated itself (the "
            "embedded backend's `stop_on_repeat`: a block of tokens said three times in a "
            "row, or six with only its digits changing); each carried what it wrote up to "
            "there, as a fold cut at its token budget would. Its rows stay valid and in the "
            "means.*")


def served_by_other_line(model: str, rows: list[str]) -> str:
    """The card's rows another model served (analysis/card_lines.py served_by_other_rows)."""
    return (f"**{len(rows)} row(s) were served by a model other than `{model}` and are left "
            f"out of every number above (invalid: served_by_other):** {'; '.join(rows)}.")


def unread_line(c: Card) -> str:
    """The pairs of matched arms the cell ran that no contrast of the card reads
    (analysis/decision.py unread_pairs), and the key that adds them."""
    n = len(c.unread_pairs)
    said = ", ".join(pair_label(a, b) for a, b in c.unread_pairs)
    return (f"Pairs not read: this card reads no contrast of {said} ({n} "
            f"pair{'s' if n != 1 else ''} of matched arms that ran here), so it says "
            f"nothing about {'them' if n != 1 else 'it'}. `{c.compare_key}: pairs` reads "
            "every pair of the sweep's matched arms, or a list (`[[a, b], ...]`) the pairs "
            "you name.")


def family_cost_line(f: FamilyCost) -> str:
    """What the family's size costs each contrast in power (analysis/decision.py
    family_cost), and how to narrow it."""
    def repeats(n: int | None) -> str:
        return "no number of repeats" if n is None else f"{n} repeats per model"

    return (f"The family's size costs power: its {f.size} contrasts are adjusted by Holm, "
            f"whose first step judges the smallest p at {f.alpha:g} / {f.size} = "
            f"{f.level:.2g}, which a sign-flip test reaches only over {f.min_blocks} blocks "
            f"or more ({f.min_blocks_alone} alone), and detecting a difference of "
            f"{f.difference:g} at power {f.power:g} takes {repeats(f.repeats)} where one "
            f"contrast alone takes {repeats(f.repeats_alone)}. To narrow it, name the pairs "
            f"you need in `{f.key}` (`[[a, b], ...]`), or, where the sweep runs several "
            "models, set `decide.family: model` (one model's contrasts a family).")


def instrument_line(v: ContrastVerdict) -> str:
    """An A/A line declared different (Card.instrument_fails), said before anything else
    on the card: an arm cannot be better than an exact copy of itself."""
    return (f"**The instrument fails its A/A control: {v.a} against its exact copy {v.b} "
            f"reads {v.word} (difference {v.difference:+.3f}, adjusted p "
            f"{_p(v.p_adjusted)}). The copy sent byte-identical requests, so this difference "
            "is the endpoint's drift or noise the test does not hold; no other verdict on "
            "this card can be read as the carriers' until it is explained.**")


def fold_failure_line(arm: str, said: str) -> str:
    """An arm whose carrier failed on some folds (analysis/card_lines.py fold_failures)."""
    return (f"**{arm}: {said}**, counted as the arm's own behaviour: its rows stay valid "
            "and in the means (paper §3.3: a row invalidated by an arm's own behaviour is "
            "not retried), so its recall includes them.")


def index_line(x: IndexLine, plan: AnalysisPlan) -> str:
    """An index arm against its base, and whether the index rescued it."""
    v = x.verdict
    band = ("" if v.ci_low is None or v.ci_high is None else
            f" [{v.ci_low:+.3f}, {v.ci_high:+.3f}]")
    if x.rescued is None:
        rescue = (f"{x.base} was not failing (recall {v.a_mean:.3f}, at least "
                  f"{plan.failing_recall:g}), so there was nothing to rescue")
    elif x.rescued:
        rescue = (f"**the index rescued the failing carrier**: {x.base} {v.a_mean:.3f} → "
                  f"{x.arm} {v.b_mean:.3f} (from below {plan.failing_recall:g} to "
                  f"{plan.rescued_recall:g} or more, paper §4.7)")
    else:
        rescue = (f"the index did not rescue the failing carrier: {x.base} {v.a_mean:.3f} "
                  f"→ {x.arm} {v.b_mean:.3f} (under {plan.rescued_recall:g})")
    return (f"Index arm `{x.arm}` against its base `{x.base}` (outside the matched "
            f"comparison, no verdict of the family): {x.arm} − {x.base} "
            f"{v.difference:+.3f}{band} over {v.blocks} blocks, permutation p "
            f"{_p(v.p_permutation)}, TOST p {_p(v.tost_p)} ({v.word}); {rescue}.")


def control_lost_line(arm: str, k: int, n: int, rows: list[str]) -> str:
    """An arm's rows that missed a control fact the ceiling recalled in the same block
    (analysis/card_lines.py control_lost_rows), each row named, so a reader opens its
    folds in the viewer."""
    if not n:
        return (f"Control facts: the ceiling recalled none of them in any block {arm} ran "
                "beside it, so they cannot tell its recall turn from its carrier: the "
                "recall turn fails even reading the whole session.")
    if not k:
        return (f"Control facts: {arm} kept every control fact the ceiling recalled "
                f"({n} rows read): its recall turn and grader work where the carrier keeps "
                "a fact.")
    return (f"**Control lost: {arm} missed a control fact the ceiling recalled on {k} of "
            f"{n} rows**: a control fact sits where every working carrier keeps it, so on "
            "those rows the recall turn or the grader failed, and the arm's losses there "
            "are not the carrier's alone (flagged: "
            f"{', '.join(f'`{r}`' for r in rows)}).")


def ceiling_line(x: CeilingLine) -> str:
    """An arm against the ceiling (analysis/card_lines.py ceiling_lines): which of its lost
    facts were the carrier's loss and which the recall turn's."""
    head = (f"Against the ceiling `{x.ceiling}` (the whole session, no compaction; outside "
            f"the matched comparison, no verdict of the family), `{x.arm}` over {x.blocks} "
            f"blocks (the ceiling recalled {x.ceiling_recall:.3f} there): ")
    if not x.lost:
        return head + f"{x.arm} lost no fact."
    return head + (f"of the {x.lost} facts {x.arm} lost, **{x.carrier_lost} the carrier's "
                   f"loss** (the ceiling recalled them in the same block) and "
                   f"**{x.recall_lost} the recall turn's** (the ceiling missed them too).")


def own_compaction_words(x: OwnCompactionLine) -> str:
    """The CLI's own compaction against your best arm (analysis/card_lines.py
    own_compaction_line): what its summaries held beside what the best arm's final carry
    held and its answers recalled, and the sizes of both."""
    return (f"The CLI's own compaction against your best arm (read from the session's file; "
            f"outside the matched comparison, no verdict of the family): its "
            f"{x.summaries} summar{'y' if x.summaries == 1 else 'ies'} "
            f"({x.summary_chars:,} characters) held **{x.held} of {x.facts}** graded facts; "
            f"`{x.arm}` held {x.carried:.3f} of them in its final carry "
            f"({x.carry_chars:,.0f} characters on average) and its answers recalled "
            f"{x.recall:.3f}, over {x.rows} valid row{'s' if x.rows != 1 else ''}.")


# ------------------------------------------------------------------ the card's lines

# A renderer: a card's lines of one field, as Markdown lines, each paragraph followed by
# a blank line; none where the card has nothing to say there.
Renderer = Callable[[Card, AnalysisPlan], list[str]]


@dataclass(frozen=True)
class CardLine:
    """One line of a card: the Card field it says (analysis/card.py) and its renderer."""

    field: str
    render: Renderer


# Every line of a card, in the order the card says them (card_line appends).
CARD_LINES: list[CardLine] = []


def card_line(field: str) -> Callable[[Renderer], Renderer]:
    """Registers the decorated function as the renderer of the card's `field`, after the
    lines registered before it. A field may have more than one (the A/A failures come
    first on a card, its contrasts' table after the verdict)."""
    def register(render: Renderer) -> Renderer:
        CARD_LINES.append(CardLine(field, render))
        return render
    return register


def card_markdown(c: Card, plan: AnalysisPlan) -> list[str]:
    """A card as Markdown lines: its heading, then each registered line (CARD_LINES)."""
    out = [f"## `{c.model}` in sweep `{c.sweep}` ({c.valid_rows} valid rows)", ""]
    for line in CARD_LINES:
        out += line.render(c, plan)
    return out


def paragraphs(texts: Any) -> list[str]:
    """Each text a paragraph: itself, then a blank line."""
    return [line for text in texts for line in (text, "")]


@card_line("contrasts")
def _instrument(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(instrument_line(v) for v in c.instrument_fails)


@card_line("all_lost")
def _all_lost(c: Card, plan: AnalysisPlan) -> list[str]:
    return [f"**Verdict: {ALL_LOST}.**", ""] if c.all_lost else []


@card_line("contrasts")
def _contrasts(c: Card, plan: AnalysisPlan) -> list[str]:
    if not c.contrasts:
        return []
    return ["Contrasts (b − a over blocks, with its 95% bootstrap interval; p: the "
            "exact sign-flip permutation test over blocks, raw and adjusted within its "
            "family; TOST at the margin):", "",
            "| " + " | ".join(CONTRAST_COLUMNS) + " |",
            "|" + "---|" * len(CONTRAST_COLUMNS),
            *[contrast_line(v, c.fold_failures) for v in c.contrasts], ""]


@card_line("unread_pairs")
def _unread(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs([unread_line(c)] if c.unread_pairs else [])


@card_line("family_cost")
def _family_cost(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs([family_cost_line(c.family_cost)] if c.family_cost is not None else [])


@card_line("staged")
def _staged(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs([staged_line(c.staged)] if c.staged else [])


@card_line("price_basis")
def _prices(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(x for x in [prices_line(c)] if x is not None)


@card_line("diagnosis")
def _diagnosis(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(diagnosis_lines(c.diagnosis, plan) if c.diagnosis is not None else [])


@card_line("loudness")
def _loudness(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs([loudness_line(c.loudness)] if c.loudness is not None else [])


@card_line("own_arms")
def _own_arms(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(own_line(o) for o in c.own_arms)


@card_line("index_lines")
def _index_lines(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(index_line(x, plan) for x in c.index_lines)


@card_line("ceiling_lines")
def _ceiling_lines(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(ceiling_line(x) for x in c.ceiling_lines)


@card_line("own_compaction")
def _own_compaction(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs([own_compaction_words(c.own_compaction)] if c.own_compaction else [])


@card_line("control_lost")
def _control_lost(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(control_lost_line(arm, k, n, c.control_lost_rows.get(arm, []))
                      for arm, (k, n) in c.control_lost.items())


@card_line("fold_failures")
def _fold_failures(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(fold_failure_line(arm, said) for arm, said in c.fold_failures.items())


@card_line("repeat_stops")
def _repeat_stops(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs(repeat_stop_line(arm, k, n) for arm, (k, n) in c.repeat_stops.items())


@card_line("served_by_other")
def _served_by_other(c: Card, plan: AnalysisPlan) -> list[str]:
    return paragraphs([served_by_other_line(c.model, c.served_by_other)]
                      if c.served_by_other else [])
