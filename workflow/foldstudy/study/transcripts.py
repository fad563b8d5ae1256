"""A user's own agent session, read the way its tool wrote it (issues 25 and 30; DESIGN §3
"Own sessions"): the main thread as a list of messages, the tool's own compaction
summaries beside it, and what lies off the main thread, counted by kind.

Four formats, detected from the file (or named by `format:`):

- `claude-code`: a Claude Code session file (`~/.claude/projects/<project>/<id>.jsonl`):
  a tree of records by `uuid` / `parentUuid` (study/transcripts_cli.py reads it, and the
  next two).
- `codex`: a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): records
  `{timestamp, type, payload}` in the order the agent saw them.
- `gemini`: a Gemini CLI chat (`~/.gemini/tmp/<project-hash>/chats/session-*.json`): one
  JSON document with `sessionId` and `messages[]`, tool results inside `toolCalls`.
- `messages`: OpenAI chat messages, one JSON object per line (`role` system / user /
  assistant / tool; `content` a string, a list of parts or null; `tool_calls` with
  `function.name` and `function.arguments`). The file is the thread.

Every file is checked before it is read (a regular file, under `max_mb`) and every
record's shape is checked as it is read, so a bad input is one line naming the file and
the line, never a traceback.

Paper §3.1: "Each fold receives the previous running summary and one chunk ... Nothing
re-reads the transcript": what a fold may see is the conversation itself, so everything
that is not conversation (the tool's own summary, its system notes, the agent's standing
instructions, its progress records) stays out of the thread.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .transcript_base import (
    DEFAULT_MAX_MB,
    Message,
    SessionError,
    ToolCall,
    Transcript,
    arguments_text,
    check_file,
    counted,
    expect,
    json_lines,
    parts_text,
    read_text,
    render_message,
)
from .transcripts_cli import read_claude_code, read_codex, read_gemini

__all__ = ["FORMATS", "Message", "SessionError", "ToolCall", "Transcript", "arguments_text",
           "check_file", "detect_format", "read_transcript", "render_message"]

FORMATS = ("claude-code", "codex", "gemini", "messages")
CHAT_ROLES = ("system", "user", "assistant", "tool")


# -- detection --------------------------------------------------------------------------------

CODEX_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
CLAUDE_META_TYPES = ("summary", "file-history-snapshot", "queue-operation", "custom-title",
                     "progress")
SHAPES = {
    "claude-code": "JSONL records with uuid/parentUuid (Claude Code)",
    "codex": "JSONL records {timestamp, type, payload} (Codex CLI rollout)",
    "gemini": "one JSON document with sessionId and messages[] (Gemini CLI chat)",
    "messages": "JSONL chat messages with a role (OpenAI chat)",
}


def _looks(r: dict[str, Any]) -> str | None:
    if r.get("type") in CODEX_TYPES and isinstance(r.get("payload"), dict):
        return "codex"
    if "uuid" in r or "parentUuid" in r or r.get("type") in CLAUDE_META_TYPES:
        return "claude-code"
    if r.get("role") in CHAT_ROLES:
        return "messages"
    return None


def detect_format(records: list[tuple[int, dict[str, Any]]], path: Path) -> str:
    """The one JSONL shape the records have; refused by name when none or several."""
    seen = Counter(k for _, r in records if (k := _looks(r)))
    if len(seen) == 1:
        return next(iter(seen))
    if not seen:
        raise _no_shape(path)
    mixed = ", ".join(f"{n} lines like {k}" for k, n in seen.most_common())
    raise SessionError(f"{path}: the format cannot be detected ({mixed}); set `format:` "
                       f"to one of {', '.join(FORMATS)}")


def _no_shape(path: Path, what: str = "") -> SessionError:
    """The refusal of a file matching none of the shapes, naming them."""
    return SessionError(
        f"{path}: the format cannot be detected{what}: it matches none of the shapes tried "
        f"({'; '.join(f'{k}: {v}' for k, v in SHAPES.items())}); point `transcript` at "
        "a session file of one of them")


def _gemini_document(text: str) -> dict[str, Any] | None:
    """The file as one Gemini chat document, or None when it is not one."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return None
    return doc if _is_gemini(doc) else None


def _is_gemini(doc: Any) -> bool:
    return isinstance(doc, dict) and "messages" in doc and "role" not in doc


def _one_document(path: Path, text: str) -> None:
    """Refuse a file written as one JSON document over several lines that is no Gemini
    chat (read line by line, it would fail at its first line as "not a JSON object",
    naming no shape): the shapes tried are named, as for any file matching none."""
    body = text.strip()
    if not body.startswith(("{", "[")) or "\n" not in body:
        return
    lines = body.split("\n")
    # the first or last line a record of its own: JSON lines (a bad line of them is
    # named by its number when read)
    for line in (lines[0], lines[-1]):
        try:
            json.loads(line)
            return
        except json.JSONDecodeError:
            pass
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as e:
        raise _no_shape(path, f" (neither JSON lines nor one JSON document: {e.msg} at "
                              f"line {e.lineno}, column {e.colno})") from e
    if not _is_gemini(doc):
        kind = "object" if isinstance(doc, dict) else "list" if isinstance(doc, list) \
            else "value"
        raise _no_shape(path, f" (one JSON {kind} over {len(lines)} lines, "
                              "not a Gemini CLI chat: no messages[])")


# -- messages (OpenAI chat) -------------------------------------------------------------------


def read_messages(path: Path, records: list[tuple[int, dict[str, Any]]],
                  include_thinking: bool) -> Transcript:
    out, left = [], Counter[str]()
    for line, r in records:
        at = f"{path}:{line}"
        role = r.get("role")
        if role not in CHAT_ROLES:
            raise SessionError(f"{at}: role {role!r} is not a chat role (system, user, "
                               "assistant, tool)")
        if role == "system":
            left["system"] += 1  # the agent's standing instructions, not history
            continue
        calls = []
        for i, c in enumerate(expect(r.get("tool_calls") or [], (list,), at, "tool_calls",
                                     "a list of calls")):
            expect(c, (dict,), at, f"tool_calls[{i}]", "a call is an object with function")
            fn = expect(c.get("function") or {}, (dict,), at, f"tool_calls[{i}].function",
                        "an object with name and arguments")
            name = expect(fn.get("name", ""), (str,), at, f"tool_calls[{i}].function.name",
                          "the tool's name")
            calls.append(ToolCall(name, arguments_text(fn.get("arguments"))))
        thinking = str(r.get("reasoning_content") or "") if include_thinking else ""
        out.append(Message(role, parts_text(r.get("content"), at), tuple(calls), thinking,
                           line))
    return Transcript(str(path), "messages", tuple(out), left_out=counted(left))


# -- reading ---------------------------------------------------------------------------------


def read_transcript(path: str | Path, fmt: str | None = None, include_thinking: bool = False,
                    max_mb: float = DEFAULT_MAX_MB) -> Transcript:
    """Read a transcript in its format (detected when `fmt` is None)."""
    p = check_file(path, str(path), max_mb)
    if fmt is not None and fmt not in FORMATS:
        raise SessionError(f"{path}: format {fmt!r} is not known (known: "
                           f"{', '.join(FORMATS)})")
    text = read_text(p, max_mb)
    raw = tuple(text.splitlines())
    doc = _gemini_document(text) if fmt in (None, "gemini") else None
    if fmt == "gemini" and doc is None:
        raise SessionError(f"{path}: not a Gemini CLI chat ({SHAPES['gemini']})")
    if doc is not None:
        tr = read_gemini(p, doc, include_thinking)
    else:
        if fmt is None:
            _one_document(p, text)
        records = json_lines(p, text)
        fmt = fmt or detect_format(records, p)
        readers = {"messages": read_messages, "claude-code": read_claude_code,
                   "codex": read_codex}
        tr = readers[fmt](p, records, include_thinking)
    return Transcript(str(path), tr.format, tr.messages, tr.compaction_summaries,
                      tr.off_thread, tr.compactions, raw, tr.subagent, tr.new_roots,
                      tr.left_out, tr.before_root)
