"""A user's own agent session, read the way its tool wrote it (docs/design.md §3 "Own sessions"):
the main thread as a list of messages, the tool's own compaction summaries beside it, and
what lies off the main thread, counted by kind.

One module per format, each naming the CLI versions and public sources its shapes were
learned from and what it repairs; `registry` lists them once, detects and reads:

- `claude_code`: a Claude Code session file (`~/.claude/projects/<project>/<id>.jsonl`).
- `codex`: a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`).
- `gemini`: a Gemini CLI chat (`~/.gemini/tmp/<project hash>/chats/session-*.json[l]`).
- `antigravity`: an Antigravity CLI (`agy`) transcript (`~/.gemini/antigravity-cli/brain/
  <id>/.system_generated/logs/transcript_full.jsonl`).
- `copilot`: a GitHub Copilot CLI session (`~/.copilot/session-state/<id>/events.jsonl`).
- `qwen`: a Qwen Code chat recording (`~/.qwen/projects/<project>/chats/<id>.jsonl`).
- `kiro`: a Kiro CLI session (`~/.kiro/sessions/cli/<id>.jsonl`); `kiro_sqlite` reads its
  older builds' `data.sqlite3` (`conversations_v2`).
- `opencode`: an OpenCode session in its database (`~/.local/share/opencode/opencode.db`)
  or its earlier JSON storage (`storage/session/<project>/<id>.json`).
- `atif`: an ATIF trajectory (`trajectory.json`, Harbor), with its continuation files.
- `goose`: a goose session in its database (`~/.local/share/goose/sessions/sessions.db`)
  or its JSONL before 1.10 (`sessions/<id>.jsonl`).
- `messages`: OpenAI chat messages, one JSON object per line.

`database` is the edge of a store kept in SQLite: opened read-only, never locking against
the CLI writing it, one session picked by the config's `session:`. A folder of session
files (OpenCode's JSON storage) is read as the file `session:` names there
(`session_file`), the file that is hashed, pinned and scanned.

Every file is checked before it is read (a regular file, under `max_mb`) and every
record's shape is checked as it is read, so a bad input is one line naming the file and
the line, never a traceback. A quirk the CLI really writes is repaired and counted, not
refused.

Paper §3.1: "Each fold receives the previous running summary and one chunk ... Nothing
re-reads the transcript": what a fold may see is the conversation itself, so everything
that is not conversation (the tool's own summary, its system notes, the agent's standing
instructions, its progress records) stays out of the thread.
"""

from .base import (
    DEFAULT_MAX_MB,
    Message,
    ReadOptions,
    SessionError,
    Source,
    ToolCall,
    Transcript,
    arguments_text,
    check_file,
    read_text,
    render_message,
)
from .database import is_sqlite
from .registry import (
    FORMATS,
    SOURCES,
    detect_format,
    read_transcript,
    scan_text,
    session_file,
)

__all__ = ["DEFAULT_MAX_MB", "FORMATS", "SOURCES", "Message", "ReadOptions", "SessionError",
           "Source", "ToolCall", "Transcript", "arguments_text", "check_file",
           "detect_format", "is_sqlite", "read_text", "read_transcript", "render_message",
           "scan_text", "session_file"]
