"""Verify: recompute every number and name each artifact or number that drifted.

`verify` recomputes every number from rows.csv and checks.csv alone and names each
artifact or number that drifted from the manifest, the lock (release/lock.py, which pins
them) or the claims file (release/claims.py); a released package is verified where it
lies, its crate and its pins. The report is pure; verify_study reads and writes files and
takes plain paths, so a test calls it as the rule does (paper §7: numbers that cannot
drift from the evidence they came from).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..evidence.provenance import Mismatch, check_manifest, check_same_study
from ..io import MalformedFile, load_yaml, read_json_object
from .claims import claim_mismatches, claims_report, judge_claims
from .crate import CRATE_FILE, crate_mismatches
from .lock import (
    EVIDENCE_FILES,
    VerifyFailed,
    check_contracts,
    check_lock,
    check_numbers,
    dirs_of,
    flat_numbers,
    private_inputs,
    public_artifacts,
    recompute_numbers,
    require_built,
    store_describer,
)
from .whole import crate_required, is_package, pin_mismatches, table_mismatches

log = logging.getLogger(__name__)


def verify_report(mismatches: list[Mismatch], checked: list[str], claims: str = "") -> str:
    """results/verify/report.md: OK or each mismatch, then what was checked."""
    head = "# Verify report\n\n"
    body = "Checked:\n" + "".join(f"- {c}\n" for c in checked) + "\n" + (
        "\n" + claims if claims else "")
    if not mismatches:
        return head + "**OK**: no drift.\n\n" + body
    return (head + f"**FAILED**: {len(mismatches)} mismatch(es).\n\n"
            + "\n".join(m.line() for m in mismatches) + "\n\n" + body)


def verify_study(evidence_dir: str, numbers: str, lock_path: str, claims_path: str | None,
                 report_out: str, store: str | None, runs: str | None, fixtures: str | None,
                 resources: str, analysis: str, config: dict[str, Any],
                 ledger: str | None = None) -> list[Mismatch]:
    """Recompute every number and name everything that drifted; raise if anything did."""
    require_built(evidence_dir, numbers)
    d = Path(evidence_dir)
    files = {n: d / n for n in EVIDENCE_FILES if (d / n).is_file()}
    checked = []
    mismatches: list[Mismatch] = []
    manifest_path = d / "manifest.json"
    manifest = _json_or_mismatch(manifest_path, "evidence/manifest.json", mismatches,
                                 "manifest")
    if manifest is not None:
        mismatches += check_manifest(manifest, files)
        checked.append(f"{len(files)} evidence artifacts against {manifest_path.name}")
    mismatches += check_contracts(files)
    checked.append("column contracts of " + ", ".join(sorted(files)))
    try:
        recomputed = recompute_numbers(d, analysis, config.get("scopes"))
    except (ValueError, KeyError) as e:  # a malformed column or row, named by the loader
        mismatches.append(Mismatch("rows.csv/checks.csv", "recompute", str(e)[:500]))
        recomputed = None
    stored = _json_or_mismatch(Path(numbers), "stats/numbers.json", mismatches)
    if stored is not None and recomputed is not None:
        mismatches += check_numbers(recomputed, flat_numbers(stored), "stats/numbers.json")
    if recomputed is not None:
        checked.append(f"{len(recomputed)} numbers recomputed from rows.csv and checks.csv")
    lock_file = Path(lock_path)
    lock = (_json_or_mismatch(lock_file, lock_file.name, mismatches, "lock")
            if lock_file.is_file() else None)
    if lock is not None:
        mismatches += check_lock(
            lock, private_inputs(store, runs, fixtures, resources, config, ledger),
            public_artifacts(d, numbers), recomputed if recomputed is not None
            else lock.get("numbers", {}), study=config.get("study"),
            describe=store_describer(store))
        checked.append(f"lock {lock_file.name}: {len(lock['private'])} private inputs, "
                       f"{len(lock['public'])} public artifacts, {len(lock['numbers'])} numbers")
    elif not lock_file.is_file():
        mismatches.append(Mismatch(lock_file.name, "lock",
                                      "no lock for this study; pin it with `snakemake -c1 lock`"))
    if is_package(d, lock_path):
        check_package(d.parent, lock, analysis, resources, config, mismatches, checked)
    else:
        check_crate(d.parent, mismatches, checked)
    claims_text = _claims(claims_path, recomputed, corpus_package(config, lock), mismatches,
                          checked)
    text = verify_report(mismatches, checked, claims_text)
    Path(report_out).parent.mkdir(parents=True, exist_ok=True)
    Path(report_out).write_text(text, encoding="utf-8")
    for m in mismatches:
        log.error("%s", m.line())
    if mismatches:
        raise VerifyFailed(f"verify failed: {len(mismatches)} mismatch(es); see {report_out}")
    log.info("verify: OK (%s)", "; ".join(checked))
    return mismatches


def check_crate(package: Path, mismatches: list[Mismatch], checked: list[str]) -> None:
    """A released package verified where it lies (its evidence/ beside its crate): every
    file's sha256 in ro-crate-metadata.json against the file (release/crate.py)."""
    if not (package / CRATE_FILE).is_file():
        return
    found = crate_mismatches(package)
    mismatches += found
    checked.append(f"{CRATE_FILE}: every file's sha256 against the file"
                   + (f" ({len(found)} mismatch(es))" if found else ""))


def corpus_package(config: dict[str, Any], lock: dict[str, Any] | None) -> bool:
    """Whether exact claims (the paper's own corpus) are checkable: evidence read from a
    package, unless its lock pins a response store or run records, i.e. the package was
    released from a fresh run of the study, whose row counts are its own."""
    fresh = lock is not None and any(k in (lock.get("private") or {}) for k in ("store", "runs"))
    return bool(config.get("evidence")) and not fresh


def check_package(package: Path, lock: dict[str, Any] | None, analysis: str, resources: str,
                  config: dict[str, Any], mismatches: list[Mismatch], checked: list[str]
                  ) -> None:
    """A released package verified where it lies: the crate is there, every file is the
    one the lock pinned, the tables rebuild from the evidence, and every crate entry and
    PropertyValue agrees with the files and the config (docs/design.md §7)."""
    found = crate_required(package)
    if lock is not None:
        found += pin_mismatches(package, lock)
    found += table_mismatches(package, analysis, resources, config)
    if (package / CRATE_FILE).is_file():
        found += crate_mismatches(package, config)
    mismatches += found
    checked.append(f"the package whole: every file against the lock's pin, the tables "
                   f"rebuilt from the evidence, {CRATE_FILE}'s entries and values"
                   + (f" ({len(found)} mismatch(es))" if found else ""))


def _claims(claims_path: str | None, recomputed: dict[str, Any] | None, package: bool,
            mismatches: list[Mismatch], checked: list[str]) -> str:
    """Judge the study's claims file; the report always says which file it read and how
    many claims it checked, or why it checked none."""
    if not claims_path:
        why = "this study names no claims file"
    elif not Path(claims_path).is_file():
        why = (f"no claims file for this study at {claims_path} (resources/claims/"
               "<study>.yaml; the study name picks it)")
    elif recomputed is None:
        why = f"{claims_path} read, but the numbers could not be recomputed"
    else:
        claims = load_yaml(claims_path) or {}
        items = claims.get("claims", [])
        verdicts = judge_claims(items, recomputed, package)
        mismatches += claim_mismatches(verdicts, Path(claims_path).name)
        done = sum(v.verdict != "not checkable here" for v in verdicts)
        checked.append(f"{len(items)} claims in {claims_path}: {done} checkable here")
        return claims_report(claims_path, verdicts)
    checked.append(f"no claim checked: {why}")
    return claims_report(str(claims_path), None, why)


# What each JSON file verify reads must be: its object-valued keys, and those whose every
# value is an entry object (io.read_json_object).
_SHAPES: dict[str, dict[str, tuple[str, ...]]] = {
    "manifest": {"mappings": ("config",), "entries": ("artifacts",)},
    "lock": {"mappings": ("numbers",), "entries": ("private", "public")},
    "numbers": {},
}


def _json_or_mismatch(path: Path, name: str, mismatches: list[Mismatch],
                      kind: str = "numbers") -> Any:
    """The parsed file, or None with a mismatch saying why it could not be read (not
    JSON, or not of its kind's shape: a lock that is `[]`, a manifest whose artifacts
    are a list)."""
    if not path.is_file():
        mismatches.append(Mismatch(name, "evidence", "missing"))
        return None
    try:
        return read_json_object(path, f"a {kind} file", **_SHAPES[kind])
    except MalformedFile as e:
        mismatches.append(Mismatch(name, "JSON", f"not readable: {e}"))
        return None


def verify_stage(input: Any, output: Any, params: Any) -> None:
    """Rule verify: results/verify/report.md, failing on any drift."""
    check_same_study(Path(params.evidence) / "manifest.json", params.config)
    verify_study(params.evidence, params.numbers, params.lock, params.claims, params.report,
                 resources=params.resources, analysis=input.analysis, config=params.config,
                 **dirs_of(params))
