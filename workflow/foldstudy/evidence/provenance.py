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


def tree_changes(name: str, pinned: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between a pinned tree digest and today's, file by file where the lock
    kept a listing: the missing, the added and the changed, each by path."""
    was, got = pinned.get("listing"), now.get("listing")
    if was is None or got is None:
        if pinned.get("files") is not None and now.get("files") != pinned.get("files"):
            return [f"{now.get('files')} files here, the lock pins {pinned.get('files')} "
                    "(a file missing or added)"]
        return []
    out = [f"{name}/{rel}: missing (pinned by the lock)" for rel in sorted(set(was) - set(got))]
    out += [f"{name}/{rel}: not in the lock (added after it)"
            for rel in sorted(set(got) - set(was))]
    out += [f"{name}/{rel}: sha256 {got[rel][:12]}… differs from the pinned {was[rel][:12]}…"
            for rel in sorted(set(was) & set(got)) if was[rel] != got[rel]]
    return out


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
    study: str | None = None,
) -> list[Mismatch]:
    """Everything the lock pins that is present here must be unchanged; a lock of another
    study than `study` is one mismatch naming both.

    Private inputs absent here (a reviewer's evidence-only package) are not a mismatch:
    the lock still names them, so their owner can check them.
    """
    if study is not None and lock.get("study") != study:
        # Said first and alone: every pin of another study differs, and hundreds of
        # mismatches would hide the one thing that is wrong.
        return [Mismatch("lock", "this study",
                         f"this lock is for study {lock.get('study')!r}, not for study "
                         f"{study!r} that is verified now; verify with that study's config, "
                         f"or pin this one with `snakemake -c1 lock`")]
    out = []
    for name, pinned in lock.get("private", {}).items():
        now = private_now.get(name)
        if now is None:
            continue
        if now.get("sha256") != pinned.get("sha256"):
            changes = tree_changes(name, pinned, now)
            out.append(Mismatch(name, "lock (private input)", "; ".join(changes[:20]) + (
                f"; … and {len(changes) - 20} more" if len(changes) > 20 else "") if changes
                else f"sha256 {str(now.get('sha256'))[:12]}… differs from the pinned "
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


# How a claim quoted in a write-up is checked (resources/claims/<study>.yaml `kind`):
CLAIM_KINDS = {
    # a count or value of the paper's own corpus: checked against its evidence package
    # only (evidence mode); a fresh run cannot produce the paper's row counts
    "exact": "checked against the paper's own evidence package (evidence mode)",
    # fixed by the study's design on any run of it (fourteen checks per row)
    "design": "checked on any run of the study",
    # a measured quantity: reproduced when the paper's value lies inside this run's
    # interval (the claim names the interval's keys and how it is computed)
    "behavioural": "reproduced when the paper's value is inside this run's interval",
}


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim, what this run says about it, and the verdict."""

    key: str
    kind: str
    claimed: Any
    where: str
    verdict: str  # reproduced | not reproduced | not checkable here
    value: Any = None
    low: Any = None
    high: Any = None
    method: str = ""
    why: str = ""

    def row(self) -> str:
        val = "—" if self.value is None else f"{self.value:.6g}"
        iv = (f"[{self.low:.4g}, {self.high:.4g}] ({self.method})" if self.low is not None
              else "—")
        return (f"| `{self.key}` | {self.kind} | {self.claimed!r} | {val} | {iv} | "
                f"**{self.verdict}**{': ' + self.why if self.why else ''} | {self.where} |")


def judge_claims(claims: Iterable[dict[str, Any]], recomputed: dict[str, Any], package: bool
                 ) -> list[ClaimVerdict]:
    """Each claim's verdict on these numbers (CLAIM_KINDS). `package`: the evidence is a
    released package (evidence mode), where exact claims are checkable."""
    out = []
    for c in claims:
        key, claimed, kind = c["key"], c["value"], c.get("kind", "exact")
        tol, where = float(c.get("tolerance", 0.0)), c.get("where", "claim")
        if kind not in CLAIM_KINDS:
            raise ValueError(f"claim {key}: kind {kind!r} is not one of "
                             f"{', '.join(CLAIM_KINDS)}")
        base = {"key": key, "kind": kind, "claimed": claimed, "where": where,
                "value": recomputed.get(key)}
        if kind == "exact" and not package:
            out.append(ClaimVerdict(**base, verdict="not checkable here",
                                    why="an exact claim about the paper's corpus; checked "
                                        "when verifying the paper's evidence package"))
            continue
        if key not in recomputed:
            out.append(ClaimVerdict(**base, verdict="not checkable here" if kind !=
                                    "exact" else "not reproduced",
                                    why="no such number in this run's evidence"))
            continue
        value = float(recomputed[key])
        if kind == "behavioural":
            iv = c.get("interval") or {}
            lo, hi = recomputed.get(iv.get("low", "")), recomputed.get(iv.get("high", ""))
            if lo is None or hi is None:
                out.append(ClaimVerdict(**base, verdict="not checkable here",
                                        why="this run has no interval for it"))
                continue
            inside = float(lo) - tol <= float(claimed) <= float(hi) + tol
            out.append(ClaimVerdict(**base, low=lo, high=hi, method=iv.get("method", ""),
                                    verdict="reproduced" if inside else "not reproduced",
                                    why="" if inside else "the paper's value is outside "
                                                          "this run's interval"))
            continue
        ok = abs(value - float(claimed)) <= tol + 1e-12
        out.append(ClaimVerdict(**base, verdict="reproduced" if ok else "not reproduced",
                                why="" if ok else f"differs by more than ± {tol:g}"))
    return out


def claim_mismatches(verdicts: list[ClaimVerdict], source: str) -> list[Mismatch]:
    """The verdicts that are drift: an exact or design claim, checkable here, that does
    not hold. A behavioural claim outside a run's interval is a finding of that run,
    reported beside the others, not drift."""
    out = []
    for v in verdicts:
        if v.kind != "behavioural" and v.verdict == "not reproduced":
            detail = (f"claims {v.claimed!r}; not recomputable from the evidence"
                      if v.value is None else f"claims {v.claimed!r}; recomputed {v.value!r}")
            out.append(Mismatch(v.key, f"{source} ({v.where})", detail))
    return out


def check_claims(claims: Iterable[dict[str, Any]], recomputed: dict[str, Any], source: str
                 ) -> list[Mismatch]:
    """Numbers quoted in a write-up, read against the evidence as the paper's package."""
    return claim_mismatches(judge_claims(claims, recomputed, package=True), source)


def claims_report(source: str, verdicts: list[ClaimVerdict] | None, why_none: str = "") -> str:
    """The claims section of the verify report: which file, how many, each verdict."""
    head = "## Claims\n\n"
    if verdicts is None:
        return head + f"No claim checked: {why_none}\n"
    counts = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    lines = [f"Read {source}: {len(verdicts)} claims ("
             + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ").", "",
             "Kinds: " + "; ".join(f"{k}: {d}" for k, d in CLAIM_KINDS.items()) + ".", "",
             "| key | kind | paper | this run | 95% interval | verdict | where |",
             "|---|---|---:|---:|---|---|---|", *(v.row() for v in verdicts)]
    return head + "\n".join(lines) + "\n"


def report(mismatches: list[Mismatch], checked: list[str], claims: str = "") -> str:
    head = "# Verify report\n\n"
    body = "Checked:\n" + "".join(f"- {c}\n" for c in checked) + "\n" + (
        "\n" + claims if claims else "")
    if not mismatches:
        return head + "**OK**: no drift.\n\n" + body
    return (head + f"**FAILED**: {len(mismatches)} mismatch(es).\n\n"
            + "\n".join(m.line() for m in mismatches) + "\n\n" + body)
