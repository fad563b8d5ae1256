"""OpenCode sessions: the SQLite store of OpenCode 1.x and 2.x
(`~/.local/share/opencode/opencode.db`, one database for every session; `session:` names
the one to read) and the JSON files earlier versions wrote
(`~/.local/share/opencode/storage/`, the folder with `session:` or the session's file).

Shapes learned from OpenCode's source (sst/opencode, now anomalyco/opencode:
`packages/opencode/src/session/session.sql.ts`, the drizzle tables `session`, `message`,
`part`, `session_message`; `message-v2.ts`, the message and part kinds;
`packages/core/src/session-message.ts`, the 2.x message kinds), from a dump of a live
1.x database's schema and from public readers of the store (usage trackers and session
browsers that read both table generations).

1.x tables: `message {id, session_id, time_created, time_updated, data}` and `part {id,
message_id, session_id, time_created, time_updated, data}`, `data` the JSON of the message
or part without its ids, times in milliseconds, ids as OpenCode forms them (`ses_`,
`msg_`, `prt_` and a time-ordered suffix). A message's `data.role` is user or assistant;
its parts, in id order, are what it holds:
- read: `text` (`ignored` ones left out, `synthetic` ones, text the CLI put in the user's
  turn such as an @-mentioned file's content, read and counted `read_in`), `tool` (the
  call `{tool, state.input}` and its result `state.output`, or `state.error`; a pending or
  running call has no result yet and is counted), `reasoning` (only with
  include_thinking), `file` (named as `[file <name>]`: its content reaches the model as
  the synthetic text beside it or as an attachment the study cannot read);
- not seen by the model, counted by kind: `step-start`, `step-finish`, `snapshot`,
  `patch`, `agent`, `subtask`, `retry`, `compaction`.
An assistant message's parts are its steps in order: text and calls, then the calls'
results, then the next step's text (a `step-start` or text after results starts a new
assistant turn).

Compaction (1.x): the user message that asked for it holds a `compaction` part (`auto`
when the CLI triggered it) and no text; the assistant message answering it has
`summary: true` (`mode`/`agent` `compaction`) and its text part is the summary the model
went on from: the baseline, never a turn. The history before it stays on the thread (the
agent read it before it compacted). Pruning: a tool result whose `state.time.compacted`
is set was replaced, in what the model saw after, by OpenCode's placeholder "[Old tool
result content cleared]": read as that placeholder (counted `pruned_output`).

2.x tables (assumed as far as the source was found: the `session_message` table is in
the source; the table `session_v2` beside it is named by public readers of 2.x databases,
not in the source read): `session_message {id, session_id, type, time_created,
time_updated, data}`, the message kind in `type` and the rest in `data`: `user {text,
files}`, `synthetic {text}` (read as the user's turn, counted `read_in`), `shell
{command, output}` (a `!` command the user ran, read as a user turn with its output),
`assistant {content: [text | reasoning | tool {name, state {status, input, content[],
error}, time.pruned}]}` (a tool's `content` items `{type: text, text}` are its result;
a pruned one read as the placeholder), `compaction {summary}` (the baseline), and
`agent-switched` / `model-switched` (counted). 2.x leaves the 1.x rows where they were: a
session with rows in both generations is read 1.x rows first (the older history), then
2.x. The sessions offered are those with a message row, from `session` and, where it
exists, `session_v2`.

A subagent (the `task` tool) runs in a session of its own whose `parent_id` is this one:
never read, counted (`subagent_session`); the parent sees the task tool's result.

Earlier versions' JSON storage: `storage/session/<project id>/<session id>.json` (the
session's info `{id, projectID, directory, title, version, time}`), its messages in
`storage/message/<session id>/<message id>.json` and their parts in
`storage/part/<message id>/<part id>.json`, the same JSON as the tables' `data` with the
ids in it (beside them `storage/project/<project id>.json` and others the reader never
needs). Pointed at the storage folder itself, with `session:` naming the session id (or
none, when one session there has messages), the reader reads that session's file, as when
pointed at the file (`session:` then names that file's session or is left out). It reads
the message and part files of its storage folder; each is named (`Transcript.inherited`)
so it is scanned for secrets and pinned like the transcript; a subagent's session (a
session file whose `parentID` is this one) is counted, not read. A folder without the
session, a session without its message folder, a message or part file that is not one
JSON object of its shape: each refused in one line naming the file. The pre-1.0 layout
(`storage/session/info/`, `storage/session/message/`) is not read.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from glob import escape as glob_escape
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
    read_text,
)
from .database import Database, pick_session

PRUNED = "[Old tool result content cleared]"  # OpenCode's placeholder for a pruned output
UNSEEN = ("step-start", "step-finish", "snapshot", "patch", "agent", "subtask", "retry",
          "compaction")
INFO_BYTES = 1 << 16  # a session file's head read to order the listing (its info is < 1 KB)
V2_KINDS = ("user", "synthetic", "shell", "assistant", "compaction", "agent-switched",
            "model-switched")


@dataclass
class _Thread:
    """What a session's messages hold, read in order."""

    opts: ReadOptions
    out: list[Message] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    absent: int = 0
    left: Counter[str] = field(default_factory=Counter)
    read_in: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)
    inherited: list[tuple[str, int]] = field(default_factory=list)

    def thinking(self, texts: list[str], kind: str) -> str:
        if texts and not self.opts.include_thinking:
            self.left[kind] += len(texts)
        return "\n".join(texts) if self.opts.include_thinking else ""

    def summary(self, text: str) -> None:
        if text.strip():
            self.summaries.append(text)
        else:
            self.absent += 1  # compacted, and no summary text written

    def transcript(self, path: Path, vocabulary: str) -> Transcript:
        if not any(m.role in ("user", "assistant") for m in self.out):
            raise SessionError(f"{path}: no user or assistant message in the session; an "
                               "OpenCode session holds the conversation as such messages")
        return Transcript(str(path), "opencode", tuple(self.out), tuple(self.summaries),
                          compactions=len(self.summaries) + self.absent,
                          left_out=counted(self.left), read_in=counted(self.read_in),
                          inherited=tuple(self.inherited), vocabulary=vocabulary,
                          absent_summaries=self.absent)


# -- 1.x: messages and parts ---------------------------------------------------------------


def _check_part(p: dict[str, Any], at: str) -> str:
    kind = expect(p.get("type"), (str,), at, "type", "the part's kind (text, tool, ...)")
    if kind in ("text", "reasoning"):
        expect(p.get("text"), (str,), at, "text", f"a {kind} part's text is a string")
    elif kind == "tool":
        expect(p.get("tool"), (str,), at, "tool", "the tool's name")
        state = expect(p.get("state"), (dict,), at, "state",
                       "{status, input, output} of the call")
        expect(state.get("status"), (str,), at, "state.status",
               "pending, running, completed or error")
        expect(state.get("time"), (dict, NULL), at, "state.time", "{start, end, compacted}")
    return kind


def _tool_result(state: dict[str, Any], t: _Thread) -> str | None:
    """What the model read of a 1.x tool call: its output, its error, the placeholder of a
    pruned output; None while it has no result."""
    if (state.get("time") or {}).get("compacted"):
        t.left["pruned_output"] += 1
        return PRUNED
    if state["status"] == "completed":
        out = state.get("output")
        return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
    if state["status"] == "error":
        return str(state.get("error", ""))
    t.left["call_without_result"] += 1
    return None


class _Turn:
    """An assistant message's current step: its texts and calls, then their results."""

    def __init__(self, line: int) -> None:
        self.texts: list[str] = []
        self.thoughts: list[str] = []
        self.calls: list[ToolCall] = []
        self.results: list[tuple[str, int]] = []
        self.line = line

    def flush(self, t: _Thread, line: int = 0) -> None:
        """The step's turns onto the thread; the next step starts at `line`."""
        thinking = t.thinking(self.thoughts, "reasoning")
        if self.texts or self.calls or thinking:
            t.out.append(Message("assistant", "\n".join(self.texts), tuple(self.calls),
                                 thinking, self.line))
        t.out += [Message("tool", text, line=line) for text, line in self.results]
        self.__init__(line)


def _user(parts: list[tuple[dict[str, Any], int]], line: int, t: _Thread) -> None:
    """A user message, named by the line of its first text part (else its own row)."""
    texts: list[str] = []
    first = 0
    for p, pline in parts:
        kind = p["type"]
        if kind == "text":
            if p.get("ignored"):
                t.left["ignored_text"] += 1
                continue
            if p.get("synthetic"):
                t.read_in["synthetic"] += 1
            texts.append(p["text"])
            first = first or pline
        elif kind == "file":
            texts.append(f"[file {p.get('filename') or p.get('url') or ''}]".replace(" ]", "]"))
        else:
            t.left[kind] += 1
    if texts:
        t.out.append(Message("user", "\n".join(texts), line=first or line))


def _assistant(parts: list[tuple[dict[str, Any], int]], line: int, t: _Thread) -> None:
    turn = _Turn(line)
    for p, pline in parts:
        kind = p["type"]
        if kind == "step-start" or (kind in ("text", "reasoning", "tool") and turn.results):
            turn.flush(t, pline)
        if kind == "text":
            if p.get("ignored"):
                t.left["ignored_text"] += 1
            elif p["text"]:
                turn.texts.append(p["text"])
        elif kind == "reasoning":
            turn.thoughts.append(p["text"])
        elif kind == "tool":
            state = p["state"]
            turn.calls.append(ToolCall(p["tool"], arguments_text(state.get("input") or {})))
            if (result := _tool_result(state, t)) is not None:
                turn.results.append((result, pline))
        elif kind == "file":
            turn.texts.append(f"[file {p.get('filename') or ''}]".replace(" ]", "]"))
        elif kind != "step-start":
            t.left[kind] += 1
    turn.flush(t)


def _message(info: dict[str, Any], parts: list[tuple[dict[str, Any], int]], line: int,
             at: str, t: _Thread) -> None:
    role = expect(info.get("role"), (str,), at, "role", "user or assistant")
    if role == "assistant" and info.get("summary") is True:
        t.summary("\n".join(p["text"] for p, _ in parts if p["type"] == "text"))
        t.left["compaction_summary"] += 1
        return
    if role == "user":
        _user(parts, line, t)
    elif role == "assistant":
        _assistant(parts, line, t)
    else:
        raise SessionError(f"{at}: role is {role!r}, not user or assistant; an OpenCode "
                           "message is one of them")


def _read_v1(db: Database, session: str, t: _Thread) -> None:
    msgs = db.rows("SELECT id, data FROM message WHERE session_id = ? "
                   "ORDER BY time_created, id", session)
    parts = db.rows("SELECT id, message_id, data FROM part WHERE session_id = ? "
                    "ORDER BY message_id, id", session)
    by_message: dict[str, list[tuple[dict[str, Any], int]]] = {}
    for r in parts:
        at = f"{db.path}: part {r['id']}"
        p = db.cell(r["data"], at, "data", what="the part's JSON object")
        _check_part(p, at)
        by_message.setdefault(r["message_id"], []).append((p, db.line("part", r["id"],
                                                                       r["data"])))
    for r in msgs:
        at = f"{db.path}: message {r['id']}"
        info = db.cell(r["data"], at, "data", what="the message's JSON object {role, ...}")
        line = db.line("message", r["id"], r["data"])
        _message(info, by_message.pop(r["id"], []), line, at, t)
    t.left["part_without_message"] += sum(len(v) for v in by_message.values())


# -- 2.x: session_message ------------------------------------------------------------------


def _v2_tool(c: dict[str, Any], at: str, t: _Thread) -> tuple[ToolCall, str | None]:
    state = expect(c.get("state"), (dict,), at, "content[].state",
                   "{status, input, content} of the call")
    status = expect(state.get("status"), (str,), at, "content[].state.status",
                    "pending, running, completed or error")
    call = ToolCall(str(c.get("name", "")), arguments_text(state.get("input") or {}))
    if (c.get("time") or {}).get("pruned"):
        t.left["pruned_output"] += 1
        return call, PRUNED
    if status not in ("completed", "error"):
        t.left["call_without_result"] += 1
        return call, None
    items = expect(state.get("content") or [], (list,), at, "content[].state.content",
                   "the result's content items")
    out = [i["text"] if isinstance(i, dict) and isinstance(i.get("text"), str)
           else f"[{i.get('type', 'item') if isinstance(i, dict) else 'item'}]"
           for i in items]
    if status == "error" and state.get("error") is not None:
        err = state["error"]
        out.append(err if isinstance(err, str) else json.dumps(err, ensure_ascii=False))
    return call, "\n".join(out)


def _v2_assistant(data: dict[str, Any], line: int, at: str, t: _Thread) -> None:
    turn = _Turn(line)
    content = expect(data.get("content"), (list,), at, "content",
                     "the assistant's text, reasoning and tool items")
    for i, c in enumerate(content):
        expect(c, (dict,), at, f"content[{i}]", "an item {type, ...}")
        kind = c.get("type")
        if kind in ("text", "reasoning", "tool") and turn.results:
            turn.flush(t, line)
        if kind == "text":
            if c.get("ignored"):
                t.left["ignored_text"] += 1
            else:
                turn.texts.append(str(expect(c.get("text"), (str,), at, f"content[{i}].text",
                                             "a text item's text is a string")))
        elif kind == "reasoning":
            turn.thoughts.append(str(c.get("text", "")))
        elif kind == "tool":
            call, result = _v2_tool(c, at, t)
            turn.calls.append(call)
            if result is not None:
                turn.results.append((result, line))
        else:
            t.left[f"item:{kind}"] += 1
    turn.flush(t)


def _read_v2(db: Database, session: str, t: _Thread) -> None:
    for r in db.rows("SELECT id, type, data FROM session_message WHERE session_id = ? "
                     "ORDER BY time_created, id", session):
        at = f"{db.path}: session_message {r['id']}"
        kind = r["type"]
        if kind not in V2_KINDS:
            raise SessionError(f"{at}: type is {kind!r}, not one of {', '.join(V2_KINDS)}; "
                               "an OpenCode 2.x message is one of them")
        data = db.cell(r["data"], at, "data", what="the message's JSON object")
        line = db.line("session_message", r["id"], r["data"])
        if kind in ("user", "synthetic"):
            text = expect(data.get("text"), (str,), at, "text", "the turn's text")
            files = [f"[file {f.get('name') or f.get('filename') or ''}]".replace(" ]", "]")
                     for f in data.get("files") or [] if isinstance(f, dict)]
            if kind == "synthetic":
                t.read_in["synthetic"] += 1
            t.out.append(Message("user", "\n".join([text, *files]) if files else text,
                                 line=line))
        elif kind == "shell":
            t.read_in["shell"] += 1
            t.out.append(Message("user", f"$ {data.get('command', '')}\n"
                                         f"{data.get('output', '')}".rstrip(), line=line))
        elif kind == "assistant":
            _v2_assistant(data, line, at, t)
        elif kind == "compaction":
            t.summary(str(expect(data.get("summary"), (str,), at, "summary",
                                 "the compaction's summary text")))
            t.left["compaction_summary"] += 1
        else:
            t.left[kind] += 1


def _sessions(db: Database) -> list[str]:
    """The sessions with a message row, the most recently updated first."""
    found: dict[str, int] = {}
    if "message" in db.tables:
        for r in db.rows("SELECT session_id, MAX(time_updated) AS t FROM message "
                         "GROUP BY session_id"):
            found[r["session_id"]] = r["t"] or 0
    if "session_message" in db.tables:
        for r in db.rows("SELECT session_id, MAX(time_updated) AS t FROM session_message "
                         "GROUP BY session_id"):
            found[r["session_id"]] = max(found.get(r["session_id"], 0), r["t"] or 0)
    return sorted(found, key=lambda s: (-found[s], s))


def _children(db: Database, session: str) -> int:
    return sum(len(db.rows(f"SELECT id FROM {table} WHERE parent_id = ?", session))
               for table in ("session", "session_v2")
               if table in db.tables and "parent_id" in db.columns(table))


# -- the JSON storage of earlier versions ----------------------------------------------------


def _is_session_info(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("id"), str)
            and doc["id"].startswith("ses_") and "projectID" in doc and "time" in doc
            and "messages" not in doc)


def _json_file(p: Path, max_mb: float, t: _Thread, what: str) -> dict[str, Any]:
    text = read_text(check_file(p, str(p), max_mb), max_mb)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise SessionError(f"{p}: not JSON ({e.msg} at line {e.lineno}); OpenCode writes "
                           f"{what} there as one JSON object") from e
    t.inherited.append((str(p.resolve()), len(text.splitlines())))
    return expect(doc, (dict,), str(p), "the file", f"{what}, a JSON object")


def _read_storage(path: Path, info: dict[str, Any], t: _Thread) -> None:
    root = path.resolve().parent.parent.parent  # storage/session/<project id>/<id>.json
    where = root / "message" / info["id"]
    if not where.is_dir():
        raise SessionError(f"{path}: OpenCode session {info['id']}, but its messages are not "
                           f"in {where}; point `transcript` at a session file inside "
                           "OpenCode's storage folder (storage/session/<project>/<id>.json)")
    files = sorted(where.glob("msg_*.json"))
    infos = [(f, _json_file(f, t.opts.max_mb, t, "a message's info")) for f in files]
    infos.sort(key=lambda fi: ((fi[1].get("time") or {}).get("created") or 0, fi[0].name))
    for f, msg in infos:
        parts = []
        for pf in sorted((root / "part" / f.stem).glob("prt_*.json")):
            p = _json_file(pf, t.opts.max_mb, t, "a message part")
            _check_part(p, str(pf))
            parts.append((p, 1))
        _message(msg, parts, 1, str(f), t)
    # a subagent's session is a session file of its own whose parentID is this one
    t.left["subagent_session"] += sum(
        _info_head(f).get("parentID") == info["id"]
        for f in (root / "session").glob("*/ses_*.json") if f.stem != info["id"])


def _is_storage(folder: Path) -> bool:
    """Whether a folder is OpenCode's JSON storage (its `session` and `message` folders)."""
    return (folder / "session").is_dir() and (folder / "message").is_dir()


def _info_head(info: Path) -> dict[str, Any]:
    """Another session's file, glanced at for its `time.updated` (the listing's order) or
    its `parentID` (a subagent's): {} when unreadable, since only the file read is refused
    by name."""
    try:
        with info.open("rb") as f:
            doc = json.loads(f.read(INFO_BYTES))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _updated(info: Path) -> int:
    t = _info_head(info).get("time")
    u = t.get("updated") if isinstance(t, dict) else None
    return u if isinstance(u, int) and not isinstance(u, bool) else 0


def storage_session(root: Path, session: str | None) -> Path:
    """The session file (`session/<project id>/<id>.json`) of the storage folder that
    `session` names, or of the only session with messages it holds; refused in one line
    listing the sessions present (the most recently updated first) otherwise."""
    if session is not None and Path(session).name == session and session not in (".", ".."):
        found = sorted((root / "session").glob(f"*/{glob_escape(session)}.json"))
        if len(found) > 1:
            raise SessionError(f"{root}: OpenCode session {session} has a file in "
                               f"{len(found)} project folders ({found[0]}, {found[1]}); "
                               "point `transcript` at the one to read")
        if found:
            return found[0]
    files = {f.stem: f for f in (root / "session").glob("*/ses_*.json")
             if (root / "message" / f.stem).is_dir()}
    if not files:
        raise SessionError(f"{root}: OpenCode's JSON storage, but no session in "
                           "session/<project id>/ has a message folder in message/; point "
                           "`transcript` at the storage folder the CLI wrote the session to")
    updated = {sid: _updated(f) for sid, f in files.items()}
    present = sorted(files, key=lambda sid: (-updated[sid], sid))
    return files[pick_session(root, present, session, "OpenCode session")]


class OpenCode(Source):
    format = "opencode"
    title = "OpenCode session"
    shape = ("OpenCode's opencode.db (tables session, message, part; 2.x session_message), "
             "or its JSON storage: the storage folder (with `session:`) or a session file "
             "there (storage/session/<project>/<id>.json)")
    tables = "session, message, part (1.x) or session_message (2.x), OpenCode's opencode.db"

    def database(self, tables: frozenset[str]) -> bool:
        return ({"session", "message", "part"} <= tables
                or ("session_message" in tables and bool({"session", "session_v2"} & tables)))

    def read_database(self, path: Path, db: Database, opts: ReadOptions) -> Transcript:
        session = pick_session(path, _sessions(db), opts.session, "OpenCode session")
        t = _Thread(opts)
        generations = []
        if "message" in db.tables and db.rows(
                "SELECT 1 FROM message WHERE session_id = ? LIMIT 1", session):
            _read_v1(db, session, t)
            generations.append("1.x tables (message, part)")
        if "session_message" in db.tables and db.rows(
                "SELECT 1 FROM session_message WHERE session_id = ? LIMIT 1", session):
            _read_v2(db, session, t)
            generations.append("2.x tables (session_message)")
        t.left["subagent_session"] += _children(db, session)
        return t.transcript(path, f"{' then '.join(generations)}, session {session}")

    def session_file(self, path: Path, session: str | None) -> Path | None:
        if path.is_dir():
            return storage_session(path, session) if _is_storage(path) else None
        if (session is None or path.suffix != ".json" or len(path.parents) < 3
                or path.parent.parent.name != "session" or not _is_storage(path.parents[2])):
            return None
        if path.stem != session:
            raise SessionError(f"{path}: the file of OpenCode session {path.stem}, and "
                               f"`session: {session}` names another; point `transcript` at "
                               f"the storage folder ({path.parents[2]}) to pick a session by "
                               "`session:`, or leave `session:` out")
        return path

    def document(self, text: str) -> dict[str, Any] | None:
        doc = json_document(text)
        return doc if _is_session_info(doc) else None

    def read_document(self, path: Path, doc: dict[str, Any], opts: ReadOptions
                      ) -> Transcript:
        t = _Thread(opts)
        _read_storage(path, doc, t)
        return t.transcript(path, f"JSON storage, session {doc['id']}")
