"""Tables from the probe verdicts and the measured token classes (paper §4.2, §6).

These read no evidence rows: their source (titles.TableEntry.source) is probes.csv or the
tokenizer's counts. Paper §4.2: "Capability failures we caused, and one we did not"; §6:
"We report the measured per-class ratios rather than a single multiplier".
"""

from __future__ import annotations

import pandas as pd

from ..table import Body, Col
from .common import (
    builder,
)


@builder
def t_probe_verdicts(probes: pd.DataFrame | None) -> Body:
    if probes is None or probes.empty:
        return Body("One verdict per (model, endpoint): what the probe found before any fold.",
                    [Col("model", "model"), Col("verdict", "verdict")],
                    [{"_why_row": "no probes.csv in the evidence"}])
    # probe.py's summary columns; a package's probes.csv may carry fewer.
    cols = [c for c in ("model", "backend", "pin", "quantization", "verdict",
                        "responsible_parameter", "arms_allowed", "arms_forbidden")
            if c in probes.columns] or list(probes.columns)[:6]
    # Arms probed and never folded (a model's probe_arms, paper §4.2): shown when a
    # study names any, so a study that names none keeps its table.
    extra = ("probe_arms" in probes.columns
             and bool((probes["probe_arms"].fillna("").astype(str) != "").any()))
    return Body("One verdict per (model, endpoint): the conjunction of model, endpoint and "
                "request the probe measured, never the model alone."
                + (" probe_arms: arms probed on the model and never folded, with their "
                   "verdicts (deciding no fold)." if extra else ""),
                [Col(c, c, "str", "not recorded") for c in cols]
                + ([Col("probe_arms", "probe_arms", "str", "none named")] if extra else []),
                [{c: (r[c] or None) for c in cols + ["probe_arms"] * extra}
                 for r in probes.to_dict("records")])


@builder
def t_probe_reasoning_parameter(probes: pd.DataFrame | None) -> Body:
    """Paper §4.2's verdict table: each gateway model under both request shapes."""
    blurb = ("Each gateway model's verdict for one request shape with and without the "
             "reasoning-suppression parameter; the study sends it only to endpoints that "
             "declare reasoning (paper §4.2).")
    cols = [Col("model", "model"), Col("shape", "request"), Col("verdict", "verdict"),
            Col("study", "the study's request"), Col("probe_only", "probe only")]
    need = {"verdict_with_reasoning", "verdict_without_reasoning", "sends_reasoning"}
    if probes is None or not need <= set(probes.columns):
        return Body(blurb, cols, [{"_why_row": "the probe verdicts hold no reasoning comparison"}])
    rows = []
    for r in probes.to_dict("records"):
        if not r["verdict_with_reasoning"]:
            continue  # not a gateway model, or it failed before any request
        sends = r["sends_reasoning"] == "true"
        for with_it in (True, False):
            rows.append({"model": r["model"],
                         "shape": "with reasoning parameter" if with_it else "without it",
                         "verdict": r["verdict_with_reasoning" if with_it
                                      else "verdict_without_reasoning"],
                         "study": "yes" if with_it == sends else "",
                         "probe_only": "yes" if r.get("probe_only") == "true" else ""})
    return Body(blurb, cols, rows or [{"_why_row": "no gateway model was probed"}])


@builder
def t_chars_per_token(measured: pd.DataFrame | None) -> Body:
    """Paper §6: "We report the measured per-class ratios rather than a single
    multiplier" (run/tokens.py measures them)."""
    cols = [Col("model", "tokenizer of"), Col("text_class", "text"),
            Col("items", "items", "int"), Col("chars", "chars", "int"),
            Col("tokens", "tokens", "int"), Col("chars_per_token", "chars/token", "p3"),
            Col("estimate_error", "estimator (4 chars/token) off by", "signed_pct")]
    blurb = ("Each fact class's planted values (each distinct value on its own) and the "
             "session's prose (the chunks with every planted value cut out), counted by the "
             "exact tokenizer of each study model that has one. The estimator divides "
             "characters by 4: a negative error is an undercount. Gateway models count by "
             "the estimator, so they have no row.")
    if measured is None:
        why = "not measured here: an evidence package carries no fixtures"
    elif measured.empty:
        why = "no study model counts tokens exactly (every one uses the estimator)"
    else:
        return Body(blurb, cols, measured.to_dict("records"))
    return Body(blurb, cols, [{"_why_row": why}])

