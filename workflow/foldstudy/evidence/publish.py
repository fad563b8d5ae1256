"""Evidence stage: the per-sweep tables merged into results/evidence/, described by a
manifest (sha256, row counts, schema version, the resolved config) a reviewer checks."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..errors import StudyError
from ..io import concat_text_tables, read_text_table, write_json, write_text_table
from . import provenance as pv

log = logging.getLogger(__name__)


def merge_evidence(parts: dict[str, list[str]], outs: dict[str, str]) -> None:
    """Concatenate the per-sweep tables into results/evidence/, each cell's text kept
    (no pandas: this job only joins text, and importing pandas was most of its time)."""
    for name, paths in parts.items():
        header, rows = concat_text_tables([read_text_table(p) for p in paths])
        write_text_table(header, rows, outs[name])
        log.info("%s: %d lines from %d sweeps", outs[name], len(rows), len(paths))


class NothingRan(StudyError, RuntimeError):
    """Every run of the study was refused before any call: there is no evidence."""


def refuse_a_study_that_never_ran(rows_parts: list[str], probe_summary: str | None) -> None:
    """A study in which no run could run fails, naming each model's verdict.

    Otherwise a missing GGUF or a missing key ends as a "successful" study whose every
    row is not_run, and the tables report nothing as if it were a result.
    """
    header, rows = concat_text_tables([read_text_table(p) for p in rows_parts])
    if not rows:
        return
    reason = header.index("invalid_reason")
    if not all(r[reason].startswith("not_run:") for r in rows):
        return
    why = []
    if probe_summary and Path(probe_summary).is_file():
        cols, verdicts = read_text_table(probe_summary, delimiter="\t")
        why = [f"  {r['model']}: {r['verdict']} ({r['reason']})"
               for r in (dict(zip(cols, v, strict=True)) for v in verdicts)]
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
        header, rows = read_text_table(p)
        at = header.index("row_id")
        for rid in (r[at] for r in rows):
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
        write_text_table(*read_text_table(tsv, delimiter="\t"), csv_out)
        artifacts[Path(csv_out).name] = csv_out
    write_json(pv.build_manifest(artifacts, config), manifest_out)
    log.info("manifest: %s", ", ".join(f"{k} ({pv.csv_rows(v)} rows)"
                                       for k, v in sorted(artifacts.items())))


def evidence_stage(input: Any, output: Any, params: Any) -> None:
    """Rule evidence: results/evidence/ and its manifest."""
    names = ("rows", "checks", "folds", "trace")
    publish_evidence({k: list(input[k]) for k in names}, {k: output[k] for k in names},
                     output.manifest, params.config, probes=(input.probes, output.probes))
