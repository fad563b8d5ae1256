"""Every word the model saw, and the CLIs engineers moved to: Claude Code's attachments and
isMeta messages read where the model received them, Codex CLI 0.148's vocabulary and a
local compaction with no summary, Antigravity CLI (agy) transcripts and GitHub Copilot
CLI sessions; a Codex fork's parent found by exact id.

The samples are tests/data/sessions/lumen.* and the trees beside them (written by
write_lumen.py there); hostile variants are made here from them. No model, no workflow.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from foldstudy.study.boundary import has_whole_token
from foldstudy.study.candidates import candidates, read_note
from foldstudy.study.sessions import ABSENT_NOTE, turns
from foldstudy.transcripts import FORMATS, read_transcript

from ..conftest import ROOT
from .test_sessions import records, write
from .test_sessions_readers import fixture as read_fixture
from .test_sessions_readers import refusal

DATA = ROOT / "tests/data/sessions"
FACTS = DATA / "lumen-facts.yaml"
CC = DATA / "lumen.claude-code.jsonl"
CODEX = next((DATA / "codex-0148/sessions").rglob("rollout-*.jsonl"))
AGY = next((DATA / "antigravity-cli/brain").rglob("transcript_full.jsonl"))
COPILOT = DATA / "copilot/session-state/8c4f2a1e-6b3d-4e9a-b5c7-0d1e2f3a4b5c/events.jsonl"
COPILOT_SUB = DATA / "copilot/session-state/3a9e5c7b-1d2f-4b8a-9e6c-5f0a7b3d2c1e/events.jsonl"
PORT, TAG, BUCKET, BUILD = ("38611", "v2.9.14-lumen", "lumen-ledger-eu2",
                            "7f3e9a2c-41d8-4b6e-9c0a-5d2b8e1f7a63")
SUMMARY_PREFIX = ("Another language model started to solve this problem and produced a "
                  "summary of its thinking process.")


def fixture(path: Path, facts: Path = FACTS):
    """The fixture of a sample in three folds (the samples are short)."""
    return read_fixture(path, facts, folds=3)


def record_at(path: Path, line: int) -> dict:
    return records(path)[line - 1]


# -- Claude Code: attachments and isMeta messages ---------------------------------------------


def test_a_fact_only_in_an_attachment_or_a_meta_message_is_planted_and_none_refused():
    """Paper §3.1: "Each fold receives the previous running summary and one chunk": the
    chunk is what the model saw. Each fact of the sample is only in an @-mentioned file, a
    prompt queued inside a tool run, an edited snippet or a `!` command's output; all four
    are planted, each in the chunk holding the record the CLI wrote it in."""
    tr = read_transcript(CC)
    fx = fixture(CC)
    assert [f.label for f in fx.facts] == [
        "the exporter's port", "the release tag", "the ledger bucket", "the build id"]
    where = {}
    for value in (PORT, TAG, BUCKET, BUILD):
        first = next(m for m in tr.messages if has_whole_token(value, m.text))
        r = record_at(CC, first.line)
        where[value] = (r["attachment"]["type"] if r["type"] == "attachment"
                        else "meta" if r.get("isMeta") else r["type"])
        assert has_whole_token(value, fx.chunks[next(
            f.chunk for f in fx.facts if f.value == value)])
    assert where == {PORT: "file", TAG: "queued_command", BUCKET: "edited_text_file",
                     BUILD: "meta"}


def test_the_manifest_counts_what_was_read_in_and_what_was_left_out_by_kind():
    tr = read_transcript(CC)
    meta = fixture(CC).meta["session"]
    assert meta["read_in"] == {"attachment:edited_text_file": 1, "attachment:file": 1,
                               "attachment:queued_command": 1, "meta": 2}
    # the CLI's own reminders and bookkeeping: counted by kind, not read
    assert {k: n for k, n in meta["left_out"].items() if k.startswith("attachment")} == {
        "attachment:plan_mode": 1, "attachment:skill_listing": 1,
        "attachment:todo_reminder": 1}
    text = "\n".join(turns(tr))
    assert "review a change" not in text and "plans/exporter.md" not in text
    assert any(n.startswith("Read where the model received them: 1 attachment:edited")
               for n in read_note(tr))


def test_a_prompt_queued_inside_a_tool_run_is_read_after_the_runs_results():
    """The CLI writes the queued prompt between the tool call and its result; the model
    receives it after the result, and the result stays next to its call."""
    tr = read_transcript(CC)
    roles = [(m.role, m.text[:14]) for m in tr.messages[2:6]]
    assert roles == [("assistant", "I'll read the "), ("tool", "     1→class E"),
                     ("user", "Also tag the r"), ("assistant", "Noted, I'll ta")]
    queued = tr.messages[4]
    lines = [m.line for m in tr.messages]
    assert record_at(CC, queued.line)["attachment"]["type"] == "queued_command"
    assert lines[3] > queued.line  # read after the result it was written before


def test_candidates_offer_the_identifiers_of_an_attached_file_but_no_decorator():
    tokens = {c["token"]: c["class"] for c in candidates(read_transcript(CC))}
    assert tokens["@ines.varga"] == "handle" and tokens[PORT] == "port"
    assert tokens[BUILD] == "uuid" and tokens[TAG] == "release_tag"
    assert "@expand_groups" not in tokens


def test_an_attachment_or_meta_message_hanging_off_the_last_message_is_read(tmp_path):
    """A prompt queued as the agent finished, a `!` command run after it: no later
    record links to either."""
    recs = records(CC)
    last = next(r for r in reversed(recs) if r.get("type") == "assistant")
    recs.append({**recs[1], "uuid": "9e1c0d2a-0000-4000-8000-000000000001",
                 "parentUuid": last["uuid"],
                 "attachment": {"type": "queued_command", "commandMode": "prompt",
                                "prompt": "one more thing: rotate key kid-31c9"}})
    meta = {k: v for k, v in recs[1].items() if k != "attachment"}
    recs.append({**meta, "type": "user", "isMeta": True, "parentUuid": recs[-1]["uuid"],
                 "uuid": "9e1c0d2a-0000-4000-8000-000000000002",
                 "message": {"role": "user", "content": "<bash-stdout>kid-31c9</bash-stdout>"}})
    tr = read_transcript(write(tmp_path, "late.jsonl", recs))
    assert [m.text for m in tr.messages[-2:]] == ["one more thing: rotate key kid-31c9",
                                                  "<bash-stdout>kid-31c9</bash-stdout>"]
    assert "side_branch" not in dict(tr.left_out)


def test_an_attachment_that_is_not_an_object_is_refused_by_line(tmp_path):
    recs = records(CC)
    recs[1]["attachment"] = "docs/exporter-spec.md"
    p = write(tmp_path, "bad.jsonl", recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:2: attachment is a JSON string, not object")


# -- Codex CLI 0.148 and later ------------------------------------------------------------------


def test_a_codex_0148_rollout_reads_its_turns_tool_outputs_and_another_agents_message(
        tmp_path):
    """No event_msg/user_message: the user's text is only in the response item."""
    tr = read_transcript(CODEX)
    assert tr.vocabulary == "response items only (Codex CLI 0.148 and later)"
    assert [m.role for m in tr.messages][:5] == ["user", "assistant", "tool", "assistant",
                                                 "user"]
    assert tr.messages[0].text == "Wire the ledger exporter and check where it listens."
    assert tr.tool_results == 2 and f"port = {PORT}" in tr.messages[2].text
    # a subagent's answer delivered to the root agent: read, from whom to whom
    assert tr.messages[4].text == f"(message from agent /root/worker to /root)\nbucket is {BUCKET}"
    assert dict(tr.read_in) == {"agent_message": 1}
    left = dict(tr.left_out)
    assert left["world_state"] == left["inter_agent_communication"] == 1
    assert fixture_of(CODEX, tmp_path).meta["session"]["vocabulary"] == tr.vocabulary


def fixture_of(path: Path, tmp_path: Path):
    """The fixture of a Codex sample, planting its port and bucket."""
    facts = tmp_path / "codex-facts.yaml"
    facts.write_text(f"facts:\n  - {{label: fact 0, value: \"{PORT}\"}}\n"
                     f"  - {{label: fact 1, value: \"{BUCKET}\"}}\n", encoding="utf-8")
    return fixture(path, facts)


def test_the_older_codex_vocabulary_is_named_too():
    tr = read_transcript(DATA / "harbor.codex.jsonl")
    assert tr.vocabulary == "event_msg/user_message beside response items (Codex CLI before 0.148)"


@pytest.mark.parametrize("kinds", [["session_meta", "turn_context"],
                                   ["session_meta", "world_state", "token_usage_record"]])
def test_a_rollout_of_neither_vocabulary_is_refused_in_one_line(tmp_path, kinds):
    """Third-party parsers read 0 turns from a rollout they do not understand; here it is
    refused, naming both vocabularies, never read as empty."""
    p = write(tmp_path, "rollout.jsonl", [{"timestamp": "t", "type": k, "payload": {}}
                                          for k in kinds] + [
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count"}}])
    msg = refusal(p)
    assert msg.startswith(f"{p}: no turn read: no user or assistant message in either "
                          "vocabulary")
    assert "Codex CLI before 0.148" in msg and "Codex CLI 0.148 and later" in msg


def test_a_local_compaction_with_no_summary_is_absent_never_the_retained_user_message(
        tmp_path):
    """The replacement history ends with the user's retained "just keep going until
    done" (as a real 0.118 rollout's does): that is no summary, so the baseline is
    absent and grades nothing."""
    tr = read_transcript(CODEX)
    assert tr.compaction_summaries == () and tr.absent_summaries == 1
    assert tr.compactions == 1
    own = fixture_of(CODEX, tmp_path).meta["own_compaction"]
    assert own == {"summaries": 0, "summary_chars": 0, "held": [],
                   "absent": f"1 {ABSENT_NOTE}"}


def test_a_local_compactions_summary_is_the_message_opening_with_codexs_prefix(tmp_path):
    recs = records(CODEX)
    c = next(r for r in recs if r["type"] == "compacted")
    c["payload"]["replacement_history"].insert(1, {
        "type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"{SUMMARY_PREFIX}\nport {PORT}"}]})
    tr = read_transcript(write(tmp_path, CODEX.name, recs))
    assert tr.compaction_summaries == (f"{SUMMARY_PREFIX}\nport {PORT}",)
    assert tr.absent_summaries == 0
    own = fixture_of(tmp_path / CODEX.name, tmp_path).meta["own_compaction"]
    assert own["held"] == ["fact 0"]


# -- Antigravity CLI (agy) ----------------------------------------------------------------------


def test_an_agy_transcript_is_detected_and_read_in_step_order():
    tr = read_transcript(AGY)
    assert tr.format == "antigravity" and "antigravity" in FORMATS
    # the view_file result was written before its planner step: read after it
    assert [m.role for m in tr.messages][:3] == ["user", "assistant", "tool"]
    assert tr.messages[0].text == f"Wire the ledger exporter; it listens on port {PORT}."
    assert "ADDITIONAL_METADATA" not in "\n".join(turns(tr))


def test_agy_results_pair_by_position_across_a_checkpoint_and_the_checkpoint_is_the_baseline():
    """A `{{ CHECKPOINT 1 }}` between a planner step's two results: both results stay on
    the thread after their calls, and the checkpoint's content is the CLI's own carry,
    never a turn; CHECKPOINT 0 is the conversation's preamble."""
    tr = read_transcript(AGY)
    run = next(i for i, m in enumerate(tr.messages) if len(m.tool_calls) == 2)
    assert [m.text for m in tr.messages[run + 1:run + 3]] == ["12 passed", f"build {BUILD} ok"]
    assert tr.orphan_outputs == () and "call_without_result" not in dict(tr.left_out)
    assert tr.compactions == 1 and tr.compaction_summaries[0].startswith("# Context so far")
    assert "CHECKPOINT" not in "\n".join(turns(tr))
    assert dict(tr.left_out)["checkpoint_0"] == 1
    assert dict(tr.read_in) == {"system_message": 1}
    own = fixture(AGY).meta["own_compaction"]
    assert own["held"] == ["the exporter's port", "the ledger bucket"]


def test_an_agy_checkpoint_with_no_content_leaves_the_baseline_absent(tmp_path):
    recs = records(AGY)
    next(r for r in recs if r["content"].startswith("{{ CHECKPOINT 1"))["content"] = \
        "{{ CHECKPOINT 1 }}"
    tr = read_transcript(write(tmp_path, "transcript_full.jsonl", recs))
    assert tr.compaction_summaries == () and tr.absent_summaries == tr.compactions == 1


def test_an_agy_step_that_cannot_be_paired_is_kept_and_counted(tmp_path):
    recs = records(AGY)
    recs.append({"step_index": 13, "source": "MODEL", "type": "RUN_COMMAND",
                 "content": "stray output"})
    recs.append({"step_index": 14, "source": "MODEL", "type": "PLANNER_RESPONSE",
                 "content": "Checking.", "tool_calls": [{"name": "run_command", "args": {}}]})
    p = write(tmp_path, "transcript_full.jsonl", recs)
    tr = read_transcript(p)
    assert tr.orphan_outputs == (len(recs) - 1,)
    assert dict(tr.left_out)["call_without_result"] == 1


def test_an_agy_brain_folders_other_files_are_left_alone(tmp_path):
    brain = tmp_path / "brain"
    shutil.copytree(AGY.parents[2], brain / AGY.parents[2].name)
    conv = brain / AGY.parents[2].name
    (conv / "task.md").write_text(f"- [ ] secret plan {TAG}-not-read\n")
    (conv / ".system_generated/logs/overview.txt").write_text("not read")
    tr = read_transcript(conv / ".system_generated/logs/transcript_full.jsonl")
    assert turns(tr) == turns(read_transcript(AGY))


def test_an_agy_upload_written_only_in_additional_metadata_is_read(tmp_path):
    """Uploaded files and slash-command expansions sit only in the user step's
    `<ADDITIONAL_METADATA>`: the model sees them, so a fact planted there is on the thread;
    the block's clock line stays out."""
    recs = records(AGY)
    user = next(r for r in recs if r["type"] == "USER_INPUT")
    user["content"] = user["content"].replace(
        "</ADDITIONAL_METADATA>", f"Uploaded file notes.md:\nthe salt is {TAG}-upload\n"
        "</ADDITIONAL_METADATA>")
    tr = read_transcript(write(tmp_path, "transcript_full.jsonl", recs))
    first = tr.messages[0].text
    assert first.startswith(f"Wire the ledger exporter; it listens on port {PORT}.")
    assert f"the salt is {TAG}-upload" in first and "current local time" not in first
    assert "ADDITIONAL_METADATA" not in "\n".join(turns(tr))


def test_an_agy_empty_conversation_history_step_is_skipped(tmp_path):
    """The CLI writes CONVERSATION_HISTORY steps empty: skipped, never taken for a tool
    result that would steal a pending call's pairing."""
    recs = records(AGY)
    at = next(i for i, r in enumerate(recs) if r["step_index"] == 5)
    recs.insert(at, {"step_index": 4, "source": "MODEL", "type": "CONVERSATION_HISTORY",
                     "status": "DONE", "content": ""})
    tr = read_transcript(write(tmp_path, "transcript_full.jsonl", recs))
    assert turns(tr) == turns(read_transcript(AGY))
    assert dict(tr.left_out)["empty_conversation_history"] == 1


def test_an_agy_checkpoint_written_late_applies_at_its_own_step(tmp_path):
    recs = records(AGY)
    cp = next(r for r in recs if r["content"].startswith("{{ CHECKPOINT 1"))
    recs.remove(cp)
    recs.insert(recs.index(next(r for r in recs if r["step_index"] == 9)), cp)
    tr = read_transcript(write(tmp_path, "transcript_full.jsonl", recs))
    assert turns(tr) == turns(read_transcript(AGY))
    assert tr.compaction_summaries == read_transcript(AGY).compaction_summaries


def test_an_agy_step_of_the_wrong_shape_is_refused_by_line(tmp_path):
    recs = records(AGY)
    recs[4]["tool_calls"] = {"name": "run_command"}
    p = write(tmp_path, "transcript_full.jsonl", recs)
    assert refusal(p).startswith(f"{p}:5: tool_calls is a JSON object, not list or null")


# -- GitHub Copilot CLI ---------------------------------------------------------------------------


def test_a_copilot_session_compacted_twice_reads_both_summaries_as_the_baseline():
    tr = read_transcript(COPILOT)
    assert tr.format == "copilot" and tr.vocabulary == "events v1 (Copilot CLI 1.0.9)"
    assert tr.compactions == 2 and len(tr.compaction_summaries) == 2
    assert "summaryContent" not in "\n".join(turns(tr))
    assert not any("<overview>" in t for t in turns(tr))
    # requests and results paired by id, every result after its request
    assert tr.tool_results == 3 and tr.orphan_outputs == ()
    assert f"port = {PORT}" in tr.messages[2].text and tr.messages[1].tool_calls[0].name == "view"
    fx = fixture(COPILOT)
    assert fx.meta["own_compaction"]["held"] == ["the exporter's port", "the ledger bucket"]
    assert fx.meta["session"]["left_out"]["tool.execution_start"] == 3


def test_a_copilot_user_turn_is_read_from_what_the_model_saw(tmp_path):
    """`transformedContent` is the text the model was sent: a fact the CLI put only there
    is on the thread; a message without it falls back to `content`."""
    recs = records(COPILOT)
    users = [r for r in recs if r["type"] == "user.message"]
    users[0]["data"]["transformedContent"] = (
        f"{users[0]['data']['content']}\n<reminder>the salt is {TAG}-seen</reminder>")
    tr = read_transcript(write(tmp_path, COPILOT.name, recs))
    said = [m.text for m in tr.messages if m.role == "user"]
    assert said[0].startswith("Wire the ledger exporter") and f"{TAG}-seen" in said[0]
    assert said[1] == "Which bucket does it write to?"


def test_a_copilot_session_of_an_unknown_version_is_read_and_named(tmp_path):
    recs = records(COPILOT)
    recs[0]["data"].update(version=3, copilotVersion="2.0.1")
    tr = read_transcript(write(tmp_path, "events.jsonl", recs))
    assert turns(tr) == turns(read_transcript(COPILOT))
    assert tr.vocabulary == ("events v3 (Copilot CLI 2.0.1): a version this reader does "
                             "not know, read as v1")


def test_a_copilot_subagents_events_are_read_apart_and_the_parent_reads_the_task_result():
    """The explore agent's events carry its agentId: its messages and results are its
    own thread, kept apart; the parent reads what the task tool returned."""
    tr = read_transcript(COPILOT_SUB)
    text = "\n".join(turns(tr))
    assert "Grepping the config." not in text and "grep bucket" not in text
    assert tr.subagent == ("Grepping the config.", f'bucket = "{BUCKET}"',
                           f"The exporter writes to {BUCKET}.")
    assert dict(tr.left_out)["subagent"] == 4
    assert [(m.role, m.text) for m in tr.messages[1:3]] == [
        ("assistant", "Sending an agent to find the bucket."),
        ("tool", f"The exporter writes to {BUCKET}.")]
    assert tr.messages[1].tool_calls[0].name == "task"
    # the sub-agent's request is not the parent's: none is left without its result
    assert tr.tool_results == 2 and tr.orphan_outputs == ()
    assert "request_without_result" not in dict(tr.left_out)


def test_a_copilot_subagent_named_the_older_way_is_read_apart_too(tmp_path):
    """Builds before the event's agentId marked a sub-agent's events by
    data.parentToolCallId, the call that spawned it."""
    recs = records(COPILOT_SUB)
    for r in recs:
        if r.pop("agentId", None):
            r["data"]["parentToolCallId"] = "toolu_T1"
    tr = read_transcript(write(tmp_path, "events.jsonl", recs))
    assert turns(tr) == turns(read_transcript(COPILOT_SUB))
    assert "Grepping the config." not in "\n".join(turns(tr))
    assert tr.subagent == ("Grepping the config.", f'bucket = "{BUCKET}"',
                           f"The exporter writes to {BUCKET}.")


def test_a_copilot_hook_repeating_a_tools_result_leaves_it_read_once():
    tr = read_transcript(COPILOT_SUB)
    assert "\n".join(turns(tr)).count(f"port = {PORT}") == 1
    assert [m.text for m in tr.messages if m.role == "tool"][-1] == f"port = {PORT}"
    left = dict(tr.left_out)
    assert left["hook.start"] == 1 and left["hook.end"] == 1


def test_a_copilot_result_without_its_request_and_a_failed_compaction_are_counted(tmp_path):
    recs = records(COPILOT)
    recs.append({"type": "tool.execution_complete", "id": "x1", "timestamp": "t",
                 "parentId": None, "data": {"toolCallId": "toolu_gone", "success": False,
                                            "error": {"message": "permission denied"}}})
    recs.append({"type": "session.compaction_complete", "id": "x2", "timestamp": "t",
                 "parentId": None, "data": {"success": False, "errorMessage": "timeout"}})
    tr = read_transcript(write(tmp_path, "events.jsonl", recs))
    assert tr.orphan_outputs == (len(recs) - 1,)
    assert tr.messages[-1].text == "permission denied"
    assert dict(tr.left_out)["failed_compaction"] == 1 and tr.compactions == 2


# -- a Codex fork's parent, by exact id (hostile input) ------------------------------------------


def fork(tmp_path: Path, base: object, *, me: str | None = "aaaa0001",
         name: str = "aaaa0001") -> Path:
    day = tmp_path / "sessions/2026/11/29"
    day.mkdir(parents=True, exist_ok=True)
    meta = {"history_base": {"thread_id": base, "end_ordinal_exclusive": 3}}
    if base is ...:
        meta["history_base"] = {"end_ordinal_exclusive": 3}
    if me:
        meta["id"] = me
    return write(day, f"rollout-2026-11-29T07-00-00-{name}.jsonl", [
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": "hello"}},
        {"timestamp": "t", "type": "session_meta", "payload": meta},
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": "go on"}}])


@pytest.mark.parametrize("base, said", [("", '""'), ("*", '"*"'), ("**/x", '"**/x"'),
                                        ("../aaaa0002", '"../aaaa0002"'),
                                        (..., "missing")])
def test_a_fork_whose_base_id_is_missing_empty_or_a_wildcard_is_refused_by_line(
        tmp_path, base, said):
    """A fork copied from another machine with its base edited: "" inherited an
    unrelated rollout of the tree, "*" ended in pathlib's ValueError."""
    fork(tmp_path, "x", me="cccc0003", name="cccc0003")  # an unrelated rollout beside it
    p = fork(tmp_path, base)
    msg = refusal(p)
    assert msg.startswith(f"{p}:2: session_meta.payload.history_base.thread_id is {said}, "
                          "not a thread id")


def test_a_fork_finds_its_parent_by_exact_id_not_by_a_name_ending_in_it(tmp_path):
    # a rollout of another thread, whose name ends in the base's id
    day = tmp_path / "sessions/2026/11/28"
    day.mkdir(parents=True)
    write(day, "rollout-2026-11-28T07-00-00-ffaaaa0002.jsonl", [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "ffaaaa0002"}},
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": "another session"}}])
    p = fork(tmp_path, "aaaa0002")
    assert "history_base.thread_id aaaa0002: no rollout of that thread" in refusal(p)


def test_two_forks_naming_each_other_without_ids_are_a_cycle_refused_by_line(tmp_path):
    """No session_meta id: the files, not the ids, repeat (a RecursionError of 986 frames
    before)."""
    a = fork(tmp_path, "bbbb0002", me=None, name="aaaa0001")
    fork(tmp_path, "aaaa0001", me=None, name="bbbb0002")
    msg = refusal(a)
    assert ": a cycle of forks (" in msg and msg.split(": session_meta")[0].endswith(":2")


def test_the_manifest_of_every_format_names_its_vocabulary_only_where_it_has_one():
    assert read_transcript(CC).vocabulary == ""
    assert json.loads(json.dumps(fixture(AGY).meta["session"]))["vocabulary"] == ""


@pytest.mark.parametrize(("kind", "key", "value", "says"), [
    ("assistant.message", "toolRequests", "view", "data.toolRequests is a JSON string, not list"),
    ("assistant.message", "toolRequests", [7], "data.toolRequests[0] is a JSON number"),
    ("tool.execution_complete", "toolCallId", 3, "data.toolCallId is a JSON number, not string"),
    ("tool.execution_complete", "result", "ok", "data.result is a JSON string, not object"),
    ("session.compaction_complete", "summaryContent", ["x"],
     "data.summaryContent is a JSON list, not string or null"),
    ("user.message", "content", {"text": "hi"}, "data.content is a JSON object"),
])
def test_a_malformed_copilot_event_is_refused_by_file_and_line(tmp_path, kind, key, value, says):
    recs = records(COPILOT)
    i = next(i for i, r in enumerate(recs) if r["type"] == kind)
    recs[i]["data"][key] = value
    p = write(tmp_path, "events.jsonl", recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:{i + 1}: ") and says in msg
