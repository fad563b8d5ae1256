"""Evidence stage: the per-sweep tables merged into results/evidence/, described by a
manifest (sha256, row counts, schema version, the resolved config) a reviewer checks."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import StudyError
from ..io import write_json
from . import provenance as pv

log = logging.getLogger(__name__)


def merge_evidence(parts: dict[str, list[str]], outs: dict[str, str]) -> None:
    """Concatenate the per-sweep tables into results/evidence/."""
    for name, paths in parts.items():
        dfs = [pd.read_csv(p, dtype=str, keep_default_na=False) for p in paths]
        df = pd.concat(dfs, ignore_index=True) if dfs else pd.DataFrame()
        Path(outs[name]).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(outs[name], index=False, lineterminator="\n")
        log.info("%s: %d lines from %d sweeps", outs[name], len(df), len(paths))


class NothingRan(StudyError, RuntimeError):
    """Every run of the study was refused before any call: there is no evidence."""


def refuse_a_study_that_never_ran(rows_parts: list[str], probe_summary: str | None) -> None:
    """A study in which no run could run fails, naming each model's verdict.

    Otherwise a missing GGUF or a missing key ends as a "successful" study whose every
    row is not_run, and the tables report nothing as if it were a result.
    """
    rows = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in rows_parts],
                     ignore_index=True) if rows_parts else pd.DataFrame()
    if rows.empty or not rows["invalid_reason"].str.startswith("not_run:").all():
        return
    why = []
    if probe_summary and Path(probe_summary).is_file():
        probes = pd.read_csv(probe_summary, sep="\t", dtype=str, keep_default_na=False)
        why = [f"  {r['model']}: {r['verdict']} ({r['reason']})"
               for r in probes.to_dict("records")]
    raise NothingRan(f"no run of this study could run: all {len(rows)} rows were refused "
                     "before any call, so there is no evidence to publish. Probe verdicts "
                     f"({probe_summary}):\n" + "\n".join(why))


class RowIdCollision(StudyError, ValueError):
    """Two sweeps' graded rows holding one row_id: refused before evidence is written."""


def refuse_row_id_collisions(rows_parts: list[str]) -> None:
    """A row_id in two sweeps' graded rows (a run record claiming another sweep's row)
    is refused naming both files and the run records behind them."""
    seen: dict[str, str] = {}
    for p in rows_parts:
        ids = pd.read_csv(p, dtype=str, keep_default_na=False, usecols=["row_id"])["row_id"]
        for rid in ids:
            if rid in seen and seen[rid] != p:
                raise RowIdCollision(
                    f"{p} and {seen[rid]} both hold row_id {rid!r}: two run records claim "
                    f"one run (results/runs/{rid}.json is the one its path names); delete "
                    "the record whose row_id is not its own path's and rerun its fold job")
            seen[rid] = p


def publish_evidence(parts: dict[str, list[str]], outs: dict[str, str], manifest_out: str,
                     config: dict[str, Any], probes: tuple[str, str] | None = None) -> None:
    """Merge the per-sweep tables into results/evidence/ and describe them in a manifest.

    probes: (the probe's summary.tsv, probes.csv to write): the verdicts travel with the
    evidence, so a reviewer's package shows which (model, endpoint, request) could run.
    """
    refuse_a_study_that_never_ran(parts["rows"], probes[0] if probes else None)
    refuse_row_id_collisions(parts["rows"])
    merge_evidence(parts, outs)
    artifacts = {Path(p).name: p for p in outs.values()}
    if probes is not None:
        tsv, csv_out = probes
        pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False).to_csv(
            csv_out, index=False, lineterminator="\n")
        artifacts[Path(csv_out).name] = csv_out
    write_json(pv.build_manifest(artifacts, config), manifest_out)
    log.info("manifest: %s", ", ".join(f"{k} ({pv.csv_rows(v)} rows)"
                                       for k, v in sorted(artifacts.items())))


def evidence_stage(input: Any, output: Any, params: Any) -> None:
    """Rule evidence: results/evidence/ and its manifest."""
    names = ("rows", "checks", "folds", "trace")
    publish_evidence({k: list(input[k]) for k in names}, {k: output[k] for k in names},
                     output.manifest, params.config, probes=(input.probes, output.probes))
