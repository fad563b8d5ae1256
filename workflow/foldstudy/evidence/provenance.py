"""Which study made an evidence package, and what it holds (paper §7).

The manifest describes the evidence (sha256, row counts, schema version, resolved
config) and names the study that made it by a digest of its config; check_same_study
refuses evidence another study made, check_manifest an artifact edited after its
manifest. The lock and verify that pin all of this are release's (release/lock.py,
release/verify.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import StudyError
from ..io import canonical_sha256, read_json_object, sha256_file
from . import columns


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
# a reviewer's rebuild from a package is the same study. So is one whose release names
# its licence and authors (`release`, for the package's RO-Crate).
EXECUTION_KEYS = ("evidence", "replay", "retry_infrastructure", "limits", "store", "release")


def study_digest(config: dict[str, Any]) -> str:
    """sha256 of what the study is: its resolved config less the execution keys."""
    return canonical_sha256({k: v for k, v in config.items() if k not in EXECUTION_KEYS})


class OtherStudy(StudyError, ValueError):
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
    m = read_json_object(p, "an evidence manifest", mappings=("config",),
                         entries=("artifacts",))
    made = m.get("config") or {}
    theirs = m.get("study_sha256") or study_digest(made)
    ours = study_digest(config)
    if made.get("study") != config.get("study") or theirs != ours:
        keys = ""
        if made.get("study") == config.get("study") and made:
            changed = config_changes(config_keys(_study_part(made)),
                                     config_keys(_study_part(config)), "this evidence")
            keys = (f" What changed: {'; '.join(changed[:10])}"
                    + (f"; … and {len(changed) - 10} more." if len(changed) > 10 else ".")
                    if changed else "")
        raise OtherStudy(
            f"{p}: this evidence was made by study {made.get('study')!r} (config "
            f"{theirs[:12]}…), not by study {config.get('study')!r} (config {ours[:12]}…) "
            f"that asks for it now.{keys} Rebuild it for this study (snakemake -c8 "
            "results/tables --configfile <this study's config>, which reruns its folds from "
            "the response store), or point --config evidence= at this study's own package.")


def _study_part(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in EXECUTION_KEYS}


def config_keys(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Each leaf of the config by dotted key (models.alpha.temperature) -> its sha256:
    what the lock keeps beside the config's digest, so verify names the keys that
    changed, not only that the config did."""
    out: dict[str, str] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(config_keys(v, key + "."))
        else:
            out[key] = canonical_sha256(v)
    return out


def config_changes(was: dict[str, str], now: dict[str, str], since: str = "the lock"
                   ) -> list[str]:
    """The config keys that differ from the lock's (or the manifest's): changed, added
    and removed, by key."""
    out = [f"config key {k}: changed since {since}" for k in sorted(set(was) & set(now))
           if was[k] != now[k]]
    out += [f"config key {k}: added since {since}" for k in sorted(set(now) - set(was))]
    out += [f"config key {k}: removed since {since}" for k in sorted(set(was) - set(now))]
    return out


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


@dataclass(frozen=True)
class Mismatch:
    """One thing that drifted: what, against which reference, and how."""

    what: str
    against: str
    detail: str

    def line(self) -> str:
        return f"- `{self.what}` vs {self.against}: {self.detail}"


def check_manifest(manifest: dict[str, Any], files: dict[str, Path]) -> list[Mismatch]:
    """Every artifact the manifest lists exists, has its sha256, row count and contract."""
    out = []
    for name, entry in manifest.get("artifacts", {}).items():
        p = files.get(name)
        if p is None or not p.is_file():
            out.append(Mismatch(name, "manifest", "listed but missing"))
            continue
        digest = sha256_file(p)
        if digest != entry.get("sha256"):
            out.append(Mismatch(name, "manifest",
                                f"sha256 {digest[:12]}… differs from "
                                f"{str(entry.get('sha256'))[:12]}…"))
        if "rows" in entry and csv_rows(p) != entry["rows"]:
            out.append(Mismatch(name, "manifest",
                                f"{csv_rows(p)} rows, manifest says {entry['rows']}"))
    if manifest.get("schema_version") != columns.SCHEMA_VERSION:
        out.append(Mismatch("manifest.json", "this workflow",
                            f"schema version {manifest.get('schema_version')} is not "
                            f"{columns.SCHEMA_VERSION}"))
    return out
