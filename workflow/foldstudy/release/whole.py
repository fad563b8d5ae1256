"""A released package verifies whole (docs/design.md §7): every file the one its lock pinned.

The package's lock.json is the study's lock (the private inputs and the config as they
ran, every number) plus a `package` section the release writes last: the sha256 of every
file of the package, tables, figures and the crate included (the lock itself is the one
file the crate lists without a checksum, since the lock pins the crate), what the
release substituted in the config (release/sanitize.py) and how many secrets it redacted
in a published session's text. verify refuses a missing crate, a file that differs from
its pin, a file no pin names, and tables that do not rebuild from the evidence.
"""

from __future__ import annotations

import filecmp
import tempfile
from pathlib import Path
from typing import Any

from ..evidence.provenance import Mismatch
from ..io import sha256_file
from .crate import CRATE_FILE, is_snakemake_mark

LOCK_FILE = "lock.json"
TABLES = "tables"
# Characters per token by text class (§6), measured on the study's fixtures: carried so
# the package's tables rebuild as the study made them.
TOKEN_CLASSES = "stats/chars-per-token.csv"


def pinned_files(package: Path) -> dict[str, str]:
    """package path -> sha256 of every file but the lock itself (the crate included)."""
    return {p.relative_to(package).as_posix(): sha256_file(p)
            for p in sorted(package.rglob("*"))
            if p.is_file() and not is_snakemake_mark(package, p) and p != package / LOCK_FILE}


def package_section(package: Path, substituted: dict[str, Any], redacted: dict[str, int],
                    rewritten: list[str]) -> dict[str, Any]:
    """The lock's `package` section. rewritten: the study's files the release changed
    (the manifest's config, a redacted CSV), checked against their package pin only."""
    return {"files": pinned_files(package), "substituted": dict(sorted(substituted.items())),
            "redacted": dict(sorted(redacted.items())), "rewritten": sorted(rewritten)}


def is_package(evidence_dir: str | Path, lock_path: str | Path) -> bool:
    """verify where a released package lies: its lock.json beside its evidence/ (the lock
    foldstudy/wiring/core.py picks for evidence=<package>/evidence)."""
    lock = Path(lock_path).resolve()
    return lock.name == LOCK_FILE and lock.parent == Path(evidence_dir).resolve().parent


def pin_mismatches(package: Path, lock: dict[str, Any]) -> list[Mismatch]:
    """Each file against the package section's pin: missing, differing, or unpinned."""
    section = lock.get("package")
    if not isinstance(section, dict) or not isinstance(section.get("files"), dict):
        return [Mismatch(LOCK_FILE, "lock (package)", "pins no file of the package (no "
                         "`package` section): not the lock a release writes; re-release it "
                         "with `snakemake -c1 release`")]
    was, now = section["files"], pinned_files(package)
    out = [Mismatch(rel, "lock (package)", "pinned by the lock, missing from the package")
           for rel in sorted(set(was) - set(now))]
    out += [Mismatch(rel, "lock (package)", "in the package, pinned by no lock entry")
            for rel in sorted(set(now) - set(was))]
    out += [Mismatch(rel, "lock (package)", f"sha256 {now[rel][:12]}… differs from the "
                     f"pinned {str(was[rel])[:12]}…")
            for rel in sorted(set(was) & set(now)) if now[rel] != was[rel]]
    return out


def rebuild_tables(package: Path, out: Path, analysis: str | Path, resources: str | Path,
                   config: dict[str, Any]) -> None:
    """The package's tables from its evidence and numbers alone, as the tables rule makes
    a reviewer's (evidence=): the probe table from evidence/probes.csv."""
    from ..analysis.plan import AnalysisPlan
    from ..analysis.scopes import Scopes
    from ..report.tables import write_tables

    ev = package / "evidence"
    res = Path(resources)
    probes, trace, tokens = ev / "probes.csv", ev / "trace.csv", package / TOKEN_CLASSES
    write_tables(ev / "rows.csv", ev / "checks.csv", package / "stats/numbers.json",
                 [str(probes)] if probes.is_file() else [],
                 AnalysisPlan.load(analysis, res / "arms.yaml"), res / "templates", out,
                 Scopes.from_config(config.get("scopes")),
                 [str(tokens)] if tokens.is_file() else [],
                 [str(trace)] if trace.is_file() else [], config.get("compare_pairs"))


def table_mismatches(package: Path, analysis: str | Path, resources: str | Path,
                     config: dict[str, Any]) -> list[Mismatch]:
    """Every file of tables/ against the same table rebuilt from the evidence."""
    shipped = package / TABLES
    if not shipped.is_dir():
        return [Mismatch(TABLES, "rebuild", "missing from the package")]
    with tempfile.TemporaryDirectory(prefix="foldstudy-tables-") as tmp:
        try:
            rebuild_tables(package, Path(tmp), analysis, resources, config)
        except (ValueError, KeyError, OSError) as e:
            return [Mismatch(TABLES, "rebuild", f"the tables do not rebuild from the "
                             f"evidence: {str(e)[:300]}")]
        made = {p.name for p in Path(tmp).iterdir() if p.is_file()}
        have = {p.name for p in shipped.iterdir() if p.is_file()}
        out = [Mismatch(f"{TABLES}/{n}", "rebuild", "rebuilt from the evidence, missing from "
                        "the package") for n in sorted(made - have)]
        out += [Mismatch(f"{TABLES}/{n}", "rebuild", "in the package, not a table the "
                         "evidence makes") for n in sorted(have - made)]
        out += [Mismatch(f"{TABLES}/{n}", "rebuild", "differs from the table rebuilt from "
                         "the evidence") for n in sorted(made & have)
                if not filecmp.cmp(Path(tmp) / n, shipped / n, shallow=False)]
    return out


def crate_required(package: Path) -> list[Mismatch]:
    if (package / CRATE_FILE).is_file():
        return []
    return [Mismatch(CRATE_FILE, "package", "missing: a release's package carries its "
                     "RO-Crate, and the lock pins it")]
