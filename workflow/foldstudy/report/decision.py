"""results/decision.md and decision.json (docs/design.md §6, Decision): one card per
(sweep, model), and the summary's opening (report/summary.py puts these cards first).

The cards come from analysis/decision.py; this module only words them, quoting the
paper's sentence behind each verdict.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from ..analysis.compare import pair_label
from ..analysis.decision import (
    ALL_LOST,
    BETWEEN,
    SECTION5_RULE,
    UNDECIDED,
    Card,
    CardInputs,
    CeilingLine,
    ContrastVerdict,
    Diagnosis,
    FamilyCost,
    IndexLine,
    Loudness,
    OwnArmCheck,
    Price,
    cards,
)
from ..analysis.plan import AnalysisPlan
from ..analysis.power import EQUIVALENCE
from ..evidence import columns
from ..evidence.load import read_artifact
from ..io import write_text

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


def staged_line(s: dict[str, Any]) -> str:
    """What a model's staged decision took, against the fixed design at the maximum."""
    p = (f" (permutation p {_p(s['p'])} against the look's nominal level "
         f"{_p(s['nominal'])})" if s.get("p") is not None and s.get("nominal") else "")
    fixed = (f"; its {s['repeats']} repeats' worst case {_usd(s.get('staged_worst_usd'))}, "
             f"where the fixed design's {s['max_repeats']} repeats' worst case is "
             f"{_usd(s.get('fixed_usd'))}")
    left = (f"; {s['remaining_repeats']} repeats remain to max_repeats, at "
            f"{_usd(s.get('remaining_usd'))}" if s.get("remaining_repeats") else "")
    return (f"Staged decision (`decide:`): **{s['stop']}** after {s['repeats']} repeats in "
            f"{s['looks']} look{'s' if s['looks'] != 1 else ''}{p}; spent "
            f"{_usd(s.get('usd'))}{fixed}{left}." + overrun_words(s)
            + (MID_STAGE if s.get("mid_stage") else ""))


def overrun_words(s: dict[str, Any]) -> str:
    """Why what was spent passes the worst case, where it does: the overruns the ledger
    logged (a call billed above its reservation, the one way past it; docs/design.md §6, Spend)."""
    o = s.get("overrun")
    if not o:
        return ""
    if not o["count"]:
        return (" What was spent passes that worst case, and the ledger logged no call "
                "above its reservation on this model's endpoint: the spend includes calls "
                "the ledger did not hold (a rerun of paid calls?); see results/spend/.")
    first = (f", {o['first_call']} of them the endpoint's first call, before the ledger "
             "had learned what it bills" if o["first_call"] else "")
    return (f" What was spent passes that worst case: the ledger logged {o['count']} "
            f"call{'s' if o['count'] != 1 else ''} on this model's endpoint costing "
            f"${o['excess_usd']:.4f} more than {'they' if o['count'] != 1 else 'it'} "
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


def card_markdown(c: Card, plan: AnalysisPlan) -> list[str]:
    out = [f"## `{c.model}` in sweep `{c.sweep}` ({c.valid_rows} valid rows)", ""]
    out += [line for v in c.instrument_fails for line in (instrument_line(v), "")]
    if c.all_lost:
        out += [f"**Verdict: {ALL_LOST}.**", ""]
    if c.contrasts:
        out += ["Contrasts (b − a over blocks, with its 95% bootstrap interval; p: the "
                "exact sign-flip permutation test over blocks, raw and adjusted within its "
                "family; TOST at the margin):", "",
                "| " + " | ".join(CONTRAST_COLUMNS) + " |",
                "|" + "---|" * len(CONTRAST_COLUMNS),
                *[contrast_line(v, c.fold_failures) for v in c.contrasts], ""]
    if c.unread_pairs:
        out += [unread_line(c), ""]
    if c.family_cost is not None:
        out += [family_cost_line(c.family_cost), ""]
    if c.staged:
        out += [staged_line(c.staged), ""]
    if (prices := prices_line(c)) is not None:
        out += [prices, ""]
    if c.diagnosis is not None:
        out += [*diagnosis_lines(c.diagnosis, plan), ""]
    if c.loudness is not None:
        out += [loudness_line(c.loudness), ""]
    out += [line for o in c.own_arms for line in (own_line(o), "")]
    out += [line for x in c.index_lines for line in (index_line(x, plan), "")]
    out += [line for x in c.ceiling_lines for line in (ceiling_line(x), "")]
    out += [line for arm, (k, n) in c.control_lost.items()
            for line in (control_lost_line(arm, k, n, c.control_lost_rows.get(arm, [])), "")]
    out += [line for arm, said in c.fold_failures.items()
            for line in (fold_failure_line(arm, said), "")]
    out += [line for arm, (k, n) in c.repeat_stops.items()
            for line in (repeat_stop_line(arm, k, n), "")]
    if c.served_by_other:
        out += [served_by_other_line(c.model, c.served_by_other), ""]
    return out


def repeat_stop_line(arm: str, k: int, n: int) -> str:
    """An arm some of whose folds the embedded backend ended at a repetition
    (analysis/decision.py repeat_stops): a footnote, since such a fold is one cut at its
    budget, sooner."""
    return (f"*{arm}: {k} of {n} folds ended when the model repeated itself (the "
            "embedded backend's `stop_on_repeat`: a block of tokens said three times in a "
            "row, or six with only its digits changing); each carried what it wrote up to "
            "there, as a fold cut at its token budget would. Its rows stay valid and in the "
            "means.*")


def served_by_other_line(model: str, rows: list[str]) -> str:
    """The card's rows another model served (analysis/decision.py served_by_other_rows)."""
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
    """An arm whose carrier failed on some folds (analysis/decision.py fold_failures)."""
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
    (analysis/decision.py control_lost_rows), each row named, so a reader opens its
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
    """An arm against the ceiling (analysis/decision.py ceiling_lines): which of its lost
    facts were the carrier's loss and which the recall turn's."""
    head = (f"Against the ceiling `{x.ceiling}` (the whole session, no compaction; outside "
            f"the matched comparison, no verdict of the family), `{x.arm}` over {x.blocks} "
            f"blocks (the ceiling recalled {x.ceiling_recall:.3f} there): ")
    if not x.lost:
        return head + f"{x.arm} lost no fact."
    return head + (f"of the {x.lost} facts {x.arm} lost, **{x.carrier_lost} the carrier's "
                   f"loss** (the ceiling recalled them in the same block) and "
                   f"**{x.recall_lost} the recall turn's** (the ceiling missed them too).")


def decision_markdown(cards: Sequence[Card], plan: AnalysisPlan, margin: float,
                      family: str = "sweep") -> str:
    lines = ["# Decision: which carrier for your model", "",
             f"One card per (sweep, model). Verdicts: *a better* / *b better* where the "
             f"permutation p, adjusted within its family, is at most {plan.alpha:g}; "
             f"*equivalent within ±{margin:g}* where TOST passes; else *undecided*, with "
             "the repeats that would decide it.", "", family_line(family, plan.alpha), "",
             "The forest plot and these cards as a page: [decision.html](decision.html).",
             ""]
    for c in cards:
        lines += card_markdown(c, plan)
    return "\n".join(lines).rstrip() + "\n"


def json_safe(x: Any) -> Any:
    """JSON without NaN: a missing number is null."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [json_safe(v) for v in x]
    return x


def family_line(family: str, alpha: float) -> str:
    """What one error rate covers, said once above the cards."""
    which = ("every contrast the sweep's cards read" if family == "sweep"
             else "the contrasts of one model's card")
    return (f"Error control (`decide.family: {family}`): the chance of any false *better* "
            f"in a family ({which}) is held at {alpha:g}. Fixed designs adjust each "
            "permutation p by Holm within the family; a staged pair's looks split alpha "
            "by the family's size before spending it over the looks (Bonferroni). "
            "Equivalence is TOST per contrast, reported as it is: not adjusted.")


def write_decision(cards: Sequence[Card], plan: AnalysisPlan, margin: float, out_md: str,
                   out_json: str, family: str = "sweep") -> str:
    text = decision_markdown(cards, plan, margin, family)
    write_text(text, out_md)
    write_text(json.dumps(json_safe({"margin": margin, "family": family, "alpha": plan.alpha,
                                  "cards": [c.to_dict() for c in cards]}),
                          indent=1, sort_keys=True) + "\n", out_json)
    return text


def read_cards_markdown(path: str | None) -> list[str]:
    """The cards of decision.md without its title, for the summary's opening."""
    if not path or not Path(path).is_file():
        return []
    return Path(path).read_text(encoding="utf-8").splitlines()


def decision_frames(rows_csv: str, checks_csv: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rows.csv and checks.csv as the contract reads them (booleans as booleans)."""
    return (read_artifact(Path(rows_csv), columns.ROWS_REQUIRED),
            read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED))


# ------------------------------------------------------------------ the rule's stage


def card_inputs(params: Any, input: Any, plan: AnalysisPlan) -> CardInputs:
    """What the cards read beside the evidence, from the rule's params and inputs."""
    from ..run.audit import plan_inputs, run_prices
    from ..study.design import cycle_length
    from ..study.spec import Arm

    decide = params.decide or {}
    price = run = None
    sweeps = params.sweeps
    staged = staged_summaries([input[k] for k in input.keys() if k.startswith("decide_")])
    if params.priced:
        prompts, fixtures = plan_inputs(input)
        # priced as the ledger reserves now, as the looks priced each next stage
        run = run_prices(prompts, fixtures, params.arms, params.backends, params.probe_dir,
                         params.recall_max_tokens, params.ledger)

        def price(sweep: str, model: str, arm: str) -> Price | None:
            calls, usd = run(sweep, model, arm)
            return Price(calls, usd)

        for (s, m), st in staged.items():
            reprice_staged(st, [run(s, m, a)[1] for a in sweeps[s]["arms"]],
                           run.basis(m), run.overruns(m))
    return CardInputs(
        margin=float(decide.get("margin", plan.equivalence_margin)),
        power=float(params.power["power"]),
        extra_pairs=tuple((str(p[0]), str(p[1])) for p in params.compare_pairs),
        own=dict(params.own_arms),
        arms={a: Arm.from_dict(d) for a, d in params.arms.items()},
        decide_pair=tuple(decide["pair"]) if decide.get("pair") else None,
        rotation=lambda s: cycle_length(sweeps[s]["design"], len(sweeps[s]["arms"]))
        if s in sweeps else 1,
        price=price or (lambda s, m, a: None),
        family=str(decide.get("family") or "sweep"),
        gate_pair=(gate["against"], gate["arm"]) if (gate := decide.get("gate")) else None,
        staged=staged,
        price_basis=run.basis if run is not None else (
            lambda m: "no prices in evidence mode"),
        sweeps=dict(sweeps))


def reprice_staged(st: dict[str, Any], arm_usd: list[float | None], basis: str,
                   overruns: list[dict[str, Any]]) -> None:
    """A staged summary's dollar figures (in place) at the prices the ledger reserves at
    now, which may have learned more since the look: one repeat (every arm of the block),
    the repeats it took, the fixed design's maximum and what is left to it; and, where
    what was spent passes the repeats' worst case, the overruns the ledger logged on the
    model's endpoint (the one way past a reservation)."""
    per = None if None in arm_usd else float(sum(u or 0.0 for u in arm_usd))
    st.update(price_per_repeat_usd=per, price_basis=basis,
              fixed_usd=None if per is None else per * st["max_repeats"],
              staged_worst_usd=None if per is None else per * st["repeats"])
    if st.get("remaining_repeats") and per is not None:
        st["remaining_usd"] = per * st["remaining_repeats"]
    worst, spent = st["staged_worst_usd"], st.get("usd")
    st["overrun"] = None
    if worst is not None and spent is not None and spent > worst + 1e-12:
        st["overrun"] = {"count": len(overruns), "first_call": sum(
            bool(o.get("first_call")) for o in overruns),
            "excess_usd": sum(float(o["cost_usd"]) - float(o["reserved_usd"])
                              for o in overruns)}


def staged_summaries(look_files: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """(sweep, model) -> what its staged decision took, from each decide sweep's final
    look: repeats, looks, the outcome, the spend, and the fixed design's worst case."""
    from ..io import read_json

    out = {}
    for path in look_files:
        state = read_json(path)
        for model, s in state["models"].items():
            price, mx = s.get("price_per_repeat_usd"), state["max_repeats"]
            out[(state["sweep"], model)] = {
                "stop": s["status"] + (" (budget_usd reached)" if s.get("stop") == "budget"
                                       else ""),
                "repeats": s["repeats"], "looks": s["looks"], "usd": s.get("spent_usd"),
                "price_per_repeat_usd": price, "max_repeats": mx,
                "fixed_usd": None if price is None else price * mx,
                "staged_worst_usd": None if price is None else price * s["repeats"],
                "remaining_repeats": s.get("remaining_repeats"),
                "remaining_usd": s.get("remaining_usd"), "p": s.get("p"),
                "nominal": s.get("nominal"),
                "family_size": int(state.get("family_size", 1)),
                "mid_stage": bool(s.get("stopped_mid_stage"))}
    return out


def decision_stage(input: Any, output: Any, params: Any) -> str:
    """Rule decision: results/decision.md and decision.json."""
    plan = AnalysisPlan.of_params(input.analysis, input.arms_yaml, params)
    rows, checks = decision_frames(input.rows, input.checks)
    ci = card_inputs(params, input, plan)
    if input.get("folds"):  # each failed fold's stop reason, named on its arm's line
        ci = dataclasses.replace(ci, folds=read_artifact(Path(input.folds),
                                                          columns.FOLDS_REQUIRED))
    return write_decision(cards(rows, checks, plan, ci), plan, ci.margin, output.md,
                          output.json, ci.family)


# ------------------------------------------------------------ the decision's page


def card_from_dict(d: dict[str, Any]) -> Card:
    """A card as decision.json holds it, back as the dataclasses the words are made from."""
    return Card(d["sweep"], d["model"], d["valid_rows"], d["all_lost"],
                  [ContrastVerdict(**v) for v in d["contrasts"]],
                  Diagnosis(**d["diagnosis"]) if d.get("diagnosis") else None,
                  Loudness(**d["loudness"]) if d.get("loudness") else None,
                  [OwnArmCheck(**o) for o in d.get("own_arms") or []], d.get("staged"),
                  d.get("price_basis"),
                  [IndexLine(**{**x, "verdict": ContrastVerdict(**x["verdict"])})
                   for x in d.get("index_lines") or []], dict(d.get("fold_failures") or {}),
                  [CeilingLine(**x) for x in d.get("ceiling_lines") or []],
                  {a: (int(k), int(n)) for a, (k, n) in (d.get("control_lost") or {}).items()},
                  {a: [str(r) for r in rows]
                   for a, rows in (d.get("control_lost_rows") or {}).items()},
                  {a: (int(k), int(n)) for a, (k, n) in (d.get("repeat_stops") or {}).items()},
                  [str(r) for r in d.get("served_by_other") or []],
                  [(str(a), str(b)) for a, b in d.get("unread_pairs") or []],
                  str(d.get("compare_key") or ""),
                  FamilyCost(**d["family_cost"]) if d.get("family_cost") else None)


def inline_html(text: str) -> Markup:
    """A card's Markdown inline words as HTML: escaped first (a model's or arm's name is
    text, never markup), then **bold**, *emphasis* and `code`."""
    import re

    from markupsafe import escape

    out = str(escape(text))
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"\*(\S.*?)\*", r"<em>\1</em>", out)
    return Markup(re.sub(r"`(.+?)`", r"<code>\1</code>", out))


def carrier_link(card: dict[str, Any]) -> str | None:
    """Where a decided card's carrier folder's README sits, relative to results/ (the
    page's folder): rule carriers writes results/decision/<sweep>/<model>/carrier/ for
    each card whose verdict names an arm (report/carrier.chosen); None for the rest."""
    from .carrier import chosen

    if chosen(card) is None:
        return None
    return f"decision/{card['sweep']}/{card['model']}/carrier/README.md"


def page_cards(doc: dict[str, Any], plan: AnalysisPlan, links: bool = False
               ) -> list[dict[str, Any]]:
    """Each card as the page's template reads it: its heading, contrast rows and the
    card's other lines, every one in the words decision.md uses. links: the carrier
    folders were built (not in evidence mode, where no run record is read), so each
    decided card links its own."""
    out = []
    for d in doc["cards"]:
        c = card_from_dict(d)
        lines = card_markdown(c, plan)
        paras = [line for line in lines[2:] if line and not line.startswith("|")
                 and not line.startswith("Contrasts (")]
        out.append({"id": f"card-{c.sweep}-{c.model}", "title": inline_html(lines[0][3:]),
                    "rows": [[inline_html(x) for x in contrast_cells(v, c.fold_failures)]
                             for v in c.contrasts],
                    "lines": [inline_html(x) for x in paras],
                    "carrier": carrier_link(d) if links else None})
    return out


def write_decision_page(doc: dict[str, Any], plan: AnalysisPlan, out_html: str,
                        templates: str | Path, links: bool = False) -> str:
    """results/decision.html: the forest plot (figures/decision.png, .svg) and the cards,
    each decided card linking its carrier folder where those were built (links)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)),
                             autoescape=True, keep_trailing_newline=True)
    html = env.get_template("decision.html.j2").render(
        cards=page_cards(doc, plan, links), columns=CONTRAST_COLUMNS,
        family=inline_html(family_line(doc.get("family") or "sweep", plan.alpha)),
        margin=doc["margin"], alpha=plan.alpha)
    write_text(html, out_html)
    return html


def decision_page_stage(input: Any, output: Any, params: Any) -> str:
    """Rule decision_page: results/decision.html and results/figures/decision.*; the
    cards link the carrier folders where the rule built them first (params.links)."""
    from ..io import read_json
    from .figures import write_forest

    doc = read_json(input.decision)
    plan = AnalysisPlan.load(input.analysis, input.arms_yaml)
    Path(output.png).parent.mkdir(parents=True, exist_ok=True)
    write_forest(doc, output.png, output.svg)
    return write_decision_page(doc, plan, output.html, Path(input.template).parent,
                               bool(getattr(params, "links", False)))
