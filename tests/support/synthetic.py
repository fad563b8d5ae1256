"""A synthetic evidence package at any size, deterministic from a seed.

For tests and bench/ only: the statistics, tables and figures must be exercised at the
paper's scale (and 100x it) without a model. The package has the exact columns of
foldstudy/evidence/columns.py, the arms of resources/arms.yaml, and the paper's shape:
many models, all twelve arms, a distributed-facts anchor sweep, a single-chunk sweep and
a capacity sweep; near-binary rows (a row succeeds or fails, then its checks follow at
93% / 4%); healthy, over-writing and under-writing models with the fills of paper
§4.6-4.7; headings that arrive with success on single-field schemas and always under q.
It measures nothing.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pandas as pd

from foldstudy.evidence import columns
from foldstudy.study.arm import is_matched
from foldstudy.study.spec import arm_ids, load_arm_table, resolve_arm

RESOURCES = Path(__file__).resolve().parents[2] / "resources"
_TABLE = load_arm_table(RESOURCES)
# The paper's arms only: a carrier beyond the paper (an index arm, a native arm) is no
# paper row.
SPECS = {a: resolve_arm(a, _TABLE, RESOURCES, 1.0) for a in arm_ids(_TABLE)
         if is_matched(_TABLE["arms"][a])}
ARMS = list(SPECS)
CEILING = {a: s.declared_ceiling_chars for a, s in SPECS.items() if s.declared_ceiling_chars}
N_FIELDS = {a: s.n_fields for a, s in SPECS.items()}
PROMPT = {a: s.system_prompt_name for a, s in SPECS.items()}
SCHEMA_ARMS = [a for a, s in SPECS.items() if s.schema is not None]
SWEEPS = [  # name, scenario, arms, repeats factor
    ("anchor", "distributed", ARMS, 1.0),
    ("single", "single_chunk", ["j", "p", "q", "o", "m"], 1.0),
    ("capacity", "distributed", ["j", "t", "m", "u"], 1.0),
]
# The scopes a study config would name for this package's paper-like shape: the contrasts
# from the anchor sweep, the study-wide counts pooled, capacity from its own sweep.
SCOPES = {
    "table1": {"sweeps": ["anchor"]}, "equivalence": {"sweeps": ["anchor"]},
    "ladder": {"sweeps": ["anchor"]}, "partition": {"sweeps": ["anchor"]},
    "fill": {"sweeps": ["anchor"]},
    "depth": {"sweeps": ["anchor"]}, "capacity": {"sweeps": ["capacity"]},
    "iteration": {"sweeps": ["anchor", "single"], "pool": True},
    "ceiling": {"sweeps": ["anchor", "capacity"], "pool": True},
    "icc": {"pool": True}, "headings": {"pool": True}, "carrier": {"pool": True},
}
FAMILIES = ["qwen", "glm", "mistral", "gemma", "granite", "ling", "deepseek", "minimax",
            "nemotron", "mimo", "hy", "llama"]
SIZES = ["3b", "8b", "9b", "27b", "35b-a3b", "120b"]
CHECKS_PER_ROW = {"distributed": 14, "single_chunk": 7}
LABELS = [("primary ingress port", "port"), ("metrics exporter port", "port"),
          ("migration state file path", "path"), ("shard count of the event store",
                                                   "shard_count"),
          ("migration run UUID", "uuid"), ("change freeze start time", "utc_time"),
          ("database cutover time", "utc_time"), ("rollback deadline", "utc_time"),
          ("cache origin URL", "url"), ("DNS zone for the new records", "dns_zone"),
          ("artifact signing key id", "key_id"), ("on-call handle for the cutover", "handle"),
          ("release tag to deploy", "release_tag"),
          ("department that owns the migration", "cyrillic_department")]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _model_names(n: int) -> list[str]:
    out = []
    for i in range(n):
        fam, size = FAMILIES[i % len(FAMILIES)], SIZES[(i // 2) % len(SIZES)]
        gen = i // (len(FAMILIES) * len(SIZES))
        out.append(f"{fam}{gen + 2}.{i % 7}-{size}")
    return out


def _model_traits(rng: np.random.Generator, n: int) -> list[dict[str, float | str]]:
    """Per model: failure mode of the undivided arm, success chance per arm, j fill."""
    out = []
    for _ in range(n):
        mode = rng.choice(["healthy", "over_writing", "under_writing"], p=[0.6, 0.27, 0.13])
        if mode == "healthy":
            j, q, fill = rng.uniform(0.55, 1.0), None, rng.uniform(0.45, 0.95)
            q = float(np.clip(j - rng.uniform(-0.05, 0.35), 0, 1))
        elif mode == "over_writing":
            j, q, fill = rng.uniform(0.0, 0.42), rng.uniform(0.55, 0.97), rng.uniform(0.6, 1.0)
        else:
            j, q, fill = rng.uniform(0.0, 0.35), rng.uniform(0.0, 0.3), rng.uniform(0.05, 0.38)
        p = {"f": rng.uniform(0, 0.15), "n": rng.uniform(0, 0.9), "j": j,
             "p": max(0.0, j - 0.1), "q": q, "k": rng.uniform(0.8, 1.0), "o": 0.92, "m": 0.97,
             "t": j * 0.7, "u": 0.96, "l": rng.uniform(0.7, 0.95), "g": rng.uniform(0, 0.4)}
        out.append({"mode": str(mode), "fill": float(fill), **p})
    return out


def synthetic_package_dir(d: Path, n_rows: int, seed: int = 0) -> Path:
    """A reviewer's minimal package in `d`: rows.csv and checks.csv, no manifest."""
    from foldstudy.evidence.load import write_table

    rows, checks = synthetic_package(n_rows, seed)
    write_table(rows, d / "rows.csv")
    write_table(checks, d / "checks.csv")
    return d


def synthetic_trace(checks: pd.DataFrame, n_folds: int = 5) -> pd.DataFrame:
    """Five folds per check: planted at a fold by label, carried from then on when the
    final carry held it."""
    labels = sorted(set(checks["label"]))
    out = []
    for c in checks[["row_id", "label", "in_carrier"]].to_dict("records"):
        planted = labels.index(c["label"]) % n_folds + 1
        for f in range(1, n_folds + 1):
            out.append({"row_id": c["row_id"], "label": c["label"], "fold": f,
                        "present": bool(c["in_carrier"]) and f >= planted,
                        "planted_fold": planted})
    return pd.DataFrame(out, columns=columns.TRACE)


def traced_package_dir(d: Path, n_rows: int, seed: int = 0) -> Path:
    """synthetic_package_dir's package plus its fact trace (trace.csv), as a run writes."""
    from foldstudy.evidence.load import write_table

    rows, checks = synthetic_package(n_rows, seed)
    write_table(rows, d / "rows.csv")
    write_table(checks, d / "checks.csv")
    write_table(synthetic_trace(checks), d / "trace.csv")
    return d


def synthetic_package(n_rows: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, checks) with exactly n_rows rows, as foldstudy.evidence.load reads them."""
    rng = np.random.default_rng(seed)
    per_model = sum(len(a) * f for _, _, a, f in SWEEPS)
    n_models = min(64, max(4, n_rows // 30))  # 620 rows: ~15 models, as in the paper
    repeats = max(2, math.ceil(n_rows / (per_model * n_models)))
    names = _model_names(n_models)
    traits = _model_traits(rng, n_models)
    recs = []
    for mi, model in enumerate(names):
        for sweep, scenario, arms, factor in SWEEPS:
            for rep in range(max(1, round(repeats * factor))):
                for pos in range(len(arms)):
                    arm = arms[(pos + rep) % len(arms)]
                    recs.append((sweep, scenario, model, mi, arm, rep, pos))
    recs = recs[:n_rows]
    n = len(recs)
    df = pd.DataFrame(recs, columns=["sweep", "scenario", "model", "mi", "arm", "repeat",
                                     "position"])
    arm, scen = df["arm"].to_numpy(), df["scenario"].to_numpy()
    single = scen == "single_chunk"
    p = np.array([traits[mi][a] for mi, a in zip(df["mi"], arm, strict=True)], dtype=float)
    p = np.where(single & np.isin(arm, ["q", "o", "m"]), 0.99, p)
    p = np.where(single & np.isin(arm, ["j", "p"]), np.clip(p + 0.25, 0, 1), p)
    success = rng.random(n) < p

    # checks: near-binary rows
    k = np.array([CHECKS_PER_ROW[s] for s in scen])
    row_idx = np.repeat(np.arange(n), k)
    label_idx = np.concatenate([np.arange(kk) for kk in k])
    s_c = success[row_idx]
    correct = rng.random(len(row_idx)) < np.where(s_c, 0.93, 0.04)
    in_carrier = correct | (rng.random(len(row_idx)) < np.where(s_c, 0.6, 0.08))
    abst_rate = np.where(np.isin(arm, ["f"]), 0.9, np.where(np.isin(arm, ["j", "t"]), 0.3, 0.6))
    row_abst = rng.random(n) < abst_rate
    abstained = ~correct & row_abst[row_idx] & (rng.random(len(row_idx)) < 0.7)
    fabricated = ~correct & ~abstained
    stock = fabricated & (rng.random(len(row_idx)) < 0.3)
    n_correct = np.bincount(row_idx, weights=correct, minlength=n).astype(int)
    recall = n_correct / k

    # carrier shape
    ceiling = np.array([CEILING.get(a, np.nan) for a in arm])
    fill_model = np.array([traits[mi]["fill"] for mi in df["mi"]])
    fill = np.select(
        [arm == "j", arm == "p", arm == "t", arm == "q", np.isin(arm, ["f", "g"])],
        [fill_model, np.clip(fill_model + 0.1, 0, 1), np.full(n, 0.97),
         np.where(fill_model < 0.4, fill_model * 0.6, rng.uniform(0.35, 0.8, n)),
         np.full(n, 0.99)],
        rng.uniform(0.3, 0.95, n)) * rng.uniform(0.9, 1.1, n)
    fill = np.where(np.isnan(ceiling), np.nan, np.clip(fill, 0.01, 1.0))
    carried = np.where(np.isnan(ceiling), rng.uniform(3000, 7000, n), fill * ceiling)
    single_field = np.isin(arm, ["j", "p", "t"])
    h_ok = rng.choice([5, 4, 3], n, p=[0.8, 0.12, 0.08])
    h_bad = rng.choice([0, 1, 2], n, p=[0.45, 0.5, 0.05])
    headings = np.select([np.isin(arm, ["q", "m", "u", "l", "k"]), arm == "o", single_field],
                         [np.full(n, 5), np.zeros(n, int), np.where(success, h_ok, h_bad)],
                         rng.choice([0, 1], n))
    schema_arm = np.isin(arm, SCHEMA_ARMS)
    folds = np.full(n, 5)
    parse_failures = np.where(schema_arm, rng.binomial(5, 0.02, n), 0)
    schema_invalid = np.where(np.isin(arm, ["j", "p"]), rng.binomial(5, 0.05, n), 0)
    finish_length = np.minimum(parse_failures + schema_invalid, folds)
    clip_p = np.select([arm == "u", arm == "j"], [0.6, 0.3], 0.0)
    clipped = rng.binomial(5, clip_p)
    prompt_tokens = (5 * (900 + carried / 4 + rng.normal(0, 60, n))).round().astype(int)
    completion_tokens = (5 * carried / 4 * rng.uniform(0.9, 1.1, n)).round().astype(int)

    # validity: catch-up on a few schema rows, infrastructure faults anywhere
    u = rng.random(n)
    catchup = schema_arm & (u < 0.006)
    infra = ~catchup & (u > 0.996)
    valid = ~(catchup | infra)
    reason = np.where(catchup, "catchup_fired", np.where(infra, "infrastructure:timeout", ""))
    has_checks = ~infra

    rows = pd.DataFrame({
        "row_id": [f"{a}/{b}/r{c}/{d}" for a, b, c, d in
                   zip(df["sweep"], df["model"], df["repeat"], arm, strict=True)],
        "sweep": df["sweep"], "scenario": scen, "model": df["model"], "arm": arm,
        "repeat": df["repeat"], "position": df["position"], "valid": valid,
        "invalid_reason": reason, "n_graded": k, "n_correct": np.where(has_checks, n_correct, 0),
        "recall": np.where(has_checks, recall, np.nan),
        "n_fields": [N_FIELDS.get(a, 0) for a in arm],
        "declared_ceiling_chars": ceiling, "carried_chars": carried.round(1),
        "fill": fill.round(4), "headings_carried": headings,
        "json_envelope_carried": arm == "f", "folds": folds, "folds_clipped": clipped,
        "parse_failures": parse_failures, "finish_stop": folds - finish_length,
        "finish_length": finish_length, "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "carrier_present": np.bincount(row_idx, weights=in_carrier, minlength=n).astype(int),
        "abstained": np.bincount(row_idx, weights=abstained, minlength=n) > 0,
        # short answers: the first 400 characters are the whole answer
        "abstained_prefix400": np.bincount(row_idx, weights=abstained, minlength=n) > 0,
        "catchup_fired": catchup,
        "system_prompt_sha256": [_sha(PROMPT[a]) for a in arm],
        "n_correct_unit_lenient": n_correct,
        "n_fabricated": np.bincount(row_idx, weights=fabricated, minlength=n).astype(int),
        "n_stock_signature": np.bincount(row_idx, weights=stock, minlength=n).astype(int),
        "schema_invalid_folds": schema_invalid,
        "token_count_method": "estimator", "endpoint": "{}", "served_by": "synthetic",
        "temperature": 0.2, "recall_finish_reason": "stop", "answer": "",
        "ceiling_delivery": ["response_format" if a in CEILING else "none" for a in arm],
        "attempt": 1,
        # the final carry's tokens at ~3 characters a token (no draw: the other columns
        # keep the stream they always had)
        "retained_tokens": np.where(has_checks, np.round(carried / 3.0), np.nan),
        "n_control": 0, "n_control_correct": np.nan, "control_missed": "",  # none planted
        "finish_repeat": 0,  # no embedded fold
    })
    keep = has_checks[row_idx]
    checks = pd.DataFrame({
        "row_id": rows["row_id"].to_numpy()[row_idx],
        "label": [LABELS[i][0] for i in label_idx],
        "fact_class": [LABELS[i][1] for i in label_idx],
        "expected": [f"v{i:02d}" for i in label_idx],
        "in_carrier": in_carrier, "correct": correct, "correct_unit_lenient": correct,
        "abstained": abstained, "answered": ~abstained, "fabricated": fabricated,
        "stock_signature": stock, "answer_line": "",
    })[keep].reset_index(drop=True)
    return rows[columns.ROWS], checks[columns.CHECKS]


def aa_package_dir(d: Path, blocks: int = 8) -> Path:
    """A package of one anchor sweep on two models, arms j, m and m's A/A copy m~aa
    (config controls.aa), `blocks` repeats each, where the copy recalls every fact and m
    none: an A/A declared different, as an endpoint that drifts between two
    byte-identical requests would leave it. rows.csv and checks.csv, no manifest."""
    from foldstudy.evidence.load import write_table
    from foldstudy.study.derived import aa_copy_id

    rows, checks = synthetic_package(400, seed=3)
    models = sorted(set(rows["model"]))[:2]
    base = rows[(rows["sweep"] == "anchor") & rows["arm"].isin(["j", "m"])
                & rows["model"].isin(models) & (rows["repeat"] == 0)]
    arms = ["j", "m", aa_copy_id("m")]
    out_rows, out_checks = [], []
    for rep in range(blocks):
        for pos, arm in enumerate(arms):
            src = base[base["arm"] == ("j" if arm == "j" else "m")].copy()
            ck = checks[checks["row_id"].isin(src["row_id"])].copy()
            ids = {old: f"anchor/{model}/r{rep}/{arm}"
                   for old, model in zip(src["row_id"], src["model"], strict=True)}
            src["row_id"], ck["row_id"] = src["row_id"].map(ids), ck["row_id"].map(ids)
            src["arm"], src["repeat"], src["position"] = arm, rep, pos
            if arm != "j":
                copy = arm != "m"
                ck["correct"] = copy
                src["n_correct"] = src["n_graded"] if copy else 0
                src["recall"] = 1.0 if copy else 0.0
            out_rows.append(src)
            out_checks.append(ck)
    write_table(pd.concat(out_rows), d / "rows.csv")
    write_table(pd.concat(out_checks), d / "checks.csv")
    return d
