"""results/decision.md and decision.json (docs/design.md §6, Decision): one card per
(sweep, model), and the summary's opening (report/summary.py puts these cards first); and
the decision's page, results/decision.html.

The cards come from analysis/decision.py and are worded by report/card_words.py; this
module writes them, and reads decision.json back as typed cards, checked once
(read_decision), for the page and the gate (report/gate.py).
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

from ..analysis.card import Card, Decision, Overrun, StagedSummary, read_decision
from ..analysis.decision import CardInputs, cards
from ..analysis.plan import AnalysisPlan
from ..analysis.verdict import Price
from ..evidence import columns
from ..evidence.load import read_artifact
from ..io import read_json, write_text
from .card_words import CONTRAST_COLUMNS, card_markdown, contrast_cells


def decision_json(decision: Decision) -> str:
    """decision.json's text: sorted keys, a missing number as null."""
    return json.dumps(json_safe(decision.to_dict()), indent=1, sort_keys=True) + "\n"


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
    write_text(decision_json(Decision(margin=margin, family=family, alpha=plan.alpha,
                                      cards=list(cards))), out_json)
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
    from ..study.arm import Arm
    from ..study.design import cycle_length

    decide = params.decide or {}
    price = run = None
    sweeps = params.sweeps
    own_compactions: dict[str, dict[str, Any]] = {}
    staged = staged_summaries([input[k] for k in input.keys() if k.startswith("decide_")])
    if params.priced:
        prompts, fixtures = plan_inputs(input)
        own_compactions = session_compactions(
            {k[len("manifest_"):]: v for k, v in input.items() if k.startswith("manifest_")})
        # priced as the ledger reserves now, as the looks priced each next stage
        run = run_prices(prompts, fixtures, params.arms, params.backends, params.probe_dir,
                         params.recall_max_tokens, params.ledger)

        def price(sweep: str, model: str, arm: str) -> Price | None:
            calls, usd = run(sweep, model, arm)
            return Price(calls=calls, usd=usd)

        staged = {(s, m): reprice_staged(st, [run(s, m, a)[1] for a in sweeps[s]["arms"]],
                                         run.basis(m), run.overruns(m))
                  for (s, m), st in staged.items()}
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
        sweeps=dict(sweeps), own_compactions=own_compactions)


def session_compactions(manifests: dict[str, str]) -> dict[str, dict[str, Any]]:
    """sweep -> the CLI's own compaction of its session, as the fixture job wrote it in
    the fixture's manifest (`own_compaction`, with `facts`: the graded facts' count);
    only the sweeps on the user's own sessions have one."""
    out = {}
    for sweep, path in manifests.items():
        made = read_json(path)
        if isinstance(made.get("own_compaction"), dict):
            facts = [f for f in made.get("facts") or [] if f.get("graded")]
            out[sweep] = {**made["own_compaction"], "facts": len(facts)}
    return out


def reprice_staged(st: StagedSummary, arm_usd: list[float | None], basis: str,
                   overruns: list[dict[str, Any]]) -> StagedSummary:
    """A staged summary's dollar figures at the prices the ledger reserves at now, which
    may have learned more since the look: one repeat (every arm of the block), the
    repeats it took, the fixed design's maximum and what is left to it; and, where what
    was spent passes the repeats' worst case, the overruns the ledger logged on the
    model's endpoint (the one way past a reservation)."""
    per = None if None in arm_usd else float(sum(u or 0.0 for u in arm_usd))
    worst = None if per is None else per * st.repeats
    overrun = None
    if worst is not None and st.usd is not None and st.usd > worst + 1e-12:
        overrun = Overrun(count=len(overruns),
                          first_call=sum(bool(o.get("first_call")) for o in overruns),
                          excess_usd=sum(float(o["cost_usd"]) - float(o["reserved_usd"])
                                         for o in overruns))
    return dataclasses.replace(
        st, price_per_repeat_usd=per, price_basis=basis,
        fixed_usd=None if per is None else per * st.max_repeats, staged_worst_usd=worst,
        remaining_usd=(per * st.remaining_repeats if st.remaining_repeats and per is not None
                       else st.remaining_usd), overrun=overrun)


def staged_summaries(look_files: Sequence[str]) -> dict[tuple[str, str], StagedSummary]:
    """(sweep, model) -> what its staged decision took, from each decide sweep's final
    look: repeats, looks, the outcome, the spend, and the fixed design's worst case."""
    out = {}
    for path in look_files:
        state = read_json(path)
        for model, s in state["models"].items():
            price, mx = s.get("price_per_repeat_usd"), state["max_repeats"]
            out[(state["sweep"], model)] = StagedSummary(
                stop=s["status"] + (" (budget_usd reached)" if s.get("stop") == "budget"
                                    else ""),
                repeats=s["repeats"], looks=s["looks"], usd=s.get("spent_usd"),
                price_per_repeat_usd=price, max_repeats=mx,
                fixed_usd=None if price is None else price * mx,
                staged_worst_usd=None if price is None else price * s["repeats"],
                remaining_repeats=s.get("remaining_repeats"),
                remaining_usd=s.get("remaining_usd"), p=s.get("p"),
                nominal=s.get("nominal"), family_size=int(state.get("family_size", 1)),
                mid_stage=bool(s.get("stopped_mid_stage")))
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


def inline_html(text: str) -> Markup:
    """A card's Markdown inline words as HTML: escaped first (a model's or arm's name is
    text, never markup), then **bold**, *emphasis* and `code`."""
    import re

    from markupsafe import escape

    out = str(escape(text))
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"\*(\S.*?)\*", r"<em>\1</em>", out)
    return Markup(re.sub(r"`(.+?)`", r"<code>\1</code>", out))


def carrier_link(card: Card) -> str | None:
    """Where a decided card's carrier folder's README sits, relative to results/ (the
    page's folder): rule carriers writes results/decision/<sweep>/<model>/carrier/ for
    each card whose verdict names an arm (report/carrier.chosen); None for the rest."""
    from .carrier import chosen

    if chosen(card) is None:
        return None
    return f"decision/{card.sweep}/{card.model}/carrier/README.md"


def page_cards(doc: Decision, plan: AnalysisPlan, links: bool = False
               ) -> list[dict[str, Any]]:
    """Each card as the page's template reads it: its heading, contrast rows and the
    card's other lines, every one in the words decision.md uses. links: the carrier
    folders were built (not in evidence mode, where no run record is read), so each
    decided card links its own."""
    out = []
    for c in doc.cards:
        lines = card_markdown(c, plan)
        paras = [line for line in lines[2:] if line and not line.startswith("|")
                 and not line.startswith("Contrasts (")]
        out.append({"id": f"card-{c.sweep}-{c.model}", "title": inline_html(lines[0][3:]),
                    "rows": [[inline_html(x) for x in contrast_cells(v, c.fold_failures)]
                             for v in c.contrasts],
                    "lines": [inline_html(x) for x in paras],
                    "carrier": carrier_link(c) if links else None})
    return out


def write_decision_page(doc: Decision, plan: AnalysisPlan, out_html: str,
                        templates: str | Path, links: bool = False) -> str:
    """results/decision.html: the forest plot (figures/decision.png, .svg) and the cards,
    each decided card linking its carrier folder where those were built (links)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)),
                             autoescape=True, keep_trailing_newline=True)
    html = env.get_template("decision.html.j2").render(
        cards=page_cards(doc, plan, links), columns=CONTRAST_COLUMNS,
        family=inline_html(family_line(doc.family or "sweep", plan.alpha)),
        margin=doc.margin, alpha=plan.alpha)
    write_text(html, out_html)
    return html


def decision_page_stage(input: Any, output: Any, params: Any) -> str:
    """Rule decision_page: results/decision.html and results/figures/decision.*; the
    cards link the carrier folders where the rule built them first (params.links)."""
    from .figures import write_forest

    doc = read_decision(input.decision)
    plan = AnalysisPlan.load(input.analysis, input.arms_yaml)
    Path(output.png).parent.mkdir(parents=True, exist_ok=True)
    write_forest(doc, output.png, output.svg)
    return write_decision_page(doc, plan, output.html, Path(input.template).parent,
                               bool(getattr(params, "links", False)))
