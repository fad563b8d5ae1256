"""Qwen Code sessions: the JSONL chat recording (`~/.qwen/projects/<project>/chats/<session
id>.jsonl`; `~/.qwen/tmp/<project hash>/chats/` in 0.0.x-0.1.x builds), Qwen Code 0.0.x to
0.14, and the single JSON document older builds wrote (`chats/session-*.json`).

Shapes learned from Qwen Code's source (QwenLM/qwen-code,
`packages/core/src/services/chatRecordingService.ts`: `ChatRecord`, `recordToolResult`,
`recordChatCompression`, `rewindRecording`; `sessionService.ts`: `reconstructHistory`) and
public readers of the files (usage trackers' Qwen adapters, the qwen-code VS Code
companion's `QwenSessionReader`):
- one record a line `{uuid, parentUuid, sessionId, timestamp, type: user | assistant |
  tool_result | system, subtype, cwd, version, message: {role, parts}, systemPayload}`;
  `message` is the Gemini API Content the model received or wrote: `text` parts,
  `thought` parts (`{text, thought: true}`, read only with include_thinking),
  `functionCall {id, name, args}`, `functionResponse {id, name, response}`.
- `tool_result` records hold the functionResponse the model received: a tool result each.
  A `user` record with a subtype (`mid_turn_user_message`, `notification`, `cron`) is
  text the CLI sent the model as a user turn: read where it was sent (`read_in`).
- the thread is the parentUuid chain followed back from the file's last record, as the
  CLI rebuilds it on resume; records sharing a uuid are one message, their parts joined
  in file order (as the CLI aggregates them). `/rewind` writes a `system` rewind record
  re-rooted to the record before the abandoned turn: the abandoned records stay in the
  file, off the chain (`off_thread`, counted `side_branch`). A record written off the
  active tail (a custom title) is a leaf of its own: counted by subtype.
- `system` records with subtype `chat_compression` are the CLI's compaction:
  `systemPayload.compressedHistory` is the history the model saw after it, opening with
  the `<state_snapshot>` summary turn and the model's "Got it. Thanks for the additional
  context!" (older builds also kept the summary as `systemPayload.summary`), then the
  turns it kept. That summary is the baseline, never a turn of the thread; the records
  before the compression stay on the thread (the agent read them before it compressed,
  as the UI history the CLI keeps). Every other system record is the CLI's bookkeeping
  (telemetry, titles, slash commands, snapshots): counted by subtype.
- Subagent records (`isSidechain`) are never on the thread: their text is kept apart
  (`Transcript.subagent`).

Repaired, never refused, and counted (`Transcript.repaired`): the CLI updates its tail
before a write lands and only logs a failed write, so a parentUuid can name a record the
file does not hold; such a link joins the main-thread record written just before it
(`parent`; with none before it the thread starts there: `parent_at_start`). Only a
cycle of links is refused.

The older single JSON document `{sessionId, projectHash, startTime, lastUpdated,
messages: [{id, type: user | qwen, content, toolCalls, thoughts}]}` is Gemini CLI's chat
(the CLI began as its fork) with `qwen` for `gemini`: it is read as one (gemini.py).
"""

from __future__ import annotations

import dataclasses
import json
from bisect import bisect_left
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
    render_message,
)
from .gemini import ACK, SNAPSHOT, Gemini

TYPES = ("user", "assistant", "tool_result", "system")
# the system subtypes only Qwen Code writes (Claude Code's system records are
# compact_boundary, api_error, informational, local_command, ...)
SUBTYPES = ("chat_compression", "slash_command", "ui_telemetry", "at_command",
            "attribution_snapshot", "custom_title", "rewind", "session_notes",
            "file_history_snapshot", "agent_bootstrap", "agent_launch_prompt",
            "mid_turn_user_message", "goal_state", "turn_result", "branch_checkpoint")


def _check(path: Path, line: int, r: dict[str, Any]) -> None:
    at = f"{path}:{line}"
    expect(r.get("uuid"), (str,), at, "uuid", "a record's id is a string")
    expect(r.get("parentUuid"), (str, NULL), at, "parentUuid",
           "the uuid of the record before it, or null")
    kind = expect(r.get("type"), (str,), at, "type", "user, assistant, tool_result or system")
    if kind not in TYPES:
        raise SessionError(f"{at}: type is {kind!r}, not user, assistant, tool_result or "
                           "system; a Qwen Code record is one of them")
    msg = expect(r.get("message"), (dict, NULL), at, "message",
                 "the Content the model saw {role, parts}")
    parts = expect((msg or {}).get("parts") or [], (list,), at, "message.parts",
                   "a list of parts (text, thought, functionCall, functionResponse)")
    for i, p in enumerate(parts):
        expect(p, (dict,), at, f"message.parts[{i}]", "a part is an object")
        for key in ("functionCall", "functionResponse"):
            if key in p:
                expect(p[key], (dict,), at, f"message.parts[{i}].{key}",
                       "{id, name, args or response}")
    if r.get("subtype") == "chat_compression":
        payload = expect(r.get("systemPayload"), (dict,), at, "systemPayload",
                         "the compression's {info, compressedHistory}")
        expect(payload.get("compressedHistory"), (list, NULL), at,
               "systemPayload.compressedHistory", "the history after the compression")


def _response_text(fr: dict[str, Any]) -> str:
    """A functionResponse as the model received it: its output, else its error, else the
    response as JSON."""
    resp = fr.get("response")
    value = resp.get("output", resp.get("error", resp)) if isinstance(resp, dict) else resp
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _parts(parts: list[dict[str, Any]]) -> tuple[list[str], list[str], list[ToolCall],
                                                  list[str]]:
    """(texts, thoughts, calls, results) of a Content's parts."""
    texts, thoughts, calls, results = [], [], [], []
    for p in parts:
        if "functionCall" in p:
            c = p["functionCall"]
            calls.append(ToolCall(str(c.get("name", "")), arguments_text(c.get("args") or {})))
        elif "functionResponse" in p:
            results.append(_response_text(p["functionResponse"]))
        elif isinstance(p.get("text"), str):
            (thoughts if p.get("thought") else texts).append(p["text"])
        elif p:
            texts.append(f"[{next(iter(p))}]")  # inlineData, fileData, ...
    return texts, thoughts, calls, results


def _messages(r: dict[str, Any], line: int, include_thinking: bool, left: Counter[str]
              ) -> list[Message]:
    texts, thoughts, calls, results = _parts((r.get("message") or {}).get("parts") or [])
    out = [Message("tool", t, line=line) for t in results]
    if r["type"] == "assistant":
        if thoughts and not include_thinking:
            left["thought"] += len(thoughts)
        thinking = "\n".join(thoughts) if include_thinking else ""
        if texts or calls or thinking:
            out.append(Message("assistant", "\n".join(texts), tuple(calls), thinking, line))
    elif texts:
        out.append(Message("user", "\n".join(texts), line=line))
    return out


def _summary(r: dict[str, Any]) -> str:
    """A chat_compression's summary: the compressed history's `<state_snapshot>` turn (the
    turn before the model's acknowledgement), else the older builds' `summary` field."""
    payload = r.get("systemPayload") or {}
    history = [h for h in payload.get("compressedHistory") or [] if isinstance(h, dict)]
    texts = ["\n".join(_parts([p for p in h.get("parts") or [] if isinstance(p, dict)])[0])
             for h in history]
    found = [t for h, t in zip(history, texts, strict=True)
             if h.get("role") == "user" and SNAPSHOT in t]
    if not found:
        found = [texts[i] for i in range(len(texts) - 1)
                 if history[i].get("role") == "user" and texts[i + 1].strip() == ACK]
    if not found and isinstance(payload.get("summary"), str):
        found = [payload["summary"]]
    return "\n".join(t for t in found if t.strip())


class Qwen(Source):
    format = "qwen"
    title = "Qwen Code session"
    shape = ("JSONL records {uuid, parentUuid, type, message: {role, parts}} or "
             "{type: system, subtype, systemPayload} (Qwen Code chats/<id>.jsonl)")

    def looks(self, record: dict[str, Any]) -> bool:
        if "uuid" not in record:
            return False
        msg = record.get("message")
        return ("systemPayload" in record or record.get("type") == "tool_result"
                or (isinstance(msg, dict) and "parts" in msg)
                or "usageMetadata" in record or record.get("subtype") in SUBTYPES)

    def document(self, text: str) -> dict[str, Any] | None:
        doc = Gemini().document(text)
        msgs = doc.get("messages") if doc is not None else None
        if isinstance(msgs, list) and any(isinstance(m, dict) and m.get("type") == "qwen"
                                          for m in msgs):
            return doc
        return None

    def read_document(self, path: Path, doc: dict[str, Any], opts: ReadOptions
                      ) -> Transcript:
        msgs = [{**m, "type": "gemini"} if isinstance(m, dict) and m.get("type") == "qwen"
                else m for m in doc["messages"]]
        tr = Gemini().read_document(path, {**doc, "messages": msgs}, opts)
        return dataclasses.replace(tr, format=self.format)

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        for line, r in records:
            _check(path, line, r)
        return _read(path, records, opts)


def _read(path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
    first: dict[str, int] = {}  # uuid -> line of its first record
    merged: dict[str, dict[str, Any]] = {}
    for line, r in records:
        u = r["uuid"]
        if u not in merged:
            first[u] = line
            merged[u] = dict(r)
        elif isinstance(r.get("message"), dict):  # the same message written again
            base = merged[u].get("message") or {"role": r["message"].get("role"), "parts": []}
            merged[u]["message"] = {**base, "parts": [*(base.get("parts") or []),
                                                      *(r["message"].get("parts") or [])]}
    main = [(first[u], u) for u in first if not merged[u].get("isSidechain")]
    starts = [n for n, _ in main]
    leaf = next((u for _, u in reversed(main)), None)
    if leaf is None:
        raise SessionError(f"{path}: no record outside a subagent's; a Qwen Code session "
                           "holds the conversation as user and assistant records")
    repaired: Counter[str] = Counter()
    chain: list[str] = []
    seen: set[str] = set()
    u: str | None = leaf
    while u is not None:
        if u in seen:
            raise SessionError(f"{path}:{first[u]}: parentUuid loops back to record {u}; the "
                               "thread cannot be followed (a cycle of links)")
        seen.add(u)
        chain.append(u)
        parent = merged[u].get("parentUuid")
        if parent is not None and parent not in merged:
            i = bisect_left(starts, first[u]) - 1  # the record written just before
            parent = main[i][1] if i >= 0 else None
            repaired["parent" if parent else "parent_at_start"] += 1
        u = parent
    chain.reverse()
    on = set(chain)
    left: Counter[str] = Counter()
    read_in: Counter[str] = Counter()
    out: list[Message] = []
    summaries: list[str] = []
    absent = 0
    for u in chain:
        r, line = merged[u], first[u]
        if r["type"] == "system":
            if r.get("subtype") == "chat_compression":
                if summary := _summary(r):
                    summaries.append(summary)
                else:
                    absent += 1  # compressed, and no summary turn in the record
            else:
                left[f"system:{r.get('subtype') or 'untyped'}"] += 1
            continue
        if r["type"] == "user" and r.get("subtype"):
            read_in[str(r["subtype"])] += 1
        out += _messages(r, line, opts.include_thinking, left)
    off, sub = [], []
    for u, r in merged.items():
        if u in on:
            continue
        if r["type"] == "system":
            left[f"system:{r.get('subtype') or 'untyped'}"] += 1
            continue
        text = "\n".join(render_message(m) for m in _messages(r, first[u], True, Counter()))
        if r.get("isSidechain"):
            sub.append(text)
            left["subagent"] += 1
        else:
            off.append(text)
            left["side_branch"] += 1
    if not any(m.role in ("user", "assistant") for m in out):
        raise SessionError(f"{path}: no user or assistant message on the thread (followed "
                           f"back from line {first[leaf]}); a Qwen Code session holds the "
                           "conversation as such records")
    return Transcript(str(path), "qwen", tuple(out), tuple(summaries), tuple(off),
                      compactions=len(summaries) + absent, subagent=tuple(sub),
                      left_out=counted(left), repaired=counted(repaired),
                      read_in=counted(read_in), absent_summaries=absent)
