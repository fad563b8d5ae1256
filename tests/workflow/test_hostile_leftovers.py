"""The hostile inputs still accepted, or refused with a raw traceback, after the first
round of hostile-input fixes. Each is now a named refusal (or the correct behaviour):
request fields from extra_body, *_tokens parameters, a lock over a refused or running
build and symlinks, malformed locks and manifests, YAML alias bombs, overlong and
invisible names, formula cells, config keys that mean nothing, a large plan said, and the
unclear messages.

Pure functions where the check lives in one; real Snakemake runs for the DAG-time ones.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from foldstudy.backends.base import ChatRequest
from foldstudy.backends.openai_compat import OpenAICompatBackend
from foldstudy.backends.store import lock_pins, store_dir_problem
from foldstudy.evidence.load import EvidenceError, evidence_dir_problem, load_evidence
from foldstudy.evidence.provenance import OtherStudy, build_manifest, check_same_study
from foldstudy.io import JOB_FAILED, MalformedFile, YamlRefused, load_yaml
from foldstudy.release.lock import lock_refusals
from foldstudy.study.capacity import TEXT_CHARS_PER_TOKEN
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.fixtures import PAPER_CHUNK_TOKENS, PAPER_SESSION_TOKENS, build_fixture
from foldstudy.study.spec import load_arm_table

from ..conftest import RESOURCES, ROOT
from ..release.test_verify import study, verify  # noqa: F401 - the locked study fixture
from .test_bad_inputs import (  # noqa: F401
    _frames,
    _save,
    _valid_line,
    assert_evidence_refused,
    package,
    set_cell,
    snakemake,
)

OPENAI = {"backend": "openai", "base_url": "http://127.0.0.1:8000/v1"}


@pytest.fixture(scope="module")
def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def load(base, config_schema, change):
    cfg = copy.deepcopy(base)
    change(cfg)
    return load_study(cfg, config_schema, load_arm_table(RESOURCES), RESOURCES)


def refused(base, config_schema, change) -> str:
    with pytest.raises(ConfigError) as e:
        load(base, config_schema, change)
    return str(e.value)


def _extra_body(**body):
    return lambda c: c["models"].update(srv=dict(OPENAI, extra_body=body))


def _sweep_name(name):
    def change(c):
        c["sweeps"][name] = c["sweeps"].pop("main")
    return change


# ----------------------------------------------------------------------- the config

CONFIG_CASES = [
    ("temperature in extra_body", _extra_body(temperature=1.5),
     ["config.models.srv.extra_body.temperature: the study sets temperature itself"]),
    ("model in extra_body", _extra_body(model="other/model"),
     ["config.models.srv.extra_body.model: the study sets model"]),
    ("seed and response_format in extra_body", _extra_body(seed=1, response_format={}),
     ["config.models.srv.extra_body.seed", "config.models.srv.extra_body.response_format"]),
    ("provider, reasoning, tools in extra_body",
     _extra_body(provider={}, reasoning={}, tools=[]),
     ["extra_body.provider", "extra_body.reasoning", "extra_body.tools"]),
    ("max_tokens in extra_body: a fixed field, not a credential", _extra_body(max_tokens=9),
     ["config.models.srv.extra_body.max_tokens: the study sets max_tokens"]),
    ("a 300-character sweep name", _sweep_name("s" * 300),
     ["config.sweeps: key 'sss", "cannot name a path", "at most 100 characters"]),
    ("a model key that reads as an option", lambda c: c["models"].update({"-rf": OPENAI}),
     ["config.models: key '-rf' cannot name a path"]),
    ("a study named like a formula", lambda c: c.update(study="=1+1"),
     ["config.study: '=1+1' cannot name a path"]),
    ("compare_pairs [[q, q]]", lambda c: c.update(compare_pairs=[["j", "m"], ["q", "q"]]),
     ["config.compare_pairs[1]: [q, q] compares arm 'q' with itself"]),
    ("evidence= left empty", lambda c: c.update(evidence=""),
     ["config.evidence: empty; name a released package's evidence/ folder"]),
]


@pytest.mark.parametrize("change, expected", [c[1:] for c in CONFIG_CASES],
                         ids=[c[0] for c in CONFIG_CASES])
def test_a_config_that_lies_or_means_nothing_is_refused_by_key(base, config_schema, change,
                                                               expected):
    msg = refused(base, config_schema, change)
    for part in expected:
        assert part in msg, (part, msg)
    assert "keys come from the environment" not in msg  # none of these is a credential


def test_server_parameters_named_tokens_are_not_credentials(base, config_schema):
    s = load(base, config_schema, _extra_body(skip_special_tokens=False, min_tokens=4,
                                              chat_template_kwargs={}))
    assert s.model_config("srv")["extra_body"]["min_tokens"] == 4
    for name in ("refresh_token", "X-Auth-Token", "accessToken"):
        msg = refused(base, config_schema, _extra_body(**{name: "opaque-value-1"}))
        assert f"extra_body.{name}: keys come from the environment only" in msg, msg


def test_a_name_of_100_characters_still_loads(base, config_schema):
    s = load(base, config_schema, _sweep_name("s" * 100))
    assert s.runs[0].sweep == "s" * 100


def test_what_is_sent_is_what_the_study_set():
    """Beneath the config check: the study's fields are written after extra_body, so an
    extra_body that slipped through could never change what the store key describes."""
    b = OpenAICompatBackend("srv", dict(OPENAI, extra_body={"temperature": 2.0, "seed": 9,
                                                             "model": "x", "top_k": 5}))
    req = ChatRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=8,
                      temperature=0.2, seed=1)
    body = b.body(req)
    assert (body["temperature"], body["seed"], body["model"], body["top_k"]) == (0.2, 1,
                                                                                   "srv", 5)


def test_an_override_of_an_arm_no_sweep_runs_is_said(base, config_schema):
    s = load(base, config_schema, lambda c: c.update(arm_overrides={"q": {
        "ceiling_per_field_chars": 1920}}))
    assert any(w.startswith("config.arm_overrides.q: no sweep runs arm 'q'") for w in s.warnings)
    assert not any("arm_overrides" in w for w in load(base, config_schema, lambda c: None)
                   .warnings)


def test_the_scale_warning_states_the_chunks_the_fixture_holds(base, config_schema):
    s = load(base, config_schema, lambda c: c.update(scale=1e-9))
    sw = s.config["sweeps"]["main"]
    fx = build_fixture(sw["scenario"], sw["seed"], 1e-9, load_yaml(RESOURCES / "facts.yaml"),
                       load_yaml(RESOURCES / "scenario/filler.yaml"),
                       {int(p) for p in load_yaml(RESOURCES / "grading.yaml")
                        ["stock_signature"]["ports"]})
    sizes = sorted(len(c) for c in fx.chunks)
    said = [w for w in s.warnings if "over half a chunk" in w]
    assert said, s.warnings
    assert f"chunks of {sizes[0]:,}-{sizes[-1]:,} characters" in said[0], said[0]
    assert f"~{int(sizes[-1] / TEXT_CHARS_PER_TOKEN):,} tokens" in said[0], said[0]
    assert "~0 tokens" not in said[0]


def test_a_plan_of_thousands_of_jobs_says_its_size(base, config_schema):
    assert load(base, config_schema, lambda c: None).plan_size() is None
    big = load(base, config_schema, lambda c: c["sweeps"]["main"].update(repeats=10_000))
    line = big.plan_size()
    runs = len(big.runs)
    assert runs == 10_000 * len(base["sweeps"]["main"]["arms"])
    assert line.startswith("plan: about ") and f"jobs ({runs:,} runs)" in line, line
    per_run = PAPER_SESSION_TOKENS // PAPER_CHUNK_TOKENS + 1  # a fold per chunk, a recall
    assert f"{runs * per_run:,} model calls" in line and "estimated cost $0 (local" in line


# --------------------------------------------------------------------------- YAML

def test_a_yaml_alias_bomb_is_refused_before_anything_walks_it(tmp_path):
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(YamlRefused, match=rf"{bomb}: its aliases \(\*name\) expand to "):
        load_yaml(bomb)
    loop = tmp_path / "loop.yaml"
    loop.write_text("a: &a [1, *a]\n")
    with pytest.raises(YamlRefused, match="an alias refers to a node that contains it"):
        load_yaml(loop)
    # the paper config's `<<: *gateway` merges still load
    assert load_yaml(ROOT / "config/study-paper.yaml")["models"]


# ------------------------------------------------------------- evidence packages

def _model_cell(value: str):
    def edit(d: Path) -> None:
        rows, _ = _frames(d)
        rows["model"] = rows["model"].where(rows["model"] != rows.loc[0, "model"], value)
        _save(d, rows)
    return edit


def _checks_cell(column: str, value: str):
    def edit(d: Path) -> None:
        _, checks = _frames(d)
        checks.loc[0, column] = value
        _save(d, checks=checks)
    return edit


EVIDENCE_CASES = [
    ("a 120,000-character model name", set_cell("model", "m" * 120_000),
     ["rows.csv: column model is malformed: line", "holds a name of 120,000 characters; a "
      "model is at most 100"]),
    ("a right-to-left override in a model name", set_cell("model", "qwen\u202eevil"),
     ["rows.csv: column model is malformed: line", "invisible character U+202E"]),
    ("a zero-width space in a label", _checks_cell("label", "primary\u200bingress port"),
     ["checks.csv: column label is malformed: line 2 holds the invisible character U+200B"]),
    ("a NUL in an answer", set_cell("answer", "port 8443\x00"),
     ["rows.csv: column answer is malformed", "U+0000"]),
    ("a formula as a model name", _model_cell('=HYPERLINK("http://x.example","y")'),
     ["rows.csv: column model is malformed: '=HYPERLINK(", "begins with '='",
      "spreadsheet formula"]),
    ("a formula in served_by", set_cell("served_by", "@SUM(1+1)"),
     ["rows.csv: column served_by is malformed: '@SUM(1+1)'"]),
]


@pytest.mark.parametrize("edit, expected", [c[1:] for c in EVIDENCE_CASES],
                         ids=[c[0] for c in EVIDENCE_CASES])
def test_hostile_text_in_evidence_is_refused_by_file_column_and_line(
        tmp_path, package, edit, expected):  # noqa: F811
    assert_evidence_refused(tmp_path, package, edit, expected)


def test_an_answer_in_another_script_still_loads(tmp_path, package):  # noqa: F811
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    set_cell("answer", "- порт: 8443 \u200f(RLM kept)")(d)
    from foldstudy.analysis.plan import AnalysisPlan

    plan = AnalysisPlan.load()
    assert len(load_evidence(d, plan.arm_order, plan.scenarios)[0])


@pytest.mark.parametrize("target", ["/etc/passwd", "rows.csv"], ids=["system file", "loop"])
def test_a_symlinked_rows_csv_is_named_as_a_symlink(tmp_path, package, target):  # noqa: F811
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    (d / "rows.csv").unlink()
    os.symlink(target, d / "rows.csv")
    from foldstudy.analysis.plan import AnalysisPlan

    plan = AnalysisPlan.load()
    with pytest.raises(EvidenceError, match=rf"rows.csv: a symbolic link to '{target}', not an "
                                            "evidence file"):
        load_evidence(d, plan.arm_order, plan.scenarios)


def test_an_evidence_path_that_loops_is_named(tmp_path):
    loop = tmp_path / "ev"
    os.symlink(loop, loop)
    assert "is a symbolic link to" in evidence_dir_problem(str(loop), tmp_path)
    assert "leads nowhere (a loop" in evidence_dir_problem(str(loop), tmp_path)


def _manifest(d: Path, **change) -> Path:
    m = build_manifest({n: d / n for n in ("rows.csv", "checks.csv")}, {"study": "t"})
    m.update(change)
    (d / "manifest.json").write_text(json.dumps(m))
    return d / "manifest.json"


@pytest.mark.parametrize("change, expected", [
    ({"artifacts": ["rows.csv"]}, "key 'artifacts' of an evidence manifest is an object"),
    ({"artifacts": {"rows.csv": "abc"}}, "artifacts.rows.csv of an evidence manifest is an "
                                          "object, not a str"),
    ({"config": "paper"}, "key 'config' of an evidence manifest is an object"),
], ids=["artifacts a list", "an artifact a string", "config a string"])
def test_a_manifest_of_the_wrong_shape_is_named(tmp_path, package, change, expected):  # noqa: F811
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    path = _manifest(d, **change)
    from foldstudy.analysis.plan import AnalysisPlan

    plan = AnalysisPlan.load()
    with pytest.raises(MalformedFile, match=expected):
        load_evidence(d, plan.arm_order, plan.scenarios)
    with pytest.raises(MalformedFile, match=expected):
        check_same_study(path, {"study": "t"})


def test_a_manifest_that_is_a_list_is_named(tmp_path):
    p = tmp_path / "manifest.json"
    p.write_text("[]")
    with pytest.raises(MalformedFile, match=r"an evidence manifest is a JSON object, not a list"):
        check_same_study(p, {"study": "t"})


def test_evidence_of_a_changed_config_names_the_key(tmp_path, package):  # noqa: F811
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    m = build_manifest({n: d / n for n in ("rows.csv", "checks.csv")},
                       {"study": "t", "temperature": 0.2, "scale": 0.03})
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(OtherStudy, match="config key temperature: changed since this evidence"):
        check_same_study(d / "manifest.json", {"study": "t", "temperature": 0.5, "scale": 0.03})


# ------------------------------------------------------------------ lock and store

@pytest.mark.parametrize("text, expected", [
    ("[]", "a lock file is a JSON object, not a list"),
    ('{"private": "x", "public": {}, "numbers": {}}', "key 'private' of a lock file is an "
                                                       "object"),
    ('{"private": {"store": "x"}, "public": {}, "numbers": {}}',
     "private.store of a lock file is an object, not a str"),
], ids=["a list", "private a string", "an entry a string"])
def test_verify_names_a_lock_of_the_wrong_shape(study, text, expected):  # noqa: F811
    study["lock"].write_text(text)
    from foldstudy.release.lock import VerifyFailed

    with pytest.raises(VerifyFailed):
        verify(study)
    assert expected in study["report"].read_text()


@pytest.mark.parametrize("text, expected", [
    ("[]", "a study lock is a JSON object, not a list"),
    ('{"private": "x"}', "key 'private' of a study lock is an object"),
], ids=["a list", "private a string"])
def test_a_replay_names_a_lock_of_the_wrong_shape(tmp_path, text, expected):
    lock = tmp_path / "t.lock.json"
    lock.write_text(text)
    with pytest.raises(MalformedFile, match=expected):
        lock_pins(lock)


def _results(tmp_path: Path) -> Path:
    r = tmp_path / "results"
    (r / "runs/s/m/r0").mkdir(parents=True)
    (r / "runs/s/m/r0/j.json").write_text("{}")
    (r / "logs/grade").mkdir(parents=True)
    (r / "logs/grade/s.log").write_text("2026 INFO graded 4 rows\n")
    return r


def test_the_lock_refuses_over_a_symlink_a_failed_job_and_a_running_build(tmp_path):
    r = _results(tmp_path)
    locks = tmp_path / ".snakemake/locks"
    assert lock_refusals(r, None, locks) == []
    # a run record replaced by a link to a system file (grade refused it by name)
    (r / "runs/s/m/r0/j.json").unlink()
    os.symlink("/etc/hostname", r / "runs/s/m/r0/j.json")
    (r / "logs/grade/s.log").write_text(f"2026 ERROR {JOB_FAILED}RunRecordError: results/runs/"
                                        "s/m/r0/j.json: not a run record\n")
    # and a rebuild still running: its Snakemake lock names the tables it will write
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text(f"{r / 'tables/recall.csv'}\n")
    (locks / "1.output.lock").write_text(f"{r / 'logs/lock.log'}\n")  # the lock's own run
    said = " | ".join(lock_refusals(r, None, locks))
    assert "a build of this directory is running: " in said and "0.output.lock" in said, said
    assert "1.output.lock" not in said
    assert f"a job refused its input: {r / 'logs/grade/s.log'}: RunRecordError" in said, said
    assert f"{r / 'runs/s/m/r0/j.json'} -> /etc/hostname: a symbolic link" in said, said


def test_a_failed_verify_does_not_stop_a_new_lock(tmp_path):
    r = _results(tmp_path)
    (r / "logs/verify.log").write_text(f"{JOB_FAILED}VerifyFailed: 2 mismatch(es)\n")
    assert lock_refusals(r, None, tmp_path / "none") == []


def test_a_store_path_is_named_for_what_it_is(tmp_path):
    missing, a_file = tmp_path / "nostore", tmp_path / "store.json"
    a_file.write_text("{}")
    assert "does not exist, and a replay answers every call" in store_dir_problem(
        str(missing), replay=True)
    assert store_dir_problem(str(missing), replay=False) is None  # a live run makes it
    assert "is a file, not a directory" in store_dir_problem(str(a_file), replay=False)
    assert store_dir_problem(str(tmp_path), replay=True) is None


# ------------------------------------------------------------- real Snakemake runs

@pytest.mark.workflow
@pytest.mark.parametrize("args, expected", [
    (["--config", "evidence="], "config.evidence: `--config evidence=` is empty"),
    (["--config", "replay=true", "store=nostore"], "config.store: 'nostore' does not exist"),
    (["--config", "store=afile"], "config.store: 'afile' is a file, not a directory"),
], ids=["evidence empty", "replay from a missing store", "store a file"])
def test_snakemake_names_the_key_before_any_job(tmp_path, args, expected):
    (tmp_path / "afile").write_text("x")
    p = snakemake(tmp_path, "-n", "results/tables", *args)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and expected in out, out[-2000:]
    assert "Traceback" not in out and "not in the response store" not in out


@pytest.mark.workflow
def test_snakemake_refuses_an_alias_bomb_config_in_one_line(tmp_path):
    lines = ["study: bomb", "x: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 8):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{'' if i == 1 else i - 1}"] * 10) + "]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    p = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "bomb.yaml"))
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "its aliases (*name) expand to" in out, out[-2000:]
    assert "Traceback" not in out


@pytest.mark.workflow
def test_snakemake_refuses_an_impossible_package_before_any_job_naming_it(tmp_path, package):  # noqa: F811
    bad = tmp_path / "bad"
    shutil.copytree(package, bad)
    set_cell("model", "qwen\u202eevil")(bad)
    work = tmp_path / "work"
    work.mkdir()
    p = snakemake(work, "-c1", "results/tables", "--config", f"evidence={bad}")
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert f"config.evidence: the package {bad} is refused: rows.csv: column model" in out, \
        out[-2000:]
    assert "Traceback" not in out and "Building DAG" not in out


@pytest.mark.workflow
def test_lock_refuses_what_grade_refused_in_a_real_run(tmp_path):
    """The issue's case end to end: a run record replaced by a link to a system file is
    refused by grade in one line, and `lock` then refuses too, naming the link and the
    job that failed, instead of pinning that file's digest."""
    from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
    from ..support.gateway_study import GatewayStudy, gateway_model

    key = "sk-or-v1-standin-lock"
    models = [Model("acme/w", [Endpoint("W", "w", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=key) as gw:
        cfg = {"study": "linked", "scale": 0.01, "recall_max_tokens": 32,
               "models": {"w": gateway_model("acme/w", gw.base_url, timeout_s=10)},
               "sweeps": {"s": {"scenario": "distributed", "seed": 5, "repeats": 1,
                                "models": ["w"], "arms": ["j", "m"]}}}
        s = GatewayStudy(tmp_path, cfg, key)
        p = s.snakemake("results/stats/numbers.json")
        assert p.returncode == 0, p.stderr[-3000:]
        record = tmp_path / "results/runs/s/w/r0/m.json"
        record.unlink()
        os.symlink("/etc/hostname", record)
        p = s.snakemake("results/stats/numbers.json", "--forcerun", "grade")
        out = p.stdout + p.stderr
        assert p.returncode != 0 and "job failed: RunRecordError: " in out, out[-3000:]
        assert "Traceback" not in out
        p = s.snakemake("lock")
        out = p.stdout + p.stderr
    assert p.returncode != 0 and "job failed: LockRefused: not locking" in out, out[-3000:]
    assert "a job refused its input: results/logs/grade/s.log: RunRecordError" in out, out
    assert "results/runs/s/w/r0/m.json -> /etc/hostname: a symbolic link" in out, out
    assert "Traceback" not in out and not (tmp_path / "config/linked.lock.json").exists()
