"""The sessions the rest of the field writes: ATIF trajectories (Harbor), Qwen Code chat
recordings and Kiro CLI sessions, each detected from the file, its facts planted from a
user message and a tool result, its own compaction read as the baseline where the format
has one, and a malformed file refused in one line naming the file and what is wrong.

The samples are tests/data/sessions/atif, qwen and kiro (written by write_ferry.py there,
as each tool writes them, quirks included); hostile variants are made here from them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from foldstudy.study.boundary import has_whole_token
from foldstudy.study.sessions import turns
from foldstudy.transcripts import FORMATS, read_transcript

from ..conftest import ROOT
from .test_sessions import records, write
from .test_sessions_readers import fixture as read_fixture
from .test_sessions_readers import refusal

DATA = ROOT / "tests/data/sessions"
FACTS = DATA / "ferry-facts.yaml"
ATIF = DATA / "atif/trajectory.json"
CONT = DATA / "atif/trajectory.cont-1.json"
QWEN = next((DATA / "qwen/projects").rglob("*.jsonl"))
QWEN_JSON = next((DATA / "qwen/tmp").rglob("session-*.json"))
KIRO = next((DATA / "kiro/sessions/cli").glob("*.jsonl"))
PORT, BUCKET, TAG = "47213", "ferry-archive-w3", "v4.2.7-ferry"
LABELS = {PORT: "the relay's port", BUCKET: "the archive bucket", TAG: "the release tag"}


def fixture(path: Path):
    return read_fixture(path, FACTS, folds=3)


def first_with(tr, value: str):
    return next(m for m in tr.messages if has_whole_token(value, m.text))


def planted_from_a_user_message_and_a_tool_result(path: Path) -> None:
    """Each fact planted in the chunk holding its first occurrence: the port's is a user
    message, the bucket's a tool result."""
    tr = read_transcript(path)
    assert first_with(tr, PORT).role == "user" and first_with(tr, BUCKET).role == "tool"
    fx = fixture(path)
    assert [f.label for f in fx.facts] == list(LABELS.values())
    for f in fx.facts:
        assert has_whole_token(f.value, fx.chunks[f.chunk])


def atif_doc(tmp_path: Path, steps: list[dict], name: str = "trajectory.json", **top
             ) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"schema_version": "ATIF-v1.7", "session_id": "s",
                             "agent": {"name": "a", "version": "1"}, "steps": steps, **top},
                            indent=2), encoding="utf-8")
    return p


def step(n: int, source: str, message: object = "", **extra) -> dict:
    return {"step_id": n, "source": source, "message": message, **extra}


# -- ATIF -------------------------------------------------------------------------------------


def test_an_atif_trajectory_is_detected_and_its_facts_planted():
    tr = read_transcript(ATIF)
    assert tr.format == "atif" and "atif" in FORMATS
    assert tr.vocabulary == "ATIF-v1.7 (terminus-2 2.0.0)"
    planted_from_a_user_message_and_a_tool_result(ATIF)


def test_atif_the_continuation_is_followed_and_its_copied_context_read_once_as_the_baseline():
    """terminus-2 copies the original task into the continuation before the handoff
    summary: the task is once on the thread, and the copied steps are the baseline."""
    tr = read_transcript(ATIF)
    text = "\n".join(turns(tr))
    assert text.count("Wire the ferry relay") == 1
    assert "Summary from Previous Agent" not in text and "Is the relay running" not in text
    assert TAG in text  # the continuation's own steps are on the thread
    assert tr.compactions == 1 and len(tr.compaction_summaries) == 1
    assert "Summary from Previous Agent" in tr.compaction_summaries[0]
    assert dict(tr.left_out)["copied_context"] == 4
    own = fixture(ATIF).meta["own_compaction"]
    assert own["held"] == [LABELS[PORT], LABELS[BUCKET]]  # never the tag, said after it


def test_atif_the_continuation_file_is_named_so_it_is_scanned_and_pinned():
    tr = read_transcript(ATIF)
    assert tr.inherited == ((str(CONT.resolve()), len(CONT.read_text().splitlines())),)
    inherited = fixture(ATIF).meta["session"]["inherited"]
    assert [Path(f["path"]).name for f in inherited] == [CONT.name]


def test_atif_a_secret_in_the_continuation_is_warned_by_its_file_and_line(
        config_schema, resources, tmp_path):
    """The continuation's steps reach the model in a chunk as the first file's do."""
    from ..study.test_sessions_config import config, load
    shutil.copy(ATIF, tmp_path / ATIF.name)
    key = "ghp_" + "A1b2C3d4E5" * 4
    lines = CONT.read_text().splitlines()
    n = next(i for i, x in enumerate(lines) if "systemctl restart ferry" in x)
    lines[n] = lines[n].replace("systemctl restart ferry", f"systemctl restart ferry {key}")
    (tmp_path / CONT.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = config({"transcript": str(tmp_path / ATIF.name), "facts": str(FACTS)})
    said = [w for w in load(cfg, config_schema, resources).warnings if "credential" in w]
    assert said == [f"config.scenarios.atlas.transcript: {(tmp_path / CONT.name).resolve()}:"
                    f"{n + 1}: a credential-shaped string (GitHub token; not shown); it would "
                    "reach the model in a chunk (a line the main thread reads from another "
                    "file: a fork's parent, a trajectory's continuation)"]


def test_atif_field_rules_system_steps_parts_reasoning_and_results(tmp_path):
    """The fields read: `system` steps are counted, never read; `message` may be a list of
    content parts; `reasoning_content` is thinking; observation results are tool results
    in order, one with no source_call_id (terminal output) too; a result that only names
    a subagent's trajectory is counted."""
    p = atif_doc(tmp_path, [
        step(1, "system", "You are an agent."),
        step(2, "user", [{"type": "text", "text": "port 47213"},
                         {"type": "image", "source": {"media_type": "image/png",
                                                      "path": "a.png"}}]),
        step(3, "agent", "Reading.", reasoning_content="think first",
             tool_calls=[{"tool_call_id": "c1", "function_name": "bash",
                          "arguments": {"command": "ls"}}],
             observation={"results": [
                 {"source_call_id": "c1", "content": "a.txt"},
                 {"content": [{"type": "text", "text": "$ prompt"}]},
                 {"subagent_trajectory_ref": [{"trajectory_path": "sub.json"}]}]})])
    tr = read_transcript(p)
    assert [(m.role, m.text) for m in tr.messages] == [
        ("user", "port 47213\n[image]"), ("assistant", "Reading."), ("tool", "a.txt"),
        ("tool", "$ prompt")]
    assert tr.messages[1].tool_calls[0].name == "bash" and tr.messages[1].thinking == ""
    assert dict(tr.left_out) == {"system": 1, "reasoning": 1, "subagent_ref": 1}
    assert read_transcript(p, include_thinking=True).messages[1].thinking == "think first"


def test_atif_an_in_file_boundary_reads_its_observation_and_the_copied_steps_after_it(tmp_path):
    """A producer that compacts inside one file (v1.7 context_management, boundary
    replace): the boundary's observation text and the copied steps after it are the
    baseline; the steps before it stay on the thread."""
    p = atif_doc(tmp_path, [
        step(1, "user", "the bucket is ferry-archive-w3"),
        step(2, "agent", "noted"),
        step(3, "system", "Context compaction performed",
             observation={"results": [{"content": "Summary: bucket ferry-archive-w3"}]},
             extra={"context_management": {"type": "compaction", "boundary": "replace"}}),
        step(4, "user", "the bucket is ferry-archive-w3", is_copied_context=True),
        step(5, "user", "go on")])
    tr = read_transcript(p)
    assert [m.text for m in tr.messages] == ["the bucket is ferry-archive-w3", "noted", "go on"]
    assert tr.compaction_summaries == ("Summary: bucket ferry-archive-w3\n"
                                       "user: the bucket is ferry-archive-w3",)
    assert tr.compactions == 1 and tr.inherited == ()


def test_atif_a_boundary_with_nothing_to_read_leaves_the_baseline_absent(tmp_path):
    p = atif_doc(tmp_path, [
        step(1, "user", "hello"),
        step(2, "system", "compacted", extra={"context_management": {"boundary": "replace"}}),
        step(3, "user", "again")])
    tr = read_transcript(p)
    assert tr.compactions == tr.absent_summaries == 1 and tr.compaction_summaries == ()


def test_atif_a_continuation_without_a_boundary_mark_is_still_a_compaction(tmp_path):
    """terminus-2 before Harbor #1844 marks no context_management: the file going on in
    another is the compaction."""
    shutil.copy(CONT, tmp_path / CONT.name)
    doc = json.loads(ATIF.read_text())
    del doc["steps"][-1]["extra"]
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    tr = read_transcript(p)
    assert tr.compactions == 1 and turns(tr) == turns(read_transcript(ATIF))
    assert tr.compaction_summaries == read_transcript(ATIF).compaction_summaries


def test_atif_an_unknown_schema_version_is_read_and_named(tmp_path):
    p = atif_doc(tmp_path, [step(1, "user", "hi")], schema_version="ATIF-v1.9")
    assert read_transcript(p).vocabulary == (
        "ATIF-v1.9 (a 1): a version this reader does not know, read as ATIF-v1.7")


def test_atif_a_cycle_of_continuations_is_refused_in_one_line(tmp_path):
    a = atif_doc(tmp_path, [step(1, "user", "a")], "a.json", continued_trajectory_ref="b.json")
    atif_doc(tmp_path, [step(1, "user", "b")], "b.json", continued_trajectory_ref="./a.json")
    msg = refusal(a)
    assert msg.startswith(f"{tmp_path / 'b.json'}: continued_trajectory_ref './a.json' comes "
                          "back to a file already read (a.json -> b.json -> a.json)")


def test_atif_a_continuation_ref_that_is_no_string_is_refused(tmp_path):
    p = atif_doc(tmp_path, [step(1, "user", "a")], continued_trajectory_ref=["b.json"])
    assert refusal(p).startswith(f"{p}: continued_trajectory_ref is a JSON list, not string "
                                 "or null")


@pytest.mark.parametrize(("target", "says"), [
    (None, "does not exist"),
    ('{"role": "user", "content": "hi"}\n', "which is not an ATIF trajectory"),
    ("{not json", "which is not JSON"),
])
def test_atif_a_continuation_that_is_missing_or_no_trajectory_is_refused(tmp_path, target, says):
    p = atif_doc(tmp_path, [step(1, "user", "a")], continued_trajectory_ref="next.json")
    if target is not None:
        (tmp_path / "next.json").write_text(target, encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}: continued_trajectory_ref 'next.json'") and says in msg


@pytest.mark.parametrize(("change", "says"), [
    ({"source": "assistant"}, "steps[1]: source is 'assistant', not user, agent or system"),
    ({"tool_calls": {"function_name": "bash"}}, "steps[1]: tool_calls is a JSON object, "
                                                "not list or null"),
    ({"step_id": "3"}, "steps[1]: step_id is a JSON string, not number"),
    ({"is_copied_context": "yes"}, "steps[1]: is_copied_context is a JSON string"),
])
def test_a_malformed_atif_step_is_refused_naming_the_file_and_step(tmp_path, change, says):
    doc = json.loads(ATIF.read_text())
    doc["steps"][1].update(change)
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}: ") and says in msg, msg


# -- Qwen Code --------------------------------------------------------------------------------


def test_qwen_and_claude_code_records_are_each_detected_as_their_own():
    """Both carry uuid and parentUuid: Qwen Code's Gemini-style parts, systemPayload and
    tool_result type decide, and Claude Code's files stay Claude Code's."""
    assert read_transcript(QWEN).format == "qwen" and "qwen" in FORMATS
    for name in ("lumen.claude-code.jsonl", "harbor.claude-code.jsonl",
                 "atlas.claude-code.jsonl", "partial.claude-code.jsonl"):
        assert read_transcript(DATA / name).format == "claude-code", name


def test_a_qwen_assistant_record_without_a_message_is_still_qwens(tmp_path):
    recs = records(QWEN)
    i = next(i for i, r in enumerate(recs) if r["type"] == "assistant")
    bare = {k: v for k, v in recs[i].items() if k != "message"}
    recs.insert(i + 1, {**bare, "uuid": "9e1c0d2a-0000-4000-8000-0000000000aa"})
    assert read_transcript(write(tmp_path, QWEN.name, recs)).format == "qwen"


def test_a_qwen_session_plants_its_facts_and_its_compression_is_the_baseline():
    tr = read_transcript(QWEN)
    planted_from_a_user_message_and_a_tool_result(QWEN)
    assert tr.compactions == 1 and tr.compaction_summaries[0].startswith("<state_snapshot>")
    text = "\n".join(turns(tr))
    assert "state_snapshot" not in text and "Got it. Thanks" not in text
    # the history before the compression stays on the thread, once
    assert text.count("Lifecycle: objects expire after 30 days.") == 1
    assert fixture(QWEN).meta["own_compaction"]["held"] == [LABELS[PORT], LABELS[BUCKET]]


def test_a_qwen_rewind_leaves_the_abandoned_turn_off_the_thread_and_a_lost_parent_is_joined():
    tr = read_transcript(QWEN)
    text = "\n".join(turns(tr))
    assert "Delete the old archive bucket" not in text
    assert any("Delete the old archive bucket" in t for t in tr.off_thread)
    left = dict(tr.left_out)
    assert left["side_branch"] == 2 and left["system:rewind"] == 1
    assert left["system:custom_title"] == 1  # written off the active tail
    # the result whose parent the CLI never wrote follows its call
    assert dict(tr.repaired) == {"parent": 1}
    i = next(i for i, m in enumerate(tr.messages) if m.text == "lifecycle: expire after 30 days")
    assert tr.messages[i - 1].tool_calls[0].name == "run_shell_command"


def test_a_qwen_thought_is_read_only_with_thinking():
    assert dict(read_transcript(QWEN).left_out)["thought"] == 1
    tr = read_transcript(QWEN, include_thinking=True)
    assert tr.messages[1].thinking == "The relay's config names the bucket."


def test_qwen_records_under_one_uuid_are_one_message(tmp_path):
    recs = records(QWEN)
    i = next(i for i, r in enumerate(recs) if r["type"] == "assistant"
             and r["message"]["parts"][-1].get("text") == "The relay writes to the bucket in "
                                                            "relay.toml.")
    recs.insert(i + 1, {**recs[i], "message": {"role": "model",
                                               "parts": [{"text": "Second part."}]}})
    tr = read_transcript(write(tmp_path, QWEN.name, recs))
    assert "The relay writes to the bucket in relay.toml.\nSecond part." in [
        m.text for m in tr.messages]


def test_an_older_qwen_json_chat_is_read_with_its_qwen_messages(tmp_path):
    p = tmp_path / "session-2025-09-01T10-00-5e0c1a7d.json"
    p.write_text(json.dumps({
        "sessionId": "5e0c1a7d", "projectHash": "9f1c", "startTime": "2025-09-01T10:00:00Z",
        "lastUpdated": "2025-09-01T10:05:00Z", "messages": [
            {"id": "m1", "timestamp": "t", "type": "user", "content": f"port {PORT}"},
            {"id": "m2", "timestamp": "t", "type": "qwen", "content": "Reading.",
             "toolCalls": [{"id": "c1", "name": "read_file", "args": {"path": "relay.toml"},
                            "status": "success", "result": [{"functionResponse": {
                                "id": "c1", "name": "read_file",
                                "response": {"output": f"bucket {BUCKET}"}}}]}]}]},
        indent=2), encoding="utf-8")
    tr = read_transcript(p)
    assert tr.format == "qwen"
    assert [(m.role, m.text) for m in tr.messages] == [
        ("user", f"port {PORT}"), ("assistant", "Reading."), ("tool", f"bucket {BUCKET}")]


def test_the_older_qwen_json_sample_plants_its_facts_and_has_no_compaction_to_read():
    """The builds before the JSONL recording kept the UI's history, which a compression
    leaves whole: no summary in the file, so no baseline, and nothing counted as one."""
    tr = read_transcript(QWEN_JSON)
    assert tr.format == "qwen"
    planted_from_a_user_message_and_a_tool_result(QWEN_JSON)
    assert tr.compactions == 0 and tr.compaction_summaries == ()
    assert fixture(QWEN_JSON).meta["own_compaction"]["summaries"] == 0
    assert dict(tr.left_out) == {"info": 1}
    assert read_transcript(QWEN_JSON, include_thinking=True).messages[1].thinking == (
        "Config: The relay's config names the bucket.")


@pytest.mark.parametrize(("key", "value", "says"), [
    ("toolCalls", "x", "messages[1]: toolCalls is a JSON string, not list"),
    ("content", 7, "messages[1]: content is a JSON number, not string or list or null"),
])
def test_a_malformed_older_qwen_json_chat_is_refused_naming_the_file(tmp_path, key, value,
                                                                     says):
    doc = json.loads(QWEN_JSON.read_text(encoding="utf-8"))
    doc["messages"][1][key] = value
    p = tmp_path / QWEN_JSON.name
    p.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}: {says}"), msg


@pytest.mark.parametrize(("field", "value", "says"), [
    ("message", {"role": "user", "parts": {"text": "x"}},
     "message.parts is a JSON object, not list"),
    ("type", "gemini", "type is 'gemini', not user, assistant, tool_result or system"),
    ("parentUuid", 7, "parentUuid is a JSON number, not string or null"),
])
def test_a_malformed_qwen_record_is_refused_by_file_and_line(tmp_path, field, value, says):
    recs = records(QWEN)
    i = next(i for i, r in enumerate(recs) if r["type"] == "user")
    recs[i][field] = value
    p = write(tmp_path, QWEN.name, recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:{i + 1}: ") and says in msg, msg


def test_a_cycle_of_qwen_links_is_refused_by_line(tmp_path):
    recs = records(QWEN)
    recs[1]["parentUuid"] = recs[-1]["uuid"]
    p = write(tmp_path, QWEN.name, recs)
    assert "a cycle of links" in refusal(p)


# -- Kiro CLI ---------------------------------------------------------------------------------


def test_a_kiro_session_is_detected_and_its_facts_planted():
    tr = read_transcript(KIRO)
    assert tr.format == "kiro" and "kiro" in FORMATS
    planted_from_a_user_message_and_a_tool_result(KIRO)
    # a json result is the JSON the model received
    assert json.loads(first_with(tr, BUCKET).text)["exit_status"] == "exit status: 0"


def test_kiro_6110_a_placeholder_call_with_no_result_is_counted_and_the_result_kept():
    """Two AssistantMessage lines in a row, the second a `write` whose input the CLI
    replaced; the first call's result written after it: the result is kept where it was
    written, paired with its call, and the write is a call without result."""
    tr = read_transcript(KIRO)
    i = next(i for i, m in enumerate(tr.messages) if m.text.startswith("<mxfile>"))
    assert [m.tool_calls[0].name for m in tr.messages[i - 2:i]] == ["read", "write"]
    assert dict(tr.left_out)["call_without_result"] == 1 and tr.orphan_outputs == ()
    assert tr.compactions == 0 and tr.compaction_summaries == ()


def test_kiro_what_came_before_a_clear_is_off_the_thread(tmp_path):
    recs = records(KIRO)
    recs.insert(8, {"version": "v1", "kind": "Clear", "data": None})
    tr = read_transcript(write(tmp_path, KIRO.name, recs))
    assert tr.messages[0].text == f"Skip the diagram. Tag the release {TAG}."
    assert dict(tr.left_out)["before_clear"] == 8 and len(tr.off_thread) == 8


def test_kiro_a_line_of_a_kind_no_public_source_shows_is_counted_never_read(tmp_path):
    recs = records(KIRO) + [{"version": "v1", "kind": "Compaction", "data": {
        "content": [{"kind": "text", "data": f"summary: port {PORT}"}]}}]
    tr = read_transcript(write(tmp_path, KIRO.name, recs))
    assert dict(tr.left_out)["Compaction"] == 1
    assert turns(tr) == turns(read_transcript(KIRO)) and tr.compaction_summaries == ()


def test_kiros_session_metadata_beside_the_jsonl_is_refused_naming_the_jsonl():
    meta = KIRO.with_suffix(".json")
    assert refusal(meta) == (f"{meta}: the Kiro CLI session's metadata (session_id, "
                             "session_state), not its conversation; point `transcript` at "
                             f"{KIRO.name} beside it")


@pytest.mark.parametrize(("kind", "content", "says"), [
    ("AssistantMessage", [{"kind": "toolUse", "data": "shell"}],
     "data.content[0].data is a JSON string, not object"),
    ("ToolResults", {"kind": "toolResult"}, "data.content is a JSON object, not list"),
    ("Prompt", [{"kind": "text", "data": {"text": "hi"}}],
     "data.content[0].data is a JSON object, not string"),
])
def test_a_malformed_kiro_line_is_refused_by_file_and_line(tmp_path, kind, content, says):
    recs = records(KIRO)
    i = next(i for i, r in enumerate(recs) if r["kind"] == kind)
    recs[i]["data"]["content"] = content
    p = write(tmp_path, KIRO.name, recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:{i + 1}: ") and says in msg, msg
