"""What every transcript reader shares (one module per format beside this one, the
registry detects and reads): the thread's types, the reader's interface, the edge every
file passes before it is read (a regular file, under `max_mb`, decompressed when it is a
`.zst`) and the record-shape checks that name the file and line of a bad record."""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import zstandard

from ..errors import StudyError
from .turns import tool_call_line, turn_line

DEFAULT_MAX_MB = 50
NULL = type(None)  # a JSON null, for `expect`
CONVERSATION = ("user", "assistant")  # the roles a thread is made of


class SessionError(StudyError, ValueError):
    """A transcript, facts file or session scenario the study cannot use; the message names
    the file (and line, key or fact) and what would be right."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # canonical JSON text of the call's input


@dataclass(frozen=True)
class Message:
    """One message of the main thread, in any format's terms."""

    role: str  # user | assistant | tool
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str = ""
    line: int = 0  # the transcript line (gemini: message number) it came from


@dataclass(frozen=True)
class Transcript:
    """What a transcript holds, sorted by where it belongs in the study."""

    path: str
    format: str
    messages: tuple[Message, ...]  # the main thread: what is folded
    compaction_summaries: tuple[str, ...] = ()  # the tool's own carry: the baseline
    off_thread: tuple[str, ...] = ()  # text of side branches (abandoned forks)
    compactions: int = 0  # compactions crossed on the main thread
    lines: tuple[str, ...] = field(default=(), repr=False)  # the raw lines, for the scan
    subagent: tuple[str, ...] = ()  # text of subagents' own threads (never the parent's)
    # lines of compact_boundary records whose logical parent is not in the file: the
    # thread starts again there, and what came before is unknown
    new_roots: tuple[int, ...] = ()
    left_out: tuple[tuple[str, int], ...] = ()  # (kind, records) not on the thread
    # text of the records before a new root: not a fork, a history the file lost the
    # thread to (what came before the new root is unknown)
    before_root: tuple[str, ...] = ()
    # (kind, count) of what the CLI wrote broken and the reader repaired: a link joined to
    # the record written before it, an output unwrapped from its JSON, ... (the manifest,
    # the candidates list and the summary say them)
    repaired: tuple[tuple[str, int], ...] = ()
    # lines of tool outputs whose call is not in the file: kept where the agent saw them
    orphan_outputs: tuple[int, ...] = ()
    # compactions whose summary the CLI stored encrypted: no text to grade, and never a
    # substitute for it
    opaque_compactions: int = 0
    # the subagents' own session files beside this one: never read, counted
    subagent_files: tuple[str, ...] = ()
    # other files whose text is on the main thread, with the last line of each that is
    # (a Codex fork's parent rollouts, by history_base, the outermost first): scanned for
    # secrets, pinned by sha256 in the fixture and declared as the fixture's inputs like
    # the transcript itself
    inherited: tuple[tuple[str, int], ...] = ()
    # (kind, count) of what the CLI added to the model's context outside its user and
    # assistant messages and the reader put on the thread where the model received it:
    # Claude Code's attachments (`attachment:file`, `attachment:queued_command`, ...) and
    # isMeta messages, Codex's messages from other agents, agy's system messages
    read_in: tuple[tuple[str, int], ...] = ()
    # the record vocabulary the file was written in, where a format has more than one
    # (Codex's event_msg/user_message before 0.148, response items only since), or the
    # version the file names (Copilot CLI's session.start)
    vocabulary: str = ""
    # compactions the file records with no summary to be found (a Codex local compaction
    # whose replacement history holds no summary): the baseline is absent there, and no
    # retained user or developer message stands in for it
    absent_summaries: int = 0

    @property
    def tool_results(self) -> int:
        """How many tool results the main thread holds."""
        return sum(m.role == "tool" for m in self.messages)


def json_document(text: str) -> Any | None:
    """The file's text as one JSON object, or None where it is not one (a format written
    as one document tries the whole text before the registry reads it line by line)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


Record = tuple[int, dict[str, Any]]  # (file line, the line's JSON object)


@dataclass(frozen=True)
class ReadOptions:
    """What a scenario asks of every reader."""

    include_thinking: bool = False
    max_mb: float = DEFAULT_MAX_MB
    # the session to read from a database holding several (config `session:`)
    session: str | None = None


class Source:
    """One format's reader (after inspect_scout's `sources/`): a module per format defines
    one subclass and the registry lists it once. A JSONL format says which records look
    like its own (`looks`) and reads the file's records; a format written as one JSON
    document (Gemini CLI's chat) says so in `document` and reads it in `read_document`; a
    format kept in a SQLite database (OpenCode, goose) says which tables make one its own
    in `database` and reads the session `ReadOptions.session` names in `read_database`; a
    format kept in a folder of files (OpenCode's JSON storage) names the file of the
    session `session:` names in `session_file`."""

    format: ClassVar[str]
    title: ClassVar[str]  # what a file of it is called: "Codex CLI rollout"
    shape: ClassVar[str]  # what the file looks like, for the refusal naming the shapes tried
    # the tables of its SQLite store, for the refusal naming the stores tried ("": no store)
    tables: ClassVar[str] = ""

    def looks(self, record: dict[str, Any]) -> bool:
        """Whether one JSONL record has this format's shape."""
        return False

    def document(self, text: str) -> dict[str, Any] | None:
        """The whole file as one document of this format, or None (JSONL formats)."""
        return None

    def database(self, tables: frozenset[str]) -> bool:
        """Whether a SQLite database holding these tables is this format's store."""
        return False

    def session_file(self, path: Path, session: str | None) -> Path | None:
        """The file of the session `session` names when `path` is a folder this format
        keeps its sessions in, one file a session (OpenCode's JSON storage), or a session
        file inside one; None when it is neither. Refused by name when the folder holds
        no such session."""
        return None

    def read(self, path: Path, records: list[Record], opts: ReadOptions) -> Transcript:
        raise SessionError(f"{path}: not a {self.title} ({self.shape})")

    def read_database(self, path: Path, db: Any, opts: ReadOptions) -> Transcript:
        """The session of an open database.Database (its rows' lines set as the
        transcript's `lines`)."""
        raise SessionError(f"{path}: not a {self.title} ({self.shape})")

    def read_document(self, path: Path, doc: dict[str, Any], opts: ReadOptions
                      ) -> Transcript:
        raise SessionError(f"{path}: not a {self.title} ({self.shape})")


def counted(c: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, n) for k, n in c.items() if n))


def arguments_text(value: Any) -> str:
    """A tool call's input as one canonical JSON text, whichever way the format stored it:
    Claude Code and Gemini keep an object, the chat format and Codex a JSON string (parsed
    when it parses, so the same call reads the same in every format)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def render_message(m: Message, turn: int | None = None) -> str:
    """One message as a turn of the fixture, in the synthetic sessions' shape
    (transcripts/turns.py `turn_line`), tool calls with their arguments on lines below."""
    lines = [turn_line(turn, m.role, m.text).rstrip()]
    if m.thinking:
        lines.append(f"  (thinking) {m.thinking}")
    lines += [tool_call_line(c.name, c.arguments) for c in m.tool_calls]
    return "\n".join(lines)


# -- the edge: what may be read at all -------------------------------------------------------

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def check_file(path: str | Path, where: str, max_mb: float = DEFAULT_MAX_MB) -> Path:
    """A transcript or facts path that can be read as a file, refused by name otherwise:
    missing, a symlink loop, a directory, a device (/dev/zero reads forever), a FIFO
    (reading it waits for a writer) or over `max_mb` megabytes (a path outside the
    checkout is allowed: a session lives under ~/.claude, ~/.codex or ~/.gemini)."""
    p = Path(path).expanduser()
    try:
        st = os.stat(p)  # follows symlinks; never opens the file, so a FIFO cannot block
    except OSError as e:
        if getattr(e, "errno", None) == 40 or "loop" in str(e).lower():
            raise SessionError(f"{where}: {path} is a symlink loop; name the file itself"
                               ) from e
        raise SessionError(f"{where}: {path} does not exist (a path relative to the "
                           "directory snakemake runs in, or absolute)") from e
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
        tail = ("name the session's file" if kind == "a directory" else
                "a session is a regular file; copy it to one")
        raise SessionError(f"{where}: {path} is {kind}; {tail}")
    if st.st_size > max_mb * 1_000_000:
        raise SessionError(f"{where}: {path} is {st.st_size / 1_000_000:.1f} MB, over the "
                           f"limit of {max_mb:g} MB (max_mb); cut the session to the part "
                           "to fold, or raise max_mb")
    return p


def read_text(path: Path, max_mb: float = DEFAULT_MAX_MB) -> str:
    """The file's text, at most max_mb (a file growing while read is cut there, refused);
    a `.zst` file decompressed as it is read, max_mb bounding the decompressed text."""
    limit = int(max_mb * 1_000_000)
    with path.open("rb") as f:
        data = _unzstd(path, f, limit, max_mb) if path.name.endswith(".zst") \
            else f.read(limit + 1)
    if len(data) > limit:
        raise SessionError(f"{path}: over the limit of {max_mb:g} MB (max_mb) while read; "
                           "a session file must not grow while the study reads it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SessionError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); a "
                           "transcript is a JSONL or JSON file") from e


# Compressed input fed 1 KB at a time: zstd writes at most 128 KB per block of a few
# bytes, so what one step can add past max_mb stays small (a zstd bomb is refused by size
# before it is held).
_ZSTD_STEP = 1024


def _unzstd(path: Path, f: Any, limit: int, max_mb: float) -> bytes:
    """A Codex rollout compressed in place (`rollout-*.jsonl.zst`), streamed: every frame
    decompressed, refused when the text passes max_mb or the stream ends inside a frame
    (a truncated file: its last line would be read cut)."""
    out = bytearray()
    d = zstandard.ZstdDecompressor().decompressobj()
    pending = b""
    try:
        while chunk := pending or f.read(_ZSTD_STEP):
            pending = b""
            out += d.decompress(chunk)
            if len(out) > limit:
                raise SessionError(f"{path}: over the limit of {max_mb:g} MB (max_mb) once "
                                   "decompressed; cut the session to the part to fold, or "
                                   "raise max_mb")
            if d.eof:  # one frame done: a next one may follow
                pending = d.unused_data
                d = zstandard.ZstdDecompressor().decompressobj()
                if not pending and not (pending := f.read(_ZSTD_STEP)):
                    return bytes(out)
    except zstandard.ZstdError as e:
        raise SessionError(f"{path}:{_lines(out) + 1}: not a zstd stream the study can "
                           f"read ({e}); a .zst transcript is a rollout Codex compressed"
                           ) from e
    raise SessionError(f"{path}:{_lines(out) + 1}: the zstd stream ends inside a frame "
                       f"(truncated after {len(out)} decompressed bytes); the file was cut "
                       "while written or copied: copy it again whole")


def _lines(data: bytearray) -> int:
    return data.count(b"\n")


def json_lines(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise SessionError(f"{path}:{i}: not a JSON object ({e.msg} at column {e.colno}); "
                               "every line of a transcript is one JSON object") from e
        if not isinstance(rec, dict):
            raise SessionError(f"{path}:{i}: a JSON {_json_type(rec)}, not an object; "
                               "every line of a transcript is one JSON object")
        out.append((i, rec))
    if not out:
        raise SessionError(f"{path}: the transcript is empty (no JSON line); point "
                           "`transcript` at a session file")
    return out


# -- record shapes, checked where they are read ---------------------------------------------


def _json_type(v: Any) -> str:
    names = {str: "string", bool: "boolean", int: "number", float: "number", list: "list",
             dict: "object", type(None): "null"}
    return names.get(type(v), type(v).__name__)


def expect(value: Any, kinds: tuple[type, ...], at: str, key: str, what: str) -> Any:
    """value when it is one of kinds, else the one-line refusal naming the key and line."""
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    want = " or ".join(_json_type(k()) if k is not type(None) else "null" for k in kinds)
    raise SessionError(f"{at}: {key} is a JSON {_json_type(value)}, not {want} ({what})")


def parts_text(content: Any, at: str, key: str = "content") -> str:
    """A message content: a string, null, or a list of parts (text kept, others named);
    the chat format's `text` parts, Codex's `input_text` / `output_text`, Gemini's
    `{text}` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    expect(content, (str, list, type(None)), at, key, "a string, a list of parts or null")
    out = []
    for i, p in enumerate(content):
        if isinstance(p, str):
            out.append(p)
            continue
        expect(p, (dict, str), at, f"{key}[{i}]", "a part is an object or a string")
        if p.get("type") in ("text", "input_text", "output_text") or (
                "type" not in p and "text" in p):
            out.append(str(expect(p.get("text", ""), (str,), at, f"{key}[{i}].text",
                                  "a text part's text is a string")))
        else:
            out.append(f"[{p.get('type') or next(iter(p), 'part')}]")
    return "\n".join(out)
