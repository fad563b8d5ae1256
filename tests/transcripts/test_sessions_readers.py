"""Sessions as current CLIs write them: Claude Code files whose links the CLI broke,
history a second /compact re-appended, a partial compaction marked by preservedMessages;
Codex rollouts with JSON-wrapped outputs, compressed in place (.zst), forked by
history_base, compacted remotely (encrypted), with an output whose call is absent; Gemini
CLI's JSONL stream. Each hostile variant is refused in one line naming the file and line.

The samples are written by tests/data/sessions/write_harbor.py; the broken variants are
made here from intact samples, by taking out records the CLI does not persist. No model,
no workflow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from foldstudy.study.boundary import has_whole_token
from foldstudy.study.candidates import read_note
from foldstudy.study.sessions import OPAQUE_NOTE, SessionSpec, build_session_fixture, turns
from foldstudy.transcripts import SessionError, Transcript, read_transcript

from ..conftest import ROOT
from .test_sessions import records, write

DATA = ROOT / "tests/data/sessions"
FACTS = DATA / "harbor-facts.yaml"
MESSAGES = DATA / "harbor.messages.jsonl"
TREE = DATA / "codex/sessions/2026/11/29"
PARENT = next(TREE.glob("rollout-*.jsonl.zst"))
FORK = next(TREE.glob("rollout-*.jsonl"))
GEMINI_JSONL = DATA / "harbor.gemini.jsonl"
SESSION = "3b8e41d2-6f0a-4c57-b9e3-58d1a7c2e904"


def thread(tr: Transcript) -> list[tuple]:
    """The main thread as the folds see it (a message's file line aside)."""
    return [(m.role, m.text, m.tool_calls, m.thinking) for m in tr.messages]


def fixture(path: Path, facts: Path = FACTS, folds: int = 5):
    return build_session_fixture(SessionSpec("s", str(path), str(facts), folds=folds), 1, "t")


def refusal(path: Path) -> str:
    with pytest.raises(SessionError) as e:
        read_transcript(path)
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


# -- Claude Code: links the CLI broke ----------------------------------------------------------


def with_unpersisted(recs: list[dict], every: int = 3) -> tuple[list[dict], int]:
    """The file as it would be had the CLI persisted what it often does not: an API
    retry's system record (api_error) between every `every`-th record of the chain and its
    parent. Returns (that file, how many were put in)."""
    out, n = [], 0
    by_uuid = {r["uuid"]: r for r in recs if "uuid" in r}
    for i, r in enumerate(recs):
        parent = r.get("parentUuid")
        if i % every == 0 and parent in by_uuid and not r.get("isSidechain"):
            retry = {"parentUuid": parent, "isSidechain": False, "type": "system",
                     "subtype": "api_error", "level": "error", "retryAttempt": 1,
                     "maxRetries": 10, "retryInMs": 523, "error": {"status": 529},
                     "uuid": f"{r['uuid'][:-12]}{n:012d}", "timestamp": r.get("timestamp")}
            out.append(retry)
            r = {**r, "parentUuid": retry["uuid"]}
            n += 1
        out.append(r)
    return out, n


@pytest.mark.parametrize("name", ["harbor.claude-code.jsonl", "atlas.claude-code.jsonl"])
def test_links_broken_as_the_cli_breaks_them_read_the_same_thread_and_facts(tmp_path, name):
    """claude-code #58554: a record's parentUuid names one the CLI never persisted (an
    API retry, hook output, a system injection), and after /compact in print mode the
    boundary's logical parent is not in the file either. Taken out of an intact file, the
    same main thread, tool results, summaries and planted facts come back, the joins
    counted; hook progress and closing system records taken out too."""
    intact = read_transcript(DATA / name)
    facts = DATA / f"{name.split('.')[0]}-facts.yaml"
    whole, n = with_unpersisted(records(DATA / name))
    assert n >= 4 and thread(read_transcript(write(tmp_path, "whole.jsonl", whole))) == \
        thread(intact)
    broken = [r for r in whole if r.get("type") not in ("progress", "system")
              or r.get("subtype") == "compact_boundary"]
    boundary = next(r for r in broken if r.get("subtype") == "compact_boundary")
    boundary["logicalParentUuid"] = "6d1c3f0a-0000-4000-8000-00000000dead"  # not persisted
    p = write(tmp_path, "broken.jsonl", broken)
    tr = read_transcript(p)
    assert thread(tr) == thread(intact) and tr.tool_results == intact.tool_results
    assert tr.compaction_summaries == intact.compaction_summaries
    assert tr.compactions == intact.compactions == 1 and tr.new_roots == ()
    kept = {r["uuid"] for r in broken if "uuid" in r}
    dangling = sum(r.get("parentUuid") not in (None, *kept) for r in broken
                   if not r.get("isSidechain"))
    repaired = dict(tr.repaired)
    assert repaired == {"logical_parent": 1, "parent": dangling} and dangling >= 4
    got, want = fixture(p, facts), fixture(DATA / name, facts)
    assert got.chunks == want.chunks
    assert [(f.label, f.chunk, f.offset) for f in got.facts] == [
        (f.label, f.chunk, f.offset) for f in want.facts]
    assert got.meta["session"]["repaired"] == repaired
    assert any(line.startswith("Repaired as read:") and "logical_parent" in line
               for line in read_note(tr))


def test_a_first_record_whose_parent_is_absent_starts_the_thread(tmp_path):
    """A file the CLI began mid-session: its first record links to one written elsewhere.
    Nothing comes before it, so the thread starts there; counted, not refused."""
    recs = records(DATA / "harbor.claude-code.jsonl")
    first = next(r for r in recs if r.get("type") == "user")
    first["parentUuid"] = "6d1c3f0a-0000-4000-8000-00000000beef"
    tr = read_transcript(write(tmp_path, "mid.jsonl", recs))
    assert thread(tr) == thread(read_transcript(DATA / "harbor.claude-code.jsonl"))
    assert dict(tr.repaired) == {"parent_at_start": 1}


def test_a_cycle_of_links_is_the_one_link_refused(tmp_path):
    recs = records(DATA / "harbor.claude-code.jsonl")
    first = next(i for i, r in enumerate(recs) if r.get("type") == "user")
    last = max(i for i, r in enumerate(recs) if r.get("type") == "assistant")
    recs[first]["parentUuid"] = recs[last]["uuid"]
    p = write(tmp_path, "cycle.jsonl", recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:") and "loops back" in msg and "cycle" in msg


def test_history_a_second_compact_re_appends_is_read_once_with_what_followed_it():
    """claude-code #92089: the copies keep their uuids and the turn after them links to
    the last copy; read once, in their first place, and the conversation between the two
    compactions stays on the thread, in order."""
    tr = read_transcript(DATA / "reappended.claude-code.jsonl")
    said = [m.text for m in tr.messages]
    assert said == [f"before the first compaction, step {i}: lane k{i}{i + 4} drained"
                    for i in range(4)] + [
        "between the compactions: open lane k77", "Lane k77 open.",
        "after the second compaction: close lane k77", "Lane k77 closed."]
    assert tr.compactions == 2 and len(tr.compaction_summaries) == 2
    assert dict(tr.left_out)["duplicate"] == 4 and dict(tr.repaired) == {"reappended": 1}


def test_a_partial_compaction_marked_by_preserved_messages_counts_as_one(tmp_path):
    """Newer files name the kept messages in compactMetadata.preservedMessages and go on
    from the kept tail without writing it again: the boundary is off the chain, and the
    compaction is still one crossed, its summary still the baseline."""
    recs = records(DATA / "partial.claude-code.jsonl")
    b = next(i for i, r in enumerate(recs) if r.get("subtype") == "compact_boundary")
    seg = recs[b]["compactMetadata"].pop("preservedSegment")
    recs[b]["compactMetadata"]["preservedMessages"] = {
        "anchorUuid": seg["anchorUuid"], "uuids": [seg["headUuid"], seg["tailUuid"]],
        "allUuids": [seg["headUuid"], seg["tailUuid"]]}
    summary = recs[b + 1]
    kept = [r for r in recs[b + 2:] if r["uuid"] != seg["headUuid"]
            and r["uuid"] not in {x["uuid"] for x in recs[:b]}]
    kept[0]["parentUuid"] = seg["tailUuid"]
    tr = read_transcript(write(tmp_path, "kept.jsonl", recs[:b + 2] + kept))
    assert [m.text for m in tr.messages][-2:] == ["step 6: all groups rotated", "Confirmed."]
    assert len(tr.messages) == 8 and tr.compactions == 1
    assert tr.compaction_summaries == (summary["message"]["content"],)


# -- Codex -----------------------------------------------------------------------------------


def test_a_fork_reads_its_parents_prefix_from_the_compressed_rollout_unwrapped():
    """The fork holds only its own records; its history_base names the parent's thread,
    whose rollout lies compressed in the same sessions tree and JSON-wraps its outputs.
    Read whole, it is the same session as the chat messages: the same chunks, every fact
    in the same fold; the parent's records past the cut stay out."""
    tr = read_transcript(FORK)
    assert turns(tr) == turns(read_transcript(MESSAGES))
    assert dict(tr.repaired) == {"fork_prefix": 1, "json_output": 6}
    assert "the parent went on elsewhere" not in "\n".join(turns(tr))
    got, want = fixture(FORK), fixture(MESSAGES)
    assert got.chunks == want.chunks and [f.chunk for f in got.facts] == [
        f.chunk for f in want.facts]


def test_a_zst_rollout_is_bounded_by_its_decompressed_size():
    assert read_transcript(PARENT).format == "codex"
    size = PARENT.stat().st_size / 1_000_000
    with pytest.raises(SessionError, match="once decompressed") as e:
        read_transcript(PARENT, max_mb=size * 2)
    assert str(e.value).startswith(f"{PARENT}: over the limit")


def test_a_truncated_zst_is_refused_by_file_and_line(tmp_path):
    p = tmp_path / PARENT.name
    p.write_bytes(PARENT.read_bytes()[:-40])
    msg = refusal(p)
    assert msg.startswith(f"{p}:") and "ends inside a frame" in msg


def fork_tree(tmp_path: Path, parent: bool) -> Path:
    day = tmp_path / "sessions/2026/11/29"
    day.mkdir(parents=True)
    shutil.copy(FORK, day / FORK.name)
    if parent:
        shutil.copy(PARENT, day / PARENT.name)
    return day / FORK.name


def test_a_fork_whose_parent_rollout_is_absent_is_refused_naming_thread_and_key(tmp_path):
    p = fork_tree(tmp_path, parent=False)
    msg = refusal(p)
    assert msg.startswith(f"{p}:1: session_meta.payload.history_base.thread_id {SESSION}:")
    assert "no rollout of that thread" in msg
    assert read_transcript(fork_tree(tmp_path / "whole", parent=True)).format == "codex"


def test_a_cycle_of_forks_is_refused(tmp_path):
    day = tmp_path / "sessions/2026/11/29"
    day.mkdir(parents=True)
    for me, base in (("aaaa0001", "bbbb0002"), ("bbbb0002", "aaaa0001")):
        write(day, f"rollout-2026-11-29T07-00-00-{me}.jsonl", [
            {"timestamp": "t", "type": "session_meta", "payload": {
                "id": me, "history_base": {"thread_id": base, "end_ordinal_exclusive": 3}}},
            {"timestamp": "t", "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": "hello"}}])
    p = day / "rollout-2026-11-29T07-00-00-aaaa0001.jsonl"
    msg = refusal(p)
    assert "history_base.thread_id aaaa0001: a cycle of forks" in msg
    assert msg.split(": session_meta")[0].endswith(".jsonl:1")


def test_a_json_wrapped_output_is_its_text_with_a_failing_exit_code(tmp_path):
    """Codex 0.39's shell output: the identifiers at the start of a line are whole tokens
    again, not the `n` or `t` of an escape touching them."""
    wrapped = json.dumps({"output": "FAIL ./cmd\n\tgithub.com/acme/harbor-sync/v3\nexit",
                          "metadata": {"exit_code": 1, "duration_seconds": 2.1}})
    p = write(tmp_path, "rollout.jsonl", [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": json.dumps({"command": ["go", "test"]})}},
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1", "output": wrapped}}])
    tr = read_transcript(p)
    out = tr.messages[-1].text
    assert out == "FAIL ./cmd\n\tgithub.com/acme/harbor-sync/v3\nexit\n(exit code 1)"
    assert has_whole_token("github.com/acme/harbor-sync/v3", "\n".join(turns(tr)))
    assert "duration" not in out and dict(tr.repaired) == {"json_output": 1}


def test_an_output_whose_call_is_absent_is_kept_counted_and_named_by_line(tmp_path):
    recs = records(DATA / "harbor.codex.jsonl")
    call = next(i for i, r in enumerate(recs) if r["payload"].get("type") == "function_call")
    call_id = recs[call]["payload"]["call_id"]
    del recs[call]
    p = write(tmp_path, "orphan.jsonl", recs)
    line = next(i for i, r in enumerate(recs, 1) if r["payload"].get("call_id") == call_id)
    tr = read_transcript(p)
    assert tr.orphan_outputs == (line,)
    assert tr.tool_results == read_transcript(DATA / "harbor.codex.jsonl").tool_results
    assert "port: 51873" in next(m.text for m in tr.messages if m.line == line)
    assert fixture(p).meta["session"]["orphan_outputs"] == [line]
    assert any(n.startswith(f"Line {line}: a tool output whose call is not in the file")
               for n in read_note(tr))


def test_an_encrypted_compaction_is_an_opaque_baseline_that_grades_nothing():
    """openai/codex #27016: the message is empty and the summary encrypted; the last
    message of the replacement history is a retained user message, never graded in its
    place."""
    tr = read_transcript(DATA / "encrypted.codex.jsonl")
    assert tr.compactions == 1 and tr.opaque_compactions == 1
    assert tr.compaction_summaries == ()
    own = fixture(DATA / "encrypted.codex.jsonl").meta["own_compaction"]
    assert own == {"summaries": 1, "summary_chars": 0, "held": [], "opaque": OPAQUE_NOTE}
    assert OPAQUE_NOTE == "opaque: the CLI stored its summary encrypted"


# -- Gemini CLI JSONL -------------------------------------------------------------------------


def test_gemini_jsonl_reads_as_the_cli_replays_it():
    """Gemini CLI >= 0.39: a header, messages written again under their id as their tool
    calls complete, $set updates with a messages checkpoint, a compression, a turn
    rewound: the same session as the single JSON document and the chat messages."""
    tr = read_transcript(GEMINI_JSONL)
    assert tr.format == "gemini"
    assert turns(tr) == turns(read_transcript(DATA / "harbor.gemini.json")) == turns(
        read_transcript(MESSAGES))
    assert dict(tr.left_out) == {"checkpoint": 1, "compression_ack": 1, "info": 1,
                                 "rewound": 2, "rewritten": 4}
    # the compression's <state_snapshot> is the CLI's own carry: the baseline, not a turn
    assert tr.compactions == 1 and "TN-VESPER" in tr.compaction_summaries[0]
    assert "state_snapshot" not in "\n".join(turns(tr))
    assert "Dropping the mirror" not in "\n".join(turns(tr))
    assert [f.chunk for f in fixture(GEMINI_JSONL).facts] == [
        f.chunk for f in fixture(MESSAGES).facts]


def test_a_gemini_checkpoint_replaces_the_list_and_a_rewrite_keeps_its_place(tmp_path):
    head = {"sessionId": "s1", "projectHash": "h", "startTime": "t", "kind": "main"}

    def msg(i: str, kind: str, text: str) -> dict:
        return {"id": i, "timestamp": "t", "type": kind, "content": text}

    p = write(tmp_path, "session-x.jsonl", [
        head, msg("a", "user", "first"), msg("b", "gemini", "draft"), msg("c", "user", "next"),
        msg("b", "gemini", "final"), {"$set": {"summary": "s"}}, msg("d", "gemini", "done")])
    assert [m.text for m in read_transcript(p).messages] == ["first", "final", "next", "done"]
    p = write(tmp_path, "session-y.jsonl", [
        head, msg("a", "user", "first"), msg("b", "gemini", "long tool output"),
        {"$set": {"messages": [msg("a", "user", "first"), msg("b", "gemini", "masked")]}},
        msg("c", "user", "then")])
    assert [m.text for m in read_transcript(p).messages] == ["first", "masked", "then"]


def test_a_rewind_to_an_unknown_message_is_refused_by_line(tmp_path):
    recs = records(GEMINI_JSONL) + [{"$rewindTo": "no-such-message"}]
    p = write(tmp_path, "session-r.jsonl", recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:{len(recs)}: $rewindTo names message 'no-such-message'")


HEAD = {"sessionId": "s1", "projectHash": "h", "startTime": "t", "kind": "main"}


def _msg(i: str, kind: str | None, text: str) -> dict:
    """A Gemini CLI message record as chatRecordingService writes it (type left out where
    kind is None)."""
    return {"id": i, "timestamp": "t", **({"type": kind} if kind else {}), "content": text}


def test_a_gemini_message_with_no_type_is_left_out_and_counted_as_untyped(tmp_path):
    """Neither a turn nor a note: it was dropped under the kind "None"; the manifest's
    word for a record with no kind, in every format, is `untyped`."""
    p = write(tmp_path, "session-u.jsonl", [
        HEAD, _msg("a", "user", "first"), _msg("b", None, "who said this?"),
        _msg("c", "gemini", "done"), _msg("d", "info", "note")])
    tr = read_transcript(p)
    assert [m.text for m in tr.messages] == ["first", "done"]
    assert dict(tr.left_out) == {"info": 1, "untyped": 1}


def test_a_rewind_that_empties_the_thread_is_refused_naming_its_line(tmp_path):
    recs = [HEAD, _msg("a", "user", "first"), _msg("b", "gemini", "answer"),
            {"$rewindTo": "a"}, _msg("n", "info", "rewound")]
    msg = refusal(write(tmp_path, "session-e.jsonl", recs))
    p = tmp_path / "session-e.jsonl"
    assert msg.startswith(f"{p}:4: $rewindTo 'a' rewinds to the first message, removing "
                          "every message, and none is written after it")
    # the user rewound to the start and went on: the thread is what came after
    recs.append(_msg("c", "user", "again"))
    assert [m.text for m in read_transcript(
        write(tmp_path, "session-f.jsonl", recs)).messages] == ["again"]


def test_a_credential_no_chunk_holds_is_said_where_it_sits_not_as_reaching_the_model(
        tmp_path):
    """A key in a message the user rewound away is on no chunk: the warning says so and
    where it sits; the same key on the thread would reach the model, and is said so."""
    from foldstudy.study.sessions import credential_entries, credential_warnings

    key = "sk-or-v1-" + "0123456789abcdef" * 4
    recs = [HEAD, _msg("a", "user", "first"), _msg("b", "gemini", "answer"),
            _msg("c", "user", f"export OPENROUTER_API_KEY={key}"), {"$rewindTo": "c"},
            _msg("d", "user", "never mind")]
    p = write(tmp_path, "session-k.jsonl", recs)
    entries = credential_entries(read_transcript(p))
    assert entries == [{"line": 4, "kind": "OpenRouter key", "off_chunk": True}]
    (said,) = credential_warnings("", str(p), {"credential_lines": entries})
    assert said.startswith(f"{p}:4: a credential-shaped string (OpenRouter key; not shown); "
                           "no chunk holds it: the line is off the main thread")
    assert "would reach the model" not in said and key not in said
    recs[4] = {"$set": {"summary": "s"}}  # not rewound: on the thread
    p = write(tmp_path, "session-l.jsonl", recs)
    entries = credential_entries(read_transcript(p))
    assert entries == [{"line": 4, "kind": "OpenRouter key"}]
    assert credential_warnings("", str(p), {"credential_lines": entries})[0].endswith(
        "it would reach the model in a chunk")


def test_gemini_subagent_sessions_are_left_out_and_counted(tmp_path):
    chats = tmp_path / "chats"
    (chats / SESSION).mkdir(parents=True)
    main = chats / "session-2026-11-29T07-10-3b8e41d2.jsonl"
    shutil.copy(GEMINI_JSONL, main)
    write(chats / SESSION, "9f1e2d3c.jsonl", [
        {"sessionId": "9f1e2d3c", "projectHash": "h", "kind": "subagent"},
        {"id": "s1", "timestamp": "t", "type": "user", "content": "/opt/agent-only.lock"}])
    tr = read_transcript(main)
    assert len(tr.subagent_files) == 1 and "agent-only" not in "\n".join(turns(tr))
    assert fixture(main).meta["session"]["subagent_files"] == 1


def test_the_same_session_in_another_folder_counts_that_folders_subagents_with_the_cache_on(
        tmp_path, monkeypatch):
    """A parse counts the subagents' own files beside it without reading them, so the
    session cache keys it by them too: the same content in a folder with a subagent file
    and in one without gives 1 and 0, in either order, from the cache or not."""
    from foldstudy.study import session_cache

    monkeypatch.setenv(session_cache.CACHE_ENV, str(tmp_path / "cache"))
    bare = tmp_path / "bare" / "chats"
    bare.mkdir(parents=True)
    shutil.copy(GEMINI_JSONL, bare / "session-2026-11-29T07-10-3b8e41d2.jsonl")
    full = tmp_path / "full" / "chats"
    (full / SESSION).mkdir(parents=True)
    shutil.copy(GEMINI_JSONL, full / "session-2026-11-29T07-10-3b8e41d2.jsonl")
    write(full / SESSION, "9f1e2d3c.jsonl", [
        {"sessionId": "9f1e2d3c", "projectHash": "h", "kind": "subagent"},
        {"id": "s1", "timestamp": "t", "type": "user", "content": "/opt/agent-only.lock"}])
    for _ in range(2):
        for folder, n in ((bare, 0), (full, 1)):
            tr = session_cache.read_cached(folder / "session-2026-11-29T07-10-3b8e41d2.jsonl")
            assert len(tr.subagent_files) == n
