"""Entry points the rules call: read inputs, call the pure logic, write outputs.

I/O lives here and nowhere deeper. Each function takes plain paths and values, so a
test calls it exactly as a rule does, without Snakemake.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from . import columns
from .backends import make_backend
from .backends.store import ResponseStore
from .evidence import frame, grade_record, write_csv
from .fixtures import build_fixture, manifest
from .fold import Prompts, Sample, not_run_record, run_row
from .grade import StockSignature
from .spec import Arm, Fixture

log = logging.getLogger("foldstudy")


@contextlib.contextmanager
def logged(path: str | None) -> Iterator[None]:
    """Log to the rule's log file (and stderr), and record any failure there too."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(message)s")
    try:
        yield
    except Exception:
        log.exception("failed")
        raise


def load_yaml(path: str | Path) -> Any:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def write_json(obj: Any, path: str | Path) -> None:
    """Atomic JSON write: a killed job leaves the old file or the new one, never half."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, p)


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def stock_signature(resources: Path) -> StockSignature:
    return StockSignature.from_dict(load_yaml(resources / "grading.yaml")["stock_signature"])


def make_fixture(resources: str | Path, scenario: str, seed: int, scale: float,
                 fixture_out: str, manifest_out: str) -> None:
    res = Path(resources)
    fx = build_fixture(
        scenario, seed, scale,
        facts_spec=load_yaml(res / "facts.yaml"),
        filler=load_yaml(res / "scenario" / "filler.yaml"),
        stock_ports=set(stock_signature(res).ports),
    )
    write_json(fx.to_dict(), fixture_out)
    m = manifest(fx)
    write_json(m, manifest_out)
    log.info("%s seed %d scale %g: %d chunks (%s chars), %d planted, %d graded in chunks %s",
             scenario, seed, scale, len(fx.chunks), m["chunk_chars"], m["n_planted"],
             m["n_graded"], m["graded_chunks"])


def load_prompts(resources: Path) -> Prompts:
    p = resources / "prompts"
    return Prompts(
        fold_user=(p / "fold_user.md.j2").read_text(encoding="utf-8"),
        recall_system=(p / "recall_system.md").read_text(encoding="utf-8"),
        recall_user=(p / "recall_user.md.j2").read_text(encoding="utf-8"),
    )


def run_fold(
    resources: str | Path,
    fixture_path: str,
    arm: dict[str, Any],
    model_name: str,
    model: dict[str, Any],
    sample: dict[str, Any],
    temperature: float,
    recall_max_tokens: int,
    store_dir: str,
    out: str,
    probe_path: str | None = None,
    replay: bool = False,
) -> dict[str, Any]:
    """One run job: every fold of one (sweep, model, arm, repeat), then recall.

    The model's probe verdict decides first: an arm it forbids makes no call and writes
    a record saying why (DESIGN §9: no checkpoints, so the job exists either way).
    """
    res = Path(resources)
    fixture = Fixture.from_dict(read_json(fixture_path))
    arm_spec = Arm.from_dict(arm)
    headings = load_yaml(res / "arms.yaml")["fixed_headings"]
    probe = read_json(probe_path) if probe_path else {}
    if probe:
        perm = probe.get("permissions", {}).get(arm_spec.arm) or {
            "allowed": False, "verdict": "not_probed", "reason": "the probe did not cover it"}
        if not perm["allowed"]:
            record = not_run_record(Sample(**sample), fixture.scenario, arm_spec,
                                    perm["verdict"])
            record["not_run_detail"] = perm.get("reason", "")
            write_json(record, out)
            log.info("%s not run: probe verdict %s (%s); no call made", record["row_id"],
                     perm["verdict"], perm.get("reason", ""))
            return record
    t0 = time.monotonic()
    backend = make_backend(model_name, model, pin=probe.get("pin"), replay=replay)
    store = ResponseStore(store_dir)
    try:
        record = run_row(
            fixture, arm_spec, backend, store, load_prompts(res), Sample(**sample),
            temperature=temperature, recall_max_tokens=recall_max_tokens, headings=headings,
        )
    finally:
        backend.close()
    err = record.get("infra_error") or {}
    if replay and err.get("kind") == "replay_miss":
        # A replay that cannot answer a call must fail, not record a different study.
        raise RuntimeError(f"{record['row_id']}: {err['message']}")
    record["wall_s"] = round(time.monotonic() - t0, 2)
    write_json(record, out)
    log.info("%s done in %.1fs; response store: %d hits, %d misses", record["row_id"],
             record["wall_s"], store.hits, store.misses)
    return record


def grade_sweep(resources: str | Path, fixture_path: str, run_paths: list[str],
                rows_out: str, checks_out: str, folds_out: str) -> None:
    """Grade every run of one sweep in one job (per-row jobs would cost a process each)."""
    res = Path(resources)
    fixture = Fixture.from_dict(read_json(fixture_path))
    grading = load_yaml(res / "grading.yaml")
    headings = load_yaml(res / "arms.yaml")["fixed_headings"]
    stock = StockSignature.from_dict(grading["stock_signature"])
    rows, checks, folds = [], [], []
    for p in run_paths:
        row, c, f = grade_record(read_json(p), fixture, grading["abstention_markers"], stock,
                                 headings)
        rows.append(row)
        checks += c
        folds += f
    write_csv(frame(rows, columns.ROWS), rows_out)
    write_csv(frame(checks, columns.CHECKS), checks_out)
    write_csv(frame(folds, columns.FOLDS), folds_out)
    n_valid = sum(r["valid"] for r in rows)
    log.info("graded %d rows (%d valid), %d checks, %d folds", len(rows), n_valid,
             len(checks), len(folds))


def merge_evidence(parts: dict[str, list[str]], outs: dict[str, str]) -> None:
    """Concatenate the per-sweep tables into results/evidence/."""
    for name, paths in parts.items():
        dfs = [pd.read_csv(p, dtype=str, keep_default_na=False) for p in paths]
        df = pd.concat(dfs, ignore_index=True) if dfs else pd.DataFrame()
        Path(outs[name]).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(outs[name], index=False, lineterminator="\n")
        log.info("%s: %d lines from %d sweeps", outs[name], len(df), len(paths))
