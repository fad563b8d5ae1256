"""ATIF trajectories (Agent Trajectory Interchange Format, the Harbor project's
`trajectory.json`), ATIF-v1.0 to v1.7, and the continuation files a compaction leaves.

Shapes learned from Harbor's specification and its producers (harbor-framework/harbor:
`rfcs/0001-trajectory-format.md` at v1.7, the pydantic models under
`src/harbor/models/trajectories/`, the golden files of its terminus-2 agent
`tests/golden/terminus_2/hello-world-context-summarization*.json`, pull request #1844
which marks terminus-2's handoff step with `context_management`) and from public readers
of the format (inspect_scout's ATIF import, NVIDIA NeMo Relay's exporter). One JSON
document `{schema_version: "ATIF-v1.x", session_id, agent: {name, version, model_name},
steps[], final_metrics, continued_trajectory_ref}`; each step `{step_id, source: user |
agent | system, message, reasoning_content, tool_calls: [{tool_call_id, function_name,
arguments}], observation: {results: [{source_call_id, content}]}, is_copied_context,
extra}`. `message` and a result's `content` are a string or (v1.6 on) a list of content
parts `{type: text | image}`.

- `user` steps are the user's turns; `agent` steps the agent's replies with their tool
  calls (`reasoning_content` read only with include_thinking), the step's observation
  results the tool results, in order (a result with no `source_call_id` is the
  environment's feedback, terminus-2's terminal output: still what the agent read).
- `system` steps are the agent's standing instructions or the harness's notes: counted,
  not read. A result that only names a subagent's trajectory (`subagent_trajectory_ref`,
  terminus-2's summariser runs) is counted, its file never read.
- A compaction is a system step whose `extra.context_management.boundary` is `replace`
  (its observation's text, where a producer puts the summary there, is the summary), or,
  from producers that mark no boundary (terminus-2 before #1844), a file that goes on in
  another: the run continues in the file `continued_trajectory_ref` names (relative to
  the file), and the steps there marked `is_copied_context` are what the agent saw after
  the compaction (terminus-2: the original task again, the handoff summary, its
  questions and their answers). That copied context is read ONCE, as the compaction's
  summary, the baseline; it is never a second copy of the thread (the task it repeats is
  on the thread already). A compaction with no text to read leaves the baseline absent.
- The continuation files' text is on the main thread: each is named
  (`Transcript.inherited`) so it is scanned for secrets and pinned like the transcript.
  A chain of references that comes back to a file is refused in one line; so is a
  reference to a file that is missing or not an ATIF trajectory.
A `schema_version` this reader does not know is read as v1.7 and named
(`Transcript.vocabulary`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import (
    NULL,
    Message,
    ReadOptions,
    SessionError,
    Source,
    ToolCall,
    Transcript,
    arguments_text,
    check_file,
    counted,
    expect,
    json_document,
    parts_text,
    read_text,
)

KNOWN_VERSIONS = tuple(f"ATIF-v1.{n}" for n in range(8))
SOURCES = ("user", "agent", "system")


def _is_atif(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("schema_version"), str)
            and doc["schema_version"].startswith("ATIF") and "steps" in doc)


@dataclass
class _Run:
    """What the trajectory and its continuations hold, read in order."""

    opts: ReadOptions
    out: list[Message] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    left: Counter[str] = field(default_factory=Counter)
    absent: int = 0
    compactions: int = 0
    carry: list[str] | None = None  # the open compaction's text, None when none is open

    def open(self, text: str = "") -> None:
        self.close()
        self.compactions += 1
        self.carry = [text] if text else []

    def close(self) -> None:
        if self.carry is None:
            return
        if self.carry:
            self.summaries.append("\n".join(self.carry))
        else:
            self.absent += 1  # compacted, and no text the agent went on with
        self.carry = None


def _text(value: Any, at: str, key: str) -> str:
    expect(value, (str, list, NULL), at, key, "a string, a list of content parts or null")
    return parts_text(value, at, key)


def _check(at: str, step: Any) -> dict[str, Any]:
    expect(step, (dict,), at, "the step", "an object {step_id, source, message}")
    expect(step.get("step_id"), (int,), at, "step_id", "the step's number")
    source = expect(step.get("source"), (str,), at, "source", "user, agent or system")
    if source not in SOURCES:
        raise SessionError(f"{at}: source is {source!r}, not user, agent or system; an "
                           "ATIF step names who wrote it")
    calls = expect(step.get("tool_calls"), (list, NULL), at, "tool_calls",
                   "the agent's calls [{tool_call_id, function_name, arguments}]")
    for i, c in enumerate(calls or []):
        expect(c, (dict,), at, f"tool_calls[{i}]", "a call {tool_call_id, function_name}")
        expect(c.get("function_name"), (str,), at, f"tool_calls[{i}].function_name",
               "the tool's name")
    obs = expect(step.get("observation"), (dict, NULL), at, "observation",
                 "{results: [{source_call_id, content}]}")
    results = expect((obs or {}).get("results") or [], (list,), at, "observation.results",
                     "a list of results")
    for i, r in enumerate(results):
        expect(r, (dict,), at, f"observation.results[{i}]", "a result {content}")
    expect(step.get("extra"), (dict, NULL), at, "extra", "the step's metadata object")
    expect(step.get("is_copied_context"), (bool, NULL), at, "is_copied_context",
           "true on context copied from before a compaction")
    expect(step.get("reasoning_content"), (str, NULL), at, "reasoning_content",
           "the agent's reasoning text")
    return step


def _boundary(step: dict[str, Any]) -> bool:
    """A system step that replaced the agent's context (ATIF v1.7 context_management)."""
    cm = (step.get("extra") or {}).get("context_management")
    return (step.get("source") == "system" and isinstance(cm, dict)
            and cm.get("boundary") == "replace")


def _results(step: dict[str, Any], at: str, run: _Run) -> tuple[list[str], int]:
    """The observation's texts, and how many results only name a subagent's trajectory."""
    texts, refs = [], 0
    for i, r in enumerate((step.get("observation") or {}).get("results") or []):
        content = _text(r.get("content"), at, f"observation.results[{i}].content")
        if r.get("content") is None and r.get("subagent_trajectory_ref"):
            refs += 1
            continue
        texts.append(content)
    return texts, refs


def _messages(step: dict[str, Any], at: str, run: _Run, line: int) -> list[Message]:
    """A user or agent step as the messages of the thread (or of the copied context)."""
    text = _text(step.get("message"), at, "message")
    if step["source"] == "user":
        return [Message("user", text, line=line)]
    calls = tuple(ToolCall(c["function_name"], arguments_text(c.get("arguments") or {}))
                  for c in step.get("tool_calls") or [])
    thinking = step.get("reasoning_content") or ""
    if thinking and not run.opts.include_thinking:
        run.left["reasoning"] += 1
    results, refs = _results(step, at, run)
    run.left["subagent_ref"] += refs
    own = [Message("assistant", text, calls, thinking if run.opts.include_thinking else "",
                   line)] if text or calls or (thinking and run.opts.include_thinking) else []
    return own + [Message("tool", r, line=line) for r in results]


def _render(msgs: list[Message]) -> str:
    return "\n".join(f"{m.role}: {m.text}".rstrip() for m in msgs if m.text)


def _read_steps(path: Path, doc: dict[str, Any], run: _Run) -> None:
    steps = expect(doc.get("steps"), (list,), str(path), "steps",
                   "an ATIF trajectory holds its steps as a list")
    for i, raw in enumerate(steps):
        at = f"{path}: steps[{i}]"
        step = _check(at, raw)
        if step.get("is_copied_context"):
            if run.carry is None:
                run.open()  # copied context with no compaction before it in the files
            assert run.carry is not None
            if step["source"] == "system":
                run.carry.append(_text(step.get("message"), at, "message"))
            else:
                run.carry.append(_render(_messages(step, at, run, i + 1)))
            run.left["copied_context"] += 1
            continue
        if _boundary(step):
            texts, refs = _results(step, at, run)
            run.left["subagent_ref"] += refs
            run.open("\n".join(t for t in texts if t))
            continue
        if step["source"] == "system":
            texts, refs = _results(step, at, run)
            run.left["subagent_ref"] += refs
            run.left["system"] += 1
            continue
        run.close()
        run.out += _messages(step, at, run, i + 1)


def _continuation(path: Path, doc: dict[str, Any], seen: list[Path], max_mb: float
                  ) -> tuple[Path, dict[str, Any], int] | None:
    """The file this trajectory goes on in (continued_trajectory_ref, relative to it), its
    trajectory and its number of lines."""
    ref = expect(doc.get("continued_trajectory_ref"), (str, NULL), str(path),
                 "continued_trajectory_ref", "the file the run goes on in")
    if not ref:
        return None
    nxt = (path.parent / ref).resolve()
    if nxt in seen:
        chain = " -> ".join(p.name for p in [*seen, nxt])
        raise SessionError(f"{path}: continued_trajectory_ref {ref!r} comes back to a file "
                           f"already read ({chain}): a cycle of continuations; each "
                           "continuation names the next file or none")
    p = check_file(nxt, f"{path}: continued_trajectory_ref {ref!r}", max_mb)
    text = read_text(p, max_mb)
    try:
        cont = json.loads(text)
    except json.JSONDecodeError as e:
        raise SessionError(f"{path}: continued_trajectory_ref {ref!r} names {p}, which is not "
                           f"JSON ({e.msg} at line {e.lineno}); it names the ATIF trajectory "
                           "the run goes on in") from e
    if not _is_atif(cont):
        raise SessionError(f"{path}: continued_trajectory_ref {ref!r} names {p}, which is not "
                           "an ATIF trajectory (no schema_version ATIF-v1.x with steps[])")
    return p, cont, len(text.splitlines())


def _vocabulary(doc: dict[str, Any]) -> str:
    version = doc["schema_version"]
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    who = " ".join(str(agent[k]) for k in ("name", "version") if agent.get(k))
    said = f"{version} ({who})" if who else version
    if version not in KNOWN_VERSIONS:
        said += f": a version this reader does not know, read as {KNOWN_VERSIONS[-1]}"
    return said


class Atif(Source):
    format = "atif"
    title = "ATIF trajectory"
    shape = ("one JSON document with schema_version ATIF-v1.x and steps[] (an ATIF "
             "trajectory.json, Harbor)")

    def document(self, text: str) -> dict[str, Any] | None:
        doc = json_document(text)
        return doc if _is_atif(doc) else None

    def read_document(self, path: Path, doc: dict[str, Any], opts: ReadOptions
                      ) -> Transcript:
        run = _Run(opts)
        files = [path.resolve()]
        inherited: list[tuple[str, int]] = []
        here, current = path, doc
        while True:
            _read_steps(here, current, run)
            nxt = _continuation(here, current, files, opts.max_mb)
            if nxt is None:
                break
            if run.carry is None:
                run.open()  # a producer that marks no boundary: the file ends at one
            here, current, lines = nxt
            files.append(here.resolve())
            inherited.append((str(here), lines))
        run.close()
        if not any(m.role in ("user", "assistant") for m in run.out):
            raise SessionError(f"{path}: no user or agent step outside the copied context; an "
                               "ATIF trajectory holds the conversation as such steps")
        return Transcript(str(path), self.format, tuple(run.out), tuple(run.summaries),
                          compactions=run.compactions, left_out=counted(run.left),
                          inherited=tuple(inherited), vocabulary=_vocabulary(doc),
                          absent_summaries=run.absent)
