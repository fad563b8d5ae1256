"""What the statistics, pages, generated package and release read: this run's or a package's.

The inputs and params of rules/stats.smk to rules/summary.smk, rules/generate.smk and
rules/release.smk, as `W.outputs.<method>`. In evidence mode (--config evidence=DIR)
these are plain files of the package, so no fixture, fold or grade job enters the DAG.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import StudyError
from ..report.paths import block_path
from ..report.titles import figure
from .core import LEDGER, NUMBERS, Core


class Outputs:
    """Evidence, statistics, pages, generate and release (rules/stats.smk ...
    summary.smk, rules/generate.smk, rules/release.smk), read from the core alone."""

    def __init__(self, core: Core) -> None:
        self.core = core

    # --- evidence, statistics, pages (rules/stats.smk ... summary.smk) ---

    def evidence_inputs(self) -> dict[str, str]:
        """rows/checks the statistics read: this run's evidence, or a package's.

        In evidence mode these are plain files of the package, so no fixture, fold or
        grade job enters the DAG. The optional files are checked when present (rule
        stats)."""
        ev = Path(self.core.evidence_dir)
        out = {"rows": str(ev / "rows.csv"), "checks": str(ev / "checks.csv")}
        for name in ("folds.csv", "manifest.json"):
            if not self.core.evidence_mode or (ev / name).is_file():
                out[name.split(".")[0]] = str(ev / name)
        return out

    def trace_inputs(self) -> dict[str, str]:
        """rows/checks and the fact trace: a package's trace.csv is optional (a reviewer's
        package may have none; the figure then says so)."""
        ev = self.evidence_inputs()
        out = {"rows": ev["rows"], "checks": ev["checks"]}
        trace = Path(self.core.evidence_dir) / "trace.csv"
        if not self.core.evidence_mode or trace.is_file():
            out["trace"] = str(trace)
        return out

    def trace_table(self) -> list[str]:
        """The fact trace the comparison tables read (paired-arms, fact-survival): this
        run's, or a package's when it has one (without it those tables say why)."""
        trace = self.trace_inputs().get("trace")
        return [trace] if trace else []

    def decision_inputs(self) -> dict[str, str]:
        """The decision cards read rows and checks, folds.csv where there is one, and
        (outside evidence mode) what prices a repeat: the fixtures and turn templates,
        as the audit does, and the fixtures' manifests (a session's own compaction). A staged
        sweep's final looks are added by common.smk (they are checkpoints)."""
        ev = self.evidence_inputs()
        out = {"rows": ev["rows"], "checks": ev["checks"]}
        if "folds" in ev:  # each failed fold's stop reason (decision.fold_failures)
            out["folds"] = ev["folds"]
        if not self.core.evidence_mode:
            out.update(self.core.fixtures(), **self.core.prompt_files)
            # each fixture's manifest: a session's own compaction, read on its cards
            out.update({f"manifest_{s}": f"results/fixtures/{s}/manifest.json"
                        for s in self.core.config["sweeps"]})
        return out

    def token_class_table(self) -> list[str]:
        """Characters per token by text class (§6): measured on this run's fixtures; an
        evidence package has no fixtures, so its tables say it was not measured."""
        return [] if self.core.evidence_mode else ["results/stats/chars-per-token.csv"]

    def probe_table(self) -> list[str]:
        """Probe verdicts for the probe table: the package's probes.csv, or this run's
        summary."""
        if self.core.evidence_mode:
            p = Path(self.core.evidence_dir) / "probes.csv"
            return [str(p)] if p.is_file() else []
        return ["results/probe/summary.tsv"]

    def own_arm_sources(self) -> dict[str, dict[str, str]]:
        """Each own arm's files as the user wrote them (arms_file's system_prompt,
        schema): the carrier folder copies them as they are."""
        return {a: {k: spec[f"{k}_file"] for k in ("system_prompt", "schema")
                    if spec.get(f"{k}_file")}
                for a, spec in self.core.study.arm_table["arms"].items()
                if str(spec.get("system_prompt", "")).startswith("own:")}

    def own_arm_files(self) -> list[str]:
        return sorted({p for files in self.own_arm_sources().values() for p in files.values()})

    def carrier_folders(self) -> list[str] | str:
        """The decided cards' carrier folders (rule carriers), which the decision page
        links and the gate builds; none in evidence mode, where no run record is read."""
        return [] if self.core.evidence_mode else "results/decision"

    def first_block_page(self) -> str | None:
        """The first block's comparison page (the summary links it), where pages are
        built."""
        if self.core.evidence_mode or not self.core.study.runs:
            return None
        r = self.core.study.runs[0]
        return block_path(r.sweep, r.model, r.repeat)

    def reader_outputs(self) -> list[str]:
        """What one command (results/tables, the default target) brings besides the
        tables: the fact-trace figure, and the fold viewer and the comparison pages where
        there are run records (not in evidence mode, where a package has rows and checks
        only)."""
        out = [figure("fact-trace").png, "results/summary.md"]
        if not self.core.evidence_mode:
            out += ["results/viewer", "results/compare"]
        return out

    # --- generate and release (rules/generate.smk, rules/release.smk) ---

    def generate_inputs(self) -> dict[str, str]:
        ev = Path(self.core.evidence_dir)
        return {"rows": str(ev / "rows.csv"), "checks": str(ev / "checks.csv"),
                "numbers": NUMBERS}

    def private_dirs(self) -> dict[str, str | None]:
        """A reviewer's evidence-only package has none of these; verify skips what is
        absent."""
        if self.core.evidence_mode:
            return {"store": None, "runs": None, "fixtures": None, "ledger": None}
        return {"store": self.core.config["store"], "runs": "results/runs",
                "fixtures": "results/fixtures", "ledger": LEDGER}

    def release_lock(self) -> str:
        lock = self.core.lock
        if not Path(lock).is_file():
            raise StudyError(f"no lock for study {self.core.config['study']!r} ({lock}); "
                             "pin it first with `snakemake -c1 lock`, then run the release")
        return lock
