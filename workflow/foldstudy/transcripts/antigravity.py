"""Antigravity CLI (`agy`) transcripts
(`~/.gemini/antigravity-cli/brain/<conversation id>/.system_generated/logs/
transcript_full.jsonl`), agy 1.1.x.

Shapes learned from the public parser inspect_scout reads these files with
(meridianlabs-ai/inspect_scout, `sources/_antigravity_cli`): one step a line,
`{step_index, source, type, status, created_at, content, thinking, tool_calls}`.
- `USER_INPUT` (source `USER`): the user's turn, its text inside `<USER_REQUEST>`; the
  `<ADDITIONAL_METADATA>` block after it is read too (uploaded files and slash-command
  expansions are written only there and the model sees them), all but its clock line;
  `<USER_SETTINGS_CHANGE>` is the CLI's own note.
- `CONVERSATION_HISTORY`: written empty; counted and skipped.
- `PLANNER_RESPONSE` (source `MODEL`): the agent's text, its `thinking` (read only with
  include_thinking) and `tool_calls` `[{name, args}]`, with no call ids.
- every other `MODEL` step (`GENERIC`, `RUN_COMMAND`, `VIEW_FILE`, `CODE_ACTION`, ...)
  is a tool result, paired with the pending calls by position (first in, first out).
- `CHECKPOINT`: `{{ CHECKPOINT 0 }}` opens every conversation (a preamble, left out);
  one with N > 0 is the CLI's own compaction, its content the context the model went on
  with: the baseline, like Claude Code's isCompactSummary, never a turn of the thread
  (one with no content leaves the baseline absent).
- `SYSTEM_MESSAGE`: text the CLI sends the model (a task's notification, a subagent's
  message): read as a user turn where it was sent (`read_in`); `ERROR_MESSAGE` is the
  CLI's generic error note: counted, not read.

The CLI appends a step when it completes, so a fast result can be written before its
planner step, and a checkpoint lands a few lines late: steps are read in `step_index`
order, so a checkpoint applies at its own step. A compaction can fall inside a tool
run (between a call and its result): the result still pairs with its call. A result
with no pending call is kept where the agent saw it, its line noted
(`Transcript.orphan_outputs`); a call whose result never came is counted
(`call_without_result`). The brain folder's other files (the conversation store,
artifacts, the plan) are never read.
"""

from __future__ import annotations

import re
from collections import Counter, deque
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

_REQUEST = re.compile(r"<USER_REQUEST>\n?(.*?)\n?</USER_REQUEST>", re.S)
_METADATA = re.compile(r"<ADDITIONAL_METADATA>\n?(.*?)\n?</ADDITIONAL_METADATA>", re.S)
_CLOCK = "The current local time is"
_CHECKPOINT = re.compile(r"\{\{ CHECKPOINT (\d+) \}\}")
NOTES = ("ERROR_MESSAGE",)


def _check(path: Path, line: int, r: dict[str, Any]) -> None:
    at = f"{path}:{line}"
    expect(r.get("step_index"), (int,), at, "step_index", "the step's number")
    for key in ("source", "type"):
        expect(r.get(key, ""), (str,), at, key, "a step's source and type are strings")
    for key in ("content", "thinking"):
        expect(r.get(key), (str, NULL), at, key, "a step's text, or null")
    calls = expect(r.get("tool_calls"), (list, NULL), at, "tool_calls",
                   "a planner step's calls [{name, args}], or null")
    for i, c in enumerate(calls or []):
        expect(c, (dict,), at, f"tool_calls[{i}]", "a call {name, args}")
        expect(c.get("name", ""), (str,), at, f"tool_calls[{i}].name", "the tool's name")


def _user_text(text: str) -> str:
    """The user's request, then what the `<ADDITIONAL_METADATA>` block adds: uploaded
    files and slash-command expansions are written only there and the model reads them,
    so a fact planted there is on the thread; the block's clock line is the CLI's own
    note and is left out."""
    m = _REQUEST.search(text)
    request = m.group(1) if m else text
    extra = [ln for b in _METADATA.findall(text) for ln in b.splitlines()
             if not ln.startswith(_CLOCK)]
    extra_text = "\n".join(extra).strip()
    return f"{request}\n\n{extra_text}" if m and extra_text else request


class Antigravity(Source):
    format = "antigravity"
    title = "Antigravity CLI transcript"
    shape = ("JSONL steps {step_index, source, type, content, tool_calls} "
             "(Antigravity CLI transcript_full.jsonl)")

    def looks(self, record: dict[str, Any]) -> bool:
        return "step_index" in record and "type" in record

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        for line, r in records:
            _check(path, line, r)
        out: list[Message] = []
        summaries: list[str] = []
        left: Counter[str] = Counter()
        read_in: Counter[str] = Counter()
        orphans: list[int] = []
        pending: deque[str] = deque()
        absent = 0
        for line, r in sorted(records, key=lambda x: (x[1]["step_index"], x[0])):
            kind, text = r.get("type", ""), r.get("content") or ""
            if kind == "CHECKPOINT":
                m = _CHECKPOINT.search(text)
                if m and int(m.group(1)) > 0:
                    if summary := text[m.end():].strip():
                        summaries.append(summary)
                    else:
                        absent += 1  # a compaction whose context the file does not hold
                else:  # the conversation's preamble, or a step with no marker to read
                    left["checkpoint_0" if m else "checkpoint_unmarked"] += 1
            elif kind == "USER_INPUT":
                out.append(Message("user", _user_text(text), line=line))
            elif kind == "CONVERSATION_HISTORY" and not text:
                left["empty_conversation_history"] += 1  # the CLI writes these empty
            elif kind == "PLANNER_RESPONSE":
                left["call_without_result"] += len(pending)  # never answered
                pending.clear()
                calls = tuple(ToolCall(str(c.get("name") or "unknown"),
                                       arguments_text(c.get("args") or {}))
                              for c in r.get("tool_calls") or [])
                pending.extend(c.name for c in calls)
                thinking = (r.get("thinking") or "") if opts.include_thinking else ""
                if r.get("thinking") and not opts.include_thinking:
                    left["thinking"] += 1
                if text or calls or thinking:
                    out.append(Message("assistant", text, calls, thinking, line))
                else:
                    left["empty_planner_step"] += 1  # written before a stream error
            elif kind == "SYSTEM_MESSAGE":
                out.append(Message("user", text, line=line))
                read_in["system_message"] += 1
            elif r.get("source") == "MODEL":
                if pending:
                    pending.popleft()
                else:
                    orphans.append(line)  # no call pending: kept where the agent saw it
                out.append(Message("tool", text, line=line))
            elif kind in NOTES:
                left[kind.lower()] += 1
            else:
                left[f"step:{kind or 'untyped'}"] += 1
        left["call_without_result"] += len(pending)
        if not any(m.role in ("user", "assistant") for m in out):
            raise SessionError(f"{path}: no USER_INPUT or PLANNER_RESPONSE step; an "
                               "Antigravity CLI transcript holds the conversation as such "
                               "steps")
        return Transcript(str(path), self.format, tuple(out), tuple(summaries),
                          compactions=len(summaries) + absent, left_out=counted(left),
                          orphan_outputs=tuple(orphans), read_in=counted(read_in),
                          absent_summaries=absent)
