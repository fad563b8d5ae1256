"""Writes the "ferry" samples: one session of a relay service as three more tools write
it, each with the quirks the readers must take as the tool writes them.

- atif/trajectory.json and atif/trajectory.cont-1.json: an ATIF trajectory as Harbor's
  terminus-2 agent writes one that summarised its context (ATIF-v1.7): a system step
  marking the compaction (`extra.context_management` {type: compaction, boundary:
  replace}, the summariser's own trajectories named in its observation), the run going on
  in the file `continued_trajectory_ref` names, whose `is_copied_context` steps are what
  the agent saw after it: the original task AGAIN, the handoff summary, the questions and
  the answers. Learned from Harbor's golden files
  (tests/golden/terminus_2/hello-world-context-summarization-linear-history.*) and its
  pull request #1844.
- qwen/projects/-home-dev-ferry/chats/<id>.jsonl: Qwen Code 0.1x JSONL records
  {uuid, parentUuid, type, message: {role, parts}}: a thought part, a functionCall and
  its functionResponse in a tool_result record, a `/rewind` (a `system` rewind record
  re-rooted to the record before the abandoned turn, the abandoned records left in the
  file), a custom_title written off the active tail, a record whose parent the CLI
  failed to write (a dangling link), a `chat_compression` checkpoint whose
  compressedHistory opens with the `<state_snapshot>` summary, ui_telemetry records.
- qwen/tmp/<project hash>/chats/session-*.json: the same session as Qwen Code's builds
  before the JSONL recording wrote it, one JSON document (Gemini CLI's ConversationRecord,
  `qwen` messages holding their tool calls and results, thoughts, an `info` note).
- kiro/sessions/cli/<id>.jsonl and <id>.json: Kiro CLI 2.x lines {version, kind, data}:
  Prompt, AssistantMessage (text, thinking, toolUse), ToolResults (json and text
  results), and the corruption kirodotdev/Kiro #6110 describes: two AssistantMessage
  lines in a row, the second a `write` whose input the CLI replaced by its "SYSTEM NOTE"
  placeholder and which never gets a result, the first's result written after it.

Every fact of ferry-facts.yaml is in a user message and a tool result, and in each
tool's own summary where the format has one. Run from the repository root:
`python tests/data/sessions/write_ferry.py`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

HERE = Path(__file__).parent
CWD = "/home/dev/ferry"
PORT = "47213"  # in the user's first message
BUCKET = "ferry-archive-w3"  # in a tool result
TAG = "v4.2.7-ferry"  # in a user message after the compaction

TASK = (f"Wire the ferry relay to the archive; it listens on port {PORT}. "
        "Find the bucket it writes to.")


def ids(prefix: str):
    n = 0
    while True:
        n += 1
        yield str(uuid.uuid5(uuid.NAMESPACE_URL, f"ferry/{prefix}/{n}"))


def dump(path: Path, recs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                            for r in recs), encoding="utf-8")


def dump_doc(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")


# -- ATIF (Harbor terminus-2) ------------------------------------------------------------------

AGENT = {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/gpt-4o",
         "extra": {"parser": "json", "temperature": 0.7}}
SUMMARY = (f"I have been wiring the ferry relay. The relay listens on port {PORT}; its "
           f"archive bucket is {BUCKET} (from relay.toml). Still to do: point the relay "
           "at the bucket and restart it.")


def atif() -> tuple[dict, dict]:
    first = {
        "schema_version": "ATIF-v1.7", "session_id": "ferry-run-7",
        "trajectory_id": "ferry-run-7-main", "agent": AGENT,
        "steps": [
            {"step_id": 1, "source": "system", "timestamp": "2026-12-01T09:00:00Z",
             "message": "You are an AI assistant solving command-line tasks."},
            {"step_id": 2, "source": "user", "timestamp": "2026-12-01T09:00:01Z",
             "message": TASK},
            {"step_id": 3, "source": "agent", "timestamp": "2026-12-01T09:00:05Z",
             "model_name": "openai/gpt-4o",
             "message": "I'll read the relay's config.",
             "reasoning_content": "The config names the bucket.",
             "tool_calls": [{"tool_call_id": "call_1", "function_name": "bash",
                             "arguments": {"keystrokes": "cat relay.toml\n",
                                           "duration": 0.1}}],
             "observation": {"results": [{"source_call_id": "call_1", "content": (
                 f"[archive]\nbucket = \"{BUCKET}\"\nregion = \"eu-west-3\"\n")}]},
             "metrics": {"prompt_tokens": 682, "completion_tokens": 60,
                         "cost_usd": 0.0023}},
            {"step_id": 4, "source": "agent", "timestamp": "2026-12-01T09:00:09Z",
             "model_name": "openai/gpt-4o",
             "message": [{"type": "text", "text": "The relay writes to the archive bucket "
                                                  "named in relay.toml."}],
             "metrics": {"prompt_tokens": 750, "completion_tokens": 50,
                         "cost_usd": 0.0024}},
            {"step_id": 5, "source": "system", "timestamp": "2026-12-01T09:00:30Z",
             "message": "Performed context summarization and handoff to continue task.",
             "observation": {"results": [{"subagent_trajectory_ref": [
                 {"session_id": "ferry-run-7-summarization-1-summary",
                  "trajectory_path": "trajectory.summarization-1-summary.json",
                  "extra": {"summary": "Context summarization 1: Step 1 - Summary "
                                       "generation"}}]}]},
             "extra": {"context_management": {"type": "compaction",
                                               "boundary": "replace"}}},
        ],
        "final_metrics": {"total_prompt_tokens": 1432, "total_completion_tokens": 110,
                          "total_cost_usd": 0.0047, "total_steps": 5},
        "continued_trajectory_ref": "trajectory.cont-1.json",
    }
    cont = {
        "schema_version": "ATIF-v1.7", "session_id": "ferry-run-7",
        "trajectory_id": "ferry-run-7-cont-1",
        "agent": {**AGENT, "extra": {**AGENT["extra"], "continuation_index": 1}},
        "steps": [
            # what the agent saw after the compaction: the original task again, the
            # handoff summary, its questions and the answers, all copied context
            {"step_id": 1, "source": "user", "message": TASK, "is_copied_context": True},
            {"step_id": 2, "source": "user", "is_copied_context": True, "message": (
                "You are picking up work from a previous AI agent on this task:\n\n"
                f"**Summary from Previous Agent:**\n{SUMMARY}\n\nPlease begin by asking "
                "several questions about the current state of the solution.")},
            {"step_id": 3, "source": "agent", "model_name": "openai/gpt-4o",
             "is_copied_context": True,
             "message": "1. Is the relay running? 2. Which region is the bucket in?"},
            {"step_id": 4, "source": "user", "is_copied_context": True,
             "message": "Here are the answers the other agent provided.\n\n1. No. "
                        "2. eu-west-3.\n\nContinue working on this task."},
            {"step_id": 5, "source": "user", "timestamp": "2026-12-01T09:01:00Z",
             "message": f"Tag the release {TAG} once the relay restarts."},
            {"step_id": 6, "source": "agent", "timestamp": "2026-12-01T09:01:04Z",
             "model_name": "openai/gpt-4o", "message": "Restarting the relay.",
             "tool_calls": [{"tool_call_id": "call_2", "function_name": "bash",
                             "arguments": {"keystrokes": "systemctl restart ferry\n"}}],
             "observation": {"results": [{"source_call_id": "call_2",
                                          "content": "ferry.service restarted"}]}},
            {"step_id": 7, "source": "agent", "timestamp": "2026-12-01T09:01:09Z",
             "model_name": "openai/gpt-4o", "message": f"Restarted; tagged {TAG}."},
        ],
        "final_metrics": {"total_prompt_tokens": 2100, "total_completion_tokens": 90},
    }
    return first, cont


# -- Qwen Code 0.1x ----------------------------------------------------------------------------

QWEN_ID = "5e0c1a7d-2b4f-4c8e-9a13-7d6f2e8b4c01"


def qwen() -> list[dict]:
    u = ids("qwen")
    recs: list[dict] = []
    tail: list[str | None] = [None]
    clock = iter(range(0, 60))

    def rec(kind: str, *, parent: object = ..., move: bool = True, **extra) -> str:
        me = next(u)
        recs.append({"uuid": me, "parentUuid": tail[0] if parent is ... else parent,
                     "sessionId": QWEN_ID,
                     "timestamp": f"2026-12-01T10:{next(clock):02d}:00.000Z",
                     "type": kind, "cwd": CWD, "version": "0.14.2", "gitBranch": "relay",
                     **extra})
        if move:
            tail[0] = me
        return me

    def user(text: str) -> str:
        return rec("user", message={"role": "user", "parts": [{"text": text}]})

    def model(parts: list[dict]) -> str:
        return rec("assistant", model="qwen3-coder-plus", message={"role": "model",
                                                                   "parts": parts},
                   usageMetadata={"promptTokenCount": 900, "candidatesTokenCount": 40,
                                  "totalTokenCount": 940})

    def result(call_id: str, name: str, output: str) -> str:
        return rec("tool_result", message={"role": "user", "parts": [
            {"functionResponse": {"id": call_id, "name": name,
                                  "response": {"output": output}}}]},
                   toolCallResult={"callId": call_id, "status": "success",
                                   "resultDisplay": output[:40]})

    def system(subtype: str, payload: dict, **kw) -> str:
        return rec("system", subtype=subtype, systemPayload=payload, **kw)

    system("ui_telemetry", {"uiEvent": {"event.name": "qwen-code.api_response"}})
    user(TASK)
    model([{"text": "The relay's config names the bucket.", "thought": True},
           {"text": "I'll read the relay's config."},
           {"functionCall": {"id": "call_q1", "name": "read_file",
                             "args": {"absolute_path": f"{CWD}/relay.toml"}}}])
    result("call_q1", "read_file", f"[archive]\nbucket = \"{BUCKET}\"\nregion = \"eu-west-3\"")
    model([{"text": "The relay writes to the bucket in relay.toml."}])
    # a title written off the active tail: the next record's parent is the model turn
    system("custom_title", {"customTitle": "Ferry relay", "titleSource": "auto"}, move=False)
    before_turn = tail[0]
    user("Delete the old archive bucket first.")
    model([{"text": "Deleting it."},
           {"functionCall": {"id": "call_q2", "name": "run_shell_command",
                             "args": {"command": "aws s3 rb s3://ferry-old-bucket"}}}])
    # /rewind to before that turn: re-rooted, the abandoned records stay in the file
    system("rewind", {"truncatedCount": 2}, parent=before_turn)
    user("Check the archive's lifecycle rules instead.")
    model([{"functionCall": {"id": "call_q3", "name": "run_shell_command",
                             "args": {"command": "relayctl lifecycle"}}}])
    # the CLI failed to write this result's parent (a write error it only logs): the
    # next record names a uuid the file does not hold
    lost = str(uuid.uuid5(uuid.NAMESPACE_URL, "ferry/qwen/lost"))
    result("call_q3", "run_shell_command", "lifecycle: expire after 30 days")
    recs[-1]["parentUuid"] = lost
    kept = model([{"text": "Lifecycle: objects expire after 30 days."}])
    system("chat_compression", {
        "info": {"originalTokenCount": 41000, "newTokenCount": 2100,
                 "compressionStatus": 1},
        "compressedHistory": [
            {"role": "user", "parts": [{"text": (
                "<state_snapshot>\n<overall_goal>Wire the ferry relay to the archive."
                f"</overall_goal>\n<key_knowledge>Relay port {PORT}; archive bucket "
                f"{BUCKET}; objects expire after 30 days.</key_knowledge>\n"
                "</state_snapshot>")}]},
            {"role": "model", "parts": [{"text": "Got it. Thanks for the additional "
                                                 "context!"}]},
            next(r["message"] for r in recs if r["uuid"] == kept)]})
    user(f"Tag the release {TAG} once the relay restarts.")
    model([{"text": f"Restarted the relay and tagged {TAG}."}])
    system("ui_telemetry", {"uiEvent": {"event.name": "qwen-code.api_response"}})
    return recs


def qwen_json() -> dict:
    """The ferry session as Qwen Code's builds before the JSONL recording wrote it: one
    JSON document a session (`~/.qwen/tmp/<sha256 of the project path>/chats/
    session-<start>-<first 8 of the id>.json`), Gemini CLI's ConversationRecord with
    `qwen` for `gemini`: each tool call's result (the functionResponse the model received)
    inside the message that made it, thoughts as {subject, description}, no record of a
    compression (the file holds the UI's history, which a compression leaves whole)."""
    clock = iter(range(0, 60))
    n = iter(range(1, 99))

    def at() -> str:
        return f"2025-09-01T10:{next(clock):02d}:00.000Z"

    def msg(kind: str, content: str, **extra) -> dict:
        return {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ferry/qwen-json/{next(n)}")),
                "timestamp": at(), "type": kind, "content": content, **extra}

    def call(call_id: str, name: str, args: dict, output: str) -> dict:
        return {"id": call_id, "name": name, "args": args,
                "result": [{"functionResponse": {"id": call_id, "name": name,
                                                 "response": {"output": output}}}],
                "status": "success", "timestamp": at(), "displayName": name,
                "description": "", "resultDisplay": output[:40],
                "renderOutputAsMarkdown": False}

    tokens = {"input": 900, "output": 40, "cached": 0, "thoughts": 12, "tool": 0,
              "total": 952}
    messages = [
        msg("user", TASK),
        msg("qwen", "I'll read the relay's config.", model="qwen3-coder-plus", tokens=tokens,
            thoughts=[{"subject": "Config", "description": "The relay's config names the "
                                                           "bucket.", "timestamp": at()}],
            toolCalls=[call("call_q1", "read_file", {"absolute_path": f"{CWD}/relay.toml"},
                            f"[archive]\nbucket = \"{BUCKET}\"\nregion = \"eu-west-3\"")]),
        msg("qwen", "The relay writes to the bucket in relay.toml.", model="qwen3-coder-plus",
            tokens=tokens),
        msg("user", "Check the archive's lifecycle rules instead."),
        msg("qwen", "", model="qwen3-coder-plus", tokens=tokens,
            toolCalls=[call("call_q3", "run_shell_command", {"command": "relayctl lifecycle"},
                            "lifecycle: expire after 30 days")]),
        msg("qwen", "Lifecycle: objects expire after 30 days.", model="qwen3-coder-plus",
            tokens=tokens),
        msg("info", "Chat history compressed from 41000 to 2100 tokens."),
        msg("user", f"Tag the release {TAG} once the relay restarts."),
        msg("qwen", f"Restarted the relay and tagged {TAG}.", model="qwen3-coder-plus",
            tokens=tokens),
    ]
    return {"sessionId": QWEN_JSON_ID, "projectHash": PROJECT_HASH,
            "startTime": "2025-09-01T10:00:00.000Z", "lastUpdated": messages[-1]["timestamp"],
            "messages": messages}


QWEN_JSON_ID = "7a3d9c2e-4b1f-4e6a-8c05-2f9e1d7b6a30"
PROJECT_HASH = hashlib.sha256(CWD.encode()).hexdigest()


# -- Kiro CLI 2.x ------------------------------------------------------------------------------

KIRO_ID = "b3f9d2e1-6c4a-4f7e-8d25-1a9c0e7b3f64"


def kiro() -> tuple[list[dict], dict]:
    n = iter(range(1, 99))

    def line(kind: str, content: list[dict], **data) -> dict:
        return {"version": "v1", "kind": kind,
                "data": {"message_id": f"{KIRO_ID[:8]}-{next(n):02d}", "content": content,
                         **data}}

    def text(t: str) -> dict:
        return {"kind": "text", "data": t}

    def use(call_id: str, name: str, inp: dict) -> dict:
        return {"kind": "toolUse", "data": {"toolUseId": call_id, "name": name,
                                            "input": inp}}

    def res(call_id: str, content: list[dict]) -> dict:
        return {"kind": "toolResult", "data": {"toolUseId": call_id, "content": content,
                                               "status": "success"}}

    recs = [
        line("Prompt", [text(TASK)], meta={"timestamp": 1796115600.420942}),
        line("AssistantMessage", [
            {"kind": "thinking", "data": {"text": "The config names the bucket."}},
            text("I'll read the relay's config."),
            use("tooluse_K1", "shell", {"command": "cat relay.toml",
                                        "__tool_use_purpose": "Read the relay config"})]),
        line("ToolResults", [res("tooluse_K1", [{"kind": "json", "data": {
            "exit_status": "exit status: 0",
            "stdout": f"[archive]\nbucket = \"{BUCKET}\" # eu-west-3\n", "stderr": ""}}])]),
        line("AssistantMessage", [text("The relay writes to the bucket in relay.toml.")]),
        line("Prompt", [text("Read the diagram and redraw it with the bucket.")],
             meta={"timestamp": 1796115660}),
        line("AssistantMessage", [text(""), use("tooluse_K2", "read",
                                                {"path": f"{CWD}/docs/relay.drawio"})]),
        # #6110: the write's input replaced by the placeholder, written as a message of
        # its own before the read's result; the write never gets a result
        line("AssistantMessage", [use("tooluse_K3", "write", {
            "SYSTEM NOTE": "the actual tool use arguments were too complicated to be "
                           "generated"})]),
        line("ToolResults", [res("tooluse_K2", [{"kind": "text",
                                                 "data": "<mxfile>relay -> archive</mxfile>"}])]),
        line("Prompt", [text(f"Skip the diagram. Tag the release {TAG}.")],
             meta={"timestamp": 1796115720}),
        line("AssistantMessage", [text(f"Tagged {TAG}.")]),
    ]
    meta = {"session_id": KIRO_ID, "cwd": CWD, "created_at": "2026-12-01T11:00:00Z",
            "session_state": {
                "rts_model_state": {"model_info": {"model_id": "claude-sonnet-4.5"}},
                "conversation_metadata": {"user_turn_metadatas": [
                    {"input_token_count": 0, "output_token_count": 0,
                     "end_timestamp": 1796115650, "message_ids": [
                         r["data"]["message_id"] for r in recs[:4]]}]}}}
    return recs, meta


def main() -> None:
    first, cont = atif()
    dump_doc(HERE / "atif/trajectory.json", first)
    dump_doc(HERE / "atif/trajectory.cont-1.json", cont)
    dump(HERE / "qwen/projects/-home-dev-ferry/chats" / f"{QWEN_ID}.jsonl", qwen())
    dump_doc(HERE / "qwen/tmp" / PROJECT_HASH / "chats"
             / f"session-2025-09-01T10-00-{QWEN_JSON_ID[:8]}.json", qwen_json())
    lines, meta = kiro()
    dump(HERE / "kiro/sessions/cli" / f"{KIRO_ID}.jsonl", lines)
    dump_doc(HERE / "kiro/sessions/cli" / f"{KIRO_ID}.json", meta)


if __name__ == "__main__":
    main()
