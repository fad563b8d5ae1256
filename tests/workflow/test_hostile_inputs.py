"""What a hostile reviewer hands in is refused
by name, before anything downstream of it is written.

Names that become paths, records that disagree with their paths, model ids in gateway
URLs, overrides that break the paper's capacity matches, evidence that cannot be, NaN
and hostless URLs in the config, and credentials under extra_body. Pure functions where
the check lives in one; two real Snakemake runs where the issue is the workflow's.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from foldstudy.analysis.numbers import write_numbers
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.backends.base import BackendError
from foldstudy.backends.openrouter import OpenRouterBackend
from foldstudy.evidence.load import evidence_dir_problem
from foldstudy.evidence.provenance import build_manifest
from foldstudy.grade.rows import RunRecordError, grade_sweep
from foldstudy.io import write_json
from foldstudy.report.viewer import build_viewer
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.plan import run_path
from foldstudy.study.spec import load_arm_table

from ..conftest import RESOURCES, ROOT
from ..support import records
from ..support.gateway_standin import Endpoint, GatewayStandin, Model
from .test_bad_inputs import (  # noqa: F401
    _frames,
    _save,
    _valid_line,
    assert_evidence_refused,
    package,
    set_cell,
    snakemake,
)

SECRET = "hunter2-opaque-9f3"  # not key-shaped: only its name says it is a credential


def tree(d: Path) -> dict[str, bytes]:
    """Every file under d with its bytes (logs aside): compared before and after."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file() and "logs" not in p.parts and ".snakemake" not in p.parts}


# ----------------------------------------------------------------------- the config

@pytest.fixture(scope="module")
def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def refused(base, config_schema, change) -> str:
    cfg = copy.deepcopy(base)
    change(cfg)
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, load_arm_table(RESOURCES), RESOURCES)
    return str(e.value)


def _model(name, **m):
    return lambda c: c["models"].update({name: m})


def _sweep_named(name):
    def change(c):
        c["sweeps"][name] = c["sweeps"].pop("main")
    return change


def _override(**ov):
    return lambda c: c.update(arm_overrides=ov)


OPENAI = {"backend": "openai", "base_url": "http://127.0.0.1:8000/v1"}
CONFIG_CASES = [
    ("model key ..", _model("..", **OPENAI), ["config.models: key '..' cannot name a path"]),
    ("model key .", _model(".", **OPENAI), ["config.models: key '.' cannot name a path"]),
    ("hidden model key", _model(".x", **OPENAI), ["key '.x' cannot name a path"]),
    ("model key with a slash", _model("a/b", **OPENAI), ["key 'a/b' cannot name a path"]),
    ("sweep named ..", _sweep_named(".."), ["config.sweeps: key '..' cannot name a path"]),
    ("study named ..", lambda c: c.update(study=".."), ["config.study: '..' cannot name"]),
    ("study with a slash", lambda c: c.update(study="../x"), ["config.study: '../x'"]),
    ("scale NaN", lambda c: c.update(scale=float("nan")),
     ["config.scale: nan is not a number this study can use"]),
    ("temperature NaN", lambda c: c.update(temperature=float("nan")),
     ["config.temperature: nan"]),
    ("capacity_scale inf", lambda c: c.update(capacity_scale=float("inf")),
     ["config.capacity_scale: inf"]),
    ("timeout NaN in a model", lambda c: c["models"]["smollm2-135m"].update(
        n_ctx=2048, threads=float("nan")), ["config.models.smollm2-135m.threads: nan"]),
    ("base_url without a host", _model("srv", backend="openai", base_url="http://"),
     ["config.models.srv.base_url: 'http://' has no host (a URL like http://127.0.0.1"]),
    ("base_url https://:80", _model("srv", backend="openai", base_url="https://:80/v1"),
     ["config.models.srv.base_url", "has no host"]),
    ("model_id walking up", _model("gw", backend="openrouter", model_id="../../etc/passwd",
                                   api_key_env="K"),
     ["config.models.gw.model_id", "'..' part between slashes"]),
    ("x_auth under extra_body", _model("srv", **OPENAI, extra_body={"x_auth": SECRET}),
     ["config.models.srv.extra_body.x_auth", "api_key_env"]),
    ("a token deep in extra_body", _model("srv", **OPENAI, extra_body={
        "opts": [{"Refresh-Token": SECRET}]}),
     ["config.models.srv.extra_body.opts[0].Refresh-Token"]),
    ("X-Api-Key under headers", _model("srv", **OPENAI, headers={"X-Api-Key": SECRET}),
     ["config.models.srv.headers.X-Api-Key", "api_key_env"]),
    ("a password under extra_body", _model("srv", **OPENAI, extra_body={
        "db": {"PASSWORD": SECRET}}), ["config.models.srv.extra_body.db.PASSWORD"]),
    ("q's budget and cap cut", _override(q={"fold_budget_tokens": 100, "carry_cap_tokens": 100}),
     ["config.arm_overrides.q.fold_budget_tokens: arm q's fold_budget_tokens 100 breaks the "
      "capacity match with arm j's 2400",
      "config.arm_overrides.q.carry_cap_tokens: arm q's carry_cap_tokens 100"]),
    ("j's budget raised alone", _override(j={"fold_budget_tokens": 3000}),
     ["config.arm_overrides.j.fold_budget_tokens", "arm j's fold_budget_tokens 3000",
      "arm p's 2400"]),
    ("u's cap no longer 1400/2400 of the others'", _override(u={"carry_cap_tokens": 2400}),
     ["config.arm_overrides.u.carry_cap_tokens", "keep u's 1400/2400 of j's (1400)"]),
]


@pytest.mark.parametrize("change, expected", [c[1:] for c in CONFIG_CASES],
                         ids=[c[0] for c in CONFIG_CASES])
def test_a_hostile_config_is_refused_by_key(base, config_schema, change, expected):
    msg = refused(base, config_schema, change)
    for part in expected:
        assert part in msg, (part, msg)
    assert SECRET not in msg  # a credential's value is never echoed


def test_the_paper_configs_and_legitimate_names_still_load(base, config_schema):
    arms = load_arm_table(RESOURCES)
    for name in ("config.yaml", "study-paper.yaml"):  # f, g, l differ: not in the comparison
        load_study(yaml.safe_load((ROOT / "config" / name).read_text()), config_schema, arms,
                   RESOURCES)
    cfg = copy.deepcopy(base)
    cfg["models"]["qwen3.6-local.v2"] = dict(OPENAI, extra_body={"chat_template_kwargs": {}})
    cfg["study"] = "paper.v2"
    load_study(cfg, config_schema, arms, RESOURCES)


def test_an_override_that_moves_the_chosen_capacity_scale_is_said(base, config_schema):
    cfg = copy.deepcopy(base)
    arms = load_arm_table(RESOURCES)
    assert load_study(cfg, config_schema, arms, RESOURCES).warnings == []
    comparison = [a for a, s in arms["arms"].items() if s.get("system_prompt") == "fixed_headings"]
    cfg["arm_overrides"] = {a: {"fold_budget_tokens": 600} for a in comparison}
    s = load_study(cfg, config_schema, arms, RESOURCES)
    assert any("not the 0.25 it would be without config.arm_overrides" in w
               for w in s.warnings), s.warnings


# ------------------------------------------------------------ model ids in URLs

@pytest.mark.parametrize("model_id, expected", [
    ("acme/w?x=1#f", "models/acme/w%3Fx%3D1%23f/endpoints"),
    ("acme/w x%2F", "models/acme/w%20x%252F/endpoints"),
], ids=["query and fragment", "space and percent"])
def test_a_model_id_never_changes_the_gateway_path(monkeypatch, model_id, expected):
    monkeypatch.setenv("HOSTILE_KEY", "sk-or-v1-standin")
    with GatewayStandin([Model("acme/w", [Endpoint("D", "d", "fp8")])]) as g:
        b = OpenRouterBackend("w", {"backend": "openrouter", "model_id": model_id,
                                    "base_url": g.base_url, "api_key_env": "HOSTILE_KEY",
                                    "max_attempts": 1})
        with pytest.raises(BackendError):
            b.list_endpoints()  # no such model: the whole id stayed inside its segment
        assert g.state.gets == [expected]


def test_a_dot_segment_model_id_is_never_sent(monkeypatch):
    monkeypatch.setenv("HOSTILE_KEY", "sk-or-v1-standin")
    with GatewayStandin([Model("acme/w", [Endpoint("D", "d", "fp8")])]) as g:
        b = OpenRouterBackend("w", {"backend": "openrouter", "model_id": "../../etc/passwd?x=1",
                                    "base_url": g.base_url, "api_key_env": "HOSTILE_KEY"})
        with pytest.raises(BackendError, match="'..' path part"):
            b.list_endpoints()
        assert g.state.gets == []


# ----------------------------------------------------- records against their paths

def _records(root: Path, change=None) -> tuple[list[dict], Path]:
    """Two records of sweep s at their config paths; change(record) edits the second."""
    fx = records.fixture()
    runs = []
    for rep in (0, 1):
        rec = records.record(["52677", "52677", "x", "x"], arm="j", repeat=rep, model="m",
                             row_id=f"s/m/r{rep}/j")
        if change and rep == 1:
            change(rec)
        path = root / run_path("s", "m", rep, "j")
        write_json(rec, path)
        runs.append({"sweep": "s", "model": "m", "repeat": rep, "arm": "j", "position": 0,
                     "path": str(path)})
    fixture = root / "results/fixtures/s/fixture.json"
    write_json(fx.to_dict(), fixture)
    return runs, fixture


RECORD_CASES = [
    ("arm m inside j.json", lambda r: r.update(arm="m"), "arm 'm' (the path says 'j')"),
    ("model walking out", lambda r: r.update(model="../../../../x"),
     "model '../../../../x' (the path says 'm')"),
    ("another sweep", lambda r: r.update(sweep="b"), "sweep 'b' (the path says 's')"),
    ("repeat 1.5", lambda r: r.update(repeat=1.5), "repeat 1.5 (the path says 1)"),
    ("row_id of another run", lambda r: r.update(row_id="s/m/r0/j"),
     "row_id 's/m/r0/j' (the path says 's/m/r1/j')"),
]


@pytest.mark.parametrize("change, expected", [c[1:] for c in RECORD_CASES],
                         ids=[c[0] for c in RECORD_CASES])
def test_a_record_that_disagrees_with_its_path_is_refused_by_grade_and_viewer(
        tmp_path, change, expected):
    runs, fixture = _records(tmp_path, change)
    bad = runs[1]["path"]
    before = tree(tmp_path)
    out = tmp_path / "results/graded/s"
    with pytest.raises(RunRecordError) as e:
        grade_sweep(str(fixture), [r["path"] for r in runs], str(RESOURCES / "grading.yaml"),
                    str(RESOURCES / "arms.yaml"), str(out / "rows.csv"),
                    str(out / "checks.csv"), str(out / "folds.csv"), str(out / "trace.csv"))
    assert bad in str(e.value) and expected in str(e.value), str(e.value)
    with pytest.raises(RunRecordError, match="disagrees with its path"):
        build_viewer(runs, {"s": str(fixture)}, None, None, RESOURCES / "templates",
                     tmp_path / "results/viewer", [])
    assert tree(tmp_path) == before  # no table, no page, nothing outside the project
    assert not (tmp_path.parent / "x.html").exists()


def test_viewer_pages_are_placed_by_the_config_not_the_record(tmp_path):
    runs, fixture = _records(tmp_path)
    written = build_viewer(runs, {"s": str(fixture)}, None, None, RESOURCES / "templates",
                           tmp_path / "viewer", [])
    assert sorted(str(p.relative_to(tmp_path / "viewer")) for p in written) == [
        "index.html", "s/m/r0/j.html", "s/m/r1/j.html"]


# ------------------------------------------------------------- evidence packages

def _duplicate_header(d: Path) -> None:
    lines = (d / "rows.csv").read_text().split("\n")
    lines[0] = lines[0].replace("folds_clipped", "fill")
    (d / "rows.csv").write_text("\n".join(lines))


def _fill_off(d: Path) -> None:
    rows, _ = _frames(d)
    i = int(rows.index[(rows["valid"] == "true") & (rows["fill"] != "")][0])
    rows.loc[i, "fill"] = str(min(1.0, float(rows.loc[i, "fill"]) + 0.2))
    _save(d, rows)


def _valid_with_catchup(d: Path) -> None:
    set_cell("catchup_fired", "true")(d)


def _carrier_off(d: Path) -> None:
    rows, _ = _frames(d)
    i = _valid_line(rows)
    rows.loc[i, "carrier_present"] = str(int(rows.loc[i, "carrier_present"]) + 1)
    _save(d, rows)


def _label_twice(d: Path) -> None:
    _, checks = _frames(d)
    checks.loc[1, "label"] = checks.loc[0, "label"]
    _save(d, checks=checks)


def _foreign_label(d: Path) -> None:
    _, checks = _frames(d)
    checks.loc[0, "label"] = "root password"
    _save(d, checks=checks)


def _huge_cell(d: Path) -> None:
    with open(d / "rows.csv", "a") as f:
        f.write('"' + "x" * 200_000 + '"\n')


def rows_only(edit):
    """The package's rows.csv edited by edit(rows, {}), no manifest written: what a
    reviewer's bare package holds."""
    def apply(d: Path) -> None:
        rows, _ = _frames(d)
        edit(rows, {})
        _save(d, rows)
    return apply


def with_manifest(edit=None):
    """The package with a manifest carrying its config (sweeps as its rows have them);
    edit(rows) changes rows.csv before the manifest is written, so no digest is off."""
    def apply(d: Path) -> None:
        rows, _ = _frames(d)
        sweeps = {}
        for s, g in rows.groupby("sweep"):
            arms = sorted(set(g["arm"]))
            sweeps[s] = {"scenario": g["scenario"].iloc[0], "models": sorted(set(g["model"])),
                         "arms": arms, "repeats": int(g["repeat"].astype(int).max()) + 1}
        if edit:
            edit(rows, sweeps)
            _save(d, rows)
        manifest = build_manifest({n: d / n for n in ("rows.csv", "checks.csv")},
                                  {"study": "t", "sweeps": sweeps})
        (d / "manifest.json").write_text(json.dumps(manifest))
    return apply


def _first_valid(rows):
    return _valid_line(rows)


def _set(column, value):
    def edit(rows, sweeps):
        rows.loc[_first_valid(rows), column] = value(rows, sweeps) if callable(value) else value
    return edit


def _one_sweep(rows):
    return rows.loc[_first_valid(rows), "sweep"]


EVIDENCE_CASES = [
    ("inf where a count is meant", set_cell("prompt_tokens", "inf"),
     ["rows.csv: column prompt_tokens is malformed: inf on line", "not a finite number"]),
    ("1e308 tokens", set_cell("completion_tokens", "1e308"),
     ["rows.csv: column completion_tokens is malformed: 1e+308", "beyond any count"]),
    ("inf carried_chars", set_cell("carried_chars", "inf"),
     ["rows.csv: column carried_chars is malformed: inf"]),
    ("repeat 1.5", set_cell("repeat", "1.5"),
     ["rows.csv: column repeat is malformed: 1.5 on line", "not a whole number"]),
    ("a header naming one column twice", _duplicate_header,
     ["rows.csv: the header on line 1 names column fill twice"]),
    ("fill not carried / declared", _fill_off,
     ["rows.csv: column fill is malformed", "not carried_chars / declared_ceiling_chars"]),
    ("valid with catch-up", _valid_with_catchup,
     ["rows.csv: column valid is malformed: true on line", "catchup_fired true"]),
    ("carrier_present off its checks", _carrier_off,
     ["rows.csv: column carrier_present is malformed", "in_carrier"]),
    ("one label twice in a row", _label_twice,
     ["checks.csv: column label is malformed", "on line 3 is checked twice"]),
    ("a label no scenario grades", _foreign_label,
     ["checks.csv: column label is malformed: 'root password' on line 2",
      "not a graded label of scenario"]),
    ("a 200 kB cell", _huge_cell,
     ["rows.csv: not a readable CSV on line", "field larger than field limit"]),
    ("position beyond the sweep's arms", with_manifest(_set(
        "position", lambda r, s: str(len(s[_one_sweep(r)]["arms"])))),
     ["rows.csv: column position is malformed", "is beyond sweep", "manifest.json"]),
    ("repeat beyond the sweep's repeats", with_manifest(_set(
        "repeat", lambda r, s: str(s[_one_sweep(r)]["repeats"]))),
     ["rows.csv: column repeat is malformed", "repeats (manifest.json's config)"]),
    ("a scenario that is not one", with_manifest(_set("scenario", "haystack")),
     ["rows.csv: column scenario is malformed: 'haystack' on line"]),
    ("a scenario that is not one, no manifest", rows_only(_set("scenario", "haystack")),
     ["rows.csv: column scenario is malformed: 'haystack' on line", "is not a scenario"]),
    ("a valid row of a model the config lacks", with_manifest(_set("model", "ghost")),
     ["rows.csv: column model is malformed: 'ghost' on line", "is not one of sweep"]),
    ("a valid row of a sweep the config lacks", with_manifest(_set("sweep", "ghost")),
     ["rows.csv: column sweep is malformed: 'ghost' on line"]),
]


@pytest.mark.parametrize("edit, expected", [c[1:] for c in EVIDENCE_CASES],
                         ids=[c[0] for c in EVIDENCE_CASES])
def test_evidence_that_cannot_be_is_refused_by_file_column_and_line(
        tmp_path, package, edit, expected):  # noqa: F811
    assert_evidence_refused(tmp_path, package, edit, expected)


def test_the_package_with_its_own_manifest_config_still_loads(tmp_path, package):  # noqa: F811
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    with_manifest()(d)
    assert write_numbers(d, tmp_path / "n.json", tmp_path / "p.json", tmp_path / "n.tex",
                         AnalysisPlan.load())


def test_an_evidence_path_that_is_no_package_is_named(tmp_path):
    (tmp_path / "rows.csv").write_text("row_id\n")
    (tmp_path / "results/evidence").mkdir(parents=True)
    assert "config.evidence: " in evidence_dir_problem(str(tmp_path / "rows.csv"), tmp_path)
    assert "is a file, not a directory" in evidence_dir_problem(str(tmp_path / "rows.csv"),
                                                                 tmp_path)
    own = evidence_dir_problem(str(tmp_path / "results/evidence"), tmp_path)
    assert "this checkout's own results/evidence" in own
    assert evidence_dir_problem(str(tmp_path / "results"), tmp_path) is None


# ------------------------------------------------------------- real Snakemake runs

@pytest.mark.workflow
@pytest.mark.parametrize("args, expected", [
    (["--config", "scale=nan"], "config.scale: nan is not a number"),
    (["--config", "temperature=nan"], "config.temperature: nan is not a number"),
    (["--config", "evidence=rows.csv"], "config.evidence: 'rows.csv' is a file"),
    (["--config", "evidence=results/evidence"], "this checkout's own results/evidence"),
], ids=["scale nan", "temperature nan", "evidence a file", "evidence this checkout's own"])
def test_snakemake_refuses_at_dag_time_naming_the_key(tmp_path, args, expected):
    (tmp_path / "rows.csv").write_text("row_id\n")
    (tmp_path / "results/evidence").mkdir(parents=True)
    (tmp_path / "results/evidence/manifest.json").write_text("{}")
    before = tree(tmp_path)
    p = snakemake(tmp_path, "-c1", "results/tables", *args)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert expected in out, out[-2000:]
    assert "Traceback" not in out
    assert tree(tmp_path) == before  # the package's manifest untouched, nothing written


def test_there_are_at_least_forty_new_bad_inputs():
    n = len(CONFIG_CASES) + 3 + len(RECORD_CASES) + len(EVIDENCE_CASES) + 3 + 4
    assert n >= 40, n
