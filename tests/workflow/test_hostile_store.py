"""The response store: nothing forged is served, nothing is written before a refusal.

Each case is one input a hostile reviewer hands in: a store entry whose reply was edited
and whose reply_sha256 was recomputed (§1), evidence of another study or two run records
claiming one row (§5), errors that used to name nothing (§6), and a probe that bought
one body twice (§8). Each asserts a refusal (an exception or a non-zero exit), a message
naming the file and the key, entry, line or run, and that nothing downstream was written.
Most cases call the function that refuses; the forged entry and the config file given
twice run real Snakemake (marked workflow).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from foldstudy.backends.base import ReplayMiss
from foldstudy.backends.call import cached_complete
from foldstudy.backends.openrouter import OpenRouterBackend
from foldstudy.backends.replay import ReplayBackend
from foldstudy.backends.store import ResponseStore, StoreCorrupt, StoreUnpinned, lock_pins
from foldstudy.evidence.provenance import OtherStudy, build_manifest
from foldstudy.evidence.publish import RowIdCollision, publish_evidence
from foldstudy.grade.rows import RunRecordError, grade_sweep
from foldstudy.io import DuplicateKey, canonical_json, load_yaml, sha256_text, write_json
from foldstudy.release.lock import VerifyFailed, write_lock
from foldstudy.release.package import make_release
from foldstudy.release.scan import scan_text, scan_tree
from foldstudy.report.compare import compare_stage
from foldstudy.report.summary import summary_stage
from foldstudy.report.trace import trace_stage
from foldstudy.report.viewer import viewer_stage
from foldstudy.run.probe import probe_model
from foldstudy.run.tokens import ModelUnusable, token_classes

from ..conftest import RESOURCES
from ..release.test_verify import study, verify  # noqa: F401 - the locked study fixture
from ..run.test_probe import NO_REASONING, REQUIRED
from ..run.test_probe import arms as arms  # noqa: F401 - the probe's arms fixture
from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model, canonical
from ..support.records import fixture, record
from ..support.store import two_entries
from .test_bad_inputs import snakemake


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root by relative path: compared before and after a refusal."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def forge(entry: Path, text: str) -> None:
    """What a forger does: edit the reply and recompute the digest stored beside it."""
    e = json.loads(entry.read_text())
    e["reply"]["text"] = text
    e["reply_sha256"] = sha256_text(canonical_json(e["reply"]))
    entry.write_text(canonical_json(e))


# ------------------------------------------------------------ §1 a forged entry

def _locked_store(tmp_path: Path) -> tuple[ResponseStore, dict[str, Any], list[str], Path]:
    """A two-entry store and a lock pinning it (the lock's store part only)."""
    store, endpoint, keys = two_entries(tmp_path / "store")
    from foldstudy.release.lock import tree_digest

    lock = tmp_path / "t.lock.json"
    write_json({"private": {"store": tree_digest(store.root, listing=True)}}, lock)
    return store, endpoint, keys, lock


def test_a_forged_entry_passes_its_own_digest_but_not_the_lock(tmp_path):
    store, endpoint, keys, lock = _locked_store(tmp_path)
    forge(store.path(keys[0]), "14 of 14 facts")
    # The per-entry check alone serves it: anyone can recompute reply_sha256 ...
    assert ResponseStore(store.root).get(keys[0], endpoint).text == "14 of 14 facts"
    # ... the lock's pin does not.
    for replay in (True, False):  # a replay, and a live run or a retry
        pinned = ResponseStore.for_job(store.root, lock, replay=replay)
        with pytest.raises(StoreUnpinned) as e:
            pinned.get(keys[0], endpoint)
        msg = str(e.value)
        assert str(store.path(keys[0])) in msg and "sweep s" in msg and "turn fold0" in msg
        assert "differs from the" in msg and str(lock) in msg
        # the untouched entry is served as before
        assert pinned.get(keys[1], endpoint).text == "port 48213"


def test_a_replay_under_a_lock_refuses_an_entry_the_lock_never_pinned(tmp_path):
    store, endpoint, keys, lock = _locked_store(tmp_path)
    pins = lock_pins(lock)
    assert pins is not None and len(pins) == 2
    rel = f"{keys[0][:2]}/{keys[0]}.json"
    write_json({"private": {"store": {"listing": {k: v for k, v in pins.items()
                                                  if k != rel}}}}, lock)
    with pytest.raises(StoreUnpinned) as e:
        ResponseStore.for_job(store.root, lock, replay=True).get(keys[0], endpoint)
    assert str(store.path(keys[0])) in str(e.value) and "not pinned by the lock" in str(e.value)
    # a live run after the lock stores new calls: an unpinned entry is its own
    assert ResponseStore.for_job(store.root, lock, replay=False).get(keys[0], endpoint)


def test_a_replay_without_a_lock_says_the_store_is_unverified(tmp_path, caplog):
    store, _, _, _ = _locked_store(tmp_path)
    with caplog.at_level(logging.WARNING):
        ResponseStore.for_job(store.root, tmp_path / "none.lock.json", replay=True)
    assert "unverified" in caplog.text and "none.lock.json" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        ResponseStore.for_job(store.root, tmp_path / "none.lock.json", replay=False)
    assert caplog.text == ""  # a live run pays for what it serves


def test_verify_names_a_forged_entry_by_file_and_run(study):  # noqa: F811
    root = study["root"]
    shutil.rmtree(root / "store")
    store, _, keys = two_entries(root / "store")
    write_lock(str(study["ev"]), str(study["numbers"]), str(study["lock"]), "t",
               **study["args"])
    assert verify(study) == []
    forge(store.path(keys[1]), "port 1")
    with pytest.raises(VerifyFailed):
        verify(study)
    report = study["report"].read_text()
    assert f"store/{keys[1][:2]}/{keys[1]}.json (sweep s, turn fold1): sha256" in report


def test_verify_names_the_config_keys_that_changed(study):  # noqa: F811
    with pytest.raises(VerifyFailed):
        verify(study, config={"study": "t", "scale": 0.05, "temperature": 0.2})
    report = study["report"].read_text()
    assert "config key scale: changed since the lock" in report
    assert "config key temperature: added since the lock" in report


# ------------------------------------------------- §5 refused before anything is written

def _other_study_evidence(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "rows.csv").write_text("row_id\n")
    write_json(build_manifest({"rows.csv": d / "rows.csv"}, {"study": "paper"}),
               d / "manifest.json")
    return d / "rows.csv"


@pytest.mark.parametrize("stage", [trace_stage, summary_stage, viewer_stage, compare_stage],
                         ids=["trace", "summary", "viewer", "compare"])
def test_every_reader_of_evidence_refuses_another_study_before_writing(tmp_path, stage):
    rows = _other_study_evidence(tmp_path / "evidence")
    out = tmp_path / "out"
    outputs = {k: str(out / k) for k in ("png", "svg", "table_md", "table_csv", "facts",
                                         "summary", "viewer", "compare")}
    with pytest.raises(OtherStudy) as e:
        stage(SimpleNamespace(rows=str(rows), checks=str(rows), trace=None),
              SimpleNamespace(**outputs), SimpleNamespace(config={"study": "default"}))
    assert str(tmp_path / "evidence/manifest.json") in str(e.value)
    assert "'paper'" in str(e.value) and "'default'" in str(e.value)
    assert not out.exists()


def test_two_run_records_claiming_one_row_are_refused_naming_the_record(tmp_path):
    """A record claiming another run's row_id is refused, naming the record file, before
    anything is graded: a record is the run its path names (grade.rows
    check_record_identity), so two records can never share a row."""
    fx = tmp_path / "fixture.json"
    write_json(fixture().to_dict(), fx)
    runs = tmp_path / "results/runs/s/toy/r0"
    a, b = runs / "j.json", runs / "m.json"
    write_json(record(["c0"], arm="j"), a)
    write_json(record(["c0"], arm="m", row_id="s/toy/r0/j"), b)
    outs = {k: tmp_path / f"graded/{k}.csv" for k in ("rows", "checks", "folds")}
    with pytest.raises(RunRecordError) as e:
        grade_sweep(str(fx), [str(a), str(b)], str(RESOURCES / "grading.yaml"),
                    str(RESOURCES / "arms.yaml"), *map(str, outs.values()))
    assert str(b) in str(e.value) and "'s/toy/r0/j'" in str(e.value)
    assert not (tmp_path / "graded").exists()


def test_a_row_id_in_two_sweeps_is_refused_before_evidence_is_written(tmp_path):
    parts = {}
    for sweep in ("a", "b"):
        d = tmp_path / "graded" / sweep
        d.mkdir(parents=True)
        for k in ("rows", "checks", "folds", "trace"):
            (d / f"{k}.csv").write_text("row_id,invalid_reason\na/m/r0/j,\n")
        parts = {k: [*parts.get(k, []), str(d / f"{k}.csv")]
                 for k in ("rows", "checks", "folds", "trace")}
    ev = tmp_path / "evidence"
    with pytest.raises(RowIdCollision) as e:
        publish_evidence(parts, {k: str(ev / f"{k}.csv") for k in parts},
                         str(ev / "manifest.json"), {"study": "t"})
    assert all(p in str(e.value) for p in parts["rows"]) and "'a/m/r0/j'" in str(e.value)
    assert not ev.exists()


# ----------------------------------------------------------- §6 errors that name nothing

def test_a_directory_in_place_of_an_entry_is_named_live_and_in_replay(tmp_path):
    store, endpoint, keys = two_entries(tmp_path / "results/store")
    p = store.path(keys[0])
    p.unlink()
    p.mkdir()
    with pytest.raises(StoreCorrupt) as e:
        store.get(keys[0], endpoint)
    assert str(p) in str(e.value) and "not a file" in str(e.value)


def test_a_replay_miss_names_the_configured_store_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from foldstudy.backends.base import ChatRequest

    req = ChatRequest(messages=({"role": "user", "content": "x"},), max_tokens=8,
                      temperature=0.2, seed=1)
    with pytest.raises(ReplayMiss) as e:
        cached_complete(ReplayBackend({"backend": "embedded", "model": "m"}),
                        ResponseStore("results/store"), req, {"sweep": "s", "turn": "fold0"})
    assert "results/store/" in str(e.value)


def test_a_bracketed_ipv6_url_is_named_by_file_and_line(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/notes.md").write_text("ok\nserved at http://[::1]:8000/v1\n"
                                           "broken http://[::1 here\n")
    findings = [str(f) for f in scan_tree(tmp_path / "pkg", {}, set(), [])]
    assert "notes.md:2: private endpoint URL: http://[::1]:8000/v1" in findings
    assert any(f.startswith("notes.md:3: malformed URL") for f in findings), findings
    assert scan_text("a.md", "see https://openrouter.ai/api/v1", {}, set()) == []


@pytest.mark.parametrize("text, line, key", [
    ("study: x\ntemperature: 0.2\nscale: 1\ntemperature: 0.9\n", 4, "'temperature'"),
    ("models:\n  a: {backend: embedded}\nmodels:\n  b: {backend: embedded}\n", 3, "'models'"),
    ("sweeps:\n  s: {seed: 1, seed: 2}\n", 2, "'seed'"),
], ids=["temperature twice", "models twice", "a nested key twice"])
def test_a_yaml_key_given_twice_is_refused_by_file_line_and_key(tmp_path, text, line, key):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(DuplicateKey) as e:
        load_yaml(p)
    assert str(p) in str(e.value) and f"line {line}: key {key}" in str(e.value)


def test_merge_keys_still_override(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("base: &b {t: 1, n: 2}\nx:\n  <<: *b\n  t: 3\n")
    assert load_yaml(p)["x"] == {"t": 3, "n": 2}


def test_a_model_the_probe_could_not_load_is_refused_before_its_gguf_is_opened(tmp_path):
    fx = tmp_path / "fixture.json"
    write_json(fixture().to_dict(), fx)
    gguf = tmp_path / "missing.gguf"
    probe = {"model": "local", "verdict": "unreachable",
             "reason": f"weights_missing: no GGUF file at {gguf}", "permissions": {}}
    out = tmp_path / "chars-per-token.csv"
    with pytest.raises(ModelUnusable) as e:
        token_classes([str(fx)], {"local": {"backend": "embedded", "gguf": str(gguf)}},
                      str(out), probes={"local": probe})
    assert "models.local" in str(e.value) and str(gguf) in str(e.value)
    assert not out.exists()


def test_a_gguf_outside_the_package_is_left_out_and_the_config_still_verified(
        study):  # noqa: F811
    """Paper §7: a local path is excluded from the release, not refused. The
    config is still verified against the lock as it ran: unlocked, the new key is named;
    locked, the package carries `<local path: m.gguf>` and never the path."""
    root = study["root"]
    (root / "tables").mkdir()
    cfg = {"study": "t", "scale": 0.03, "models": {"m": {"gguf": "/scratch/u/m.gguf"}}}
    verify_args = {k: v for k, v in study["args"].items() if k != "config"}

    def release() -> None:
        make_release("pkg", str(study["ev"]), str(study["numbers"]), str(study["lock"]), cfg,
                     str(root / "tables"), None, None, root / "checkout",
                     str(root / "release/pkg"), str(root / "release/pkg.tar.gz"),
                     str(RESOURCES / "templates/release-README.md"),
                     verify={**verify_args, "claims_path": None,
                             "report_out": str(study["report"])})

    with pytest.raises(VerifyFailed):
        release()
    assert "config key models.m.gguf: added since the lock" in study["report"].read_text()
    assert not (root / "release").exists()
    write_lock(str(study["ev"]), str(study["numbers"]), str(study["lock"]), "t", config=cfg,
               **verify_args)
    release()
    text = (root / "release/pkg/config.yaml").read_text()
    assert "<local path: m.gguf>" in text and "/scratch" not in text


# ---------------------------------------------------------- §8 a paid duplicate in the probe

PROBE_KEY = "sk-or-v1-hostile-probe-0a1b"


@pytest.mark.parametrize("params, mandatory", [
    (NO_REASONING, False),  # the §4.2 re-probe with reasoning forced on
    (("max_tokens", "temperature", "seed", "reasoning"), False),  # no structured outputs
    (ALL_PARAMETERS, True),  # reasoning mandatory: its removal is the re-probe's body
], ids=["no reasoning declared", "plain only", "reasoning mandatory"])
def test_the_probe_never_buys_one_body_twice(tmp_path, monkeypatch, arms, params,  # noqa: F811
                                             mandatory):
    monkeypatch.setenv("HOSTILE_OR_KEY", PROBE_KEY)
    models = [Model("acme/x", [Endpoint("X", "x", "fp8", supported_parameters=params,
                                        reasoning_mandatory=mandatory)],
                    reasoning_mandatory=mandatory)]
    with GatewayStandin(models, key=PROBE_KEY) as gw:
        cfg = {"backend": "openrouter", "model_id": "acme/x", "base_url": gw.base_url,
               "api_key_env": "HOSTILE_OR_KEY", "timeout_s": 5, "max_attempts": 2,
               "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05}
        rec = probe_model("x", OpenRouterBackend("x", cfg), ResponseStore(tmp_path), arms,
                          REQUIRED, 0.2, 1, cfg)
        billed = Counter(canonical(b) for b in gw.state.billed)
    assert rec["reasoning_parameter"]["with"]["verdict"]  # the comparison was made
    assert billed and [n for n in billed.values() if n > 1] == []


# ------------------------------------------------------------- real Snakemake runs

FORGE_KEY = "sk-or-v1-standin-forged"


@pytest.mark.workflow
def test_a_forged_entry_is_published_by_neither_replay_nor_retry(tmp_path):
    """The issue's case through the workflow: a reply edited in the store with its digest
    recomputed, after the study was locked. A retry and a replay each refuse it naming
    the entry and its run, `verify` names it too, and no evidence or number changes."""
    from ..support.gateway_study import GatewayStudy, gateway_model

    policy = {"timeout_s": 10, "max_attempts": 2, "retry_initial_wait_s": 0.01,
              "retry_max_wait_s": 0.1}
    models = [Model("acme/flaky", [Endpoint("F", "f", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=FORGE_KEY) as gw:
        cfg = {"study": "forged", "scale": 0.01, "recall_max_tokens": 32,
               "models": {"flaky": gateway_model("acme/flaky", gw.base_url, **policy)},
               "sweeps": {"s": {"scenario": "distributed", "seed": 5, "repeats": 1,
                                "models": ["flaky"], "arms": ["j", "m"]}}}
        s = GatewayStudy(tmp_path, cfg, FORGE_KEY)
        p = s.snakemake("results/probe/summary.tsv")
        assert p.returncode == 0, p.stderr[-3000:]
        # j's fold 1 fails past its attempts: a row a retry will read fold 0 of.
        gw.state.queue_faults("acme/flaky", [{}, {"status": 502}, {"status": 502}])
        p = s.snakemake("results/stats/numbers.json")
        assert p.returncode == 0, p.stderr[-3000:]
        # Unlocked, a replay says first that the store is unverified.
        p = s.snakemake("results/stats/numbers.json", "-n", "--config", "replay=true")
        out = p.stdout + p.stderr
        assert "is unverified" in out and out.index("is unverified") < out.index("Building DAG")
        p = s.snakemake("lock")
        assert p.returncode == 0, p.stderr[-3000:]

        results = tmp_path / "results"
        j = json.loads((results / "runs/s/flaky/r0/j.json").read_text())
        assert j["infra_error"]  # the row the retry sends again
        key = j["folds"][0]["request_key"]
        entry = results / "store" / key[:2] / f"{key}.json"
        forge(entry, json.loads(entry.read_text())["reply"]["text"] + " port 1")
        published = {d: tree(results / d) for d in ("evidence", "stats")}
        named = [f"results/store/{key[:2]}/{key}.json", "arm j", "repeat 0", "turn fold0"]

        p = s.snakemake("results/stats/numbers.json", "--config", "retry_infrastructure=true")
        out = p.stdout + p.stderr
        assert p.returncode != 0 and all(n in out for n in named), out[-3000:]
        assert "StoreUnpinned: " in out and "Traceback" not in out  # one line
        assert {d: tree(results / d) for d in published} == published

    p = s.snakemake("verify")
    report = (results / "verify/report.md").read_text()
    assert p.returncode != 0 and f"store/{key[:2]}/{key}.json (sweep s, model flaky, arm j, " \
        "repeat 0, turn fold0): sha256" in report, report

    p = s.snakemake("results/stats/numbers.json", "--config", "replay=true")
    out = p.stdout + p.stderr
    assert p.returncode != 0 and all(n in out for n in named), out[-3000:]
    assert "Traceback" not in out
    assert {d: tree(results / d) for d in published} == published


@pytest.mark.workflow
def test_snakemake_refuses_a_config_file_with_a_key_given_twice(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text("study: twice\ntemperature: 0.2\nscale: 0.01\ntemperature: 0.9\n")
    before = tree(tmp_path)
    p = snakemake(tmp_path, "results/tables", "-n", "--configfile", str(c))
    out = p.stdout + p.stderr
    assert p.returncode != 0 and f"{c}: line 4: key 'temperature' is given twice" in out, out
    assert tree(tmp_path) == before
