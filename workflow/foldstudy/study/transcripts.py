"""A user's own agent session, read the way its tool wrote it (issue 25; DESIGN §3 "Own
sessions"): the main thread as a list of messages, the tool's own compaction summaries
beside it, and what lies off the main thread.

Two formats:

- `messages`: OpenAI chat messages, one JSON object per line (`role` system / user /
  assistant / tool; `content` a string, a list of parts or null; `tool_calls` with
  `function.name` and `function.arguments`; `tool_call_id`). The file is the thread.
- `claude-code`: a Claude Code session file (`~/.claude/projects/<project>/<id>.jsonl`).
  Records carry `uuid` and `parentUuid`, so the file is a tree: the main thread is the
  chain followed back from the last message, side branches (`isSidechain`, abandoned
  forks) left out. A `compact_boundary` system record starts a new root; its
  `logicalParentUuid` names the message before it, and the thread is stitched across it.
  The user record marked `isCompactSummary` is the tool's carry, not conversation.

Paper §3.1: "Each fold receives the previous running summary and one chunk ... Nothing
re-reads the transcript": what a fold may see is the conversation itself, so everything
that is not conversation (the tool's own summary, its system notes, the agent's standing
system prompt) stays out of the thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import StudyError

FORMATS = ("claude-code", "messages")


class SessionError(StudyError, ValueError):
    """A transcript, facts file or session scenario the study cannot use; the message names
    the file (and line, key or fact) and what would be right."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # canonical JSON text of the call's input


@dataclass(frozen=True)
class Message:
    """One message of the main thread, in either format's terms."""

    role: str  # user | assistant | tool
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str = ""
    line: int = 0  # the transcript line it came from (the first, where merged)


@dataclass(frozen=True)
class Transcript:
    """What a transcript holds, sorted by where it belongs in the study."""

    path: str
    format: str
    messages: tuple[Message, ...]  # the main thread: what is folded
    compaction_summaries: tuple[str, ...] = ()  # the tool's own carry: the baseline
    off_thread: tuple[str, ...] = ()  # text of side branches and abandoned forks
    compactions: int = 0  # compact_boundary records crossed on the main thread
    lines: tuple[str, ...] = field(default=(), repr=False)  # the raw lines, for the scan


def arguments_text(value: Any) -> str:
    """A tool call's input as one canonical JSON text, whichever way the format stored it:
    Claude Code keeps an object, the chat format a JSON string (parsed when it parses, so
    the same call reads the same in both)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _json_lines(path: Path) -> tuple[list[tuple[int, Any]], list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SessionError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); a "
                           "transcript is a JSONL file") from e
    raw = text.splitlines()
    out = []
    for i, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            out.append((i, json.loads(line)))
        except json.JSONDecodeError as e:
            raise SessionError(f"{path}:{i}: not a JSON object ({e.msg} at column {e.colno}); "
                               "every line of a transcript is one JSON object") from e
        if not isinstance(out[-1][1], dict):
            raise SessionError(f"{path}:{i}: a JSON {type(out[-1][1]).__name__}, not an "
                               "object; every line of a transcript is one JSON object")
    if not out:
        raise SessionError(f"{path}: the transcript is empty (no JSON line); point "
                           "`transcript` at a session file")
    return out, raw


def detect_format(records: list[tuple[int, Any]], path: Path) -> str:
    """claude-code when records carry uuid/parentUuid or a Claude Code record type;
    messages when they carry a chat role; otherwise refused by name."""
    cc = sum(1 for _, r in records if "uuid" in r or "parentUuid" in r
             or r.get("type") in ("summary", "file-history-snapshot"))
    chat = sum(1 for _, r in records if r.get("role") in ("system", "user", "assistant", "tool")
               and "uuid" not in r)
    if cc and not chat:
        return "claude-code"
    if chat and not cc:
        return "messages"
    raise SessionError(
        f"{path}: the format cannot be detected ({cc} lines look like a Claude Code session, "
        f"{chat} like chat messages); set `format:` to one of {', '.join(FORMATS)}")


# -- messages (OpenAI chat) -----------------------------------------------------------


def _parts_text(content: Any) -> str:
    """A chat content: a string, null, or a list of parts (text kept, others named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text"):
                out.append(str(p.get("text", "")))
            elif isinstance(p, dict):
                out.append(f"[{p.get('type', 'part')}]")
        return "\n".join(out)
    return str(content)


def read_messages(path: Path, records: list[tuple[int, Any]], include_thinking: bool
                  ) -> list[Message]:
    out = []
    for line, r in records:
        role = r.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise SessionError(f"{path}:{line}: role {role!r} is not a chat role (system, "
                               "user, assistant, tool)")
        if role == "system":
            continue  # the agent's standing instructions, not history a fold takes in
        calls = []
        for c in r.get("tool_calls") or []:
            fn = (c or {}).get("function") or {}
            calls.append(ToolCall(str(fn.get("name", "")), arguments_text(fn.get("arguments"))))
        thinking = str(r.get("reasoning_content") or "") if include_thinking else ""
        out.append(Message(role, _parts_text(r.get("content")), tuple(calls), thinking, line))
    return out


# -- claude-code ------------------------------------------------------------------------

CONVERSATION = ("user", "assistant")


def _block_text(content: Any) -> str:
    """A tool_result's content: a string, or a list of blocks (text kept, images named)."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if b.get("type") == "text"
                         else f"[{b.get('type', 'block')}]"
                         for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _record_messages(r: dict[str, Any], line: int, include_thinking: bool) -> list[Message]:
    """One user or assistant record as messages: a user record's tool results become tool
    messages (in the chat format they are messages of their own)."""
    role = r["type"]
    content = (r.get("message") or {}).get("content")
    if isinstance(content, str):
        return [Message(role, content, line=line)]
    texts, thinking, calls, results = [], [], [], []
    for b in content or []:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            texts.append(str(b.get("text", "")))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking", "")))
        elif kind == "tool_use":
            calls.append(ToolCall(str(b.get("name", "")), arguments_text(b.get("input", {}))))
        elif kind == "tool_result":
            results.append(Message("tool", _block_text(b.get("content")), line=line))
        elif kind == "redacted_thinking":
            continue
        elif kind:
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


def _main_chain(path: Path, records: list[tuple[int, dict[str, Any]]]
                ) -> list[tuple[int, dict[str, Any]]]:
    """The records from the root to the last message, following parentUuid back and
    stepping over each compact_boundary to its logicalParentUuid."""
    by_uuid = {r["uuid"]: (line, r) for line, r in records if r.get("uuid")}
    last = next(((line, r) for line, r in reversed(records)
                 if r.get("type") in CONVERSATION and not r.get("isSidechain")
                 and not r.get("isCompactSummary") and r.get("uuid")), None)
    if last is None:
        raise SessionError(f"{path}: no user or assistant record on the main thread; a "
                           "Claude Code session file holds the conversation as such records")
    chain, seen = [], set()
    cur: tuple[int, dict[str, Any]] | None = last
    while cur is not None:
        line, r = cur
        if r["uuid"] in seen:
            raise SessionError(f"{path}:{line}: parentUuid loops back to record {r['uuid']}; "
                               "the main thread cannot be followed")
        seen.add(r["uuid"])
        chain.append(cur)
        parent = r.get("parentUuid")
        if parent is None and r.get("subtype") == "compact_boundary":
            parent = r.get("logicalParentUuid")  # stitch the history across the boundary
        if parent is None:
            break
        if parent not in by_uuid:
            raise SessionError(f"{path}:{line}: parentUuid {parent} names no record of this "
                               "file; the main thread is broken there (a record lost from "
                               "the file); a session file whose chain is whole is needed")
        cur = by_uuid[parent]
    return list(reversed(chain))


def read_claude_code(path: Path, records: list[tuple[int, Any]], include_thinking: bool
                     ) -> tuple[list[Message], list[str], list[str], int]:
    """(main-thread messages, compaction summaries, off-thread text, boundaries crossed)."""
    chain = _main_chain(path, records)
    on = {id(r) for _, r in chain}
    messages: list[Message] = []
    summaries: list[str] = []
    boundaries = 0
    last_id = None
    for line, r in chain:
        kind = r.get("type")
        if kind == "system":
            boundaries += r.get("subtype") == "compact_boundary"
            continue  # system notes (boundaries, durations, errors): not conversation
        if kind not in CONVERSATION:
            continue
        if r.get("isCompactSummary"):
            summaries.append(_block_text((r.get("message") or {}).get("content")))
            continue
        if r.get("isMeta"):
            continue  # text the tool injected (caveats, command output), not said by anyone
        msg_id = (r.get("message") or {}).get("id")
        new = _record_messages(r, line, include_thinking)
        if (kind == "assistant" and msg_id and msg_id == last_id and new and messages
                and messages[-1].role == "assistant"):
            messages[-1] = _merge(messages[-1], new[0])
            new = new[1:]
        messages += new
        last_id = msg_id if kind == "assistant" else None
    # Summaries anywhere in the file (a compaction on another branch is still the tool's
    # carry), and everything else off the main thread.
    off, more = [], []
    for line, r in records:
        if id(r) in on or r.get("type") not in CONVERSATION:
            continue
        text = "\n".join(render_message(m) for m in _record_messages(r, line, True))
        (more if r.get("isCompactSummary") else off).append(text)
    summaries += [s for s in more if s not in summaries]
    return messages, summaries, off, boundaries


def render_message(m: Message, turn: int | None = None) -> str:
    """One message as a turn of the fixture, in the synthetic sessions' shape
    (`[turn N] role: text`), tool calls with their arguments on lines below."""
    head = f"[turn {turn}] " if turn is not None else ""
    lines = [f"{head}{m.role}: {m.text}".rstrip()]
    if m.thinking:
        lines.append(f"  (thinking) {m.thinking}")
    lines += [f"  -> tool call {c.name} {c.arguments}" for c in m.tool_calls]
    return "\n".join(lines)


def read_transcript(path: str | Path, fmt: str | None = None,
                    include_thinking: bool = False) -> Transcript:
    """Read a transcript in its format (detected when `fmt` is None)."""
    p = Path(path)
    records, raw = _json_lines(p)
    fmt = fmt or detect_format(records, p)
    if fmt == "messages":
        msgs = read_messages(p, records, include_thinking)
        return Transcript(str(path), fmt, tuple(msgs), lines=tuple(raw))
    if fmt == "claude-code":
        msgs, summaries, off, n = read_claude_code(p, records, include_thinking)
        return Transcript(str(path), fmt, tuple(msgs), tuple(summaries), tuple(off), n,
                          tuple(raw))
    raise SessionError(f"{path}: format {fmt!r} is not known (known: {', '.join(FORMATS)})")
