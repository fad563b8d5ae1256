"""Bad input is refused by name, and nothing partial is accepted.

Each case is one input a hostile reviewer would try. Each must fail (a named exception
or a non-zero exit) with a message naming the file and the key, column or line, and
leave no downstream output made from it (no numbers.json, lock, package or tarball).
No model runs here: synthetic evidence, hand-made run records and store entries, config
dicts, and two real Snakemake runs (a dry run and evidence mode).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml

from foldstudy.analysis.numbers import write_numbers
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.backends.store import StoreCorrupt
from foldstudy.evidence import columns
from foldstudy.evidence.load import EvidenceError
from foldstudy.evidence.provenance import build_manifest
from foldstudy.grade.rows import RunRecordError, read_record
from foldstudy.io import sha256_file, write_json
from foldstudy.release.lock import VerifyFailed, write_lock
from foldstudy.release.package import make_release
from foldstudy.release.scan import ReleaseRefused
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.spec import arm_ids, load_arm_table

from ..conftest import RESOURCES, ROOT
from ..release.test_verify import study, verify  # noqa: F401 - the locked study fixture
from ..support import procs
from ..support.store import two_entries
from ..support.synthetic import synthetic_package_dir

KEY = "sk-or-v1-" + "5f0c1e2d9b8a7f6e" * 3


# ------------------------------------------------------------------ evidence packages

@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    return synthetic_package_dir(tmp_path_factory.mktemp("package"), 60, seed=1)


def _frames(d: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.read_csv(d / "rows.csv", dtype=str, keep_default_na=False),
            pd.read_csv(d / "checks.csv", dtype=str, keep_default_na=False))


def _save(d: Path, rows: pd.DataFrame | None = None, checks: pd.DataFrame | None = None):
    if rows is not None:
        rows.to_csv(d / "rows.csv", index=False, lineterminator="\n")
    if checks is not None:
        checks.to_csv(d / "checks.csv", index=False, lineterminator="\n")


def _valid_line(rows: pd.DataFrame) -> int:
    """The index of the first valid row with a recall (its file line is index + 2)."""
    return int(rows.index[(rows["valid"] == "true") & (rows["recall"] != "")][0])


def set_cell(column: str, value: str) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        rows, _ = _frames(d)
        rows.loc[_valid_line(rows), column] = value
        _save(d, rows)
    return edit


def n_correct_above_n_graded(d):
    rows, _ = _frames(d)
    i = _valid_line(rows)
    rows.loc[i, ["n_correct", "recall"]] = ["15", str(15 / int(rows.loc[i, "n_graded"]))]
    _save(d, rows)


def nothing_graded_recall_one(d):
    rows, _ = _frames(d)
    rows.loc[_valid_line(rows), ["n_graded", "n_correct", "recall"]] = ["0", "0", "1"]
    _save(d, rows)


def duplicate_row(d):
    rows, _ = _frames(d)
    _save(d, pd.concat([rows, rows.iloc[[0]]], ignore_index=True))


def orphan_check(d):
    _, checks = _frames(d)
    checks.loc[3, "row_id"] = "anchor/nobody/r0/j"
    _save(d, checks=checks)


def header_only(name):
    def edit(d):
        p = d / name
        p.write_text(p.read_text().splitlines()[0] + "\n")
    return edit


def trailing_comma(header_too: bool):
    def edit(d):
        lines = (d / "rows.csv").read_text().splitlines()
        first = lines[0] + ("," if header_too else "")
        (d / "rows.csv").write_text("\n".join([first, *(x + "," for x in lines[1:])]) + "\n")
    return edit


def short_line(d):
    lines = (d / "rows.csv").read_text().splitlines()
    lines[5] = ",".join(lines[5].split(",")[:-3])
    (d / "rows.csv").write_text("\n".join(lines) + "\n")


def counts_moved(d):
    rows, _ = _frames(d)
    i = int(rows.index[(rows["valid"] == "true") & (rows["n_correct"].astype(int) > 0)][0])
    n = int(rows.loc[i, "n_correct"]) - 1
    rows.loc[i, ["n_correct", "recall"]] = [str(n), str(n / int(rows.loc[i, "n_graded"]))]
    _save(d, rows)


def one_check_dropped(d):
    rows, checks = _frames(d)
    rid = rows.loc[_valid_line(rows), "row_id"]
    _save(d, checks=checks.drop(index=checks.index[checks["row_id"] == rid][-1:]))


def all_checks_dropped(d):
    rows, checks = _frames(d)
    rid = rows.loc[_valid_line(rows), "row_id"]
    _save(d, checks=checks[checks["row_id"] != rid])


def drop_column(name, column):
    def edit(d):
        df = pd.read_csv(d / name, dtype=str, keep_default_na=False)
        df.drop(columns=[column]).to_csv(d / name, index=False, lineterminator="\n")
    return edit


def both_alias_names(d):
    rows, _ = _frames(d)
    _save(d, rows.assign(carried_fixed_headings=rows["headings_carried"]))


def edited_after_manifest(d):
    manifest = build_manifest({n: d / n for n in ("rows.csv", "checks.csv")}, {"study": "x"})
    (d / "manifest.json").write_text(json.dumps(manifest))
    set_cell("carried_chars", "1.5")(d)


def not_utf8(d):
    (d / "rows.csv").write_bytes((d / "rows.csv").read_bytes() + b"\xff\xfe,\n")


def empty_file(d):
    (d / "rows.csv").write_bytes(b"")


# (case id, edit, substrings the message must hold: file, then column/key and line)
EVIDENCE_CASES = [
    ("n_correct above n_graded", n_correct_above_n_graded,
     ["rows.csv", "column n_correct", "more than n_graded", "on line"]),
    ("n_graded 0 with recall 1", nothing_graded_recall_one,
     ["rows.csv", "column n_graded", "grades no fact", "on line"]),
    ("negative n_correct", set_cell("n_correct", "-1"),
     ["rows.csv", "column n_correct is malformed: -1 on line", "is negative"]),
    ("negative carried_chars", set_cell("carried_chars", "-40.0"),
     ["rows.csv", "column carried_chars", "is negative", "on line"]),
    ("negative prompt_tokens", set_cell("prompt_tokens", "-3"),
     ["rows.csv", "column prompt_tokens", "is negative", "on line"]),
    ("negative repeat", set_cell("repeat", "-1"),
     ["rows.csv", "column repeat is malformed: -1 on line", "is negative"]),
    ("duplicate row_id", duplicate_row,
     ["rows.csv", "column row_id", "repeats line 2", "on line 62"]),
    ("unknown arm", set_cell("arm", "x"),
     ["rows.csv", "column arm", "'x'",
      f"is not an arm (known: {' '.join(sorted(arm_ids(load_arm_table(RESOURCES))))}",
      "on line"]),
    ("check of no row", orphan_check,
     ["checks.csv", "column row_id", "'anchor/nobody/r0/j' on line 5",
      "is not a row of rows.csv"]),
    ("header-only rows.csv", header_only("rows.csv"), ["rows.csv", "only the header"]),
    ("header-only checks.csv", header_only("checks.csv"),
     ["rows.csv", "has no check in checks.csv", "on line"]),
    ("trailing comma on each data line", trailing_comma(False),
     ["rows.csv", f"line 2 has {len(columns.ROWS) + 1} cells",
      f"names {len(columns.ROWS)} columns", "trailing comma"]),
    ("trailing comma on every line", trailing_comma(True),
     ["rows.csv", f"column {len(columns.ROWS) + 1} has no name on line 1"]),
    ("a line cut short", short_line, ["rows.csv", "line 6 has",
                                      f"names {len(columns.ROWS)} columns"]),
    ("recall not n_correct / n_graded", set_cell("recall", "0.5"),
     ["rows.csv", "column recall", "is not n_correct / n_graded", "on line"]),
    ("valid row without recall", set_cell("recall", ""),
     ["rows.csv", "column recall is empty on valid row", "line"]),
    ("n_correct moved with its recall", counts_moved,
     ["rows.csv", "column n_correct", "checks.csv marks", "on line"]),
    ("a check dropped", one_check_dropped,
     ["rows.csv", "column n_graded", "checks.csv holds 13 checks", "on line"]),
    ("every check of a row dropped", all_checks_dropped,
     ["rows.csv", "has no check in checks.csv", "on line"]),
    ("a number that is not one", set_cell("headings_carried", "five"),
     ["rows.csv", "column headings_carried is malformed: 'five' on line"]),
    ("a boolean that is not one", set_cell("valid", "yes"),
     ["rows.csv", "column valid is malformed: 'yes' on line"]),
    ("an empty required boolean", set_cell("valid", ""),
     ["rows.csv", "column valid is empty on line"]),
    ("missing rows column", drop_column("rows.csv", "fill"),
     ["rows.csv", "missing column(s) fill"]),
    ("missing checks column", drop_column("checks.csv", "in_carrier"),
     ["checks.csv", "missing column(s) in_carrier"]),
    ("both names of one column", both_alias_names,
     ["rows.csv", "carried_fixed_headings/headings_carried"]),
    ("edited after its manifest", edited_after_manifest,
     ["manifest.json", "rows.csv", "differs"]),
    ("not UTF-8", not_utf8, ["rows.csv", "not a readable CSV"]),
    ("an empty rows.csv", empty_file, ["rows.csv", "empty file"]),
]


@pytest.mark.parametrize("edit, expected", [c[1:] for c in EVIDENCE_CASES],
                         ids=[c[0] for c in EVIDENCE_CASES])
def test_impossible_evidence_is_refused_by_file_column_and_line(tmp_path, package, edit,
                                                                expected):
    assert_evidence_refused(tmp_path, package, edit, expected)


def assert_evidence_refused(tmp_path: Path, package: Path, edit, expected: list[str]) -> None:
    """A copy of the package, edited, is refused with every part of the message expected,
    and nothing is written from it."""
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    edit(d)
    out = tmp_path / "stats"
    with pytest.raises(EvidenceError) as e:
        write_numbers(d, out / "numbers.json", out / "provenance.json", out / "numbers.tex",
                      AnalysisPlan.load())
    for part in expected:
        assert part in str(e.value), (part, str(e.value))
    assert "np." not in str(e.value)  # a cell as written, never numpy's repr of it
    assert not out.exists()  # nothing written from the bad package


def test_the_untouched_package_and_one_without_a_manifest_pass(tmp_path, package):
    out = tmp_path / "stats"
    assert write_numbers(package, out / "numbers.json", out / "provenance.json",
                         out / "numbers.tex", AnalysisPlan.load())


def test_the_line_named_is_the_line_in_the_file(tmp_path, package):
    d = tmp_path / "evidence"
    shutil.copytree(package, d)
    set_cell("arm", "x")(d)
    with pytest.raises(EvidenceError, match=r"on line (\d+)") as e:
        write_numbers(d, tmp_path / "n.json", tmp_path / "p.json", tmp_path / "n.tex",
                      AnalysisPlan.load())
    line = int(str(e.value).split("on line ")[1].split()[0])
    assert (d / "rows.csv").read_text().splitlines()[line - 1].split(",")[4] == "x"


# --------------------------------------------------------------------- run artifacts

RECORD = {"row_id": "s/m/r0/j", "status": "done", "arm_spec": {}, "folds": []}


@pytest.mark.parametrize("text, expected", [
    (json.dumps(RECORD)[:40], "not a readable run record"),
    (json.dumps({k: v for k, v in RECORD.items() if k != "folds"}), "run record without folds"),
    (json.dumps({"row_id": "s/m/r0/j"}), "run record without status, arm_spec, folds"),
    ("\udcff", "not a readable run record"),
], ids=["truncated", "without folds", "without three keys", "not UTF-8"])
def test_a_broken_run_record_is_named_with_the_command_that_remakes_it(tmp_path, text,
                                                                      expected):
    p = tmp_path / "results/runs/s/m/r0/j.json"
    p.parent.mkdir(parents=True)
    p.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(RunRecordError) as e:
        read_record(str(p))
    assert str(p) in str(e.value) and expected in str(e.value)
    assert f"snakemake {p}" in str(e.value)


# ------------------------------------------------------------------------ the store

def _entry(tmp_path):
    return two_entries(tmp_path / "store")


def _edit_json(p: Path, change: Callable[[dict], object]) -> None:
    entry = json.loads(p.read_text())
    out = change(entry)
    p.write_text(json.dumps(entry if out is None else out))


STORE_CASES = [
    ("edited reply", lambda s, k: _edit_json(
        s.path(k[0]), lambda e: e["reply"].update(text="14 of 14 facts")), "digest"),
    ("copied over another key", lambda s, k: s.path(k[1]).write_bytes(
        s.path(k[0]).read_bytes()), "do not hash to its key"),
    ("flipped bytes", lambda s, k: s.path(k[0]).write_bytes(
        b"\xff\xfe" + s.path(k[0]).read_bytes()[2:]), "not readable JSON"),
    ("truncated", lambda s, k: s.path(k[0]).write_bytes(s.path(k[0]).read_bytes()[:50]),
     "not readable JSON"),
    ("not an entry", lambda s, k: s.path(k[0]).write_text("[1, 2]"), "not a store entry"),
    ("request with an unknown field", lambda s, k: _edit_json(
        s.path(k[0]), lambda e: e["request"].update(tools=[])), "request is malformed"),
    ("request edited", lambda s, k: _edit_json(
        s.path(k[0]), lambda e: e["request"].update(temperature=0.9)),
     "do not hash to its key"),
]


@pytest.mark.parametrize("edit, expected", [c[1:] for c in STORE_CASES],
                         ids=[c[0] for c in STORE_CASES])
def test_a_bad_store_entry_is_named_and_never_served(tmp_path, edit, expected):
    store, endpoint, keys = _entry(tmp_path)
    edit(store, keys)
    key = keys[1] if edit is STORE_CASES[1][1] else keys[0]  # the entry overwritten
    with pytest.raises(StoreCorrupt) as e:
        store.get(key, endpoint)
    assert str(store.path(key)) in str(e.value) and expected in str(e.value)
    assert store.hits == 0  # nothing served


# ----------------------------------------------------------------------- the config

@pytest.fixture(scope="module")
def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def _cfg(base, change):
    cfg = copy.deepcopy(base)
    change(cfg)
    return cfg


CONFIG_CASES = [
    ("unknown arm", lambda c: c["sweeps"]["main"].update(arms=["j", "x"]),
     "config.sweeps.main.arms[1]: 'x' is not an arm"),
    ("negative repeats", lambda c: c["sweeps"]["main"].update(repeats=-2),
     "config.sweeps.main.repeats: -2 is less than the minimum of 1"),
    ("misspelt key", lambda c: c.update(sweps={}), "config: unknown key 'sweps'"),
    ("undeclared model", lambda c: c["sweeps"]["main"].update(models=["nope"]),
     "config.sweeps.main.models[0]: 'nope' is not a configured model"),
    ("model twice in a sweep", lambda c: c["sweeps"]["main"].update(
        models=["smollm2-135m", "smollm2-135m"]), "config.sweeps.main.models"),
    ("scale not a number", lambda c: c.update(scale="big"), "config.scale: 'big'"),
    ("key under extra_body", lambda c: c["models"].update(srv={
        "backend": "openai", "base_url": "http://127.0.0.1:8000/v1",
        "extra_body": {"headers": {"Authorization": f"Bearer {KEY}"}}}),
     "config.models.srv.extra_body.headers.Authorization"),
    ("key pasted into api_key_env", lambda c: c["models"].update(gw={
        "backend": "openrouter", "model_id": "a/b", "api_key_env": KEY}),
     "config.models.gw.api_key_env"),
    ("probe-only model that also runs", lambda c: c.update(probe_only=["smollm2-135m"]),
     "config.probe_only[0]: 'smollm2-135m' also runs in a sweep"),
    ("q ceiling breaking the match", lambda c: c.update(
        arm_overrides={"q": {"ceiling_per_field_chars": 2000}}),
     "config.arm_overrides.q.ceiling_per_field_chars"),
]


@pytest.mark.parametrize("change, expected", [c[1:] for c in CONFIG_CASES],
                         ids=[c[0] for c in CONFIG_CASES])
def test_a_bad_config_is_refused_by_key_before_any_job(base, config_schema, change,
                                                        expected):
    with pytest.raises(ConfigError) as e:
        load_study(_cfg(base, change), config_schema, load_arm_table(RESOURCES), RESOURCES)
    assert expected in str(e.value)
    assert KEY not in str(e.value) and KEY[:12] not in str(e.value)  # never echoed


# ----------------------------------------------------------------- lock and verify

def test_a_lock_of_another_study_is_said_once_naming_both(study):  # noqa: F811
    lock = json.loads(study["lock"].read_text())
    lock["study"] = "paper"
    lock["private"]["config"]["sha256"] = "0" * 64
    lock["numbers"] = {f"other.{i}": i for i in range(700)}
    study["lock"].write_text(json.dumps(lock))
    with pytest.raises(VerifyFailed, match="1 mismatch"):
        verify(study)
    report = study["report"].read_text()
    assert "this lock is for study 'paper', not for study 't'" in report
    assert "other.1" not in report


@pytest.mark.parametrize("edit, expected", [
    (lambda r: (r / "fixtures/s/manifest.json").unlink(),
     "fixtures/s/manifest.json: missing (pinned by the lock)"),
    (lambda r: (r / "runs/s/m1/r0/q.json").write_text("{}"),
     "runs/s/m1/r0/q.json: not in the lock (added after it)"),
    (lambda r: (r / "resources/prompts/fixed_headings.md").unlink(),
     "resources/prompts/fixed_headings.md: missing"),
    (lambda r: (r / "store/ab/abcd.json").unlink(),
     "store/ab/abcd.json: missing (pinned by the lock)"),
    (lambda r: (r / "runs/s/m1/r0/j.json").write_text('{"x": 1}'),
     "runs/s/m1/r0/j.json: sha256"),
], ids=["deleted fixture", "added run record", "deleted prompt", "deleted store entry",
        "edited run record"])
def test_a_missing_or_added_private_file_is_named_by_path(study, edit, expected):  # noqa: F811
    edit(study["root"])
    with pytest.raises(VerifyFailed):
        verify(study)
    assert expected in study["report"].read_text()


@pytest.mark.parametrize("target, text, expected", [
    ("t.lock.json", "{not json", "`t.lock.json` vs JSON: not readable"),
    ("stats/numbers.json", "", "`stats/numbers.json` vs JSON: not readable"),
    ("evidence/manifest.json", "[", "`evidence/manifest.json` vs JSON: not readable"),
], ids=["lock not JSON", "numbers.json empty", "manifest not JSON"])
def test_an_unreadable_pinned_file_is_a_named_mismatch(study, target, text, expected):  # noqa: F811
    (study["root"] / target).write_text(text)
    with pytest.raises(VerifyFailed):
        verify(study)
    assert expected in study["report"].read_text()


def test_no_lock_is_written_from_stale_numbers(study):  # noqa: F811
    numbers = json.loads(study["numbers"].read_text())
    key = next(k for k, v in sorted(numbers.items()) if isinstance(v, float))
    numbers[key] += 1
    write_json(numbers, study["numbers"])
    out = study["root"] / "new.lock.json"
    with pytest.raises(VerifyFailed) as e:
        write_lock(str(study["ev"]), str(study["numbers"]), str(out), "t", **study["args"])
    assert "numbers.json is stale" in str(e.value) and f"`{key}`" in str(e.value)
    assert not out.exists()


def test_no_lock_is_written_from_impossible_evidence(study):  # noqa: F811
    rows = study["ev"] / "rows.csv"
    rows.write_text(rows.read_text().replace(",m1,j,", ",m1,x,", 1))
    (study["ev"] / "manifest.json").unlink()
    out = study["root"] / "new.lock.json"
    with pytest.raises(EvidenceError, match="rows.csv: column arm is malformed: 'x' on line"):
        write_lock(str(study["ev"]), str(study["numbers"]), str(out), "t", **study["args"])
    assert not out.exists()


# -------------------------------------------------------------------------- release

def _release(study, plant: tuple[str, str] | None = None, **config):  # noqa: F811
    """make_release on the locked study; plant: (package path, text) written first."""
    root = study["root"]
    tables = root / "tables"
    tables.mkdir(exist_ok=True)
    (tables / "probe-verdicts.md").write_text("| model | verdict |\n|---|---|\n| m1 | ok |\n")
    if plant is not None:
        where, text = plant
        target = (study["ev"] if where.startswith("evidence/") else root) / where.split(
            "/", 1)[1] if where.startswith("evidence/") else root / where
        target.write_text(text)
    cfg = {"study": "t", "scale": 0.03, **config}
    out, tar = root / "release/pkg", root / "release/pkg.tar.gz"
    make_release("pkg", str(study["ev"]), str(study["numbers"]), str(study["lock"]), cfg,
                 str(tables), None, str(root / "fixtures"), root / "checkout", str(out),
                 str(tar), str(RESOURCES / "templates/release-README.md"))
    return out, tar


def test_a_clean_release_passes_with_planted_paths_model_paths_and_urls(study):  # noqa: F811
    # a planted path and a public URL in the config, a path the model wrote in a carry
    fixtures = study["root"] / "fixtures/s/manifest.json"
    fixtures.write_text(json.dumps({"facts": [{"value": "/var/lib/munul/seror/pukot.ckpt"}]}))
    folds = study["ev"] / "folds.csv"
    folds.write_text(folds.read_text().replace(",r,c", ",r,kept at /srv/ab/cd (cut short)",
                                               1))
    # published and locked again as edited: a file that differs from its manifest or its
    # lock pin is never released
    manifest = json.loads((study["ev"] / "manifest.json").read_text())
    manifest["artifacts"]["folds.csv"]["sha256"] = sha256_file(folds)
    (study["ev"] / "manifest.json").write_text(json.dumps(manifest))
    write_lock(str(study["ev"]), str(study["numbers"]), str(study["lock"]), "t",
               **study["args"])
    out, tar = _release(study, note="state at /var/lib/munul/seror/pukot.ckpt",
                        docs="https://openrouter.ai/api/v1")
    assert tar.is_file() and (out / "config.yaml").is_file()


# What the config names of this machine is left out, not refused (paper §7; the cases
# are tests/release/test_release_package.py's): what the package's other files hold is refused.
RELEASE_CASES = [
    ("model path in probes.csv", {}, ("evidence/probes.csv",
                                      "model,verdict,reason\nm1,ok,loaded /scratch/m.gguf\n"),
     "evidence/probes.csv:2", "absolute local path"),
    ("file URL in probes.csv", {}, ("evidence/probes.csv",
                                    "model,verdict,reason\nm1,ok,file:///mnt/models/m.gguf\n"),
     "evidence/probes.csv:2", "absolute local path: file:///mnt/models/m.gguf"),
    ("private endpoint in probes.csv", {}, (
        "evidence/probes.csv", "model,verdict,reason\nm1,ok,served by http://10.0.0.5:8000\n"),
     "evidence/probes.csv:2", "private endpoint URL: http://10.0.0.5:8000"),
    ("key in a fold reply", {}, ("evidence/folds.csv", "row_id,reply\nx," + KEY + "\n"),
     "evidence/folds.csv:2", "OpenRouter key"),
]


@pytest.mark.parametrize("config, plant, where, expected", [c[1:] for c in RELEASE_CASES],
                         ids=[c[0] for c in RELEASE_CASES])
def test_a_release_holding_a_local_path_or_a_secret_is_never_written(
        study, config, plant, where, expected):  # noqa: F811
    with pytest.raises(ReleaseRefused) as e:
        _release(study, plant, **config)
    assert where in str(e.value) and expected in str(e.value), str(e.value)
    assert KEY not in str(e.value)
    assert not (study["root"] / "release/pkg.tar.gz").exists()


def test_a_release_under_another_studys_lock_is_never_written(study):  # noqa: F811
    lock = json.loads(study["lock"].read_text())
    lock["study"] = "paper"
    study["lock"].write_text(json.dumps(lock))
    root = study["root"]
    (root / "tables").mkdir()
    verify_args = {k: v for k, v in study["args"].items() if k != "config"}
    with pytest.raises(VerifyFailed):
        make_release("pkg", str(study["ev"]), str(study["numbers"]), str(study["lock"]),
                     {"study": "t", "scale": 0.03}, str(root / "tables"), None, None,
                     root / "checkout", str(root / "release/pkg"),
                     str(root / "release/pkg.tar.gz"),
                     str(RESOURCES / "templates/release-README.md"),
                     verify={**verify_args, "claims_path": None,
                             "report_out": str(study["report"])})
    assert "this lock is for study 'paper'" in study["report"].read_text()
    assert not (root / "release").exists()


# ------------------------------------------------------------- real Snakemake runs

def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return procs.snakemake(workdir, *args, timeout=300)


def test_snakemake_refuses_a_bad_config_by_key_before_any_job(tmp_path, base):
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["arms"] = ["j", "x"]
    cfg["sweeps"]["main"]["repeats"] = 0
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    p = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "bad.yaml"))
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "config.sweeps.main.arms[1]: 'x' is not an arm" in out
    assert "config.sweeps.main.repeats" in out
    assert not (tmp_path / "results").exists()


def test_snakemake_refuses_a_key_named_sweep_before_any_job_never_showing_it(tmp_path, base):
    """`sk-or-v1-…` as a sweep name passed the dry run (exit 0) and then sat in
    every path, log and row id. Refused by key and the config file's line, not shown."""
    cfg = copy.deepcopy(base)
    cfg["sweeps"] = {KEY: cfg["sweeps"]["main"]}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    p = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "bad.yaml"))
    out = p.stdout + p.stderr
    assert p.returncode != 0
    said = [ln for ln in out.splitlines() if "a name shaped like a credential" in ln]
    assert len(said) == 1 and said[0].strip().startswith("config.sweeps (") and \
        "bad.yaml line " in said[0], out[-2000:]
    assert KEY not in out and KEY[:12] not in out and "Traceback" not in out
    assert not (tmp_path / "results").exists()


def test_snakemake_refuses_an_impossible_package_and_writes_nothing(tmp_path, package):
    bad = tmp_path / "bad"
    shutil.copytree(package, bad)
    n_correct_above_n_graded(bad)
    work = tmp_path / "work"
    work.mkdir()
    p = snakemake(work, "-c1", "results/tables", "--config", f"evidence={bad}")
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "rows.csv: column n_correct is malformed: 15 on line" in out
    # refused at DAG time, naming the package, in one line
    assert f"the package {bad} is refused" in out and "Traceback" not in out
    res = work / "results"
    made = [x for x in res.rglob("*") if x.is_file() and "logs" not in x.parts] \
        if res.exists() else []
    assert made == []  # no numbers, table, figure or trace from the bad package


def test_there_are_at_least_forty_bad_inputs():
    n = (len(EVIDENCE_CASES) + 4 + len(STORE_CASES) + len(CONFIG_CASES) + 1 + 5 + 3 + 2
         + len(RELEASE_CASES) + 1 + 2)
    assert n >= 40, n
