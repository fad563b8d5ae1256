"""OpenAI chat messages, one JSON object per line: the file is the thread.

Shapes: the Chat Completions message (`role` system / user / assistant / tool; `content` a
string, a list of parts or null; an assistant's `tool_calls` with `function.name` and
`function.arguments`, a JSON string; `reasoning_content` as DeepSeek and vLLM write it).
Learned from the OpenAI API reference (platform.openai.com/docs/api-reference/chat).
Repairs nothing: a chat export is written whole. System messages are the agent's standing
instructions, not history: left out, counted.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .base import (
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
    parts_text,
)

CHAT_ROLES = ("system", "user", "assistant", "tool")


class Messages(Source):
    format = "messages"
    title = "file of OpenAI chat messages"
    shape = "JSONL chat messages with a role (OpenAI chat)"

    def looks(self, record: dict[str, Any]) -> bool:
        return record.get("role") in CHAT_ROLES

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
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
            thinking = str(r.get("reasoning_content") or "") if opts.include_thinking else ""
            out.append(Message(role, parts_text(r.get("content"), at), _calls(r, at),
                               thinking, line))
        return Transcript(str(path), self.format, tuple(out), left_out=counted(left))


def _calls(r: dict[str, Any], at: str) -> tuple[ToolCall, ...]:
    calls = []
    for i, c in enumerate(expect(r.get("tool_calls") or [], (list,), at, "tool_calls",
                                 "a list of calls")):
        expect(c, (dict,), at, f"tool_calls[{i}]", "a call is an object with function")
        fn = expect(c.get("function") or {}, (dict,), at, f"tool_calls[{i}].function",
                    "an object with name and arguments")
        name = expect(fn.get("name", ""), (str,), at, f"tool_calls[{i}].function.name",
                      "the tool's name")
        calls.append(ToolCall(name, arguments_text(fn.get("arguments"))))
    return tuple(calls)
