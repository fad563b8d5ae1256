"""Writes the `harbor` sample session in the four formats the study reads, as
each CLI writes it: Claude Code 2.1 (progress records in the chain, a parallel batch of
three tool calls whose results hang off their own tool_use records, a Task subagent's
progress records, an abandoned fork, a compaction, system records to the last line),
Codex CLI (session_meta, turn_context, developer and environment messages, event_msg
echoes, function calls by call_id, reasoning, a `compacted` record), Gemini CLI (one
document, tool results inside toolCalls, thoughts, an info note) and chat messages.

The shapes follow the CLIs' own files as public parsers and format notes describe them;
every value is made up. Also writes two small Claude Code files: a partial compaction
(compactMetadata.preservedSegment, the preserved records written again) and a
compaction whose logical parent is not in the file; and the shapes current CLIs write:
the Gemini session as Gemini CLI's JSONL stream, a Codex rollout with a remote
(encrypted) compaction, a Codex fork whose parent's rollout is compressed (.zst) and
JSON-wraps its outputs, and a Claude Code file a second /compact re-appended history to.

Run from the repository root: python tests/data/sessions/write_harbor.py
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import zstandard

HERE = Path(__file__).parent
SESSION = "3b8e41d2-6f0a-4c57-b9e3-58d1a7c2e904"
CWD = "/home/dev/harbor"

PROMPT = ("The harbor registry mirror has rejected pushes since the 02:17 UTC rollout. Find "
          "out why and fix it; the mirror belongs to Служба Причалов, keep them posted.")
SAY_READ = "I'll read the mirror config, the storage config and the status at once."
CALLS_1 = [("Read", {"file_path": "/etc/harbor/mirror.yaml"}),
           ("Read", {"file_path": "/etc/harbor/storage.yaml"}),
           ("Bash", {"command": "harbor-ctl status --json", "description": "Mirror status"})]
RESULTS_1 = [
    "upstream:\n  host: gw.harbor.internal\n  port: 51873\n  timeout: 30000\n  retries: 4",
    "storage:\n  index: /var/lib/harbor/mirror/blobs-q7.idx\n  shards: 23\n  quota_gb: 640",
    '{"mirror": "degraded", "run_id": "c41e9a07-3d5b-4f28-9e61-7a0b2d83f5c6", '
    '"since": "02:17 UTC"}',
]
THINK = "The run id is the rollout's; the index path is where a full disk would show."
SAY_TASK = "The mirror is degraded. I'll have an agent scan the push logs."
TASK = ("Task", {"description": "Scan push logs", "prompt": "Find why pushes to the harbor "
                 "mirror fail since the rollout.", "subagent_type": "general-purpose"})
TASK_RESULT = ("Pushes fail with 413: the blob index /var/lib/harbor/mirror/blobs-q7.idx "
               "is full and the uploader has no size guard.")
AGENT_SAYS = "Checked /opt/harbor/agent-only.lock and the push log: 413 on every blob."
SAY_UPLOADER = "Reading the uploader."
READ_UPLOADER = ("Read", {"file_path": "/home/dev/harbor/lib/harbor/uploader.ex"})
UPLOADER = ('defmodule Harbor.Uploader do\n  @moduledoc """\n  Streams blobs to the mirror.\n'
            '  """\n  @max_chunk 8_388_608\nend')
SUMMARY = ("This session is being continued from a previous conversation that ran out of "
           "context. Summary: the mirror (ticket TN-VESPER) rejects pushes because the "
           "blob index /var/lib/harbor/mirror/blobs-q7.idx is full; upstream port 51873.")
ASK = "Rotate the index and cut the release; page @osk.varela once it is out."
FORK = "Rotating with signing key kid-5e2b9c-larch first."
SAY_ROTATE = "Rotating."
ROTATE = ("Bash", {"command": "harbor-ctl rotate-index --shards 23",
                   "description": "Rotate the blob index"})
ROTATED = ("rotated: blobs-q7.idx -> blobs-q8.idx (23 shards)\n"
           "release tagged v3.18.2-moraine")
DONE = ("Done: the index is rotated and v3.18.2-moraine is tagged; @osk.varela is paged "
        "and Служба Причалов is posted.")


def ids(prefix: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"harbor/{prefix}"))


def stamp(i: int) -> str:
    return f"2026-11-29T07:{10 + i // 60:02d}:{i % 60:02d}.{(i * 37) % 1000:03d}Z"


class Claude:
    """Claude Code 2.1 records, parentUuid linked as the CLI links them."""

    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.n = 0

    def base(self, parent: str | None, key: str, kind: str) -> dict:
        self.n += 1
        return {"parentUuid": parent, "isSidechain": False, "userType": "external",
                "cwd": CWD, "sessionId": SESSION, "version": "2.1.14",
                "gitBranch": "fix-mirror", "type": kind, "uuid": ids(key),
                "timestamp": stamp(self.n)}

    def user(self, parent: str | None, key: str, content: object, **extra: object) -> str:
        r = self.base(parent, key, "user")
        r.update({"message": {"role": "user", "content": content}, **extra})
        self.lines.append(r)
        return r["uuid"]

    def assistant(self, parent: str, key: str, msg_id: str, block: dict) -> str:
        r = self.base(parent, key, "assistant")
        r["message"] = {"model": "claude-sonnet-4-5-20250929", "id": msg_id, "type": "message",
                        "role": "assistant", "content": [block], "stop_reason": None,
                        "stop_sequence": None, "usage": {"input_tokens": 9,
                                                         "output_tokens": 41}}
        r["requestId"] = f"req_{msg_id[4:]}"
        self.lines.append(r)
        return r["uuid"]

    def result(self, parent: str, key: str, call_id: str, content: object,
               source: str) -> str:
        return self.user(parent, key, [{"tool_use_id": call_id, "type": "tool_result",
                                        "content": content, "is_error": False}],
                         toolUseResult={"stdout": "", "interrupted": False},
                         sourceToolAssistantUUID=source)

    def progress(self, parent: str, key: str, data: dict, tool_use: str | None) -> str:
        r = self.base(parent, key, "progress")
        r.update({"data": data, "toolUseID": f"{key}-progress", "parentToolUseID": tool_use})
        self.lines.append(r)
        return r["uuid"]

    def system(self, parent: str | None, key: str, subtype: str, **extra: object) -> str:
        r = self.base(parent, key, "system")
        r.update({"subtype": subtype, "level": "info", "isMeta": False, **extra})
        self.lines.append(r)
        return r["uuid"]


def tool_use(call_id: str, name: str, args: dict) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def claude_code() -> list[dict]:
    c = Claude()
    c.lines.append({"type": "file-history-snapshot", "messageId": ids("u0"), "snapshot": {
        "messageId": ids("u0"), "trackedFileBackups": {}, "timestamp": stamp(0)},
        "isSnapshotUpdate": False})
    u0 = c.user(None, "u0", PROMPT)
    p0 = c.progress(u0, "p0", {"type": "hook_progress", "hookEvent": "UserPromptSubmit",
                               "hookName": "UserPromptSubmit", "command": "~/.claude/log.sh"},
                    None)
    prev = c.assistant(p0, "a1t", "msg_01H1", {"type": "text", "text": SAY_READ})
    uses = []
    for i, (name, args) in enumerate(CALLS_1):  # one record per tool_use, chained
        prev = c.assistant(prev, f"a1-{i}", "msg_01H1", tool_use(f"toolu_01H{i}", name, args))
        uses.append(prev)
    c.progress(uses[0], "pre0", {"type": "hook_progress", "hookEvent": "PreToolUse",
                                 "hookName": "PreToolUse:Read", "command": "lint.sh"},
               "toolu_01H0")
    c.result(uses[0], "r1-0", "toolu_01H0", RESULTS_1[0], uses[0])
    c.result(uses[1], "r1-1", "toolu_01H1", RESULTS_1[1], uses[1])
    bash = c.progress(uses[2], "bash2", {"type": "bash_progress", "output": "checking",
                                         "fullOutput": "checking", "elapsedTimeSeconds": 1,
                                         "totalLines": 1}, "toolu_01H2")
    last = c.result(bash, "r1-2", "toolu_01H2", RESULTS_1[2], uses[2])
    prev = c.assistant(last, "a5h", "msg_01H5", {"type": "thinking", "thinking": THINK,
                                                 "signature": "EqQBCkYIBx"})
    prev = c.assistant(prev, "a5t", "msg_01H5", {"type": "text", "text": SAY_TASK})
    task = c.assistant(prev, "a5u", "msg_01H5", tool_use("toolu_01H5", *TASK))
    agent = c.progress(task, "ag1", {"type": "agent_progress", "agentId": "a3f9c1e",
                                     "prompt": TASK[1]["prompt"], "message": {
                                         "type": "user", "message": {
                                             "role": "user", "content": TASK[1]["prompt"]},
                                         "uuid": ids("ag1-m"), "timestamp": stamp(40)}},
                       "toolu_01H5")
    c.progress(agent, "ag2", {"type": "agent_progress", "agentId": "a3f9c1e", "prompt": "",
                              "message": {"type": "assistant", "message": {
                                  "role": "assistant", "content": [
                                      {"type": "text", "text": AGENT_SAYS}]},
                                  "uuid": ids("ag2-m"), "timestamp": stamp(41)}},
               "toolu_01H5")
    r6 = c.result(task, "r6", "toolu_01H5", [{"type": "text", "text": TASK_RESULT}], task)
    prev = c.assistant(r6, "a7t", "msg_01H7", {"type": "text", "text": SAY_UPLOADER})
    read = c.assistant(prev, "a7u", "msg_01H7", tool_use("toolu_01H7", *READ_UPLOADER))
    r8 = c.result(read, "r8", "toolu_01H7", UPLOADER, read)
    c.lines.append({"type": "queue-operation", "operation": "enqueue", "timestamp": stamp(50),
                    "sessionId": SESSION, "content": ASK})
    boundary = c.system(None, "cb", "compact_boundary", content="Conversation compacted",
                        logicalParentUuid=r8,
                        compactMetadata={"trigger": "auto", "preTokens": 162044})
    summary = c.user(boundary, "summary", SUMMARY, isCompactSummary=True,
                     isVisibleInTranscriptOnly=True)
    u9 = c.user(summary, "u9", ASK)
    c.assistant(u9, "fork", "msg_01F9", {"type": "text", "text": FORK})  # abandoned
    prev = c.assistant(u9, "a10t", "msg_01H10", {"type": "text", "text": SAY_ROTATE})
    rot = c.assistant(prev, "a10u", "msg_01H10", tool_use("toolu_01H10", *ROTATE))
    r11 = c.result(rot, "r11", "toolu_01H10", ROTATED, rot)
    done = c.assistant(r11, "a12", "msg_01H12", {"type": "text", "text": DONE})
    hooks = c.system(done, "stop", "stop_hook_summary", hookCount=1, hookErrors=[],
                     preventedContinuation=False, stopReason="", hasOutput=False)
    c.system(hooks, "dur", "turn_duration", durationMs=48210)
    return c.lines


def codex(wrapped: bool = False, encrypted: bool = False, thread: str = SESSION
          ) -> list[dict]:
    """The Codex rollout; `wrapped`: each output stored as a JSON string {output, metadata}
    (Codex 0.39's shell, 0.60's apply_patch); `encrypted`: a remote compaction, its
    message empty and the summary an encrypted item of replacement_history (#27016)."""
    out: list[dict] = []

    def line(kind: str, payload: dict) -> None:
        out.append({"timestamp": stamp(len(out)), "type": kind, "payload": payload})

    def item(payload: dict) -> None:
        line("response_item", payload)

    def message(role: str, text: str) -> None:
        part = "output_text" if role == "assistant" else "input_text"
        item({"type": "message", "role": role, "content": [{"type": part, "text": text}]})
        if role in ("user", "assistant"):
            kind = "user_message" if role == "user" else "agent_message"
            line("event_msg", {"type": kind, "message": text, "images": []}
                 if role == "user" else {"type": kind, "message": text})

    def call(n: int, name: str, args: dict, result: str) -> tuple[dict, dict]:
        cid = f"call_H{n:02d}x7Qm"
        output = json.dumps({"output": result, "metadata": {
            "exit_code": 0, "duration_seconds": 0.4}}) if wrapped else result
        return ({"type": "function_call", "name": name, "arguments": json.dumps(args),
                 "call_id": cid},
                {"type": "function_call_output", "call_id": cid, "output": output})

    line("session_meta", {"id": thread, "timestamp": stamp(0), "cwd": CWD,
                          "originator": "codex_cli_rs", "cli_version": "0.63.0",
                          "instructions": None, "source": "cli", "model_provider": "openai",
                          "git": {"branch": "fix-mirror"}})
    line("turn_context", {"cwd": CWD, "approval_policy": "on-request", "sandbox_policy": {
        "type": "workspace-write", "network_access": False}, "model": "gpt-5.1-codex",
        "effort": "medium", "summary": "auto"})
    message("developer", "<permissions instructions>Commands run in a sandbox."
                         "</permissions instructions>")
    message("user", "<environment_context>\n  <cwd>/home/dev/harbor</cwd>\n  "
                    "<shell>bash</shell>\n</environment_context>")
    message("user", PROMPT)
    message("assistant", SAY_READ)
    pairs = [call(i, n, a, r) for i, ((n, a), r) in enumerate(zip(CALLS_1, RESULTS_1,
                                                                    strict=True))]
    for c, _ in pairs:
        item(c)
    for _, o in pairs:
        item(o)
    item({"type": "reasoning", "summary": [{"type": "summary_text", "text": THINK}],
          "content": None, "encrypted_content": "gAAAAABpQ3h0"})
    line("event_msg", {"type": "agent_reasoning", "text": THINK})
    message("assistant", SAY_TASK)
    task = call(5, *TASK, TASK_RESULT)
    item(task[0])
    item(task[1])
    message("assistant", SAY_UPLOADER)
    read = call(7, *READ_UPLOADER, UPLOADER)
    item(read[0])
    item(read[1])
    line("event_msg", {"type": "token_count", "info": {"total_token_usage": {
        "input_tokens": 162044, "output_tokens": 2210}, "model_context_window": 272000}})
    kept = {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                            "text": PROMPT}]}
    line("compacted", {"message": "", "replacement_history": [kept, {
        "type": "compaction", "encrypted_content": "gAAAAABpV2x0cGVybmV0X3N1bW1hcnk="}]}
         if encrypted else {"message": SUMMARY, "replacement_history": [kept, {
             "type": "message", "role": "user", "content": [{"type": "input_text",
                                                             "text": SUMMARY}]}]})
    line("event_msg", {"type": "context_compacted"})
    line("turn_context", {"cwd": CWD, "model": "gpt-5.1-codex", "effort": "medium"})
    message("user", ASK)
    message("assistant", SAY_ROTATE)
    rot = call(10, *ROTATE, ROTATED)
    item(rot[0])
    item(rot[1])
    message("assistant", DONE)
    line("event_msg", {"type": "task_complete", "last_agent_message": DONE})
    return out


def gemini() -> dict:
    msgs: list[dict] = []

    def msg(kind: str, content: str, calls: list | None = None, **extra: object) -> None:
        m = {"id": ids(f"g{len(msgs)}"), "timestamp": stamp(len(msgs)), "type": kind,
             "content": content}
        if kind == "gemini":
            m.update({"thoughts": [], "tokens": {"input": 2678, "output": 91, "cached": 0,
                                                 "thoughts": 0, "tool": 0, "total": 2769},
                      "model": "gemini-2.5-pro"})
        if calls:
            m["toolCalls"] = calls
        m.update(extra)
        msgs.append(m)

    def call(n: int, name: str, args: dict, result: str) -> dict:
        cid = f"{name.lower()}-17644{n:05d}-9c{n:02d}e"
        return {"id": cid, "name": name, "args": args, "result": [{"functionResponse": {
            "id": cid, "name": name, "response": {"output": result}}}],
                "status": "success", "timestamp": stamp(n), "resultDisplay": result[:40],
                "displayName": name, "renderOutputAsMarkdown": False}

    msg("user", PROMPT)
    msg("gemini", SAY_READ, [call(i, n, a, r) for i, ((n, a), r)
                             in enumerate(zip(CALLS_1, RESULTS_1, strict=True))])
    msg("gemini", SAY_TASK, [call(5, *TASK, TASK_RESULT)],
        thoughts=[{"subject": "Reading the status", "description": THINK,
                   "timestamp": stamp(5)}])
    msg("gemini", SAY_UPLOADER, [call(7, *READ_UPLOADER, UPLOADER)])
    msg("info", "Chat history compressed.")
    msg("user", ASK)
    msg("gemini", SAY_ROTATE, [call(10, *ROTATE, ROTATED)])
    msg("gemini", DONE)
    return {"sessionId": SESSION, "projectHash": "5f0c2a9e7d41b3c8" * 4,
            "startTime": stamp(0), "lastUpdated": stamp(len(msgs)), "messages": msgs}


def messages() -> list[dict]:
    def call(n: int, name: str, args: dict) -> dict:
        return {"id": f"call_H{n:02d}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}

    out: list[dict] = [{"role": "system", "content": "You are a coding agent in harbor."},
                       {"role": "user", "content": PROMPT},
                       {"role": "assistant", "content": SAY_READ,
                        "tool_calls": [call(i, n, a) for i, (n, a) in enumerate(CALLS_1)]}]
    out += [{"role": "tool", "tool_call_id": f"call_H{i:02d}", "content": r}
            for i, r in enumerate(RESULTS_1)]
    out += [{"role": "assistant", "content": SAY_TASK, "reasoning_content": THINK,
             "tool_calls": [call(5, *TASK)]},
            {"role": "tool", "tool_call_id": "call_H05", "content": TASK_RESULT},
            {"role": "assistant", "content": SAY_UPLOADER,
             "tool_calls": [call(7, *READ_UPLOADER)]},
            {"role": "tool", "tool_call_id": "call_H07", "content": UPLOADER},
            {"role": "user", "content": ASK},
            {"role": "assistant", "content": SAY_ROTATE, "tool_calls": [call(10, *ROTATE)]},
            {"role": "tool", "tool_call_id": "call_H10", "content": ROTATED},
            {"role": "assistant", "content": DONE}]
    return out


def partial() -> list[dict]:
    """A partial compaction: the boundary's preservedSegment names the kept messages
    (head to tail), the CLI writes them again after the summary, the head relinked to it,
    and the conversation goes on from the tail."""
    c = Claude()
    prev = None
    kept: list[int] = []
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"step {i} of the index rotation: shard group g{i}{i + 3}"
        prev = (c.user(prev, f"pm{i}", text) if role == "user" else
                c.assistant(prev, f"pm{i}", f"msg_01P{i}", {"type": "text", "text": text}))
        if i >= 3:
            kept.append(i)
    boundary = c.system(None, "pcb", "compact_boundary", content="Conversation compacted",
                        logicalParentUuid=prev, compactMetadata={
                            "trigger": "manual", "preTokens": 90210, "preservedSegment": {
                                "headUuid": ids("pm3"), "anchorUuid": ids("psummary"),
                                "tailUuid": ids("pm5")}})
    anchor = c.user(boundary, "psummary", "Summary: steps 0-2 rotated groups g03 g14 g25.",
                    isCompactSummary=True, isVisibleInTranscriptOnly=True)
    prev = anchor
    for i in kept:  # the preserved messages, written again with their uuids
        r = dict(next(x for x in c.lines if x.get("uuid") == ids(f"pm{i}")))
        r["parentUuid"] = prev
        c.lines.append(r)
        prev = r["uuid"]
    c.user(prev, "pm6", "step 6: all groups rotated")
    c.assistant(ids("pm6"), "pm7", "msg_01P7", {"type": "text", "text": "Confirmed."})
    return c.lines


def new_root() -> list[dict]:
    """A compaction whose logicalParentUuid names a record the file does not hold (the
    CLI started this file after the compaction, or the record was lost)."""
    c = Claude()
    boundary = c.system(None, "ncb", "compact_boundary", content="Conversation compacted",
                        logicalParentUuid=ids("not-in-this-file"),
                        compactMetadata={"trigger": "auto", "preTokens": 158002})
    prev = c.user(boundary, "nsummary", "Summary: the mirror was rotated to blobs-q8.idx.",
                  isCompactSummary=True, isVisibleInTranscriptOnly=True)
    for i in range(6):
        text = f"after the compaction, check {i}: replica r{i}{i + 5} is healthy"
        prev = (c.user(prev, f"nm{i}", text) if i % 2 == 0 else
                c.assistant(prev, f"nm{i}", f"msg_01N{i}", {"type": "text", "text": text}))
    return c.lines


def gemini_jsonl() -> list[dict]:
    """The Gemini session as Gemini CLI 0.39 on writes it: a header, each message
    appended (a gemini message with tool calls written first as they start and again as
    they complete, under its id), `$set` updates (a `messages` checkpoint of the same
    messages, as masking writes it), a compression's checkpoint (its <state_snapshot>
    summary, the model's acknowledgement, the turn it kept), and a turn the user rewound
    (`$rewindTo` its prompt)."""
    doc = gemini()
    out: list[dict] = [{"sessionId": SESSION, "projectHash": doc["projectHash"],
                        "startTime": doc["startTime"], "lastUpdated": doc["startTime"],
                        "kind": "main"}]
    for i, m in enumerate(doc["messages"]):
        if m.get("toolCalls"):
            out.append({**m, "toolCalls": [{**c, "status": "executing", "result": None}
                                           for c in m["toolCalls"]]})
        out.append(m)
        if i == 1:  # tool outputs masked: the same messages, checkpointed
            out.append({"$set": {"messages": doc["messages"][:i + 1],
                                 "lastUpdated": stamp(i)}})
        if m["type"] == "info":  # the history compressed
            snapshot = {"id": ids("gs"), "timestamp": stamp(55), "type": "user", "content": [
                {"text": f"<state_snapshot>\n  <overall_goal>{SUMMARY}</overall_goal>\n"
                         "</state_snapshot>"}]}
            ack = {"id": ids("ga"), "timestamp": stamp(56), "type": "gemini",
                   "content": [{"text": "Got it. Thanks for the additional context!"}]}
            out.append({"$set": {"messages": [snapshot, ack, doc["messages"][i - 1]],
                                 "lastUpdated": stamp(i)}})
            aborted = {"id": ids("gx"), "timestamp": stamp(60), "type": "user",
                       "content": "Drop the mirror and start over from the upstream."}
            out += [aborted, {"id": ids("gy"), "timestamp": stamp(61), "type": "gemini",
                              "content": "Dropping the mirror now.", "thoughts": []},
                    {"$rewindTo": aborted["id"]}]
        out.append({"$set": {"lastUpdated": stamp(i)}})
    return out


FORK_THREAD = "0f6c8a31-9d2e-4b57-a1c3-6e8d2b40f719"
TREE = HERE / "codex/sessions/2026/11/29"


def codex_fork() -> tuple[bytes, list[dict]]:
    """A Codex 0.146 fork and its parent: the parent's rollout (JSON-wrapped outputs,
    compressed in place as an idle rollout is) goes on past the fork point; the fork
    holds only its own records, its session_meta naming the parent's prefix by
    history_base (thread id, records and bytes before the cut)."""
    whole = codex(wrapped=True)
    cut = next(i for i, r in enumerate(whole) if r["type"] == "compacted")
    went_on = {"timestamp": stamp(90), "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text":
                                                        "(the parent went on elsewhere)"}]}}
    parent = jsonl(whole[:cut]).encode("utf-8")
    meta = {**whole[0]["payload"], "id": FORK_THREAD, "history_base": {
        "thread_id": SESSION, "end_ordinal_exclusive": cut,
        "end_byte_offset": len(parent)}}
    fork = [{"timestamp": stamp(95), "type": "session_meta", "payload": meta}, *whole[cut:]]
    return parent + jsonl([went_on]).encode("utf-8"), fork


def reappended() -> list[dict]:
    """A second /compact in one process (claude-code #92089): before writing its boundary
    the CLI re-appends the history before the first compaction under its original uuids,
    the finished turn's stop_hook_summary links to the last copy, and the new boundary's
    logical parent is that hook record."""
    c = Claude()
    prev = None
    for i in range(4):
        text = f"before the first compaction, step {i}: lane k{i}{i + 4} drained"
        prev = (c.user(prev, f"ra{i}", text) if i % 2 == 0 else
                c.assistant(prev, f"ra{i}", f"msg_01R{i}", {"type": "text", "text": text}))
    history = list(c.lines)
    first = c.system(None, "rcb1", "compact_boundary", content="Conversation compacted",
                     logicalParentUuid=prev,
                     compactMetadata={"trigger": "manual", "preTokens": 88120})
    prev = c.user(first, "rs1", "Summary: lanes k04 and k26 drained.", isCompactSummary=True,
                  isVisibleInTranscriptOnly=True)
    prev = c.user(prev, "rb0", "between the compactions: open lane k77")
    prev = c.assistant(prev, "rb1", "msg_01RB1", {"type": "text", "text": "Lane k77 open."})
    c.lines += [dict(r) for r in history]  # the re-appended copies, uuids as written
    hook = c.system(history[-1]["uuid"], "rhook", "stop_hook_summary", hookCount=1,
                    hookErrors=[], preventedContinuation=False, stopReason="",
                    hasOutput=False)
    second = c.system(None, "rcb2", "compact_boundary", content="Conversation compacted",
                      logicalParentUuid=hook, compactMetadata={
                          "trigger": "manual", "preTokens": 91003, "preservedSegment": {
                              "headUuid": prev, "anchorUuid": ids("rs2"), "tailUuid": hook}})
    prev = c.user(second, "rs2", "Summary: lane k77 is open.", isCompactSummary=True,
                  isVisibleInTranscriptOnly=True)
    prev = c.user(prev, "rc0", "after the second compaction: close lane k77")
    c.assistant(prev, "rc1", "msg_01RC1", {"type": "text", "text": "Lane k77 closed."})
    return c.lines


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                   for r in records)


def main() -> None:
    (HERE / "harbor.claude-code.jsonl").write_text(jsonl(claude_code()), encoding="utf-8")
    (HERE / "harbor.codex.jsonl").write_text(jsonl(codex()), encoding="utf-8")
    (HERE / "harbor.gemini.json").write_text(
        json.dumps(gemini(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (HERE / "harbor.messages.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in messages()),
        encoding="utf-8")
    (HERE / "partial.claude-code.jsonl").write_text(jsonl(partial()), encoding="utf-8")
    (HERE / "new-root.claude-code.jsonl").write_text(jsonl(new_root()), encoding="utf-8")
    (HERE / "harbor.gemini.jsonl").write_text(jsonl(gemini_jsonl()), encoding="utf-8")
    (HERE / "encrypted.codex.jsonl").write_text(jsonl(codex(encrypted=True)),
                                                encoding="utf-8")
    (HERE / "reappended.claude-code.jsonl").write_text(jsonl(reappended()),
                                                       encoding="utf-8")
    parent, fork = codex_fork()
    TREE.mkdir(parents=True, exist_ok=True)
    (TREE / f"rollout-2026-11-29T07-10-00-{SESSION}.jsonl.zst").write_bytes(
        zstandard.ZstdCompressor(level=19).compress(parent))
    (TREE / f"rollout-2026-11-29T08-02-00-{FORK_THREAD}.jsonl").write_text(jsonl(fork),
                                                                    encoding="utf-8")


if __name__ == "__main__":
    main()
