"""Writes the "lumen" samples: one session of a ledger exporter as four newer CLIs write
it, each with the quirks the readers must take as the CLI writes them.

- lumen.claude-code.jsonl: Claude Code 2.1.x with `attachment` records (an @-mentioned
  file, a prompt queued inside a tool run, the same file later edited, reminders the
  CLI adds) and `isMeta` user messages (the local-command caveat, a `!` command's
  output). Every fact of lumen-facts.yaml is only in such a record.
- codex-0148/sessions/2026/11/30/rollout-*.jsonl: Codex CLI 0.148 (no event_msg/
  user_message; world_state, inter_agent_communication, a subagent's agent_message) with
  a local compaction whose replacement history holds no summary (the retained user
  message last, as a real 0.118 rollout writes it).
- antigravity-cli/brain/<id>/.system_generated/logs/transcript_full.jsonl: agy 1.1.x steps,
  a result written before its planner step, a checkpoint inside a tool run.
- copilot/session-state/<id>/events.jsonl: Copilot CLI 1.0 events, compacted twice; a
  second session whose `task` tool runs a sub-agent (its events carrying `agentId`) and
  whose postToolUse hook repeats a tool's result in its hook.start event.

The shapes are learned from the CLIs' public parsers and source (each reader's module
docstring names them); the text is written here. Run from the repository root:
`python tests/data/sessions/write_lumen.py`.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

HERE = Path(__file__).parent
CWD = "/home/dev/lumen"
SID = "6d0b2f4e-93a1-4c8e-b7d5-1e2f3a4b5c6d"
PORT = "38611"  # only in the @-mentioned file
TAG = "v2.9.14-lumen"  # only in the prompt queued inside a tool run
BUCKET = "lumen-ledger-eu2"  # only in the edited snippet of that file
BUILD = "7f3e9a2c-41d8-4b6e-9c0a-5d2b8e1f7a63"  # only in a `!` command's output
OWNER = "@ines.varga"
SPEC = (f"# Exporter spec\n\nOwner: {OWNER}\nThe exporter listens on port {PORT} and "
        "batches ledger rows.\n\n```python\n@expand_groups\ndef export(batch):\n"
        "    return [row for row in batch if row.posted]\n```\n")


def ids(prefix: str):
    n = 0
    while True:
        n += 1
        yield str(uuid.uuid5(uuid.NAMESPACE_URL, f"lumen/{prefix}/{n}"))


def dump(path: Path, recs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                            for r in recs), encoding="utf-8")


# -- Claude Code 2.1.x ---------------------------------------------------------------------


def claude_code() -> list[dict]:
    u = ids("cc")
    recs: list[dict] = []
    last: list[str | None] = [None]
    clock = iter(range(10, 60))

    def rec(kind: str, **extra) -> str:
        me = next(u)
        recs.append({"parentUuid": last[0], "isSidechain": False, "userType": "external",
                     "cwd": CWD, "sessionId": SID, "version": "2.1.131",
                     "gitBranch": "exporter", "type": kind, **extra, "uuid": me,
                     "timestamp": f"2026-11-30T09:{next(clock):02d}:00.000Z"})
        last[0] = me
        return me

    def user(content, **extra) -> str:
        return rec("user", message={"role": "user", "content": content}, **extra)

    def assistant(msg_id: str, blocks: list[dict]) -> str:
        return rec("assistant", message={"id": msg_id, "type": "message",
                                         "role": "assistant", "model": "claude-opus-4-6",
                                         "content": blocks, "stop_reason": None})

    def attachment(a: dict) -> str:
        return rec("attachment", attachment=a)

    user("Wire the ledger exporter as @docs/exporter-spec.md says, then run the tests.")
    attachment({"type": "file", "filename": f"{CWD}/docs/exporter-spec.md",
                "displayPath": "docs/exporter-spec.md",
                "content": {"type": "text", "file": {
                    "filePath": f"{CWD}/docs/exporter-spec.md", "content": SPEC,
                    "numLines": SPEC.count("\n"), "startLine": 1,
                    "totalLines": SPEC.count("\n")}}})
    attachment({"type": "todo_reminder", "content": [], "itemCount": 0})
    assistant("msg_01L1", [{"type": "text", "text": "I'll read the exporter module first."}])
    assistant("msg_01L1", [{"type": "tool_use", "id": "toolu_01LR", "name": "Read",
                            "input": {"file_path": f"{CWD}/lumen/exporter.py"}}])
    # typed while the Read ran: written between the call and its result
    attachment({"type": "queued_command", "commandMode": "prompt",
                "origin": {"kind": "human"},
                "prompt": f"Also tag the release {TAG} once it is green."})
    user([{"tool_use_id": "toolu_01LR", "type": "tool_result",
           "content": "     1→class Exporter:\n     2→    def run(self): ..."}],
         toolUseResult={"type": "text"})
    assistant("msg_01L2", [{"type": "text", "text": "Noted, I'll tag it after the tests."},
                           {"type": "tool_use", "id": "toolu_01LB", "name": "Bash",
                            "input": {"command": "pytest -q"}}])
    user([{"tool_use_id": "toolu_01LB", "type": "tool_result", "content": "12 passed"}])
    assistant("msg_01L3", [{"type": "text", "text": "All 12 tests pass."}])
    user("<local-command-caveat>Caveat: The messages below were generated by the user "
         "while running local commands. DO NOT respond to these messages or otherwise "
         "consider them in your response unless the user explicitly asks you to."
         "</local-command-caveat>", isMeta=True)
    user("<bash-input>cat build.txt</bash-input>")
    user(f"<bash-stdout>build {BUILD} ok</bash-stdout><bash-stderr></bash-stderr>",
         isMeta=True)
    attachment({"type": "edited_text_file", "filename": f"{CWD}/docs/exporter-spec.md",
                "snippet": f"     4→The exporter listens on port {PORT} and batches "
                           f"ledger rows.\n     5→Rows go to the bucket {BUCKET}."})
    attachment({"type": "plan_mode", "reminderType": "full", "isSubAgent": False,
                "planFilePath": f"{CWD}/.claude/plans/exporter.md", "planExists": False})
    user("I added the bucket to the spec; use that one, and the build from build.txt.")
    assistant("msg_01L4", [{"type": "text", "text": "Using the bucket and the build as "
                                                    "given; tagging after the merge."}])
    attachment({"type": "skill_listing", "content": "- review: review a change"})
    user("Thanks, that's all for today.")
    assistant("msg_01L5", [{"type": "text", "text": "Done: exporter wired, tests green."}])
    recs.append({"type": "last-prompt", "lastPrompt": "Thanks, that's all for today.",
                 "sessionId": SID})
    return recs


# -- Codex CLI 0.148 -----------------------------------------------------------------------

CODEX_ID = "019a7c2e-5b3d-7e41-9f06-2c8d4a1b6e93"


def codex() -> list[dict]:
    t = iter(range(1, 60))

    def line(kind: str, payload: dict) -> dict:
        return {"timestamp": f"2026-11-30T10:00:{next(t):02d}.000Z", "type": kind,
                "payload": payload}

    def msg(role: str, text: str) -> dict:
        part = "output_text" if role == "assistant" else "input_text"
        return line("response_item", {"type": "message", "role": role,
                                      "content": [{"type": part, "text": text}]})

    keep_going = "just keep going until done"
    history = [{"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "<permissions instructions>sandboxed"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": keep_going}]}]  # no summary message after
    return [
        line("session_meta", {"id": CODEX_ID, "cwd": CWD, "originator": "codex_cli_rs",
                              "cli_version": "0.148.0", "source": "cli"}),
        line("turn_context", {"cwd": CWD, "model": "gpt-5.4-codex", "effort": "medium"}),
        line("world_state", {"cwd": CWD, "git": {"branch": "exporter"}}),
        msg("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        msg("user", f"<environment_context><cwd>{CWD}</cwd></environment_context>"),
        msg("user", "Wire the ledger exporter and check where it listens."),
        line("response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "Look at the config."}], "content": None}),
        line("response_item", {"type": "function_call", "name": "exec_command",
                               "call_id": "call_L1",
                               "arguments": json.dumps({"cmd": "cat lumen.toml"})}),
        line("response_item", {"type": "function_call_output", "call_id": "call_L1",
                               "output": f"[exporter]\nport = {PORT}\n"}),
        msg("assistant", "The exporter config is read; a worker checks the bucket."),
        line("inter_agent_communication", {"author": "/root/worker", "recipient": "/root",
                                           "other_recipients": [], "trigger_turn": True,
                                           "content": f"bucket is {BUCKET}"}),
        line("response_item", {"type": "agent_message", "author": "/root/worker",
                               "recipient": "/root", "content": [
                                   {"type": "input_text", "text": f"bucket is {BUCKET}"}]}),
        msg("user", keep_going),
        line("token_usage_record", {"input_tokens": 240112, "output_tokens": 3120}),
        line("compacted", {"message": "", "replacement_history": history}),
        msg("assistant", f"Tagging {TAG} now."),
        line("response_item", {"type": "function_call", "name": "exec_command",
                               "call_id": "call_L2",
                               "arguments": json.dumps({"cmd": f"git tag {TAG}"})}),
        line("response_item", {"type": "function_call_output", "call_id": "call_L2",
                               "output": "Process exited with code 0"}),
        msg("assistant", "Tagged."),
    ]


# -- Antigravity CLI (agy) ------------------------------------------------------------------

AGY_ID = "2b7e4c1d-8f3a-4e6b-a9d2-5c0f1e3b7a84"


def antigravity() -> list[dict]:
    def step(i: int, source: str, kind: str, content: str | None = None, **extra) -> dict:
        return {"step_index": i, "source": source, "type": kind, "status": "DONE",
                "created_at": f"2026-11-30T11:00:{i:02d}Z", "content": content, **extra}

    request = ("<USER_REQUEST>\nWire the ledger exporter; it listens on port "
               f"{PORT}.\n</USER_REQUEST>\n<ADDITIONAL_METADATA>\nThe current local time "
               "is 2026-11-30T11:00:01Z.\n</ADDITIONAL_METADATA>")
    steps = [
        step(0, "SYSTEM", "CHECKPOINT", "{{ CHECKPOINT 0 }}"),
        step(1, "USER", "USER_INPUT", request),
        step(2, "MODEL", "PLANNER_RESPONSE", "Reading the config.", thinking="config?",
             tool_calls=[{"name": "view_file", "args": {"AbsolutePath": f"{CWD}/lumen.toml"}}]),
        step(3, "MODEL", "VIEW_FILE", f"[exporter]\nbucket = \"{BUCKET}\"\n"),
        step(4, "MODEL", "PLANNER_RESPONSE", "Running the tests and the build.",
             tool_calls=[{"name": "run_command", "args": {"CommandLine": "pytest -q"}},
                         {"name": "run_command", "args": {"CommandLine": "cat build.txt"}}]),
        step(5, "MODEL", "RUN_COMMAND", "12 passed"),
        # the CLI compacted between the two results of one planner step
        step(6, "SYSTEM", "CHECKPOINT",
             "{{ CHECKPOINT 1 }}\n# Context so far\nThe user wants the ledger exporter "
             f"wired; it listens on port {PORT} and writes to {BUCKET}. Tests pass."),
        step(7, "MODEL", "RUN_COMMAND", f"build {BUILD} ok"),
        step(8, "SYSTEM", "SYSTEM_MESSAGE", "The background task `pytest` finished."),
        step(9, "USER", "USER_INPUT", f"<USER_REQUEST>\nTag it {TAG}.\n</USER_REQUEST>"),
        step(10, "MODEL", "PLANNER_RESPONSE", f"Tagging {TAG}.",
             tool_calls=[{"name": "run_command", "args": {"CommandLine": f"git tag {TAG}"}}]),
        step(11, "MODEL", "RUN_COMMAND", ""),
        step(12, "MODEL", "PLANNER_RESPONSE", "Done: exporter wired, tagged."),
    ]
    # a fast result is appended before its planner step is
    steps[2], steps[3] = steps[3], steps[2]
    return steps


# -- GitHub Copilot CLI ------------------------------------------------------------------------

COPILOT_ID = "8c4f2a1e-6b3d-4e9a-b5c7-0d1e2f3a4b5c"


def copilot() -> list[dict]:
    e = ids("copilot")
    events: list[dict] = []
    clock = iter(range(1, 60))

    def ev(kind: str, **data) -> None:
        events.append({"type": kind, "data": data, "id": next(e),
                       "timestamp": f"2026-11-30T12:00:{next(clock):02d}.000Z",
                       "parentId": events[-1]["id"] if events else None})

    def tool(call: str, name: str, args: dict, result: str) -> None:
        ev("tool.execution_start", toolCallId=call, toolName=name, arguments=args)
        ev("tool.execution_complete", toolCallId=call, success=True,
           result={"content": result, "detailedContent": result}, toolTelemetry={})

    ev("session.start", sessionId=COPILOT_ID, version=1, producer="copilot-agent",
       copilotVersion="1.0.9", startTime="2026-11-30T12:00:00.000Z",
       context={"cwd": CWD, "branch": "exporter"})
    ev("session.model_change", newModel="claude-sonnet-4.6")
    ev("user.message", content="Wire the ledger exporter; check where it listens.",
       transformedContent="Wire the ledger exporter; check where it listens.",
       attachments=[])
    ev("assistant.turn_start", turnId="0")
    ev("assistant.reasoning", reasoningId="r1", content="Look at the config.")
    ev("assistant.message", messageId="m1", content="Reading the config.",
       toolRequests=[{"toolCallId": "toolu_C1", "name": "view", "type": "function",
                      "arguments": {"path": f"{CWD}/lumen.toml"}}])
    tool("toolu_C1", "view", {"path": f"{CWD}/lumen.toml"}, f"[exporter]\nport = {PORT}\n")
    ev("assistant.message", messageId="m2", content="It listens on the configured port.",
       toolRequests=[])
    ev("assistant.turn_end", turnId="0")
    ev("session.compaction_start")
    ev("session.compaction_complete", success=True, preCompactionTokens=118000,
       postCompactionTokens=9000, checkpointNumber=1,
       summaryContent=f"<overview>Wiring the ledger exporter; it listens on port {PORT}."
                      "</overview>")
    ev("user.message", content="Which bucket does it write to?", attachments=[])
    ev("assistant.message", messageId="m3", content="Checking.",
       toolRequests=[{"toolCallId": "toolu_C2", "name": "bash", "type": "function",
                      "arguments": {"command": "grep bucket lumen.toml"}}])
    tool("toolu_C2", "bash", {"command": "grep bucket lumen.toml"}, f"bucket = \"{BUCKET}\"")
    ev("assistant.message", messageId="m4", content="It writes to the configured bucket.")
    ev("session.info", infoType="mcp", message="1 MCP server connected")
    ev("session.compaction_start")
    ev("session.compaction_complete", success=True, preCompactionTokens=121000,
       postCompactionTokens=9400, checkpointNumber=2,
       summaryContent=f"<overview>Exporter on port {PORT}, bucket {BUCKET}.</overview>")
    ev("user.message", content=f"Tag it {TAG} and show the build id.", attachments=[])
    ev("assistant.message", messageId="m5", content="Tagging.",
       toolRequests=[{"toolCallId": "toolu_C3", "name": "bash", "type": "function",
                      "arguments": {"command": f"git tag {TAG} && cat build.txt"}}])
    tool("toolu_C3", "bash", {"command": f"git tag {TAG} && cat build.txt"},
         f"build {BUILD} ok")
    ev("assistant.message", messageId="m6", content="Tagged; the build id is above.")
    ev("session.shutdown", shutdownType="routine")
    return events


COPILOT_SUB_ID = "3a9e5c7b-1d2f-4b8a-9e6c-5f0a7b3d2c1e"
AGENT_ID = "b71c4e9a-2f3d-4a6b-8c5e-0d9f1a2b3c4d"  # the explore sub-agent's instance


def copilot_subagent() -> list[dict]:
    """A Copilot CLI 1.0 session that sends the `task` tool's explore agent: the
    sub-agent's own events carry its `agentId` on the event, its answer comes back as the
    task call's result; and a postToolUse hook the user configured, whose hook.start
    input repeats the tool's result."""
    e = ids("copilot-sub")
    events: list[dict] = []
    clock = iter(range(1, 60))

    def ev(kind: str, agent: str | None = None, **data) -> None:
        events.append({"type": kind, "data": data, "id": next(e),
                       "timestamp": f"2026-11-30T13:00:{next(clock):02d}.000Z",
                       "parentId": events[-1]["id"] if events else None,
                       **({"agentId": agent} if agent else {})})

    def request(call: str, name: str, args: dict) -> dict:
        return {"toolCallId": call, "name": name, "type": "function", "arguments": args}

    grep = {"command": "grep bucket lumen.toml"}
    port = {"command": "grep port lumen.toml"}
    task = {"agent_type": "explore", "description": "Find the bucket",
            "prompt": "Find the bucket the ledger exporter writes to."}
    ev("session.start", sessionId=COPILOT_SUB_ID, version=1, producer="copilot-agent",
       copilotVersion="1.0.9", startTime="2026-11-30T13:00:00.000Z",
       context={"cwd": CWD, "branch": "exporter"})
    ev("user.message", content="Where do the exporter's rows go, and on which port?",
       transformedContent="Where do the exporter's rows go, and on which port?",
       attachments=[])
    ev("assistant.turn_start", turnId="0")
    ev("assistant.message", messageId="m1", content="Sending an agent to find the bucket.",
       toolRequests=[request("toolu_T1", "task", task)])
    ev("tool.execution_start", toolCallId="toolu_T1", toolName="task", arguments=task)
    ev("subagent.started", toolCallId="toolu_T1", agentName="explore",
       agentDisplayName="Explore", agentDescription="Searches the codebase")
    ev("assistant.message", AGENT_ID, messageId="s1", content="Grepping the config.",
       toolRequests=[request("toolu_S1", "bash", grep)])
    ev("tool.execution_start", AGENT_ID, toolCallId="toolu_S1", toolName="bash",
       arguments=grep)
    ev("tool.execution_complete", AGENT_ID, toolCallId="toolu_S1", success=True,
       result={"content": f"bucket = \"{BUCKET}\"", "detailedContent": ""},
       toolTelemetry={})
    ev("assistant.message", AGENT_ID, messageId="s2",
       content=f"The exporter writes to {BUCKET}.", toolRequests=[])
    ev("subagent.completed", toolCallId="toolu_T1", agentName="explore",
       agentDisplayName="Explore")
    ev("tool.execution_complete", toolCallId="toolu_T1", success=True,
       result={"content": f"The exporter writes to {BUCKET}.", "detailedContent": ""},
       toolTelemetry={})
    ev("assistant.message", messageId="m2", content="Now the port.",
       toolRequests=[request("toolu_C9", "bash", port)])
    ev("tool.execution_start", toolCallId="toolu_C9", toolName="bash", arguments=port)
    ev("hook.start", hookInvocationId="hook-1", hookType="postToolUse",
       input={"timestamp": 1796130025000, "cwd": CWD, "toolName": "bash", "toolArgs": port,
              "toolResult": {"resultType": "success",
                             "textResultForLlm": f"port = {PORT}"}})
    ev("hook.end", hookInvocationId="hook-1", hookType="postToolUse", success=True)
    ev("tool.execution_complete", toolCallId="toolu_C9", success=True,
       result={"content": f"port = {PORT}", "detailedContent": f"port = {PORT}"},
       toolTelemetry={})
    ev("assistant.message", messageId="m3", content="Rows go to the bucket; port above.",
       toolRequests=[])
    ev("assistant.turn_end", turnId="0")
    ev("session.shutdown", shutdownType="routine")
    return events


def main() -> None:
    dump(HERE / "lumen.claude-code.jsonl", claude_code())
    day = HERE / "codex-0148/sessions/2026/11/30"
    dump(day / f"rollout-2026-11-30T10-00-00-{CODEX_ID}.jsonl", codex())
    dump(HERE / "antigravity-cli/brain" / AGY_ID / ".system_generated/logs"
         / "transcript_full.jsonl", antigravity())
    dump(HERE / "copilot/session-state" / COPILOT_ID / "events.jsonl", copilot())
    dump(HERE / "copilot/session-state" / COPILOT_SUB_ID / "events.jsonl",
         copilot_subagent())


if __name__ == "__main__":
    main()
