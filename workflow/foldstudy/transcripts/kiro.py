"""Kiro CLI sessions (`~/.kiro/sessions/cli/<session id>.jsonl`, the JSONL store of Kiro
CLI 2.x, with `<session id>.json` beside it), learned from public readers only.

Kiro CLI is closed source, and AWS publishes no schema of these files. The shapes here
are the ones public parsers read and their tests write from files they measured (agent
fleet tools' Kiro adapters measured on Kiro CLI 2.14.1, a usage tracker's Kiro parser,
session browsers) and kirodotdev/Kiro #6110 (a corrupted session's lines):
- one line `{version: "v1", kind, data}`; `data {message_id, content: [{kind, data}],
  meta: {timestamp}}`, `meta.timestamp` unix seconds (an integer or a float);
- `Prompt`: the user's turn, its `text` blocks (`data` a string); `image` blocks named;
- `AssistantMessage`: the agent's `text` blocks, `thinking` blocks (`data` a string or
  `{text}`, read only with include_thinking) and `toolUse` blocks `{toolUseId, name,
  input}` (`input.__tool_use_purpose` is the CLI's own label, kept as written);
- `ToolResults`: `toolResult` blocks `{toolUseId, content: [{kind: json | text, data}],
  status}`, each a tool message (a `json` result as the JSON the model received);
- `Clear` (`/clear`): the model's context starts again; what came before it is off the
  thread (`off_thread`, counted `before_clear`).
#6110, read as the CLI wrote it: an `AssistantMessage` whose call's input the CLI replaced
by a "SYSTEM NOTE" placeholder, written before the previous call's results; the results
are kept where they were written and a call whose result never came is counted
(`call_without_result`); a result whose call is not in the file is kept where the agent
saw it, its line noted (`Transcript.orphan_outputs`).

Not found in any public source, so not read: how a compaction (`/compact`) is written
in this store. A line of any other kind is counted by kind (`left_out`), so a compacted
session says so in the manifest, and its summary is never guessed: the baseline is
absent. The `<session id>.json` beside the file (session id, working directory, model
and per-turn token counts) holds no conversation and is never read; pointed at, it is
refused naming the JSONL file to read instead.

The older builds' SQLite database (`conversations_v2`, Kiro CLI 1.x and Amazon Q
Developer CLI) is the same format's other store: `Kiro.database` claims it and
kiro_sqlite.py reads it, its `/compact` summary (`latest_summary`) the baseline.
"""

from __future__ import annotations

import json
from collections import Counter
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
    json_document,
    render_message,
)
from .kiro_sqlite import is_store, read_store

THREAD = ("Prompt", "AssistantMessage", "ToolResults")


def _blocks(r: dict[str, Any], at: str) -> list[dict[str, Any]]:
    data = expect(r.get("data"), (dict, NULL), at, "data", "{message_id, content}")
    content = expect((data or {}).get("content") or [], (list,), at, "data.content",
                     "a list of blocks [{kind, data}]")
    for i, b in enumerate(content):
        expect(b, (dict,), at, f"data.content[{i}]", "a block {kind, data}")
        kind = expect(b.get("kind"), (str,), at, f"data.content[{i}].kind", "the block's kind")
        if kind == "text":
            expect(b.get("data"), (str,), at, f"data.content[{i}].data",
                   "a text block's data is a string")
        elif kind in ("toolUse", "toolResult"):
            d = expect(b.get("data"), (dict,), at, f"data.content[{i}].data",
                       f"a {kind} block's data is an object")
            expect(d.get("toolUseId"), (str,), at, f"data.content[{i}].data.toolUseId",
                   "the id pairing a call and its result")
    return content


def _text(blocks: list[dict[str, Any]]) -> str:
    out = []
    for b in blocks:
        if b["kind"] == "text":
            if b["data"]:
                out.append(b["data"])
        elif b["kind"] not in ("toolUse", "toolResult", "thinking"):
            out.append(f"[{b['kind']}]")
    return "\n".join(out)


def _thinking(b: dict[str, Any]) -> str:
    d = b.get("data")
    return d if isinstance(d, str) else str(d.get("text", "")) if isinstance(d, dict) else ""


def _result_text(d: dict[str, Any], at: str) -> str:
    content = expect(d.get("content") or [], (list,), at, "toolResult.content",
                     "a list of result blocks [{kind, data}]")
    out = []
    for c in content:
        value = c.get("data") if isinstance(c, dict) else c
        out.append(value if isinstance(value, str)
                   else json.dumps(value, ensure_ascii=False))
    return "\n".join(out)


class Kiro(Source):
    format = "kiro"
    title = "Kiro CLI session"
    shape = ("JSONL lines {version, kind, data} (Kiro CLI ~/.kiro/sessions/cli/<id>.jsonl), "
             "or the older builds' data.sqlite3 (table conversations_v2)")
    tables = "conversations_v2, or conversations with state and migrations (data.sqlite3)"

    def database(self, tables: frozenset[str]) -> bool:
        return is_store(tables)

    def read_database(self, path: Path, db: Any, opts: ReadOptions) -> Transcript:
        return read_store(path, db, opts, self.format)

    def looks(self, record: dict[str, Any]) -> bool:
        return (isinstance(record.get("kind"), str) and "data" in record
                and "type" not in record and "uuid" not in record)

    def document(self, text: str) -> dict[str, Any] | None:
        doc = json_document(text)
        return doc if isinstance(doc, dict) and "session_state" in doc \
            and "session_id" in doc else None

    def read_document(self, path: Path, doc: dict[str, Any], opts: ReadOptions
                      ) -> Transcript:
        raise SessionError(f"{path}: the Kiro CLI session's metadata (session_id, "
                           "session_state), not its conversation; point `transcript` at "
                           f"{path.with_suffix('.jsonl').name} beside it")

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        out: list[Message] = []
        off: list[Message] = []
        left: Counter[str] = Counter()
        orphans: list[int] = []
        pending: set[str] = set()
        answered: set[str] = set()
        for line, r in records:
            at = f"{path}:{line}"
            kind = expect(r.get("kind"), (str,), at, "kind", "Prompt, AssistantMessage, ...")
            if kind == "Clear":
                left["before_clear"] += len(out)
                off += out
                out = []
                left["call_without_result"] += len(pending - answered)
                pending.clear()
                continue
            if kind not in THREAD:
                left[kind] += 1
                continue
            blocks = _blocks(r, at)
            if kind == "Prompt":
                if text := _text(blocks):
                    out.append(Message("user", text, line=line))
                else:
                    left["empty_prompt"] += 1
            elif kind == "AssistantMessage":
                calls = []
                for b in blocks:
                    if b["kind"] == "toolUse":
                        pending.add(b["data"]["toolUseId"])
                        calls.append(ToolCall(str(b["data"].get("name", "")),
                                              arguments_text(b["data"].get("input") or {})))
                thoughts = [_thinking(b) for b in blocks if b["kind"] == "thinking"]
                if thoughts and not opts.include_thinking:
                    left["thinking"] += len(thoughts)
                thinking = "\n".join(thoughts) if opts.include_thinking else ""
                text = _text(blocks)
                if text or calls or thinking:
                    out.append(Message("assistant", text, tuple(calls), thinking, line))
            else:
                for b in blocks:
                    if b["kind"] != "toolResult":
                        continue
                    call = b["data"]["toolUseId"]
                    if call not in pending:
                        orphans.append(line)  # its call is not in the file
                    answered.add(call)
                    out.append(Message("tool", _result_text(b["data"], at), line=line))
        left["call_without_result"] += len(pending - answered)
        if not any(m.role in ("user", "assistant") for m in out):
            raise SessionError(f"{path}: no Prompt or AssistantMessage line (after the last "
                               "Clear); a Kiro CLI session holds the conversation as such "
                               "lines")
        return Transcript(str(path), self.format, tuple(out),
                          off_thread=tuple(render_message(m) for m in off),
                          left_out=counted(left), orphan_outputs=tuple(orphans))
