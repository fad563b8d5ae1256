"""Hostile session inputs: each refused at the edge as one line naming the
file and the line (or key) at fault and what would be right, never a traceback, a hang
or a read until memory runs out. No model, no workflow."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from foldstudy.study.sessions import read_facts
from foldstudy.transcripts import SessionError, read_transcript

from ..conftest import ROOT
from .test_sessions import records

DATA = ROOT / "tests/data/sessions"
CC = DATA / "harbor.claude-code.jsonl"
MSG = DATA / "harbor.messages.jsonl"
CODEX = DATA / "harbor.codex.jsonl"
GEMINI = DATA / "harbor.gemini.json"


def line_of(recs: list[dict], test) -> int:
    return next(i for i, r in enumerate(recs) if test(r))


def refusal(path: Path, **kw) -> str:
    with pytest.raises(SessionError) as e:
        read_transcript(path, **kw)
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def user_text(r: dict) -> bool:
    return r.get("type") == "user" and isinstance(r["message"]["content"], str)


def tool_user(r: dict) -> bool:
    return r.get("type") == "user" and isinstance(r["message"]["content"], list)


def set_message(r: dict) -> None:
    r["message"] = "a string"


def set_parent(r: dict) -> None:
    r["parentUuid"] = ["a", "list"]


def set_uuid(r: dict) -> None:
    r["uuid"] = {"an": "object"}


def set_block(r: dict) -> None:
    r["message"]["content"] = ["a string block"]


def set_tool_use_id(r: dict) -> None:
    r["message"]["content"][0]["tool_use_id"] = 7


def reply(r: dict) -> bool:
    return r.get("type") == "assistant" and "id" in r["message"]


def set_id_list(r: dict) -> None:
    r["message"]["id"] = ["msg_01", "msg_02"]  # was a raw TypeError: unhashable type


def set_id_object(r: dict) -> None:
    r["message"]["id"] = {"id": "msg_01"}


@pytest.mark.parametrize(("which", "change", "says"), [
    (user_text, set_message, "message is a JSON string, not object"),
    (user_text, set_parent, "parentUuid is a JSON list, not string or null"),
    (user_text, set_uuid, "uuid is a JSON object, not string"),
    (tool_user, set_block, "message.content[0] is a JSON string, not object"),
    (tool_user, set_tool_use_id, "message.content[0].tool_use_id is a JSON number"),
    (reply, set_id_list, "message.id is a JSON list, not string or null"),
    (reply, set_id_object, "message.id is a JSON object, not string or null"),
])
def test_a_malformed_claude_code_record_is_named_by_file_and_line(tmp_path, which, change,
                                                                   says):
    recs = records(CC)
    i = line_of(recs, which)
    change(recs[i])
    p = tmp_path / "cc.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs),
                 encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}:{i + 1}: ") and says in msg


def chat_calls_strings(recs: list[dict]) -> int:
    i = line_of(recs, lambda r: r.get("tool_calls"))
    recs[i]["tool_calls"] = ["Read", "Bash"]
    return i


def chat_content_number(recs: list[dict]) -> int:
    i = line_of(recs, lambda r: r["role"] == "user")
    recs[i]["content"] = 47213
    return i


def codex_payload_string(recs: list[dict]) -> int:
    i = line_of(recs, lambda r: r["type"] == "response_item")
    recs[i]["payload"] = "message"
    return i


def codex_name_number(recs: list[dict]) -> int:
    i = line_of(recs, lambda r: r["payload"].get("type") == "function_call")
    recs[i]["payload"]["name"] = 3
    return i


def codex_reasoning(recs: list[dict], key: str, value) -> int:
    i = line_of(recs, lambda r: r["payload"].get("type") == "reasoning")
    recs[i]["payload"][key] = value  # was a raw TypeError: not iterable
    return i


def codex_summary_number(recs: list[dict]) -> int:
    return codex_reasoning(recs, "summary", 3)


def codex_content_boolean(recs: list[dict]) -> int:
    return codex_reasoning(recs, "content", True)


def codex_summary_false(recs: list[dict]) -> int:
    return codex_reasoning(recs, "summary", False)


@pytest.mark.parametrize(("source", "fmt", "change", "says"), [
    (MSG, None, chat_calls_strings, "tool_calls[0] is a JSON string, not object"),
    (MSG, None, chat_content_number, "content is a JSON number"),
    (CODEX, "codex", codex_payload_string, "payload is a JSON string, not object"),
    (CODEX, None, codex_name_number, "payload.name is a JSON number, not string"),
    (CODEX, None, codex_summary_number, "payload.summary is a JSON number, not list or null"),
    (CODEX, None, codex_content_boolean,
     "payload.content is a JSON boolean, not list or null"),
    (CODEX, None, codex_summary_false, "payload.summary is a JSON boolean, not list or null"),
])
def test_a_malformed_record_of_another_format_is_named_by_file_and_line(
        tmp_path, source, fmt, change, says):
    recs = records(source)
    i = change(recs)
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs),
                 encoding="utf-8")
    msg = refusal(p, fmt=fmt)
    assert msg.startswith(f"{p}:{i + 1}: ") and says in msg


def test_a_malformed_gemini_message_is_named_by_its_place(tmp_path):
    doc = json.loads(GEMINI.read_text(encoding="utf-8"))
    doc["messages"][1]["toolCalls"] = {"name": "Read"}
    p = tmp_path / "g.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}: messages[1]: toolCalls is a JSON object, not list")


def test_a_second_root_is_named_not_dropped(tmp_path):
    """A file holding two conversations: the thread from the last message starts at the
    second root, and the first conversation's exchanges would silently fall out."""
    recs = records(CC)
    earlier = recs[1:4]  # a prompt, its hook's progress record, a reply: another session

    def moved(u: str) -> str:
        return f"{u[:-4]}beef"

    def other(r: dict) -> dict:  # its own API message too, as another session's reply is
        m = r.get("message")
        return dict(r, message=dict(m, id=moved(m["id"]))) if isinstance(m, dict) and \
            m.get("id") else r

    first = [other(dict(r, uuid=moved(r["uuid"]), parentUuid=None if i == 0 else
                        moved(earlier[i - 1]["uuid"]))) for i, r in enumerate(earlier)]
    p = tmp_path / "two.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in first + recs),
                 encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}:1: a second root") and "would be left out" in msg
    # the cut goes where the main conversation starts, after the other one's lines 1-3
    start = next(i for i, r in enumerate(recs, len(first) + 1)
                 if r.get("type") in ("user", "assistant"))
    assert f"the other conversation is lines 1-3, so split the file before line {start}" in msg
    # the short conversation last: the thread is the one the last message ends, so the
    # long one is left out, and the cut goes where the short one starts
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs + first),
                 encoding="utf-8")
    msg = refusal(p)
    assert msg.startswith(f"{p}:2: a second root")
    assert f"so split the file before line {len(recs) + 1}, one scenario each" in msg
    # interleaved: no one cut separates them, and the advice says so rather than a line
    mixed = [first[0], *recs[:5], *first[1:], *recs[5:]]
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in mixed),
                 encoding="utf-8")
    msg = refusal(p)
    assert "interleave with the main thread's" in msg and "split the file" not in msg


def test_dev_zero_is_refused_before_it_is_read():
    msg = refusal(Path("/dev/zero"))
    assert "/dev/zero is a character device" in msg


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe)" in refusal(fifo)


def test_a_transcript_over_max_mb_is_refused_naming_its_size(tmp_path):
    big = tmp_path / "big.jsonl"
    with big.open("wb") as f:  # sparse: 51 MB on paper, nothing on disk
        f.truncate(51_000_000)
    msg = refusal(big)
    assert "is 51.0 MB, over the limit of 50 MB (max_mb)" in msg
    assert "over the limit of 0.001 MB" in refusal(CC, max_mb=0.001)


@pytest.mark.parametrize(("value_yaml", "says"), [
    ("|\n      51873\n", "'51873\\n' has whitespace around it"),
    ("'  51873'", "'  51873' has whitespace around it"),
    ("13:42", 'YAML reads 13:42 unquoted as the number 822; quote it to keep it as '
              'written: value: "13:42"'),
    ("51873", 'YAML reads 51873 unquoted as the number 51873; quote it'),
    ("yes", "YAML reads yes unquoted as the boolean True"),
    ("2026-11-28", "YAML reads 2026-11-28 unquoted as the date"),
    ("'7'", "'7' is one character"),
])
def test_a_fact_value_is_read_as_a_string_as_written(tmp_path, value_yaml, says):
    p = tmp_path / "facts.yaml"
    p.write_text(f"facts:\n  - label: the port\n    value: {value_yaml}\n", encoding="utf-8")
    with pytest.raises(SessionError) as e:
        read_facts(str(p), "t")
    assert f"{p}: facts[0].value" in str(e.value) and says in str(e.value)
    assert "\n" not in str(e.value)


def test_a_label_holding_a_newline_is_refused(tmp_path):
    p = tmp_path / "facts.yaml"
    p.write_text('facts:\n  - {label: "the\\nport", value: "51873"}\n', encoding="utf-8")
    with pytest.raises(SessionError, match=r"facts\[0\]\.label: .* holds a newline"):
        read_facts(str(p), "t")


def test_a_facts_file_that_is_no_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "facts.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SessionError, match="is a FIFO"):
        read_facts(str(fifo), "config.scenarios.x.facts")
