"""The one definition of a session turn as the study writes it, `[turn N] role: text`,
and its parser.

Two writers use it: the synthetic fixture generator (study/fixtures.py) and the reader
of a real session (transcripts/base.py render_message). The carriers that keep
the session itself, not a model's summary of it (carriers/session.py), read the
turns back with `parse_turns`, so a tool output is recognised by the same definition
that wrote it, never by a second pattern kept in step with the first by hand.

A turn runs from its head to the next head (or the end of the text): its text may span
lines (a planted fact's bullet list, a tool call's arguments below the message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The head of a turn: the turn number, then the role. Roles are single words
# ("user", "assistant", "tool", "system").
TURN_HEAD = re.compile(r"^\[turn (\d+)\] (\w+): ", flags=re.MULTILINE)


def turn_head(turn: int | None) -> str:
    """What goes before the role: `[turn N] `, or nothing where the turn is not numbered
    (a compaction summary's own rendering, which is read as text, not as turns)."""
    return f"[turn {turn}] " if turn is not None else ""


def turn_line(turn: int | None, role: str, text: str) -> str:
    """One turn as the study writes it: `[turn N] role: text`."""
    return f"{turn_head(turn)}{role}: {text}"


# A tool call, on its own line below the message that made it (render_message)
TOOL_CALL = re.compile(r"^  -> tool call (\S+)", flags=re.MULTILINE)
# The role of a turn that is a tool's output
TOOL_ROLE = "tool"


def tool_call_line(name: str, arguments: str) -> str:
    """A tool call below its message: `  -> tool call NAME ARGUMENTS`."""
    return f"  -> tool call {name} {arguments}"


def tool_calls(text: str) -> list[str]:
    """The names of the tools a turn's text calls, in order."""
    return TOOL_CALL.findall(text)


@dataclass(frozen=True)
class Turn:
    """One turn read back: its number, role and text, and where it lies in the text it
    was read from (start, end: slice bounds, the head included, the newline before the
    next head included)."""

    number: int
    role: str
    text: str
    start: int
    end: int


def parse_turns(text: str) -> list[Turn]:
    """Every numbered turn of `text`, in order; what precedes the first head (a chunk's
    `=== session chunk ===` header) belongs to no turn."""
    heads = list(TURN_HEAD.finditer(text))
    out = []
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        out.append(Turn(int(m.group(1)), m.group(2), text[m.end():end], m.start(), end))
    return out


def last_turn_number(text: str) -> int | None:
    """The number of the last turn in `text` (None: it holds none)."""
    turns = parse_turns(text)
    return turns[-1].number if turns else None
