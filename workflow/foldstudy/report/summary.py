"""The one screen a newcomer reads first: what ran, what was recalled and carried, where
the facts were lost, and where everything is (results/summary.md, printed at the end).

Every figure here is a count with its denominator, read from rows.csv and the fact
losses (report/trace.py), never recomputed another way: recall is the summed n_correct
over the summed n_graded of the valid rows, carrier presence the summed carrier_present
over the summed n_graded of the valid rows whose carrier was recorded (paper §4.10's
cross-tab reads those only; a package may leave it empty on the others), naming how many
rows that is where it is not all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.cells import arm_sort_key, valid_rows
from ..analysis.compare import carried_to_end, fact_grid
from ..analysis.headings import carrier_recorded
from ..analysis.plan import AnalysisPlan
from ..analysis.retained import picks, retained_points
from ..backends.ledger import read_ledger, spent_line
from ..evidence import columns
from ..evidence.load import read_artifact, read_table
from ..evidence.provenance import check_same_study
from ..io import read_json, write_text
from .table import md_escape
from .trace import DROPPED, MISSED_IN_ANSWER, NEVER_CARRIED, RECALLED

WHERE = [("tables", "results/tables/index.md"), ("figures", "results/figures/"),
         ("fold viewer", "results/viewer/index.html"),
         ("arm against arm", "results/compare/index.html"), ("evidence", "results/evidence/"),
         ("numbers", "results/stats/numbers.json"), ("this summary", "results/summary.md")]


def _share(a: int, b: int) -> str:
    return f"{a}/{b} = {a / b:.3f}" if b else "—"


def _carried(g: pd.DataFrame) -> str:
    """Graded values in the final carry over the rows whose carrier was recorded."""
    rec = carrier_recorded(g)
    text = _share(int(rec["carrier_present"].sum()), int(rec["n_graded"].sum()))
    return text if len(rec) == len(g) else f"{text} ({len(rec)} of {len(g)} rows recorded)"


def summary_text(rows: pd.DataFrame, losses: pd.DataFrame | None, plan: AnalysisPlan,
                 study: str, viewer: bool, survival: pd.DataFrame | None = None,
                 first_block: str | None = None, sessions: dict[str, Any] | None = None,
                 checks: pd.DataFrame | None = None) -> str:
    valid = valid_rows(rows)
    lines = [f"# Study `{study}`: what ran and where the facts went", "",
             f"Runs: {len(rows)}, valid: {len(valid)}."]
    bad = rows[~rows["valid"].astype(bool)]["invalid_reason"].value_counts()
    if len(bad):
        lines.append("Kept out by the validity rule: " + ", ".join(
            f"{reason} {n}" for reason, n in bad.items())
            + " (results/tables/invalid-rows.md).")
    lines += ["", "| sweep | arm | valid rows | recall (facts) | in the final carry | "
              "rows >= 0.5 |", "|---|---|---|---|---|---|"]
    order = arm_sort_key(plan.arm_order)
    for (sweep, arm), g in sorted(valid.groupby(["sweep", "arm"]),
                                  key=lambda kv: (kv[0][0], order(pd.Series([kv[0][1]]))[0])):
        graded = int(g["n_graded"].sum())
        title = plan.arm_title(arm, *sorted(set(map(str, g["model"]))))
        lines.append(f"| {sweep} | {arm} {title} | {len(g)} | "
                     f"{_share(int(g['n_correct'].sum()), graded)} | {_carried(g)} | "
                     f"{int((g['recall'] >= plan.row_recalled).sum())} |")
    if losses is not None and len(losses):
        lines += ["", "Where the graded facts were lost (valid rows; paper §4.10):", "",
                  "| sweep | arm | facts | never carried | carried, then dropped | "
                  "carried to the end, missed in the answer | recalled |",
                  "|---|---|---|---|---|---|---|"]
        for r in losses.to_dict("records"):
            at = f" (fold: count {r['dropped_at']})" if r.get("dropped_at") else ""
            lines.append(f"| {r['sweep']} | {r['arm']} | {r['facts']} | {r[NEVER_CARRIED]} | "
                         f"{r[DROPPED]}{at} | {r[MISSED_IN_ANSWER]} | {r[RECALLED]} |")
    lines += retained_lines(valid, plan)
    lines += ["", "Where everything is:", ""]
    lines += [f"- {what}: `{path}`" for what, path in WHERE
              if viewer or what not in ("fold viewer", "arm against arm")]
    if survival is not None and len(survival):
        lines += ["", *survival_summary(survival, first_block if viewer else None)]
    if sessions and checks is not None:
        lines += session_lines(rows, checks, sessions, plan)
    return "\n".join(lines) + "\n"


def retained_lines(valid: pd.DataFrame, plan: AnalysisPlan) -> list[str]:
    """Per (sweep, model), the arm on the retained-token frontier at the fewest
    tokens that recalls within the equivalence margin of the best arm (the pick of
    results/tables/retained-tokens.md); nothing where no row records retained tokens."""
    chosen = picks(retained_points(valid, plan))
    if not chosen:
        return []
    out = ["", "Recall at retained tokens (results/tables/retained-tokens.md): the "
           "frontier arm at the fewest tokens within the equivalence margin "
           f"({plan.equivalence_margin:g}) of the best arm's mean recall:", ""]
    for p in chosen:
        if p["arm"] is None:
            out.append(f"- {p['sweep']} {p['model']}: no arm recalled any fact, so none is "
                       "the best or the cheapest carrier")
            continue
        best = ("it is the best arm" if p["arm"] == p["best_arm"] else
                f"best: {p['best_arm']} {p['best_recall']:.3f} at "
                f"{p['best_tokens']:,.0f} tokens")
        out.append(f"- {p['sweep']} {p['model']}: {p['arm']}, recall {p['mean_recall']:.3f} "
                   f"at {p['retained_tokens']:,.0f} tokens ({best})")
    return out


def _rows_share(flags: pd.Series) -> str:
    """k/n rows, over the rows where the flag was recorded (an empty in_carrier is not)."""
    known = flags[flags.astype(str) != ""]
    return f"{int(known.astype(str).str.lower().eq('true').sum())}/{len(known)}"


def session_lines(rows: pd.DataFrame, checks: pd.DataFrame, manifests: dict[str, Any],
                  plan: AnalysisPlan) -> list[str]:
    """Per sweep on one of the user's own sessions: for each of their facts, the fold that
    planted it, whether the session's own compaction summary held it (the presence
    grader's rule: the tool's carry as a baseline), and per arm over its valid rows how
    often it reached the final carry and how often the answer got it right (paper §4.10:
    "how many graded values are present in the carrier and how many the answer then gets
    right")."""
    valid = valid_rows(rows)
    out: list[str] = []
    order = arm_sort_key(plan.arm_order)
    for sweep, m in sorted(manifests.items()):
        mine = valid[valid["sweep"] == sweep]
        ran = pd.Series(sorted(mine["arm"].unique()), dtype=str)
        arms = list(ran.iloc[order(ran).argsort(kind="stable")])
        c = checks[checks["row_id"].isin(mine["row_id"])].merge(
            mine[["row_id", "arm"]], on="row_id")
        own = m.get("own_compaction") or {}
        held = set(own.get("held", []))
        n_summaries = own.get("summaries", 0)
        out += ["", f"Your facts in session `{m['scenario']}` (sweep {sweep}; valid rows per "
                "arm: reached the final carry, answered right):", ""]
        head = ["fact", "planted in fold", "the session's own compaction"]
        head += [f"{a} {what}" for a in arms for what in ("carried", "right")]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for f in [f for f in m["facts"] if f["graded"]]:
            base = ("absent" if own.get("absent") and not n_summaries else
                    "no compaction in the file" if not n_summaries else "opaque"
                    if own.get("opaque") else "held" if f["label"] in held else "lost")
            cells = [md_escape(f["label"]), str(f["chunk"] + 1), base]
            for a in arms:
                g = c[(c["arm"] == a) & (c["label"] == f["label"])]
                cells += [_rows_share(g["in_carrier"]), _rows_share(g["correct"])]
            out.append("| " + " | ".join(cells) + " |")
        repaired = (m.get("session") or {}).get("repaired") or {}
        if repaired:
            out += ["", "Read with repairs (the file as the CLI wrote it; docs/own-sessions.md): "
                    + ", ".join(f"{n} {kind}" for kind, n in sorted(repaired.items())) + "."]
        if own.get("opaque"):
            out += ["", f"Baseline: none; the session's own compaction is {own['opaque']}, "
                    "so it grades no fact."]
        elif own.get("absent") and not n_summaries:
            out += ["", f"Baseline: none; {own['absent']}, so it grades no fact, and no "
                    "other text is graded in its place."]
        elif n_summaries:
            also = f" ({own['absent']})" if own.get("absent") else ""
            out += ["", f"Baseline{also}: the session's own compaction ({n_summaries} "
                    f"summar{'y' if n_summaries == 1 else 'ies'}, {own.get('summary_chars', 0)} "
                    f"characters) held {len(held)} of {len(m['facts'])} facts"
                    + (f": {', '.join(map(md_escape, sorted(held)))}." if held else ".")]
    return out


def survival_summary(end: pd.DataFrame, first_page: str | None) -> list[str]:
    """Lines for results/summary.md: per (sweep, arm) the share of graded facts carried
    from planting to the final fold, and the first block's comparison page."""
    lines = ["Fact survival (valid rows): graded facts carried from the fold that planted "
             "them through the final fold (results/tables/fact-survival.md):", ""]
    for r in end.to_dict("records"):
        band = (f" ({r['share_low']:.3f}–{r['share_high']:.3f})"
                if not pd.isna(r["share_low"]) else "")
        lines.append(f"- {r['sweep']} {r['arm']}: {r['carried']}/{r['facts']} = "
                     f"{r['share']:.3f}{band}")
    if first_page:
        lines += ["", f"Arm against arm, fold by fold: results/compare/{first_page}"]
    return lines


def spend_line(ledger: str | None, budget_usd: float | None) -> str | None:
    """What the study spent on paid calls, from the ledger (docs/design.md §6, Spend); None
    where no paid call was ever made."""
    if not ledger or not Path(ledger).is_file():
        return None
    state = read_ledger(ledger)
    unknown = (f", ${state['unknown_usd']:.4f} of it at the worst case of calls that "
               "brought no reply" if state["unknown_usd"] else "")
    return f"Spend: {spent_line(state, budget_usd)} (`{ledger}`{unknown})."


def write_summary(rows_csv: str, losses_csv: str | None, plan: AnalysisPlan, study: str,
                  viewer: bool, out: str, checks_csv: str | None = None,
                  trace_csv: str | None = None, first_block: str | None = None,
                  spend: str | None = None,
                  session_manifests: list[str] | None = None,
                  decision_md: str | None = None) -> str:
    """results/summary.md; with the fact trace it ends with each arm's share of graded
    facts carried from planting through the final fold and the first block's
    comparison page."""
    losses = pd.read_csv(losses_csv, keep_default_na=False) if losses_csv else None
    rows = read_table(rows_csv)
    survival = None
    if trace_csv and checks_csv:
        grid = fact_grid(read_artifact(Path(trace_csv), columns.TRACE_REQUIRED),
                           read_artifact(Path(checks_csv), columns.CHECKS_REQUIRED), rows)
        survival = carried_to_end(grid, plan)
    sessions = {Path(p).parent.name: read_json(p) for p in session_manifests or []}
    checks = (pd.read_csv(checks_csv, dtype=str, keep_default_na=False)
              if sessions and checks_csv else None)
    text = summary_text(rows, losses, plan, study, viewer, survival, first_block, sessions,
                        checks)
    text = with_cards(text, decision_md)
    if spend:
        text += f"\n{spend}\n"
    write_text(text, out)
    return text


def with_cards(text: str, decision_md: str | None) -> str:
    """The summary opening with the decision cards ("The summary opens with
    the cards"), under the summary's title; the rest follows them."""
    if not decision_md or not Path(decision_md).is_file():
        return text
    title, _, rest = text.partition("\n")
    cards = Path(decision_md).read_text(encoding="utf-8").splitlines()
    cards = ["#" + line if line.startswith("#") else line for line in cards]
    return "\n".join([title, "", *cards, "", "## What ran", rest])


def summary_stage(input: Any, output: Any, params: Any) -> str:
    """Rule summary: results/summary.md."""
    # Identity first: evidence of another study is refused before anything is written.
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    plan = AnalysisPlan.load(input.analysis, input.arms, params.config)  # its own arms and copies
    return write_summary(input.rows, input.losses, plan,
                         params.study, params.viewer, output.summary, input.checks,
                         input.get("trace"), params.first_block,
                         spend_line(params.ledger, params.budget_usd),
                         list(input.sessions), input.get("decision"))

