"""Every reported number, from rows.csv and checks.csv alone (docs/design.md §6, Statistics, §8).

`compute_numbers` is the one function verify, the tables and the prose rely on: pure,
deterministic (the bootstrap is seeded from resources/analysis.yaml) and flat, key ->
number. A statistic with no data has no key (never NaN, never 0): a reader of
numbers.json can tell "not measured" from "measured zero".

Key shape: `section.name` for study-wide numbers (`icc.value`), and
`section.name[a/b/c]` for a number about one cell (`recall.mean[main/smollm2-135m/j]`);
sweep, model and arm names cannot hold '/' (config schema), so the brackets parse.
Booleans are 0/1.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..evidence.load import load_evidence
from ..evidence.provenance import check_same_study
from ..io import write_json, write_text
from ..study.scopes import unknown_analyses
from . import keys, stats
from .capacity import (
    capacity,
    capacity_rows,
    carried_chars_pairs,
    ceiling_replication,
    fill_by_model,
    fill_table,
)
from .cells import cell_summary, pairs
from .headings import (
    CARRIER_COLUMNS,
    carrier_crosstab,
    headings_by_arm,
    headings_within_model,
    recall_by_headings,
    warn_answers_beyond_carrier,
)
from .instrument import (
    ABSTENTION_COLUMNS,
    abstention,
    envelope,
    finish_reasons,
    grader_agreement,
    parse_failures,
    parse_line,
    unit_lenient,
)
from .macros import latex_macros
from .partition import depth, failure_modes, partition, separation
from .plan import AnalysisPlan
from .recall import (
    description_delta,
    iteration,
    ladder_rows,
    ladder_rungs,
    recall_cells,
    token_pairs,
)
from .scopes import Scopes
from .view import Evidence, Number

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------- numbers

class _Numbers:
    """Collects key -> number, and for provenance the artifacts and rows behind each."""

    def __init__(self) -> None:
        self.values: dict[str, Number] = {}
        self.sources: dict[str, dict[str, Any]] = {}

    def put(self, key: str, value: Any, source: str = "rows.csv", rows: int | None = None
            ) -> None:
        if value is None:
            return
        if isinstance(value, bool | np.bool_):
            value = int(value)
        elif isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, float | np.floating):
            value = float(value)
            if not math.isfinite(value):
                return
        if key in self.values:
            raise KeyError(f"number {key} computed twice")
        self.values[key] = value
        section = key.split(".", 1)[0]
        self.sources.setdefault(section, {"from": source, "rows": rows})


def _put_mean_n(out: _Numbers, prefix: str, cell: str, s: dict[str, Any],
                rows: int | None = None) -> None:
    out.put(keys.at(f"{prefix}.n", cell), s["n"], rows=rows)
    if s["n"]:
        out.put(keys.at(f"{prefix}.mean", cell), s["mean"], rows=rows)
        for part in ("rows_full", "rows_ge_half"):
            if part in s:
                out.put(keys.at(f"{prefix}.{part}", cell), s[part], rows=rows)


def _put_fisher(out: _Numbers, key: str, f: stats.Fisher | None, rows: int) -> None:
    if f is None:
        return
    for name, val in (("a", f.a), ("n1", f.n1), ("b", f.b), ("n2", f.n2), ("p", f.p)):
        out.put(keys.fisher_key(key, name), val, rows=rows)


def _put_paired(out: _Numbers, key: str, cell: str, pr: pd.DataFrame, plan: AnalysisPlan,
                rows: int) -> None:
    """Paired difference first - second with its seeded within-model bootstrap interval
    (the paper's, kept for its numbers), and beside it the exact sign-flip permutation p
    over the same blocks with the smallest p those blocks can give (beyond the paper:
    the bootstrap rejects a true null 15-16% of the time at 4-5 blocks)."""
    first, second = pr.iloc[:, -2].to_numpy(), pr.iloc[:, -1].to_numpy()
    b = stats.paired_bootstrap(first, second, pr["model"].to_numpy(), plan.resamples, plan.seed,
                               plan.confidence)
    if b is None:
        return
    d = first.astype(float) - second.astype(float)
    flip = stats.sign_flip_test(d[np.isfinite(d)], seed=plan.seed)
    for part, val in (("diff", b.diff), ("ci_low", b.low), ("ci_high", b.high),
                      ("n_pairs", b.n_pairs), ("n_models", b.n_models),
                      ("perm_p", flip.p_value), ("perm_min_p", flip.min_p)):
        out.put(keys.paired(key, part, cell), val, rows=rows)


def _rows_recalled(g: pd.DataFrame, plan: AnalysisPlan) -> tuple[int, int]:
    s = cell_summary(g, plan.row_recalled)
    return s["rows_ge_half"], s["n"]


def compute_numbers(rows: pd.DataFrame, checks: pd.DataFrame,
                    analysis: AnalysisPlan | None = None, scopes: Scopes | None = None
                    ) -> dict[str, Number]:
    """Every reported number, keyed (module docstring), from rows and checks alone."""
    return compute_with_provenance(rows, checks, analysis, scopes)[0]


# ------------------------------------------------------------------------- sections

SectionFn = Callable[[Evidence, _Numbers], None]


@dataclass(frozen=True)
class Section:
    """One section of numbers.json and the analyses (study/scopes.py) whose scopes it
    reads; its view of the evidence refuses any other."""

    compute: SectionFn
    reads: tuple[str, ...]


# Every section, in numbers.json's reading order (this file's): a new result is one
# function below, registered by @section with the analyses it reads.
SECTIONS: list[Section] = []


def section(*reads: str) -> Callable[[SectionFn], SectionFn]:
    """Register the function as the next section, reading these analyses' scopes; an
    analysis study/scopes.py does not declare fails at import."""
    def register(fn: SectionFn) -> SectionFn:
        unknown_analyses(reads, f"numbers section {fn.__name__}")
        SECTIONS.append(Section(fn, reads))
        return fn
    return register


@section()
def _rows(ev: Evidence, out: _Numbers) -> None:
    """Row and check counts: how much evidence there is, and how much the validity rule kept."""
    rows, checks, valid = ev.rows, ev.checks, ev.valid
    nv = len(valid)
    out.put("rows.n", len(rows), rows=len(rows))
    out.put("rows.n_valid", nv)
    out.put("rows.n_invalid", len(rows) - nv)
    out.put("rows.catchup_fired", int(rows["catchup_fired"].fillna(False).astype(bool).sum()))
    out.put("checks.n", len(checks), source="checks.csv", rows=len(checks))


@section("icc")
def _icc(ev: Evidence, out: _Numbers) -> None:
    """ICC(1) of the binary checks grouped by row, valid rows of the primary scenario
    (paper §4 opening: "a one-way random-effects decomposition of the fourteen binary
    checks gives ICC = 0.750 and a design effect of 10.745"), with its exact F interval."""
    for g, prim in ev.groups("icc", primary=True):
        c = ev.checks[ev.checks["row_id"].isin(prim["row_id"])]
        icc = stats.icc1(c["row_id"], c["correct"].astype(float), ev.plan.confidence)
        if icc is not None:
            for name, value in asdict(icc).items():
                out.put(g.key(f"icc.{name}"), value, source="rows.csv+checks.csv",
                        rows=icc.n_rows)


@section("headings")
def _headings(ev: Evidence, out: _Numbers) -> None:
    """Headings that arrived vs recall (paper §4.8: "r = +0.61 over 570 rows"), over valid
    rows with the count recorded, and the within-model split (§4.7)."""
    plan = ev.plan
    for g, valid in ev.groups("headings"):
        h = valid[["headings_carried", "recall"]].dropna()
        pr = stats.pearson(h["headings_carried"], h["recall"], plan.confidence)
        if pr is not None:
            for name in ("r", "p", "ci_low", "ci_high"):
                out.put(g.key(f"headings.{name}"), getattr(pr, name), rows=pr.n)
            out.put(g.key("headings.n_rows"), pr.n, rows=pr.n)
        for _, r in recall_by_headings(valid, plan).iterrows():
            _put_mean_n(out, "headings", g.cell(r["headings"]),
                        {"n": r["rows"], "mean": r["mean"], "rows_ge_half": r["rows_ge_half"]})
        for _, r in headings_by_arm(valid, plan).iterrows():
            out.put(g.at("headings.rows", r["arm"]), r["rows"])
            out.put(g.at("headings.rows_five", r["arm"]), r["h5"])
            out.put(g.at("headings.rows_zero", r["arm"]), r["h0"])
        for _, r in headings_within_model(valid, plan).iterrows():
            _put_mean_n(out, "headings.within_model", g.cell(r["model"], r["headings"]),
                        r.to_dict())


@section("table1")
def _recall(ev: Evidence, out: _Numbers) -> None:
    """Recall per (sweep, model, arm) with denominators (recall-by-model-arm.csv: one line
    per sweep, never pooled), and Table 1's cells from its scope."""
    plan, valid = ev.plan, ev.valid
    for (sweep, model, arm), g in valid.groupby(["sweep", "model", "arm"], sort=True):
        _put_mean_n(out, "recall", keys.cell(sweep, model, arm), cell_summary(g, plan.row_recalled))
    for g, vg in ev.groups("table1"):
        for _, r in recall_cells(vg, plan).iterrows():
            _put_mean_n(out, "table1", g.cell(r["scenario"], r["model"], r["arm"]), r.to_dict())


@section("ladder")
def _ladder(ev: Evidence, out: _Numbers) -> None:
    """The ladder (paper §4.3): rung means, paired effects, Fisher on full-recall rows."""
    plan = ev.plan
    for g, valid in ev.groups("ladder"):
        lr = ladder_rows(valid, plan)
        for _, r in ladder_rungs(valid, plan).iterrows():
            _put_mean_n(out, "ladder", g.cell(r["arm"]), r.to_dict(), rows=len(lr))
            # The rung's own interval: the same within-model bootstrap, against zero.
            gr = lr[lr["arm"] == r["arm"]].dropna(subset=["recall"])
            b = stats.paired_bootstrap(gr["recall"].to_numpy(), np.zeros(len(gr)),
                                       gr["model"].to_numpy(), plan.resamples, plan.seed,
                                       plan.confidence)
            if b is not None:
                out.put(g.at("ladder.ci_low", r["arm"]), b.low, rows=len(lr))
                out.put(g.at("ladder.ci_high", r["arm"]), b.high, rows=len(lr))
        for prev, arm in zip(plan.ladder, plan.ladder[1:], strict=False):
            _put_paired(out, "ladder.effect", g.cell(arm, prev), pairs(lr, arm, prev), plan,
                        len(lr))
        for i, a in enumerate(plan.ladder):
            for b in plan.ladder[i + 1:]:
                ga, gb = lr[lr["arm"] == a]["recall"], lr[lr["arm"] == b]["recall"]
                f = stats.fisher(int((ga >= 1).sum()), len(ga), int((gb >= 1).sum()), len(gb))
                _put_fisher(out, g.at("ladder.fisher_full", a, b), f, len(lr))


@section("equivalence")
def _equivalence(ev: Evidence, out: _Numbers) -> None:
    """Equivalence (paper §4.1: "k nonetheless trails m by 0.066 with a bootstrap interval
    excluding zero, and an equivalence test at a margin of 0.10 in either direction does
    not pass"): paired difference, its interval and whether it excludes zero, and TOST at
    the margin with its verdict (a verdict even where every difference is the same)."""
    plan = ev.plan
    a, b = plan.equivalence
    for g, prim in ev.groups("equivalence", primary=True):
        pe = pairs(prim, a, b)
        cell = g.cell(a, b)
        _put_paired(out, "equivalence", cell, pe, plan, len(pe) * 2)
        t = stats.tost_paired(pe["recall_first"].to_numpy(), pe["recall_second"].to_numpy(),
                              plan.equivalence_margin, plan.alpha)
        if t is not None:
            out.put(keys.at("equivalence.tost_p", cell), t.p)  # none without variance
            out.put(keys.at("equivalence.equivalent", cell), t.equivalent)
            out.put(keys.at("equivalence.margin", cell), t.margin)
        lo, hi = (out.values.get(keys.paired("equivalence", p, cell))
                  for p in ("ci_low", "ci_high"))
        if lo is not None and hi is not None:  # §4.1: "a bootstrap interval excluding zero"
            out.put(keys.at("equivalence.excludes_zero", cell), lo > 0 or hi < 0)


@section("iteration")
def _iteration(ev: Evidence, out: _Numbers) -> None:
    """Iteration (paper §4.4): the same arms on the single-chunk and distributed scenarios."""
    for g, valid in ev.groups("iteration"):
        for _, r in iteration(valid, ev.plan).iterrows():
            for key in ("single", "distributed"):
                _put_mean_n(out, "iteration", g.cell(key, r["arm"]),
                            {"n": r[f"{key}_n"], "mean": r[f"{key}_mean"]})


@section("capacity")
def _capacity(ev: Evidence, out: _Numbers) -> None:
    """Capacity (paper §4.5) and its Fisher contrasts on rows recalled; non-conforming
    folds over every row of the arm, of `folds_all` ("4 of 60 folds")."""
    plan = ev.plan
    ca, cb = plan.ceiling_pair
    every = ev.every_row("capacity")
    for g, valid in ev.groups("capacity"):
        cap = capacity(valid, plan, every.get(g.label))
        cr = capacity_rows(valid, plan)
        for _, r in cap.iterrows():
            arm = g.cell(r["arm"])
            for col in ("n", "rows_recalled", "folds_clipped", "folds", "nonconforming_folds",
                        "folds_all", "rows_all", "mean", "carried_chars",
                        "declared_ceiling_chars"):
                out.put(keys.at(f"capacity.{col}", arm), r[col], rows=len(cr))
        both = set(cr[cr["arm"] == ca]["model"]) & set(cr[cr["arm"] == cb]["model"])
        ra = _rows_recalled(cr[(cr["arm"] == ca) & cr["model"].isin(both)], plan)
        rb = _rows_recalled(cr[(cr["arm"] == cb) & cr["model"].isin(both)], plan)
        _put_fisher(out, g.at("capacity.fisher_recalled", ca, cb),
                    stats.fisher(ra[0], ra[1], rb[0], rb[1]), len(cr))
        rf = _rows_recalled(cr[cr["arm"].isin(plan.representation_failing)], plan)
        rh = _rows_recalled(cr[cr["arm"].isin(plan.representation_healthy)], plan)
        _put_fisher(out, g.key("capacity.fisher_representation"),
                    stats.fisher(rf[0], rf[1], rh[0], rh[1]), len(cr))


@section("ceiling")
def _ceiling(ev: Evidence, out: _Numbers) -> None:
    """Ceiling replication per model (paper §4.6), and rows recalled on j against t over
    the models that ran both (§4.5: "paired over the two models that ran both arms:
    17/47 against 3/16, Fisher exact p = 0.23")."""
    plan = ev.plan
    ca, cb = plan.ceiling_pair
    for g, valid in ev.groups("ceiling"):
        cr = ceiling_replication(valid, plan)
        for _, r in cr.iterrows():
            m = r["model"]
            for col, arm in (("a", ca), ("b", cb)):
                out.put(g.at("ceiling.recalled", m, arm), r[f"{col}_recalled"])
                out.put(g.at("ceiling.n", m, arm), r[f"{col}_n"])
                out.put(g.at("ceiling.fill", m, arm), r[f"{col}_fill"])
        if len(cr):
            f = stats.fisher(int(cr["a_recalled"].sum()), int(cr["a_n"].sum()),
                             int(cr["b_recalled"].sum()), int(cr["b_n"].sum()))
            _put_fisher(out, g.at("ceiling.fisher_recalled", ca, cb), f,
                        int(cr["a_n"].sum() + cr["b_n"].sum()))
            out.put(g.key("ceiling.n_models"), len(cr))


@section("partition")
def _partition(ev: Evidence, out: _Numbers) -> None:
    """The partition contrast across models (paper §4.7) and what follows from it, every
    number from the partition scope alone: failing, rescued, the failure-mode split, the
    separation weight 1/C(n, k), the carried text."""
    plan = ev.plan
    for g, valid in ev.groups("partition"):
        part = partition(valid, plan)
        for _, r in part.iterrows():
            m = g.cell(r["model"]) if part["model"].is_unique else g.cell(r["sweep"],
                                                                          r["model"])
            for col in ("j_n", "j_mean", "q_n", "q_mean", "gap", "j_fill", "j_carried_chars",
                        "j_rows_ge_half", "q_rows_ge_half", "failing", "rescued",
                        "borderline"):
                out.put(keys.at(f"partition.{col}", m), r[col])
        if len(part):
            failing = part[part["failing"]]
            working = part[~part["failing"]]
            out.put(g.key("partition.n_models"), len(part))
            out.put(g.key("partition.n_failing"), len(failing))
            out.put(g.key("partition.n_rescued"), int(failing["rescued"].sum()))
            out.put(g.key("partition.n_working"), len(working))
            out.put(g.key("partition.n_borderline"), int(part["borderline"].sum()))
            if len(working):
                out.put(g.key("partition.mean_gap_working"), float(working["gap"].mean()))
                out.put(g.key("partition.min_gap_working"), float(working["gap"].min()))
        for _, r in failure_modes(part).iterrows():
            mode = g.cell(r["mode"])
            out.put(keys.at("failure_mode.models", mode), r["models"])
            out.put(keys.at("failure_mode.rescued", mode), r["rescued"])
            if r["fills"]:
                out.put(keys.at("failure_mode.fill_min", mode), min(r["fills"]))
                out.put(keys.at("failure_mode.fill_max", mode), max(r["fills"]))
        for _, r in separation(part).iterrows():
            cl = g.cell(r["classification"])
            out.put(keys.at("separation.n_failing", cl), r["n_failing"])
            out.put(keys.at("separation.n_non_rescued", cl), r["n_non_rescued"])
            out.put(keys.at("separation.complete", cl), r["complete"])
            if not np.isnan(r["margin"]):
                out.put(keys.at("separation.margin", cl), r["margin"])
            if r["complete"]:
                out.put(keys.at("separation.weight", cl),
                        stats.separation_weight(r["n_failing"], r["n_non_rescued"]))
        # Carried text, divided against undivided, paired within block (paper §8).
        cc = carried_chars_pairs(valid[valid["scenario"] == plan.primary_scenario], plan)
        if len(cc) and cc["carried_chars_second"].sum() > 0:
            ratio = cc["carried_chars_first"].sum() / cc["carried_chars_second"].sum()
            cell = g.cell(plan.divided, plan.undivided)
            out.put(keys.at("partition.carried_ratio", cell), ratio)
            out.put(keys.at("partition.carried_less", cell), 1 - ratio)
            out.put(keys.at("partition.carried_pairs", cell), len(cc))


@section("fill")
def _fill(ev: Evidence, out: _Numbers) -> None:
    """Fill against recall of the undivided arm, one point per model of the fill scope
    (paper §4.6: "r = -0.23 over twenty-five measured models")."""
    for g, valid in ev.groups("fill"):
        fm = fill_by_model(valid, ev.plan)
        fr = stats.pearson(fm["j_fill"], fm["j_mean"], ev.plan.confidence)
        if fr is not None:
            rows = int(fm["n"].sum())
            for name in ("r", "p", "ci_low", "ci_high"):
                out.put(g.key(f"fill.{name}"), getattr(fr, name), rows=rows)
            out.put(g.key("fill.n_models"), fr.n, rows=rows)


@section("fill_table")
def _fill_table(ev: Evidence, out: _Numbers) -> None:
    """§4.6's fill table: rows, carried chars, fill and recall per (model, arm), each
    pooled over the model's sweeps of the `fill_table` scope (A.fill_table)."""
    for g, valid in ev.groups("fill_table"):
        for _, r in fill_table(valid, ev.plan).iterrows():
            cell = g.cell(r["model"], r["arm"])
            for col in ("rows", "carried_chars", "fill", "mean"):
                out.put(keys.at(f"fill_table.{col}", cell), r[col], rows=int(r["rows"]))


@section("depth")
def _depth(ev: Evidence, out: _Numbers) -> None:
    """The depth re-run (paper §4.7): both arms of each model of its scope, in full."""
    for g, valid in ev.groups("depth"):
        for _, r in depth(valid, ev.plan).iterrows():
            cell = g.cell(r["model"], r["arm"])
            _put_mean_n(out, "depth", cell, r.to_dict())
            out.put(keys.at("depth.fill", cell), r["fill"])


@section("carrier")
def _carrier(ev: Evidence, out: _Numbers) -> None:
    """The carrier cross-tab over the rows whose carrier was recorded (paper §4.10: "Over
    215 valid rows the two agree on 171"; q 88 rows, 31 missed; j 103, 13): per arm and
    summed, `carrier.rows` the rows read, `carrier.agree`, `carrier.missed` (rows where
    the carrier held a value the answer missed) and `carrier.answer_beyond_carrier` (the
    reverse: the paper's zero)."""
    checks, plan = ev.checks, ev.plan
    for g, valid in ev.groups("carrier"):
        cc = carrier_crosstab(valid, checks, plan)
        n = int(cc["rows"].sum())
        for _, r in cc.iterrows():
            for col in CARRIER_COLUMNS[1:]:
                out.put(g.at(f"carrier.{col}", r["arm"]), r[col],
                        source="rows.csv+checks.csv", rows=n)
        if len(cc):
            for col in CARRIER_COLUMNS[1:]:
                out.put(g.key(f"carrier.{col}"), int(cc[col].sum()),
                        source="rows.csv+checks.csv", rows=n)
            out.put(g.key("carrier.valid_rows"), len(valid), source="rows.csv", rows=n)


@section("grader")
def _grader(ev: Evidence, out: _Numbers) -> None:
    """Label-bound against presence grading of the answer (paper §4.4: "the label-bound
    and presence counts agree on 619 of 620 valid distributed rows"). Needs rows.csv's
    answer text; without it there is no key. And the unit-lenient diagnostic (§3.1: "an
    answer that keeps the number while dropping the unit fails the check while having
    carried the fact"): checks, and rows with one, that pass only when the unit word
    may be dropped."""
    for g, prim in ev.groups("grader", primary=True):
        ul = unit_lenient(prim, ev.checks)
        if ul is not None:  # §3.1: the fact carried, its unit word dropped
            out.put(g.key("grader.unit_lenient_checks"), ul["checks"], source="checks.csv")
            out.put(g.key("grader.unit_lenient_rows"), ul["rows"], source="checks.csv")
        per = grader_agreement(prim, ev.checks)
        if per is None or per.empty:
            continue
        out.put(g.key("grader.rows"), len(per), source="rows.csv+checks.csv")
        out.put(g.key("grader.agree_rows"), int(per["agree"].sum()),
                source="rows.csv+checks.csv")


@section("abstention")
def _abstention(ev: Evidence, out: _Numbers) -> None:
    """Abstention vs fabrication among failing rows (paper §4.11), on the whole answer
    and on its first 400 characters (the paper's counts compare with the second)."""
    for g, valid in ev.groups("abstention"):
        for _, r in abstention(valid, ev.plan).iterrows():
            for col in ABSTENTION_COLUMNS[1:]:
                out.put(g.at(f"abstention.{col}", r["arm"]), r[col])


@section("finish", "parse", "envelope", "tokens")
def _instruments(ev: Evidence, out: _Numbers) -> None:
    """Instruments: finish reasons, parse failures, envelopes, prompt tokens."""
    plan = ev.plan
    for g, valid in ev.groups("finish"):
        for _, r in finish_reasons(valid, plan).iterrows():
            arm = g.cell(r["arm"])
            for col in ("folds", "stop", "length", "other"):
                out.put(keys.at(f"finish.{col}", arm), r[col])
            if r["rows_with_ceiling"]:
                out.put(keys.at("finish.rows_with_ceiling", arm), r["rows_with_ceiling"])
                out.put(keys.at("finish.rows_at_ceiling", arm), r["rows_at_ceiling"])
    for g, valid in ev.groups("parse"):
        for _, r in parse_failures(valid, plan).iterrows():
            for col in ("parse_failures", "schema_invalid_folds", "rate", "rows_with_failure",
                        "mean_with_failure", "rows_clean", "mean_clean"):
                out.put(g.at(f"parse.{col}", r["arm"]), r[col])
    # §6 over the single-field arms and over all arms, every row valid or not ("of the
    # 23 single-field-schema rows carrying a parse failure, 18 are valid"; "Over all
    # arms the counts are 63 rows carrying a parse failure, 57 valid"), per group and
    # pooled.
    for g, every in ev.groups("parse", every_row=True):
        _put_parse_lines(out, g.key, every, plan)
    pooled = ev.pooled("parse", every_row=True)
    if pooled is not None:
        _put_parse_lines(out, lambda k: keys.at(k, pooled[0]), pooled[1], plan)
    for g, valid in ev.groups("envelope"):
        env = valid["json_envelope_carried"].fillna(False).astype(bool)
        out.put(g.key("envelope.rows_carried"), int(env.sum()))
        out.put(g.key("envelope.rows_not_carried"), int((~env).sum()))
        for _, r in envelope(valid, plan).iterrows():
            out.put(g.at("envelope.rows", r["arm"]), r["rows"])
            out.put(g.at("envelope.carried", r["arm"]), r["carried"])
    pooled = ev.pooled("tokens")
    if pooled is not None:  # §1: "1,534 fewer ... pooled over every sweep"
        a, b = plan.divided, plan.undivided
        pt = pairs(pooled[1], a, b, "prompt_tokens")
        _put_paired(out, "tokens.delta_pooled", keys.cell(a, b), pt, plan, len(pt) * 2)
    for g, valid in ev.groups("tokens"):
        for (a, b), pt in token_pairs(valid, plan).items():
            _put_paired(out, "tokens.delta", g.cell(a, b), pt, plan, len(pt) * 2)
        d = description_delta(valid, plan)
        if d is not None:
            cell = g.cell(*plan.described)
            for name, key in (("description_chars", "description_chars"),
                              ("expected", "expected_delta"), ("measured", "measured_delta"),
                              ("share", "delivered_share"), ("n_pairs", "expected_pairs")):
                out.put(keys.at(f"tokens.{key}", cell), d[name], rows=2 * d["n_pairs"])


def _put_parse_lines(out: _Numbers, key: Callable[[str], str], rows: pd.DataFrame,
                     plan: AnalysisPlan) -> None:
    """The parse-failure lines over every row, valid or not (A.parse_line), under `key`:
    `parse.single_field.*` (the single-field arms) and `parse.all_arms.*`."""
    for name, arms in (("single_field", plan.single_field_schema), ("all_arms", None)):
        s = parse_line(rows, plan, arms)
        for col, val in (s or {}).items():
            if col != "arm":
                out.put(key(f"parse.{name}.{col}"), val)


def compute_with_provenance(rows: pd.DataFrame, checks: pd.DataFrame,
                            analysis: AnalysisPlan | None = None, scopes: Scopes | None = None
                            ) -> tuple[dict[str, Number], dict[str, Any]]:
    """Every number, and for each section the artifact and row count it came from.

    A scope naming a sweep or model the evidence lacks fails here, by name (ScopeError).
    """
    ev = Evidence.of(rows, checks, analysis or AnalysisPlan.load(), scopes)
    out = _Numbers()
    for s in SECTIONS:
        s.compute(ev.reading(s.reads), out)
    return out.values, {"inputs": {"rows.csv": len(rows), "checks.csv": len(checks)},
                        "scopes": ev.scopes.describe(ev.plan.primary_scenario),
                        "sections": out.sources}


def write_numbers(evidence_dir: str | Path, numbers_out: str | Path, provenance_out: str | Path,
                  macros_out: str | Path, plan: AnalysisPlan, scopes: Scopes | None = None
                  ) -> dict[str, Number]:
    """Evidence -> numbers.json, its provenance, and the LaTeX macros."""
    rows, checks = load_evidence(evidence_dir, plan.arm_order, plan.scenarios, plan.opaque_arms)
    warn_answers_beyond_carrier(rows, checks)
    nums, prov = compute_with_provenance(rows, checks, plan, scopes)
    prov["evidence"] = str(evidence_dir)
    write_json(nums, numbers_out)
    write_json(prov, provenance_out)
    write_text(latex_macros(nums), macros_out)
    return nums


def stats_stage(input: Any, output: Any, params: Any) -> dict[str, Number]:
    """Rule stats: results/stats/."""
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    plan = AnalysisPlan.load(input.analysis, input.arms, params.config)
    return write_numbers(Path(input.rows).parent, output.numbers, output.provenance,
                         output.macros, plan, Scopes.from_config(params.scopes))
