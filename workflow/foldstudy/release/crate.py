"""The release package as a Workflow Run RO-Crate (paper §7; docs/design.md §7).

Paper §7 distributes "the sanitized evidence package: aggregate and row-level CSV files,
the evidence manifest, the study configuration, a provenance lock pinning the retained
private inputs by hash"; the lock says what made what in this workflow's own terms.
`ro-crate-metadata.json` says it in the terms research repositories read (WorkflowHub,
Zenodo): which workflow (the Snakefile, its version, the language Snakemake) made which
files (each with its sha256) from which inputs (the config's values, each a PropertyValue
of a FormalParameter of the workflow), on which models and pinned endpoints, with which
engine, under which licence, by whom. The Snakefile and its rule files travel with the
package because a crate's main workflow must be one of its files (Workflow RO-Crate);
the harness's code (foldstudy) and the fixtures stay out, as §7 keeps them out.

It conforms to Workflow Run Crate 0.5 (and so to Process Run Crate 0.5, Workflow
RO-Crate 1.0 and RO-Crate 1.1). Not to Provenance Run Crate: see `NOT_PROVENANCE`.

Building the crate is ro-crate-py's; what goes into it is decided here, from plain
values (`RunFacts`) a test can write by hand; reading the machine (versions, Snakemake's
job times) happens in `run_facts`, at the edge. `crate_mismatches` is verify's half:
each file's sha256 in the crate against the file.
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import StudyError
from ..evidence.provenance import Mismatch, package_version
from ..io import read_json, sha256_file

log = logging.getLogger(__name__)

CRATE_FILE = "ro-crate-metadata.json"
LOCK_FILE = "lock.json"  # the package's lock: it pins the crate (release/whole.py)
RO_CRATE = "1.1"  # the version whose JSON-LD context ro-crate-py ships a copy of
PROFILES = {
    "https://w3id.org/ro/wfrun/process/0.5": ("Process Run Crate", "0.5"),
    "https://w3id.org/ro/wfrun/workflow/0.5": ("Workflow Run Crate", "0.5"),
    "https://w3id.org/workflowhub/workflow-ro-crate/1.0": ("Workflow RO-Crate", "1.0"),
}
# The Workflow Run vocabulary's term for a file's checksum, written into the crate's own
# @context so no reader has to fetch the workflow-run context for one term.
SHA256 = {"sha256": "https://w3id.org/ro/terms/workflow-run#sha256"}

NOT_PROVENANCE = (
    "Not a Provenance Run Crate: one CreateAction per rule execution would have to come "
    "from .snakemake/metadata, which keeps only the last job of each output file still "
    "present, nothing of jobs without an output file (lock, verify) and nothing of a "
    "reviewer's rebuild from a package; and most of those jobs read and write private "
    "files (fixtures, run records, the response store) that a sanitized package does not "
    "hold, so their objects and results would be data entities missing from the crate.")

# The workflow definition the package carries, relative to the checkout: the main
# Snakefile and what it runs (its rule files and their one-call scripts). The logic they
# call is the foldstudy package, named with its version as the crate's software.
WORKFLOW_GLOBS = ("Snakefile", "workflow/rules/*.smk", "workflow/scripts/*.py")

FORMATS = {".csv": "text/csv", ".json": "application/json", ".md": "text/markdown",
           ".tex": "application/x-tex", ".png": "image/png", ".svg": "image/svg+xml",
           ".yaml": "application/yaml", ".py": "text/x-python", ".smk": "text/plain",
           ".tsv": "text/tab-separated-values", ".html": "text/html", "": "text/plain"}


class CrateError(StudyError, ValueError):
    """The crate cannot say what made the package (it holds no Snakefile to name)."""


@dataclass(frozen=True)
class Author:
    name: str
    id: str | None = None  # an ORCID or other URL naming the person
    affiliation: str | None = None


@dataclass(frozen=True)
class RunFacts:
    """What the crate says that is not a file of the package."""

    name: str
    config: Mapping[str, Any]
    released: datetime
    started: datetime | None = None  # the earliest job Snakemake recorded, if any
    outputs_timed: int = 0
    versions: Mapping[str, str] = field(default_factory=dict)  # snakemake, foldstudy, workflow
    descriptions: Mapping[str, str] = field(default_factory=dict)  # config key -> schema's
    pins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # model -> probe's
    lock_sha256: Mapping[str, str] = field(default_factory=dict)  # package path -> pin

    @property
    def license(self) -> str | None:
        return (self.config.get("release") or {}).get("license")

    @property
    def authors(self) -> list[Author]:
        return [Author(a["name"], a.get("id"), a.get("affiliation"))
                for a in (self.config.get("release") or {}).get("authors", [])]


# -- what the package holds (pure but for reading the files' bytes) ----------------------


def workflow_sources(root: str | Path) -> dict[str, Path]:
    """The workflow definition's files: package path -> file under the checkout `root`."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): p
            for pattern in WORKFLOW_GLOBS for p in sorted(root.glob(pattern)) if p.is_file()}


# Snakemake's mark on a directory output (the package, results/tables): not a file of it.
SNAKEMAKE_MARK = ".snakemake_timestamp"


def is_snakemake_mark(package: Path, p: Path) -> bool:
    """Snakemake's own mark on the package (a directory output): at the package's root,
    where Snakemake writes it after the release, and empty. A file of that name anywhere
    else, or holding anything, is a file of the package like any other (pinned, in the
    crate, scanned), so the name cannot carry content past them."""
    return p == package / SNAKEMAKE_MARK and p.is_file() and p.stat().st_size == 0


def package_files(package: Path) -> list[str]:
    """Every file of the package but the crate itself, by package path, sorted."""
    return sorted(p.relative_to(package).as_posix() for p in package.rglob("*")
                  if p.is_file() and p.name != CRATE_FILE
                  and not is_snakemake_mark(package, p))


def file_digests(package: Path, pinned: Mapping[str, str]) -> dict[str, str | None]:
    """Each file's sha256 as it lies in the package. Where the lock pins the file, the
    release verified it against that pin first (verify_study), so a file that differs
    from its pin is refused, never described. The package's lock is the one file listed
    without a checksum: it pins the crate (release/whole.py), so the crate cannot pin it."""
    out: dict[str, str | None] = {}
    for rel in package_files(package):
        if rel == LOCK_FILE:
            out[rel] = None
            continue
        out[rel] = sha256_file(package / rel)
        if rel in pinned and pinned[rel] != out[rel]:
            raise CrateError(f"{rel}: sha256 {str(out[rel])[:12]}… differs from the lock's "
                             f"pin {pinned[rel][:12]}…; rebuild it (snakemake -c8 "
                             "results/tables) and lock again before releasing")
    return out


# -- the crate (ro-crate-py) -------------------------------------------------------------


def build_crate(package: Path, facts: RunFacts) -> Any:
    """The crate describing `package` as it lies on disk (ro-crate-py's ROCrate)."""
    from rocrate.rocrate import ROCrate

    crate = ROCrate(version=RO_CRATE)
    crate.metadata.extra_terms.update(SHA256)
    digests = file_digests(package, facts.lock_sha256)
    _describe_root(crate, facts)
    entities = _data_entities(crate, package, digests)
    workflow = _workflow(crate, facts, entities)
    inputs = _config_values(crate, workflow, facts)
    config_file = entities.get("config.yaml")
    results = [e for rel, e in entities.items()
               if rel != "config.yaml" and rel != "README.md" and rel not in
               workflow_parts(entities)]
    action = crate.add_action(
        workflow, identifier=f"#run-{quote(facts.name)}",
        object=([config_file] if config_file is not None else []) + inputs, result=results,
        properties={"name": f"Run of the compaction-carrier study that made {facts.name}",
                    "description": _run_description(facts),
                    "endTime": _iso(facts.released)})
    if facts.started is not None:
        action["startTime"] = _iso(facts.started)
    crate.root_dataset.append_to("mentions", action)
    models = _models(crate, facts)
    if models:
        crate.root_dataset["about"] = models
    _single_values(crate)
    return crate


def _single_values(crate: Any) -> None:
    """A one-item list as the item itself, as RO-Crate 1.1's JSON-LD recommends."""
    for entity in crate.get_entities():
        for key, value in list(entity.properties().items()):
            if isinstance(value, list) and len(value) == 1 and key != "@type":
                entity[key] = value[0]


def write_crate(package: str | Path, facts: RunFacts) -> Path:
    """ro-crate-metadata.json at the package root, describing every file already there."""
    package = Path(package)
    crate = build_crate(package, facts)
    crate.metadata.write(package)
    out = package / CRATE_FILE
    log.info("crate %s: %d files, %d config values", out, len(package_files(package)),
             sum(1 for e in crate.get_entities() if e.type == "PropertyValue"))
    return out


def workflow_parts(entities: Mapping[str, Any]) -> set[str]:
    return {rel for rel in entities if rel == "Snakefile" or rel.startswith("workflow/")}


def _describe_root(crate: Any, facts: RunFacts) -> None:
    root = crate.root_dataset
    root["name"] = f"{facts.name}: evidence package of a compaction-carrier study"
    root["description"] = (
        "The sanitized release of one study run with the workflow that reproduces \"Two "
        "Ways to Lose a Fact\": row-level evidence, every number, the provenance lock, the "
        "tables and figures, and the workflow definition that made them.")
    root["datePublished"] = _iso(facts.released)
    root["license"] = _license(crate, facts.license)
    authors = [_person(crate, a) for a in facts.authors]
    if authors:
        root["author"] = authors
    root["conformsTo"] = [_profile(crate, uri) for uri in sorted(PROFILES)]
    crate.metadata["conformsTo"] = [{"@id": f"https://w3id.org/ro/crate/{RO_CRATE}"},
                                    {"@id": "https://w3id.org/workflowhub/workflow-ro-crate/1.0"}]


def _profile(crate: Any, uri: str) -> Any:
    from rocrate.model.contextentity import ContextEntity

    name, version = PROFILES[uri]
    return crate.add(ContextEntity(crate, uri, properties={
        "@type": "CreativeWork", "name": name, "version": version}))


def _license(crate: Any, license: str | None) -> Any:
    """The licence the study config declares (an SPDX id or a URL), or an entity saying
    that it declares none: a crate must name one, and guessing one would be worse."""
    from rocrate.model.contextentity import ContextEntity

    if not license:
        return crate.add(ContextEntity(crate, "#license-not-declared", properties={
            "@type": "CreativeWork", "name": "No licence declared",
            "description": "The study config sets no release.license; ask the authors "
                           "before reusing this package."}))
    uri = license if "://" in license else f"https://spdx.org/licenses/{license}"
    props = {"@type": "CreativeWork", "name": license}
    if "://" not in license:
        props["identifier"] = license
    return crate.add(ContextEntity(crate, uri, properties=props))


def _person(crate: Any, a: Author) -> Any:
    from rocrate.model.person import Person

    props: dict[str, Any] = {"name": a.name}
    if a.affiliation:
        props["affiliation"] = a.affiliation
    return crate.add(Person(crate, a.id or f"#author-{quote(a.name)}", properties=props))


def _data_entities(crate: Any, package: Path, digests: Mapping[str, str | None]
                   ) -> dict[str, Any]:
    """One File per file (sha256, size, format) and one Dataset per folder, each folder
    listing its files: a reader walks the package from the root as it lies on disk."""
    entities: dict[str, Any] = {}
    folders: dict[str, Any] = {}
    for rel, digest in digests.items():
        p = package / rel
        props: dict[str, Any] = {"contentSize": str(p.stat().st_size),
                                 "encodingFormat": FORMATS.get(p.suffix, "text/plain")}
        if digest is not None:
            props["sha256"] = digest
        else:
            props["description"] = ("The provenance lock: it pins every other file of "
                                    "the package by sha256, this crate included.")
        if rel == "README.md":
            props.update(about={"@id": "./"}, name="What this package holds")
        entities[rel] = crate.add_file(None, dest_path=rel, properties=props)
        parent = Path(rel).parent
        if parent != Path("."):
            top = parent.parts[0]
            if top not in folders:
                folders[top] = crate.add_dataset(None, dest_path=f"{top}/")
            folders[top].append_to("hasPart", entities[rel])
    return entities


def _workflow(crate: Any, facts: RunFacts, entities: Mapping[str, Any]) -> Any:
    """The main workflow: the Snakefile, in the language Snakemake of the engine's version,
    the rule files and scripts it includes as its parts."""
    from rocrate.model.computationalworkflow import ComputationalWorkflow
    from rocrate.model.computerlanguage import get_lang
    from rocrate.model.softwareapplication import SoftwareApplication

    snakefile = entities.get("Snakefile")
    if snakefile is None:
        raise CrateError("the package holds no Snakefile: the crate's main workflow must "
                         "be a file of the package (copy the checkout's Snakefile in)")
    versions = facts.versions
    lang = crate.add(get_lang(crate, "snakemake", version=versions.get("snakemake")))
    workflow = crate.add(ComputationalWorkflow(crate, None, "Snakefile", properties={
        **snakefile.properties(),
        "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow"],
        "conformsTo": {
            "@id": "https://bioschemas.org/profiles/ComputationalWorkflow/1.0-RELEASE"},
        "name": "Two Ways to Lose a Fact: the compaction-carrier study",
        "version": versions.get("workflow", "unknown"),
        "hasPart": [{"@id": rel} for rel in sorted(workflow_parts(entities)) if rel != "Snakefile"],
    }))
    workflow.lang = lang
    crate.mainEntity = workflow
    engine = [crate.add(SoftwareApplication(crate, uri, properties=props)) for uri, props in (
        (f"https://pypi.org/project/snakemake/{versions.get('snakemake', '')}",
         {"name": "Snakemake", "version": versions.get("snakemake", "unknown"),
          "url": "https://snakemake.readthedocs.io"}),
        ("#foldstudy", {"name": "foldstudy", "version": versions.get("foldstudy", "unknown"),
                        "description": "The workflow's Python package: every rule's logic."}),
    )]
    workflow["softwareRequirements"] = engine
    return workflow


def _config_values(crate: Any, workflow: Any, facts: RunFacts) -> list[Any]:
    """Each top-level config key: a FormalParameter of the workflow (described by the
    config schema) and the PropertyValue this run gave it (a mapping as nested values)."""
    out = []
    for key, value in sorted(facts.config.items()):
        param = crate.add_formal_parameter(
            key, _data_type(value), identifier=f"#param-{quote(key)}",
            description=facts.descriptions.get(key) or None)
        workflow.append_to("input", param)
        pv = _property_value(crate, key, value)
        pv["exampleOfWork"] = param
        param["workExample"] = pv
        out.append(pv)
    return out


def _property_value(crate: Any, key: str, value: Any) -> Any:
    from rocrate.model.contextentity import ContextEntity

    name = key.rsplit(".", 1)[-1]
    if isinstance(value, dict) and value:
        shown: Any = [_property_value(crate, f"{key}.{k}", v) for k, v in sorted(value.items())]
    else:
        shown = shown_value(value)
    return crate.add(ContextEntity(crate, f"#pv-{quote(key)}", properties={
        "@type": "PropertyValue", "name": name, "propertyID": key, "value": shown}))


def shown_value(value: Any) -> Any:
    """A config leaf as its PropertyValue holds it: a list, an empty mapping or null as
    JSON text."""
    if isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True)


def leaf_values(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """propertyID -> value of every leaf PropertyValue the crate gives `config`."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if isinstance(v, dict) and v:
            out.update(leaf_values(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = shown_value(v)
    return out


def _data_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Float"
    return "PropertyValue" if isinstance(value, dict) and value else "Text"


def _models(crate: Any, facts: RunFacts) -> list[Any]:
    """The models the study measured, each with its backend, id and the endpoint the probe
    pinned (paper §3.4: a verdict is about model, endpoint and request together)."""
    from rocrate.model.contextentity import ContextEntity

    out = []
    for key, model in sorted((facts.config.get("models") or {}).items()):
        pin = facts.pins.get(key, {})
        props: dict[str, Any] = {"@type": "SoftwareApplication", "name": key,
                                 "applicationCategory": f"language model ({model.get('backend')})"}
        ident = model.get("model_id") or model.get("gguf")
        if ident:
            props["identifier"] = str(ident)
        endpoint = [f"{k} {pin[k]}" for k in ("pin", "quantization", "verdict") if pin.get(k)]
        configured = [f"{k} {model[k]}" for k in ("provider", "quantization", "server")
                      if model.get(k)]
        props["description"] = "; ".join(
            (["configured: " + ", ".join(configured)] if configured else [])
            + (["probe: " + ", ".join(endpoint)] if endpoint else [])) or "no endpoint pinned"
        out.append(crate.add(ContextEntity(crate, f"#model-{quote(key)}", properties=props)))
    return out


def _run_description(facts: RunFacts) -> str:
    when = (f"Its startTime is the earliest start Snakemake recorded (.snakemake/metadata) for "
            f"the jobs that made the package's artifacts and run records ({facts.outputs_timed} "
            "of their files recorded); "
            if facts.started is not None else
            "No job start was recorded by Snakemake here, so no startTime; ")
    return ("The workflow run that made this package: object is its config (config.yaml "
            "and each value), result the package's files. " + when
            + "endTime is when the release assembled the package. " + NOT_PROVENANCE)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="seconds")


# -- facts from this machine (the edge) --------------------------------------------------


def snakemake_times(metadata_dir: str | Path, outputs: Iterable[str]) -> list[float]:
    """Start times Snakemake recorded for the jobs that made `outputs` (paths as the rules
    name them): .snakemake/metadata/<urlsafe base64 of the path>, its `starttime`."""
    d = Path(metadata_dir)
    out = []
    for path in outputs:
        name = base64.urlsafe_b64encode(str(path).encode()).decode()
        rec = d / _split_name(name)
        if not rec.is_file():
            continue
        try:
            start = read_json(rec).get("starttime")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(start, int | float):
            out.append(float(start))
    return out


def _split_name(name: str, limit: int = 255) -> str:
    """Snakemake's file persistence (the default backend) cuts a record name into pieces
    one shorter than a file name may be, each but the last a folder named `@<piece>`."""
    pieces = [name[i:i + limit - 1] for i in range(0, len(name), limit - 1)]
    return "/".join(["@" + p for p in pieces[:-1]] + pieces[-1:])


def workflow_version(root: str | Path, foldstudy: str) -> str:
    """foldstudy's version and, in a git checkout, the commit (`.dirty` if the workflow's
    files differ from it): the version a reader can check the Snakefile out at."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--", "Snakefile", "workflow")
    except (OSError, subprocess.SubprocessError):
        return foldstudy
    return f"{foldstudy}+g{commit[:12]}" + (".dirty" if dirty else "")


def versions(root: str | Path) -> dict[str, str]:
    try:
        snakemake = metadata.version("snakemake")
    except metadata.PackageNotFoundError:
        snakemake = "unknown"
    ours = package_version()
    return {"snakemake": snakemake, "foldstudy": ours, "workflow": workflow_version(root, ours)}


def probe_pins(probes_csv: Path) -> dict[str, dict[str, str]]:
    """model -> the endpoint its probe pinned (evidence/probes.csv), if the package has it."""
    import csv

    if not probes_csv.is_file():
        return {}
    with open(probes_csv, newline="", encoding="utf-8") as f:
        return {r["model"]: {k: r.get(k) or "" for k in ("pin", "quantization", "verdict")}
                for r in csv.DictReader(f)}


def schema_descriptions(schema: Mapping[str, Any] | None) -> dict[str, str]:
    props = (schema or {}).get("properties", {})
    return {k: " ".join(str(v.get("description", "")).split()) for k, v in props.items()}


def run_facts(name: str, config: Mapping[str, Any], package: Path, lock: Mapping[str, Any],
              workflow_root: str | Path, schema: Mapping[str, Any] | None = None,
              metadata_dir: str | Path = ".snakemake/metadata",
              outputs: Iterable[str] = ()) -> RunFacts:
    """Everything the crate says about the run, read from this machine now."""
    starts = snakemake_times(metadata_dir, outputs)
    return RunFacts(
        name=name, config=config, released=datetime.now(UTC),
        started=datetime.fromtimestamp(min(starts), UTC) if starts else None,
        outputs_timed=len(starts), versions=versions(workflow_root),
        descriptions=schema_descriptions(schema),
        pins=probe_pins(package / "evidence/probes.csv"),
        lock_sha256={k: v["sha256"] for k, v in lock.get("public", {}).items()})


# -- verify: the crate's checksums against the files --------------------------------------


def crate_mismatches(package: str | Path, config: Mapping[str, Any] | None = None
                     ) -> list[Mismatch]:
    """Each file the crate lists with a sha256 must be there with that sha256, every file
    of the package must be listed, every entity must have an @id, and (given the config
    verified now) every config value's PropertyValue must be the config's."""
    package = Path(package)
    try:
        graph = read_json(package / CRATE_FILE)["@graph"]
        if not isinstance(graph, list):
            raise TypeError(f"@graph is a {type(graph).__name__}, not a list")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [Mismatch(CRATE_FILE, "JSON-LD", f"not readable: {e}")]
    out = [Mismatch(CRATE_FILE, "JSON-LD", f"@graph entry {i} has no @id (every entity of "
                    "a crate is named by one)")
           for i, e in enumerate(graph) if not isinstance(e, dict) or "@id" not in e]
    graph = [e for e in graph if isinstance(e, dict) and "@id" in e]
    listed = {e["@id"]: e.get("sha256") for e in graph
              if "File" in _types(e) and e.get("@id") != CRATE_FILE}
    for rel, digest in sorted(listed.items()):
        p = package / rel
        if not p.is_file():
            out.append(Mismatch(rel, CRATE_FILE, "listed but missing"))
        elif digest is None:
            if rel != LOCK_FILE:
                out.append(Mismatch(rel, CRATE_FILE, "listed without a sha256"))
        elif sha256_file(p) != digest:
            out.append(Mismatch(rel, CRATE_FILE, f"sha256 {sha256_file(p)[:12]}… differs "
                                                 f"from the crate's {str(digest)[:12]}…"))
    out += [Mismatch(rel, CRATE_FILE, "in the package, not in the crate")
            for rel in package_files(package) if rel not in listed]
    if config is not None:
        out += value_mismatches(graph, config)
    return out


# Keys of the config that say where this build reads from, not what the study was.
NOT_THE_STUDY = ("evidence",)


def value_mismatches(graph: list[dict[str, Any]], config: Mapping[str, Any]
                     ) -> list[Mismatch]:
    """Every leaf PropertyValue of the crate against the config verified now."""
    said = {e.get("propertyID"): e.get("value") for e in graph
            if "PropertyValue" in _types(e) and not isinstance(e.get("value"), dict | list)}
    want = leaf_values({k: v for k, v in config.items() if k not in NOT_THE_STUDY})
    said = {k: v for k, v in said.items()
            if str(k).split(".", 1)[0] not in NOT_THE_STUDY}
    out = [Mismatch(f"{CRATE_FILE} #pv-{k}", "config", f"the crate says {said[k]!r}, the "
                    f"config {want[k]!r}") for k in sorted(set(said) & set(want), key=str)
           if said[k] != want[k]]
    out += [Mismatch(f"{CRATE_FILE} #pv-{k}", "config", "a config value the crate does not "
                     "give") for k in sorted(set(want) - set(said))]
    out += [Mismatch(f"{CRATE_FILE} #pv-{k}", "config", "in the crate, not in the config")
            for k in sorted(set(said) - set(want), key=str)]
    return out


def _types(entity: Mapping[str, Any]) -> list[str]:
    t = entity.get("@type", [])
    return [t] if isinstance(t, str) else list(t)
