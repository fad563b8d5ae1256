"""Sessions as the agent CLIs write them: Claude Code 2.1 (progress records in
the chain, parallel tool calls, a Task subagent, partial compaction, a compaction whose
logical parent is absent, system records to the last line), Codex CLI rollouts and
Gemini CLI chats, and the same session in all four formats folding the same chunks.

The samples are tests/data/sessions/harbor.* (written by write_harbor.py there), plus
partial.claude-code.jsonl and new-root.claude-code.jsonl. No model, no workflow."""

from __future__ import annotations

import json

import pytest

from foldstudy.study.boundary import has_whole_token
from foldstudy.study.candidates import candidates, candidates_markdown, read_note
from foldstudy.study.sessions import SessionSpec, build_session_fixture, session_chunks, turns
from foldstudy.transcripts import FORMATS, SessionError, read_transcript

from ..conftest import ROOT
from .test_sessions import records, write

DATA = ROOT / "tests/data/sessions"
HARBOR = {fmt: DATA / f"harbor.{fmt}.{'json' if fmt == 'gemini' else 'jsonl'}"
          for fmt in ("claude-code", "codex", "gemini", "messages")}
CC = HARBOR["claude-code"]
PARTIAL = DATA / "partial.claude-code.jsonl"
NEW_ROOT = DATA / "new-root.claude-code.jsonl"
FACTS = DATA / "harbor-facts.yaml"
PORT_ONLY_IN_THE_FIRST_PARALLEL_RESULT = "51873"


@pytest.mark.parametrize("fmt", sorted(HARBOR))
def test_each_format_is_detected_from_the_file(fmt):
    assert read_transcript(HARBOR[fmt]).format == fmt


def test_the_same_session_in_all_four_formats_gives_the_same_chunks_and_planted_folds():
    """docs/design.md §3: each format read as its CLI writes it, so one session written by four
    CLIs is one thread: the same turns, the same chunks, every fact in the same fold."""
    fixtures = {fmt: build_session_fixture(SessionSpec("harbor", str(p), str(FACTS)), 1, "t")
                for fmt, p in HARBOR.items()}
    ref = fixtures["messages"]
    for fmt, fx in fixtures.items():
        assert fx.chunks == ref.chunks, fmt
        assert [(f.label, f.chunk, f.offset) for f in fx.facts] == [
            (f.label, f.chunk, f.offset) for f in ref.facts], fmt
    assert len({f.chunk for f in ref.facts}) >= 3  # the facts spread over the folds


def test_parallel_tool_results_hang_off_their_tool_use_and_are_on_the_main_thread():
    """Each tool_result's parentUuid is its own tool_use record, so the chain from the
    last message holds only the batch's last result; the others answer tool_use ids on
    the chain and are the agent's main thread, in file order."""
    tr = read_transcript(CC)
    batch = next(i for i, m in enumerate(tr.messages) if len(m.tool_calls) == 3)
    assert [m.role for m in tr.messages[batch + 1:batch + 4]] == ["tool"] * 3
    assert "port: 51873" in tr.messages[batch + 1].text
    assert "blobs-q7.idx" in tr.messages[batch + 2].text
    assert "c41e9a07" in tr.messages[batch + 3].text
    assert tr.tool_results == 6 and len(tr.off_thread) == 1  # the fork is off, not these
    assert not any("51873" in t for t in tr.off_thread)


def test_a_fact_only_in_a_parallel_tool_result_is_planted_in_the_chunk_that_holds_it():
    fx = build_session_fixture(SessionSpec("harbor", str(CC), str(FACTS)), 1, "t")
    port = next(f for f in fx.facts if f.value == PORT_ONLY_IN_THE_FIRST_PARALLEL_RESULT)
    chunk = fx.chunks[port.chunk]
    assert chunk[port.offset:port.offset + 5] == "51873"
    assert "port: 51873" in chunk and "tool: upstream:" in chunk
    assert not any(has_whole_token("51873", c) for c in fx.chunks[:port.chunk])


def test_progress_snapshot_queue_and_system_records_are_walked_through_and_counted():
    """A tool_result whose parent is a bash_progress record is on the thread; the last
    line is a system record (turn_duration); nothing of them reaches a chunk."""
    tr = read_transcript(CC)
    assert any('"run_id": "c41e9a07' in m.text for m in tr.messages)  # parent: progress
    recs = records(CC)
    assert recs[-1]["type"] == "system" and recs[-1]["subtype"] == "turn_duration"
    assert tr.messages[-1].text.startswith("Done: the index is rotated")
    left = dict(tr.left_out)
    assert left["progress"] == sum(r["type"] == "progress" for r in recs) == 5
    assert left["queue-operation"] == left["file-history-snapshot"] == 1
    assert left["system"] == 3  # the boundary, the stop hooks, the turn's duration
    text = "\n".join(turns(tr))
    assert "hook_progress" not in text and "checking" not in text


def test_a_task_subagent_stays_out_and_the_parent_sees_its_result():
    tr = read_transcript(CC)
    text = "\n".join(turns(tr))
    assert "/opt/harbor/agent-only.lock" not in text
    assert any("/opt/harbor/agent-only.lock" in t for t in tr.subagent)
    assert "Pushes fail with 413" in text  # the Task tool's result, on the main thread


def test_the_compaction_is_stitched_and_its_summary_is_the_baseline():
    for fmt in ("claude-code", "codex"):
        tr = read_transcript(HARBOR[fmt])
        assert tr.compactions == 1 and len(tr.compaction_summaries) == 1, fmt
        assert "TN-VESPER" in tr.compaction_summaries[0]
        assert "This session is being continued" not in "\n".join(turns(tr))


def test_a_compaction_whose_logical_parent_is_absent_starts_a_new_root_and_says_so(tmp_path):
    """Not refused: the thread starts at the boundary; the manifest and the candidates
    list say what came before is unknown."""
    tr = read_transcript(NEW_ROOT)
    assert tr.new_roots == (1,) and len(tr.messages) == 6
    p = tmp_path / "f.yaml"
    p.write_text("facts:\n  - {label: the replica, value: r27}\n", encoding="utf-8")
    fx = build_session_fixture(SessionSpec("n", str(NEW_ROOT), str(p), folds=3), 1, "t")
    assert fx.meta["session"]["new_roots"][0]["line"] == 1
    assert "what came before it is unknown" in fx.meta["session"]["new_roots"][0]["note"]
    md = candidates_markdown(candidates(tr), "n", str(NEW_ROOT), read_note(tr))
    assert "Line 1: a compact_boundary whose logical parent is not in the file" in md


def test_a_partial_compaction_keeps_the_preserved_messages_once_in_order():
    """compactMetadata.preservedSegment: the preserved records written again after the
    summary (their uuids repeated, the head relinked) are read once, where first written."""
    tr = read_transcript(PARTIAL)
    steps = [m.text for m in tr.messages]
    assert steps == [f"step {i} of the index rotation: shard group g{i}{i + 3}"
                     for i in range(6)] + ["step 6: all groups rotated", "Confirmed."]
    assert tr.compactions == 1 and dict(tr.left_out)["duplicate"] == 3
    assert tr.compaction_summaries == ("Summary: steps 0-2 rotated groups g03 g14 g25.",)


def test_codex_reads_response_items_once_and_leaves_out_what_is_not_conversation():
    tr = read_transcript(HARBOR["codex"])
    text = "\n".join(turns(tr))
    assert "<environment_context>" not in text and "permissions instructions" not in text
    assert text.count("Rotate the index and cut the release") == 1  # event_msg not read
    left = dict(tr.left_out)
    assert left["event_msg"] == 12 and left["instructions"] == 2 and left["reasoning"] == 1
    shown = read_transcript(HARBOR["codex"], include_thinking=True)
    assert any("The run id is the rollout's" in m.thinking for m in shown.messages)


def test_gemini_reads_tool_results_from_tool_calls_and_leaves_out_its_notes():
    tr = read_transcript(HARBOR["gemini"])
    assert tr.tool_results == 6 and dict(tr.left_out) == {"info": 1}
    assert "Chat history compressed" not in "\n".join(turns(tr))
    shown = read_transcript(HARBOR["gemini"], include_thinking=True)
    assert any("Reading the status: " in m.thinking for m in shown.messages)


def test_a_file_matching_no_shape_is_refused_naming_the_shapes_tried(tmp_path):
    p = write(tmp_path, "odd.jsonl", [{"speaker": "me", "said": "hello"}])
    with pytest.raises(SessionError) as e:
        read_transcript(p)
    for shape in ("claude-code", "codex", "gemini", "messages"):
        assert shape in str(e.value)
    assert "matches none of the shapes tried" in str(e.value)


def test_the_format_can_be_given(tmp_path):
    assert read_transcript(HARBOR["codex"], "codex").format == "codex"
    with pytest.raises(SessionError, match="not a Gemini CLI chat"):
        read_transcript(HARBOR["codex"], "gemini")


def test_candidates_classify_by_context_and_say_how_many_tool_results_they_read():
    tr = read_transcript(CC)
    rows = {r["token"]: r for r in candidates(tr)}
    assert rows["51873"]["class"] == "port"  # `port: 51873`
    assert "30000" not in rows  # "timeout: 30000" is no port
    assert "@moduledoc" not in rows and "@max_chunk" not in rows  # code attributes
    assert rows["@osk.varela"]["class"] == "handle"
    md = candidates_markdown(list(rows.values()), "harbor", str(CC), read_note(tr))
    assert "13 messages of the main thread (claude-code), 6 of them tool results" in md


def test_chunks_of_the_new_samples_cut_at_message_boundaries():
    for p in HARBOR.values():
        chunks = session_chunks(read_transcript(p), 5)
        assert all(c.split("\n", 1)[1].startswith("[turn ") for c in chunks)


def test_a_codex_compaction_without_a_message_takes_the_summary_from_its_history(tmp_path):
    """codex-rs/core/src/compact.rs: a local compaction's summary is the history's user
    message opening with SUMMARY_PREFIX, written after the retained user messages."""
    recs = records(HARBOR["codex"])
    i = next(i for i, r in enumerate(recs) if r["type"] == "compacted")
    summary = recs[i]["payload"]["message"]
    recs[i]["payload"]["message"] = ""
    recs[i]["payload"]["replacement_history"][-1]["content"][0]["text"] = (
        "Another language model started to solve this problem and produced a summary of "
        "its thinking process. ...\n" + summary)
    tr = read_transcript(write(tmp_path, "c.jsonl", recs))
    assert "TN-VESPER" in tr.compaction_summaries[0] and tr.absent_summaries == 0


def test_the_config_schema_offers_the_formats_the_reader_knows(config_schema):
    entry = config_schema["properties"]["scenarios"]["additionalProperties"]["properties"]
    assert [f for f in entry["format"]["enum"] if f] == list(FORMATS)


def test_a_subagents_own_file_is_never_read_and_the_manifest_counts_it(tmp_path):
    session = tmp_path / "3b8e41d2.jsonl"
    session.write_text(CC.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "3b8e41d2/subagents").mkdir(parents=True)
    (tmp_path / "3b8e41d2/subagents/agent-a3f9c1e.jsonl").write_text(json.dumps(
        {"parentUuid": None, "isSidechain": True, "agentId": "a3f9c1e", "type": "assistant",
         "uuid": "0f0e", "message": {"role": "assistant", "content": [
             {"type": "text", "text": "sub-only /opt/harbor/agent-file.lock"}]}}) + "\n")
    fx = build_session_fixture(SessionSpec("h", str(session), str(FACTS)), 1, "t")
    assert fx.meta["session"]["subagent_files"] == 1
    assert "agent-file.lock" not in "".join(fx.chunks)


def test_a_json_key_makes_a_number_a_port_only_when_it_says_so(tmp_path):
    out = '{"timeout": 30000, "listen_port": 47219, "retries": 52311}'
    p = write(tmp_path, "j.jsonl", [{"role": "user", "content": "check the gateway"},
                                    {"role": "tool", "content": out}])
    rows = {r["token"]: r["class"] for r in candidates(read_transcript(p))}
    assert rows == {"47219": "port"}


# What Claude Code 2.1's Read tool returns: the file's lines numbered cat -n style, the
# number right-aligned and an arrow before each line.
READ_OUTPUT = ("     1→defmodule Harbor.Uploader do\n     2→  @moduledoc \"\"\"\n"
               "     3→  Streams blobs to the mirror.\n     4→  \"\"\"\n"
               "     5→  @max_chunk 8_388_608\n     6→  @impl true\n     7→end")


def test_a_code_attribute_is_no_handle_in_read_output_tool_input_or_prose(tmp_path):
    """`@moduledoc` was still a handle where a line of code does not open the
    text's line: a Read result's numbered lines, an Edit call's JSON-escaped input, a
    sentence naming it. A person's handle stays one, in prose and inside a JSON string."""
    edit = {"file_path": "/srv/harbor/lib/uploader.ex",
            "old_string": "defmodule Harbor.Uploader do\n  @moduledoc \"\"\"\n  Old.\n"
                          "  @chunk_size 4096\n", "new_string": "defmodule Harbor.Uploader do\n"}
    p = write(tmp_path, "code.jsonl", [
        {"role": "user", "content": "The uploader lacks a @moduledoc; ask @osk.varela."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {
                "name": "Read", "arguments": '{"file_path": "/srv/harbor/lib/uploader.ex"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": READ_OUTPUT},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {
                "name": "Edit", "arguments": json.dumps(edit)}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "assistant", "content": "Added `@typedoc`; told @mirela.dobrev via "
                                         '{"channel": "@ops-harbor"}.'},
    ])
    rows = {r["token"]: r["class"] for r in candidates(read_transcript(p))}
    for attribute in ("@moduledoc", "@max_chunk", "@impl", "@chunk_size", "@typedoc"):
        assert attribute not in rows, attribute
    assert {t: c for t, c in rows.items() if c == "handle"} == {
        "@osk.varela": "handle", "@mirela.dobrev": "handle", "@ops-harbor": "handle"}


def test_a_dotted_json_or_yaml_key_makes_no_port_unless_its_last_part_says_so(tmp_path):
    """A dotted key was taken for a host, so `"server.timeout": 30000` and
    `db.pool_size: 20000` were ports. A key's value is a port when the key's last part
    says so; a host is written tight before its port."""
    out = ('{"server.timeout": 30000, "server.port": 47219, "retries": 52311}\n'
           "db.pool_size: 20000\ndb.listen_addr: 51873\nhttp.bind = 9090\n"
           "--server.timeout=31000\nupstream gw.harbor.internal:47213, localhost:8443")
    p = write(tmp_path, "k.jsonl", [{"role": "user", "content": "check the gateway"},
                                    {"role": "tool", "content": out}])
    rows = {r["token"]: r["class"] for r in candidates(read_transcript(p))}
    assert {t for t, c in rows.items() if c == "port"} == {"47219", "51873", "9090",
                                                           "47213", "8443"}
    assert not {"30000", "20000", "31000", "52311"} & set(rows)


@pytest.mark.parametrize(("text", "says"), [
    ('{\n  "conversation": [\n    {"speaker": "me", "said": "hello"}\n  ]\n}\n',
     "one JSON object over 5 lines, neither a Gemini CLI chat (messages[]) nor an ATIF "
     "trajectory"),
    ('[\n  {"speaker": "me", "said": "hello"}\n]\n', "one JSON list over 3 lines"),
    ('{\n  "sessionId": "3b8e41d2",\n  "messages": [\n', "neither JSON lines nor one JSON "
                                                        "document"),
])
def test_a_json_document_that_is_no_gemini_chat_names_the_shapes_tried(tmp_path, text, says):
    """Found in an audit: a pretty-printed JSON file that is no Gemini chat was refused as
    "x.json:1: not a JSON object", naming no shape; it is refused as any file matching
    no shape is, saying what it is."""
    p = tmp_path / "export.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(SessionError) as e:
        read_transcript(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: the format cannot be detected") and says in msg, msg
    assert "matches none of the shapes tried" in msg and "\n" not in msg
    for shape in ("claude-code", "codex", "gemini", "messages"):
        assert shape in msg


def test_json_lines_with_a_broken_first_line_are_still_named_by_that_line(tmp_path):
    lines = CC.read_text(encoding="utf-8").splitlines()
    p = tmp_path / "cut.jsonl"
    p.write_text("\n".join([lines[0][:40], *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(SessionError, match=rf"{p.name}:1: not a JSON object"):
        read_transcript(p)


def test_a_value_before_a_compaction_whose_logical_parent_is_absent_stays_on_the_thread(
        tmp_path):
    """A compact_boundary whose logicalParentUuid names no record of the file joins the
    last main-thread record before it (Claude Code writes this after /compact in print
    mode): the history before the compaction is read, not lost, and a fact stated only
    there is planted; the join is counted, and no new root is claimed."""
    earlier = [
        {"parentUuid": None, "isSidechain": False, "type": "user", "uuid": "0a01",
         "message": {"role": "user", "content": "rotate the mirror to blobs-p3.idx"}},
        {"parentUuid": "0a01", "isSidechain": False, "type": "assistant", "uuid": "0a02",
         "message": {"id": "msg_00", "role": "assistant",
                     "content": [{"type": "text", "text": "Rotating to blobs-p3.idx."}]}},
    ]
    p = write(tmp_path, "lost.jsonl", earlier + records(NEW_ROOT))
    tr = read_transcript(p)
    assert tr.new_roots == () and dict(tr.repaired) == {"logical_parent": 1}
    assert [m.text for m in tr.messages[:2]] == ["rotate the mirror to blobs-p3.idx",
                                                 "Rotating to blobs-p3.idx."]
    assert [(m.role, m.text) for m in tr.messages[2:]] == [
        (m.role, m.text) for m in read_transcript(NEW_ROOT).messages]
    facts = tmp_path / "f.yaml"
    facts.write_text("facts:\n  - {label: the old index, value: blobs-p3.idx}\n",
                     encoding="utf-8")
    fx = build_session_fixture(SessionSpec("n", str(p), str(facts), folds=3), 1, "t")
    assert fx.facts[0].chunk == 0 and fx.meta["session"]["repaired"] == {"logical_parent": 1}
