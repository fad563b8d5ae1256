"""Kiro CLI's conversations in its SQLite database, as the builds before the JSONL store
kept them (Kiro CLI 1.x and Amazon Q Developer CLI, whose chat client Kiro CLI is:
`~/.local/share/amazon-q/data.sqlite3` in Amazon Q's source; `~/.local/share/kiro-cli/
data.sqlite3` for Kiro CLI is assumed, the same client under its new name). A sibling of
kiro.py rather than a part of it: one format (`kiro`), two stores, and the JSONL reader
stays the size of the JSONL; the Kiro source registers both (kiro.py `Kiro.database`).

Shapes learned from the client's source (aws/amazon-q-developer-cli,
`crates/chat-cli/src/database/mod.rs` and `sqlite_migrations/`,
`cli/chat/conversation.rs` `ConversationState`, `cli/chat/message.rs`):
- the table `conversations_v2 {key, conversation_id, value, created_at, updated_at}`
  (migration 008; `key` the working directory, times in milliseconds), or, before it,
  `conversations {key, value}` (migration 007, one conversation a directory, its id
  inside the value). `value` is the conversation, serialized by serde.
- the conversation `{conversation_id, history, next_message, transcript,
  latest_summary, ...}`. `history` is the thread: each entry `{user, assistant,
  request_metadata}` (before 1.13: the pair `[user, assistant]`). A user message's
  `content` is `{Prompt: {prompt}}`, `{ToolUseResults: {tool_use_results}}` or
  `{CancelledToolUses: {prompt, tool_use_results}}`; a result `{tool_use_id, content:
  [{Text: ...} | {Json: ...}], status}` (a Json result read as the JSON the model got).
  An assistant message is `{Response: {content}}` or `{ToolUse: {content, tool_uses:
  [{id, name, args}]}}`.
- not read, counted: a user message's `additional_context` (the context files the client
  sends with each message, the agent's standing instructions), `next_message` (a
  message not yet sent), `transcript` (the UI's own lines, which also hold what a
  compaction dropped: never a second copy of the thread).
- `/compact` drains the history the summary covers and keeps the summary in
  `latest_summary` (`[summary, request metadata]`; before 1.13 the string), which the
  client sends the model in front of what followed: the baseline. The history it drained
  is no longer in the file: only the turns after it (and any it kept) are on the thread.

`session:` names a conversation by its `conversation_id`, or by its `key` (the
directory), which names that directory's most recent conversation, as `--resume` picks
it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .base import (
    NULL,
    Message,
    ReadOptions,
    SessionError,
    ToolCall,
    Transcript,
    arguments_text,
    counted,
    expect,
)
from .database import Database, pick_session

TABLES = ("conversations_v2", "conversations")


def is_store(tables: frozenset[str]) -> bool:
    return "conversations_v2" in tables or {"conversations", "state", "migrations"} <= tables


def _rows(db: Database) -> list[tuple[str, str, Any, int]]:
    """(conversation id, key, value, row) of every conversation, the most recent first."""
    if "conversations_v2" in db.tables:
        return [(r["conversation_id"], r["key"], r["value"], r["rowid"]) for r in db.rows(
            "SELECT rowid, key, conversation_id, value FROM conversations_v2 "
            "ORDER BY updated_at DESC, rowid DESC")]
    out = []
    for r in db.rows("SELECT rowid, key, value FROM conversations ORDER BY rowid DESC"):
        try:
            cid = json.loads(r["value"]).get("conversation_id")
        except (json.JSONDecodeError, TypeError, AttributeError):
            cid = None
        out.append((cid if isinstance(cid, str) else r["key"], r["key"], r["value"],
                    r["rowid"]))
    return out


def _one(tagged: Any, at: str, key: str, kinds: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """A serde enum as it is written: `{Variant: {fields}}`."""
    expect(tagged, (dict,), at, key, f"one of {', '.join(kinds)} as {{Variant: {{...}}}}")
    if len(tagged) != 1 or next(iter(tagged)) not in kinds:
        raise SessionError(f"{at}: {key} is {{{', '.join(tagged)}}}, not one of "
                           f"{', '.join(kinds)}; the client writes one variant")
    kind, body = next(iter(tagged.items()))
    return kind, expect(body, (dict,), at, f"{key}.{kind}", "the variant's fields")


def _results(body: dict[str, Any], at: str, key: str) -> list[str]:
    out = []
    results = expect(body.get("tool_use_results") or [], (list,), at,
                     f"{key}.tool_use_results", "a list of results")
    for i, r in enumerate(results):
        expect(r, (dict,), at, f"{key}.tool_use_results[{i}]", "{tool_use_id, content}")
        blocks = expect(r.get("content") or [], (list,), at,
                        f"{key}.tool_use_results[{i}].content", "[{Text} | {Json}]")
        texts = []
        for b in blocks:
            value = next(iter(b.values())) if isinstance(b, dict) and b else b
            texts.append(value if isinstance(value, str)
                         else json.dumps(value, ensure_ascii=False))
        out.append("\n".join(texts))
    return out


def _user(user: Any, at: str, left: Counter[str]) -> list[Message]:
    expect(user, (dict,), at, "user", "the user message {content, additional_context}")
    if user.get("additional_context"):
        left["additional_context"] += 1
    kind, body = _one(user.get("content"), at, "user.content",
                      ("Prompt", "ToolUseResults", "CancelledToolUses"))
    out = []
    prompt = body.get("prompt")
    if kind != "ToolUseResults" and prompt:
        out.append(Message("user", str(expect(prompt, (str,), at, f"user.content.{kind}.prompt",
                                              "the user's text"))))
    if kind != "Prompt":
        if kind == "CancelledToolUses":
            left["cancelled_tool_uses"] += 1
        out += [Message("tool", r) for r in _results(body, at, f"user.content.{kind}")]
    return out


def _assistant(assistant: Any, at: str) -> Message:
    kind, body = _one(assistant, at, "assistant", ("Response", "ToolUse"))
    text = expect(body.get("content", ""), (str,), at, f"assistant.{kind}.content",
                  "the reply's text")
    calls = []
    for i, u in enumerate(expect(body.get("tool_uses") or [], (list,), at,
                                 f"assistant.{kind}.tool_uses", "[{id, name, args}]")):
        expect(u, (dict,), at, f"assistant.{kind}.tool_uses[{i}]", "{id, name, args}")
        calls.append(ToolCall(str(u.get("name", "")), arguments_text(u.get("args") or {})))
    return Message("assistant", text, tuple(calls))


def _entry(entry: Any, at: str) -> tuple[Any, Any]:
    """(user, assistant) of a history entry, in either shape."""
    if isinstance(entry, list) and len(entry) == 2:
        return entry[0], entry[1]
    expect(entry, (dict,), at, "the entry", "{user, assistant, request_metadata} or "
                                            "[user, assistant]")
    return entry.get("user"), entry.get("assistant")


def _summary(doc: dict[str, Any], at: str) -> str | None:
    value = doc.get("latest_summary")
    if isinstance(value, list) and value:
        value = value[0]
    return expect(value, (str, NULL), at, "latest_summary",
                  "the /compact summary, or [summary, request metadata]")


def read_store(path: Path, db: Database, opts: ReadOptions, fmt: str) -> Transcript:
    rows = _rows(db)
    ids = [cid for cid, _, _, _ in rows]
    by_key = {key: cid for cid, key, _, _ in reversed(rows)}  # the most recent wins
    wanted = by_key.get(opts.session, opts.session) if opts.session not in ids else \
        opts.session
    session = pick_session(path, list(dict.fromkeys(ids)), wanted, "Kiro CLI conversation")
    cid, key, value, rowid = next(r for r in rows if r[0] == session)
    table = TABLES[0] if "conversations_v2" in db.tables else TABLES[1]
    at = f"{path}: {table} row {rowid}"
    doc = db.cell(value, at, "value", what="the conversation {conversation_id, history}")
    line = db.line(table, rowid, value)
    left: Counter[str] = Counter()
    out: list[Message] = []
    history = expect(doc.get("history"), (list,), at, "history", "the conversation's turns")
    for i, entry in enumerate(history):
        where = f"{at}: history[{i}]"
        user, assistant = _entry(entry, where)
        out += [Message(m.role, m.text, line=line) for m in _user(user, where, left)]
        reply = _assistant(assistant, where)
        if reply.text or reply.tool_calls:
            out.append(Message("assistant", reply.text, reply.tool_calls, line=line))
    if doc.get("next_message") is not None:
        left["next_message"] += 1
    left["ui_transcript"] += len(doc.get("transcript") or [])
    summary = _summary(doc, at)
    if not any(m.role in ("user", "assistant") for m in out):
        raise SessionError(f"{at}: no turn in the conversation's history; a Kiro CLI "
                           "conversation holds its turns in `history`")
    shape = "pairs" if history and isinstance(history[0], list) else "entries"
    return Transcript(str(path), fmt, tuple(out), (summary,) if summary else (),
                      compactions=1 if summary else 0, left_out=counted(left),
                      vocabulary=f"{table} (history {shape}), conversation {cid} in {key}")
