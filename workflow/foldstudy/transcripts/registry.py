"""The formats, registered once, and the one reader that detects and reads them.

A file is checked at the edge first (a regular file, under `max_mb`; a `.zst` decompressed
as it is read). A SQLite database (OpenCode's opencode.db) is read by the one format whose
tables it holds, read-only (database.py), the session `session` names. A format written
as one JSON document (Gemini CLI's chat, an ATIF trajectory) is tried on the whole text;
otherwise every line is a JSON object and the one format whose records they all look like
reads them. A file matching none, or several, is refused naming the shapes tried. A new
format is one module with one `Source` subclass and one entry in SOURCES.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

from .antigravity import Antigravity
from .atif import Atif
from .base import (
    DEFAULT_MAX_MB,
    ReadOptions,
    Record,
    SessionError,
    Source,
    Transcript,
    check_file,
    json_lines,
    read_text,
)
from .claude_code import ClaudeCode
from .codex import Codex
from .copilot import Copilot, index_store_refusal
from .database import is_sqlite, open_database
from .gemini import Gemini
from .goose import Goose
from .kiro import Kiro
from .messages import Messages
from .opencode import OpenCode
from .qwen import Qwen

# Detection tries the records against each in this order; the first that claims a record
# names its kind (a Codex line is tried before a Claude Code one: both can carry ids; a
# Claude Code progress record holds `data` as a Copilot event does, and its uuid says
# which it is; a Qwen Code record has a uuid and parentUuid as a Claude Code one does, and
# is tried first: its Gemini-style `message.parts`, `systemPayload` or `tool_result`
# type say which it is, fields a Claude Code record never has). A document format's
# `document` is tried in this order too (a Qwen Code JSON chat before Gemini CLI's, an
# OpenCode storage session file, `ses_` id and projectID, before either; a goose JSONL
# message has `role` as a chat message does, and its integer `created` says which it is, a
# field a chat message never has). A SQLite file is
# read by the one format whose `database` claims its tables.
SOURCES: tuple[Source, ...] = (Codex(), Qwen(), ClaudeCode(), Copilot(), Antigravity(),
                               Atif(), Kiro(), OpenCode(), Goose(), Gemini(), Messages())
BY_FORMAT = {s.format: s for s in SOURCES}
FORMATS = tuple(sorted(BY_FORMAT))


def _kind(r: dict) -> str | None:
    return next((s.format for s in SOURCES if s.looks(r)), None)


def detect_format(records: list[Record], path: Path) -> str:
    """The one JSONL shape the records have; refused by name when none or several."""
    seen = Counter(k for _, r in records if (k := _kind(r)))
    if len(seen) == 1:
        return next(iter(seen))
    if not seen:
        raise _no_shape(path)
    mixed = ", ".join(f"{n} lines like {k}" for k, n in seen.most_common())
    raise SessionError(f"{path}: the format cannot be detected ({mixed}); set `format:` "
                       f"to one of {', '.join(FORMATS)}")


def _no_shape(path: Path, what: str = "") -> SessionError:
    """The refusal of a file matching none of the shapes, naming them."""
    shapes = "; ".join(f"{s.format}: {s.shape}" for s in sorted(SOURCES,
                                                                 key=lambda s: s.format))
    return SessionError(
        f"{path}: the format cannot be detected{what}: it matches none of the shapes tried "
        f"({shapes}); point `transcript` at a session file of one of them")


def _one_document(path: Path, text: str) -> None:
    """Refuse a file written as one JSON document over several lines that no format reads
    as a document (read line by line, it would fail at its first line as "not a JSON
    object", naming no shape): the shapes tried are named, as for any file matching none."""
    body = text.strip()
    if not body.startswith(("{", "[")) or "\n" not in body:
        return
    lines = body.split("\n")
    # the first or last line a record of its own: JSON lines (a bad line of them is
    # named by its number when read)
    for line in (lines[0], lines[-1]):
        try:
            json.loads(line)
            return
        except json.JSONDecodeError:
            pass
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as e:
        raise _no_shape(path, f" (neither JSON lines nor one JSON document: {e.msg} at "
                              f"line {e.lineno}, column {e.colno})") from e
    kind = "object" if isinstance(doc, dict) else "list" if isinstance(doc, list) else "value"
    raise _no_shape(path, f" (one JSON {kind} over {len(lines)} lines, neither a Gemini CLI "
                          "chat (messages[]) nor an ATIF trajectory (schema_version "
                          "ATIF-v1.x, steps[]))")


def _read_database(path: Path, fmt: str | None, opts: ReadOptions) -> Transcript:
    """A session of a SQLite database, read by the one format whose tables it holds."""
    with open_database(path) as db:
        tried = [BY_FORMAT[fmt]] if fmt else list(SOURCES)
        claims = [s for s in tried if s.database(db.tables)]
        if not claims and (why := index_store_refusal(
                path, db.tables, db.columns("turns") if "turns" in db.tables else set())):
            raise SessionError(why)
        if len(claims) != 1:
            shapes = "; ".join(f"{s.format}: {s.tables}" for s in tried if s.tables)
            said = ", ".join(sorted(db.tables)) or "none"
            raise SessionError(f"{path}: a SQLite database, but the format cannot be detected "
                               f"from its tables ({said}): it matches "
                               f"{'none' if not claims else 'several'} of the session "
                               f"stores tried ({shapes})")
        tr = claims[0].read_database(path, db, opts)
        return dataclasses.replace(tr, lines=tuple(db.lines))


def _folder_file(path: str | Path, session: str | None) -> Path | None:
    """The file of the session `session` names, where `path` is a folder a format keeps
    its sessions in (OpenCode's JSON storage) or a session file inside one; else None."""
    p = Path(path).expanduser()
    return next((f for s in SOURCES if (f := s.session_file(p, session)) is not None), None)


def session_file(path: str | Path, session: str | None = None) -> Path:
    """The file a scenario's `transcript` (and `session`) name: the path itself, or the
    session's file in a folder of session files (OpenCode's JSON storage, the session by
    `session:`): the file that is hashed, pinned, scanned and declared as the fixture's
    input."""
    return _folder_file(path, session) or Path(path).expanduser()


def read_transcript(path: str | Path, fmt: str | None = None, include_thinking: bool = False,
                    max_mb: float = DEFAULT_MAX_MB, session: str | None = None) -> Transcript:
    """Read a transcript in its format (detected when `fmt` is None); `session` names the
    session of a database holding several, or of a folder of session files."""
    if (named := _folder_file(path, session)) is not None:
        path, session = named, None  # the session picked its file
    p = check_file(path, str(path), max_mb)
    if fmt is not None and fmt not in BY_FORMAT:
        raise SessionError(f"{path}: format {fmt!r} is not known (known: "
                           f"{', '.join(FORMATS)})")
    if fmt is not None and is_sqlite(p) and not BY_FORMAT[fmt].tables:
        stores = ", ".join(s.format for s in SOURCES if s.tables)
        raise SessionError(f"{path}: a SQLite database, and format {fmt!r} is not kept in "
                           f"one (the formats kept in a database: {stores}); set `format:` "
                           "to one of them, or leave it out")
    opts = ReadOptions(include_thinking, max_mb, session)
    if is_sqlite(p):
        return dataclasses.replace(_read_database(p, fmt, opts), path=str(path))
    if session is not None:
        raise SessionError(f"{path}: `session: {session}` names a session inside a database "
                           "(OpenCode's opencode.db, goose's sessions.db, Kiro CLI's "
                           "data.sqlite3), and this file holds one session: leave `session:` "
                           "out")
    text = read_text(p, max_mb)
    tried = [BY_FORMAT[fmt]] if fmt else list(SOURCES)
    doc = next(((s, d) for s in tried if (d := s.document(text)) is not None), None)
    if doc is not None:
        tr = doc[0].read_document(p, doc[1], opts)
    else:
        if fmt is None:
            _one_document(p, text)
        records = json_lines(p, text)
        tr = BY_FORMAT[fmt or detect_format(records, p)].read(p, records, opts)
    return dataclasses.replace(tr, path=str(path), lines=tuple(text.splitlines()))


def scan_text(path: str | Path, max_mb: float = DEFAULT_MAX_MB, session: str | None = None
              ) -> str:
    """The text a transcript's secret scan reads (Transcript.lines joined): the file's text,
    or, for a database, one line a row its session's reader reads (database.py), so a
    finding is found again at the line the scan named it by."""
    if (named := _folder_file(path, session)) is not None:
        path, session = named, None
    p = check_file(path, str(path), max_mb)
    if is_sqlite(p):
        return "\n".join(read_transcript(p, max_mb=max_mb, session=session).lines)
    return read_text(p, max_mb)
