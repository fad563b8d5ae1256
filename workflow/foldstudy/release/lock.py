"""Generate: pin the study (lock) and check that nothing drifted from it (verify).

These read and write files and call the pure checks in evidence/provenance.py; each
takes plain paths so a test calls it as the rule does (paper §7: numbers that cannot
drift from the evidence they came from).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..evidence import provenance as pv
from ..evidence.load import load_evidence
from ..io import canonical_sha256, load_yaml, read_json, write_json

log = logging.getLogger(__name__)

EVIDENCE_FILES = ("rows.csv", "checks.csv", "folds.csv", "probes.csv")
EVIDENCE_FILES += ("trace.csv",)  # the per-fold fact trace (DESIGN §8), optional


class VerifyFailed(RuntimeError):
    pass


def recompute_numbers(evidence_dir: str | Path, analysis_yaml: str | Path,
                      scopes: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every number, from rows.csv and checks.csv alone, under the analysis file and the
    study config's scopes the stats rule read (a lock recomputed under other thresholds
    or other scopes would pin other numbers)."""
    from ..analysis.analysis import Analysis
    from ..analysis.numbers import compute_numbers
    from ..analysis.scopes import Scopes

    an = Analysis.load(analysis_yaml)
    return compute_numbers(*load_evidence(evidence_dir, an.arm_order), an,
                           Scopes.from_config(scopes))


def flat_numbers(numbers_json: dict[str, Any]) -> dict[str, Any]:
    """The key -> number part of numbers.json (provenance, if any, kept beside it)."""
    if "numbers" in numbers_json and isinstance(numbers_json["numbers"], dict):
        return numbers_json["numbers"]
    return {k: v for k, v in numbers_json.items() if not isinstance(v, dict | list)}


def private_inputs(store: str | None, runs: str | None, fixtures: str | None,
                   resources: str, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Digests of the private inputs; a directory that is absent here is left out."""
    # `evidence` only says where this build reads its rows from; it is not the study.
    study_config = {k: v for k, v in config.items() if k != "evidence"}
    out: dict[str, dict[str, Any]] = {
        "resources": pv.tree_digest(resources, listing=True),
        "config": {"sha256": canonical_sha256(study_config)},
    }
    for name, d in (("store", store), ("runs", runs), ("fixtures", fixtures)):
        if d and Path(d).is_dir():
            out[name] = pv.tree_digest(d, listing=name != "store")
    return out


def public_artifacts(evidence_dir: str | Path, numbers: str | Path) -> dict[str, Path]:
    d = Path(evidence_dir)
    out = {f"evidence/{n}": d / n for n in (*EVIDENCE_FILES, "manifest.json")
           if (d / n).is_file()}
    out["stats/numbers.json"] = Path(numbers)
    return out


def require_built(evidence_dir: str | Path, numbers: str | Path) -> None:
    missing = [str(p) for p in (Path(evidence_dir) / "rows.csv", Path(evidence_dir) / "checks.csv",
                                Path(numbers)) if not Path(p).is_file()]
    if missing:
        raise VerifyFailed(f"missing {', '.join(missing)}: build the study first with "
                           "`snakemake -c8 results/tables`")


def write_lock(evidence_dir: str, numbers: str, lock_out: str, study: str,
               store: str | None, runs: str | None, fixtures: str | None, resources: str,
               analysis: str, config: dict[str, Any]) -> None:
    """Pin the study: only `snakemake -c1 lock` calls this."""
    require_built(evidence_dir, numbers)
    recomputed = recompute_numbers(evidence_dir, analysis, config.get("scopes"))
    stored = flat_numbers(read_json(numbers))
    drift = pv.check_numbers(recomputed, stored, "results/stats/numbers.json")
    if drift:
        raise VerifyFailed("numbers.json is stale; rebuild it before locking:\n"
                           + "\n".join(m.line() for m in drift))
    lock = pv.build_lock(study, private_inputs(store, runs, fixtures, resources, config),
                         public_artifacts(evidence_dir, numbers), recomputed)
    write_json(lock, lock_out)
    log.info("wrote %s: %d private inputs, %d public artifacts, %d numbers", lock_out,
             len(lock["private"]), len(lock["public"]), len(lock["numbers"]))


def verify_study(evidence_dir: str, numbers: str, lock_path: str, claims_path: str | None,
                 report_out: str, store: str | None, runs: str | None, fixtures: str | None,
                 resources: str, analysis: str, config: dict[str, Any]) -> list[pv.Mismatch]:
    """Recompute every number and name everything that drifted; raise if anything did."""
    require_built(evidence_dir, numbers)
    d = Path(evidence_dir)
    files = {n: d / n for n in EVIDENCE_FILES if (d / n).is_file()}
    checked = []
    mismatches: list[pv.Mismatch] = []
    manifest_path = d / "manifest.json"
    manifest = _json_or_mismatch(manifest_path, "evidence/manifest.json", mismatches)
    if manifest is not None:
        mismatches += pv.check_manifest(manifest, files)
        checked.append(f"{len(files)} evidence artifacts against {manifest_path.name}")
    mismatches += pv.check_contracts(files)
    checked.append("column contracts of " + ", ".join(sorted(files)))
    try:
        recomputed = recompute_numbers(d, analysis, config.get("scopes"))
    except (ValueError, KeyError) as e:  # a malformed column or row, named by the loader
        mismatches.append(pv.Mismatch("rows.csv/checks.csv", "recompute", str(e)[:500]))
        recomputed = None
    stored = _json_or_mismatch(Path(numbers), "stats/numbers.json", mismatches)
    if stored is not None and recomputed is not None:
        mismatches += pv.check_numbers(recomputed, flat_numbers(stored), "stats/numbers.json")
    if recomputed is not None:
        checked.append(f"{len(recomputed)} numbers recomputed from rows.csv and checks.csv")
    lock_file = Path(lock_path)
    lock = _json_or_mismatch(lock_file, lock_file.name, mismatches) if lock_file.is_file() else None
    if lock is not None:
        mismatches += pv.check_lock(
            lock, private_inputs(store, runs, fixtures, resources, config),
            public_artifacts(d, numbers), recomputed if recomputed is not None
            else lock.get("numbers", {}), study=config.get("study"))
        checked.append(f"lock {lock_file.name}: {len(lock['private'])} private inputs, "
                       f"{len(lock['public'])} public artifacts, {len(lock['numbers'])} numbers")
    elif not lock_file.is_file():
        mismatches.append(pv.Mismatch(lock_file.name, "lock",
                                      "no lock for this study; pin it with `snakemake -c1 lock`"))
    claims_text = _claims(claims_path, recomputed, bool(config.get("evidence")), mismatches,
                          checked)
    text = pv.report(mismatches, checked, claims_text)
    Path(report_out).parent.mkdir(parents=True, exist_ok=True)
    Path(report_out).write_text(text, encoding="utf-8")
    for m in mismatches:
        log.error("%s", m.line())
    if mismatches:
        raise VerifyFailed(f"verify failed: {len(mismatches)} mismatch(es); see {report_out}")
    log.info("verify: OK (%s)", "; ".join(checked))
    return mismatches


def _claims(claims_path: str | None, recomputed: dict[str, Any] | None, package: bool,
            mismatches: list[pv.Mismatch], checked: list[str]) -> str:
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
        verdicts = pv.judge_claims(items, recomputed, package)
        mismatches += pv.claim_mismatches(verdicts, Path(claims_path).name)
        done = sum(v.verdict != "not checkable here" for v in verdicts)
        checked.append(f"{len(items)} claims in {claims_path}: {done} checkable here")
        return pv.claims_report(claims_path, verdicts)
    checked.append(f"no claim checked: {why}")
    return pv.claims_report(str(claims_path), None, why)


def _json_or_mismatch(path: Path, name: str, mismatches: list[pv.Mismatch]) -> Any:
    """The parsed file, or None with a mismatch saying why it could not be read."""
    if not path.is_file():
        mismatches.append(pv.Mismatch(name, "evidence", "missing"))
        return None
    try:
        return read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        mismatches.append(pv.Mismatch(name, "JSON", f"not readable: {e}"))
        return None


def _dirs(params: Any) -> dict[str, str | None]:
    return {k: params.dirs[k] for k in ("store", "runs", "fixtures")}


def lock_stage(input: Any, output: Any, params: Any) -> None:
    """Rule lock: config/<study>.lock.json."""
    pv.check_same_study(Path(params.evidence) / "manifest.json", params.config)
    write_lock(params.evidence, params.numbers, params.lock, params.study,
               resources=params.resources, analysis=input.analysis, config=params.config,
               **_dirs(params))


def verify_stage(input: Any, output: Any, params: Any) -> None:
    """Rule verify: results/verify/report.md, failing on any drift."""
    pv.check_same_study(Path(params.evidence) / "manifest.json", params.config)
    verify_study(params.evidence, params.numbers, params.lock, params.claims, params.report,
                 resources=params.resources, analysis=input.analysis, config=params.config,
                 **_dirs(params))
