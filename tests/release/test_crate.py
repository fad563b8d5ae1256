"""The release package is a Workflow Run RO-Crate (docs/design.md §7, paper §7).

roc-validator passes the crate at REQUIRED level against every profile the crate declares
that the validator implements; the crate says what made what (the Snakefile, the run, the
config's values, every file's sha256 as the lock pins it); verify names a file that
differs from its crate; the scanner reads the crate like every other file.

The package is the locked synthetic study of test_verify.py, released by make_release as
the rule does: no model, no snakemake.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from foldstudy.io import sha256_file
from foldstudy.release.crate import (
    CRATE_FILE,
    NOT_PROVENANCE,
    RunFacts,
    crate_mismatches,
    write_crate,
)
from foldstudy.release.lock import VerifyFailed, write_lock
from foldstudy.release.package import make_release
from foldstudy.release.scan import live_secrets, local_markers, scan_tree
from foldstudy.release.verify import verify_study

from ..conftest import RESOURCES, ROOT
from ..support import procs
from .test_verify import flip, study  # noqa: F401 - the locked study fixture

AUTHORS = [{"name": "Ada Example", "id": "https://orcid.org/0000-0002-1825-0097",
            "affiliation": "Example Institute"}, {"name": "Bo Example"}]
RELEASE = {"license": "CC-BY-4.0", "authors": AUTHORS}


def release(s, config: dict | None = None, **kw) -> Path:  # noqa: F811
    """make_release on the locked study, verifying it first as the rule does."""
    root = s["root"]
    tables = root / "tables"
    tables.mkdir(exist_ok=True)
    (tables / "probe-verdicts.md").write_text("| model | verdict |\n|---|---|\n| m1 | ok |\n")
    cfg = {"study": "t", "scale": 0.03, **(config or {})}
    verify_args = {k: v for k, v in s["args"].items() if k != "config"}
    # the study locked under this config, as `snakemake -c1 lock` would pin it
    write_lock(str(s["ev"]), str(s["numbers"]), str(s["lock"]), "t", config=cfg, **verify_args)
    out = root / "release/pkg"
    make_release("pkg", str(s["ev"]), str(s["numbers"]), str(s["lock"]), cfg, str(tables),
                 None, str(root / "fixtures"), root / "checkout", str(out),
                 str(root / "release/pkg.tar.gz"),
                 str(RESOURCES / "templates/release-README.md"),
                 verify={**verify_args, "claims_path": None, "report_out": str(s["report"])},
                 **kw)
    return out


def graph(package: Path) -> dict[str, dict]:
    return {e["@id"]: e for e in json.loads((package / CRATE_FILE).read_text())["@graph"]}


def ids(value) -> list[str]:
    return [v["@id"] for v in (value if isinstance(value, list) else [value])]


def types(e: dict) -> set[str]:
    return {e["@type"]} if isinstance(e["@type"], str) else set(e["@type"])


# ------------------------------------------------------------------ the validator


def serve_ro_crate_context_locally(monkeypatch, cache: Path) -> Path:
    """The crate's JSON-LD @context (https://w3id.org/ro/crate/1.1/context), served from
    ro-crate-py's copy (rocrate/data/ro-crate.jsonld): this machine has no internet. Two
    readers fetch it: rdflib, over the network even under the validator's offline mode
    (served here in its place), and the validator's JSON-LD format check, through its HTTP
    cache (which offline mode reads alone: the copy is put there). That one URL is
    substituted; nothing else changes. What the substitution could affect: every check
    that reads the crate as RDF (all the SHACL shapes: types, required properties,
    conformsTo, the workflow's inputs) sees each term as that copy maps it, and the format
    check compares the crate's keys with that copy; were the published context to map a
    term otherwise, those checks would read it otherwise. The checks on the JSON and the
    files themselves (descriptor present and parseable, payload files present) do not
    read the context. Returns the validator's cache to use.
    """
    import importlib.resources
    import io

    import requests
    import urllib3
    from rdflib.plugins.shared.jsonld import context as jsonld_context
    from rocrate_validator.utils.http import HttpRequester

    text = importlib.resources.files("rocrate").joinpath("data/ro-crate.jsonld").read_text(
        encoding="utf-8")
    local = json.loads(text)
    assert local["@id"] == RO_CRATE_CONTEXT, (
        f"ro-crate-py bundles {local['@id']}, not the crate's {RO_CRATE_CONTEXT}: serving it "
        "in its place would change what ComputationalWorkflow, FormalParameter, input and "
        "output mean (pyproject pins the rocrate that bundles 1.1's)")
    fetch = jsonld_context.source_to_json

    def source_to_json(source, *args, **kwargs):
        if str(source) == RO_CRATE_CONTEXT:
            return local, None
        return fetch(source, *args, **kwargs)

    monkeypatch.setattr(jsonld_context, "source_to_json", source_to_json)
    HttpRequester.initialize_cache(cache_path=str(cache), cache_max_age=-1, offline=True,
                                   no_cache=False)
    body, headers = text.encode("utf-8"), {"Content-Type": "application/ld+json"}
    reply = requests.Response()
    reply.status_code, reply.reason, reply.url = 200, "OK", RO_CRATE_CONTEXT
    reply._content, reply.encoding = body, "utf-8"
    reply.headers.update(headers)
    reply.raw = urllib3.HTTPResponse(body=io.BytesIO(body), headers=headers, status=200,
                                     preload_content=False, request_url=RO_CRATE_CONTEXT)
    reply.request = requests.Request("GET", RO_CRATE_CONTEXT, headers={
        "Accept": "application/ld+json, application/json"}).prepare()
    HttpRequester().session.cache.save_response(reply)
    return cache


RO_CRATE_CONTEXT = "https://w3id.org/ro/crate/1.1/context"


def declared_profiles(package: Path) -> list[str]:
    """The validator's identifiers of the profiles the crate's root declares."""
    from rocrate_validator import services

    declared = set(ids(graph(package)["./"]["conformsTo"]))
    known = {p.uri.rstrip("/"): p.identifier for p in services.get_profiles()}
    return sorted(known[u.rstrip("/")] for u in declared if u.rstrip("/") in known)


def covering(profiles: list[str]) -> list[str]:
    """The declared profiles no other declared one inherits. The validator checks a
    profile with the profiles it inherits and reports their issues too (its defaults,
    enable_profile_inheritance and disable_inherited_profiles_issue_reporting), so these
    cover every declared profile; each validation takes seconds."""
    from rocrate_validator import services

    inherits = {p.identifier: {i.identifier for i in p.inherited_profiles}
                for p in services.get_profiles()}
    out = [p for p in profiles if not any(p in inherits[q] for q in profiles if q != p)]
    assert set(profiles) <= set(out).union(*(inherits[p] for p in out))
    return out


def violations(package: Path, profile: str, cache: Path) -> list[str]:
    from rocrate_validator import models, services

    result = services.validate(models.ValidationSettings(
        rocrate_uri=str(package), profile_identifier=profile, cache_path=cache,
        cache_max_age=-1, requirement_severity=models.Severity.REQUIRED, offline=True))
    return [f"{i.check.identifier}: {i.message}" for i in result.get_issues()]


def test_roc_validator_passes_the_crate_against_every_profile_it_declares(
        study, monkeypatch, tmp_path):  # noqa: F811
    cache = serve_ro_crate_context_locally(monkeypatch, tmp_path / "http-cache")
    package = release(study, {"release": RELEASE})
    profiles = declared_profiles(package)
    # Workflow Run Crate and Process Run Crate 0.5 at least; Workflow RO-Crate if known
    assert {"workflow-run-crate-0.5", "process-run-crate-0.5"} <= set(profiles), profiles
    assert "provenance-run-crate-0.5" not in profiles  # not claimed: see NOT_PROVENANCE
    for profile in covering(profiles):
        assert violations(package, profile, cache) == [], profile
    # the validator does read this crate: without its licence, the same run fails, on
    # the requirement of each inherited profile that makes one (so validating the one
    # profile checked the profiles it inherits)
    crate = json.loads((package / CRATE_FILE).read_text())
    root = next(e for e in crate["@graph"] if e["@id"] == "./")
    del root["license"]
    (package / CRATE_FILE).write_text(json.dumps(crate))
    found = [v for v in violations(package, "workflow-run-crate-0.5", cache) if "license" in v]
    assert {v.split("_")[0] for v in found} == {"ro-crate-1.1", "workflow-ro-crate-1.0"}, found


def test_an_undeclared_licence_still_validates_and_says_so(
        study, monkeypatch, tmp_path):  # noqa: F811
    cache = serve_ro_crate_context_locally(monkeypatch, tmp_path / "http-cache")
    package = release(study)
    g = graph(package)
    assert ids(g["./"]["license"]) == ["#license-not-declared"]
    assert "author" not in g["./"]
    assert violations(package, "workflow-run-crate-0.5", cache) == []


# ------------------------------------------------------------------ what the crate says


def test_the_crate_says_what_made_what(study):  # noqa: F811
    config = {"release": RELEASE, "temperature": 0.2,
              "models": {"m1": {"backend": "openrouter", "model_id": "acme/m1"}}}
    package = release(study, config)
    g = graph(package)
    root = g["./"]
    lock = json.loads((package / "lock.json").read_text())
    # mainEntity: the Snakefile, a ComputationalWorkflow in Snakemake, with its version
    wf = g[ids(root["mainEntity"])[0]]
    assert wf["@id"] == "Snakefile" and (package / "Snakefile").is_file()
    assert {"File", "SoftwareSourceCode", "ComputationalWorkflow"} <= types(wf)
    assert g[ids(wf["programmingLanguage"])[0]]["name"] == "Snakemake"
    assert wf["version"].startswith(g["#foldstudy"]["version"])
    engine = {g[i]["name"]: g[i]["version"] for i in ids(wf["softwareRequirements"])}
    from importlib import metadata
    assert engine["Snakemake"] == metadata.version("snakemake")
    # one CreateAction for the run: the workflow its instrument, with an end time
    runs = [e for e in g.values() if "CreateAction" in types(e)]
    assert len(runs) == 1 and ids(runs[0]["instrument"]) == ["Snakefile"]
    assert runs[0]["endTime"] and ids(root["mentions"]) == [runs[0]["@id"]]
    assert NOT_PROVENANCE in runs[0]["description"]
    # its object: config.yaml and one PropertyValue per config key, each the work of a
    # FormalParameter of the workflow
    objects = [g[i] for i in ids(runs[0]["object"])]
    values = {o["name"]: o for o in objects if "PropertyValue" in types(o)}
    assert set(values) == set(config) | {"study", "scale"}
    assert "config.yaml" in ids(runs[0]["object"])
    assert values["temperature"]["value"] == 0.2
    inputs = set(ids(wf["input"]))
    for v in values.values():
        param = g[ids(v["exampleOfWork"])[0]]
        assert param["@id"] in inputs and "FormalParameter" in types(param)
    nested = g[ids(values["models"]["value"])[0]]
    assert nested["propertyID"] == "models.m1"
    # its result: every artifact of the package (not the config, README or workflow)
    results = set(ids(runs[0]["result"]))
    files = {p.relative_to(package).as_posix() for p in package.rglob("*")
             if p.is_file() and p.name != CRATE_FILE}
    made = {f for f in files if not (f in {"config.yaml", "README.md", "Snakefile"}
                                     or f.startswith("workflow/"))}
    assert results == made and {"evidence/rows.csv", "stats/numbers.json",
                                "lock.json", "tables/probe-verdicts.md"} <= made
    # every file carries its sha256: the lock's pin where the lock pins it; the package's
    # lock pins every file back, the crate included, and is the one listed without one
    for f in files - {"lock.json"}:
        assert g[f]["sha256"] == sha256_file(package / f) == lock["package"]["files"][f], f
    assert "sha256" not in g["lock.json"]
    assert lock["package"]["files"][CRATE_FILE] == sha256_file(package / CRATE_FILE)
    for name, pin in lock["public"].items():
        assert g[name]["sha256"] == pin["sha256"]
    # licence, authors and models from the study config
    assert ids(root["license"]) == ["https://spdx.org/licenses/CC-BY-4.0"]
    assert [g[i]["name"] for i in ids(root["author"])] == ["Ada Example", "Bo Example"]
    assert ids(root["about"]) == ["#model-m1"] and g["#model-m1"]["identifier"] == "acme/m1"


def test_the_pinned_endpoint_comes_from_the_probe(study):  # noqa: F811
    (study["ev"] / "probes.csv").write_text(
        "model,backend,verdict,pin,quantization\nm1,openrouter,ok,deepinfra,fp8\n")
    config = {"models": {"m1": {"backend": "openrouter", "model_id": "acme/m1"}}}
    # probes.csv is not in the manifest the lock pinned: verify is not asked here
    root = study["root"]
    (root / "tables").mkdir(exist_ok=True)
    make_release("pkg", str(study["ev"]), str(study["numbers"]), str(study["lock"]),
                 {"study": "t", "scale": 0.03, **config}, str(root / "tables"), None, None,
                 root / "checkout", str(root / "release/pkg"),
                 str(root / "release/pkg.tar.gz"),
                 str(RESOURCES / "templates/release-README.md"))
    model = graph(root / "release/pkg")["#model-m1"]
    assert "pin deepinfra" in model["description"] and "quantization fp8" in model["description"]


def test_the_workflow_it_names_is_the_checkouts(study):  # noqa: F811
    package = release(study)
    for rel in ("Snakefile", "workflow/rules/release.smk", "workflow/scripts/release.py"):
        assert (package / rel).read_bytes() == (ROOT / rel).read_bytes()
    assert not list(package.glob("workflow/**/__pycache__"))


# ------------------------------------------------------------------ verify and the scanner


def test_verify_names_a_file_that_differs_from_the_crate(study):  # noqa: F811
    package = release(study)
    assert crate_mismatches(package) == []
    # verify where the package lies, as `--config evidence=<package>/evidence` runs it
    args = {**study["args"], "store": None, "runs": None, "fixtures": None}
    report = study["root"] / "verify-package.md"

    def verify_package() -> None:
        verify_study(str(package / "evidence"), str(package / "stats/numbers.json"),
                     str(package / "lock.json"), None, str(report), **args)

    verify_package()
    assert CRATE_FILE in report.read_text()
    flip(package / "tables/probe-verdicts.md")
    with pytest.raises(VerifyFailed):
        verify_package()
    assert f"`tables/probe-verdicts.md` vs {CRATE_FILE}" in report.read_text()
    (package / "tables/added.csv").write_text("a\n1\n")
    (package / "stats/numbers.json").unlink()
    found = {m.what: m.detail for m in crate_mismatches(package)}
    assert found["tables/added.csv"] == "in the package, not in the crate"
    assert found["stats/numbers.json"] == "listed but missing"


def test_the_scanner_reads_the_crate(study, tmp_path):  # noqa: F811
    """Whatever the crate says is scanned with the package: here an author whose URL is a
    private endpoint, written into the crate alone (config.yaml would be refused first)."""
    package = release(study)
    assert scan_tree(package, live_secrets(), set(), local_markers(tmp_path)) == []
    authors = {"release": {"authors": [{"name": "A", "id": "http://10.1.2.3/a"}]}}
    write_crate(package, RunFacts(name="pkg", config=authors, released=datetime.now(UTC)))
    findings = scan_tree(package, live_secrets(), set(), local_markers(tmp_path))
    assert {(f.path, f.kind) for f in findings} == {(CRATE_FILE, "private endpoint URL")}


# ------------------------------------------------------------------ through Snakemake


@pytest.mark.workflow
def test_snakemake_release_writes_a_crate_the_validator_passes_and_verify_reads(
        tmp_path, monkeypatch):
    """The rules as a user runs them, on a reviewer's package (no model): tables, lock,
    release; then verify where the released package lies, as its README says."""

    import yaml

    from foldstudy.evidence.provenance import build_manifest
    from foldstudy.study.config import load_study
    from foldstudy.study.spec import load_arm_table

    from ..support.synthetic import synthetic_package_dir

    work = tmp_path / "work"
    # inside the working directory: the config the package carries names it relatively;
    # with the manifest the default study's evidence rule would have written
    given = synthetic_package_dir(work / "given", 120, seed=4)
    config = load_study(yaml.safe_load((ROOT / "config/config.yaml").read_text()),
                        yaml.safe_load((ROOT / "config/schema/config.schema.yaml").read_text()),
                        load_arm_table(RESOURCES), RESOURCES).config
    manifest = build_manifest({n: given / n for n in ("rows.csv", "checks.csv")}, config)
    # the default study by name and digest; its sweeps left out, as the synthetic rows
    # are the paper's shape, not the default study's one sweep
    manifest["config"] = {"study": config["study"]}
    (given / "manifest.json").write_text(json.dumps(manifest))

    def snakemake(*args: str) -> None:
        p = procs.snakemake(work, *args, timeout=900)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    package_args = ("--config", "evidence=given")
    snakemake("-c2", "results/tables", *package_args)
    snakemake("-c1", "lock", *package_args)
    snakemake("-c1", "results/release/pkg.tar.gz", *package_args)
    package = work / "results/release/pkg"
    g = graph(package)
    run = next(e for e in g.values() if "CreateAction" in types(e))
    # the rules' own jobs, as Snakemake recorded them, start the run
    assert run["startTime"] < run["endTime"] and "jobs that made" in run["description"]
    assert not list(package.glob("*/.snakemake_timestamp"))
    cache = serve_ro_crate_context_locally(monkeypatch, tmp_path / "http-cache")
    assert violations(package, "workflow-run-crate-0.5", cache) == []
    verify = ("--configfile", str(package / "config.yaml"), "--config",
              "evidence=results/release/pkg/evidence")
    snakemake("-c1", "verify", *verify)
    assert CRATE_FILE in (work / "results/verify/report.md").read_text()
    # a table: the package's lock pins it, and it no longer rebuilds from the evidence
    flip(next(package.glob("tables/*.csv")))
    with pytest.raises(AssertionError, match=r"vs lock \(package\)"):
        snakemake("-c1", "verify", *verify)
    report = (work / "results/verify/report.md").read_text()
    assert "differs from the table rebuilt from the evidence" in report


def test_an_svgs_embedded_image_is_not_read_as_paths_and_what_follows_still_is(tmp_path):
    """The release carries figures/*.svg; the heatmap embeds a PNG as base64, whose text
    holds "+/a7LnLU/t2es"-like runs the path rule would refuse."""
    svg = tmp_path / "fig.svg"
    svg.write_text('<svg>\n<image xlink:href="data:image/png;base64,\niVBOR+/a7LnLU/t2es+x/9v\n'
                   'AAAA/bb/cc==\n"/>\n<text>/home/alice/x</text>\n</svg>\n')
    found = scan_tree(tmp_path, {}, set(), [])
    assert [(f.path, f.line, f.excerpt) for f in found] == [("fig.svg", 6, "/home/alice/x")]
