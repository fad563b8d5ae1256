"""Runs exported as ATIF trajectories (report/atif.py), on records built by hand: each
field rule of ATIF v1.7 the writer relies on, stated and checked, then every export read
back through the project's own ATIF reader (transcripts/atif.py, detected, no
format named): the turns it reads are the chunks the folds read, and it sees each fold's
compaction with the carry as what came after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldstudy.grade.rows import RunRecordError
from foldstudy.io import write_json
from foldstudy.records.run_record import RunRecord
from foldstudy.report.atif import CONTINUATION, MAIN, build_atif, run_dir, trajectory_files
from foldstudy.study.fixture_types import Fixture
from foldstudy.transcripts import read_transcript

from ..support.records import FACTS, fold, graded_frames, not_run, record

# A session in the study's turn shape (transcripts/turns.py): a tool call below its message,
# two tool results after it, a tool result first in a chunk, an assistant turn cut at a
# chunk's boundary and continued in the next, a system turn, and the graded values of
# tests/support/records.py planted in user and tool turns.
CHUNKS = (
    "=== session chunk 1 of 4 ===\n"
    "[turn 0] user: Open the ingress; the primary ingress port is 52677.\n"
    "[turn 1] assistant: Checking the listener.\n"
    '  -> tool call bash {"cmd": "ss -ltn"}\n'
    "[turn 2] tool: LISTEN 0 128 *:52677\n"
    "[turn 3] tool: tenant TN-4471\n",
    "=== session chunk 2 of 4 ===\n"
    "[turn 4] tool: a result with no agent turn before it in the chunk\n"
    "[turn 5] user: The DNS zone for the new records is ranir.lasetot.lan.\n"
    "[turn 6] assistant: Noted; a long reply cut at the chunk's\n",
    "=== session chunk 3 of 4 ===\n"
    "boundary, continued here.\n"
    "[turn 7] system: a note from the harness\n"
    "[turn 8] user: The shard count of the event store is 19 shards.\n",
    "=== session chunk 4 of 4 ===\n"
    "[turn 9] assistant: Done.\n",
)
# What the reader reads of the folded chunks, in order: (role, text); the system turn is
# counted, not read (as every system step)
THREAD = [
    ("user", "Open the ingress; the primary ingress port is 52677."),
    ("assistant", 'Checking the listener.\n  -> tool call bash {"cmd": "ss -ltn"}'),
    ("tool", "LISTEN 0 128 *:52677"),
    ("tool", "tenant TN-4471"),
    ("tool", "a result with no agent turn before it in the chunk"),
    ("user", "The DNS zone for the new records is ranir.lasetot.lan."),
    ("assistant", "Noted; a long reply cut at the chunk's"),
    ("assistant", "boundary, continued here."),
    ("user", "The shard count of the event store is 19 shards."),
    ("assistant", "Done."),
]
CARRIES = ["port 52677", "port 52677, zone ranir.lasetot.lan", "52677 19 shards"]
ANSWER = ("1. primary ingress port: 52677\n2. DNS zone for the new records: unknown\n"
          "3. shard count of the event store: 19 shards")
QUESTION = ("1. primary ingress port\n2. DNS zone for the new records\n"
            "3. shard count of the event store")


def session() -> Fixture:
    return Fixture("distributed", 7, 0.01, CHUNKS, FACTS)


def folded(**kw: Any) -> dict[str, Any]:
    """A run of three folds, the second a catch-up fold taking chunks 1 and 2 (a record
    numbers a fold by the last chunk it took in)."""
    folds = [fold(0, CARRIES[0]), fold(2, CARRIES[1], chunks=[1, 2]), fold(3, CARRIES[2])]
    return record(CARRIES, answer=ANSWER, folds=folds, **kw)


def export(tmp_path: Path, recs: list[dict[str, Any]], grading: dict[str, Any],
           fx: Fixture | None = None, out: str = "atif") -> Path:
    """The records written, graded as the evidence grades them, and exported as rule
    atif exports them."""
    fx = fx or session()
    graded_frames(recs, tmp_path, grading, fx)
    write_json(fx.to_dict(), tmp_path / "fixtures/s/fixture.json")
    runs = []
    for i, rec in enumerate(recs):
        write_json(rec, tmp_path / f"runs/{i}.json")
        runs.append({k: rec[k] for k in ("sweep", "model", "repeat", "arm")}
                    | {"path": str(tmp_path / f"runs/{i}.json")})
    build_atif(runs, {"s": str(tmp_path / "fixtures/s/fixture.json")},
               str(tmp_path / "rows.csv"), str(tmp_path / "checks.csv"), tmp_path / out)
    return tmp_path / out


def chain(first: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The file and its continuations, in order, each as its JSON."""
    out, here = [], first
    while True:
        doc = json.loads(here.read_text(encoding="utf-8"))
        out.append((here, doc))
        if not doc.get("continued_trajectory_ref"):
            return out
        here = here.parent / doc["continued_trajectory_ref"]


# -- the rules of ATIF v1.7 this writer relies on ------------------------------------------
# Harbor's pydantic models (src/harbor/models/trajectories/) and its specification
# (rfcs/0001-trajectory-format.md, v1.7); every model there is closed to unknown keys.

ROOT_KEYS = {"schema_version", "session_id", "trajectory_id", "agent", "steps", "notes",
             "final_metrics", "continued_trajectory_ref", "extra", "subagent_trajectories"}
AGENT_KEYS = {"name", "version", "model_name", "tool_definitions", "extra"}
STEP_KEYS = {"step_id", "timestamp", "source", "model_name", "reasoning_effort", "message",
             "reasoning_content", "tool_calls", "observation", "metrics",
             "is_copied_context", "llm_call_count", "extra"}
AGENT_ONLY = {"model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics"}
METRICS_KEYS = {"prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
                "logprobs", "completion_token_ids", "prompt_token_ids", "extra"}
RESULT_KEYS = {"source_call_id", "content", "subagent_trajectory_ref", "extra"}


def check_atif(path: Path, doc: dict[str, Any]) -> None:
    """Every rule of ATIF v1.7 the exported files rely on, one assertion each."""
    # the root: a known version, the agent (name and version required), steps non-empty
    assert set(doc) <= ROOT_KEYS, set(doc) - ROOT_KEYS
    assert doc["schema_version"] == "ATIF-v1.7"
    assert isinstance(doc["session_id"], str) and isinstance(doc["trajectory_id"], str)
    assert set(doc["agent"]) <= AGENT_KEYS
    assert isinstance(doc["agent"]["name"], str) and isinstance(doc["agent"]["version"], str)
    assert isinstance(doc["steps"], list) and doc["steps"]
    assert isinstance(doc.get("extra", {}), dict)
    # step_id: the ordinal of the step in its file, from 1, no gap
    assert [s["step_id"] for s in doc["steps"]] == list(range(1, len(doc["steps"]) + 1))
    for s in doc["steps"]:
        assert set(s) <= STEP_KEYS, set(s) - STEP_KEYS
        assert s["source"] in ("system", "user", "agent")
        assert isinstance(s["message"], str)  # required; a string for text
        # the fields of a model's turn belong to agent steps only
        if s["source"] != "agent":
            assert not set(s) & AGENT_ONLY, (s["step_id"], set(s) & AGENT_ONLY)
        metrics = s.get("metrics", {})
        assert set(metrics) <= METRICS_KEYS
        assert all(isinstance(metrics[k], int) and metrics[k] >= 0
                   for k in ("prompt_tokens", "completion_tokens") if k in metrics)
        assert isinstance(s.get("is_copied_context", False), bool)
        assert isinstance(s.get("extra", {}), dict)
        calls = {c["tool_call_id"] for c in s.get("tool_calls") or []}
        if "observation" in s:
            assert set(s["observation"]) == {"results"}
            for r in s["observation"]["results"]:
                assert set(r) <= RESULT_KEYS
                assert isinstance(r["content"], str)
                # a result names a call of its own step, or none (no standard tool call)
                assert r.get("source_call_id") is None or r["source_call_id"] in calls
    # a compaction (v1.7 context_management): a system step whose context_management says
    # boundary replace; the run goes on in the file continued_trajectory_ref names
    # (relative to this one), whose first steps are the copied context the agent saw
    boundaries = [s for s in doc["steps"]
                  if (s.get("extra") or {}).get("context_management")]
    for s in boundaries:
        assert s["source"] == "system"
        assert s["extra"]["context_management"] == {"type": "compaction", "boundary": "replace"}
    if "continued_trajectory_ref" in doc:
        assert (path.parent / doc["continued_trajectory_ref"]).is_file()
        assert doc["steps"][-1] in boundaries  # the file ends at the fold
        after = json.loads((path.parent / doc["continued_trajectory_ref"]).read_text())
        assert after["steps"][0].get("is_copied_context") is True
        assert after["session_id"] == doc["session_id"]  # one run: one session id


# -- tests ----------------------------------------------------------------------------------


@pytest.fixture()
def exported(tmp_path, grading) -> Path:
    return export(tmp_path, [folded(), not_run()], grading)


def test_every_file_keeps_the_rules_of_atif_v1_7(exported):
    files = sorted(exported.rglob("*.json"))
    assert len(files) == 4 + 1  # the run: one file and three continuations; not_run: one
    for path in files:
        check_atif(path, json.loads(path.read_text(encoding="utf-8")))


def test_a_run_is_one_file_and_one_continuation_per_fold(exported):
    run = exported / run_dir(folded())
    assert sorted(p.name for p in run.iterdir()) == sorted([
        MAIN, *(CONTINUATION.format(k=k) for k in (1, 2, 3))])
    docs = [doc for _, doc in chain(run / MAIN)]
    assert [d["trajectory_id"] for d in docs] == [
        "s/toy/r0/m", "s/toy/r0/m/cont-1", "s/toy/r0/m/cont-2", "s/toy/r0/m/cont-3"]
    # each fold's step says what the record says of it, the raw reply left out
    folds = [d["steps"][-1]["extra"]["foldstudy"]["fold"] for d in docs[:-1]]
    assert [(f["number"], f["chunks"]) for f in folds] == [(1, [0]), (3, [1, 2]), (4, [3])]
    assert folds[0]["reply"]["prompt_tokens"] == 100 and "raw" not in folds[0]["reply"]
    assert "text" not in folds[0]["reply"]  # the reply is the carry, kept once
    # no agent step of a chunk names a model; the recall answer names the folding model
    steps = [s for d in docs for s in d["steps"]]
    assert [s.get("model_name") for s in steps if s["source"] == "agent"][-1] == "toy"
    assert not any(s.get("model_name") for s in steps[:-1]) and "model_name" not in (
        docs[0]["agent"])


def test_the_reader_reads_back_the_chunks_the_folds_read_and_each_fold_as_a_compaction(
        exported):
    """Read with no format named: the reader detects ATIF, follows every continuation,
    reads the chunks' turns as the thread and each fold's carry as the compaction's
    summary, once."""
    path = exported / run_dir(folded()) / MAIN
    tr = read_transcript(path)
    assert tr.format == "atif" and tr.vocabulary == "ATIF-v1.7 (foldstudy run-record-v1)"
    assert [(m.role, m.text) for m in tr.messages] == [
        *THREAD, ("user", QUESTION), ("assistant", ANSWER)]
    assert tr.compactions == 3 and tr.compaction_summaries == tuple(CARRIES)
    assert tr.absent_summaries == 0
    assert [Path(p).name for p, _ in tr.inherited] == [
        CONTINUATION.format(k=k) for k in (1, 2, 3)]
    # the chunk's system turn counted, not read; each carry read once, as the summary
    assert dict(tr.left_out)["system"] == 1 and dict(tr.left_out)["copied_context"] == 3


def test_the_recall_turn_holds_the_answer_its_metrics_and_the_grade(exported, tmp_path,
                                                                     grading):
    last = chain(exported / run_dir(folded()) / MAIN)[-1][1]
    question, answer = last["steps"][-2:]
    assert (question["source"], question["message"]) == ("user", QUESTION)
    assert answer["metrics"] == {"prompt_tokens": 50, "completion_tokens": 30}
    grade = answer["extra"]["foldstudy"]["grade"]
    rows, checks, _ = graded_frames([folded()], tmp_path / "again", grading, session())
    assert grade["row"]["recall"] == rows.loc[0, "recall"] == pytest.approx(2 / 3)
    assert [(c["label"], c["correct"]) for c in grade["checks"]] == list(
        zip(checks["label"], checks["correct"], strict=True))
    assert [c["correct"] for c in grade["checks"]] == [True, False, True]
    assert answer["extra"]["foldstudy"]["recall"]["finish_reason"] == "stop"


def test_an_index_arms_index_is_copied_context_after_its_carry(tmp_path, grading):
    rec = folded()
    for i, f in enumerate(rec["folds"]):
        f["index"], f["index_tokens"] = f"- ID{i}", 2
    out = export(tmp_path, [rec], grading)
    tr = read_transcript(out / run_dir(rec) / MAIN)
    assert tr.compaction_summaries == tuple(f"{c}\n- ID{i}" for i, c in enumerate(CARRIES))
    assert [(m.role, m.text) for m in tr.messages][:len(THREAD)] == THREAD


def test_a_chunk_of_no_turns_is_one_user_step(tmp_path, grading):
    """The support fixtures' chunks are plain sentences: each chunk reads back whole."""
    from ..support.records import fixture

    fx = fixture()
    rec = record(["port 52677", "zone ranir.lasetot.lan", "x", "19 shards"], answer=ANSWER)
    out = export(tmp_path, [rec], grading, fx)
    for path, doc in chain(out / run_dir(rec) / MAIN):
        check_atif(path, doc)
    tr = read_transcript(out / run_dir(rec) / MAIN)
    assert [(m.role, m.text) for m in tr.messages][:4] == [("user", c) for c in fx.chunks]


def test_a_run_the_probe_forbade_is_one_system_step_saying_why(exported):
    doc = json.loads((exported / run_dir(not_run()) / MAIN).read_text())
    assert "continued_trajectory_ref" not in doc
    assert [(s["source"], s["message"]) for s in doc["steps"]] == [
        ("system", "Not run (not_run: schema_unsupported); no chunk was folded.")]
    assert doc["extra"]["foldstudy"]["not_run_reason"] == "schema_unsupported"


def test_a_run_that_ended_before_its_recall_turn_ends_at_its_last_carry():
    rec = RunRecord.from_dict(folded(recall=None))
    docs = trajectory_files(rec, session())
    last = docs[CONTINUATION.format(k=3)]["steps"]
    assert [(s["source"], s["message"], s.get("is_copied_context")) for s in last] == [
        ("system", CARRIES[2], True)]


def test_the_same_run_exports_the_same_bytes(tmp_path, grading):
    a = export(tmp_path / "a", [folded(), not_run()], grading)
    b = export(tmp_path / "b", [folded(), not_run()], grading)
    files = sorted(p.relative_to(a) for p in a.rglob("*.json"))
    assert files == sorted(p.relative_to(b) for p in b.rglob("*.json"))
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    steps = [s for _, d in chain(a / run_dir(folded()) / MAIN) for s in d["steps"]]
    assert not any("timestamp" in s for s in steps)  # none that could vary


def test_a_record_that_is_not_its_run_is_refused_before_any_file_is_written(tmp_path):
    """Files are placed by the config's run, so a record claiming another arm is refused
    (grade.rows.check_record_identity), and no run's file is written before it is."""
    good, bad = folded(), folded(arm="j")
    write_json(session().to_dict(), tmp_path / "fixture.json")
    runs = []
    for i, rec in enumerate((good, bad)):
        write_json(rec, tmp_path / f"runs/{i}.json")
        runs.append({"sweep": "s", "model": "toy", "repeat": 0, "arm": "m",
                     "path": str(tmp_path / f"runs/{i}.json")})
    with pytest.raises(RunRecordError, match="arm 'j' \\(the path says 'm'\\)"):
        build_atif(runs, {"s": str(tmp_path / "fixture.json")}, None, None,
                   tmp_path / "atif")
    assert not (tmp_path / "atif").exists()


def test_a_fold_naming_a_chunk_the_fixture_lacks_is_refused_in_one_line():
    rec = RunRecord.from_dict(folded())
    with pytest.raises(RunRecordError, match="fold 4 took in chunk 3, and the fixture of "
                                             "sweep s has chunks 0 to 2"):
        trajectory_files(rec, Fixture("distributed", 7, 0.01, CHUNKS[:3], FACTS))


def test_without_the_evidence_the_recall_turn_carries_no_grade():
    docs = trajectory_files(RunRecord.from_dict(folded()), session())
    answer = docs[CONTINUATION.format(k=3)]["steps"][-1]
    assert answer["message"] == ANSWER and "grade" not in answer["extra"]["foldstudy"]
