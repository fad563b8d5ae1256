"""GitHub Copilot CLI sessions (`~/.copilot/session-state/<session id>/events.jsonl`),
Copilot CLI 0.0.4xx to 1.x.

Shapes learned from the session event types of Copilot's SDK (github/copilot-sdk,
`generated/session_events`, the event envelope's `agentId`; its end-to-end tests of
sub-agents writing events.jsonl) and the public viewers that read these files: one event a
line, `{type, data, id, timestamp, parentId}`, in the order the session ran.
- `session.start` `{sessionId, version, producer, copilotVersion, context}`: the file's
  event schema version and the CLI's; a version this reader does not know is read as the
  one it knows and named (`Transcript.vocabulary`).
- `user.message` `{content, transformedContent, attachments}`: the user's turn, read from
  `transformedContent` when present (what the model saw: the typed `content` with the
  CLI's reminders around it), else `content`.
- `assistant.message` `{messageId, content, toolRequests: [{toolCallId, name,
  arguments}], reasoningText}`; `assistant.reasoning` `{content}` (read only with
  include_thinking).
- `tool.execution_complete` `{toolCallId, success, result: {content, detailedContent},
  error}`: a tool's result, paired with its request by `toolCallId` (the model reads
  `result.content`; a failure its error's message). `tool.execution_start` repeats the
  request: counted, not read twice.
- `session.compaction_complete` `{success, summaryContent, checkpointNumber}`: the CLI's
  own compaction, its summary the baseline; one that failed (`success: false`) compacted
  nothing and is counted; one that succeeded with no summary text leaves the baseline
  absent (`Transcript.absent_summaries`).
- A sub-agent's events (the `task` tool's agent) carry the sub-agent's `agentId` on the
  event (earlier builds: `data.parentToolCallId`, the call that spawned it): its own
  thread, never the parent's; their text is kept apart (`Transcript.subagent`) and
  counted (`subagent`), as Claude Code's sidechains are. The parent reads the task
  tool's result, as the model did.
- `hook.start` `{hookInvocationId, hookType, input}` and `hook.end` `{..., output,
  success}`: a hook the user configured ran; a postToolUse hook's input repeats the
  tool's result. The result is read once, from `tool.execution_complete`; hook events
  are counted by type.
Every other event (turn boundaries, usage, model and mode changes, infos, truncations,
aborts, shutdown, sub-agents starting and ending) is the CLI's bookkeeping: counted by
type. A result whose request is
not in the file is kept where the agent saw it, its line noted
(`Transcript.orphan_outputs`); a request whose result never came is counted
(`request_without_result`). The session folder's other files (workspace.yaml, plan.md,
checkpoints/, rewind-snapshots/) are never read.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
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
    parts_text,
)

KNOWN_VERSIONS = (1,)  # session.start's `version`: the event schema this reader knows

# Copilot CLI's `~/.copilot/session-store.db` (public readers and the CLI's own issue
# threads name its tables `sessions`, `turns`, `checkpoints`, `session_files` and an FTS
# `search_index`): an index the CLI writes after each session, one row a turn holding the
# user's message and the assistant's reply. The tool calls, their output and the CLI's
# reminders are not in it, so it is not what the model read, and a study of it would
# grade a session the model never saw: refused, pointing at the session's own file.
INDEX_TABLES = frozenset({"sessions", "turns"})
INDEX_COLUMNS = frozenset({"session_id", "user_message", "assistant_response"})


def index_store_refusal(path: Path, tables: frozenset[str], turn_columns: set[str]
                        ) -> str | None:
    """Why a SQLite file that is Copilot CLI's session index cannot be read, or None."""
    if not (INDEX_TABLES <= tables and INDEX_COLUMNS <= turn_columns):
        return None
    return (f"{path}: GitHub Copilot CLI's session-store.db, an index of each turn's user "
            "message and reply without the tool calls, their output or the CLI's "
            "reminders, so not what the model read; point transcript at the session's own "
            "~/.copilot/session-state/<session id>/events.jsonl")


@dataclass
class _Session:
    out: list[Message] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    left: Counter[str] = field(default_factory=Counter)
    requests: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    orphans: list[int] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    subagent: list[str] = field(default_factory=list)
    absent: int = 0
    vocabulary: str = ""


def _text(value: Any, at: str, key: str) -> str:
    expect(value, (str, list, NULL), at, key, "text: a string or a list of parts")
    return parts_text(value, at, key)


def _start(s: _Session, d: dict[str, Any], at: str) -> None:
    version = d.get("version")
    cli = d.get("copilotVersion") or "version not named"
    known = version in KNOWN_VERSIONS
    s.vocabulary = (f"events v{version} (Copilot CLI {cli})" if known else
                    f"events v{version} (Copilot CLI {cli}): a version this reader does "
                    f"not know, read as v{KNOWN_VERSIONS[-1]}")
    s.left["session.start"] += 1


def _user(s: _Session, d: dict[str, Any], at: str, line: int) -> None:
    """`transformedContent` is what the model was sent (the typed text with the CLI's
    reminders and expansions around it), so it is read when present."""
    content = _text(d.get("content"), at, "data.content")
    if d.get("transformedContent") is not None:
        content = _text(d.get("transformedContent"), at, "data.transformedContent") or content
    s.out.append(Message("user", content, line=line))


def _assistant(s: _Session, d: dict[str, Any], at: str, line: int, opts: ReadOptions
               ) -> None:
    reqs = expect(d.get("toolRequests") or [], (list,), at, "data.toolRequests",
                  "the calls the reply makes [{toolCallId, name, arguments}]")
    calls = []
    for i, c in enumerate(reqs):
        expect(c, (dict,), at, f"data.toolRequests[{i}]", "a call {toolCallId, name}")
        s.requests.add(str(expect(c.get("toolCallId", ""), (str,), at,
                                  f"data.toolRequests[{i}].toolCallId", "the call's id")))
        calls.append(ToolCall(str(expect(c.get("name", ""), (str,), at,
                                         f"data.toolRequests[{i}].name", "the tool")),
                              arguments_text(c.get("arguments") or {})))
    said = [*s.thinking, *([d["reasoningText"]] if isinstance(d.get("reasoningText"), str)
                           else [])]
    s.thinking.clear()
    if said and not opts.include_thinking:
        s.left["reasoning"] += len(said)
    text = _text(d.get("content"), at, "data.content")
    if text or calls:
        s.out.append(Message("assistant", text, tuple(calls),
                             "\n".join(said) if opts.include_thinking else "", line))


def _result(s: _Session, d: dict[str, Any], at: str, line: int) -> None:
    call_id = expect(d.get("toolCallId", ""), (str,), at, "data.toolCallId",
                     "the id of the request it answers")
    if call_id not in s.requests:
        s.orphans.append(line)  # its request is not in the file: kept as the agent saw it
    s.answered.add(call_id)
    result = expect(d.get("result"), (dict, NULL), at, "data.result",
                    "{content, detailedContent}")
    error = expect(d.get("error"), (dict, str, NULL), at, "data.error",
                   "the failure the model was told of")
    text = _text((result or {}).get("content"), at, "data.result.content")
    if not text and error:
        text = str(error.get("message", "") if isinstance(error, dict) else error)
    s.out.append(Message("tool", text, line=line))


def _subagent_of(r: dict[str, Any], d: dict[str, Any]) -> str | None:
    """The sub-agent an event came from: the envelope's `agentId` (absent for the main
    agent's events and the session's own), else the deprecated `data.parentToolCallId`."""
    for agent in (r.get("agentId"), d.get("parentToolCallId")):
        if isinstance(agent, str) and agent:
            return agent
    return None


def _subagent(s: _Session, kind: str, d: dict[str, Any], at: str) -> None:
    """A sub-agent's event: its message or result text kept apart, never on the thread."""
    s.left["subagent"] += 1
    if kind in ("user.message", "assistant.message"):
        text = _text(d.get("content"), at, "data.content")
    elif kind == "tool.execution_complete":
        result = expect(d.get("result"), (dict, NULL), at, "data.result",
                        "{content, detailedContent}")
        text = _text((result or {}).get("content"), at, "data.result.content")
    else:
        return
    if text:
        s.subagent.append(text)


def _compaction(s: _Session, d: dict[str, Any], at: str) -> None:
    summary = expect(d.get("summaryContent"), (str, NULL), at, "data.summaryContent",
                     "the compaction's summary")
    if d.get("success") is False:
        s.left["failed_compaction"] += 1  # nothing was compacted
    elif summary:
        s.summaries.append(summary)
    else:
        s.absent += 1  # compacted, and no summary in the file: nothing stands in for it


class Copilot(Source):
    format = "copilot"
    title = "GitHub Copilot CLI session"
    shape = "JSONL events {type, data, id, timestamp, parentId} (Copilot CLI events.jsonl)"

    def looks(self, record: dict[str, Any]) -> bool:
        kind = record.get("type")
        return (isinstance(kind, str) and isinstance(record.get("data"), dict)
                and "." in kind and "uuid" not in record)

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        s = _Session()
        for line, r in records:
            at = f"{path}:{line}"
            kind = expect(r.get("type"), (str,), at, "type", "an event's type")
            d = expect(r.get("data", {}), (dict,), at, "data", "an event's payload")
            if _subagent_of(r, d) is not None:
                _subagent(s, kind, d, at)
            elif kind == "session.start":
                _start(s, d, at)
            elif kind == "user.message":
                _user(s, d, at, line)
            elif kind == "assistant.message":
                _assistant(s, d, at, line, opts)
            elif kind == "assistant.reasoning":
                s.thinking.append(_text(d.get("content"), at, "data.content"))
            elif kind == "tool.execution_complete":
                _result(s, d, at, line)
            elif kind == "session.compaction_complete":
                _compaction(s, d, at)
            else:
                s.left[kind] += 1
        s.left["request_without_result"] += len(s.requests - s.answered)
        if not any(m.role in ("user", "assistant") for m in s.out):
            raise SessionError(f"{path}: no user.message or assistant.message event; a "
                               "Copilot CLI session holds the conversation as such events")
        return Transcript(str(path), self.format, tuple(s.out), tuple(s.summaries),
                          compactions=len(s.summaries) + s.absent,
                          subagent=tuple(s.subagent),
                          left_out=counted(s.left), orphan_outputs=tuple(s.orphans),
                          vocabulary=s.vocabulary, absent_summaries=s.absent)
