"""Gemini CLI chats (`~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json` or
`.jsonl`), 0.1x to 0.5x.

Shapes learned from Gemini CLI's chat recording service (google-gemini/gemini-cli,
`packages/core/src/services/chatRecordingService.ts` and `chatRecordingTypes.ts`) and
public threads: gemini-cli #23749 (0.39 moves a session to an append-only JSONL file),
cc-switch #2347 and ccusage #1021 (readers broken by that change).

Two files, both detected:
- one JSON document `{sessionId, projectHash, messages[]}` (before 0.39);
- the JSONL stream (0.39 on): a header record `{sessionId, projectHash, startTime,
  kind}`, message records `{id, timestamp, type, content}`, `{"$set": {...}}` updates and
  `{"$rewindTo": id}` truncations. The CLI replays it this way on resume, and so does this
  reader: a message record under an id already seen replaces the earlier one in its place
  (a message is written again as its tool calls complete); a `$set` holding `messages` is
  a checkpoint that replaces the whole list; `$rewindTo` removes that message and every
  one after it. A `$rewindTo` naming no message read so far is refused by line (the CLI
  never writes one; replayed, it would empty the thread).

One checkpoint is read otherwise: the one a compression writes (`chatCompressionService`:
the new history opens with a user turn holding the CLI's `<state_snapshot>` summary and
the model's "Got it. Thanks for the additional context!", then the turns it kept). That
summary is the CLI's own carry, the baseline, never a turn of the thread; the messages the
compression dropped stay on the thread (the agent read them before it compressed, as
Claude Code's history before a compact_boundary does), and the kept ones keep their
place.

`user` and `gemini` messages are the thread; tool results sit in each gemini message's
`toolCalls` (its functionResponse, as the model received it). `info`, `error` and
`warning` messages are the CLI's notes: counted, not content; a message with no `type`
says neither whose turn it is nor that it is a note: left out, counted as `untyped`
(the manifest's word for it in every format). A subagent's own session
(`chats/<parent session id>/<id>.jsonl`) is never read, counted. What a checkpoint,
a rewrite or a rewind replaced is counted (`Transcript.left_out`). A `$rewindTo` that
leaves no message, with none written after it, is refused naming its line.
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
    Record,
    SessionError,
    Source,
    ToolCall,
    Transcript,
    arguments_text,
    counted,
    expect,
    json_document,
    parts_text,
)

THREAD = ("user", "gemini")
NOTES = ("info", "error", "warning")


SNAPSHOT = "<state_snapshot>"
ACK = "Got it. Thanks for the additional context!"


class Gemini(Source):
    format = "gemini"
    title = "Gemini CLI chat"
    shape = ("one JSON document with sessionId and messages[], or JSONL records: a "
             "sessionId header, {id, type} messages, $set, $rewindTo (Gemini CLI chat)")

    def looks(self, record: dict[str, Any]) -> bool:
        return ("$set" in record or "$rewindTo" in record
                or ("sessionId" in record and "projectHash" in record)
                or (isinstance(record.get("id"), str)
                    and record.get("type") in (*THREAD, *NOTES)))

    def document(self, text: str) -> dict[str, Any] | None:
        doc = json_document(text)
        return doc if isinstance(doc, dict) and "messages" in doc and "role" not in doc \
            else None

    def read_document(self, path: Path, doc: dict[str, Any], opts: ReadOptions
                      ) -> Transcript:
        msgs = expect(doc.get("messages"), (list,), str(path), "messages",
                      "a Gemini CLI chat holds its messages as a list")
        kept = [(f"{path}: messages[{i}]", i + 1, m) for i, m in enumerate(msgs)]
        return _transcript(path, kept, Counter(), [], opts, doc.get("sessionId"))

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        if not any(self.looks(r) for _, r in records):  # `format: gemini` on another file
            raise SessionError(f"{path}: not a {self.title} ({self.shape})")
        thread: dict[str, tuple[str, int, Any]] = {}  # id -> (where, line, message)
        left: Counter[str] = Counter()
        summaries: list[str] = []
        session = None
        emptied = ""  # the last $rewindTo that left no message, until a turn is written
        for line, r in records:
            at = f"{path}:{line}"
            if "$rewindTo" in r:
                target = expect(r["$rewindTo"], (str,), at, "$rewindTo",
                                "the id of the message to rewind to")
                _rewind(thread, target, at, left)
                emptied = "" if thread else (
                    f"{at}: $rewindTo {target!r} rewinds to the first message, removing every "
                    "message, and none is written after it; the session the CLI would "
                    "resume is empty")
            elif "$set" in r:
                update = expect(r["$set"], (dict,), at, "$set", "an object of updates")
                if "messages" in update:
                    _checkpoint(thread, update["messages"], at, line, left, summaries)
                    emptied = ""
            elif isinstance(r.get("id"), str):
                if r["id"] in thread:
                    left["rewritten"] += 1  # the same message, written again
                thread[r["id"]] = (at, line, r)
                emptied = "" if r.get("type") in THREAD else emptied
            elif "sessionId" in r:
                session = r.get("sessionId")
                if isinstance(r.get("messages"), list):  # a header holding the messages
                    _checkpoint(thread, r["messages"], at, line, left, summaries)
            else:
                raise SessionError(f"{at}: neither a message {{id, type, content}}, a $set, "
                                   "a $rewindTo nor the session header; a Gemini CLI "
                                   "session line is one of them")
        return _transcript(path, list(thread.values()), left, summaries, opts, session,
                           emptied)


def _rewind(thread: dict[str, tuple[str, int, Any]], target: str, at: str,
            left: Counter[str]) -> None:
    """Remove the message `target` and every one after it, as the CLI does."""
    ids = list(thread)
    if target not in thread:
        raise SessionError(f"{at}: $rewindTo names message {target!r}, which is not among "
                           f"the {len(ids)} messages before it; the file lost the message "
                           "the CLI rewound to (replayed, the rewind would empty the thread)")
    for u in ids[ids.index(target):]:
        del thread[u]
        left["rewound"] += 1


def _checkpoint(thread: dict[str, tuple[str, int, Any]], msgs: Any, at: str, line: int,
                left: Counter[str], summaries: list[str]) -> None:
    """A `messages` checkpoint replaces the list (the CLI writes one when the history is
    rebuilt: masked tool outputs, a session migrated from the JSON document), except a
    compression's (module docstring)."""
    expect(msgs, (list,), at, "$set.messages", "a checkpoint of the messages, a list")
    given = []
    for i, m in enumerate(msgs):
        expect(m, (dict,), at, f"$set.messages[{i}]", "an object {id, type, content}")
        given.append((str(m.get("id", f"#{i}")), (f"{at}: messages[{i}]", line, m)))
    snapshot = [i for i, (_, (w, _, m)) in enumerate(given) if m.get("type") == "user"
                and SNAPSHOT in parts_text(m.get("content"), w)]
    if not snapshot:
        left["checkpoint"] += 1
        thread.clear()
        thread.update(given)
        return
    for i, (u, (w, _, m)) in enumerate(given):
        if i in snapshot:
            summaries.append(parts_text(m.get("content"), w))  # the CLI's own carry
        elif i - 1 in snapshot and parts_text(m.get("content"), w).strip() == ACK:
            left["compression_ack"] += 1
        else:
            thread[u] = given[i][1]  # a kept turn keeps its place


def _transcript(path: Path, kept: list[tuple[str, int, Any]], left: Counter[str],
                summaries: list[str], opts: ReadOptions, session: Any,
                emptied: str = "") -> Transcript:
    out: list[Message] = []
    for at, line, m in kept:
        if isinstance(m, dict) and m.get("type") not in THREAD:
            # the CLI's info / error / warning notes, and a message with no type
            kind = m.get("type")
            left[kind if isinstance(kind, str) and kind else "untyped"] += 1
            continue
        out += _message(at, line, m, opts.include_thinking)
    if not out and emptied:  # a rewind emptied the thread: named by its line
        raise SessionError(emptied)
    if not out:
        raise SessionError(f"{path}: no user or gemini message; a Gemini CLI chat holds the "
                           "conversation in its messages")
    subagents = _subagent_files(path, session)
    return Transcript(str(path), "gemini", tuple(out), tuple(summaries),
                      compactions=len(summaries), left_out=counted(left),
                      subagent_files=subagents)


def _subagent_files(path: Path, session: Any) -> tuple[str, ...]:
    """A subagent's own sessions, in `chats/<parent session id>/`: never read, counted."""
    if not isinstance(session, str) or not session or "/" in session or session in (".", ".."):
        return ()
    d = path.parent / session
    return tuple(str(p) for p in sorted(d.glob("*.json*"))) if d.is_dir() else ()


def _result(call: dict[str, Any]) -> str:
    """A tool call's result as the model received it (its functionResponse), else what
    the CLI displayed."""
    texts = []
    for part in call.get("result") or []:
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(fr, dict):
            resp = fr.get("response")
            value = resp.get("output", resp.get("error", resp)) if isinstance(resp, dict) \
                else resp
            texts.append(value if isinstance(value, str)
                         else json.dumps(value, ensure_ascii=False))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    if not texts:
        shown = call.get("resultDisplay") or call.get("error")
        texts = [shown] if isinstance(shown, str) else []
    return "\n".join(texts)


def _message(at: str, line: int, m: Any, include_thinking: bool) -> list[Message]:
    expect(m, (dict,), at, "the message", "an object {id, type, content}")
    kind = expect(m.get("type"), (str,), at, "type", "user, gemini, info, error or warning")
    text = parts_text(m.get("content"), at)
    if kind == "user":
        return [Message("user", text, line=line)]
    calls, results = [], []
    for j, c in enumerate(expect(m.get("toolCalls") or [], (list,), at, "toolCalls",
                                 "a list of tool calls")):
        expect(c, (dict,), at, f"toolCalls[{j}]", "a call {id, name, args, result, status}")
        name = expect(c.get("name", ""), (str,), at, f"toolCalls[{j}].name", "the tool's name")
        expect(c.get("args") or {}, (dict,), at, f"toolCalls[{j}].args", "the call's arguments")
        expect(c.get("result"), (list, NULL), at, f"toolCalls[{j}].result",
               "a list of parts (functionResponse)")
        calls.append(ToolCall(name, arguments_text(c.get("args") or {})))
        results.append(Message("tool", _result(c), line=line))
    thoughts = expect(m.get("thoughts") or [], (list,), at, "thoughts", "a list of thoughts")
    thinking = "\n".join(f"{t.get('subject', '')}: {t.get('description', '')}".strip(": ")
                         for t in thoughts if isinstance(t, dict)) if include_thinking else ""
    return [Message("assistant", text, tuple(calls), thinking, line), *results]
