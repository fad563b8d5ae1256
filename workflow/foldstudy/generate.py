"""Entry points of the generate stage: evidence manifest, lock, verify, release.

Like entry.py, these read and write files and call the pure logic in provenance.py,
release.py and numbers.py; each takes plain paths so tests call them as rules do.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import yaml

from . import provenance as pv
from . import release as rl
from .entry import merge_evidence, read_json, write_json
from .evidence import read_csv

log = logging.getLogger("foldstudy")

EVIDENCE_FILES = ("rows.csv", "checks.csv", "folds.csv", "probes.csv")


class VerifyFailed(RuntimeError):
    pass


def publish_evidence(parts: dict[str, list[str]], outs: dict[str, str], manifest_out: str,
                     config: dict[str, Any], probes: tuple[str, str] | None = None) -> None:
    """Merge the per-sweep tables into results/evidence/ and describe them in a manifest.

    probes: (the probe's summary.tsv, probes.csv to write): the verdicts travel with the
    evidence, so a reviewer's package shows which (model, endpoint, request) could run.
    """
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


def recompute_numbers(evidence_dir: str | Path) -> dict[str, Any]:
    """Every number, from rows.csv and checks.csv alone."""
    from .numbers import compute_numbers, load_evidence

    return compute_numbers(*load_evidence(evidence_dir))


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
        "resources": pv.tree_digest(resources),
        "config": {"sha256": pv.canonical_sha256(study_config)},
    }
    for name, d in (("store", store), ("runs", runs), ("fixtures", fixtures)):
        if d and Path(d).is_dir():
            out[name] = pv.tree_digest(d)
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
               config: dict[str, Any]) -> None:
    """Pin the study: only `snakemake -c1 lock` calls this."""
    require_built(evidence_dir, numbers)
    recomputed = recompute_numbers(evidence_dir)
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
                 resources: str, config: dict[str, Any]) -> list[pv.Mismatch]:
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
        recomputed = recompute_numbers(d)
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
            else lock.get("numbers", {}))
        checked.append(f"lock {lock_file.name}: {len(lock['private'])} private inputs, "
                       f"{len(lock['public'])} public artifacts, {len(lock['numbers'])} numbers")
    elif not lock_file.is_file():
        mismatches.append(pv.Mismatch(lock_file.name, "lock",
                                      "no lock for this study; pin it with `snakemake -c1 lock`"))
    if claims_path and Path(claims_path).is_file() and recomputed is not None:
        claims = yaml.safe_load(Path(claims_path).read_text(encoding="utf-8")) or {}
        items = claims.get("claims", [])
        mismatches += pv.check_claims(items, recomputed, Path(claims_path).name)
        checked.append(f"{len(items)} claims in {Path(claims_path).name}")
    text = pv.report(mismatches, checked)
    Path(report_out).parent.mkdir(parents=True, exist_ok=True)
    Path(report_out).write_text(text, encoding="utf-8")
    for m in mismatches:
        log.error("%s", m.line())
    if mismatches:
        raise VerifyFailed(f"verify failed: {len(mismatches)} mismatch(es); see {report_out}")
    log.info("verify: OK (%s)", "; ".join(checked))
    return mismatches


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


def planted_values(evidence_dir: str | Path, fixtures: str | None) -> tuple[set[str], set[str]]:
    """Values the study planted (allowed in a release), and the hosts among them."""
    values = set(read_csv(Path(evidence_dir) / "checks.csv")["expected"].astype(str))
    if fixtures and Path(fixtures).is_dir():
        for m in Path(fixtures).rglob("manifest.json"):
            values |= {f["value"] for f in read_json(m)["facts"]}
    hosts = {urlparse(v).hostname or "" for v in values if v.startswith("http")}
    zones = {v for v in values if "." in v and " " not in v and "/" not in v}
    return values, {h for h in hosts | zones if h}


def make_release(name: str, evidence_dir: str, numbers: str, lock: str, config: dict[str, Any],
                 tables: str, figures: str | None, fixtures: str | None, project_root: str,
                 out_dir: str, tar_out: str, readme_template: str,
                 verify: dict[str, Any] | None = None) -> None:
    """Verify against the lock, assemble results/release/<name>/, scan it, and pack it.

    A package whose artifacts drifted from its own lock, or that holds anything the
    scanner refuses, is never written.
    """
    if verify is not None:
        verify_study(evidence_dir, numbers, lock, config=config, **verify)
    ev = Path(evidence_dir)
    files: dict[str, Path] = {f"evidence/{n}": ev / n for n in (*EVIDENCE_FILES, "manifest.json")
                              if (ev / n).is_file()}
    files["stats/numbers.json"] = Path(numbers)
    files["lock.json"] = Path(lock)
    files["tables"] = Path(tables)
    if figures and Path(figures).is_dir():
        files["figures"] = Path(figures)
    dest = Path(out_dir)
    rl.assemble(files, dest)
    (dest / "config.yaml").write_text(
        yaml.safe_dump(config, sort_keys=True, allow_unicode=True), encoding="utf-8")
    (dest / "README.md").write_text(
        Path(readme_template).read_text(encoding="utf-8").replace("{{ name }}", name),
        encoding="utf-8")
    values, hosts = planted_values(ev, fixtures)
    findings = rl.scan_tree(dest, rl.live_secrets(), values,
                            rl.local_markers(Path(project_root)))
    findings = [f for f in findings if not (f.kind == "private endpoint URL"
                                            and _host_allowed(f.excerpt, hosts))]
    if findings:
        raise rl.ReleaseRefused(findings)
    rl.tarball(dest, Path(tar_out))
    log.info("release %s: %d files, scanned clean; %s", name,
             sum(1 for p in dest.rglob("*") if p.is_file()), tar_out)


def _host_allowed(url: str, hosts: set[str]) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return any(host == h or host.endswith("." + h) for h in hosts)


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)
