"""Manifest, provenance lock and verification (paper §7): numbers that cannot drift.

The manifest describes the evidence (sha256, row counts, schema version, resolved
config); the lock pins, by sha256, the private inputs (response store, run records,
fixtures, prompts and arm specs, config) and the public artifacts, plus every number.
`verify` recomputes every number from rows.csv and checks.csv alone and names each
artifact or number that drifted from the manifest, the lock or the claims file.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..io import canonical_sha256, sha256_file
from . import columns

LOCK_VERSION = 1
CONTRACTS = {"rows.csv": columns.ROWS, "checks.csv": columns.CHECKS, "folds.csv": columns.FOLDS}
CONTRACTS["trace.csv"] = columns.TRACE


def tree_digest(root: str | Path, pattern: str = "*") -> dict[str, Any]:
    """One digest over every file under root (relative path + content), and the count.

    Hidden temp files (.tmp-*) of interrupted writes are not part of the tree.
    """
    root = Path(root)
    h = hashlib.sha256()
    n = 0
    if root.is_dir():
        for p in sorted(q for q in root.rglob(pattern) if q.is_file()):
            if p.name.startswith(".tmp-"):
                continue
            rel = p.relative_to(root).as_posix()
            h.update(rel.encode() + b"\0" + sha256_file(p).encode() + b"\n")
            n += 1
    return {"sha256": h.hexdigest(), "files": n}


def csv_rows(path: str | Path) -> int:
    """Data rows of a CSV, counting quoted newlines correctly."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return max(0, sum(1 for _ in csv.reader(f)) - 1)


def csv_header(path: str | Path) -> list[str]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


def package_version() -> str:
    try:
        return metadata.version("foldstudy")
    except metadata.PackageNotFoundError:
        return "unknown"


# Config keys that say how this build runs, not what the study is: a replay, a retry or
# a reviewer's rebuild from a package is the same study.
EXECUTION_KEYS = ("evidence", "replay", "retry_infrastructure", "limits", "store")


def study_digest(config: dict[str, Any]) -> str:
    """sha256 of what the study is: its resolved config less the execution keys."""
    return canonical_sha256({k: v for k, v in config.items() if k not in EXECUTION_KEYS})


class OtherStudy(ValueError):
    """Evidence made by another study or config than the one asking for it."""


def check_same_study(manifest_path: str | Path, config: dict[str, Any]) -> None:
    """Refuse evidence whose manifest names another study or config digest, naming both.

    Every study writes the same results/ paths, so after the default study a run of the
    paper study in a checkout without .snakemake metadata would otherwise publish the
    paper's tables from the default study's rows. A package without a manifest cannot
    be checked (a reviewer's minimal package) and is read as it is.
    """
    p = Path(manifest_path)
    if not p.is_file():
        return
    import json

    m = json.loads(p.read_text(encoding="utf-8"))
    made = m.get("config") or {}
    theirs = m.get("study_sha256") or study_digest(made)
    ours = study_digest(config)
    if made.get("study") != config.get("study") or theirs != ours:
        raise OtherStudy(
            f"{p}: this evidence was made by study {made.get('study')!r} (config "
            f"{theirs[:12]}…), not by study {config.get('study')!r} (config {ours[:12]}…) "
            "that asks for it now. Rebuild it for this study (snakemake -c8 results/tables "
            "--configfile <this study's config>, which reruns its folds from the response "
            "store), or point --config evidence= at this study's own package.")


def build_manifest(artifacts: dict[str, str | Path], config: dict[str, Any]) -> dict[str, Any]:
    """The evidence manifest: what each artifact is, so a reviewer can check it."""
    entries = {}
    for name, path in sorted(artifacts.items()):
        entry: dict[str, Any] = {"sha256": sha256_file(path)}
        if name.endswith(".csv"):
            entry["rows"] = csv_rows(path)
            entry["columns"] = len(csv_header(path))
        entries[name] = entry
    return {
        "schema_version": columns.SCHEMA_VERSION,
        "package": "foldstudy",
        "package_version": package_version(),
        "artifacts": entries,
        "config": config,
        "study": config.get("study"),
        "study_sha256": study_digest(config),
    }


def build_lock(
    study: str,
    private: dict[str, dict[str, Any]],
    public: dict[str, str | Path],
    numbers: dict[str, Any],
) -> dict[str, Any]:
    return {
        "lock_version": LOCK_VERSION,
        "study": study,
        "private": dict(sorted(private.items())),
        "public": {name: {"sha256": sha256_file(p)} for name, p in sorted(public.items())},
        "numbers": dict(sorted(numbers.items())),
    }


@dataclass(frozen=True)
class Mismatch:
    """One thing that drifted: what, against which reference, and how."""

    what: str
    against: str
    detail: str

    def line(self) -> str:
        return f"- `{self.what}` vs {self.against}: {self.detail}"


def _same_number(a: Any, b: Any, rel: float = 1e-12, abs_: float = 1e-12) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    try:
        return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)
    except (TypeError, ValueError):
        return a == b


def check_manifest(manifest: dict[str, Any], files: dict[str, Path]) -> list[Mismatch]:
    """Every artifact the manifest lists exists, has its sha256, row count and contract."""
    out = []
    for name, entry in manifest.get("artifacts", {}).items():
        p = files.get(name)
        if p is None or not p.is_file():
            out.append(Mismatch(name, "manifest", "listed but missing"))
            continue
        digest = sha256_file(p)
        if digest != entry["sha256"]:
            out.append(Mismatch(name, "manifest",
                                f"sha256 {digest[:12]}… differs from {entry['sha256'][:12]}…"))
        if "rows" in entry and csv_rows(p) != entry["rows"]:
            out.append(Mismatch(name, "manifest",
                                f"{csv_rows(p)} rows, manifest says {entry['rows']}"))
    if manifest.get("schema_version") != columns.SCHEMA_VERSION:
        out.append(Mismatch("manifest.json", "this workflow",
                            f"schema version {manifest.get('schema_version')} is not "
                            f"{columns.SCHEMA_VERSION}"))
    return out


def check_contracts(files: dict[str, Path]) -> list[Mismatch]:
    """Each evidence CSV carries every column its contract names (more may be added)."""
    out = []
    for name, cols in CONTRACTS.items():
        p = files.get(name)
        if p is None or not p.is_file():
            continue
        missing = [c for c in cols if c not in set(csv_header(p))]
        if missing:
            out.append(Mismatch(name, "column contract (foldstudy/columns.py)",
                                f"missing column(s) {', '.join(missing)}"))
    return out


def check_numbers(recomputed: dict[str, Any], reference: dict[str, Any], against: str
                  ) -> list[Mismatch]:
    out = []
    for key in sorted(set(recomputed) | set(reference)):
        if key not in reference:
            out.append(Mismatch(key, against, f"recomputed {recomputed[key]!r}, absent there"))
        elif key not in recomputed:
            out.append(Mismatch(key, against, f"{reference[key]!r} there, not recomputable"))
        elif not _same_number(recomputed[key], reference[key]):
            out.append(Mismatch(key, against,
                                f"recomputed {recomputed[key]!r}, there {reference[key]!r}"))
    return out


def check_lock(
    lock: dict[str, Any],
    private_now: dict[str, dict[str, Any]],
    public_now: dict[str, Path],
    recomputed: dict[str, Any],
) -> list[Mismatch]:
    """Everything the lock pins that is present here must be unchanged.

    Private inputs absent here (a reviewer's evidence-only package) are not a mismatch:
    the lock still names them, so their owner can check them.
    """
    out = []
    for name, pinned in lock.get("private", {}).items():
        now = private_now.get(name)
        if now is None:
            continue
        if now.get("sha256") != pinned.get("sha256"):
            out.append(Mismatch(name, "lock (private input)",
                                f"sha256 {str(now.get('sha256'))[:12]}… differs from the pinned "
                                f"{str(pinned.get('sha256'))[:12]}…"))
    for name, pinned in lock.get("public", {}).items():
        p = public_now.get(name)
        if p is None or not p.is_file():
            out.append(Mismatch(name, "lock (public artifact)", "pinned but missing"))
        elif sha256_file(p) != pinned["sha256"]:
            out.append(Mismatch(name, "lock (public artifact)",
                                f"sha256 {sha256_file(p)[:12]}… differs from the pinned "
                                f"{pinned['sha256'][:12]}…"))
    out += check_numbers(recomputed, lock.get("numbers", {}), "lock (numbers)")
    return out


def check_claims(claims: Iterable[dict[str, Any]], recomputed: dict[str, Any], source: str
                 ) -> list[Mismatch]:
    """Numbers quoted in a write-up, each within its stated tolerance of the recomputed one."""
    out = []
    for c in claims:
        key, value, tol = c["key"], c["value"], float(c.get("tolerance", 0.0))
        where = f"{source} ({c.get('where', 'claim')})"
        if key not in recomputed:
            out.append(Mismatch(key, where, f"claims {value!r}; not recomputable from the "
                                            "evidence"))
        elif abs(float(recomputed[key]) - float(value)) > tol + 1e-12:
            out.append(Mismatch(key, where, f"claims {value!r} ± {tol:g}; recomputed "
                                            f"{recomputed[key]!r}"))
    return out


def report(mismatches: list[Mismatch], checked: list[str]) -> str:
    head = "# Verify report\n\n"
    body = "Checked:\n" + "".join(f"- {c}\n" for c in checked) + "\n"
    if not mismatches:
        return head + "**OK**: no drift.\n\n" + body
    return (head + f"**FAILED**: {len(mismatches)} mismatch(es).\n\n"
            + "\n".join(m.line() for m in mismatches) + "\n\n" + body)
