"""Release stage: the sanitized package (paper §7) a reviewer rebuilds every number from.

A package whose artifacts drifted from its own lock, or that holds anything the scanner
refuses, is never written.
"""

from __future__ import annotations

import gzip
import logging
import shutil
import tarfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..errors import StudyError
from ..evidence.load import read_table
from ..evidence.provenance import check_same_study, study_digest
from ..io import load_yaml, read_json, sha256_file, write_json, write_yaml
from ..study.own_arms import arms_file_path, own_arm_files
from .crate import is_snakemake_mark, run_facts, workflow_sources, write_crate
from .lock import EVIDENCE_FILES
from .redact import (
    SessionSecrets,
    accounted,
    own_session_sweeps,
    redact_package,
    session_secrets,
)
from .sanitize import sanitize_config
from .scan import (
    ABSOLUTE_PATH,
    Finding,
    ReleaseRefused,
    live_secrets,
    local_markers,
    scan_text,
    scan_tree,
)
from .verify import verify_study
from .whole import LOCK_FILE, TOKEN_CLASSES, package_section, rebuild_tables

log = logging.getLogger(__name__)

# The checkout this package runs from: its absolute path must never reach a release.
PROJECT_ROOT = Path(__file__).resolve().parents[3]


def planted_values(evidence_dir: str | Path, fixtures: str | None) -> tuple[set[str], set[str]]:
    """Values the study planted (allowed in a release), and the hosts among them."""
    values = set(read_table(Path(evidence_dir) / "checks.csv")["expected"].astype(str))
    if fixtures and Path(fixtures).is_dir():
        for m in Path(fixtures).rglob("manifest.json"):
            values |= {f["value"] for f in read_json(m)["facts"]}
    hosts = {urlparse(v).hostname or "" for v in values if v.startswith("http")}
    zones = {v for v in values if "." in v and " " not in v and "/" not in v}
    return values, {h for h in hosts | zones if h}


# The columns holding what a model wrote (its replies, carries, answers).
MODEL_TEXT = {"rows.csv": ("answer",), "checks.csv": ("answer_line",),
              "folds.csv": ("reply", "carry", "schema_errors")}


def model_written_paths(evidence_dir: str | Path) -> set[str]:
    """Absolute paths that occur in what a model wrote: allowed in a release by value.

    A model is never shown a path of this machine, so a path in its reply is the study's
    data (a planted /srv/... path cut short, one it made up), not a leak; refusing it
    would make a study unreleasable for what its model said.
    """
    import pandas as pd

    out: set[str] = set()
    for name, cols in MODEL_TEXT.items():
        p = Path(evidence_dir) / name
        if not p.is_file():
            continue
        header = set(pd.read_csv(p, nrows=0).columns)
        use = [c for c in cols if c in header]
        if not use:
            continue
        df = pd.read_csv(p, usecols=use, dtype=str, keep_default_na=False)
        for c in use:
            for text in df[c]:
                out |= {m.group(0) for m in ABSOLUTE_PATH.finditer(text)}
    return out


def make_release(name: str, evidence_dir: str, numbers: str, lock: str, config: dict[str, Any],
                 tables: str, figures: str | None, fixtures: str | None, project_root: Path,
                 out_dir: str, tar_out: str, readme_template: str,
                 verify: dict[str, Any] | None = None, *,
                 workflow_root: str | Path = PROJECT_ROOT,
                 schema: dict[str, Any] | None = None,
                 metadata_dir: str = ".snakemake/metadata") -> None:
    """Verify against the lock, assemble results/release/<name>/ with its RO-Crate
    (release/crate.py), scan it, crate included, pin every file in its lock.json
    (release/whole.py) and pack it.

    Paper §7: private endpoints and local paths are excluded (release/sanitize.py), a
    published session's secrets redacted, by shape and by the text its transcript scan
    found (release/redact.py), and a credential anywhere else, any text of a redacted
    one left, or a file that drifted from the lock, means no package is written.
    workflow_root: the checkout whose Snakefile, rule files and scripts the package
    carries as the crate's workflow; metadata_dir: Snakemake's job records, read for the
    run's start time only.
    """
    ev = Path(evidence_dir)
    check_sessions_publishable(config)
    released, substituted = sanitize_config(config)
    # The config first: a secret left in it is named by the scanner, by key and line,
    # rather than hidden behind the lock's digest of the config.
    scan_config(released, ev, fixtures, project_root)
    if verify is not None:
        verify_study(evidence_dir, numbers, lock, config=config, **verify)
    # the published sessions' secrets, each finding found again, before anything is written
    own = own_session_sweeps(config)
    secrets = session_secrets(config, fixtures) if own else SessionSecrets()
    files = _package_files(ev, numbers, lock, figures, workflow_root, config)
    dest = Path(out_dir)
    assemble(files, dest)
    write_yaml(released, dest / "config.yaml")
    redacted = redact_package(dest, secrets) if own else {}
    rewritten = sorted(redacted) + (["evidence/manifest.json"] if release_manifest(
        dest / "evidence/manifest.json", redacted) else [])
    _rebuild_package_tables(name, dest, tables, verify, config)
    (dest / "README.md").write_text(
        Path(readme_template).read_text(encoding="utf-8").replace("{{ name }}", name)
        + left_out(substituted, redacted), encoding="utf-8")
    values, hosts = planted_values(dest / "evidence", fixtures)
    allowed, markers = values | model_written_paths(dest / "evidence"), local_markers(
        project_root)

    def refuse(findings: list[Finding]) -> None:
        findings = [f for f in findings if not (f.kind == "private endpoint URL"
                                                and _host_allowed(f.excerpt, hosts))]
        if findings:
            raise ReleaseRefused(findings)

    # Every file, then the crate that describes them: a leak is named before anything
    # the crate would say of the files; and what the crate says is scanned as they are.
    refuse(scan_tree(dest, live_secrets(), allowed, markers, secrets.index))
    lock_json = read_json(lock)
    facts = run_facts(name, released, dest, lock_json, workflow_root, schema, metadata_dir,
                      job_outputs(files, lock_json, verify))
    crate = write_crate(dest, replace(facts, lock_sha256={
        k: v for k, v in facts.lock_sha256.items() if k not in rewritten}))
    refuse(scan_text(crate.name, crate.read_text(encoding="utf-8"), live_secrets(), allowed,
                     markers, secrets.index))
    write_json({**lock_json, "package": package_section(dest, substituted, redacted,
                                                        rewritten)},
               dest / LOCK_FILE)
    tarball(dest, Path(tar_out))
    log.info("release %s: %d files, scanned clean; %d config value(s) excluded (private "
             "endpoints, local paths: %s); %s; %s", name,
             sum(1 for p in dest.rglob("*") if p.is_file()), len(substituted),
             ", ".join(sorted(substituted)) or "none", accounted(secrets, redacted), tar_out)


def _package_files(ev: Path, numbers: str, lock: str, figures: str | None,
                   workflow_root: str | Path, config: dict[str, Any]) -> dict[str, Path]:
    """What the package carries, by its path there: the evidence, the numbers, the token
    classes, the lock, the figures, the workflow's sources and the user's own arms."""
    files: dict[str, Path] = {f"evidence/{n}": ev / n for n in (*EVIDENCE_FILES, "manifest.json")
                              if (ev / n).is_file()}
    files["stats/numbers.json"] = Path(numbers)
    tokens = Path(numbers).parent / Path(TOKEN_CLASSES).name
    if tokens.is_file():
        files[TOKEN_CLASSES] = tokens
    files[LOCK_FILE] = Path(lock)
    if figures and Path(figures).is_dir():
        files["figures"] = Path(figures)
    files.update(workflow_sources(workflow_root))
    if (arms_file := arms_file_path(config)) is not None:
        # the user's own arms are the study's method, as its Snakefile is: carried, and
        # the released config names them there (release/sanitize.py)
        files.update(own_arm_files(arms_file))
    return files


def _rebuild_package_tables(name: str, dest: Path, tables: str, verify: dict[str, Any] | None,
                            config: dict[str, Any]) -> None:
    """The package's tables, rebuilt from its own evidence (what a reviewer rebuilds);
    any that differ from the study's are named in a warning."""
    resources = Path((verify or {}).get("resources") or PROJECT_ROOT / "resources")
    analysis = (verify or {}).get("analysis") or resources / "analysis.yaml"
    rebuild_tables(dest, dest / "tables", analysis, resources, config)
    differ = [n.name for n in sorted((dest / "tables").iterdir())
              if (Path(tables) / n.name).is_file()
              and (Path(tables) / n.name).read_bytes() != n.read_bytes()]
    if differ:
        log.warning("release %s: %d table(s) rebuilt from the package differ from %s (the "
                    "package's are what a reviewer rebuilds): %s", name, len(differ), tables,
                    ", ".join(differ[:10]))


def left_out(substituted: dict[str, Any], redacted: dict[str, int]) -> str:
    """What the package's README says the release left out (paper §7)."""
    if not substituted and not redacted:
        return ""
    lines = ["", "## Left out of this release", ""]
    if substituted:
        lines.append(f"- {len(substituted)} config value(s) naming a private endpoint or a "
                     "local path, each replaced by what it was (`<local server: …>`, "
                     "`<private endpoint>`, `<local path: …>`): "
                     + ", ".join(f"`{k}`" for k in sorted(substituted)) + ". The lock keeps "
                     "the digest of the config as it ran; verify accepts exactly these.")
    if redacted:
        lines.append(f"- {sum(redacted.values())} secret(s) in the published session's text, "
                     "each replaced by `<redacted: kind>`: " + ", ".join(
                         f"{k} ({n})" for k, n in sorted(redacted.items())) + ".")
    return "\n".join(lines) + "\n"


def release_manifest(path: Path, redacted: dict[str, int]) -> bool:
    """The manifest as released: its copy of the config sanitized as config.yaml is, and
    each redacted file's sha256 and the count of its redactions. Whether it changed."""
    if not path.is_file():
        return False
    manifest = read_json(path)
    changed = bool(redacted)
    if isinstance(manifest.get("config"), dict):
        config, substituted = sanitize_config(manifest["config"])
        if substituted:
            manifest["config"], changed = config, True
            if "study_sha256" in manifest:  # the digest of the config it now holds
                manifest["study_sha256"] = study_digest(config)
    for rel, n in redacted.items():
        entry = (manifest.get("artifacts") or {}).get(Path(rel).name)
        if isinstance(entry, dict):
            entry["sha256"] = sha256_file(path.parent.parent / rel)
            entry["redacted"] = n
    if changed:
        write_json(manifest, path)
    return changed


def job_outputs(files: Mapping[str, Path], lock: dict[str, Any],
                verify: dict[str, Any] | None) -> list[str]:
    """The paths, as the rules wrote them, of the package's artifacts and of the run
    records the lock pins: the jobs whose start Snakemake recorded begin the run."""
    out = []
    for src in files.values():
        out.append(str(src))
        if src.is_dir():
            out += [str(p) for p in sorted(src.rglob("*")) if p.is_file()]
    runs = (verify or {}).get("runs")
    listing = lock.get("private", {}).get("runs", {}).get("listing", {})
    if runs:
        out += [str(Path(runs) / rel) for rel in listing]
    return out


def scan_config(config: dict[str, Any], evidence_dir: Path, fixtures: str | None,
                project_root: Path) -> None:
    """The scanner over the config the package will carry, before anything is verified
    or written: what it refuses there it refuses by line of config.yaml."""
    import yaml

    values, hosts = (planted_values(evidence_dir, fixtures)
                     if (evidence_dir / "checks.csv").is_file() else (set(), set()))
    text = yaml.safe_dump(config, sort_keys=True, allow_unicode=True)
    findings = [f for f in scan_text("config.yaml", text, live_secrets(), values,
                                     local_markers(project_root))
                if not (f.kind == "private endpoint URL" and _host_allowed(f.excerpt, hosts))]
    if findings:
        raise ReleaseRefused(findings)


class SessionsUnpublished(StudyError, RuntimeError):
    """A release of a study that folds the user's own sessions, not opted into."""


def check_sessions_publishable(config: dict[str, Any]) -> None:
    """A transcript is a private input (docs/design.md §3): the package leaves it and its chunks
    out, but its folds.csv carries and its rows' answers quote the session's text, so a
    study folding the user's own sessions is released only when the config says so."""
    sweeps = own_session_sweeps(config)
    if sweeps and not (config.get("release") or {}).get("publish_sessions"):
        raise SessionsUnpublished(
            f"release refused: sweep(s) {', '.join(sweeps)} fold your own session(s), and "
            "the package's carries (evidence/folds.csv) and answers (rows.csv) quote their "
            "text; set release.publish_sessions: true in the study config to publish them")


def _host_allowed(url: str, hosts: set[str]) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return any(host == h or host.endswith("." + h) for h in hosts)


def assemble(files: Mapping[str, Path], dest: Path) -> None:
    """Copy files (package path -> source) into dest, replacing what was there; of a
    directory (results/figures), Snakemake's empty mark at its top is left out."""
    if dest.exists():
        shutil.rmtree(dest)
    for rel, src in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, ignore=lambda d, names, top=src: [
                n for n in names if is_snakemake_mark(top, Path(d) / n)])
        else:
            shutil.copy2(src, target)


def tarball(src_dir: Path, out: Path) -> None:
    """A reproducible tar.gz: sorted entries, no owners, fixed mtimes."""

    def clean(ti: tarfile.TarInfo) -> tarfile.TarInfo:
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.mtime = 0
        return ti

    out.parent.mkdir(parents=True, exist_ok=True)
    # gzip's header would carry the file's name and the time: both left empty.
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                               mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
        for p in sorted(src_dir.rglob("*")):
            tar.add(p, arcname=f"{src_dir.name}/{p.relative_to(src_dir).as_posix()}",
                    recursive=False, filter=clean)


def release_stage(input: Any, output: Any, params: Any) -> None:
    """Rule release: results/release/<name>/ and its tarball."""
    check_same_study(Path(params.evidence) / "manifest.json", params.config)
    make_release(params.name, params.evidence, input.numbers, input.lock, params.config,
                 input.tables, params.figures, params.fixtures, PROJECT_ROOT,
                 output.package, output.tarball, input.readme,
                 verify={**params.verify, "analysis": input.analysis},
                 workflow_root=Path(input.snakefile).parent, schema=load_yaml(input.schema))
