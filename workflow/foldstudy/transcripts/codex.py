"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`),
0.39 to 0.15x.

Shapes learned from rollouts Codex CLI writes (`codex-rs/protocol` RolloutLine /
ResponseItem, `codex-rs/rollout` recorder) and public threads: openai/codex #27016 (remote
compaction: `compacted.payload.message` empty, the summary encrypted in
`replacement_history`), Codex 0.146's paginated threads (`session_meta.payload.history_base`
`{thread_id, end_ordinal_exclusive, end_byte_offset}`: a fork holds only its own records
and inherits its parent's by reference), and rollouts compressed in place when idle
(`rollout-*.jsonl.zst`).

Records are `{timestamp, type, payload}` in the order the agent saw them. `session_meta`
and `turn_context` are not content; `response_item` records are the thread (messages,
function calls and their outputs, reasoning only with include_thinking); `event_msg`
records repeat them and are not read twice; `compacted` carries the CLI's own summary,
the baseline.

Repaired and counted (`Transcript.repaired`): a tool output stored as a JSON string
`{"output": ..., "metadata": {"exit_code": ...}}` (Codex 0.39's `shell`, 0.60's
`apply_patch`) is read as its output text, a non-zero exit code kept, the metadata dropped
(`json_output`). A fork's prefix is read from the rollout of its `history_base` thread in
the same sessions tree, cut where the base says (`end_byte_offset`, else the lines'
`ordinal`, else a line count) (`fork_prefix`). Outputs pair with their calls by
`call_id`; an output whose call is not in the file is kept where the agent saw it and its
line noted (`Transcript.orphan_outputs`). An encrypted compaction is counted as opaque
and no other text stands in for its summary.

Two vocabularies, both read (`Transcript.vocabulary` names the one found): before 0.148 a
user's text is written twice, as `event_msg/user_message` and as a `response_item`
message; 0.148 and later write it only as the `response_item` message and add top-level
`world_state`, `inter_agent_communication` and `token_usage_record` lines (the state the
CLI keeps and the delivery records, counted, not read) and `agent_message` response items
`{author, recipient, content}`: another agent's message the model read (a subagent's
answer delivered to the root agent), read as a user turn from that agent (`read_in`).
Third-party parsers that read only `event_msg` read 0 turns there (openai/codex#43593);
a rollout that yields no user or assistant message is refused in one line, never read as
empty.

A local compaction (`codex-rs/core/src/compact.rs`) builds the replacement history as
the initial context, the retained user messages, then the summary: a user message that
opens with Codex's SUMMARY_PREFIX ("Another language model started to solve this
problem ...", `is_summary_message`). Where `compacted.message` is empty and no item is
encrypted, that message is the summary; where no message opens so, the summary is absent
(`Transcript.absent_summaries`), and no retained user or developer message is graded in
its place.

A fork's parent is found by its exact thread id: the rollout named
`rollout-<time>-<thread id>.jsonl[.zst]` in the sessions tree holding the fork (or its
directory), never a pattern; a missing, empty or wildcard id and a cycle of forks are
refused naming the file and line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import (
    CONVERSATION,
    NULL,
    Message,
    ReadOptions,
    Record,
    SessionError,
    Source,
    ToolCall,
    Transcript,
    arguments_text,
    check_file,
    counted,
    expect,
    json_lines,
    parts_text,
    read_text,
)

TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted",
         # 0.148 and later: the CLI's own state and delivery records (counted, not read)
         "world_state", "inter_agent_communication", "inter_agent_communication_metadata",
         "token_usage_record", "realtime_item", "security_risk_score")
# Transcript.vocabulary: which of the two the rollout was written in
OLD_VOCABULARY = "event_msg/user_message beside response items (Codex CLI before 0.148)"
NEW_VOCABULARY = "response items only (Codex CLI 0.148 and later)"
# The opening of the summary message a local compaction writes (codex-rs/core/templates/
# compact/summary_prefix.md): what `is_summary_message` tests
SUMMARY_PREFIX = "Another language model started to solve this problem"
# A thread id, as Codex names rollouts by it (a UUID); anything else is no id to look up
THREAD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*\Z")
ROLLOUT_NAME = re.compile(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)\.jsonl(?:\.zst)?\Z")
# User messages the CLI writes itself at the start of a session: the environment and the
# repository's instructions (AGENTS.md), not anything the user said.
INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
CALLS = {"function_call": "arguments", "custom_tool_call": "input",
         "local_shell_call": "action"}
OUTPUTS = ("function_call_output", "custom_tool_call_output")
# the item of a remote compaction's replacement_history that holds the summary, encrypted
ENCRYPTED = ("compaction", "compaction_summary")


@dataclass
class _Thread:
    """What the rollout's lines build up, a fork's parent prefix first."""

    out: list[Message] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    left: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)
    thinking: list[str] = field(default_factory=list)  # since the last assistant message
    calls: set[str] = field(default_factory=set)
    orphans: list[int] = field(default_factory=list)
    opaque: int = 0
    absent: int = 0  # compactions with no summary to be found
    read_in: Counter[str] = field(default_factory=Counter)
    old_vocabulary: bool = False  # an event_msg/user_message was seen
    # (parent rollout, its last inherited line): the files a fork's history came from,
    # the outermost ancestor first
    inherited: list[tuple[str, int]] = field(default_factory=list)


class Codex(Source):
    format = "codex"
    title = "Codex CLI rollout"
    shape = "JSONL records {timestamp, type, payload} (Codex CLI rollout)"

    def looks(self, record: dict[str, Any]) -> bool:
        return record.get("type") in TYPES and isinstance(record.get("payload"), dict)

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        t = _Thread()
        _lineage(path, records, opts, t, [])
        if not any(m.role in CONVERSATION for m in t.out):
            kinds = ", ".join(f"{n} {k}" for k, n in counted(t.left)) or "nothing"
            raise SessionError(
                f"{path}: no turn read: no user or assistant message in either vocabulary "
                f"({OLD_VOCABULARY}; {NEW_VOCABULARY}); the rollout holds {kinds}; point "
                "`transcript` at the rollout of a session that ran a turn")
        return Transcript(str(path), self.format, tuple(t.out), tuple(t.summaries),
                          compactions=len(t.summaries) + t.opaque + t.absent,
                          left_out=counted(t.left), repaired=counted(t.repaired),
                          orphan_outputs=tuple(t.orphans), opaque_compactions=t.opaque,
                          inherited=tuple(t.inherited), read_in=counted(t.read_in),
                          vocabulary=OLD_VOCABULARY if t.old_vocabulary else NEW_VOCABULARY,
                          absent_summaries=t.absent)


# -- a fork's parent prefix ---------------------------------------------------------------------


def _lineage(path: Path, records: list[Record], opts: ReadOptions, t: _Thread,
             threads: list[tuple[str, Path]]) -> None:
    """The rollout onto the thread, its history_base's prefix first (a parent's own base
    before it); `threads`: the (thread id, rollout) read so far, a cycle refused whether
    the ids or the files repeat (a rollout whose session_meta names no id)."""
    line, meta = next(((n, r["payload"]) for n, r in records if r.get("type") == "session_meta"
                       and isinstance(r.get("payload"), dict)), (0, {}))
    base = meta.get("history_base")
    me = meta.get("id")
    if base is not None:
        at = f"{path}:{line}"
        key = "session_meta.payload.history_base.thread_id"
        expect(base, (dict,), at, "session_meta.payload.history_base",
               "{thread_id, end_ordinal_exclusive, end_byte_offset}")
        tid = base.get("thread_id")
        if not isinstance(tid, str) or not THREAD_ID.match(tid):
            said = "missing" if tid is None else f"{json.dumps(tid, ensure_ascii=False)}"
            raise SessionError(
                f"{at}: {key} is {said}, not a thread id (letters, digits, '-' and '_', as "
                "Codex names its threads); a fork names its parent thread exactly, never "
                "empty or a pattern")
        chain = [*threads, (str(me or path.name), path.resolve())]
        parent = _parent_rollout(path, at, tid)
        if tid in (i for i, _ in chain) or parent.resolve() in (f for _, f in chain):
            names = " -> ".join([*(i for i, _ in chain), tid])
            raise SessionError(f"{at}: {key} {tid}: a cycle of forks ({names}); a fork's "
                               "base is an earlier thread")
        text = read_text(check_file(parent, f"{at}: history_base", opts.max_mb), opts.max_mb)
        prefix = _cut(parent, text, json_lines(parent, text), base, at)
        _lineage(parent, prefix, opts, t, chain)
        t.inherited.append((str(parent), max((n for n, _ in prefix), default=0)))
        t.repaired["fork_prefix"] += 1
    for n, r in records:
        _line(path, n, r, opts, t)


def _parent_rollout(path: Path, at: str, tid: str) -> Path:
    """The rollout of thread `tid` (exactly: the id its file is named by) in the sessions
    tree holding `path`, or beside it where it lies in no such tree."""
    root = next((p for p in path.resolve().parents
                 if p.name in ("sessions", "archived_sessions")), path.resolve().parent)
    found = sorted(p for p in root.rglob("rollout-*.jsonl*")
                   if (m := ROLLOUT_NAME.match(p.name)) and m.group(1) == tid
                   and p.resolve() != path.resolve())
    if not found:
        raise SessionError(f"{at}: session_meta.payload.history_base.thread_id {tid}: no "
                           f"rollout of that thread under {root} (rollout-*-{tid}.jsonl or "
                           ".jsonl.zst); the fork inherits its history from it: put the "
                           "parent's rollout in the same sessions tree")
    return found[0]


def _cut(parent: Path, text: str, records: list[Record], base: dict[str, Any], at: str
         ) -> list[Record]:
    """The parent's records the fork inherits: up to `end_byte_offset` (whole lines),
    else those whose `ordinal` is below `end_ordinal_exclusive`, else that many lines."""
    offset, end = base.get("end_byte_offset"), base.get("end_ordinal_exclusive")
    for key, v in (("end_byte_offset", offset), ("end_ordinal_exclusive", end)):
        if expect(v, (int, NULL), at, f"session_meta.payload.history_base.{key}",
                  "a count of the parent's bytes or records") is not None and v < 0:
            raise SessionError(f"{at}: session_meta.payload.history_base.{key} is {v}, "
                               "below 0; a count of the parent's bytes or records")
    if offset is not None:
        last = text.encode("utf-8")[:offset].count(b"\n")
        return [(n, r) for n, r in records if n <= last]
    if end is None:
        return records
    if any("ordinal" in r for _, r in records):
        return [(n, r) for n, r in records
                if isinstance(r.get("ordinal"), int) and r["ordinal"] < end]
    return [(n, r) for n, r in records if n <= end]


# -- the lines ------------------------------------------------------------------------------


def _line(path: Path, line: int, r: dict[str, Any], opts: ReadOptions, t: _Thread) -> None:
    at = f"{path}:{line}"
    kind = expect(r.get("type"), (str,), at, "type", "a rollout line's type")
    p = expect(r.get("payload"), (dict,), at, "payload", "a rollout line's payload")
    if kind == "response_item":
        _item(path, line, p, t)
        if t.thinking and not opts.include_thinking:
            t.left["reasoning"] += len(t.thinking)  # the agent's reasoning: out by default
            t.thinking.clear()
    elif kind == "compacted":
        expect(p.get("message", ""), (str, NULL), at, "payload.message",
               "the CLI's compaction summary")
        expect(p.get("replacement_history"), (list, NULL), at,
               "payload.replacement_history", "the history that replaced the old one")
        if p.get("message"):
            t.summaries.append(p["message"])
        elif _encrypted(p):
            t.opaque += 1  # the summary is there, but not as text: nothing stands in for it
        elif (summary := _replacement_summary(p, at)) is not None:
            t.summaries.append(summary)
        else:
            t.absent += 1  # no summary in the history: none is graded in its place
    else:
        if kind == "event_msg" and p.get("type") == "user_message":
            t.old_vocabulary = True
        t.left[kind] += 1  # session_meta, turn_context; event_msg repeats the items


def _item(path: Path, line: int, p: dict[str, Any], t: _Thread) -> None:
    """One response_item onto the thread; the reasoning read since the last assistant
    message goes to the next one."""
    at = f"{path}:{line}"
    kind = expect(p.get("type"), (str,), at, "payload.type", "a response item's type")
    if kind == "message":
        _message(at, line, p, t)
    elif kind in CALLS:
        name = expect(p.get("name", "shell"), (str,), at, "payload.name", "the tool's name")
        t.calls.add(expect(p.get("call_id", ""), (str,), at, "payload.call_id",
                           "the call's id"))
        call = ToolCall(name, arguments_text(p.get(CALLS[kind])))
        if t.out and t.out[-1].role == "assistant":
            prev = t.out[-1]
            t.out[-1] = Message(prev.role, prev.text, prev.tool_calls + (call,),
                                prev.thinking, prev.line)
        else:
            t.out.append(Message("assistant", "", (call,), "\n".join(t.thinking), line))
            t.thinking.clear()
    elif kind in OUTPUTS:
        call_id = expect(p.get("call_id", ""), (str,), at, "payload.call_id",
                         "the id of its call")
        if call_id not in t.calls:
            t.orphans.append(line)  # its call is not in the file: kept as the agent saw it
        t.out.append(Message("tool", _output(p.get("output"), at, t.repaired), line=line))
    elif kind == "reasoning":
        t.thinking.append(_reasoning_text(p, at))
    elif kind == "agent_message":
        t.out.append(Message("user", _agent_message(p, at), line=line))
        t.read_in["agent_message"] += 1
    else:
        t.left[kind] += 1  # ghost snapshots, web search calls: not what a fold reads


def _message(at: str, line: int, p: dict[str, Any], t: _Thread) -> None:
    role = expect(p.get("role"), (str,), at, "payload.role", "user, assistant or developer")
    text = parts_text(p.get("content"), at, "payload.content")
    if role in ("developer", "system") or (
            role == "user" and text.lstrip().startswith(INJECTED)):
        t.left["instructions"] += 1  # what the CLI tells the agent, not the conversation
        return
    if role not in CONVERSATION:
        raise SessionError(f"{at}: payload.role {role!r} is not a Codex message role "
                           "(user, assistant, developer)")
    said = "\n".join(t.thinking) if role == "assistant" else ""
    t.out.append(Message(role, text, (), said, line))
    if role == "assistant":
        t.thinking.clear()


def _output(value: Any, at: str, repaired: Counter[str]) -> str:
    """A tool's output as the agent read it: a JSON string (or object) with an `output`
    field is that text, with its exit code when the command failed (a zero is the norm
    and says nothing a fold needs; the rest of the metadata is dropped)."""
    expect(value, (str, list, dict, NULL), at, "payload.output",
           "the tool's output as a string or content items")
    wrapped = value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            wrapped = json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
        repaired["json_output"] += 1
        meta = wrapped.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
        return wrapped["output"] + (f"\n(exit code {code})" if failed else "")
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return parts_text(value, at, "payload.output")


def _reasoning_text(p: dict[str, Any], at: str) -> str:
    parts = [x.get("text", "") for key in ("summary", "content")
             for x in expect(p.get(key), (list, NULL), at, f"payload.{key}",
                             "a list of reasoning parts {type, text}, or null") or []
             if isinstance(x, dict)]
    return "\n".join(str(t) for t in parts if t)


def _encrypted(p: dict[str, Any]) -> bool:
    """A remote compaction: the summary is an encrypted item of the replacement history."""
    return any(isinstance(x, dict) and x.get("type") in ENCRYPTED and x.get("encrypted_content")
               for x in p.get("replacement_history") or [])


def _replacement_summary(p: dict[str, Any], at: str) -> str | None:
    """A `compacted` record without a message or an encrypted item: the summary is the
    message of the replacement history that opens with Codex's SUMMARY_PREFIX (a local
    compaction writes it after the retained user messages); None where no message does
    (a retained user's or developer's message is never the summary)."""
    texts = [parts_text(x.get("content"), at, f"payload.replacement_history[{i}].content")
             for i, x in enumerate(p.get("replacement_history") or [])
             if isinstance(x, dict) and x.get("type") == "message"]
    return next((s for s in reversed(texts) if s.lstrip().startswith(SUMMARY_PREFIX)), None)


def _agent_message(p: dict[str, Any], at: str) -> str:
    """Another agent's message as the model read it (0.148 and later), with who wrote it
    and to whom."""
    who = {k: expect(p.get(k, ""), (str, NULL), at, f"payload.{k}",
                     "an agent's path (/root, /root/worker)") or "?"
           for k in ("author", "recipient")}
    text = parts_text(p.get("content"), at, "payload.content")
    return f"(message from agent {who['author']} to {who['recipient']})\n{text}"
