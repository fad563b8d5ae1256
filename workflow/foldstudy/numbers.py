"""Every reported number, from rows.csv and checks.csv alone (DESIGN §6, §8).

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

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import analysis as A
from . import columns, stats
from .analysis import Analysis
from .evidence import read_csv

Number = float | int


class EvidenceError(ValueError):
    """An evidence package that cannot be read as the contract says: names the column."""


# ------------------------------------------------------------------------- evidence

def _check_columns(df: pd.DataFrame, required: list[str], name: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise EvidenceError(f"{name}: missing column(s) {', '.join(missing)} "
                            f"(the contract, foldstudy/columns.py, requires them)")
    for c in df.columns:
        col = df[c]
        if c in columns.NUMERIC and not pd.api.types.is_numeric_dtype(col):
            num = pd.to_numeric(col, errors="coerce")
            bad = col[num.isna() & col.notna()]
            if len(bad):
                raise EvidenceError(f"{name}: column {c} is malformed: {bad.iloc[0]!r} on line "
                                    f"{bad.index[0] + 2} is not a number")
        if c in columns.BOOLEAN and col.isna().any():
            raw = pd.read_csv(df.attrs["path"], usecols=[c], dtype=str,
                              keep_default_na=False)[c]
            bad = raw[~raw.isin(["true", "false", ""])]
            if len(bad):
                raise EvidenceError(f"{name}: column {c} is malformed: {bad.iloc[0]!r} on line "
                                    f"{bad.index[0] + 2} is not true/false")
            if c in columns.BOOLEAN_REQUIRED:
                line = int(col.isna().to_numpy().argmax()) + 2
                raise EvidenceError(f"{name}: column {c} is empty on line {line}; "
                                    "it must be true or false")


def read_artifact(path: Path, required: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise EvidenceError(f"{path}: no such evidence file")
    try:
        df = read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
        raise EvidenceError(f"{path.name}: not a readable CSV ({e})") from e
    df.attrs["path"] = str(path)
    _check_columns(df, required, path.name)
    return df


def load_evidence(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rows.csv and checks.csv of an evidence package, checked against the contract.

    folds.csv and manifest.json are optional; when present, folds.csv must carry its
    columns and every artifact must match the manifest's sha256 and row count (the lead's
    provenance.check_manifest, reused so both stages agree on what "matches" means).
    Fails with an EvidenceError naming the file and column.
    """
    d = Path(directory)
    rows = read_artifact(d / "rows.csv", columns.ROWS_REQUIRED)
    checks = read_artifact(d / "checks.csv", columns.CHECKS_REQUIRED)
    bad = rows[rows["valid"] & rows["recall"].isna()]
    if len(bad):
        raise EvidenceError(f"rows.csv: column recall is empty on valid row "
                            f"{bad['row_id'].iloc[0]!r}")
    off = rows[(rows["recall"] - rows["n_correct"] / rows["n_graded"]).abs() > 1e-5]
    if len(off):
        r = off.iloc[0]
        raise EvidenceError(f"rows.csv: column recall is malformed: {r['recall']} on row "
                            f"{r['row_id']!r} is not n_correct / n_graded "
                            f"({r['n_correct']}/{r['n_graded']})")
    for name, required in (("folds.csv", columns.FOLDS_REQUIRED),
                           ("probes.csv", columns.PROBES_REQUIRED)):
        if (d / name).is_file():
            head = pd.read_csv(d / name, nrows=0)
            _check_columns(head, required, name)
    if (d / "manifest.json").is_file():
        from .provenance import check_manifest

        manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        files = {n: d / n for n in manifest.get("artifacts", {})}
        problems = check_manifest(manifest, files)
        if problems:
            raise EvidenceError("manifest.json: " + "; ".join(str(p) for p in problems))
    return rows, checks


def load_probes(path: str | Path) -> pd.DataFrame | None:
    """Probe verdicts: a package's probes.csv or this run's summary.tsv; None if absent."""
    p = Path(path)
    if not p.is_file():
        return None
    return pd.read_csv(p, dtype=str, keep_default_na=False,
                       sep="\t" if p.suffix == ".tsv" else ",")


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


def _k(*parts: object) -> str:
    return "/".join(str(p) for p in parts)


def _put_mean_n(out: _Numbers, prefix: str, cell: str, s: dict[str, Any],
                rows: int | None = None) -> None:
    out.put(f"{prefix}.n[{cell}]", s["n"], rows=rows)
    if s["n"]:
        out.put(f"{prefix}.mean[{cell}]", s["mean"], rows=rows)
        if "rows_full" in s:
            out.put(f"{prefix}.rows_full[{cell}]", s["rows_full"], rows=rows)
        if "rows_ge_half" in s:
            out.put(f"{prefix}.rows_ge_half[{cell}]", s["rows_ge_half"], rows=rows)


def _put_fisher(out: _Numbers, key: str, f: stats.Fisher | None, rows: int) -> None:
    if f is None:
        return
    for name, val in (("a", f.a), ("n1", f.n1), ("b", f.b), ("n2", f.n2), ("p", f.p)):
        out.put(f"{key}.{name}", val, rows=rows)


def _put_paired(out: _Numbers, key: str, cell: str, pr: pd.DataFrame, an: Analysis,
                rows: int) -> None:
    """Paired difference first - second with its seeded within-model bootstrap interval."""
    b = stats.paired_bootstrap(pr.iloc[:, -2].to_numpy(), pr.iloc[:, -1].to_numpy(),
                               pr["model"].to_numpy(), an.resamples, an.seed, an.confidence)
    if b is None:
        return
    out.put(f"{key}.diff[{cell}]", b.diff, rows=rows)
    out.put(f"{key}.ci_low[{cell}]", b.low, rows=rows)
    out.put(f"{key}.ci_high[{cell}]", b.high, rows=rows)
    out.put(f"{key}.n_pairs[{cell}]", b.n_pairs, rows=rows)
    out.put(f"{key}.n_models[{cell}]", b.n_models, rows=rows)


def _rows_recalled(g: pd.DataFrame, an: Analysis) -> tuple[int, int]:
    r = g["recall"].dropna()
    return int((r >= an.row_recalled).sum()), int(len(r))


def compute_numbers(rows: pd.DataFrame, checks: pd.DataFrame,
                    analysis: Analysis | None = None) -> dict[str, Number]:
    """Every reported number, keyed (module docstring), from rows and checks alone."""
    return compute_with_provenance(rows, checks, analysis)[0]


def compute_with_provenance(rows: pd.DataFrame, checks: pd.DataFrame,
                            analysis: Analysis | None = None
                            ) -> tuple[dict[str, Number], dict[str, Any]]:
    an = analysis or Analysis.load()
    out = _Numbers()
    v = A.valid_rows(rows)
    nv = len(v)
    out.put("rows.n", len(rows), rows=len(rows))
    out.put("rows.n_valid", nv)
    out.put("rows.n_invalid", len(rows) - nv)
    out.put("rows.catchup_fired", int(rows["catchup_fired"].fillna(False).astype(bool).sum()))
    out.put("checks.n", len(checks), source="checks.csv", rows=len(checks))

    # ICC(1) of the binary checks grouped by row, valid rows of the primary scenario.
    prim = v[v["scenario"] == an.primary_scenario]
    c = checks[checks["row_id"].isin(prim["row_id"])]
    icc = stats.icc1(c["row_id"], c["correct"].astype(float))
    if icc is not None:
        for name in ("value", "k", "n_rows", "n_checks", "design_effect",
                     "effective_n_per_row"):
            out.put(f"icc.{name}", getattr(icc, name), source="rows.csv+checks.csv",
                    rows=icc.n_rows)

    # Headings that arrived vs recall, over all valid rows with the count recorded.
    h = v[["headings_carried", "recall"]].dropna()
    pr = stats.pearson(h["headings_carried"], h["recall"])
    if pr is not None:
        out.put("headings.r", pr.r, rows=pr.n)
        out.put("headings.p", pr.p, rows=pr.n)
        out.put("headings.n_rows", pr.n, rows=pr.n)
    for _, r in A.headings_vs_recall(v, an).iterrows():
        _put_mean_n(out, "headings", str(r["headings"]),
                    {"n": r["rows"], "mean": r["mean"], "rows_ge_half": r["rows_ge_half"]})
    for _, r in A.headings_by_arm(v, an).iterrows():
        out.put(f"headings.rows[{r['arm']}]", r["rows"])
        out.put(f"headings.rows_five[{r['arm']}]", r["h5"])
        out.put(f"headings.rows_zero[{r['arm']}]", r["h0"])

    # Fill vs recall across models: each model's mean j fill against its mean j recall.
    j = prim[prim["arm"] == an.undivided]
    per_model = j.groupby("model").agg(fill=("fill", "mean"), recall=("recall", "mean"))
    per_model = per_model.dropna()
    fr = stats.pearson(per_model["fill"], per_model["recall"])
    if fr is not None:
        out.put("fill.r", fr.r, rows=len(j))
        out.put("fill.p", fr.p, rows=len(j))
        out.put("fill.n_models", fr.n, rows=len(j))

    # Recall per (sweep, model, arm) with denominators (recall-by-model-arm.csv).
    for (sweep, model, arm), g in v.groupby(["sweep", "model", "arm"], sort=True):
        _put_mean_n(out, "recall", _k(sweep, model, arm), A.cell_summary(g, an.row_recalled))
    for _, r in A.recall_cells(v, an).iterrows():
        _put_mean_n(out, "table1", _k(r["scenario"], r["model"], r["arm"]), r.to_dict())

    # The ladder (paper §4.3): rung means, paired effects, Fisher on full-recall rows.
    lr = A.ladder_rows(v, an)
    lad = A.ladder(v, an)
    for _, r in lad.iterrows():
        _put_mean_n(out, "ladder", r["arm"], r.to_dict(), rows=len(lr))
        # The rung's own interval: the same within-model bootstrap, against zero.
        g = lr[lr["arm"] == r["arm"]].dropna(subset=["recall"])
        b = stats.paired_bootstrap(g["recall"].to_numpy(), np.zeros(len(g)),
                                   g["model"].to_numpy(), an.resamples, an.seed,
                                   an.confidence)
        if b is not None:
            out.put(f"ladder.ci_low[{r['arm']}]", b.low, rows=len(lr))
            out.put(f"ladder.ci_high[{r['arm']}]", b.high, rows=len(lr))
    for prev, arm in zip(an.ladder, an.ladder[1:], strict=False):
        _put_paired(out, "ladder.effect", _k(arm, prev), A.pairs(lr, arm, prev), an, len(lr))
    for i, a in enumerate(an.ladder):
        for b in an.ladder[i + 1:]:
            ga, gb = lr[lr["arm"] == a]["recall"], lr[lr["arm"] == b]["recall"]
            f = stats.fisher(int((ga >= 1).sum()), len(ga), int((gb >= 1).sum()), len(gb))
            _put_fisher(out, f"ladder.fisher_full[{_k(a, b)}]", f, len(lr))

    # Equivalence (paper §4.1): paired difference, interval and TOST at the margin.
    a, b = an.equivalence
    pe = A.pairs(prim, a, b)
    cell = _k(a, b)
    _put_paired(out, "equivalence", cell, pe, an, len(pe) * 2)
    t = stats.tost_paired(pe["recall_first"].to_numpy(), pe["recall_second"].to_numpy(),
                          an.equivalence_margin)
    if t is not None:
        out.put(f"equivalence.tost_p[{cell}]", t.p)
        out.put(f"equivalence.equivalent[{cell}]", t.p < an.alpha)
        out.put(f"equivalence.margin[{cell}]", t.margin)

    # Iteration (paper §4.4).
    for _, r in A.iteration(v, an).iterrows():
        for key in ("single", "distributed"):
            _put_mean_n(out, "iteration", _k(key, r["arm"]),
                        {"n": r[f"{key}_n"], "mean": r[f"{key}_mean"]})

    # Capacity (paper §4.5) and its Fisher contrasts on rows recalled.
    cap = A.capacity(v, an)
    cr = A.capacity_rows(v, an)
    for _, r in cap.iterrows():
        arm = r["arm"]
        for col in ("n", "rows_recalled", "folds_clipped", "folds", "nonconforming_folds"):
            out.put(f"capacity.{col}[{arm}]", r[col], rows=len(cr))
        for col in ("mean", "carried_chars", "declared_ceiling_chars"):
            out.put(f"capacity.{col}[{arm}]", r[col], rows=len(cr))
    ca, cb = an.ceiling_pair
    both = set(cr[cr["arm"] == ca]["model"]) & set(cr[cr["arm"] == cb]["model"])
    ra = _rows_recalled(cr[(cr["arm"] == ca) & cr["model"].isin(both)], an)
    rb = _rows_recalled(cr[(cr["arm"] == cb) & cr["model"].isin(both)], an)
    _put_fisher(out, f"capacity.fisher_recalled[{_k(ca, cb)}]",
                stats.fisher(ra[0], ra[1], rb[0], rb[1]), len(cr))
    rf = _rows_recalled(cr[cr["arm"].isin(an.representation_failing)], an)
    rh = _rows_recalled(cr[cr["arm"].isin(an.representation_healthy)], an)
    _put_fisher(out, "capacity.fisher_representation", stats.fisher(rf[0], rf[1], rh[0], rh[1]),
                len(cr))

    # Ceiling replication per model (paper §4.6).
    for _, r in A.ceiling_replication(v, an).iterrows():
        m = r["model"]
        for col, arm in (("a", ca), ("b", cb)):
            out.put(f"ceiling.recalled[{_k(m, arm)}]", r[f"{col}_recalled"])
            out.put(f"ceiling.n[{_k(m, arm)}]", r[f"{col}_n"])
            out.put(f"ceiling.fill[{_k(m, arm)}]", r[f"{col}_fill"])

    # The partition contrast across models (paper §4.7) and what follows from it.
    part = A.partition(v, an)
    for _, r in part.iterrows():
        m = r["model"]
        for col in ("j_n", "j_mean", "q_n", "q_mean", "gap", "j_fill", "j_carried_chars",
                    "j_rows_ge_half", "q_rows_ge_half", "failing", "rescued", "borderline"):
            out.put(f"partition.{col}[{m}]", r[col])
    if len(part):
        failing = part[part["failing"]]
        working = part[~part["failing"]]
        out.put("partition.n_models", len(part))
        out.put("partition.n_failing", len(failing))
        out.put("partition.n_rescued", int(failing["rescued"].sum()))
        out.put("partition.n_working", len(working))
        out.put("partition.n_borderline", int(part["borderline"].sum()))
        if len(working):
            out.put("partition.mean_gap_working", float(working["gap"].mean()))
            out.put("partition.min_gap_working", float(working["gap"].min()))
    for _, r in A.failure_modes(part).iterrows():
        out.put(f"failure_mode.models[{r['mode']}]", r["models"])
        out.put(f"failure_mode.rescued[{r['mode']}]", r["rescued"])
        if r["fills"]:
            out.put(f"failure_mode.fill_min[{r['mode']}]", min(r["fills"]))
            out.put(f"failure_mode.fill_max[{r['mode']}]", max(r["fills"]))
    for _, r in A.separation(part).iterrows():
        cl = r["classification"]
        out.put(f"separation.n_failing[{cl}]", r["n_failing"])
        out.put(f"separation.n_non_rescued[{cl}]", r["n_non_rescued"])
        out.put(f"separation.complete[{cl}]", r["complete"])
        if not np.isnan(r["margin"]):
            out.put(f"separation.margin[{cl}]", r["margin"])
        if r["complete"]:
            out.put(f"separation.weight[{cl}]",
                    stats.separation_weight(r["n_failing"], r["n_non_rescued"]))
    for _, r in A.depth(v, part, an).iterrows():
        _put_mean_n(out, "depth", _k(r["model"], r["arm"]), r.to_dict())
        out.put(f"depth.fill[{_k(r['model'], r['arm'])}]", r["fill"])

    # The carrier cross-tab (paper §4.10), from checks.
    cc = A.carrier_crosstab(v, checks, an)
    for _, r in cc.iterrows():
        for col in ("rows", "missed_rows", "missed_checks", "reverse_rows", "agree_rows"):
            out.put(f"carrier.{col}[{r['arm']}]", r[col], source="rows.csv+checks.csv")
    if len(cc):
        for col in ("rows", "missed_rows", "reverse_rows", "agree_rows"):
            out.put(f"carrier.{col}", int(cc[col].sum()), source="rows.csv+checks.csv")

    # Abstention vs fabrication among failing rows (paper §4.11).
    for _, r in A.abstention(v, an).iterrows():
        for col in ("failing_rows", "fabricates", "abstains", "stock_rows"):
            out.put(f"abstention.{col}[{r['arm']}]", r[col])

    # Instruments: finish reasons, parse failures, envelopes, prompt tokens.
    for _, r in A.finish_reasons(v, an).iterrows():
        for col in ("folds", "stop", "length", "other"):
            out.put(f"finish.{col}[{r['arm']}]", r[col])
        if r["rows_with_ceiling"]:
            out.put(f"finish.rows_with_ceiling[{r['arm']}]", r["rows_with_ceiling"])
            out.put(f"finish.rows_at_ceiling[{r['arm']}]", r["rows_at_ceiling"])
    for _, r in A.parse_failures(v, an).iterrows():
        for col in ("parse_failures", "schema_invalid_folds", "rate", "rows_with_failure",
                    "mean_with_failure", "rows_clean", "mean_clean"):
            out.put(f"parse.{col}[{r['arm']}]", r[col])
    pf = v["parse_failures"].fillna(0) > 0
    out.put("parse.rows_with_failure", int(pf.sum()))
    out.put("parse.mean_with_failure", A._mean(v.loc[pf, "recall"]))
    out.put("parse.mean_clean", A._mean(v.loc[~pf, "recall"]))
    env = v["json_envelope_carried"].fillna(False).astype(bool)
    out.put("envelope.rows_carried", int(env.sum()))
    out.put("envelope.rows_not_carried", int((~env).sum()))
    for (a, b), pt in A.token_pairs(v, an).items():
        _put_paired(out, "tokens.delta", _k(a, b), pt, an, len(pt) * 2)
    return out.values, {"inputs": {"rows.csv": len(rows), "checks.csv": len(checks)},
                        "sections": out.sources}


# ------------------------------------------------------------------------- LaTeX

_DIGITS = "Zero One Two Three Four Five Six Seven Eight Nine".split()


def macro_name(key: str) -> str:
    """A LaTeX command name (letters only) for a number key: icc.value -> \\fsIccValue."""
    words = re.split(r"[^A-Za-z0-9]+", key)
    out = []
    for w in words:
        w = re.sub(r"\d", lambda m: _DIGITS[int(m.group())], w)
        if w:
            out.append(w[0].upper() + w[1:])
    return "fs" + "".join(out)


def format_number(value: Number) -> str:
    if isinstance(value, int):
        return f"{value:,}".replace(",", "{,}")
    if value != 0 and abs(value) < 1e-3:
        mant, exp = f"{value:.1e}".split("e")
        return f"{mant}\\times 10^{{{int(exp)}}}"
    return f"{value:.3f}"


def latex_macros(numbers: dict[str, Number]) -> str:
    """One \\newcommand per number; keys whose letters collide get a letter suffix."""
    lines = ["% Generated from results/stats/numbers.json by rule stats; do not edit.",
             "% One command per key; the key is in the comment after each."]
    used: set[str] = set()
    for key in sorted(numbers):
        base = name = macro_name(key)
        n = 0
        while name in used:
            n, suffix = n + 1, ""
            i = n
            while i:
                i, r = divmod(i - 1, 26)
                suffix = chr(ord("A") + r) + suffix
            name = base + "X" + suffix
        used.add(name)
        lines.append(f"\\newcommand{{\\{name}}}{{\\ensuremath{{{format_number(numbers[key])}}}}}"
                     f" % {key}")
    return "\n".join(lines) + "\n"


def _write_json(obj: Any, path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                   encoding="utf-8")
    tmp.replace(p)


def write_numbers(evidence_dir: str | Path, numbers_out: str | Path, provenance_out: str | Path,
                  macros_out: str | Path, analysis_yaml: str | Path) -> dict[str, Number]:
    """Entry point of rule stats: evidence -> numbers.json, provenance, LaTeX macros."""
    rows, checks = load_evidence(evidence_dir)
    nums, prov = compute_with_provenance(rows, checks, Analysis.load(analysis_yaml))
    prov["evidence"] = str(evidence_dir)
    _write_json(nums, numbers_out)
    _write_json(prov, provenance_out)
    Path(macros_out).write_text(latex_macros(nums), encoding="utf-8")
    return nums
