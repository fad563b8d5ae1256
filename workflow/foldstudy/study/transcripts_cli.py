"""The agent CLIs' own session files, read as each CLI writes them (issue 30; DESIGN §3
"Own sessions"): Claude Code's record tree, Codex CLI's rollouts, Gemini CLI's chats.

Claude Code (2.0 and 2.1): the main thread is the parentUuid chain followed back from the
last user or assistant message, plus what a parallel batch of tool calls hangs off it
(each tool_use is a record of its own and each tool_result's parent is its own tool_use
record, so the chain keeps only the last of each batch): the batch's sibling records (the
same message.id) and every tool_result answering a tool_use on the thread, in file order.
Progress, file-history-snapshot, queue-operation and system records are walked through
and left out. A compact_boundary is stitched to its logicalParentUuid; one naming no
record of the file starts a new root (what came before is unknown, and the manifest says
so). Side branches (abandoned forks) and subagents (isSidechain records, agent progress;
their own files are never read) stay out, counted by kind.

Codex CLI: `session_meta` and `turn_context` are not content; `response_item` records
are the thread (messages, function calls and their outputs by call_id, reasoning only
with include_thinking); `event_msg` records repeat them and are not read twice;
`compacted` carries the CLI's own summary, the baseline.

Gemini CLI: one JSON document; `user` and `gemini` messages are the thread, tool results
sit in each gemini message's `toolCalls`; `info` / `error` / `warning` are the CLI's notes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .transcript_base import (
    Message,
    SessionError,
    ToolCall,
    Transcript,
    arguments_text,
    counted,
    expect,
    parts_text,
    render_message,
)

CONVERSATION = ("user", "assistant")
NULL = type(None)
Record = tuple[int, dict[str, Any]]


# -- claude-code: shapes --------------------------------------------------------------------


def _claude_shape(path: Path, line: int, r: dict[str, Any]) -> None:
    at = f"{path}:{line}"
    if "uuid" in r:
        expect(r["uuid"], (str,), at, "uuid", "a record's id is a string")
    for key in ("parentUuid", "logicalParentUuid"):
        if key in r:
            expect(r[key], (str, NULL), at, key, "the uuid of another record, or null")
    if r.get("type") not in CONVERSATION:
        return
    if not isinstance(r.get("uuid"), str):
        raise SessionError(f"{at}: a {r['type']} record without a uuid; Claude Code writes "
                           "every message with its uuid and parentUuid")
    msg = expect(r.get("message"), (dict,), at, "message",
                 f"a {r['type']} record holds its message as an object {{role, content}}")
    expect(msg.get("id"), (str, NULL), at, "message.id",
           "the API message's id, shared by the records of one reply")
    content = expect(msg.get("content"), (str, list, NULL), at, "message.content",
                     "a string or a list of content blocks")
    for i, b in enumerate(content if isinstance(content, list) else []):
        key = f"message.content[{i}]"
        expect(b, (dict,), at, key, "a content block is an object with a type")
        if b.get("type") == "tool_use":
            expect(b.get("name", ""), (str,), at, f"{key}.name", "the tool's name")
            expect(b.get("input", {}), (dict,), at, f"{key}.input", "the call's input object")
            expect(b.get("id", ""), (str,), at, f"{key}.id", "the call's id")
        elif b.get("type") == "tool_result":
            expect(b.get("tool_use_id", ""), (str,), at, f"{key}.tool_use_id",
                   "the id of the tool_use it answers")


def _block_text(content: Any) -> str:
    """A tool_result's content: a string, or a list of blocks (text kept, images named)."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if b.get("type") == "text"
                         else f"[{b.get('type', 'block')}]"
                         for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _blocks(r: dict[str, Any]) -> list[dict[str, Any]]:
    content = (r.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _record_messages(r: dict[str, Any], line: int, include_thinking: bool) -> list[Message]:
    """One user or assistant record as messages: a user record's tool results become tool
    messages (in the chat format they are messages of their own)."""
    role = r["type"]
    content = (r.get("message") or {}).get("content")
    if isinstance(content, str):
        return [Message(role, content, line=line)]
    texts, thinking, calls, results = [], [], [], []
    for b in _blocks(r):
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text", "")))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking", "")))
        elif kind == "tool_use":
            calls.append(ToolCall(str(b.get("name", "")), arguments_text(b.get("input", {}))))
        elif kind == "tool_result":
            results.append(Message("tool", _block_text(b.get("content")), line=line))
        elif kind and kind != "redacted_thinking":
            texts.append(f"[{kind}]")
    own = []
    if texts or calls or (thinking and include_thinking):
        own = [Message(role, "\n".join(texts), tuple(calls),
                       "\n".join(thinking) if include_thinking else "", line)]
    return results + own


def _merge(a: Message, b: Message) -> Message:
    """Claude Code writes one assistant reply as several records (one per content block,
    the same message.id): read back as the one message the chat format holds."""
    text = "\n".join(t for t in (a.text, b.text) if t)
    thinking = "\n".join(t for t in (a.thinking, b.thinking) if t)
    return Message(a.role, text, a.tool_calls + b.tool_calls, thinking, a.line)


# -- claude-code: the thread ----------------------------------------------------------------


def _last_message(path: Path, records: list[Record]) -> Record:
    last = next(((line, r) for line, r in reversed(records)
                 if r.get("type") in CONVERSATION and not r.get("isSidechain")
                 and not r.get("isCompactSummary") and not r.get("isMeta")), None)
    if last is None:
        raise SessionError(f"{path}: no user or assistant record on the main thread; a "
                           "Claude Code session file holds the conversation as such records")
    return last


def _main_chain(path: Path, by_uuid: dict[str, Record], last: Record
                ) -> tuple[list[Record], list[int]]:
    """(the records from the root to the last message, the lines where a compact_boundary
    whose logical parent is not in the file starts a new root)."""
    chain: list[Record] = []
    seen: set[str] = set()
    new_roots: list[int] = []
    cur = last
    while True:
        line, r = cur
        if r["uuid"] in seen:
            raise SessionError(f"{path}:{line}: parentUuid loops back to record {r['uuid']}; "
                               "the main thread cannot be followed")
        seen.add(r["uuid"])
        chain.append(cur)
        parent = r.get("parentUuid")
        if parent is None and r.get("subtype") == "compact_boundary":
            logical = r.get("logicalParentUuid")
            if logical in seen:
                break  # a partial compaction's relinked segment: already on the thread
            if logical not in by_uuid:
                new_roots.append(line)  # what came before is not in this file
                break
            parent = logical  # stitch the history across the boundary
        if parent is None:
            break
        if parent not in by_uuid:
            raise SessionError(f"{path}:{line}: parentUuid {parent} names no record of this "
                               "file; the main thread is broken there (a record lost from "
                               "the file); a session file whose chain is whole is needed")
        cur = by_uuid[parent]
    return list(reversed(chain)), new_roots


def _first(by_uuid: dict[str, Record], r: dict[str, Any]) -> bool:
    """Whether r is the record its uuid names (a later copy of a uuid is read once)."""
    u = r.get("uuid")
    return u is not None and by_uuid.get(u, (0, None))[1] is r


def _with_parallel(chain: list[Record], records: list[Record], by_uuid: dict[str, Record]
                   ) -> list[Record]:
    """The chain with what a parallel batch hangs off it, in file order: the assistant
    records of a reply on the chain (the same message.id), then every tool_result
    answering a tool_use of the thread."""
    on = {r["uuid"] for _, r in chain}
    replies = {(r.get("message") or {}).get("id") for _, r in chain
               if r.get("type") == "assistant"} - {None}
    added: list[Record] = []

    def candidates(kind: str) -> list[Record]:
        return [(line, r) for line, r in records if r.get("type") == kind
                and not r.get("isSidechain") and r["uuid"] not in on and _first(by_uuid, r)]

    for line, r in candidates("assistant"):
        if (r.get("message") or {}).get("id") in replies:
            added.append((line, r))
            on.add(r["uuid"])
    calls = {b.get("id") for _, r in chain + added if r.get("type") == "assistant"
             for b in _blocks(r) if b.get("type") == "tool_use"}
    for line, r in candidates("user"):
        if any(b.get("type") == "tool_result" and b.get("tool_use_id") in calls
               for b in _blocks(r)):
            added.append((line, r))
            on.add(r["uuid"])
    return sorted(chain + added, key=lambda x: x[0])


def _root_of(u: str, by_uuid: dict[str, Record]) -> str:
    seen = set()
    while u not in seen:
        seen.add(u)
        parent = by_uuid[u][1].get("parentUuid")
        if parent is None or parent not in by_uuid:
            return u
        u = parent
    return u


def _second_root(path: Path, records: list[Record], by_uuid: dict[str, Record],
                 thread: list[Record], new_roots: list[int]) -> None:
    """Refuse a file holding a second conversation: a root (parentUuid null, not a
    compact_boundary, not a subagent's) whose messages are not on the thread, after the
    last new root (before one, the history is unknown anyway)."""
    on = {r["uuid"] for _, r in thread}
    since = max(new_roots, default=0)
    hanging = Counter(_root_of(r["uuid"], by_uuid) for line, r in records
                      if r.get("type") in CONVERSATION and not r.get("isSidechain")
                      and not r.get("isCompactSummary") and r["uuid"] not in on
                      and _first(by_uuid, r) and line > since)
    start = thread[0][0]
    for root, n in hanging.items():
        line, r = by_uuid[root]
        if (r.get("parentUuid") is None and root not in on
                and r.get("subtype") != "compact_boundary"):
            raise SessionError(
                f"{path}:{line}: a second root: this {r['type']} record's parentUuid is null "
                f"and it is not on the main thread (followed back from line {thread[-1][0]}, "
                f"the thread starts at line {start}), so its {n} user/assistant records "
                "would be left out; a session file holds one conversation: split the file "
                f"at line {line}, one scenario each")


def _progress_text(r: dict[str, Any]) -> str:
    """A subagent's message as its progress record carries it (Claude Code 2.1)."""
    data = r.get("data")
    inner = data.get("message") if isinstance(data, dict) else None
    if not (isinstance(inner, dict) and inner.get("type") in CONVERSATION
            and isinstance(inner.get("message"), dict)):
        return ""
    return "\n".join(render_message(m) for m in _record_messages(inner, 0, True))


def _thread_messages(thread: list[Record], include_thinking: bool, left: Counter[str]
                     ) -> tuple[list[Message], list[str], int]:
    messages: list[Message] = []
    summaries: list[str] = []
    boundaries = 0
    last_id = None
    for line, r in thread:
        kind = r.get("type")
        if kind not in CONVERSATION:
            boundaries += r.get("subtype") == "compact_boundary"
            continue  # progress, snapshots, system notes: walked through, not conversation
        if r.get("isCompactSummary"):
            summaries.append(_block_text((r.get("message") or {}).get("content")))
            continue
        if r.get("isMeta"):
            left["meta"] += 1  # text the tool injected (caveats, command output)
            continue
        msg_id = (r.get("message") or {}).get("id")
        new = _record_messages(r, line, include_thinking)
        if (kind == "assistant" and msg_id and msg_id == last_id and new and messages
                and messages[-1].role == "assistant"):
            messages[-1] = _merge(messages[-1], new[0])
            new = new[1:]
        messages += new
        last_id = msg_id if kind == "assistant" else None
    return messages, summaries, boundaries


def read_claude_code(path: Path, records: list[Record], include_thinking: bool
                     ) -> Transcript:
    for line, r in records:
        _claude_shape(path, line, r)
    left: Counter[str] = Counter()
    by_uuid: dict[str, Record] = {}
    for line, r in records:
        if (u := r.get("uuid")) is not None:
            if u in by_uuid:
                left["duplicate"] += 1  # a record written again (kept once, where first)
            else:
                by_uuid[u] = (line, r)
    chain, new_roots = _main_chain(path, by_uuid, _last_message(path, records))
    thread = _with_parallel(chain, records, by_uuid)
    _second_root(path, records, by_uuid, thread, new_roots)
    messages, summaries, boundaries = _thread_messages(thread, include_thinking, left)
    on = {r["uuid"] for _, r in thread}
    off, sub, more, before = [], [], [], []
    since = max(new_roots, default=0)
    for line, r in records:
        kind = r.get("type")
        if kind == "progress":
            if text := _progress_text(r):
                sub.append(text)
        if kind == "system" and r.get("subtype") == "compact_boundary" and r.get(
                "uuid") not in on and _preserved_head(r) in on:
            boundaries += 1  # a partial compaction: its preserved messages are on the thread
        if kind not in CONVERSATION:
            left[str(kind or "untyped")] += 1
            continue
        if r["uuid"] in on or not _first(by_uuid, r):
            continue
        if r.get("isCompactSummary"):  # a compaction on another branch: still the carry
            more.append(_block_text((r.get("message") or {}).get("content")))
            continue
        text = "\n".join(render_message(m) for m in _record_messages(r, line, True))
        if r.get("isSidechain"):
            sub.append(text)
            left["subagent"] += 1
        elif line < since:
            before.append(text)
            left["before_new_root"] += 1
        else:
            off.append(text)
            left["side_branch"] += 1
    summaries += [s for s in more if s not in summaries]
    return Transcript(str(path), "claude-code", tuple(messages), tuple(summaries),
                      tuple(off), boundaries, subagent=tuple(sub), new_roots=tuple(new_roots),
                      left_out=counted(left), before_root=tuple(before))


def _preserved_head(r: dict[str, Any]) -> str | None:
    meta = r.get("compactMetadata")
    seg = meta.get("preservedSegment") if isinstance(meta, dict) else None
    return seg.get("headUuid") if isinstance(seg, dict) else None


# -- codex -------------------------------------------------------------------------------------

# User messages the CLI writes itself at the start of a session: the environment and the
# repository's instructions (AGENTS.md), not anything the user said.
CODEX_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
CODEX_CALLS = {"function_call": "arguments", "custom_tool_call": "input",
               "local_shell_call": "action"}
CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _codex_output(value: Any, at: str) -> str:
    expect(value, (str, list, dict, NULL), at, "payload.output",
           "the tool's output as a string or content items")
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return parts_text(value, at, "payload.output")


def _reasoning_text(p: dict[str, Any], at: str) -> str:
    parts = [x.get("text", "") for key in ("summary", "content")
             for x in expect(p.get(key), (list, NULL), at, f"payload.{key}",
                             "a list of reasoning parts {type, text}, or null") or []
             if isinstance(x, dict)]
    return "\n".join(str(t) for t in parts if t)


def _codex_item(path: Path, line: int, p: dict[str, Any], out: list[Message],
                thinking: list[str], left: Counter[str]) -> None:
    """One response_item onto the thread. `thinking`: the reasoning read since the last
    assistant message (kept only with include_thinking), given to the next one."""
    at = f"{path}:{line}"
    kind = expect(p.get("type"), (str,), at, "payload.type", "a response item's type")
    if kind == "message":
        role = expect(p.get("role"), (str,), at, "payload.role", "user, assistant or developer")
        text = parts_text(p.get("content"), at, "payload.content")
        if role in ("developer", "system") or (
                role == "user" and text.lstrip().startswith(CODEX_INJECTED)):
            left["instructions"] += 1  # what the CLI tells the agent, not the conversation
            return
        if role not in CONVERSATION:
            raise SessionError(f"{at}: payload.role {role!r} is not a Codex message role "
                               "(user, assistant, developer)")
        said = "\n".join(thinking) if role == "assistant" else ""
        out.append(Message(role, text, (), said, line))
        if role == "assistant":
            thinking.clear()
    elif kind in CODEX_CALLS:
        name = expect(p.get("name", "shell"), (str,), at, "payload.name", "the tool's name")
        expect(p.get("call_id", ""), (str,), at, "payload.call_id", "the call's id")
        call = ToolCall(name, arguments_text(p.get(CODEX_CALLS[kind])))
        if out and out[-1].role == "assistant":
            prev = out[-1]
            out[-1] = Message(prev.role, prev.text, prev.tool_calls + (call,), prev.thinking,
                              prev.line)
        else:
            out.append(Message("assistant", "", (call,), "\n".join(thinking), line))
            thinking.clear()
    elif kind in CODEX_OUTPUTS:
        expect(p.get("call_id", ""), (str,), at, "payload.call_id", "the id of its call")
        out.append(Message("tool", _codex_output(p.get("output"), at), line=line))
    elif kind == "reasoning":
        thinking.append(_reasoning_text(p, at))
    else:
        left[kind] += 1  # ghost snapshots, web search calls: not what a fold reads


def _replacement_summary(p: dict[str, Any], at: str) -> str:
    """A `compacted` record without a message: the summary is the last message of the
    history that replaced the old one (newer Codex versions)."""
    items = [x for x in p.get("replacement_history") or []
             if isinstance(x, dict) and x.get("type") == "message"]
    return parts_text(items[-1].get("content"), at, "payload.replacement_history") if items \
        else ""


def read_codex(path: Path, records: list[Record], include_thinking: bool) -> Transcript:
    out: list[Message] = []
    summaries: list[str] = []
    left: Counter[str] = Counter()
    thinking: list[str] = []
    for line, r in records:
        at = f"{path}:{line}"
        kind = expect(r.get("type"), (str,), at, "type", "a rollout line's type")
        p = expect(r.get("payload"), (dict,), at, "payload", "a rollout line's payload")
        if kind == "response_item":
            _codex_item(path, line, p, out, thinking, left)
            if thinking and not include_thinking:
                left["reasoning"] += len(thinking)  # the agent's reasoning: out by default
                thinking.clear()
        elif kind == "compacted":
            expect(p.get("message", ""), (str, NULL), at, "payload.message",
                   "the CLI's compaction summary")
            expect(p.get("replacement_history"), (list, NULL), at,
                   "payload.replacement_history", "the history that replaced the old one")
            summaries.append(p.get("message") or _replacement_summary(p, at))
        else:
            left[kind] += 1  # session_meta, turn_context; event_msg repeats the items
    return Transcript(str(path), "codex", tuple(out), tuple(summaries),
                      compactions=len(summaries), left_out=counted(left))


# -- gemini -------------------------------------------------------------------------------------


def _gemini_result(call: dict[str, Any]) -> str:
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


def _gemini_message(path: Path, i: int, m: Any, include_thinking: bool) -> list[Message]:
    at = f"{path}: messages[{i}]"
    expect(m, (dict,), at, "the message", "an object {id, type, content}")
    kind = expect(m.get("type"), (str,), at, "type", "user, gemini, info, error or warning")
    text = parts_text(m.get("content"), at)
    if kind == "user":
        return [Message("user", text, line=i + 1)]
    calls, results = [], []
    for j, c in enumerate(expect(m.get("toolCalls") or [], (list,), at, "toolCalls",
                                 "a list of tool calls")):
        expect(c, (dict,), at, f"toolCalls[{j}]", "a call {id, name, args, result, status}")
        name = expect(c.get("name", ""), (str,), at, f"toolCalls[{j}].name", "the tool's name")
        expect(c.get("args") or {}, (dict,), at, f"toolCalls[{j}].args", "the call's arguments")
        expect(c.get("result"), (list, NULL), at, f"toolCalls[{j}].result",
               "a list of parts (functionResponse)")
        calls.append(ToolCall(name, arguments_text(c.get("args") or {})))
        results.append(Message("tool", _gemini_result(c), line=i + 1))
    thoughts = expect(m.get("thoughts") or [], (list,), at, "thoughts", "a list of thoughts")
    thinking = "\n".join(f"{t.get('subject', '')}: {t.get('description', '')}".strip(": ")
                         for t in thoughts if isinstance(t, dict)) if include_thinking else ""
    return [Message("assistant", text, tuple(calls), thinking, i + 1), *results]


def read_gemini(path: Path, doc: dict[str, Any], include_thinking: bool) -> Transcript:
    msgs = expect(doc.get("messages"), (list,), str(path), "messages",
                  "a Gemini CLI chat holds its messages as a list")
    out: list[Message] = []
    left: Counter[str] = Counter()
    for i, m in enumerate(msgs):
        if isinstance(m, dict) and m.get("type") not in ("user", "gemini"):
            left[str(m.get("type"))] += 1  # the CLI's info / error / warning notes
            continue
        out += _gemini_message(path, i, m, include_thinking)
    if not out:
        raise SessionError(f"{path}: no user or gemini message; a Gemini CLI chat holds the "
                           "conversation in messages[]")
    return Transcript(str(path), "gemini", tuple(out), left_out=counted(left))
