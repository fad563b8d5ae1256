"""Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`), 2.0 and 2.1.

Shapes learned from files Claude Code 2.0.x and 2.1.x write, the Agent SDK's transcript
types, and public bug threads: anthropics/claude-code #58554, #22526 and #22107, and
claude-agent-sdk-typescript #287 (a parentUuid naming a record the CLI never persisted:
an API retry, a system injection, hook output), #92089 (a second /compact in one process
re-appends the history before the first under its original uuids) and #66947 (history
re-written with the same uuids after repeated compaction).

The main thread is the parentUuid chain followed back from the last user or assistant
message, plus what a parallel batch of tool calls hangs off it (each tool_use is a record
of its own and each tool_result's parent is its own tool_use record, so the chain keeps
only the last of each batch): the batch's sibling records (the same message.id) and every
tool_result answering a tool_use on the thread, in file order. Progress,
file-history-snapshot, queue-operation and system records are walked through and left
out. A compact_boundary is stitched to its logicalParentUuid. Side branches (abandoned
forks) and subagents (isSidechain records, agent progress; their own files in
`<session>/subagents/` are never read) stay out, counted by kind.

Repaired, never refused, and counted (`Transcript.repaired`): the file order is the CLI's
write order, and every intact link points at a record written before it, so
- a parentUuid naming no record of the file joins the main-thread record written just
  before it (`parent`; with none before it, the thread starts there: `parent_at_start`);
- a compact_boundary whose logicalParentUuid names no record joins the last main-thread
  record before the boundary (`logical_parent`), so the history before the compaction
  stays on the thread; one with no record before it starts a new root (`new_roots`);
- a record written again under a uuid already seen is read once, where first written; a
  link to a copy written again after a compaction (a partial compaction's preserved
  segment, a later /compact's re-appended history) joins the record written just before
  the copies, so the continuation follows what came before them (`reappended`).
`compactMetadata.preservedSegment` and `.preservedMessages` both mark a partial
compaction. Only a cycle of links is refused.

What the CLI adds to the model's context outside the user's and the agent's messages is
read where the model received it (`Transcript.read_in`, by kind), learned from the CLI's
message construction as public parsers describe it (claude-code-log, agent-sessions;
anthropics/claude-code #1050 for the caveat) and from 2.1.x files:
- `attachment` records (2.1.x) whose content reaches the model as a user turn: `file`
  (the text of an @-mentioned file), `queued_command` (a prompt typed while the agent
  worked, or a message from an agent-team member), `edited_text_file` (the lines of a
  file the user changed), `directory` (an @-mentioned directory's listing) and
  `selected_lines_in_ide`. Every other kind (`plan_mode`, `todo_reminder`,
  `task_reminder`, `skill_listing`, hook and listing deltas, ...) is the CLI's own
  reminder or bookkeeping: counted by kind (`attachment:<kind>`), not read. An
  attachment written inside a tool run (after a tool_use, before its result) is read
  after the results, as the model received it.
- `isMeta` user messages: the local-command caveat, a `!` command's output, an expanded
  slash command. The CLI sends them to the model as user turns (the caveat is addressed
  to the model), so they are read as such (`meta`).
"""

from __future__ import annotations

from bisect import bisect_left
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
    counted,
    expect,
    render_message,
)

META_TYPES = ("summary", "file-history-snapshot", "queue-operation", "custom-title",
              "progress", "attachment")


# -- claude-code: attachments the model reads -----------------------------------------------


def _text_of(value: Any) -> str:
    """An attachment's text field: a string, a list of content blocks, or an object
    holding the text (`{type: "text", file: {content}}`, as a Read result is stored)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _block_text(value)
    if isinstance(value, dict):
        inner = value.get("file") if isinstance(value.get("file"), dict) else value
        for key in ("content", "text"):
            if isinstance(inner.get(key), (str, list)):
                return _text_of(inner[key])
    return ""


def _name(a: dict[str, Any]) -> str:
    return str(a.get("displayPath") or a.get("filename") or a.get("path") or "")


def _file(a: dict[str, Any]) -> str:
    return f"(attached file {_name(a)})\n{_text_of(a.get('content'))}"


def _queued(a: dict[str, Any]) -> str:
    return _text_of(a.get("prompt"))


def _edited(a: dict[str, Any]) -> str:
    return f"(the user changed {_name(a)}; the lines around the change)\n" + _text_of(
        a.get("snippet"))


def _directory(a: dict[str, Any]) -> str:
    return f"(attached directory {_name(a)})\n{_text_of(a.get('content'))}"


def _selection(a: dict[str, Any]) -> str:
    return f"(lines selected in {_name(a)})\n{_text_of(a.get('content'))}"


# The attachment kinds whose content the model receives as a user turn, and how each
# reads (module docstring); every other kind is counted, not read.
READ_ATTACHMENTS = {"file": _file, "queued_command": _queued, "edited_text_file": _edited,
                    "directory": _directory, "selected_lines_in_ide": _selection}


def _attachment_kind(r: dict[str, Any]) -> str:
    a = r.get("attachment")
    return str(a.get("type") or "untyped") if isinstance(a, dict) else "untyped"


def _attachment_message(r: dict[str, Any], line: int) -> Message | None:
    """An attachment record as the user turn the model received, or None (a kind the
    model reads as the CLI's own reminder, or one with no text)."""
    read = READ_ATTACHMENTS.get(_attachment_kind(r))
    text = read(r["attachment"]).strip() if read else ""
    return Message("user", text, line=line) if text else None


# -- claude-code: shapes --------------------------------------------------------------------


def _claude_shape(path: Path, line: int, r: dict[str, Any]) -> None:
    at = f"{path}:{line}"
    if "uuid" in r:
        expect(r["uuid"], (str,), at, "uuid", "a record's id is a string")
    for key in ("parentUuid", "logicalParentUuid"):
        if key in r:
            expect(r[key], (str, NULL), at, key, "the uuid of another record, or null")
    if r.get("type") == "attachment" and "attachment" in r:
        expect(r["attachment"], (dict,), at, "attachment",
               "an attachment record holds {type, ...} as an object")
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


@dataclass
class _Links:
    """Each main-thread record's parent as the thread follows it: the file's link where it
    names a record of the file, else the repair (module docstring), counted by kind."""

    parent: dict[str, str | None] = field(default_factory=dict)
    stitched: set[str] = field(default_factory=set)  # boundaries linked across
    new_roots: dict[str, int] = field(default_factory=dict)  # boundary uuid -> its line
    joined: Counter[str] = field(default_factory=Counter)


def _links(records: list[Record], by_uuid: dict[str, Record]) -> _Links:
    main = [(line, r["uuid"]) for line, r in records
            if _first(by_uuid, r) and not r.get("isSidechain")]
    starts = [line for line, _ in main]
    copies: dict[str, list[int]] = {}
    for line, r in records:
        if (u := r.get("uuid")) is not None:
            copies.setdefault(u, []).append(line)
    boundaries = [line for line, r in records if r.get("subtype") == "compact_boundary"]

    def before(line: int) -> str | None:
        """The main-thread record written just before `line` (a first copy)."""
        i = bisect_left(starts, line) - 1
        return main[i][1] if i >= 0 else None

    def reappended(u: str, line: int) -> int | None:
        """The line of the copy of u that a link at `line` follows, when that copy was
        written again after a compaction (the first copy is before a boundary, the link's
        copy after it)."""
        seen = [n for n in copies[u] if n < line]
        if len(seen) < 2:
            return None
        first, last = seen[0], seen[-1]
        return last if any(first < b < last for b in boundaries) else None

    out = _Links()
    for line, u in main:
        r = by_uuid[u][1]
        p = r.get("parentUuid")
        if p is None and r.get("subtype") == "compact_boundary" and r.get("logicalParentUuid"):
            out.stitched.add(u)
            p = r["logicalParentUuid"]
            if p not in by_uuid:
                p = before(line)
                if p is None:
                    out.new_roots[u] = line  # nothing before it: what came before is unknown
                else:
                    out.joined["logical_parent"] += 1
        elif p is not None and p not in by_uuid:
            p = before(line)
            out.joined["parent" if p else "parent_at_start"] += 1
        if p is not None and (copy := reappended(p, line)) is not None:
            p = before(copy)
            out.joined["reappended"] += 1
        out.parent[u] = p
    return out


def _main_chain(path: Path, by_uuid: dict[str, Record], links: _Links, last: Record
                ) -> list[Record]:
    """The records from the root to the last message, by the repaired links."""
    chain: list[Record] = []
    seen: set[str] = set()
    u: str | None = last[1]["uuid"]
    while u is not None:
        line, r = by_uuid[u]
        if u in seen:
            raise SessionError(f"{path}:{line}: parentUuid loops back to record {u}; the "
                               "main thread cannot be followed (a cycle of links)")
        seen.add(u)
        chain.append((line, r))
        parent = links.parent.get(u)
        if u in links.stitched and parent in seen:
            break  # a partial compaction's relinked segment: already on the thread
        u = parent
    return list(reversed(chain))


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
    # an attachment or a meta message hanging off the thread (a prompt queued during a
    # parallel batch, a `!` command's output after the last reply): the model received it
    # there, though no later link follows it (file order: a parent before its children)
    for line, r in sorted(candidates("attachment") + [
            (n, x) for n, x in candidates("user") if x.get("isMeta")], key=lambda x: x[0]):
        if r.get("parentUuid") in on:
            added.append((line, r))
            on.add(r["uuid"])
    return sorted(chain + added, key=lambda x: x[0])


def _root_of(u: str, links: _Links) -> str:
    seen = set()
    while u not in seen:
        seen.add(u)
        parent = links.parent.get(u)
        if parent is None:
            return u
        u = parent
    return u


def _second_root(path: Path, records: list[Record], by_uuid: dict[str, Record],
                 links: _Links, thread: list[Record], new_roots: list[int]) -> None:
    """Refuse a file holding a second conversation: a root (parentUuid null, not a
    compact_boundary, not a subagent's) whose messages are not on the thread, after the
    last new root (before one, the history is unknown anyway)."""
    on = {r["uuid"] for _, r in thread}
    since = max(new_roots, default=0)
    hanging: dict[str, list[int]] = {}
    for line, r in records:
        if (r.get("type") in CONVERSATION and not r.get("isSidechain")
                and not r.get("isCompactSummary") and r["uuid"] not in on
                and _first(by_uuid, r) and line > since):
            hanging.setdefault(_root_of(r["uuid"], links), []).append(line)
    start, end = thread[0][0], thread[-1][0]
    for root, lines in hanging.items():
        line, r = by_uuid[root]
        if (r.get("parentUuid") is None and root not in on
                and r.get("subtype") != "compact_boundary"):
            raise SessionError(
                f"{path}:{line}: a second root: this {r['type']} record's parentUuid is null "
                f"and it is not on the main thread (followed back from line {end}, the "
                f"thread starts at line {start}), so its {len(lines)} user/assistant records "
                f"would be left out; a session file holds one conversation: "
                f"{_split_advice(min(line, *lines), max(lines), start, end)}")


def _split_advice(lo: int, hi: int, start: int, end: int) -> str:
    """Where to cut a file holding a second conversation (lines lo..hi) beside the main
    thread (start..end): at the first line of whichever comes later, or, where the two
    interleave, the word that no one cut separates them."""
    if hi < start:
        return (f"the other conversation is lines {lo}-{hi}, so split the file before "
                f"line {start}, one scenario each")
    if lo > end:
        return f"split the file before line {lo}, one scenario each"
    return (f"the other conversation's records (lines {lo}-{hi}) interleave with the main "
            f"thread's (lines {start}-{end}), so no single cut separates them; keep one "
            "conversation a file")


def _progress_text(r: dict[str, Any]) -> str:
    """A subagent's message as its progress record carries it (Claude Code 2.1)."""
    data = r.get("data")
    inner = data.get("message") if isinstance(data, dict) else None
    if not (isinstance(inner, dict) and inner.get("type") in CONVERSATION
            and isinstance(inner.get("message"), dict)):
        return ""
    return "\n".join(render_message(m) for m in _record_messages(inner, 0, True))


def _thread_messages(thread: list[Record], include_thinking: bool, read_in: Counter[str]
                     ) -> tuple[list[Message], list[str], int]:
    messages: list[Message] = []
    summaries: list[str] = []
    boundaries = 0
    last_id = None
    pending: set[str] = set()  # tool_use ids of the thread not answered yet
    held: list[Message] = []  # what the CLI added inside a tool run: read after its results
    for line, r in thread:
        kind = r.get("type")
        added: Message | None = None
        if kind == "attachment":
            added = _attachment_message(r, line)
            if added is None:
                continue  # a reminder or bookkeeping kind: counted by the caller
            read_in[f"attachment:{_attachment_kind(r)}"] += 1
        elif kind not in CONVERSATION:
            boundaries += r.get("subtype") == "compact_boundary"
            continue  # progress, snapshots, system notes: walked through, not conversation
        elif r.get("isCompactSummary"):
            summaries.append(_block_text((r.get("message") or {}).get("content")))
            continue
        elif r.get("isMeta"):
            # what the CLI sent the model as a user turn (a caveat, a `!` command's
            # output, an expanded slash command): read where it was sent
            read_in["meta"] += 1
            added = next(iter(_record_messages(r, line, include_thinking)), None)
            if added is None:
                continue
        if added is not None:
            if pending:
                held.append(added)
            else:
                messages.append(added)
                last_id = None
            continue
        blocks = _blocks(r)
        pending |= {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
        pending -= {str(b.get("tool_use_id")) for b in blocks
                    if b.get("type") == "tool_result"}
        if kind == "user" and not any(b.get("type") == "tool_result" for b in blocks):
            pending.clear()  # the user spoke: calls still unanswered never will be
        msg_id = (r.get("message") or {}).get("id")
        if held and kind == "assistant" and msg_id != last_id:
            messages += held  # a new reply: the model read what was held before it
            held = []
            last_id = None
        new = _record_messages(r, line, include_thinking)
        if (kind == "assistant" and msg_id and msg_id == last_id and new and messages
                and messages[-1].role == "assistant"):
            messages[-1] = _merge(messages[-1], new[0])
            new = new[1:]
        messages += new
        last_id = msg_id if kind == "assistant" else None
        if held and not pending:  # the tool run's results are in: then what it held
            messages += held
            held = []
            last_id = None
    return messages + held, summaries, boundaries


class ClaudeCode(Source):
    format = "claude-code"
    title = "Claude Code session file"
    shape = "JSONL records with uuid/parentUuid (Claude Code)"

    def looks(self, record: dict[str, Any]) -> bool:
        return ("uuid" in record or "parentUuid" in record
                or record.get("type") in META_TYPES)

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        return read_claude_code(path, records, opts.include_thinking)


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
    links = _links(records, by_uuid)
    chain = _main_chain(path, by_uuid, links, _last_message(path, records))
    new_roots = [line for line, r in chain if r["uuid"] in links.new_roots]
    thread = _with_parallel(chain, records, by_uuid)
    _second_root(path, records, by_uuid, links, thread, new_roots)
    read_in: Counter[str] = Counter()
    messages, summaries, boundaries = _thread_messages(thread, include_thinking, read_in)
    on = {r["uuid"] for _, r in thread}
    off, sub, more, before = [], [], [], []
    since = max(new_roots, default=0)
    for line, r in records:
        kind = r.get("type")
        if kind == "progress":
            if text := _progress_text(r):
                sub.append(text)
        if kind == "system" and r.get("subtype") == "compact_boundary" and r.get(
                "uuid") not in on and _preserved(r) & on:
            boundaries += 1  # a partial compaction: its preserved messages are on the thread
        if kind == "attachment":
            if r.get("uuid") not in on or _attachment_message(r, line) is None:
                left[f"attachment:{_attachment_kind(r)}"] += 1  # read_in counts the rest
            continue
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
                      left_out=counted(left), before_root=tuple(before),
                      repaired=counted(links.joined), subagent_files=_subagent_files(path),
                      read_in=counted(read_in))


def _preserved(r: dict[str, Any]) -> set[str]:
    """The uuids a partial compaction kept: `compactMetadata.preservedSegment` (head and
    tail) or, in newer files, `.preservedMessages` (its uuids)."""
    meta = r.get("compactMetadata")
    if not isinstance(meta, dict):
        return set()
    seg, kept = meta.get("preservedSegment"), meta.get("preservedMessages")
    out = {seg.get(k) for k in ("headUuid", "tailUuid")} if isinstance(seg, dict) else set()
    if isinstance(kept, dict):
        out |= {u for key in ("uuids", "allUuids")
                for u in (kept.get(key) if isinstance(kept.get(key), list) else [])}
    return {u for u in out if isinstance(u, str)}


def _subagent_files(path: Path) -> tuple[str, ...]:
    """The subagents' own files beside a session (`<session>/subagents/agent-<id>.jsonl`):
    never read (the main thread sees only the Task tool's result), counted."""
    d = path.with_suffix("") / "subagents"
    return tuple(str(p) for p in sorted(d.glob("agent-*.jsonl"))) if d.is_dir() else ()
