"""A user's own session through the real workflow, on the gateway stand-in: the
same session written by Claude Code and as chat messages gives the same chunks and the
same planted folds, and everything downstream (folds, grader, trace, viewer, comparison
pages, tables, summary) reads the session fixture unchanged."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from ..support import procs
from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import ROOT, GatewayStudy, gateway_model

pytestmark = pytest.mark.workflow

DATA = ROOT / "tests/data/sessions"
KEY = "sk-or-v1-standin-sessions"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_session_in_both_formats_folds_the_same_chunks_end_to_end(tmp_path):
    models = [Model("acme/m", [Endpoint("A", "a", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {"study": "sessions", "recall_max_tokens": 64,
               "models": {"gw": gateway_model("acme/m", gw.base_url, timeout_s=10)},
               "scenarios": {
                   "atlas-cc": {"transcript": str(DATA / "atlas.claude-code.jsonl"),
                                "facts": str(DATA / "atlas-facts.yaml")},
                   "atlas-msg": {"transcript": str(DATA / "atlas.messages.jsonl"),
                                 "facts": str(DATA / "atlas-facts.yaml"),
                                 "format": "messages"}},
               "sweeps": {s: {"scenario": f"atlas-{s}", "models": ["gw"], "arms": ["j", "m"],
                              "repeats": 1} for s in ("cc", "msg")},
               "compare_pairs": [["j", "m"]]}
        # the user's own compaction prompt as an arm beside the paper's (arms_file)
        (tmp_path / "mine.md").write_text("Summarise the session; keep every identifier.\n")
        (tmp_path / "arms.yaml").write_text(json.dumps({"arms": {"mine": {
            "title": "my agent's compaction", "twin": "m", "system_prompt": "mine.md",
            "fold_budget_tokens": 2400, "carry_cap_tokens": 2400, "carry": "text"}}}))
        cfg["arms_file"] = str(tmp_path / "arms.yaml")
        cfg["sweeps"]["cc"]["arms"] = ["j", "m", "mine"]
        study = GatewayStudy(tmp_path, cfg, KEY)
        p = study.snakemake("results/tables", "results/sessions/atlas-cc/candidates.tsv")
        assert p.returncode == 0, p.stderr[-4000:]

    res = tmp_path / "results"
    fx = {s: json.loads((res / f"fixtures/{s}/fixture.json").read_text()) for s in ("cc", "msg")}
    assert fx["cc"]["chunks"] == fx["msg"]["chunks"]
    planted = {s: {f["label"]: f["chunk"] for f in fx[s]["facts"]} for s in fx}
    assert planted["cc"] == planted["msg"] and len(planted["cc"]) == 6
    # every run folded the session's five chunks, and the trace dates each fact by them
    rows = read_csv(res / "evidence/rows.csv")
    assert {r["scenario"] for r in rows} == {"atlas-cc", "atlas-msg"}
    mine = next(r for r in rows if r["arm"] == "mine")
    assert mine["valid"] == "true" and mine["sweep"] == "cc"
    sent = json.loads((res / "runs/cc/gw/r0/mine.json").read_text())
    assert sent["arm_spec"]["system_prompt"].startswith("Summarise the session")
    assert sent["arm_spec"]["system_prompt_sha256"] == mine["system_prompt_sha256"]
    assert all(r["folds"] == "5" and r["n_graded"] == "6" for r in rows)
    trace = read_csv(res / "evidence/trace.csv")
    for t in trace:
        sweep = t["row_id"].split("/")[0]
        assert int(t["planted_fold"]) == planted[sweep][t["label"]] + 1
    # the reader's pages, the facts by their labels in any script
    assert (res / "viewer/index.html").is_file()
    page = (res / "compare/cc/gw/r0.html").read_text(encoding="utf-8")
    assert "the primary ingress port" in page and "Отдел Маршрутизации" in page
    # the summary: per arm, each of the user's facts; the tool's own compaction beside
    summary = (res / "summary.md").read_text(encoding="utf-8")
    assert "Your facts in session `atlas-cc` (sweep cc" in summary
    assert "| the primary ingress port | 1 | held |" in summary
    assert "| the release tag | 5 | lost |" in summary
    assert "Baseline: the session's own compaction (1 summary" in summary
    assert "| the release tag | 5 | no compaction in the file |" in summary  # chat format
    head = next(line for line in summary.splitlines() if line.startswith("| fact |"))
    assert "j carried | j right | m carried | m right | mine carried | mine right" in head
    # candidates: the columns of docs/design.md §8, no model
    cand = (res / "sessions/atlas-cc/candidates.tsv").read_text(encoding="utf-8").splitlines()
    assert cand[0].split("\t") == ["token", "class", "first_turn", "count", "context"]
    assert any(line.startswith("@mirela.dobrev\thandle\t") for line in cand)
    assert (res / "sessions/atlas-cc/candidates.md").is_file()
    aside = (res / "sessions/atlas-cc/set_aside.tsv").read_text(encoding="utf-8")
    assert aside.startswith("reason\ttokens\texamples\tsays\n")
    # each transcript was parsed once, into the cache under .snakemake/
    assert len(list((tmp_path / ".snakemake/foldstudy/sessions").glob(
        "transcript-*.json"))) == 2


HARBOR = {"cc": "harbor.claude-code.jsonl", "codex": "harbor.codex.jsonl",
          "gemini": "harbor.gemini.json", "msg": "harbor.messages.jsonl",
          # a Codex fork whose parent's rollout is compressed and JSON-wraps its outputs
          "fork": "codex/sessions/2026/11/29/"
                  "rollout-2026-11-29T08-02-00-0f6c8a31-9d2e-4b57-a1c3-6e8d2b40f719.jsonl"}


def test_one_session_in_all_four_formats_folds_the_same_through_the_gateway(tmp_path):
    """The same session written by Claude Code, Codex CLI, Gemini CLI and as chat
    messages (and as a Codex fork read through its compressed parent), each format
    detected from its file, gives the same chunks and the same planted folds through the
    whole workflow: every run sent the same fold requests, and the trace dates every fact
    alike."""
    models = [Model("acme/m", [Endpoint("A", "a", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {"study": "harbor", "recall_max_tokens": 64,
               "models": {"gw": gateway_model("acme/m", gw.base_url, timeout_s=10)},
               "scenarios": {f"harbor-{s}": {"transcript": str(DATA / name),
                                             "facts": str(DATA / "harbor-facts.yaml")}
                             for s, name in HARBOR.items()},
               "sweeps": {s: {"scenario": f"harbor-{s}", "models": ["gw"], "arms": ["m"],
                              "repeats": 1} for s in HARBOR}}
        # each reply names the digest of the whole message it answers (the previous carry
        # and the chunk), so equal carries mean equal requests, fold by fold
        gw.state.reply = lambda body, content: content + "\nsha256 " + hashlib.sha256(
            json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
        p = GatewayStudy(tmp_path, cfg, KEY).snakemake("results/evidence/trace.csv",
                                                        cores=2)
        assert p.returncode == 0, p.stderr[-4000:]

    res = tmp_path / "results"
    manifests = {s: json.loads((res / f"fixtures/{s}/manifest.json").read_text())
                 for s in HARBOR}
    assert {s: m["session"]["format"] for s, m in manifests.items()} == {
        "cc": "claude-code", "codex": "codex", "gemini": "gemini", "msg": "messages",
        "fork": "codex"}
    assert manifests["fork"]["session"]["repaired"] == {"fork_prefix": 1, "json_output": 6}
    fx = {s: json.loads((res / f"fixtures/{s}/fixture.json").read_text()) for s in HARBOR}
    planted = {s: [(f["label"], f["chunk"]) for f in fx[s]["facts"]] for s in HARBOR}
    for s in HARBOR:
        assert fx[s]["chunks"] == fx["msg"]["chunks"], s
        assert planted[s] == planted["msg"], s
    # the four runs sent the same requests, fold by fold
    carries = {s: [f["carry"] for f in json.loads(
        (res / f"runs/{s}/gw/r0/m.json").read_text())["folds"]] for s in HARBOR}
    assert all(len(c) == len(fx["msg"]["chunks"]) for c in carries.values())
    assert len(set(carries["msg"])) == len(carries["msg"])  # each fold's own request
    assert all(carries[s] == carries["msg"] for s in HARBOR)
    trace = read_csv(res / "evidence/trace.csv")
    by_sweep = {s: sorted((t["label"], t["fold"], t["present"], t["planted_fold"])
                          for t in trace if t["row_id"].startswith(f"{s}/")) for s in HARBOR}
    assert by_sweep["msg"] and all(by_sweep[s] == by_sweep["msg"] for s in HARBOR)


NEWER = {"agy": "antigravity-cli/brain/2b7e4c1d-8f3a-4e6b-a9d2-5c0f1e3b7a84/"
                ".system_generated/logs/transcript_full.jsonl",
         "copilot": "copilot/session-state/8c4f2a1e-6b3d-4e9a-b5c7-0d1e2f3a4b5c/events.jsonl"}


def test_an_agy_transcript_and_a_copilot_session_fold_under_j_and_m_with_their_baseline(
        tmp_path):
    """The two CLIs read since they were added, each detected from its file, folded end to end
    under j and m; each CLI's own compaction (agy's `{{ CHECKPOINT 1 }}`, Copilot's two
    `summaryContent`s) is graded as the baseline beside the arms."""
    models = [Model("acme/m", [Endpoint("A", "a", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {"study": "newer", "recall_max_tokens": 64,
               "models": {"gw": gateway_model("acme/m", gw.base_url, timeout_s=10)},
               "scenarios": {f"lumen-{s}": {"transcript": str(DATA / name), "folds": 3,
                                            "facts": str(DATA / "lumen-facts.yaml")}
                             for s, name in NEWER.items()},
               "sweeps": {s: {"scenario": f"lumen-{s}", "models": ["gw"], "arms": ["j", "m"],
                              "repeats": 1} for s in NEWER}}
        # the summary and what it reads (the rows, the trace, the cards); the tables and
        # figures of a session study are test_a_session_in_both_formats_...'s
        p = GatewayStudy(tmp_path, cfg, KEY).snakemake("results/summary.md")
        assert p.returncode == 0, p.stderr[-4000:]

    res = tmp_path / "results"
    manifests = {s: json.loads((res / f"fixtures/{s}/manifest.json").read_text())
                 for s in NEWER}
    assert {s: m["session"]["format"] for s, m in manifests.items()} == {
        "agy": "antigravity", "copilot": "copilot"}
    assert manifests["copilot"]["session"]["vocabulary"] == "events v1 (Copilot CLI 1.0.9)"
    for s, summaries in (("agy", 1), ("copilot", 2)):
        own = manifests[s]["own_compaction"]
        assert own["summaries"] == summaries
        assert own["held"] == ["the exporter's port", "the ledger bucket"]
    rows = read_csv(res / "evidence/rows.csv")
    assert sorted((r["sweep"], r["arm"]) for r in rows) == [
        ("agy", "j"), ("agy", "m"), ("copilot", "j"), ("copilot", "m")]
    assert all(r["folds"] == "3" and r["n_graded"] == "4" for r in rows)
    summary = (res / "summary.md").read_text(encoding="utf-8")
    assert "Baseline: the session's own compaction (1 summary" in summary
    assert "Baseline: the session's own compaction (2 summaries" in summary
    assert "| the exporter's port | 1 | held |" in summary


def _field_sessions(tmp_path: Path) -> dict[str, tuple[Path, str | None]]:
    """The ferry session in every format the rest of the field writes, each as its tool
    leaves it: a file, or a database (built from its SQL text) and the session in it."""
    from ..transcripts.test_sessions_fleet import ATIF, KIRO, QWEN
    from ..transcripts.test_sessions_stores import (
        FERRY,
        FERRY_V2,
        GOOSE,
        GOOSE_ID,
        GOOSE_JSONL,
        KIRO_ID,
        OPENCODE,
        STORAGE,
        build,
    )

    return {"atif": (ATIF, None), "qwen": (QWEN, None), "kiro": (KIRO, None),
            "kirodb": (build(tmp_path, DATA / "kiro/data-sqlite3.sql", "data.sqlite3"),
                       KIRO_ID),
            "oc1": (build(tmp_path, OPENCODE / "opencode-1x.sql", "oc1.db"), FERRY),
            "oc2": (build(tmp_path, OPENCODE / "opencode-2x.sql", "oc2.db"), FERRY_V2),
            "ocjson": (STORAGE, None),
            "goosedb": (build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db"), GOOSE_ID),
            "goosejsonl": (GOOSE_JSONL, None)}


def test_the_fields_sessions_fold_end_to_end_with_their_own_compaction(tmp_path):
    """ATIF, Qwen Code, Kiro CLI (JSONL and SQLite), OpenCode (1.x and 2.x tables, the
    JSON storage) and goose (SQLite and JSONL), each detected from its file with no
    `format:` (a database's session named by `session:`), folded through the whole
    workflow; each CLI's own compaction, where the file holds one, is the baseline."""
    (stores := tmp_path / "stores").mkdir()
    sessions = _field_sessions(stores)
    models = [Model("acme/m", [Endpoint("A", "a", supported_parameters=ALL_PARAMETERS)])]
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {"study": "field", "recall_max_tokens": 64,
               "models": {"gw": gateway_model("acme/m", gw.base_url, timeout_s=10)},
               "scenarios": {f"ferry-{s}": {"transcript": str(path), "folds": 3,
                                            "facts": str(DATA / "ferry-facts.yaml"),
                                            **({"session": sid} if sid else {})}
                             for s, (path, sid) in sessions.items()},
               "sweeps": {s: {"scenario": f"ferry-{s}", "models": ["gw"], "arms": ["m"],
                              "repeats": 1} for s in sessions}}
        p = GatewayStudy(tmp_path, cfg, KEY).snakemake("results/summary.md", cores=2)
        assert p.returncode == 0, p.stderr[-4000:]

    res = tmp_path / "results"
    manifests = {s: json.loads((res / f"fixtures/{s}/manifest.json").read_text())
                 for s in sessions}
    assert {s: m["session"]["format"] for s, m in manifests.items()} == {
        "atif": "atif", "qwen": "qwen", "kiro": "kiro", "kirodb": "kiro", "oc1": "opencode",
        "oc2": "opencode", "ocjson": "opencode", "goosedb": "goose", "goosejsonl": "goose"}
    held = ["the relay's port", "the archive bucket"]  # never the tag, said after it
    for s, m in manifests.items():
        assert m["own_compaction"]["held"] == ([] if s == "kiro" else held), s
    rows = read_csv(res / "evidence/rows.csv")
    assert sorted(r["sweep"] for r in rows) == sorted(sessions)
    assert all(r["folds"] == "3" and r["n_graded"] == "3" for r in rows)
    summary = (res / "summary.md").read_text(encoding="utf-8")
    assert summary.count("Baseline: the session's own compaction (1 summary") == 8
    # each card of a session with a readable compaction reads it against the best arm
    # (the one arm, m, here), outside the matched comparison
    cards = (res / "decision.md").read_text(encoding="utf-8")
    said = re.findall(r"The CLI's own compaction against your best arm \(.*?\): its 1 "
                      r"summary \([\d,]+ characters\) held \*\*2 of 3\*\* graded facts; "
                      r"`m` held ([\d.]+) of them in its final carry", cards)
    assert len(said) == 8 and all(0 <= float(x) <= 1 for x in said)


def test_a_bad_session_is_refused_before_any_job_and_nothing_is_written(tmp_path):
    facts = tmp_path / "facts.yaml"
    facts.write_text("facts:\n  - {label: the signing key, value: kid-77ac1e-sorel}\n")
    cfg = {"models": {"s": {"backend": "embedded"}},
           "scenarios": {"atlas": {"transcript": str(DATA / "atlas.claude-code.jsonl"),
                                   "facts": str(facts)}},
           "sweeps": {"mine": {"scenario": "atlas", "models": ["s"], "arms": ["m"],
                               "repeats": 1}}}
    p = GatewayStudy(tmp_path, cfg, KEY).snakemake("-n", "results/tables")
    assert p.returncode != 0
    said = p.stdout + p.stderr
    assert "the signing key" in said and "only on a side branch" in said
    assert not (tmp_path / "results").exists()


def one_session_study(tmp_path: Path, transcript: Path, facts: Path
                      ) -> tuple[GatewayStudy, str]:
    """A study of one sweep folding `transcript` (in tmp_path/work), and its fixture."""
    cfg = {"models": {"s": {"backend": "embedded"}},
           "scenarios": {"own": {"transcript": str(transcript), "facts": str(facts)}},
           "sweeps": {"mine": {"scenario": "own", "models": ["s"], "arms": ["m"],
                               "repeats": 1}}}
    (tmp_path / "work").mkdir()
    return GatewayStudy(tmp_path / "work", cfg, KEY), "results/fixtures/mine/fixture.json"


def test_editing_a_forks_parent_rollout_reruns_its_fixture(tmp_path):
    """A Codex fork's history is its parent's rollout up to the cut, so the
    parent is the fixture's input as the transcript is: an edit to it reruns the fixture
    (and what reads it); an untouched study plans nothing."""
    from ..study.test_sessions_config import _fork_with_secret_parent

    fork, parent, _ = _fork_with_secret_parent(tmp_path / "tree")
    study, target = one_session_study(tmp_path, fork, DATA / "harbor-facts.yaml")
    assert study.snakemake(target).returncode == 0
    fixture = json.loads((tmp_path / "work" / target).read_text())
    assert [f["path"] for f in fixture["meta"]["session"]["inherited"]] == [str(parent)]
    p = study.snakemake("-n", target)
    assert "Nothing to be done" in p.stdout + p.stderr
    parent.write_text(parent.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    p = study.snakemake("-n", target)
    assert p.returncode == 0 and "fixture" in p.stdout and "Nothing to be done" not in \
        p.stdout + p.stderr, p.stdout[-2000:]



def test_a_transcript_edited_in_place_with_its_size_and_mtime_kept_reruns_its_fixture(
        tmp_path):
    """A transcript edited where it lies, its size and mtime put back (`os.utime`, a
    restore, a sync tool): Snakemake's mtime sees nothing, the fixture's content param
    (the transcript's sha256, through the session cache) does; the refolded fixture
    holds the new text, and its manifest's sha256 is the file's."""
    import os

    transcript = tmp_path / "atlas.claude-code.jsonl"
    shutil.copy(DATA / "atlas.claude-code.jsonl", transcript)
    study, target = one_session_study(tmp_path, transcript, DATA / "atlas-facts.yaml")
    assert study.snakemake(target).returncode == 0
    assert "Nothing to be done" in (p := study.snakemake("-n", target)).stdout + p.stderr
    before = transcript.stat()
    text = transcript.read_bytes()
    assert text.count(b"listener") == 3
    transcript.write_bytes(text.replace(b"listener", b"acceptor"))  # same length
    os.utime(transcript, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert transcript.stat().st_size == before.st_size
    assert transcript.stat().st_mtime_ns == before.st_mtime_ns
    p = study.snakemake("-n", target)
    assert p.returncode == 0 and "Nothing to be done" not in p.stdout + p.stderr, \
        p.stdout[-2000:]
    assert study.snakemake(target).returncode == 0
    fixture = json.loads((tmp_path / "work" / target).read_text())
    chunks = "\n".join(fixture["chunks"])
    assert "acceptor" in chunks and "listener" not in chunks
    manifest = json.loads((tmp_path / "work/results/fixtures/mine/manifest.json").read_text())
    assert manifest["session"]["transcript_sha256"] == hashlib.sha256(
        transcript.read_bytes()).hexdigest()
    assert "Nothing to be done" in (p := study.snakemake("-n", target)).stdout + p.stderr

# scenario: (transcript, three of its facts). One session is enough for the real model:
# the sample Claude Code session (atlas) is folded through the gateway stand-in above,
# its comparison page read there; folding it here too was 2,889 of this study's 6,133
# tokens of model work (bench/suite_tokens.py, 2026-12-05).
SAMPLES = {
    "harbor": (DATA / "harbor.codex.jsonl", [
        {"label": "the upstream port of the mirror", "value": "51873", "class": "port"},
        {"label": "the release tag", "value": "v3.18.2-moraine"},
        {"label": "the department that owns the mirror", "value": "Служба Причалов"}]),
}


FOLDS = 2  # the real model's folds per sample session (a third fold cost a third more)


@pytest.fixture(scope="module")
def folded_by_the_model(tmp_path_factory) -> Path:
    """The real model (SmolLM2-135M, no key, no network) folding the sample Codex
    session in two folds (the second reads the first's carry) under j. Three of its
    facts (so the capacity chosen for them, and each fold, stays small). j, whose folds
    stop short, at one thread: m's plain text fills its fold budget on every fold, which
    made this the suite's second-longest build. One arm: q's folds by the real model are
    the tiny study's (tests/workflow/test_workflow.py), and a second arm here cost as
    much again."""
    tmp_path = tmp_path_factory.mktemp("own-sessions")
    scenarios, sweeps = {}, {}
    for name, (transcript, facts) in SAMPLES.items():
        path = tmp_path / f"{name}.facts.yaml"
        path.write_text(yaml.safe_dump({"facts": facts}, allow_unicode=True), encoding="utf-8")
        scenarios[name] = {"transcript": str(transcript), "facts": str(path), "folds": FOLDS}
        sweeps[name] = {"scenario": name, "models": ["smollm2-135m"], "arms": ["j"],
                        "repeats": 1}
    cfg = {"study": "own-session", "recall_max_tokens": 64,
           "models": {"smollm2-135m": {"backend": "embedded", "n_ctx": 4096,
                                       "threads": procs.MODEL_THREADS}},
           "scenarios": scenarios, "sweeps": sweeps}
    study = GatewayStudy(tmp_path, cfg, KEY)
    p = procs.snakemake(tmp_path, "--configfile", str(study.configfile), "-c2",
                        "results/evidence/trace.csv", "results/compare", timeout=2400,
                        env=study.env)
    assert p.returncode == 0, p.stderr[-4000:]
    return tmp_path / "results"


def check_folded(res: Path, scenario: str) -> None:
    """The scenario's trace and records: the model's own carries, fold by fold."""
    trace = [t for t in read_csv(res / "evidence/trace.csv")
             if t["row_id"].startswith(f"{scenario}/")]
    fx = json.loads((res / f"fixtures/{scenario}/fixture.json").read_text())
    assert len(fx["chunks"]) == FOLDS
    # one line per (run, fact, fold): 1 run x 3 facts x FOLDS folds, dated by the session
    assert len(trace) == 3 * FOLDS
    assert {t["fold"] for t in trace} == {str(k + 1) for k in range(FOLDS)}
    planted = {f["label"]: f["chunk"] + 1 for f in fx["facts"]}
    assert all(int(t["planted_fold"]) == planted[t["label"]] for t in trace)
    record = json.loads((res / f"runs/{scenario}/smollm2-135m/r0/j.json").read_text())
    assert record["status"] == "run" and len(record["folds"]) == FOLDS
    assert all(isinstance(f["carry"], str) for f in record["folds"])


@pytest.mark.model
def test_the_embedded_model_folds_the_codex_sample_under_j(folded_by_the_model):
    """A Codex CLI rollout folded end to end by the real model; its own
    compaction (`compacted`) is the baseline beside the arms in the manifest."""
    check_folded(folded_by_the_model, "harbor")
    manifest = json.loads((folded_by_the_model / "fixtures/harbor/manifest.json").read_text())
    assert manifest["session"]["format"] == "codex"
    assert manifest["own_compaction"]["held"] == ["the upstream port of the mirror"]
    page = (folded_by_the_model / "compare/harbor/smollm2-135m/r0.html").read_text(
        encoding="utf-8")
    assert "the upstream port of the mirror" in page and "Служба Причалов" in page


def test_the_commands_of_docs_own_sessions_plan(tmp_path):
    """docs/own-sessions.md's two commands, planned (-n) on config/own-session.yaml, from
    a directory holding the sample session where the config names it."""
    shutil.copytree(DATA, tmp_path / "tests/data/sessions")
    doc = (ROOT / "docs/own-sessions.md").read_text(encoding="utf-8")
    for target in ("results/sessions/atlas/candidates.md", "results/tables"):
        assert f"{target} --configfile config/own-session.yaml" in doc
        p = procs.snakemake(tmp_path, "--configfile", str(ROOT / "config/own-session.yaml"),
                            "-n", target, timeout=300)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert not (tmp_path / "results").exists()
