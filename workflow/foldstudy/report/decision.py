"""results/decision.md and decision.json (issue 33; DESIGN §6, Decision): one card per
(sweep, model), and the summary's opening (report/summary.py puts these cards first).

The cards come from analysis/decision.py; this module only words them, quoting the
paper's sentence behind each verdict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis import decision as D
from ..analysis import power as P
from ..analysis.analysis import Analysis
from ..analysis.compare import pair_label
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
    D.BETWEEN: ("§4.7 saw the gist mode at fills up to {gist:.0%} and the description mode "
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


def contrast_line(v: D.ContrastVerdict) -> str:
    """One table line of a card's contrasts."""
    band = (f" [{v.ci_low:+.3f}, {v.ci_high:+.3f}]" if v.ci_low is not None else "")
    verdict = f"**{v.word}**"
    if v.word == D.UNDECIDED and v.repeats_to_decide is not None:
        how = ("as equivalent (TOST at the margin)" if v.planned_test == P.EQUIVALENCE
               else "as a difference (the sign-flip test)")
        verdict += (f": {v.repeats_to_decide} repeats would decide it {how} at the "
                    f"observed difference {v.planned_difference:.3f} and ICC {v.icc:.2f} "
                    f"({v.icc_source}); {v.more_repeats} more, ")
        verdict += (f"{v.more_calls} calls, {_usd(v.more_usd)}" if v.more_calls is not None
                    else "price unknown (no audit prices in evidence mode)")
    return (f"| {pair_label(v.a, v.b)} ({v.source}) | {v.blocks} | {v.a_mean:.3f} | "
            f"{v.b_mean:.3f} | {v.difference:+.3f}{band} | {_p(v.p_permutation)} "
            f"| {_p(v.tost_p)} | {verdict} |")


def diagnosis_lines(d: D.Diagnosis, an: Analysis) -> list[str]:
    j, q = an.undivided, an.divided
    fails = "fails" if d.failing else "does not fail"
    cmp = "<" if d.failing else "≥"
    out = [f"Diagnosis (paper §4.6–4.7): {j} {fails} on this model (mean recall "
           f"{d.j_mean:.3f} {cmp} {an.failing_recall:g} over {d.j_n} rows; §4.7: \"The "
           f"undivided slot fails on 8 of 20 models\")"
           + (", within the borderline margin of the threshold." if d.borderline else ".")]
    if d.j_fill is not None:
        out.append(f"{j} fills {d.j_fill:.0%} of its declared ceiling.")
    if d.failing:
        gist, desc = an.failure_mode_paper_fills
        out.append(f"Mode: **{d.mode}**. " + QUOTES[d.mode].format(gist=gist, desc=desc))
    if d.q_mean is not None:
        res = ("" if d.rescued is None else
               " — rescued" if d.rescued else " — not rescued")
        out.append(f"{q} (the same capacity in five named fields): {d.q_mean:.3f}{res} "
                   f"(rescue: {q} ≥ {an.rescued_recall:g} where {j} fails).")
    return [" ".join(out)]


def loudness_line(ld: D.Loudness) -> str:
    if not ld.failing_rows:
        return "How it fails (paper §4.11): no failing row (recall < 0.5)."
    share = f"{ld.abstained}/{ld.failing_rows} = {ld.caught_by_abstention_log:.0%}"
    rows = "row" if ld.failing_rows == 1 else "rows"
    return (f"How it fails (paper §4.11): of {ld.failing_rows} failing {rows}, {ld.abstained} "
            f"abstained, {ld.fabricated} fabricated with no abstention marker, {ld.stock} "
            f"answered with a stock value. A log of abstention would catch {share} of the "
            "failures (§4.11: \"a system that logs abstention would have caught it\").")


def own_line(o: D.OwnArmCheck) -> str:
    if o.undivided_slot:
        return (f"Your arm `{o.arm}` (twin {o.twin}): **holds an undivided free-text "
                f"slot** — {o.why}. Paper §5: \"{D.SECTION5_RULE}\".")
    return f"Your arm `{o.arm}` (twin {o.twin}): no undivided free-text slot ({o.why})."


def staged_line(s: dict[str, Any]) -> str:
    """What a model's staged decision took, against the fixed design at the maximum."""
    p = (f" (permutation p {_p(s['p'])} against the look's nominal level "
         f"{_p(s['nominal'])})" if s.get("p") is not None and s.get("nominal") else "")
    fixed = (f"; at the audit's worst-case prices {_usd(s.get('staged_worst_usd'))}, "
             f"where the fixed design's {s['max_repeats']} repeats would cost "
             f"{_usd(s.get('fixed_usd'))}")
    left = (f"; {s['remaining_repeats']} repeats remain to max_repeats, at "
            f"{_usd(s.get('remaining_usd'))}" if s.get("remaining_repeats") else "")
    return (f"Staged decision (`decide:`): **{s['stop']}** after {s['repeats']} repeats in "
            f"{s['looks']} look{'s' if s['looks'] != 1 else ''}{p}; spent "
            f"{_usd(s.get('usd'))}{fixed}{left}." + (MID_STAGE if s.get("mid_stage") else ""))


# A budget that ran out in the middle of a stage (analysis/staging.py): what was left out,
# and how to go on.
MID_STAGE = (" The budget ran out in the middle of a stage: the repeat it stopped and any "
             "after it are left out. To go on, raise `budget_usd` and run again: the runs "
             "it stopped run again, their paid calls from the response store.")


def card_markdown(c: D.Card, an: Analysis) -> list[str]:
    out = [f"## `{c.model}` in sweep `{c.sweep}` ({c.valid_rows} valid rows)", ""]
    if c.all_lost:
        out += [f"**Verdict: {D.ALL_LOST}.**", ""]
    if c.contrasts:
        out += ["Contrasts (b − a over blocks, with its 95% bootstrap interval; p: the "
                "exact sign-flip permutation test over blocks; TOST at the margin):", "",
                "| a–b | blocks | a | b | b − a | permutation p | TOST p | verdict |",
                "|---|---|---|---|---|---|---|---|",
                *[contrast_line(v) for v in c.contrasts], ""]
    if c.staged:
        out += [staged_line(c.staged), ""]
    if c.diagnosis is not None:
        out += [*diagnosis_lines(c.diagnosis, an), ""]
    if c.loudness is not None:
        out += [loudness_line(c.loudness), ""]
    out += [line for o in c.own_arms for line in (own_line(o), "")]
    return out


def decision_markdown(cards: Sequence[D.Card], an: Analysis, margin: float) -> str:
    lines = ["# Decision: which carrier for your model", "",
             f"One card per (sweep, model). Verdicts: *a better* / *b better* where the "
             f"permutation p is at most {an.alpha:g}; *equivalent within ±{margin:g}* "
             "where TOST passes; else *undecided*, with the repeats that would decide it.",
             ""]
    for c in cards:
        lines += card_markdown(c, an)
    return "\n".join(lines).rstrip() + "\n"


def _clean(x: Any) -> Any:
    """JSON without NaN: a missing number is null."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def write_decision(cards: Sequence[D.Card], an: Analysis, margin: float, out_md: str,
                   out_json: str) -> str:
    text = decision_markdown(cards, an, margin)
    write_text(text, out_md)
    write_text(json.dumps(_clean({"margin": margin, "cards": [c.to_dict() for c in cards]}),
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


def card_inputs(params: Any, input: Any, an: Analysis) -> D.CardInputs:
    """What the cards read beside the evidence, from the rule's params and inputs."""
    from ..run.audit import plan_inputs, run_prices
    from ..study.design import cycle_length
    from ..study.spec import Arm

    decide = params.decide or {}
    price = None
    if params.priced:
        prompts, fixtures = plan_inputs(input)
        run = run_prices(prompts, fixtures, params.arms, params.backends, params.probe_dir,
                         params.recall_max_tokens)

        def price(sweep: str, model: str, arm: str) -> D.Price | None:
            calls, usd = run(sweep, model, arm)
            return D.Price(calls, usd)

    sweeps = params.sweeps
    return D.CardInputs(
        margin=float(decide.get("margin", an.equivalence_margin)),
        power=float(params.power["power"]),
        extra_pairs=tuple((str(p[0]), str(p[1])) for p in params.compare_pairs),
        own=dict(params.own_arms),
        arms={a: Arm.from_dict(d) for a, d in params.arms.items()},
        decide_pair=tuple(decide["pair"]) if decide.get("pair") else None,
        rotation=lambda s: cycle_length(sweeps[s]["design"], len(sweeps[s]["arms"]))
        if s in sweeps else 1,
        price=price or (lambda s, m, a: None),
        staged=staged_summaries([input[k] for k in input.keys() if k.startswith("decide_")]))


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
                "mid_stage": bool(s.get("stopped_mid_stage"))}
    return out


def decision_stage(input: Any, output: Any, params: Any) -> str:
    """Rule decision: results/decision.md and decision.json."""
    an = Analysis.load(input.analysis, input.arms_yaml)
    rows, checks = decision_frames(input.rows, input.checks)
    ci = card_inputs(params, input, an)
    return write_decision(D.cards(rows, checks, an, ci), an, ci.margin, output.md,
                          output.json)
