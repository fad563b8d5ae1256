"""Writes the "ferry" session as the CLIs that keep sessions in a store write it: SQL text
files a test loads into a SQLite database (no binary database is committed), and the JSON
files and JSONL of their earlier versions.

- opencode/opencode-1x.sql: OpenCode 1.x's opencode.db: the tables `project`, `session`,
  `message`, `part` as its drizzle migration creates them (backquoted names, JSON in
  `data` text columns, millisecond times, ids `ses_`/`msg_`/`prt_` and a time-ordered
  suffix), the ferry session with its compaction (a user message holding a `compaction`
  part, the assistant's `summary: true` answer, the synthetic "Continue" turn), a pruned
  tool output (`state.time.compacted`), step, snapshot and patch parts; another session
  and a subagent's child session (`parent_id`) beside it.
- opencode/opencode-2x.sql: the same database after 2.x: the 1.x rows of an older session
  left where they were, the ferry session in `session_v2` / `session_message` (the kind
  in `type`, the rest in `data`: user, assistant with text, reasoning and tool items, a
  pruned tool, compaction, synthetic, model-switched).
- opencode/storage/: the JSON storage of earlier versions: project/<project>.json,
  session/<project>/<id>.json, message/<session>/<msg>.json, part/<msg>/<part>.json; the
  ferry session, the older one and the subagent's child session, as in the database.
- goose/sessions-db.sql: goose 1.10+'s sessions.db (schema v5 as SessionStorage::create
  writes it, WAL): the ferry session after a manual compaction (the messages before it
  `agentVisible: false`, the summary a user message for the agent only, the agent-only
  continuation), a tool response in the older list shape, another session and a
  subagent's (`sub_agent`); goose/sessions/<id>.jsonl: the same session as goose before
  1.10 wrote it, a metadata line then one message a line.
- kiro/data-sqlite3.sql: the data.sqlite3 of Kiro CLI's older builds (Amazon Q Developer
  CLI's chat client), its migrations 000-008 as the client applies them (rollback
  journal), the ferry conversation in `conversations_v2` after /compact (the drained
  history gone, `latest_summary` [summary, request metadata], the turns after it in
  `history` entries) beside another directory's conversation; data-sqlite3-v007.sql:
  before migration 008, the same conversation in `conversations` as builds before 1.13
  wrote it (history pairs, the summary a string).

Every fact of ferry-facts.yaml is in a user message and a tool result, and in each CLI's
own summary where the format has one (never the tag, said after it). Learned from each
tool's source (the readers' docstrings name it). Run from the repository root:
`python tests/data/sessions/write_ferry_stores.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
CWD = "/home/dev/ferry"
PORT = "47213"  # in the user's first message
BUCKET = "ferry-archive-w3"  # in a tool result
TAG = "v4.2.7-ferry"  # in a user message after the compaction

TASK = (f"Wire the ferry relay to the archive; it listens on port {PORT}. "
        "Find the bucket it writes to.")
CONFIG = f"[archive]\nbucket = \"{BUCKET}\"\nregion = \"eu-west-1\"\n\n[relay]\nport = {PORT}"
SUMMARY = (f"## Summary\nThe ferry relay listens on port {PORT}. Its archive bucket is "
           f"{BUCKET} (relay.toml). Next: point the relay at the bucket and restart it.")
TAG_ASK = f"Skip the diagram. Tag the release {TAG}."
T0 = 1764925200000  # 2025-12-05T09:00:00Z, in milliseconds as OpenCode writes times


def sql_text(value: object) -> str:
    """A SQL string literal of a JSON value as the CLI stores it (compact JSON text)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           separators=(",", ":"))
    return "'" + text.replace("'", "''") + "'"


def insert(table: str, row: dict) -> str:
    cols = ", ".join(f"`{k}`" for k in row)
    vals = ", ".join("NULL" if v is None else str(v) if isinstance(v, (int, float))
                     and not isinstance(v, bool) else sql_text(v) for v in row.values())
    return f"INSERT INTO `{table}` ({cols}) VALUES ({vals});"


def write(path: Path, head: str, statements: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head.strip() + "\n\n" + "\n".join(statements) + "\n", encoding="utf-8")


# -- OpenCode ------------------------------------------------------------------------------

OPENCODE_1X = """
-- OpenCode 1.x ~/.local/share/opencode/opencode.db, as its drizzle migrations create it
-- (packages/opencode/migration/, packages/opencode/src/session/session.sql.ts); WAL mode.
PRAGMA journal_mode = WAL;
CREATE TABLE `project` (
\t`id` text PRIMARY KEY,
\t`worktree` text NOT NULL,
\t`vcs` text,
\t`name` text,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL
);
CREATE TABLE `session` (
\t`id` text PRIMARY KEY,
\t`project_id` text NOT NULL,
\t`parent_id` text,
\t`slug` text NOT NULL,
\t`directory` text NOT NULL,
\t`title` text NOT NULL,
\t`version` text NOT NULL,
\t`share_url` text,
\t`summary_additions` integer,
\t`summary_deletions` integer,
\t`summary_files` integer,
\t`summary_diffs` text,
\t`revert` text,
\t`permission` text,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`time_compacting` integer,
\t`time_archived` integer,
\t`workspace_id` text,
\t`path` text,
\t`agent` text,
\t`model` text,
\tCONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`)
		REFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE TABLE `message` (
\t`id` text PRIMARY KEY,
\t`session_id` text NOT NULL,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`data` text NOT NULL,
\tCONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`)
		REFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE TABLE `part` (
\t`id` text PRIMARY KEY,
\t`message_id` text NOT NULL,
\t`session_id` text NOT NULL,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`data` text NOT NULL,
\tCONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`)
		REFERENCES `message`(`id`) ON DELETE CASCADE
);
CREATE TABLE `todo` (
\t`session_id` text NOT NULL,
\t`content` text NOT NULL,
\t`status` text NOT NULL,
\t`priority` text NOT NULL,
\t`position` integer NOT NULL,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\tCONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`)
);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
"""

OPENCODE_2X = """
-- OpenCode 2.x adds, beside the 1.x tables it leaves as they were:
CREATE TABLE `session_v2` (
\t`id` text PRIMARY KEY,
\t`project_id` text NOT NULL,
\t`parent_id` text,
\t`slug` text NOT NULL,
\t`directory` text NOT NULL,
\t`title` text NOT NULL,
\t`version` text NOT NULL,
\t`agent` text,
\t`model` text,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`time_compacting` integer,
\t`time_archived` integer
);
CREATE TABLE `session_message` (
\t`id` text PRIMARY KEY,
\t`session_id` text NOT NULL,
\t`type` text NOT NULL,
\t`time_created` integer NOT NULL,
\t`time_updated` integer NOT NULL,
\t`data` text NOT NULL
);
CREATE INDEX `session_message_session_idx` ON `session_message` (`session_id`);
CREATE INDEX `session_message_session_type_idx` ON `session_message` (`session_id`,`type`);
CREATE INDEX `session_message_time_created_idx` ON `session_message` (`time_created`);
"""

PROJECT = "4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e"  # the repository's root commit
FERRY = "ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s"
OTHER = "ses_1d2e0a9b8c7dHn3Jk5Lm8Np2Qr6t"
CHILD = "ses_1d2e4b1c2d3eTs9Uv1Wx3Yz5Ab7c"
MODEL = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}


def oc_id(prefix: str, n: int) -> str:
    """An id as OpenCode forms one: the prefix, a time-ordered hex part, a random tail."""
    return f"{prefix}_1d2e3f{n:06x}{'Qm7Rt2VxK9pLwN'[: 14]}"


def oc_user(t: int) -> dict:
    return {"role": "user", "time": {"created": t}, "agent": "build", "model": MODEL}


def oc_assistant(t: int, parent: str, **extra) -> dict:
    return {"role": "assistant", "time": {"created": t, "completed": t + 4000},
            "parentID": parent, "modelID": MODEL["modelID"], "providerID": "anthropic",
            "mode": "build", "agent": "build", "path": {"cwd": CWD, "root": CWD},
            "cost": 0.0123, "tokens": {"input": 1200, "output": 85, "reasoning": 0,
                                       "cache": {"read": 0, "write": 0}},
            "finish": "tool-calls", **extra}


def oc_tool(call: str, tool: str, inp: dict, output: str, t: int, title: str,
            compacted: int | None = None) -> dict:
    time = {"start": t, "end": t + 900, **({"compacted": compacted} if compacted else {})}
    return {"type": "tool", "callID": call, "tool": tool,
            "state": {"status": "completed", "input": inp, "output": output, "title": title,
                      "metadata": {}, "time": time}}


def opencode_messages() -> list[tuple[str, int, dict, list[dict]]]:
    """(message id, time, the message's data, its parts' data) of the ferry session, as
    1.x stores it (the legacy JSON storage holds the same, ids inside)."""
    m = [oc_id("msg", n) for n in range(1, 9)]
    step = {"type": "step-start", "snapshot": "9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}
    finish = {"type": "step-finish", "reason": "tool-calls",
              "snapshot": "9a1b2c3d4e5f60718293a4b5c6d7e8f901234567", "cost": 0.0061,
              "tokens": {"input": 600, "output": 40, "reasoning": 0,
                         "cache": {"read": 0, "write": 0}}}
    return [
        (m[0], T0, oc_user(T0), [{"type": "text", "text": TASK}]),
        (m[1], T0 + 1000, oc_assistant(T0 + 1000, m[0]), [
            step,
            {"type": "reasoning", "text": "The relay config should name the bucket.",
             "time": {"start": T0 + 1100, "end": T0 + 1300}},
            {"type": "text", "text": "Listing the spool first."},
            oc_tool("toolu_01A", "bash", {"command": "ls /srv/ferry/spool",
                                          "description": "List the spool"},
                    "segment-0001.bin\nsegment-0002.bin", T0 + 1400, "List the spool",
                    compacted=T0 + 60000),
            finish, step,
            {"type": "text", "text": "Now the relay config."},
            oc_tool("toolu_01B", "read", {"filePath": f"{CWD}/relay.toml"}, CONFIG,
                    T0 + 2500, "relay.toml"),
            finish, step,
            {"type": "text", "text": f"The relay writes to {BUCKET}."},
            {"type": "patch", "hash": "9a1b2c3d", "files": [f"{CWD}/relay.toml"]},
            {**finish, "reason": "stop"}]),
        (m[2], T0 + 50000, oc_user(T0 + 50000), [{"type": "compaction", "auto": True}]),
        (m[3], T0 + 50500, oc_assistant(T0 + 50500, m[2], summary=True, mode="compaction",
                                        agent="compaction", finish="stop"), [
            step, {"type": "text", "text": SUMMARY}, {**finish, "reason": "stop"}]),
        (m[4], T0 + 56000, oc_user(T0 + 56000), [
            {"type": "text", "text": "Continue if you have next steps", "synthetic": True}]),
        (m[5], T0 + 56500, oc_assistant(T0 + 56500, m[4], finish="stop"), [
            step, {"type": "text", "text": "The relay is wired; waiting for the tag."},
            {**finish, "reason": "stop"}]),
        (m[6], T0 + 90000, oc_user(T0 + 90000), [
            {"type": "text", "text": TAG_ASK},
            {"type": "agent", "name": "build", "source": {"value": "@build", "start": 0,
                                                          "end": 6}}]),
        (m[7], T0 + 91000, oc_assistant(T0 + 91000, m[6], finish="stop"), [
            step,
            oc_tool("toolu_01C", "bash", {"command": f"git tag {TAG}",
                                          "description": "Tag the release"},
                    "", T0 + 91200, "Tag the release"),
            finish, step, {"type": "text", "text": f"Tagged {TAG}."},
            {**finish, "reason": "stop"}]),
    ]


def session_row(sid: str, title: str, t: int, parent: str | None = None) -> dict:
    return {"id": sid, "project_id": PROJECT, "parent_id": parent, "slug": title.lower()
            .replace(" ", "-"), "directory": CWD, "title": title, "version": "1.0.12",
            "share_url": None, "summary_additions": None, "summary_deletions": None,
            "summary_files": None, "summary_diffs": None, "revert": None,
            "permission": None, "time_created": t, "time_updated": t + 91000,
            "time_compacting": None, "time_archived": None}


def opencode_v1_rows(sid: str, msgs: list) -> list[str]:
    out = []
    for mid, t, info, parts in msgs:
        out.append(insert("message", {"id": mid, "session_id": sid, "time_created": t,
                                      "time_updated": t + 4000, "data": info}))
        for k, p in enumerate(parts, start=1):
            out.append(insert("part", {"id": f"prt_{mid[4:-14]}{k:02d}{mid[-12:]}",
                                       "message_id": mid, "session_id": sid,
                                       "time_created": t + k, "time_updated": t + k,
                                       "data": p}))
    return out


def other_session() -> list:
    m = oc_id("msg", 900)
    return [(m, T0 - 86400000, oc_user(T0 - 86400000),
             [{"type": "text", "text": "Explain the spool format."}])]


def opencode_1x() -> list[str]:
    rows = [insert("project", {"id": PROJECT, "worktree": CWD, "vcs": "git", "name": None,
                               "time_created": T0 - 90000000, "time_updated": T0})]
    rows += [insert("session", session_row(OTHER, "Spool format", T0 - 86400000)),
             insert("session", session_row(FERRY, "Wire the ferry relay", T0)),
             insert("session", session_row(CHILD, "Find the bucket (@general subagent)",
                                           T0 + 1200, parent=FERRY))]
    rows += opencode_v1_rows(OTHER, other_session())
    rows += opencode_v1_rows(FERRY, opencode_messages())
    return rows


def v2_message(n: int, kind: str, t: int, data: dict) -> str:
    return insert("session_message", {"id": f"msg_2e3f4a{n:06x}Yc8Df3Gh6Jk9Lm",
                                      "session_id": FERRY_V2, "type": kind,
                                      "time_created": t, "time_updated": t,
                                      "data": {**data, "time": {"created": t}}})


FERRY_V2 = "ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As"


def v2_tool(call: str, name: str, inp: dict, text: str, t: int, pruned: int | None = None
            ) -> dict:
    time = {"created": t, "ran": t + 10, "completed": t + 900,
            **({"pruned": pruned} if pruned else {})}
    return {"type": "tool", "id": call, "name": name,
            "state": {"status": "completed", "input": inp,
                      "content": [{"type": "text", "text": text}], "structured": {}},
            "time": time}


def opencode_2x() -> list[str]:
    model = {"id": MODEL["modelID"], "providerID": "anthropic"}
    rows = opencode_1x()
    v2 = session_row(FERRY_V2, "Wire the ferry relay", T0 + 200000000)
    rows.append(insert("session_v2", {k: v2[k] for k in (
        "id", "project_id", "parent_id", "slug", "directory", "title", "time_created",
        "time_updated", "time_compacting", "time_archived")} | {"version": "2.0.3",
                                                                 "agent": "build",
                                                                 "model": model}))
    t = T0 + 200000000
    asst = {"agent": "build", "model": model, "finish": "stop"}
    rows += [
        v2_message(1, "user", t, {"text": TASK, "files": [], "agents": [], "references": []}),
        v2_message(2, "assistant", t + 1000, {**asst, "content": [
            {"type": "reasoning", "id": "rs_1", "text": "The relay config names the bucket."},
            {"type": "text", "text": "Listing the spool first."},
            v2_tool("toolu_02A", "bash", {"command": "ls /srv/ferry/spool"},
                    "segment-0001.bin\nsegment-0002.bin", t + 1200, pruned=t + 60000),
            {"type": "text", "text": "Now the relay config."},
            v2_tool("toolu_02B", "read", {"filePath": f"{CWD}/relay.toml"}, CONFIG,
                    t + 2500),
            {"type": "text", "text": f"The relay writes to {BUCKET}."}]}),
        v2_message(3, "compaction", t + 50000, {"reason": "auto", "summary": SUMMARY}),
        v2_message(4, "synthetic", t + 50500, {"sessionID": FERRY_V2,
                                               "text": "Continue if you have next steps"}),
        v2_message(5, "model-switched", t + 80000, {"model": model}),
        v2_message(6, "user", t + 90000, {"text": TAG_ASK, "files": [], "agents": [],
                                          "references": []}),
        v2_message(7, "assistant", t + 91000, {**asst, "content": [
            v2_tool("toolu_02C", "bash", {"command": f"git tag {TAG}"}, "", t + 91200),
            {"type": "text", "text": f"Tagged {TAG}."}]}),
    ]
    return rows


def storage_info(sid: str, title: str, t: int, parent: str | None = None) -> dict:
    """A session's file of the JSON storage (`Session.Info`, `parentID` on a subagent's)."""
    return {"id": sid, "version": "0.15.8", "projectID": PROJECT, "directory": CWD,
            **({"parentID": parent} if parent else {}), "title": title,
            "time": {"created": t, "updated": t + 91000}}


def storage_messages(root: Path, sid: str, msgs: list) -> None:
    for mid, _, msg, parts in msgs:
        dump_doc(root / "message" / sid / f"{mid}.json", {"id": mid, "sessionID": sid,
                                                          **msg})
        for k, p in enumerate(parts, start=1):
            pid = f"prt_{mid[4:-14]}{k:02d}{mid[-12:]}"
            dump_doc(root / "part" / mid / f"{pid}.json",
                     {"id": pid, "sessionID": sid, "messageID": mid, **p})


def opencode_storage(root: Path) -> None:
    """The JSON storage of earlier versions: the project's file, the same three sessions
    as the 1.x database (ferry, an older one, the subagent's child of ferry, which holds
    no message there either), ids inside each file."""
    dump_doc(root / "project" / f"{PROJECT}.json",
             {"id": PROJECT, "worktree": CWD, "vcs": "git",
              "time": {"created": T0 - 90000000, "initialized": T0 - 90000000}})
    for info in (storage_info(OTHER, "Spool format", T0 - 86400000),
                 storage_info(FERRY, "Wire the ferry relay", T0),
                 storage_info(CHILD, "Find the bucket (@general subagent)", T0 + 1200,
                              parent=FERRY)):
        dump_doc(root / "session" / PROJECT / f"{info['id']}.json", info)
    storage_messages(root, OTHER, other_session())
    storage_messages(root, FERRY, opencode_messages())


def dump_doc(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# -- goose ---------------------------------------------------------------------------------

GOOSE = """
-- goose ~/.local/share/goose/sessions/sessions.db, as SessionStorage::create writes it
-- (crates/goose/src/session/session_manager.rs, schema v5); sqlx opens it in WAL mode.
PRAGMA journal_mode = WAL;
CREATE TABLE schema_version (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
            );
INSERT INTO schema_version (version) VALUES (5);
CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL DEFAULT '',
                description TEXT NOT NULL DEFAULT '',
                user_set_name BOOLEAN DEFAULT FALSE,
                session_type TEXT NOT NULL DEFAULT 'user',
                working_dir TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                extension_data TEXT DEFAULT '{}',
                total_tokens INTEGER,
                input_tokens INTEGER,
                output_tokens INTEGER,
                accumulated_total_tokens INTEGER,
                accumulated_input_tokens INTEGER,
                accumulated_output_tokens INTEGER,
                schedule_id TEXT,
                recipe_json TEXT,
                user_recipe_values_json TEXT
            );
CREATE TABLE messages (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                role TEXT NOT NULL,
                content_json TEXT NOT NULL,
                created_timestamp INTEGER NOT NULL,
                timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                tokens INTEGER,
                metadata_json TEXT
            );
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_messages_timestamp ON messages(timestamp);
CREATE INDEX idx_sessions_updated ON sessions(updated_at DESC);
CREATE INDEX idx_sessions_type ON sessions(session_type);
"""

GOOSE_ID = "20251205_2"
GOOSE_OTHER = "20251205_1"
GOOSE_SUB = "20251205_3"
G0 = 1764925200  # seconds, as goose's Message.created
BOTH = {"userVisible": True, "agentVisible": True}
BEFORE = {"userVisible": True, "agentVisible": False}  # compacted away from the agent
AGENT_ONLY = {"userVisible": False, "agentVisible": True}
CONTINUE = ("Your context was compacted at the user's request. The previous message "
            "contains a summary of the conversation so far.\nDo not mention that you read a "
            "summary or that conversation summarization occurred.\nJust continue the "
            "conversation naturally based on the summarized context.")


def g_text(text: str) -> dict:
    return {"type": "text", "text": text}


def g_call(call: str, name: str, args: dict) -> dict:
    return {"type": "toolRequest", "id": call,
            "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}}


def goose_messages() -> list[tuple[str, int, list, dict]]:
    """(role, created, content, metadata) of the ferry session after a manual compaction
    (/compact): what came before shown to the user only, the summary and the
    continuation to the agent only."""
    return [
        ("user", G0, [g_text(TASK)], BEFORE),
        ("assistant", G0 + 2, [
            {"type": "thinking", "thinking": "The relay config should name the bucket.",
             "signature": "EqQBCkYIBxgCKkA"},
            g_text("Reading the relay config."),
            g_call("toolu_03A", "developer__text_editor",
                   {"command": "view", "path": f"{CWD}/relay.toml"})], BEFORE),
        ("user", G0 + 3, [{"type": "toolResponse", "id": "toolu_03A", "toolResult": {
            "status": "success", "value": {"content": [g_text(CONFIG)],
                                           "isError": False}}}], BEFORE),
        ("assistant", G0 + 5, [g_text(f"The relay writes to {BUCKET}.")], BEFORE),
        ("user", G0 + 60, [g_text(SUMMARY)], AGENT_ONLY),
        ("assistant", G0 + 60, [g_text(CONTINUE)], AGENT_ONLY),
        ("user", G0 + 61, [{"type": "systemNotification", "notificationType": "inlineMessage",
                            "msg": "Compaction complete"}],
         {"userVisible": True, "agentVisible": False}),
        ("user", G0 + 90, [g_text(TAG_ASK)], BOTH),
        ("assistant", G0 + 92, [g_call("toolu_03B", "developer__shell",
                                       {"command": f"git tag {TAG}"})], BOTH),
        # goose before the CallToolResult shape wrote the content list as the value
        ("user", G0 + 93, [{"type": "toolResponse", "id": "toolu_03B", "toolResult": {
            "status": "success", "value": [g_text("")]}}], BOTH),
        ("assistant", G0 + 95, [g_text(f"Tagged {TAG}.")], BOTH),
    ]


def stamp(seconds: int) -> str:
    from datetime import UTC, datetime
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def goose_session(sid: str, name: str, t: int, kind: str = "user") -> str:
    return insert("sessions", {"id": sid, "name": name, "description": "",
                               "user_set_name": 0, "session_type": kind, "working_dir": CWD,
                               "created_at": stamp(t), "updated_at": stamp(t + 95),
                               "extension_data": "{}", "total_tokens": 5120,
                               "input_tokens": 4800, "output_tokens": 320,
                               "accumulated_total_tokens": 9800,
                               "accumulated_input_tokens": 9100,
                               "accumulated_output_tokens": 700, "schedule_id": None,
                               "recipe_json": None, "user_recipe_values_json": None})


def goose_row(sid: str, role: str, t: int, content: list, meta: dict | None) -> str:
    return insert("messages", {"session_id": sid, "role": role, "content_json": content,
                               "created_timestamp": t, "timestamp": stamp(t),
                               "tokens": None, "metadata_json": meta})


def goose_db() -> list[str]:
    rows = [goose_session(GOOSE_OTHER, "Spool format", G0 - 86400),
            goose_session(GOOSE_ID, "Wire the ferry relay", G0),
            goose_session(GOOSE_SUB, "subagent: find the bucket", G0 + 4, "sub_agent")]
    rows.append(goose_row(GOOSE_OTHER, "user", G0 - 86400,
                          [g_text("Explain the spool format.")], BOTH))
    rows += [goose_row(GOOSE_ID, role, t, content, meta)
             for role, t, content, meta in goose_messages()]
    rows.append(goose_row(GOOSE_SUB, "user", G0 + 4, [g_text("Find the archive bucket.")],
                          BOTH))
    return rows


def goose_jsonl() -> list[dict]:
    """The same session as goose before 1.10 wrote it: the metadata line, then one message
    a line (`id` null: goose gave a message an id only when it was read back)."""
    meta = {"working_dir": CWD, "description": "Wire the ferry relay", "schedule_id": None,
            "message_count": len(goose_messages()), "total_tokens": 5120,
            "input_tokens": 4800, "output_tokens": 320, "accumulated_total_tokens": 9800,
            "accumulated_input_tokens": 9100, "accumulated_output_tokens": 700}
    return [meta] + [{"id": None, "role": role, "created": t, "content": content,
                      "metadata": m} for role, t, content, m in goose_messages()]


def dump(path: Path, recs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                            for r in recs), encoding="utf-8")


# -- Kiro CLI's SQLite (Amazon Q Developer CLI's chat client) ---------------------------------

KIRO_MIGRATIONS = [
    """CREATE TABLE IF NOT EXISTS migrations (
    id INTEGER PRIMARY KEY,
    version INTEGER NOT NULL,
    migration_time INTEGER NOT NULL
);""",
    """CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY,
    command TEXT,
    shell TEXT,
    pid INTEGER,
    session_id TEXT,
    cwd TEXT,
    time INTEGER,
    in_ssh INTEGER,
    in_docker INTEGER,
    hostname TEXT,
    exit_code INTEGER
);""",
    """ALTER TABLE history DROP COLUMN in_ssh;
ALTER TABLE history DROP COLUMN in_docker;""",
    """ALTER TABLE history RENAME COLUMN time TO start_time;
ALTER TABLE history ADD COLUMN end_time INTEGER;
ALTER TABLE history ADD COLUMN duration INTEGER;""",
    """CREATE TABLE state (
    key TEXT PRIMARY KEY,
    value TEXT
);""",
    """CREATE TABLE auth_kv (
    key TEXT PRIMARY KEY,
    value TEXT
);""",
    """ALTER TABLE state RENAME TO state_old;
CREATE TABLE state (
    key TEXT PRIMARY KEY,
    value BLOB
);
INSERT INTO state SELECT key, value FROM state_old;
DROP TABLE state_old;""",
    """CREATE TABLE conversations (
    key TEXT PRIMARY KEY,
    value TEXT
);""",
    """CREATE TABLE conversations_v2 (
    key TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at INTEGER NOT NULL,  -- Unix timestamp in milliseconds
    updated_at INTEGER NOT NULL,  -- Unix timestamp in milliseconds
    PRIMARY KEY (key, conversation_id)
);

CREATE INDEX idx_conversations_v2_key_updated ON conversations_v2(key, updated_at DESC);
CREATE INDEX idx_conversations_v2_updated_at ON conversations_v2(updated_at DESC);

INSERT INTO conversations_v2 (key, conversation_id, value, created_at, updated_at)
SELECT
    key,
    json_extract(value, '$.conversation_id') as conversation_id,
    value,
    CAST(strftime('%s', 'now') AS INTEGER) * 1000 as created_at,
    CAST(strftime('%s', 'now') AS INTEGER) * 1000 as updated_at
FROM conversations;""",
]

KIRO_ID = "0b7c4e2a-91d3-4f58-a6e0-3c2d8b5f1a47"
KIRO_OTHER = "5e1f0a9c-2b7d-4c36-8e4a-9d0f1b2c3e5a"
K0 = 1764925200


def kiro_migrations(upto: int) -> str:
    """The migrations as the client applies them: each one's SQL, then its row."""
    out = ["-- Kiro CLI / Amazon Q Developer CLI data.sqlite3, as its migrations write it",
           "-- (crates/chat-cli/src/database/sqlite_migrations/); rusqlite's default",
           "-- rollback journal."]
    for version, sql in enumerate(KIRO_MIGRATIONS[:upto + 1]):
        out += [sql, f"INSERT INTO migrations (version, migration_time) VALUES ({version}, "
                     f"{K0 - 86400 * (10 - version)});"]
    return "\n".join(out)


def k_user(content: dict, t: int) -> dict:
    return {"additional_context": "--- CONTEXT ENTRY BEGIN ---\nThis section (like others) "
                                  "contains important information ...\n--- CONTEXT ENTRY "
                                  "END ---\n\n",
            "env_context": {"env_state": {"operating_system": "linux",
                                          "current_working_directory": CWD,
                                          "environment_variables": []}},
            "content": content, "timestamp": f"2025-12-05T09:{t:02d}:00.000000+00:00",
            "images": None}


def k_meta(n: int, tools: list) -> dict:
    return {"request_id": f"9f2c7a1e-44b0-4d6c-b7e1-0a3d5c8e2f{n:02d}",
            "message_id": f"1c4e8a20-7f3b-4e5d-9a61-2b0c7d9e4f{n:02d}",
            "request_start_timestamp_ms": (K0 + 60 * n) * 1000,
            "stream_end_timestamp_ms": (K0 + 60 * n + 4) * 1000,
            "time_to_first_chunk": {"secs": 1, "nanos": 204000000},
            "time_between_chunks": [], "user_prompt_length": 120, "response_size": 240,
            "chat_conversation_type": "ToolUse" if tools else "NotToolUse",
            "tool_use_ids_and_names": tools, "model_id": "claude-sonnet-4.5",
            "message_meta_tags": []}


def kiro_history() -> list[tuple[dict, dict, list]]:
    """(user, assistant, tool ids and names) of the ferry conversation after /compact:
    the history the summary covers is drained; the turns after it are the history."""
    read_args = {"operations": [{"mode": "Line", "path": f"{CWD}/relay.toml"}]}
    return [
        (k_user({"Prompt": {"prompt": f"Confirm the relay still listens on port {PORT} and "
                                      "read its archive settings again."}}, 10),
         {"ToolUse": {"message_id": "a1", "content": "Reading relay.toml.",
                      "tool_uses": [{"id": "tooluse_K7a", "name": "fs_read",
                                     "orig_name": "fs_read", "args": read_args,
                                     "orig_args": read_args}]}},
         [["tooluse_K7a", "fs_read"]]),
        (k_user({"ToolUseResults": {"tool_use_results": [
            {"tool_use_id": "tooluse_K7a", "content": [{"Text": CONFIG}],
             "status": "Success"}]}}, 11),
         {"Response": {"message_id": "a2", "content": f"It writes to {BUCKET}."}}, []),
        (k_user({"Prompt": {"prompt": TAG_ASK}}, 12),
         {"ToolUse": {"message_id": "a3", "content": "",
                      "tool_uses": [{"id": "tooluse_K7b", "name": "execute_bash",
                                     "orig_name": "execute_bash",
                                     "args": {"command": f"git tag {TAG}"},
                                     "orig_args": {"command": f"git tag {TAG}"}}]}},
         [["tooluse_K7b", "execute_bash"]]),
        (k_user({"ToolUseResults": {"tool_use_results": [
            {"tool_use_id": "tooluse_K7b", "content": [{"Json": {
                "exit_status": "0", "stdout": "", "stderr": ""}}], "status": "Success"}]}},
            13),
         {"Response": {"message_id": "a4", "content": f"Tagged {TAG}."}}, []),
    ]


def kiro_conversation(entries: bool) -> dict:
    """The conversation as the client serializes it: history entries {user, assistant,
    request_metadata} and the summary with its metadata (1.13 on), or pairs and the
    summary alone (before)."""
    history = [({"user": u, "assistant": a, "request_metadata": k_meta(n, tools)}
                if entries else [u, a]) for n, (u, a, tools) in enumerate(kiro_history())]
    transcript = [f"> {TASK}", "Reading relay.toml.", f"The relay writes to {BUCKET}.",
                  "> /compact", "> Confirm the relay still listens ...", f"Tagged {TAG}."]
    doc = {"conversation_id": KIRO_ID, "next_message": None, "history": history,
           "valid_history_range": [0, len(history)], "transcript": transcript,
           "tools": {}, "context_manager": {"max_context_files_size": 150000,
                                            "current_profile": "kiro_default",
                                            "paths": ["AmazonQ.md", "README.md"],
                                            "hooks": {}},
           "context_message_length": 2311,
           "latest_summary": [SUMMARY, k_meta(9, [])] if entries else SUMMARY,
           "model": None}
    if entries:
        doc.update({"model_info": {"model_name": "claude-sonnet-4.5",
                                   "model_id": "claude-sonnet-4.5",
                                   "context_window_tokens": 200000},
                    "file_line_tracker": {}, "checkpoint_manager": None,
                    "mcp_enabled": True})
        del doc["model"]
    return doc


def kiro_other() -> dict:
    return {"conversation_id": KIRO_OTHER, "next_message": None, "history": [
        {"user": k_user({"Prompt": {"prompt": "Explain the spool format."}}, 1),
         "assistant": {"Response": {"message_id": "b1", "content": "Segments of 64 MiB."}},
         "request_metadata": None}], "valid_history_range": [0, 1], "transcript": [],
        "tools": {}, "context_manager": None, "context_message_length": None,
        "latest_summary": None, "file_line_tracker": {}, "checkpoint_manager": None,
        "mcp_enabled": True}


def kiro_db() -> list[str]:
    """The 1.13+ database: conversations_v2, one directory holding two conversations."""
    return [insert("conversations_v2", {"key": "/home/dev/spool", "conversation_id": KIRO_OTHER,
                                        "value": kiro_other(), "created_at": K0 * 1000 - 9_000_000,
                                        "updated_at": K0 * 1000 - 8_000_000}),
            insert("conversations_v2", {"key": CWD, "conversation_id": KIRO_ID,
                                        "value": kiro_conversation(True),
                                        "created_at": K0 * 1000,
                                        "updated_at": (K0 + 800) * 1000})]


def kiro_db_v007() -> list[str]:
    """Before migration 008: one conversation a directory in `conversations`."""
    return [insert("conversations", {"key": CWD, "value": kiro_conversation(False)})]


def main() -> None:
    write(HERE / "opencode/opencode-1x.sql", OPENCODE_1X, opencode_1x())
    write(HERE / "opencode/opencode-2x.sql", OPENCODE_1X + OPENCODE_2X, opencode_2x())
    opencode_storage(HERE / "opencode/storage")
    write(HERE / "goose/sessions-db.sql", GOOSE, goose_db())
    dump(HERE / f"goose/sessions/{GOOSE_ID}.jsonl", goose_jsonl())
    write(HERE / "kiro/data-sqlite3.sql", kiro_migrations(8), kiro_db())
    write(HERE / "kiro/data-sqlite3-v007.sql", kiro_migrations(7), kiro_db_v007())


if __name__ == "__main__":
    main()
