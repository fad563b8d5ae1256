"""The one turn format (transcripts/turns.py): what the fixture generator and the session
reader write is what the session carriers read back, with the same definition."""

from __future__ import annotations

from foldstudy.study.fixtures import build_fixture
from foldstudy.transcripts.base import Message, ToolCall, render_message
from foldstudy.transcripts.turns import last_turn_number, parse_turns, turn_line

STOCK: set[int] = set()


def test_a_written_turn_reads_back_with_its_number_role_and_text():
    text = turn_line(3, "tool", "exit 0\nok") + "\n" + turn_line(4, "user", "thanks") + "\n"
    turns = parse_turns("=== header ===\n" + text)
    assert [(t.number, t.role, t.text) for t in turns] == [
        (3, "tool", "exit 0\nok\n"), (4, "user", "thanks\n")]
    # the slices cover each turn whole, head included, and nothing before the first
    whole = "=== header ===\n" + text
    assert "".join(whole[t.start:t.end] for t in turns) == text
    assert last_turn_number(whole) == 4 and last_turn_number("no turns") is None


def test_every_turn_of_a_generated_fixture_is_read_back(facts_spec, filler):
    fx = build_fixture("distributed", 7, 0.035, facts_spec, filler, STOCK)
    turns = [t for c in fx.chunks for t in parse_turns(c)]
    assert [t.number for t in turns] == list(range(len(turns)))
    assert {t.role for t in turns} <= {"user", "assistant", "tool"}
    assert any(t.role == "tool" for t in turns)
    # every planted fact is inside a user turn, read back whole
    planted = [f for f in fx.facts if f.graded]
    assert all(any(f.value in t.text and t.role == "user" for t in turns) for f in planted)


def test_a_real_sessions_message_is_a_turn_the_parser_reads():
    m = Message("assistant", "running it", (ToolCall("Bash", '{"command": "ls"}'),))
    (turn,) = parse_turns(render_message(m, 12))
    assert (turn.number, turn.role) == (12, "assistant")
    assert turn.text == 'running it\n  -> tool call Bash {"command": "ls"}'
