"""A user's own session as a scenario: each reading rule against the sample
sessions of tests/data/sessions/ (the same session written by Claude Code and as chat
messages), chunking, planting, the baseline and the candidates. No model, no workflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldstudy.grade.grader import has_whole_token
from foldstudy.study import boundary
from foldstudy.study.candidates import candidates
from foldstudy.study.sessions import (
    SessionSpec,
    build_session_fixture,
    chunk_turns,
    read_facts,
    session_chunks,
    turns,
)
from foldstudy.transcripts import SessionError, read_transcript, render_message

from ..conftest import ROOT

DATA = ROOT / "tests/data/sessions"
CC = DATA / "atlas.claude-code.jsonl"
MSG = DATA / "atlas.messages.jsonl"
FACTS = DATA / "atlas-facts.yaml"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(tmp_path: Path, name: str, recs: list) -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs),
                 encoding="utf-8")
    return p


def test_the_format_is_detected_from_the_file():
    assert read_transcript(CC).format == "claude-code"
    assert read_transcript(MSG).format == "messages"


def test_the_same_session_reads_the_same_in_both_formats():
    """Tool calls with their arguments, tool results, list-of-parts content, a reply
    Claude Code wrote as several records: the rendered turns are identical."""
    cc, msg = read_transcript(CC), read_transcript(MSG)
    assert turns(cc) == turns(msg)
    assert session_chunks(cc, 5) == session_chunks(msg, 5)
    calls = [c.name for m in cc.messages for c in m.tool_calls]
    assert calls == ["Read", "Bash", "Grep", "Bash"]
    assert sum(m.role == "tool" for m in cc.messages) == 4


def test_the_main_thread_follows_parent_uuid_and_stitches_the_compaction():
    cc = read_transcript(CC)
    recs = [r for r in records(CC) if r.get("type") in ("user", "assistant")]
    first, last = recs[0], recs[-1]
    text = "\n".join(turns(cc))
    # both sides of the compact_boundary are on the thread, in order
    assert cc.compactions == 1
    assert text.index(first["message"]["content"][:40]) < text.index("v7.41.3-kestrel")
    assert last["message"]["content"][0]["text"] in cc.messages[-1].text


def test_side_branches_and_the_compaction_summary_stay_out_of_the_chunks():
    cc = read_transcript(CC)
    text = "\n".join(turns(cc))
    sidechain = [r for r in records(CC) if r.get("isSidechain")]
    assert sidechain, "the sample holds a side chain"
    for value in ("/opt/sidecar/only.lock", "kid-77ac1e-sorel", "/opt/atlas/old.state",
                  "TN-KORVAX", "This session is being continued"):
        assert value not in text, value
    assert any("kid-77ac1e-sorel" in t for t in cc.off_thread)  # the abandoned fork
    assert len(cc.compaction_summaries) == 1 and "TN-KORVAX" in cc.compaction_summaries[0]


def test_thinking_stays_out_unless_switched_on():
    hidden = "\n".join(turns(read_transcript(CC)))
    shown = "\n".join(turns(read_transcript(CC, include_thinking=True)))
    assert "failing CI job number only looks like it" not in hidden
    assert "failing CI job number only looks like it" in shown


def test_a_message_renders_as_a_synthetic_turn():
    m = read_transcript(MSG).messages[1]
    line = render_message(m, 1)
    assert line.startswith("[turn 1] assistant: I'll look at the gateway config.")
    assert '  -> tool call Read {"file_path": "/srv/atlas/gateway/ingress.yaml"}' in line


def test_chunks_cut_at_message_boundaries_into_about_equal_parts():
    cc = read_transcript(CC)
    rendered = turns(cc)
    chunks = session_chunks(cc, 5)
    assert len(chunks) == 5
    assert chunks[0].startswith("=== session chunk 1 of 5 ===\n")
    bodies = [c.split("\n", 1)[1] for c in chunks]
    assert "".join(bodies) == "".join(t + "\n" for t in rendered)  # nothing lost, in order
    for b in bodies:  # every chunk starts with a turn
        assert b.startswith("[turn ")
    sizes = [len(b) for b in bodies]
    assert max(sizes) <= 2 * sum(sizes) / len(sizes)


def test_a_message_longer_than_a_chunk_is_split_at_line_boundaries(tmp_path):
    long = "\n".join(f"log line {i:03d} request served in {i} ms" for i in range(120))
    recs = [{"role": "user", "content": "start"}, {"role": "tool", "content": long},
            {"role": "assistant", "content": "done"}]
    tr = read_transcript(write(tmp_path, "t.jsonl", recs))
    chunks = session_chunks(tr, 3)
    assert len(chunks) == 3
    lines = {ln for c in chunks for ln in c.splitlines()}
    assert all(f"log line {i:03d} request served in {i} ms" in "\n".join(lines)
               for i in range(120))  # no line was cut
    assert sum("log line" in c for c in chunks) >= 2  # the long message spans chunks


def test_every_group_holds_a_turn_even_when_one_turn_dominates():
    groups = chunk_turns(["a" * 1000, "b", "c", "d"], 4)
    assert [len(g) for g in groups] == [1, 1, 1, 1]


def test_a_fact_is_planted_at_its_first_whole_token_occurrence():
    """47213 occurs earlier inside build-47213, which the grader does not count."""
    fx = build_session_fixture(SessionSpec("atlas", str(CC), str(FACTS)), 1, "t")
    port = next(f for f in fx.facts if f.label == "the primary ingress port")
    chunk = fx.chunks[port.chunk]
    assert chunk[port.offset:port.offset + 5] == "47213"
    assert "build-47213" in "".join(fx.chunks[: port.chunk + 1])
    before = "".join(fx.chunks[: port.chunk]) + chunk[: port.offset]
    assert not has_whole_token("47213", before)
    for f in fx.facts:  # every fact sits where the grader's rule first finds it
        assert has_whole_token(f.value, fx.chunks[f.chunk])
        assert not any(has_whole_token(f.value, c) for c in fx.chunks[: f.chunk])
    assert {f.fact_class for f in fx.facts} >= {"port", "cyrillic_department"}


def test_the_grader_and_the_planting_share_one_boundary_rule():
    assert has_whole_token is boundary.has_whole_token


def test_the_fixture_has_the_synthetic_shape_and_records_the_baseline():
    fx = build_session_fixture(SessionSpec("atlas", str(CC), str(FACTS)), 3, "t")
    d = fx.to_dict()
    assert set(d) == {"scenario", "seed", "scale", "chunks", "facts", "meta"}
    assert fx.scenario == "atlas" and len(fx.graded) == 6
    assert fx.meta["n_chunks"] == 5 and fx.meta["session"]["format"] == "claude-code"
    own = fx.meta["own_compaction"]
    held = {f.label for f in fx.facts if has_whole_token(f.value, read_transcript(CC)
                                                           .compaction_summaries[0])}
    assert own["summaries"] == 1 and set(own["held"]) == held and held
    assert "the release tag" not in own["held"]  # stated after the compaction


def test_the_chat_format_has_no_baseline():
    fx = build_session_fixture(SessionSpec("atlas", str(MSG), str(FACTS)), 3, "t")
    assert fx.meta["own_compaction"]["summaries"] == 0


def test_both_formats_plant_every_fact_in_the_same_fold():
    a = build_session_fixture(SessionSpec("atlas", str(CC), str(FACTS)), 1, "t")
    b = build_session_fixture(SessionSpec("atlas", str(MSG), str(FACTS)), 1, "t")
    assert a.chunks == b.chunks
    assert [(f.label, f.chunk, f.offset) for f in a.facts] == [
        (f.label, f.chunk, f.offset) for f in b.facts]


HARBOR = DATA / "harbor.claude-code.jsonl"  # Claude Code 2.1: a Task subagent, a fork


@pytest.mark.parametrize(("transcript", "value", "says"), [
    (CC, "kid-77ac1e-sorel", "only on a side branch"),
    (CC, "/opt/sidecar/only.lock", "only in a subagent's own thread"),  # isSidechain
    (CC, "TN-KORVAX", "only in the compaction summary"),
    (CC, "4721", "only inside a longer token"),
    (CC, "nowhere-0x1f", "never occurs in the main thread as a whole token"),
    (HARBOR, "kid-5e2b9c-larch", "only on a side branch (an abandoned fork)"),
    (HARBOR, "/opt/harbor/agent-only.lock", "only in a subagent's own thread"),  # progress
    (HARBOR, "TN-VESPER", "only in the compaction summary"),
])
def test_a_value_not_on_the_main_thread_is_refused_saying_where_it_is(tmp_path, transcript,
                                                                      value, says):
    facts = tmp_path / "f.yaml"
    facts.write_text(f"facts:\n  - {{label: the thing, value: '{value}'}}\n", encoding="utf-8")
    with pytest.raises(SessionError) as e:
        build_session_fixture(SessionSpec("s", str(transcript), str(facts)), 1, "t")
    assert says in str(e.value) and "the thing" in str(e.value)


def test_a_malformed_line_is_named_by_file_and_line(tmp_path):
    lines = CC.read_text(encoding="utf-8").splitlines()
    lines[6] = lines[6][:40]
    p = tmp_path / "cut.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SessionError, match=rf"{p.name}:7: not a JSON object"):
        read_transcript(p)


def test_an_empty_transcript_and_one_shorter_than_folds_are_refused(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(SessionError, match="empty"):
        read_transcript(empty)
    with pytest.raises(SessionError, match="16 messages on the main thread, fewer than folds"):
        build_session_fixture(SessionSpec("atlas", str(MSG), str(FACTS), folds=17), 1, "t")


def test_a_format_that_cannot_be_detected_is_refused(tmp_path):
    p = write(tmp_path, "odd.jsonl", [{"speaker": "me", "said": "hello"}])
    with pytest.raises(SessionError, match="format cannot be detected"):
        read_transcript(p)


def test_a_parent_naming_no_record_joins_the_record_written_before_it(tmp_path):
    """Claude Code often links a record to one it never persisted (claude-code #58554):
    the link is repaired, not refused, and counted."""
    recs = records(CC)
    last = max(i for i, r in enumerate(recs) if r.get("type") == "assistant")
    recs[last]["parentUuid"] = "00000000-0000-4000-8000-000000000000"
    tr = read_transcript(write(tmp_path, "broken.jsonl", recs))
    assert tr.messages == read_transcript(CC).messages
    assert dict(tr.repaired) == {"parent": 1}


def test_two_facts_with_one_label_or_one_value_are_refused(tmp_path):
    p = tmp_path / "f.yaml"
    p.write_text("facts:\n  - {label: port, value: '47213'}\n  - {label: Port, value: '8443'}\n"
                 "  - {label: other, value: '47213'}\n", encoding="utf-8")
    with pytest.raises(SessionError) as e:
        read_facts(str(p), "t")
    assert "same label" in str(e.value) and "same value" in str(e.value)


def test_a_directory_or_a_symlink_loop_is_refused_as_a_transcript(tmp_path):
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(tmp_path / "loop.jsonl")
    for path, says in ((tmp_path, "is a directory"), (loop, "symlink loop")):
        with pytest.raises(SessionError, match=says):
            build_session_fixture(SessionSpec("atlas", str(path), str(FACTS)), 1, "t")


def test_a_credential_in_a_transcript_is_reported_by_line_without_its_value(tmp_path):
    key = "sk-or-v1-" + "0123456789abcdef" * 4
    recs = records(MSG)
    recs[5]["content"] += f" (export OPENROUTER_API_KEY={key})"
    fx = build_session_fixture(SessionSpec("atlas", str(write(tmp_path, "k.jsonl", recs)),
                                           str(FACTS)), 1, "t")
    assert fx.meta["credential_lines"] == [{"line": 6, "kind": "OpenRouter key"}]
    assert key not in json.dumps(fx.meta)


def test_candidates_list_the_identifier_shaped_tokens():
    rows = {r["token"]: r for r in candidates(read_transcript(CC))}
    cc = read_transcript(CC)
    assert rows["9f3c2e71-5b8a-4d06-a1e7-3c58d94b20fe"]["class"] == "uuid"
    assert rows["/srv/atlas/migrate/state-v2.ckpt"]["class"] == "path"
    assert rows["@mirela.dobrev"]["class"] == "handle"
    assert rows["v7.41.3-kestrel"]["class"] == "release_tag"
    assert rows["47213"]["class"] == "port"
    for token, r in rows.items():  # the count and first turn are the grader's rule's
        ts = turns(cc)
        assert r["count"] == sum(len(boundary.whole_token_pattern(token).findall(t))
                                 for t in ts)
        assert has_whole_token(token, ts[r["first_turn"]])
        assert not any(has_whole_token(token, t) for t in ts[: r["first_turn"]])
        assert token in r["context"]
    assert "kid-77ac1e-sorel" not in rows and "TN-KORVAX" not in rows  # off the thread
