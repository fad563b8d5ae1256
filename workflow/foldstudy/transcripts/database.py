"""The edge of a session kept in a SQLite database (OpenCode's `opencode.db`, goose's
`sessions.db`, Kiro CLI's `data.sqlite3`): opened read-only, never locking against the CLI
that may be writing it, every JSON cell checked where it is read, one session picked by
the config's `session:`.

Read-only: the database is opened by a `file:...?mode=ro` URI with `query_only` set, so
the study never writes it, never creates a journal, and takes no lock a writer waits on:
under a rollback journal a reader's shared lock coexists with the CLI's reserved lock (an
open write transaction), and under WAL readers never block the writer. What is read is
what the CLI had committed when the read began. The database file is never written; a
WAL database's `-wal` and `-shm` files, which every reader of one needs, are made beside
it by SQLite when the CLI is not running (as the CLI makes them itself), empty.

The scan for secrets reads lines; a database has none, so a reader gives each row it reads
one line (`<table> <row id> <the row's JSON>`, `Transcript.lines`) and a message names the
row it came from by that line's number: "line 12" of a database is the twelfth row read.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .base import SessionError, expect

SQLITE_MAGIC = b"SQLite format 3\x00"
# ids listed in a refusal naming the sessions present: the most recent first
LISTED = 12


def is_sqlite(path: Path) -> bool:
    """Whether the file is a SQLite database (its 16-byte header)."""
    with path.open("rb") as f:
        return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


@dataclass
class Database:
    """An open read-only database, and the lines the scan reads of the rows read."""

    path: Path
    conn: sqlite3.Connection
    tables: frozenset[str]
    lines: list[str] = field(default_factory=list)

    def rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise SessionError(f"{self.path}: the database cannot be read as the session "
                               f"store it looks like ({e}); point `transcript` at the "
                               "CLI's own database, unmodified") from e

    def columns(self, table: str) -> set[str]:
        return {r["name"] for r in self.rows(f"PRAGMA table_info({quote_ident(table)})")}

    def line(self, table: str, row_id: Any, text: Any) -> int:
        """Record a row read as a line of the scan; its line number."""
        one = str(text).replace("\r", " ").replace("\n", " ")
        self.lines.append(f"{table} {row_id} {one}")
        return len(self.lines)

    def cell(self, text: Any, at: str, column: str, kinds: tuple[type, ...] = (dict,),
             what: str = "a JSON object") -> Any:
        """A JSON text column parsed, refused in one line naming the row and column when
        it is not JSON or not of the kind the CLI writes there."""
        if not isinstance(text, str):
            raise SessionError(f"{at}: {column} is SQL {type(text).__name__}, not JSON "
                               f"text ({what})")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise SessionError(f"{at}: {column} is not JSON ({e.msg} at column {e.colno}); "
                               f"the CLI writes {what} there") from e
        return expect(value, kinds, at, column, what)


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def open_database(path: Path) -> Iterator[Database]:
    """The database opened read-only (the module's docstring says why it cannot lock)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=5.0)
    except sqlite3.Error as e:
        raise SessionError(f"{path}: cannot open the SQLite database read-only ({e})") from e
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA query_only = ON")
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.Error as e:
        conn.close()
        raise SessionError(f"{path}: not a SQLite database the study can read ({e}); a "
                           "session database is the CLI's own file, unmodified") from e
    try:
        yield Database(path, conn, frozenset(r["name"] for r in names))
    finally:
        conn.close()


def pick_session(path: Path, present: list[str], session: str | None, what: str) -> str:
    """The session to read: the one `session:` names, or the only one the database holds;
    refused in one line listing the ids present (the most recent first) otherwise."""
    if session is not None and session in present:
        return session
    if session is None and len(present) == 1:
        return present[0]
    listed = ", ".join(present[:LISTED]) + (f" and {len(present) - LISTED} more"
                                            if len(present) > LISTED else "")
    if not present:
        raise SessionError(f"{path}: holds no {what} with a message; point `transcript` at "
                           "the database the CLI wrote the session to")
    if session is None:
        raise SessionError(f"{path}: holds {len(present)} {what}s; set `session:` beside "
                           f"`transcript:` to the one to fold (the most recent first: "
                           f"{listed})")
    raise SessionError(f"{path}: `session: {session}` names no {what} with a message in it "
                       f"(present, the most recent first: {listed})")
