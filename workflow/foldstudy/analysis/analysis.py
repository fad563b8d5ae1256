"""The paper's analyses (§4) as pure functions of the evidence: DataFrames in, DataFrames out.

Every table, figure and number is built from these functions, over the rows the one
validity rule (validity.py, recorded in rows.csv `valid`) admits; nothing here decides
validity again. Thresholds and arm roles come from resources/analysis.yaml through
`Analysis`, built once and passed in. A missing value is NaN/None here and is rendered
as an em dash with its reason, never as 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..evidence import columns
from ..io import load_yaml
from ..study.carriers.registry import carrier_of
from ..study.spec import is_index_arm, is_matched, load_schema, native_with_title
from . import stats

RESOURCES = Path(__file__).resolve().parents[3] / "resources"
DEFAULT_ANALYSIS = RESOURCES / "analysis.yaml"
DEFAULT_ARMS = RESOURCES / "arms.yaml"
BLOCK = ["sweep", "model", "repeat"]


@dataclass(frozen=True)
class Analysis:
    """The analysis plan of resources/analysis.yaml, frozen, with the arms' order and
    titles from resources/arms.yaml (the one place an arm is named)."""

    primary_scenario: str
    single_chunk_scenario: str
    failing_recall: float
    rescued_recall: float
    row_recalled: float
    failure_mode_fill_split: float
    # Paper §4.7's table: the highest fill it saw in the gist mode and the lowest in the
    # description mode (a decision card says "between the paper's modes" between them).
    failure_mode_paper_fills: tuple[float, float]
    at_ceiling_fill: float
    borderline_margin: float
    equivalence_margin: float
    resamples: int
    seed: int
    confidence: float
    alpha: float
    undivided: str
    divided: str
    ladder: tuple[str, ...]
    equivalence: tuple[str, str]
    capacity: tuple[str, ...]
    ceiling_pair: tuple[str, str]
    representation_failing: tuple[str, ...]
    representation_healthy: tuple[str, ...]
    iteration: tuple[str, ...]
    single_field_schema: tuple[str, ...]
    token_deltas: tuple[tuple[str, str], ...]
    # §4.3: the described arm and its undescribed twin, and the characters of each arm's
    # field descriptions (read from its schema file by `load`)
    described: tuple[str, str]
    description_chars: dict[str, int]
    arm_order: tuple[str, ...]
    arm_titles: dict[str, str]
    # The pairs of arms compared fact by fact within a block, as (a, b).
    compare_pairs: tuple[tuple[str, str], ...] = ()
    # The arms outside the matched comparison (spec.is_matched: index arms,
    # own arms with `match: false`), which no paper table, matched contrast or card
    # verdict reads, and each index arm's base arm (its card line's contrast).
    unmatched: frozenset[str] = frozenset()
    index_bases: dict[str, str] = field(default_factory=dict)
    # The arms a card reads against the best matched arm that ran (the native arm: the
    # provider's compaction), each with its line's source (carriers/base.py
    # `against_best`; decision.best_arm_contrasts)
    against_best: dict[str, str] = field(default_factory=dict)
    # The arms whose carry may be opaque (carriers/base.py `may_be_opaque`): evidence
    # refuses an opaque trace on any other (evidence/load.py)
    opaque_arms: frozenset[str] = frozenset()
    # The config's A/A copies (config sweeps.X.controls.aa): copy -> the arm it copies
    # (spec.aa_copies); each card reads a copy against its original on its A/A line
    aa: dict[str, str] = field(default_factory=dict)
    # The config's native arms with another arm's prompt (config sweeps.X.native_with):
    # `native@ARM` -> (the native arm, ARM) (spec.native_prompts); each card reads one
    # against the native arm and against ARM (decision.native_with_contrasts)
    native_with: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any], arm_table: dict[str, Any],
                  description_chars: dict[str, int] | None = None) -> Analysis:
        a, b = d["arms"], d["bootstrap"]
        return cls(
            primary_scenario=d["primary_scenario"],
            single_chunk_scenario=d["single_chunk_scenario"],
            failing_recall=float(d["failing_recall"]),
            rescued_recall=float(d["rescued_recall"]),
            row_recalled=float(d["row_recalled"]),
            failure_mode_fill_split=float(d["failure_mode_fill_split"]),
            failure_mode_paper_fills=(float(d["failure_mode_paper_fills"]["gist_up_to"]),
                                      float(d["failure_mode_paper_fills"]["description_from"])),
            at_ceiling_fill=float(d["at_ceiling_fill"]),
            borderline_margin=float(d["borderline_margin"]),
            equivalence_margin=float(d["equivalence_margin"]),
            resamples=int(b["resamples"]), seed=int(b["seed"]),
            confidence=float(b["confidence"]), alpha=float(d["alpha"]),
            undivided=a["undivided"], divided=a["divided"],
            ladder=tuple(a["ladder"]), equivalence=tuple(a["equivalence"]),
            capacity=tuple(a["capacity"]), ceiling_pair=tuple(a["ceiling_pair"]),
            representation_failing=tuple(a["representation"]["failing"]),
            representation_healthy=tuple(a["representation"]["healthy"]),
            iteration=tuple(a["iteration"]),
            single_field_schema=tuple(a["single_field_schema"]),
            token_deltas=tuple(tuple(p) for p in a["token_deltas"]),
            described=(a["described"][0], a["described"][1]),
            description_chars=dict(description_chars or {}),
            arm_order=tuple(arm_table["arms"]),
            arm_titles={k: str(v.get("title", "")) for k, v in arm_table["arms"].items()},
            compare_pairs=tuple((p[0], p[1]) for p in a.get("compare_pairs", [])),
            unmatched=frozenset(k for k, v in arm_table["arms"].items() if not is_matched(v)),
            index_bases={k: str(v["base"]) for k, v in arm_table["arms"].items()
                         if is_index_arm(v)},
            against_best={k: c.against_best for k, v in arm_table["arms"].items()
                          if (c := carrier_of(v)).against_best},
            opaque_arms=frozenset(k for k, v in arm_table["arms"].items()
                                  if carrier_of(v).may_be_opaque),
        )

    def with_unmatched(self, arms: Iterable[str]) -> Analysis:
        """This plan with more arms outside the matched comparison (the config's own
        arms with `match: false`, which resources/arms.yaml does not hold)."""
        return replace(self, unmatched=self.unmatched | frozenset(arms))

    @property
    def scenarios(self) -> tuple[str, str]:
        """The scenarios a row may name: the distributed one and the single-chunk one."""
        return (self.primary_scenario, self.single_chunk_scenario)

    @classmethod
    def load(cls, path: str | Path | None = None, arms: str | Path | None = None,
             config: dict[str, Any] | None = None) -> Analysis:
        """The plan from these files (a rule names the ones it read; tests use the
        checkout's own). config: the study config, whose own arms with `match: false`
        (its arms_file) join the arms outside the matched comparison."""
        from ..study.spec import aa_copies, arms_file_path, native_prompts, unmatched_own_arms

        arms_path = Path(arms or DEFAULT_ARMS)
        table = load_yaml(arms_path)
        an = cls.from_dict(load_yaml(path or DEFAULT_ANALYSIS), table,
                           schema_description_chars(table, arms_path.parent))
        own = unmatched_own_arms(arms_file_path(config)) if config else []
        an = an.with_unmatched(own) if own else an
        if not config:
            return an
        return an.with_copies(aa_copies(config)).with_native_prompts(
            native_prompts(config, table))

    @classmethod
    def of_params(cls, path: str | Path, arms: str | Path, params: Any) -> Analysis:
        """The plan a decision rule reads (decision, decide_look): these files, with the
        arms its params name outside the matched comparison: own arms with `match:
        false` (`unmatched`), A/A copies (`aa`) and native@ARM arms (`native_with`: id ->
        (the native arm, ARM))."""
        made = {str(a): (str(p[0]), str(p[1]))
                for a, p in (getattr(params, "native_with", {}) or {}).items()}
        return cls.load(path, arms).with_unmatched(
            getattr(params, "unmatched", ()) or ()).with_copies(
            dict(getattr(params, "aa", {}) or {})).with_native_prompts(made)

    def with_copies(self, copies: dict[str, str]) -> Analysis:
        """This plan with the config's A/A copies (copy -> the arm it copies; spec.aa_copies):
        outside the matched comparison, titled as copies of their originals."""
        if not copies:
            return self
        titles = {c: f"{self.arm_titles.get(a) or a} (A/A copy)" for c, a in copies.items()}
        return replace(self._with_derived(copies, titles), aa={**self.aa, **copies})

    def with_native_prompts(self, made: dict[str, tuple[str, str]]) -> Analysis:
        """This plan with the config's `native@ARM` arms (id -> (the native arm, ARM);
        spec.native_prompts): outside the matched comparison, titled for the prompt they
        send, opaque where their native arm may be."""
        if not made:
            return self
        titles = {a: native_with_title(arm) for a, (_, arm) in made.items()}
        derived = self._with_derived({a: native for a, (native, _) in made.items()}, titles)
        return replace(derived, native_with={**self.native_with, **made})

    def _with_derived(self, sources: dict[str, str], titles: dict[str, str]) -> Analysis:
        """This plan with arms the config derives from others (id -> the arm it derives
        from: an A/A copy, a native@ARM arm): outside the matched comparison, titled,
        ordered right after their source so tables and pages show them beside it, and
        opaque where their source may be."""
        order = [x for a in self.arm_order if a not in sources
                 for x in (a, *(d for d, src in sources.items() if src == a))]
        return replace(self.with_unmatched(sources), arm_titles={**self.arm_titles, **titles},
                       arm_order=tuple(dict.fromkeys([*order, *sources])),
                       opaque_arms=self.opaque_arms | {d for d, src in sources.items()
                                                       if src in self.opaque_arms})

    def arm_title(self, arm: str) -> str:
        return self.arm_titles.get(arm, "")


def schema_description_chars(arm_table: dict[str, Any], resources: Path) -> dict[str, int]:
    """Per arm with a schema, the characters of its field descriptions: what the schema
    says about its fields, which reaches the model only through `response_format`."""
    out = {}
    for arm, spec in arm_table["arms"].items():
        if spec.get("schema"):
            schema = load_schema(resources, spec["schema"])
            out[arm] = sum(len(str(f.get("description", "")))
                           for f in schema.get("properties", {}).values())
    return out


# ---------------------------------------------------------------------------- helpers

def valid_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows the one validity rule admitted (rows.csv `valid`), recall as an exact float.

    recall is n_correct / n_graded by contract (docs/design.md §8); the CSV keeps six significant
    digits, so a mean of printed recalls can land a hair under a threshold it meets
    exactly (0.4999998 against 0.5). The exact fraction is taken wherever the row has one.
    """
    v = rows[rows["valid"].astype(bool)].copy()
    recall = pd.to_numeric(v["recall"], errors="coerce")
    graded = pd.to_numeric(v["n_graded"], errors="coerce")
    exact = pd.to_numeric(v["n_correct"], errors="coerce") / graded.where(graded > 0)
    v["recall"] = exact.where(recall.notna() & exact.notna(), recall)
    return v


def mean(s: pd.Series) -> float:
    """Mean of the numeric values of s, NaN when it has none (never 0)."""
    s = pd.to_numeric(s, errors="coerce").dropna()
    return float(s.mean()) if len(s) else np.nan


def cell_summary(g: pd.DataFrame, recalled: float) -> dict[str, Any]:
    """Mean recall with its denominators: n, rows with recall 1, rows at/above `recalled`."""
    r = g["recall"].dropna()
    m = stats.mean_n(r)
    return {"n": m.n, "mean": np.nan if m.mean is None else m.mean,
            "rows_full": int((r >= 1.0).sum()), "rows_ge_half": int((r >= recalled).sum())}


def recall_by_model_arm(rows: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Recall per (sweep, model, arm) over valid rows, with denominators (docs/design.md §8): one
    line per sweep, never pooled across sweeps (paper §4.7).

    Rows are near-binary (paper §4), so a mean stands for a small count: n_valid,
    rows_full and rows_ge_half travel with every mean. The counts are cell_summary's,
    the one function numbers.json's recall keys read (row_recalled of analysis.yaml).
    """
    out = []
    for (sweep, model, arm), g in rows.groupby(["sweep", "model", "arm"], sort=True):
        v = valid_rows(g)
        s = cell_summary(v, an.row_recalled)
        out.append({
            "sweep": sweep, "model": model, "arm": arm,
            "n_valid": s["n"],
            "mean_recall": round(s["mean"], 6) if s["n"] else None,
            "rows_full": s["rows_full"],
            "rows_ge_half": s["rows_ge_half"],
            "n_rows": len(g),
            "n_invalid": int((~g["valid"]).sum()),
        })
    return pd.DataFrame(out, columns=columns.RECALL_TABLE)


def arm_sort_key(order: tuple[str, ...]):
    rank = {a: i for i, a in enumerate(order)}
    return lambda s: s.map(lambda a: rank.get(a, len(rank)))


def pairs(v: pd.DataFrame, first: str, second: str, value: str = "recall") -> pd.DataFrame:
    """Blocks (sweep, model, repeat) where both arms have a valid row: paired values.

    A contrast is paired within a sweep and never pooled across sweeps (paper §4.7):
    the block key holds the sweep, so a pair never spans two.
    """
    a = v.loc[v["arm"] == first, BLOCK + [value]].dropna()
    b = v.loc[v["arm"] == second, BLOCK + [value]].dropna()
    a = a.groupby(BLOCK, as_index=False)[value].mean()
    b = b.groupby(BLOCK, as_index=False)[value].mean()
    return a.merge(b, on=BLOCK, suffixes=("_first", "_second"))


# ---------------------------------------------------------------------------- tables

def recall_cells(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Recall per (scenario, model, arm) over the rows given (Table 1 form): the caller
    passes one scope group, so rows of two sweeps meet here only when the study config
    pools them (paper §4.7: never pooled across runs unless asked)."""
    out = []
    for (scenario, model, arm), g in v.groupby(["scenario", "model", "arm"], sort=True):
        out.append({"scenario": scenario, "model": model, "arm": arm,
                    **cell_summary(g, an.row_recalled)})
    return pd.DataFrame(out, columns=["scenario", "model", "arm", "n", "mean", "rows_full",
                                      "rows_ge_half"])


def ladder_rows(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Valid rows of the (sweep, model) cells of the primary scenario that ran every rung.

    A contrast has to come from one design (paper §4.3): j is read where q and m were
    measured, not over every sweep that happened to run j.
    """
    p = v[(v["scenario"] == an.primary_scenario) & v["arm"].isin(an.ladder)]
    arms_per_cell = p.groupby(["sweep", "model"])["arm"].nunique()
    cells = arms_per_cell[arms_per_cell == len(an.ladder)].index
    return p.set_index(["sweep", "model"]).loc[lambda d: d.index.isin(cells)].reset_index()


def ladder(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    lr = ladder_rows(v, an)
    out = []
    for i, arm in enumerate(an.ladder):
        row = {"arm": arm, **cell_summary(lr[lr["arm"] == arm], an.row_recalled),
               "previous": an.ladder[i - 1] if i else None}
        out.append(row)
    return pd.DataFrame(out)


def iteration(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Each arm with its facts in one chunk and distributed over folds (paper §4.4).

    Only models measured on the single-chunk scenario enter either column, so the two
    columns describe the same models.
    """
    sc = v[v["scenario"] == an.single_chunk_scenario]
    models = set(sc["model"])
    out = []
    for arm in an.iteration:
        row: dict[str, Any] = {"arm": arm}
        for key, scen in (("single", an.single_chunk_scenario),
                          ("distributed", an.primary_scenario)):
            g = v[(v["scenario"] == scen) & (v["arm"] == arm) & v["model"].isin(models)]
            s = cell_summary(g, an.row_recalled)
            row[f"{key}_n"], row[f"{key}_mean"] = s["n"], s["mean"]
        out.append(row)
    return pd.DataFrame(out)


def capacity_rows(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Rows of the (sweep, model) cells where a capacity manipulation (t or u) ran."""
    manip = [a for a in an.capacity if a not in an.ladder]  # t and u: the manipulations
    cells = v.loc[v["arm"].isin(manip), ["sweep", "model"]].drop_duplicates()
    return v[v["arm"].isin(an.capacity)].merge(cells, on=["sweep", "model"])


def capacity(v: pd.DataFrame, an: Analysis, every: pd.DataFrame | None = None
             ) -> pd.DataFrame:
    """j t m u: n, rows recalled, mean, carried chars, folds clipped (paper §4.5), over
    the valid rows; and the non-conforming folds over every row of the arm, valid or not
    (`every`: the scope's rows before the validity rule; default v), of `folds_all`.

    Paper §4.5: "j fails to produce a conforming fold on 4 of 60 folds (6.7%)": 60 is
    twelve rows of five folds, j's 11 valid rows and its catch-up row; "clipped on 17 of
    about 53 folds" is the valid rows'.
    """
    cr = capacity_rows(v, an)
    cells = cr[["sweep", "model"]].drop_duplicates()
    er = (every if every is not None else v).merge(cells, on=["sweep", "model"])
    out = []
    for arm in an.capacity:
        g, ge = cr[cr["arm"] == arm], er[er["arm"] == arm]
        s = cell_summary(g, an.row_recalled)
        bad = ge["parse_failures"].fillna(0)
        if "schema_invalid_folds" in ge:
            bad = bad + ge["schema_invalid_folds"].fillna(0)
        out.append({
            "arm": arm, "n": s["n"], "rows_recalled": s["rows_ge_half"], "mean": s["mean"],
            "declared_ceiling_chars": mean(g["declared_ceiling_chars"]),
            "carried_chars": mean(g["carried_chars"]),
            "folds_clipped": int(g["folds_clipped"].sum()), "folds": int(g["folds"].sum()),
            "nonconforming_folds": int(bad.sum()), "folds_all": int(ge["folds"].sum()),
            "rows_all": int(len(ge)),
        })
    return pd.DataFrame(out)


def ceiling_replication(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Per model, the undivided arm at its ceiling against the halved ceiling (paper §4.6:
    "Repeating the ceiling manipulation on a second model").

    Reads the rows of one scope group: the paper's pools its anchor corpus (j only) with
    the ceiling sweep (j and t), so a model's j rows are every j row of the group.
    """
    a, b = an.ceiling_pair
    g = v[v["arm"].isin([a, b])]
    out = []
    for model, gm in g.groupby("model", sort=True):
        ga, gb = gm[gm["arm"] == a], gm[gm["arm"] == b]
        if ga.empty or gb.empty:
            continue
        sa, sb = cell_summary(ga, an.row_recalled), cell_summary(gb, an.row_recalled)
        out.append({"model": model, "a_recalled": sa["rows_ge_half"], "a_n": sa["n"],
                    "a_mean": sa["mean"], "b_recalled": sb["rows_ge_half"], "b_n": sb["n"],
                    "b_mean": sb["mean"], "a_fill": mean(ga["fill"]),
                    "b_fill": mean(gb["fill"])})
    return pd.DataFrame(out, columns=["model", "a_recalled", "a_n", "a_mean", "b_recalled",
                                      "b_n", "b_mean", "a_fill", "b_fill"])


def partition(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """The capacity-matched contrast per model, paired within one sweep (paper §4.7:
    "A model's j and q means come from the same run, never pooled across runs").

    One row per (sweep, model) of the rows given that ran both arms; the caller passes
    the partition scope (the study config names its sweeps and models), so a depth
    re-run in another sweep never replaces a model's row. Failing / rescued / failure
    mode / borderline follow resources/analysis.yaml.
    """
    j, q = an.undivided, an.divided
    p = v[(v["scenario"] == an.primary_scenario) & v["arm"].isin([j, q])]
    out = []
    for (sweep, model), gs in p.groupby(["sweep", "model"], sort=True):
        gj, gq = gs[gs["arm"] == j], gs[gs["arm"] == q]
        if not gj["recall"].notna().any() or not gq["recall"].notna().any():
            continue
        sj, sq = cell_summary(gj, an.row_recalled), cell_summary(gq, an.row_recalled)
        fill = mean(gj["fill"])
        failing = sj["mean"] < an.failing_recall
        mode = failure_mode(failing, fill, an)
        out.append({
            "model": model, "sweep": sweep,
            "j_n": sj["n"], "j_mean": sj["mean"], "j_rows_ge_half": sj["rows_ge_half"],
            "q_n": sq["n"], "q_mean": sq["mean"], "q_rows_ge_half": sq["rows_ge_half"],
            "gap": sq["mean"] - sj["mean"], "j_fill": fill,
            "j_carried_chars": mean(gj["carried_chars"]), "q_fill": mean(gq["fill"]),
            "failing": bool(failing),
            "rescued": bool(failing and sq["mean"] >= an.rescued_recall),
            "mode": mode,
            "borderline": bool(abs(sj["mean"] - an.failing_recall) <= an.borderline_margin),
        })
    cols = ["model", "sweep", "j_n", "j_mean", "j_rows_ge_half", "q_n", "q_mean",
            "q_rows_ge_half", "gap", "j_fill", "j_carried_chars", "q_fill", "failing",
            "rescued", "mode", "borderline"]
    df = pd.DataFrame(out, columns=cols).astype({"failing": bool, "rescued": bool,
                                                 "borderline": bool})
    return df.sort_values(["j_mean", "model"], kind="stable").reset_index(drop=True)


def failure_mode(failing: bool, fill: float, an: Analysis) -> str:
    """partition.csv's `mode` of a model: healthy where its undivided arm does not fail,
    else by its fill against failure_mode_fill_split (paper §4.7: "fills the slot with
    description" at or above, "writes a short gist instead" below)."""
    if not failing:
        return "healthy"
    if np.isnan(fill):
        return "unknown"
    return "over_writing" if fill >= an.failure_mode_fill_split else "under_writing"


def failure_modes(part: pd.DataFrame) -> pd.DataFrame:
    """Failing models by failure mode: their fills and how many partitioning rescued."""
    f = part[part["failing"]]
    out = []
    for mode in ("over_writing", "under_writing", "unknown"):
        g = f[f["mode"] == mode].sort_values("j_fill")
        if mode == "unknown" and g.empty:
            continue
        out.append({"mode": mode, "fills": list(g["j_fill"]), "models": int(len(g)),
                    "rescued": int(g["rescued"].sum()), "model_names": list(g["model"])})
    return pd.DataFrame(out, columns=["mode", "fills", "models", "rescued", "model_names"])


def separation(part: pd.DataFrame) -> pd.DataFrame:
    """Do rescued and non-rescued failing models separate by j fill, with and without
    the borderline models (paper §4.7)? margin = lowest rescued fill minus highest
    non-rescued fill; complete when it is positive."""
    out = []
    for label, sel in (("all", part["failing"]),
                       ("excluding_borderline", part["failing"] & ~part["borderline"])):
        f = part[sel & part["j_fill"].notna()]
        res = sorted(f.loc[f["rescued"], "j_fill"])
        non = sorted(f.loc[~f["rescued"], "j_fill"])
        margin = (min(res) - max(non)) if res and non else np.nan
        out.append({"classification": label, "rescued_fills": res, "non_rescued_fills": non,
                    "n_failing": len(f), "n_non_rescued": len(non), "margin": margin,
                    "complete": bool(margin > 0) if not np.isnan(margin) else False})
    return pd.DataFrame(out)


def headings_distribution(h: pd.Series) -> str:
    """'0 on 10 rows, 5 on 2' — how many fixed headings arrived, row by row."""
    counts = h.dropna().astype(int).value_counts().sort_index()
    if len(counts) == 1:
        return f"{counts.index[0]} on all {int(counts.iloc[0])}"
    parts = [f"{k} on {int(c)}" for k, c in counts.items()]
    return ", ".join([parts[0] + " rows", *parts[1:]])  # the paper's §4.7 depth table


def fill_by_model(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Per model, the undivided arm's mean fill and mean recall over the rows given: the
    points of the fill-vs-recall correlation (paper §4.6).

    Paper §4.6: "On the first seven models we measured, the fraction of its declared
    ceiling a model chose to fill was strongly inversely associated with recall
    (r = -0.89) ... Extended to twenty-five measured models it does not hold: r = -0.23".
    A measured model is one with valid undivided rows of the primary scenario whose fill
    was measured; it need not have run the divided arm, which is why the paper's 25 are
    more than the partition's 20. The caller passes the `fill` scope: where it pools
    sweeps, a model is still one point.
    """
    j = v[(v["scenario"] == an.primary_scenario) & (v["arm"] == an.undivided)]
    j = j[pd.to_numeric(j["fill"], errors="coerce").notna() & j["recall"].notna()]
    out = [{"model": m, "sweeps": ",".join(sorted(g["sweep"].unique())), "n": len(g),
            "j_fill": mean(g["fill"]), "j_mean": mean(g["recall"])}
           for m, g in j.groupby("model", sort=True)]
    return pd.DataFrame(out, columns=["model", "sweeps", "n", "j_fill", "j_mean"])


def fill_table(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Per (model, arm) with a declared ceiling, over the rows given pooled across the
    model's sweeps: rows, mean carried chars, mean fill, mean recall; fullest first.

    Paper §4.6: "there are at least two ways to lose the facts, and they sit at opposite
    ends of the fill scale" (p 9 rows 94%; qwen3.6-35b-a3b 28 rows 8,501 chars 89%;
    deepseek-v4-pro 4 rows 49%; granite-4.1-8b 16 rows 3,238 34%; ling-2.6-flash 16 rows
    621 6%). The table's row counts pool each model's sweeps (granite's 16 = its 4-row
    partition cell + 12 depth rows), so the caller passes the `fill_table` scope.
    """
    g = v[pd.to_numeric(v["declared_ceiling_chars"], errors="coerce") > 0]
    out = []
    for (model, arm), gm in g.groupby(["model", "arm"], sort=True):
        s = cell_summary(gm, an.row_recalled)
        out.append({"model": model, "arm": arm, "sweeps": "+".join(sorted(gm["sweep"].unique())),
                    "rows": s["n"], "carried_chars": mean(gm["carried_chars"]),
                    "declared_ceiling_chars": mean(gm["declared_ceiling_chars"]),
                    "fill": mean(gm["fill"]), "mean": s["mean"]})
    df = pd.DataFrame(out, columns=FILL_TABLE_COLUMNS)
    return df.sort_values("fill", ascending=False, kind="stable").reset_index(drop=True)


FILL_TABLE_COLUMNS = ["model", "arm", "sweeps", "rows", "carried_chars",
                      "declared_ceiling_chars", "fill", "mean"]


def partition_class(r: dict[str, Any] | pd.Series) -> str:
    """works / rescued / not rescued, with (borderline): how a partition row reads."""
    if not r["failing"]:
        return "works"
    return ("rescued" if r["rescued"] else "not rescued") + (" (borderline)"
                                                            if r["borderline"] else "")


def depth(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Both arms in full of every model in the rows given (paper §4.7: "The negative half
    was re-run at three times the depth"), with the class its own rows give it.

    The caller passes the depth scope: the paper's names the depth sweep, whose models
    are the ones re-run, so this table is its own and never replaces a partition row.
    """
    part = partition(v, an)
    out = []
    for _, pm in part.iterrows():
        g = v[(v["sweep"] == pm["sweep"]) & (v["model"] == pm["model"])]
        for arm in (an.undivided, an.divided):
            ga = g[g["arm"] == arm]
            s = cell_summary(ga, an.row_recalled)
            out.append({"model": pm["model"], "sweep": pm["sweep"], "arm": arm, "n": s["n"],
                        "mean": s["mean"], "rows_ge_half": s["rows_ge_half"],
                        "fill": mean(ga["fill"]),
                        "headings": headings_distribution(ga["headings_carried"]),
                        "class": partition_class(pm)})
    return pd.DataFrame(out, columns=["model", "sweep", "arm", "n", "mean", "rows_ge_half",
                                      "fill", "headings", "class"])


def headings_within_model(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Per model whose undivided-arm rows differ in headings carried: recall by headings
    (paper §4.7: granite's "14 rows that carried no headings average 0.194, the 2 that
    carried five average 0.643")."""
    g = v[(v["arm"] == an.undivided) & v["headings_carried"].notna()]
    out = []
    for model, gm in g.groupby("model", sort=True):
        h = gm["headings_carried"].astype(int)
        if h.nunique() < 2:
            continue
        for k, gk in gm.groupby(h, sort=True):
            s = cell_summary(gk, an.row_recalled)
            out.append({"model": model, "headings": int(k), "n": s["n"], "mean": s["mean"],
                        "rows_ge_half": s["rows_ge_half"]})
    return pd.DataFrame(out, columns=["model", "headings", "n", "mean", "rows_ge_half"])


def carried_chars_pairs(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Carried chars of the divided against the undivided arm, paired within block (paper
    §8: "with 45% less text carried")."""
    return pairs(v, an.divided, an.undivided, "carried_chars")


def grader_agreement(v: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame | None:
    """Per valid row: does the label-bound count equal the count of graded values found
    anywhere in the answer as a whole token (paper §4.4: "the label-bound and presence
    counts agree on 619 of 620 valid distributed rows")? None when rows.csv has no
    answer text (an optional column)."""
    if "answer" not in v.columns:
        return None
    from ..grade.grader import has_whole_token  # the grader's own boundary rule

    answers = v.set_index("row_id")["answer"].fillna("").astype(str)
    if not answers.str.strip().any():
        return None  # the column is there but no answer text was kept
    c = checks[checks["row_id"].isin(answers.index)]
    present = [has_whole_token(str(e), answers[r]) for r, e in
               zip(c["row_id"], c["expected"], strict=True)]
    per = pd.DataFrame({"row_id": c["row_id"].to_numpy(), "present": present,
                        "correct": c["correct"].astype(bool).to_numpy()})
    per = per.groupby("row_id", as_index=False)[["present", "correct"]].sum()
    per["agree"] = per["present"] == per["correct"]
    return per


def headings_vs_recall(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Recall by headings that arrived, within the single-field-schema arms (paper §4.8)."""
    g = v[v["arm"].isin(an.single_field_schema) & v["headings_carried"].notna()]
    out = []
    for h in range(6):
        s = cell_summary(g[g["headings_carried"].astype(int) == h], an.row_recalled)
        out.append({"headings": h, "rows": s["n"], "mean": s["mean"],
                    "rows_ge_half": s["rows_ge_half"]})
    return pd.DataFrame(out)


def headings_by_arm(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Rows per arm by headings carried: a five-field schema guarantees five."""
    g = v[v["headings_carried"].notna()]
    out = []
    for arm, ga in g.groupby("arm"):
        h = ga["headings_carried"].astype(int)
        out.append({"arm": arm, "rows": int(len(ga)),
                    **{f"h{i}": int((h == i).sum()) for i in range(6)},
                    "mean": mean(ga["recall"])})
    df = pd.DataFrame(out, columns=["arm", "rows", *[f"h{i}" for i in range(6)], "mean"])
    return df.sort_values("arm", key=arm_sort_key(an.arm_order)).reset_index(drop=True)


def carrier_recorded(v: pd.DataFrame) -> pd.DataFrame:
    """The rows whose carrier was recorded (carrier_present not empty): the only rows the
    cross-tab can read. Paper §4.10: "Over 215 valid rows the two agree on 171", of its
    620; a package leaves carrier_present and in_carrier empty on the others (docs/design.md §8)."""
    return v[pd.to_numeric(v["carrier_present"], errors="coerce").notna()]


def carrier_crosstab(v: pd.DataFrame, checks: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Per arm, over the rows whose carrier was recorded: rows where the carrier held a
    graded value and the answer missed it, and the reverse (the answer right about a
    value the carrier lacked; the loader refuses such a check, so 0), paper §4.10: "All
    44 disagreements run the same way ... There is not a single row in which the answer
    was right about a fact the carrier did not contain"."""
    c = carrier_checks(v, checks)
    per_row = c[["row_id", "arm", "missed", "beyond"]].groupby(
        ["row_id", "arm"], as_index=False)[["missed", "beyond"]].sum()
    out = []
    for arm, g in per_row.groupby("arm"):
        out.append({"arm": arm, "rows": int(len(g)),
                    "missed": int((g["missed"] > 0).sum()),
                    "missed_checks": int(g["missed"].sum()),
                    "answer_beyond_carrier": int((g["beyond"] > 0).sum()),
                    "agree": int(((g["missed"] == 0) & (g["beyond"] == 0)).sum())})
    df = pd.DataFrame(out, columns=CARRIER_COLUMNS)
    return df.sort_values("arm", key=arm_sort_key(an.arm_order)).reset_index(drop=True)


def carrier_checks(v: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame:
    """The checks of the rows whose carrier was recorded, in file order, each with its
    row's arm and two flags: `missed` (the carrier held the value, the answer missed it)
    and `beyond` (the answer right about a value the carrier lacked)."""
    rec = carrier_recorded(v)
    c = checks[checks["row_id"].isin(rec["row_id"])]
    c = c.merge(rec[["row_id", "arm"]], on="row_id")
    c_in = c["in_carrier"].fillna(False).astype(bool)
    c_ok = c["correct"].astype(bool)
    return c.assign(missed=c_in & ~c_ok, beyond=c_ok & ~c_in)


# carrier_crosstab's columns: each is also a carrier.* number, per arm and summed.
CARRIER_COLUMNS = ["arm", "rows", "missed", "missed_checks", "answer_beyond_carrier", "agree"]


def abstention(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Failing rows by whether the answer abstains anywhere or fabricates silently, and
    the same on the answer's first 400 characters (paper §4.11: "Classifying every
    failing row (recall < 0.5) by whether its answer contains any abstention marker at
    all"; "The counts above are likewise computed on that prefix"). The prefix columns
    are NaN for a package without rows.csv's abstained_prefix400."""
    f = failing_rows(v, an)
    out = []
    for arm, g in f.groupby("arm"):
        ab = g["abstained"].fillna(False).astype(bool)
        stock = (g["n_stock_signature"] > 0) if "n_stock_signature" in g else None
        rec = {"arm": arm, "failing_rows": int(len(g)),
               "fabricates": int((~ab).sum()), "abstains": int(ab.sum()),
               "stock_rows": int(stock.sum()) if stock is not None else np.nan,
               "fabricates_prefix400": np.nan, "abstains_prefix400": np.nan}
        if "abstained_prefix400" in g and g["abstained_prefix400"].notna().all():
            ap = g["abstained_prefix400"].astype(bool)
            rec.update(fabricates_prefix400=int((~ap).sum()), abstains_prefix400=int(ap.sum()))
        out.append(rec)
    df = pd.DataFrame(out, columns=ABSTENTION_COLUMNS)
    return df.sort_values("arm", key=arm_sort_key(an.arm_order)).reset_index(drop=True)


def failing_rows(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """The failing rows of these (valid) rows: recall below the failing threshold (paper
    §4.11: "Classifying every failing row (recall < 0.5)")."""
    return v[v["recall"] < an.failing_recall]


# abstention's columns: each but the arm is also an abstention.* number per arm.
ABSTENTION_COLUMNS = ["arm", "failing_rows", "fabricates", "abstains", "stock_rows",
                      "fabricates_prefix400", "abstains_prefix400"]


def finish_reasons(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Fold finish reasons per arm: a ceiling is a target if folds stop, a bound if cut."""
    out = []
    for arm, g in v.groupby("arm"):
        folds = int(g["folds"].sum())
        stop, length = int(g["finish_stop"].sum()), int(g["finish_length"].sum())
        fill = pd.to_numeric(g["fill"], errors="coerce")
        out.append({"arm": arm, "rows": int(len(g)), "folds": folds, "stop": stop,
                    "length": length, "other": folds - stop - length,
                    "rows_with_ceiling": int(fill.notna().sum()),
                    "rows_at_ceiling": int((fill >= an.at_ceiling_fill).sum())})
    df = pd.DataFrame(out, columns=["arm", "rows", "folds", "stop", "length", "other",
                                    "rows_with_ceiling", "rows_at_ceiling"])
    return df.sort_values("arm", key=arm_sort_key(an.arm_order)).reset_index(drop=True)


def parse_failures(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Parse failures stay valid and in the means (paper §6): rates, and the recall of
    rows that carry one against clean rows of the same arm."""
    out = []
    for arm, g in v.groupby("arm"):
        pf = g["parse_failures"].fillna(0) > 0
        folds = int(g["folds"].sum())
        inval = int(g["schema_invalid_folds"].sum()) if "schema_invalid_folds" in g else 0
        out.append({"arm": arm, "rows": int(len(g)), "folds": folds,
                    "parse_failures": int(g["parse_failures"].sum()),
                    "schema_invalid_folds": inval,
                    "rate": (g["parse_failures"].sum() / folds) if folds else np.nan,
                    "rows_with_failure": int(pf.sum()),
                    "mean_with_failure": mean(g.loc[pf, "recall"]),
                    "rows_clean": int((~pf).sum()), "mean_clean": mean(g.loc[~pf, "recall"])})
    df = pd.DataFrame(out, columns=["arm", "rows", "folds", "parse_failures",
                                    "schema_invalid_folds", "rate", "rows_with_failure",
                                    "mean_with_failure", "rows_clean", "mean_clean"])
    return df.sort_values("arm", key=arm_sort_key(an.arm_order)).reset_index(drop=True)


def parse_line(rows: pd.DataFrame, an: Analysis, arms: tuple[str, ...] | None = None,
               label: str | None = None) -> dict[str, Any] | None:
    """Parse failures over these arms (None: every arm), every row valid or not: rows with
    a failure (valid or not), the valid ones and their mean, the valid clean rows and
    theirs; `arm` is the line's label (the arms joined by '+', or `label`). None when no
    row is of those arms.

    Paper §6: "of the 23 single-field-schema rows carrying a parse failure, 18 are valid
    ... they average 0.560 recall against 0.399 for the 175 clean rows of the same arms"
    (arms: an.single_field_schema), and "Over all arms the counts are 63 rows carrying a
    parse failure, 57 valid, averaging 0.476 against 0.553 for the 563 clean rows"
    (every arm): both count invalid rows among those with a failure.
    """
    g = rows[rows["arm"].isin(arms)] if arms is not None else rows
    if g.empty:
        return None
    valid = valid_rows(g)
    pf_all = g["parse_failures"].fillna(0) > 0
    pf = valid["parse_failures"].fillna(0) > 0
    return {"arm": label or "+".join(arms or ()), "rows_with_failure": int(pf_all.sum()),
            "valid_with_failure": int(pf.sum()), "mean_with_failure": mean(
                valid.loc[pf, "recall"]),
            "rows_clean": int((~pf).sum()), "mean_clean": mean(valid.loc[~pf, "recall"])}


# The all-arm line's label in parse-failures.csv (docs/design.md §8 names the j+p+t one).
ALL_ARMS = "all arms"


def envelope(v: pd.DataFrame, an: Analysis) -> pd.DataFrame:
    """Per arm, valid rows and those whose final carry is a raw JSON envelope (paper §5:
    "false on 575 of the 620 valid rows; the 45 that carry a raw envelope are all f")."""
    out = []
    for arm, g in v.groupby("arm"):
        out.append({"arm": arm, "rows": int(len(g)), "carried": int(
            g["json_envelope_carried"].fillna(False).astype(bool).sum())})
    df = pd.DataFrame(out, columns=["arm", "rows", "carried"])
    return df.sort_values("arm", key=arm_sort_key(an.arm_order)).reset_index(drop=True)


def unit_lenient(v: pd.DataFrame, checks: pd.DataFrame) -> dict[str, int] | None:
    """Checks of these rows that fail as graded and pass when the unit word may be dropped
    (paper §3.1), and the rows holding one; None when checks.csv has no lenient grade."""
    if "correct_unit_lenient" not in checks.columns:
        return None
    c = checks[checks["row_id"].isin(v["row_id"])]
    lenient = c["correct_unit_lenient"].fillna(False).astype(bool)
    only = lenient & ~c["correct"].fillna(False).astype(bool)
    return {"checks": int(only.sum()), "rows": int(c.loc[only, "row_id"].nunique())}


def invalid_reasons(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows the validity rule kept out, by arm and reason (catch-up is arm-correlated),
    with their recalls in rows.csv order (paper §6: "Their recalls were 1.000, 1.000,
    0.000 ..."; n_correct / n_graded where the row has them)."""
    inv = rows[~rows["valid"].astype(bool)]
    reason = inv["invalid_reason"].fillna("").astype(str).str.split(":").str[0]
    graded = pd.to_numeric(inv["n_graded"], errors="coerce")
    exact = pd.to_numeric(inv["n_correct"], errors="coerce") / graded.where(graded > 0)
    recall = exact.where(exact.notna(), pd.to_numeric(inv["recall"], errors="coerce"))
    inv = inv.assign(reason=reason, _recall=recall)
    out = [{"arm": arm, "reason": r, "rows": len(g),
            "recalls": [float(x) for x in g["_recall"].dropna()]}
           for (arm, r), g in inv.groupby(["arm", "reason"])]
    return pd.DataFrame(out, columns=["arm", "reason", "rows", "recalls"])


def token_pairs(v: pd.DataFrame, an: Analysis) -> dict[tuple[str, str], pd.DataFrame]:
    """Prompt tokens of each configured arm pair, paired within block."""
    return {(a, b): pairs(v, a, b, "prompt_tokens") for a, b in an.token_deltas}


def description_delta(v: pd.DataFrame, an: Analysis) -> dict[str, Any] | None:
    """What the described arm's prompt should exceed its twin's by, had the description
    reached the model on every fold, beside what it measured (paper §4.3).

    Paper §4.3: "if the description reached the model on all five folds the arm's
    prompt should exceed the undivided arm's by roughly 2,294 tokens, and the observed
    difference is +298". The expected delta is the description the arm adds (its field
    descriptions' characters, 1,835 for p) over the character-ratio estimator the paper
    sized prompts with (backends.base.CHARS_PER_TOKEN_ESTIMATE, 4 characters per token),
    times the folds of the pair's described row: 1,835 / 4 x 5 = 2,293.75. The measured
    delta is the mean paired difference of the rows' prompt tokens (all folds) over the
    same blocks. None where no block ran both arms validly or the arm has no description.
    """
    from ..backends.base import CHARS_PER_TOKEN_ESTIMATE

    a, b = an.described
    chars = an.description_chars.get(a, 0)
    pt = pairs(v, a, b, "prompt_tokens")
    if not chars or pt.empty:
        return None
    folds = pairs(v, a, b, "folds")[BLOCK + ["folds_first"]]
    pt = pt.merge(folds, on=BLOCK)
    expected = chars / CHARS_PER_TOKEN_ESTIMATE * pt["folds_first"]
    measured = pt["prompt_tokens_first"] - pt["prompt_tokens_second"]
    return {"description_chars": chars, "chars_per_token": CHARS_PER_TOKEN_ESTIMATE,
            "n_pairs": len(pt), "folds": float(pt["folds_first"].mean()),
            "expected": float(expected.mean()), "measured": float(measured.mean()),
            "share": float(measured.mean() / expected.mean())}
