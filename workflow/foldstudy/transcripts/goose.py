"""goose sessions: the SQLite store of goose 1.10 and later
(`~/.local/share/goose/sessions/sessions.db`, every session in one database; `session:`
names the one to read) and the JSONL file of one session earlier versions wrote
(`~/.local/share/goose/sessions/<session id>.jsonl`).

Shapes learned from goose's source (block/goose: `crates/goose/src/session/
session_manager.rs`, the tables and how a conversation is written and read back;
`session/legacy.rs`, the JSONL; `conversation/message.rs` and `tool_result_serde.rs`, a
message's JSON; `context_mgmt/mod.rs`, how goose compacts).

`sessions.db`: `sessions {id, name, working_dir, session_type, created_at, updated_at,
...}`, ids as goose forms them (`YYYYMMDD_N`), and `messages {id, session_id, role,
content_json, created_timestamp, timestamp, tokens, metadata_json}`, read in goose's own
order (`timestamp`, then insertion). `content_json` is the message's list of content
items, `metadata_json` its visibility `{userVisible, agentVisible}`. The JSONL: a first
line of session metadata `{working_dir, description, message_count, ...}` (never read),
then one message a line `{id, role, created, content, metadata}`, the same JSON.

Content items, by `type`, read as the model saw them:
- `text` (the turn's text), `toolRequest` `{id, toolCall: {status, value: {name,
  arguments}}}` (a call; an `error` status is a call goose could not parse, named with
  its error), `toolResponse` `{id, toolResult: {status, value}}` (a tool result, in a
  user-role message: `value` a `{content: [...], isError}` or, from older goose, the list
  of content items itself; their `text` items are the output; an `error` status its
  error), `thinking` (only with include_thinking), `image` (named);
- not seen by the model, or the UI's own, counted by type: `redactedThinking`,
  `toolConfirmationRequest`, `actionRequired`, `frontendToolRequest`,
  `systemNotification`, `conversationCompacted` (goose before 1.4's compaction notice).

Compaction: goose summarizes the conversation, marks every message before it
`agentVisible: false` (still shown to the user), and appends the summary as a user
message visible to the agent only (`agentVisible: true, userVisible: false`), then an
agent-only assistant message telling the model to go on ("Your context was compacted.
..."). That summary is the baseline, never a turn; the continuation is counted
(`continuation`); the messages before it stay on the thread (the agent read them before
it compacted). A message visible to neither (the copy of the last user message goose
re-sends after the summary) is counted (`invisible`); the copy is on the thread. A
message with no metadata is visible to both, as goose reads it.

Sessions of type `sub_agent` are subagents' own: the sessions offered are the others
with a message; a subagent's session can still be named by `session:`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import (
    NULL,
    Message,
    ReadOptions,
    Record,
    SessionError,
    Source,
    ToolCall,
    Transcript,
    arguments_text,
    counted,
    expect,
)
from .database import Database, pick_session

ROLES = ("user", "assistant")
UNSEEN = ("redactedThinking", "toolConfirmationRequest", "actionRequired",
          "frontendToolRequest", "systemNotification", "conversationCompacted",
          "summarizationRequested")


@dataclass
class _Thread:
    opts: ReadOptions
    out: list[Message] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    left: Counter[str] = field(default_factory=Counter)
    calls: set[str] = field(default_factory=set)
    orphans: list[int] = field(default_factory=list)


def _check(msg: dict[str, Any], at: str) -> list[dict[str, Any]]:
    role = expect(msg.get("role"), (str,), at, "role", "user or assistant")
    if role not in ROLES:
        raise SessionError(f"{at}: role is {role!r}, not user or assistant; a goose message "
                           "is one of them")
    content = expect(msg.get("content"), (list,), at, "content",
                     "the message's list of content items")
    for i, c in enumerate(content):
        expect(c, (dict,), at, f"content[{i}]", "a content item {type, ...}")
        kind = expect(c.get("type"), (str,), at, f"content[{i}].type",
                      "text, toolRequest, toolResponse, ...")
        if kind == "text":
            expect(c.get("text"), (str,), at, f"content[{i}].text",
                   "a text item's text is a string")
        elif kind in ("toolRequest", "toolResponse"):
            key = "toolCall" if kind == "toolRequest" else "toolResult"
            res = expect(c.get(key), (dict,), at, f"content[{i}].{key}",
                         "{status: success, value} or {status: error, error}")
            expect(res.get("status"), (str,), at, f"content[{i}].{key}.status",
                   "success or error")
    expect(msg.get("metadata"), (dict, NULL), at, "metadata", "{userVisible, agentVisible}")
    return content


def _result_text(res: dict[str, Any]) -> str:
    if res["status"] != "success":
        return str(res.get("error", ""))
    value = res.get("value")
    items = value.get("content") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return json.dumps(value, ensure_ascii=False)
    return "\n".join(i["text"] if isinstance(i, dict) and isinstance(i.get("text"), str)
                     else f"[{i.get('type', 'item') if isinstance(i, dict) else 'item'}]"
                     for i in items)


def _call(req: dict[str, Any]) -> ToolCall:
    call = req["toolCall"]
    if call["status"] != "success":
        return ToolCall("", json.dumps({"error": call.get("error", "")}, ensure_ascii=False))
    value = call.get("value") if isinstance(call.get("value"), dict) else {}
    return ToolCall(str(value.get("name", "")), arguments_text(value.get("arguments") or {}))


def _message(msg: dict[str, Any], line: int, at: str, t: _Thread) -> None:
    content = _check(msg, at)
    meta = msg.get("metadata") or {}
    agent, user = meta.get("agentVisible", True), meta.get("userVisible", True)
    texts = [c["text"] for c in content if c["type"] == "text"]
    if not agent and not user:
        t.left["invisible"] += 1
        return
    if agent and not user:
        if msg["role"] == "user":  # goose's summary, for the agent only
            t.summaries.append("\n".join(texts))
        else:
            t.left["continuation"] += 1
        return
    calls, thoughts, results = [], [], []
    other = []
    for c in content:
        kind = c["type"]
        if kind == "toolRequest":
            t.calls.add(str(c.get("id")))
            calls.append(_call(c))
        elif kind == "toolResponse":
            if str(c.get("id")) not in t.calls:
                t.orphans.append(line)  # its call is not in the session
            results.append(_result_text(c["toolResult"]))
        elif kind == "thinking":
            thoughts.append(str(c.get("thinking", "")))
        elif kind == "image":
            other.append("[image]")
        elif kind != "text":
            t.left[kind] += 1
    if thoughts and not t.opts.include_thinking:
        t.left["thinking"] += len(thoughts)
    thinking = "\n".join(thoughts) if t.opts.include_thinking else ""
    text = "\n".join(texts + other)
    if text or calls or thinking:
        t.out.append(Message(msg["role"], text, tuple(calls), thinking, line))
    t.out += [Message("tool", r, line=line) for r in results]


def _transcript(path: Path, t: _Thread, vocabulary: str) -> Transcript:
    if not any(m.role in ("user", "assistant") for m in t.out):
        raise SessionError(f"{path}: no user or assistant message the agent saw; a goose "
                           "session holds the conversation as such messages")
    return Transcript(str(path), "goose", tuple(t.out), tuple(t.summaries),
                      compactions=len(t.summaries), left_out=counted(t.left),
                      orphan_outputs=tuple(t.orphans), vocabulary=vocabulary)


def _sessions(db: Database) -> list[str]:
    typed = "session_type" in db.columns("sessions")
    rows = db.rows("SELECT s.id FROM sessions s WHERE EXISTS (SELECT 1 FROM messages m "
                   "WHERE m.session_id = s.id)"
                   + (" AND s.session_type != 'sub_agent'" if typed else "")
                   + " ORDER BY s.updated_at DESC, s.id DESC")
    return [r["id"] for r in rows]


def _named(db: Database, session: str | None, present: list[str]) -> list[str]:
    """A subagent's session is not offered, but may be named."""
    if session is not None and session not in present and db.rows(
            "SELECT 1 FROM messages WHERE session_id = ? LIMIT 1", session):
        return [*present, session]
    return present


class Goose(Source):
    format = "goose"
    title = "goose session"
    shape = ("goose's sessions.db (tables sessions, messages), or its JSONL before 1.10: a "
             "metadata line {working_dir, description}, then messages {role, created, "
             "content[], metadata}")
    tables = "sessions, messages, schema_version (goose's sessions.db)"

    def looks(self, record: dict[str, Any]) -> bool:
        if "working_dir" in record and "description" in record and "role" not in record:
            return True  # the session metadata line
        return (record.get("role") in ROLES and isinstance(record.get("created"), int)
                and isinstance(record.get("content"), list))

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        t = _Thread(opts)
        for line, r in records:
            if "role" not in r and "working_dir" in r:
                continue  # the metadata line
            _message(r, line, f"{path}:{line}", t)
        return _transcript(path, t, "JSONL (goose before 1.10)")

    def database(self, tables: frozenset[str]) -> bool:
        return {"sessions", "messages", "schema_version"} <= tables

    def read_database(self, path: Path, db: Database, opts: ReadOptions) -> Transcript:
        present = _sessions(db)
        session = pick_session(path, _named(db, opts.session, present), opts.session,
                               "goose session")
        t = _Thread(opts)
        for r in db.rows("SELECT id, role, content_json, created_timestamp, metadata_json "
                         "FROM messages WHERE session_id = ? ORDER BY timestamp, id",
                         session):
            at = f"{db.path}: messages row {r['id']}"
            content = db.cell(r["content_json"], at, "content_json", (list,),
                              "the message's list of content items")
            meta = None if r["metadata_json"] is None else db.cell(
                r["metadata_json"], at, "metadata_json", what="{userVisible, agentVisible}")
            line = db.line("messages", r["id"], r["content_json"])
            msg = {"role": r["role"], "content": content, "metadata": meta}
            _message(msg, line, at, t)
        version = db.rows("SELECT MAX(version) AS v FROM schema_version")[0]["v"]
        return _transcript(path, t, f"sessions.db schema v{version}, session {session}")
