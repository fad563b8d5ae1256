"""Generate: pin the study (lock): the private inputs, the public artifacts and every number.

The lock pins, by sha256, the private inputs (response store, run records, fixtures,
prompts and arm specs, config) and the public artifacts, plus every number; verify
(release/verify.py) checks that nothing drifted from it, with the checks below. The checks
are pure; the stage functions below them read and write files and take plain paths, so a
test calls each as the rule does (paper §7: numbers that cannot drift from the evidence
they came from).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..backends.store import entry_run
from ..errors import StudyError
from ..evidence import columns
from ..evidence.load import load_evidence
from ..evidence.provenance import (
    Mismatch,
    check_same_study,
    config_changes,
    config_keys,
    csv_header,
)
from ..io import (
    JOB_FAILED,
    canonical_sha256,
    read_json,
    sha256_file,
    write_json,
)
from .redact import transcript_file
from .sanitize import accepted_config_changes

log = logging.getLogger(__name__)

LOCK_VERSION = 1
CONTRACTS = {"rows.csv": columns.ROWS, "checks.csv": columns.CHECKS, "folds.csv": columns.FOLDS}
CONTRACTS["trace.csv"] = columns.TRACE
EVIDENCE_FILES = ("rows.csv", "checks.csv", "folds.csv", "probes.csv")
EVIDENCE_FILES += ("trace.csv",)  # the per-fold fact trace (docs/design.md §8), optional


# -- the lock and what drifted from it (pure) --------------------------------------


def tree_digest(root: str | Path, pattern: str = "*", listing: bool = False) -> dict[str, Any]:
    """One digest over every file under root (relative path + content), and the count.

    listing: also each file's sha256 by relative path, so verify can name the file that
    went missing, appeared or changed (run records, fixtures, resources: hundreds of
    files; the response store, thousands, keeps the digest and the count only).
    Hidden temp files (.tmp-*) of interrupted writes are not part of the tree.
    """
    root = Path(root)
    h = hashlib.sha256()
    files: dict[str, str] = {}
    if root.is_dir():
        for p in sorted(q for q in root.rglob(pattern) if q.is_file()):
            if p.name.startswith(".tmp-"):
                continue
            rel = p.relative_to(root).as_posix()
            files[rel] = sha256_file(p)
            h.update(rel.encode() + b"\0" + files[rel].encode() + b"\n")
    out: dict[str, Any] = {"sha256": h.hexdigest(), "files": len(files)}
    if listing:
        out["listing"] = files
    return out


def tree_changes(name: str, pinned: dict[str, Any], now: dict[str, Any],
                 describe: Callable[[str], str] | None = None) -> list[str]:
    """What differs between a pinned tree digest and today's, file by file where the lock
    kept a listing: the missing, the added and the changed, each by path.

    describe: what a file is, said after its path (a store entry: the run it answered)."""
    if name == "config" and "keys" in pinned and "keys" in now:
        return config_changes(pinned["keys"], now["keys"])
    was, got = pinned.get("listing"), now.get("listing")
    if was is None or got is None:
        if pinned.get("files") is not None and now.get("files") != pinned.get("files"):
            return [f"{now.get('files')} files here, the lock pins {pinned.get('files')} "
                    "(a file missing or added)"]
        return []
    out = [f"{name}/{rel}: missing (pinned by the lock)" for rel in sorted(set(was) - set(got))]
    def what(rel: str) -> str:
        return f" ({describe(rel)})" if describe is not None else ""

    out += [f"{name}/{rel}{what(rel)}: not in the lock (added after it)"
            for rel in sorted(set(got) - set(was))]
    out += [f"{name}/{rel}{what(rel)}: sha256 {got[rel][:12]}… differs from the pinned "
            f"{was[rel][:12]}…" for rel in sorted(set(was) & set(got)) if was[rel] != got[rel]]
    return out


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


def _same_number(a: Any, b: Any, rel: float = 1e-12, abs_: float = 1e-12) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    try:
        return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)
    except (TypeError, ValueError):
        return a == b


def check_contracts(files: dict[str, Path]) -> list[Mismatch]:
    """Each evidence CSV carries every column its contract names (more may be added)."""
    out = []
    for name, cols in CONTRACTS.items():
        p = files.get(name)
        if p is None or not p.is_file():
            continue
        missing = [c for c in cols if c not in set(csv_header(p))]
        if missing:
            out.append(Mismatch(name, "column contract (foldstudy/evidence/columns.py)",
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
    study: str | None = None,
    describe: dict[str, Callable[[str], str]] | None = None,
) -> list[Mismatch]:
    """Everything the lock pins that is present here must be unchanged; a lock of another
    study than `study` is one mismatch naming both.

    Private inputs absent here (a reviewer's evidence-only package) are not a mismatch:
    the lock still names them, so their owner can check them. A released package's lock
    (its `package` section, release/whole.py) also says what the release changed: the
    config's substituted keys are accepted at exactly the recorded value, and a file the
    release rewrote (the manifest's config, a published session's redactions) is checked
    against its package pin instead of the study's.
    """
    if study is not None and lock.get("study") != study:
        # Said first and alone: every pin of another study differs, and hundreds of
        # mismatches would hide the one thing that is wrong.
        return [Mismatch("lock", "this study",
                         f"this lock is for study {lock.get('study')!r}, not for study "
                         f"{study!r} that is verified now; verify with that study's config, "
                         f"or pin this one with `snakemake -c1 lock`")]
    out = []
    section = lock.get("package") if isinstance(lock.get("package"), dict) else {}
    rewritten = released_rewrites(section)
    for name, pinned in lock.get("private", {}).items():
        now = private_now.get(name)
        if now is None:
            continue
        if now.get("sha256") != pinned.get("sha256"):
            changes = tree_changes(name, pinned, now, (describe or {}).get(name))
            if name == "config" and section:
                changes = accepted_config_changes(changes, now.get("keys", {}),
                                                  section.get("substituted") or {})
                if not changes:
                    continue
            out.append(Mismatch(name, "lock (private input)", "; ".join(changes[:20]) + (
                f"; … and {len(changes) - 20} more" if len(changes) > 20 else "") if changes
                else f"sha256 {str(now.get('sha256'))[:12]}… differs from the pinned "
                     f"{str(pinned.get('sha256'))[:12]}…"))
    for name, pinned in lock.get("public", {}).items():
        p = public_now.get(name)
        if p is None or not p.is_file():
            out.append(Mismatch(name, "lock (public artifact)", "pinned but missing"))
        elif name in rewritten:
            continue  # the release rewrote it; its package pin is checked (whole.py)
        elif sha256_file(p) != pinned["sha256"]:
            out.append(Mismatch(name, "lock (public artifact)",
                                f"sha256 {sha256_file(p)[:12]}… differs from the pinned "
                                f"{pinned['sha256'][:12]}…"))
    out += check_numbers(recomputed, lock.get("numbers", {}), "lock (numbers)")
    return out


def released_rewrites(section: dict[str, Any]) -> set[str]:
    """The study's files a release rewrote (the manifest's copy of the config, a published
    session's redacted CSVs), as its lock's package section lists them."""
    rewritten = section.get("rewritten") if section else None
    return {str(r) for r in rewritten} if isinstance(rewritten, list) else set()


# -- the stages (I/O at the edge) ----------------------------------------------------


class VerifyFailed(StudyError, RuntimeError):
    pass


def recompute_numbers(evidence_dir: str | Path, analysis_yaml: str | Path,
                      scopes: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every number, from rows.csv and checks.csv alone, under the analysis file and the
    study config's scopes the stats rule read (a lock recomputed under other thresholds
    or other scopes would pin other numbers)."""
    from ..analysis.numbers import compute_numbers
    from ..analysis.plan import AnalysisPlan
    from ..analysis.scopes import Scopes

    plan = AnalysisPlan.load(analysis_yaml)
    return compute_numbers(*load_evidence(evidence_dir, plan.arm_order, plan.scenarios), plan,
                           Scopes.from_config(scopes))


def flat_numbers(numbers_json: dict[str, Any]) -> dict[str, Any]:
    """The key -> number part of numbers.json (provenance, if any, kept beside it)."""
    if "numbers" in numbers_json and isinstance(numbers_json["numbers"], dict):
        return numbers_json["numbers"]
    return {k: v for k, v in numbers_json.items() if not isinstance(v, dict | list)}


def private_inputs(store: str | None, runs: str | None, fixtures: str | None,
                   resources: str, config: dict[str, Any], ledger: str | None = None
                   ) -> dict[str, dict[str, Any]]:
    """Digests of the private inputs; a directory that is absent here is left out.
    ledger: the spend ledger (docs/design.md §6, Spend), pinned like the store whose calls it
    paid."""
    # `evidence` only says where this build reads its rows from, and `budget_usd` how much
    # it may spend (raised to finish it): neither is the study.
    study_config = {k: v for k, v in config.items() if k not in ("evidence", "budget_usd")}
    out: dict[str, dict[str, Any]] = {
        "resources": tree_digest(resources, listing=True),
        "config": {"sha256": canonical_sha256(study_config),
                   "keys": config_keys(study_config)},
    }
    for name, d in (("store", store), ("runs", runs), ("fixtures", fixtures)):
        if d and Path(d).is_dir():
            # The store too, entry by entry: a replay, a retry and verify check each
            # entry they read against its pin (a forger recomputes reply_sha256, not this).
            out[name] = tree_digest(d, listing=True)
    if ledger and Path(ledger).is_file():
        out["ledger"] = {"sha256": sha256_file(ledger), "files": 1}
    # A user's own session transcript is a private input like the store: pinned
    # by its sha256 where it is present, never released.
    for name, entry in (config.get("scenarios") or {}).items():
        path = transcript_file(entry)
        if path.is_file():
            out[f"transcript:{name}"] = {"sha256": sha256_file(path), "files": 1}
    return out


def store_describer(store: str | None) -> dict[str, Callable[[str], str]]:
    """verify names a drifted store entry by the run it answered, not only its path."""
    if not store:
        return {}
    return {"store": lambda rel: entry_run_of(Path(store) / rel)}


def entry_run_of(path: Path) -> str:
    try:
        entry = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return "unreadable: no run named"
    return entry_run(entry) if isinstance(entry, dict) else "not a store entry"


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
               analysis: str, config: dict[str, Any], ledger: str | None = None) -> None:
    """Pin the study: only `snakemake -c1 lock` calls this."""
    require_built(evidence_dir, numbers)
    recomputed = recompute_numbers(evidence_dir, analysis, config.get("scopes"))
    stored = flat_numbers(read_json(numbers))
    drift = check_numbers(recomputed, stored, "results/stats/numbers.json")
    if drift:
        raise VerifyFailed("numbers.json is stale; rebuild it before locking:\n"
                           + "\n".join(m.line() for m in drift))
    lock = build_lock(study, private_inputs(store, runs, fixtures, resources, config, ledger),
                         public_artifacts(evidence_dir, numbers), recomputed)
    write_json(lock, lock_out)
    log.info("wrote %s: %d private inputs, %d public artifacts, %d numbers", lock_out,
             len(lock["private"]), len(lock["public"]), len(lock["numbers"]))


def dirs_of(params: Any) -> dict[str, str | None]:
    """The private inputs' folders a lock or verify rule names (params.dirs)."""
    return {k: params.dirs.get(k) for k in ("store", "runs", "fixtures", "ledger")}


class LockRefused(StudyError, RuntimeError):
    """A lock that would vouch for a build that is not whole: a job refused, a build
    still running, or a symlink standing in for a file the lock would pin."""


# The logs of the rules that read the study without building it: their failures are
# no part of the build the lock pins (a verify against an old lock fails, by design).
_NOT_THE_BUILD = ("lock.log", "verify.log")


def failed_jobs(logs: Path) -> list[str]:
    """Logs under results/logs whose job failed (io.logged's JOB_FAILED line), each with
    its reason: a stage that refused an input left its previous outputs in place."""
    out = []
    for p in sorted(logs.rglob("*.log")) if logs.is_dir() else ():
        if p.name in _NOT_THE_BUILD or p.is_symlink():
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        if JOB_FAILED in text:
            reason = text[text.index(JOB_FAILED) + len(JOB_FAILED):].split("\n", 1)[0]
            out.append(f"{p}: {reason[:300]}")
    return out


def symlinks_under(*roots: str | Path | None) -> list[str]:
    """Every symbolic link under these folders (files and folders alike, never followed):
    a lock pins the bytes a link points at today, not the study's own file."""
    out = []
    for root in roots:
        if not root or not Path(root).exists():
            continue
        if Path(root).is_symlink():
            out.append(f"{root} -> {os.readlink(root)}")
            continue
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                p = Path(folder, name)
                if p.is_symlink():
                    out.append(f"{p} -> {os.readlink(p)}")
    return out


def running_builds(locks: str | Path, results: str | Path) -> list[str]:
    """Snakemake's own locks (`.snakemake/locks/<n>.output.lock`, each listing the files a
    running build will write) that name a file under results/: a build of this
    directory is running, and a lock written now would pin half-written tables."""
    out = []
    own = (Path(results) / "logs" / "lock.log").resolve()
    top = Path(results).resolve()
    for lockfile in sorted(Path(locks).glob("*.output.lock")) if Path(locks).is_dir() else ():
        for line in lockfile.read_text(encoding="utf-8", errors="replace").splitlines():
            p = Path(line.strip()).resolve() if line.strip() else None
            if p is not None and p != own and top in p.parents:
                out.append(f"{lockfile} (writes {line.strip()})")
                break
    return out


def lock_refusals(results: str | Path, store: str | None, build_locks: str | Path
                  ) -> list[str]:
    """Why the study in results/ cannot be pinned now, each naming what and where."""
    out = [f"a build of this directory is running: {b}; wait for it to finish, then lock "
           "(after a crash: snakemake --unlock)" for b in running_builds(build_locks, results)]
    out += [f"a job refused its input: {f}; fix that input and rebuild (snakemake -c8 "
            "results/tables) before locking" for f in failed_jobs(Path(results) / "logs")]
    out += [f"{s}: a symbolic link; the lock pins the study's own files, so replace it "
            "with the file itself (or remove it) and rebuild"
            for s in symlinks_under(results, store)]
    return out


def stale_fixtures(fixtures: str | Path | None, config: dict[str, Any]) -> list[str]:
    """Each session fixture whose manifest's sha256 of its transcript (or of a file its
    thread inherited) is not the file's now: the lock pins the file as it is, and would
    vouch for a fixture cut from other text (an edit that kept the file's size and mtime
    reruns nothing older than the fixture's content param)."""
    if not fixtures:
        return []
    out = []
    scenarios = config.get("scenarios") or {}
    for sweep, sw in sorted((config.get("sweeps") or {}).items()):
        own, made = scenarios.get(sw.get("scenario")), Path(fixtures) / sweep / "manifest.json"
        if not isinstance(own, dict) or not made.is_file():
            continue
        try:
            session = json.loads(made.read_text(encoding="utf-8")).get("session") or {}
        except (OSError, ValueError, AttributeError):
            out.append(f"{made}: not a fixture manifest (unreadable JSON); rebuild it "
                       "(snakemake -c8 results/tables)")
            continue
        pins = [(transcript_file(own), session.get("transcript_sha256"))]
        pins += [(Path(f["path"]), f.get("sha256")) for f in session.get("inherited") or []
                 if isinstance(f, dict) and "path" in f]
        for path, pinned in pins:
            now = sha256_file(path) if path.is_file() else None
            if now != pinned:
                out.append(f"{made}: its fixture was cut from {path} with sha256 "
                           f"{str(pinned)[:12]}…, which now "
                           + (f"has {now[:12]}…" if now else "is missing")
                           + "; rebuild (snakemake -c8 results/tables) before locking")
    return out


def lock_stage(input: Any, output: Any, params: Any) -> None:
    """Rule lock: config/<study>.lock.json, refused while the build is not whole."""
    refusals = lock_refusals(params.results, params.dirs["store"], params.build_locks)
    refusals += stale_fixtures(params.dirs.get("fixtures"), params.config)
    if refusals:
        raise LockRefused(f"not locking {params.lock}: " + " | ".join(refusals[:5]) + (
            f" | … and {len(refusals) - 5} more" if len(refusals) > 5 else ""))
    check_same_study(Path(params.evidence) / "manifest.json", params.config)
    write_lock(params.evidence, params.numbers, params.lock, params.study,
               resources=params.resources, analysis=input.analysis, config=params.config,
               **dirs_of(params))


