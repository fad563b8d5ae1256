"""`clear_tool_output:K`: the session kept as text, with every tool output older than the
last K replaced by a one-line placeholder naming the tool, and the oldest text evicted
past the arm's own token cap (its `carry_cap_tokens`). No fold calls the model; the
recall turn reads the kept text.

It is what agent harnesses do before (or instead of) summarising: Claude Code clears
old tool results, Anthropic's Messages API offers it as the context edit
`clear_tool_uses_20250919` (https://docs.anthropic.com/en/docs/build-with-claude/context-editing),
inspect_ai ships `CompactionEdit`. Turns are read with the study's one turn format
(transcripts/turns.py), the definition that wrote them, so a tool output is a turn whose role
is `tool`, and the tool it names is the call the turns before it made (a real session's
`-> tool call NAME` line), else the first word of its own text (the synthetic session's
command line).
"""

from __future__ import annotations

from ..transcripts.turns import TOOL_ROLE, Turn, parse_turns, tool_calls, turn_line
from .registry import register_carrier
from .session import SessionCarrier, joined, tail_within
from .types import ArmView, BackendView

CLEAR_SOURCE = "tool output cleared against your best arm"


def tool_name(turn: Turn, called: list[str]) -> str:
    """The tool a tool output came from: the last call made before it, else the first
    word of its own text."""
    if called:
        return called[-1]
    first = turn.text.split(maxsplit=1)
    return first[0].rstrip(":") if first else TOOL_ROLE


def placeholder(turn: Turn, tool: str) -> str:
    """The one line a cleared tool output leaves, in the turn format."""
    return turn_line(turn.number, turn.role, f"[output of {tool} cleared]") + "\n"


def cleared(chunks: list[str], keep_last: int) -> str:
    """The chunks with every tool output but the last `keep_last` replaced by its
    placeholder; everything else (a chunk's header, user and assistant turns) as read."""
    parsed = [parse_turns(c) for c in chunks]
    outputs = [(ci, t.number) for ci, ts in enumerate(parsed) for t in ts
               if t.role == TOOL_ROLE]
    clear = set(outputs[: max(0, len(outputs) - keep_last)])
    out: list[str] = []
    called: list[str] = []
    for ci, (chunk, turns) in enumerate(zip(chunks, parsed, strict=True)):
        text = chunk[: turns[0].start] if turns else chunk
        for t in turns:
            if t.role == TOOL_ROLE:
                text += (placeholder(t, tool_name(t, called)) if (ci, t.number) in clear
                         else chunk[t.start:t.end])
                called = []
            else:
                called += tool_calls(t.text)
                text += chunk[t.start:t.end]
        out.append(text)
    return joined(out)


@register_carrier
class ClearToolOutput(SessionCarrier):
    """The session with old tool outputs cleared, held to the arm's carry cap."""

    kind = "clear_tool_output"
    pattern = r"clear_tool_output:\d+"
    shown = "clear_tool_output:K"
    words = "the session as text, tool outputs but the last few cleared"
    against_best = CLEAR_SOURCE

    @property
    def keep_last(self) -> int:
        """K: how many of the newest tool outputs are kept whole."""
        return int(self.name.split(":", 1)[1])

    def describe(self, arm: ArmView) -> str:
        return (f"the session as text, every tool output but the last {self.keep_last} "
                f"cleared to a line naming the tool, the oldest text evicted past "
                f"{arm.carry_cap_tokens} tokens")

    def keep(self, arm: ArmView, chunks: list[str], backend: BackendView) -> tuple[str, bool]:
        # only eviction is a clip: a cleared output is the kind's rule, not its cap
        return tail_within(cleared(chunks, self.keep_last), arm.carry_cap_tokens,
                           backend.count_tokens)
