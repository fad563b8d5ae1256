"""Sessions the CLIs keep in a store: OpenCode's opencode.db (1.x and 2.x tables) and the
JSON storage before it; goose's sessions.db and the JSONL before it. Each is read with no
`format:`, its facts planted from a user message and a tool result, its own compaction
read as the baseline, a malformed store refused in one line naming the file and what is
wrong, and every database read without locking against the CLI writing it (another
connection holding an open write transaction).

No binary database is committed: each test builds its database from the SQL text under
tests/data/sessions/ (written by write_ferry_stores.py, the tool's own schema and rows
as the tool writes them)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from foldstudy.study.sessions import SessionSpec, turns
from foldstudy.transcripts import FORMATS, SessionError, read_transcript

from ..conftest import ROOT
from .test_sessions_fleet import BUCKET, FACTS, LABELS, PORT, TAG, first_with
from .test_sessions_readers import refusal

DATA = ROOT / "tests/data/sessions"
OPENCODE = DATA / "opencode"
FERRY = "ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s"
FERRY_V2 = "ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As"
CHILD = "ses_1d2e4b1c2d3eTs9Uv1Wx3Yz5Ab7c"
OTHER = "ses_1d2e0a9b8c7dHn3Jk5Lm8Np2Qr6t"
PROJECT = "4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e"
STORAGE = OPENCODE / "storage/session" / PROJECT / f"{FERRY}.json"
PRUNED = "[Old tool result content cleared]"
GOOSE = DATA / "goose"
GOOSE_JSONL = next((GOOSE / "sessions").glob("*.jsonl"))
GOOSE_ID, GOOSE_OTHER, GOOSE_SUB = "20251205_2", "20251205_1", "20251205_3"


def build(tmp_path: Path, sql: Path, name: str) -> Path:
    """The database the SQL text describes, as the CLI would have left it."""
    db = tmp_path / name
    with sqlite3.connect(db) as conn:
        conn.executescript(sql.read_text(encoding="utf-8"))
    conn.close()
    return db


def read(path: Path, session: str | None = None, **kw):
    return read_transcript(path, session=session, **kw)


def fixture(path: Path, session: str | None = None):
    from foldstudy.study.sessions import build_session_fixture
    spec = SessionSpec("s", str(path), str(FACTS), folds=3, session=session)
    return build_session_fixture(spec, 1, "t")


def planted(path: Path, session: str | None = None) -> None:
    """The port's first occurrence is a user message, the bucket's a tool result; each
    fact planted in the chunk that holds it; the CLI's summary holds the two said before
    it, never the tag."""
    from foldstudy.study.boundary import has_whole_token
    tr = read(path, session)
    assert first_with(tr, PORT).role == "user" and first_with(tr, BUCKET).role == "tool"
    fx = fixture(path, session)
    assert [f.label for f in fx.facts] == list(LABELS.values())
    for f in fx.facts:
        assert has_whole_token(f.value, fx.chunks[f.chunk])
    assert fx.meta["own_compaction"]["held"] == [LABELS[PORT], LABELS[BUCKET]]


def rows(db: Path, sql: str, *args) -> list:
    with sqlite3.connect(db) as conn:
        out = conn.execute(sql, args).fetchall()
    conn.close()
    return out


def execute(db: Path, sql: str, *args) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(sql, args)
    conn.close()


def writer_holding(db: Path, insert: str, *args) -> sqlite3.Connection:
    """Another connection, as the CLI writing: an open write transaction (BEGIN
    IMMEDIATE) with an insert it has not committed."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=0)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(insert, args)
    return conn


# -- OpenCode 1.x tables -----------------------------------------------------------------------


def test_an_opencode_1x_database_is_detected_and_its_facts_planted(tmp_path):
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    tr = read(db, FERRY)
    assert tr.format == "opencode" and "opencode" in FORMATS
    assert tr.vocabulary == f"1.x tables (message, part), session {FERRY}"
    planted(db, FERRY)


def test_opencode_the_summary_message_is_the_baseline_never_a_turn(tmp_path):
    tr = read(build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db"), FERRY)
    text = "\n".join(turns(tr))
    assert tr.compactions == 1 and tr.compaction_summaries[0].startswith("## Summary")
    assert "## Summary" not in text and TAG not in tr.compaction_summaries[0]
    # the history before the compaction stays on the thread, in order
    assert text.index(BUCKET) < text.index("Continue if you have next steps") \
        < text.index(TAG)
    left = dict(tr.left_out)
    assert left["compaction"] == 1 and left["compaction_summary"] == 1
    assert dict(tr.read_in) == {"synthetic": 1}


def test_opencode_parts_read_as_the_model_saw_them(tmp_path):
    """Steps in order (text and call, its result, the next step's text); a pruned output
    is OpenCode's placeholder; reasoning only with include_thinking; step, patch and
    agent parts counted; a subagent's child session never read."""
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    tr = read(db, FERRY)
    roles = [m.role for m in tr.messages]
    assert roles[:7] == ["user", "assistant", "tool", "assistant", "tool", "assistant",
                         "user"]
    assert tr.messages[2].text == PRUNED and "segment-0001" not in "\n".join(turns(tr))
    assert [c.name for c in tr.messages[1].tool_calls] == ["bash"]
    assert json.loads(tr.messages[3].tool_calls[0].arguments) == {
        "filePath": "/home/dev/ferry/relay.toml"}
    left = dict(tr.left_out)
    assert left["pruned_output"] == 1 and left["reasoning"] == 1 and left["patch"] == 1
    assert left["step-finish"] == 6 and left["agent"] == 1
    assert left["subagent_session"] == 1
    assert tr.messages[1].thinking == ""
    thought = read(db, FERRY, include_thinking=True).messages[1].thinking
    assert thought == "The relay config should name the bucket."


def test_opencode_each_row_read_is_a_line_of_the_scan(tmp_path):
    """A database has no lines: each row read is one, and a message names its row."""
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    tr = read(db, FERRY)
    assert len(tr.lines) == len(rows(db, "SELECT id FROM message WHERE session_id = ?",
                                     FERRY)) + len(rows(
        db, "SELECT id FROM part WHERE session_id = ?", FERRY))
    bucket = first_with(tr, BUCKET)
    assert tr.lines[bucket.line - 1].startswith("part prt_") and BUCKET in \
        tr.lines[bucket.line - 1]
    assert all("\n" not in line for line in tr.lines)


def test_opencode_the_session_is_named_when_the_database_holds_several(tmp_path):
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    msg = refusal(db)
    assert msg == (f"{db}: holds 2 OpenCode sessions; set `session:` beside `transcript:` "
                   f"to the one to fold (the most recent first: {FERRY}, {OTHER})")
    with pytest.raises(SessionError) as e:
        read(db, "ses_nope")
    assert str(e.value) == (f"{db}: `session: ses_nope` names no OpenCode session with a "
                            f"message in it (present, the most recent first: {FERRY}, "
                            f"{OTHER})")
    assert read(db, OTHER).messages[0].text == "Explain the spool format."


def test_opencode_a_database_holding_one_session_needs_no_session_key(tmp_path):
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    execute(db, "DELETE FROM message WHERE session_id = ?", OTHER)
    assert turns(read(db)) == turns(read(db, FERRY))


def test_a_session_key_on_a_file_of_one_session_is_refused(tmp_path):
    """A session file away from its storage folder holds one session, as a JSONL does."""
    alone = tmp_path / STORAGE.name
    shutil.copy(STORAGE, alone)
    msg = refusal_with(alone, session=FERRY)
    assert msg.startswith(f"{alone}: `session: {FERRY}` names a session inside a "
                          "database") and msg.endswith("leave `session:` out")
    msg = refusal_with(GOOSE_JSONL, session=GOOSE_ID)
    assert msg.startswith(f"{GOOSE_JSONL}: `session: {GOOSE_ID}` names a session inside")


def refusal_with(path: Path, **kw) -> str:
    with pytest.raises(SessionError) as e:
        read_transcript(path, **kw)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_opencode_is_read_while_the_cli_holds_a_write_transaction(tmp_path):
    """WAL, as OpenCode runs it: the CLI's uncommitted insert is not read, the committed
    rows are, and the reader waits for nothing."""
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    written = db.read_bytes()
    before = turns(read(db, FERRY))
    assert db.read_bytes() == written  # the reader never writes the database
    cli = writer_holding(db, "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                         "msg_1d2e3fffffffQm7Rt2VxK9pLwN", FERRY, 1764926000000,
                         1764926000000, json.dumps({"role": "user", "time": {}}))
    try:
        assert turns(read(db, FERRY)) == before
    finally:
        cli.rollback()
        cli.close()


def test_opencode_is_read_under_a_rollback_journal_while_the_cli_writes(tmp_path):
    sql = (OPENCODE / "opencode-1x.sql").read_text().replace("PRAGMA journal_mode = WAL;",
                                                              "")
    (tmp_path / "x.sql").write_text(sql)
    db = build(tmp_path, tmp_path / "x.sql", "opencode.db")
    assert rows(db, "PRAGMA journal_mode") == [("delete",)]
    before = turns(read(db, FERRY))
    cli = writer_holding(db, "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", "prt_zz",
                         "msg_1d2e3f000001Qm7Rt2VxK9pLwN", FERRY, 1, 1,
                         json.dumps({"type": "text", "text": "not committed"}))
    try:
        assert turns(read(db, FERRY)) == before
    finally:
        cli.rollback()
        cli.close()


@pytest.mark.parametrize(("sql", "says"), [
    ("UPDATE part SET data = '{\"type\": \"text\", \"text\": ' WHERE id = (SELECT MIN(id) "
     "FROM part WHERE session_id = ?)", "data is not JSON"),
    ("UPDATE message SET data = '[1, 2]' WHERE id = (SELECT MIN(id) FROM message WHERE "
     "session_id = ?)", "data is a JSON list, not object"),
    ("UPDATE part SET data = '{\"type\": \"tool\", \"tool\": \"read\", \"state\": \"done\"}'"
     " WHERE id = (SELECT MIN(id) FROM part WHERE session_id = ?)",
     "state is a JSON string, not object"),
])
def test_a_malformed_opencode_row_is_refused_naming_the_row(tmp_path, sql, says):
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    execute(db, sql, FERRY)
    msg = refusal_with(db, session=FERRY)
    assert msg.startswith(f"{db}: ") and says in msg and (" part prt_" in msg
                                                          or " message msg_" in msg), msg


def test_a_sqlite_database_of_no_known_store_is_refused_naming_the_stores(tmp_path):
    db = tmp_path / "other.db"
    execute(db, "CREATE TABLE notes (id integer, body text)")
    msg = refusal(db)
    assert msg.startswith(f"{db}: a SQLite database, but the format cannot be detected from "
                          "its tables (notes): it matches none of the session stores tried")
    assert "opencode: session, message, part" in msg


# -- OpenCode 2.x tables -----------------------------------------------------------------------


def test_an_opencode_2x_database_is_read_from_session_message(tmp_path):
    db = build(tmp_path, OPENCODE / "opencode-2x.sql", "opencode.db")
    tr = read(db, FERRY_V2)
    assert tr.format == "opencode"
    assert tr.vocabulary == f"2.x tables (session_message), session {FERRY_V2}"
    planted(db, FERRY_V2)
    assert tr.compactions == 1 and tr.compaction_summaries[0].startswith("## Summary")
    assert [m.text for m in tr.messages if m.role == "tool"][0] == PRUNED
    left = dict(tr.left_out)
    assert left["model-switched"] == 1 and left["pruned_output"] == 1
    assert dict(tr.read_in) == {"synthetic": 1}
    # the 1.x rows stay where they were, and read as they did
    assert turns(read(db, FERRY)) == turns(read(build(tmp_path, OPENCODE / "opencode-1x.sql",
                                                      "v1.db"), FERRY))


def test_a_malformed_opencode_2x_row_is_refused_naming_the_row(tmp_path):
    db = build(tmp_path, OPENCODE / "opencode-2x.sql", "opencode.db")
    execute(db, "UPDATE session_message SET type = 'bogus' WHERE id = (SELECT MIN(id) FROM "
                "session_message)")
    msg = refusal_with(db, session=FERRY_V2)
    assert msg.startswith(f"{db}: session_message msg_") and "type is 'bogus'" in msg


# -- OpenCode's JSON storage -------------------------------------------------------------------


def test_opencodes_json_storage_is_read_from_the_session_file(tmp_path):
    tr = read(STORAGE)
    assert tr.format == "opencode" and tr.vocabulary == f"JSON storage, session {FERRY}"
    planted(STORAGE)
    assert turns(tr) == turns(read(build(tmp_path, OPENCODE / "opencode-1x.sql", "o.db"),
                                   FERRY))
    # every message and part file read is named, so it is scanned and pinned
    messages = list((OPENCODE / "storage/message" / FERRY).glob("*.json"))
    parts = [p for m in messages for p in (OPENCODE / "storage/part" / m.stem).glob("*.json")]
    assert {f for f, _ in tr.inherited} == {str(p.resolve()) for p in messages + parts}


def test_a_malformed_part_file_of_opencodes_storage_is_refused_by_file(tmp_path):
    root = tmp_path / "storage"
    shutil.copytree(OPENCODE / "storage", root)
    part = sorted((root / "part").rglob("*.json"))[0]
    part.write_text('{"id": "prt_x", "type": "text", "text": ', encoding="utf-8")
    session = root / "session" / PROJECT / STORAGE.name
    msg = refusal(session)
    assert msg.startswith(f"{part}: not JSON"), msg


def test_a_storage_session_file_without_its_messages_is_refused(tmp_path):
    p = tmp_path / "session" / "proj" / STORAGE.name
    p.parent.mkdir(parents=True)
    shutil.copy(STORAGE, p)
    msg = refusal(p)
    assert msg.startswith(f"{p}: OpenCode session {FERRY}, but its messages are not in ")


def storage_copy(tmp_path: Path) -> Path:
    root = tmp_path / "storage"
    shutil.copytree(OPENCODE / "storage", root)
    return root


def test_opencodes_storage_folder_is_read_by_the_session_it_names(tmp_path):
    """Pointed at ~/.local/share/opencode/storage/ itself, `session:` naming the id: the
    session's file is read as when pointed at it, its facts planted, the subagent's child
    session counted as the database's is."""
    from foldstudy.transcripts import scan_text, session_file
    folder = OPENCODE / "storage"
    assert session_file(folder, FERRY) == STORAGE
    tr = read(folder, FERRY)
    assert tr.format == "opencode" and tr.vocabulary == f"JSON storage, session {FERRY}"
    assert turns(tr) == turns(read(STORAGE)) and tr.path == str(STORAGE)
    assert tr.compaction_summaries == read(STORAGE).compaction_summaries != ()
    planted(folder, FERRY)
    # the file hashed, pinned and scanned is the session's file
    fx = fixture(folder, FERRY)
    assert fx.meta["session"]["transcript_sha256"] == fixture(STORAGE).meta["session"][
        "transcript_sha256"]
    assert scan_text(folder, session=FERRY) == STORAGE.read_text(encoding="utf-8")
    db = read(build(tmp_path, OPENCODE / "opencode-1x.sql", "o.db"), FERRY)
    assert dict(tr.left_out)["subagent_session"] == dict(db.left_out)["subagent_session"] == 1
    assert read(folder, OTHER).messages[0].text == "Explain the spool format."


def test_opencodes_storage_folder_without_session_lists_the_sessions():
    folder = OPENCODE / "storage"
    # the subagent's child holds no message folder: not offered
    assert refusal_with(folder) == (f"{folder}: holds 2 OpenCode sessions; set `session:` "
                                    "beside `transcript:` to the one to fold (the most "
                                    f"recent first: {FERRY}, {OTHER})")
    assert refusal_with(folder, session="ses_nope") == (
        f"{folder}: `session: ses_nope` names no OpenCode session with a message in it "
        f"(present, the most recent first: {FERRY}, {OTHER})")
    assert refusal_with(folder, session="../storage") == (
        f"{folder}: `session: ../storage` names no OpenCode session with a message in it "
        f"(present, the most recent first: {FERRY}, {OTHER})")


def test_opencodes_storage_folder_of_one_session_needs_no_session_key(tmp_path):
    root = storage_copy(tmp_path)
    shutil.rmtree(root / "message" / OTHER)
    assert turns(read(root)) == turns(read(STORAGE))


def test_a_session_key_on_a_storage_session_file_names_its_session(tmp_path):
    """The scenario's file, as the wiring declares it, with the config's `session:`."""
    assert turns(read(STORAGE, FERRY)) == turns(read(STORAGE))
    msg = refusal_with(STORAGE, session=OTHER)
    assert msg == (f"{STORAGE}: the file of OpenCode session {FERRY}, and `session: {OTHER}` "
                   f"names another; point `transcript` at the storage folder "
                   f"({OPENCODE / 'storage'}) to pick a session by `session:`, or leave "
                   "`session:` out")


def test_a_broken_piece_of_opencodes_storage_folder_is_refused_naming_its_file(tmp_path):
    root = storage_copy(tmp_path)
    child = root / "session" / PROJECT / f"{CHILD}.json"
    msg = refusal_with(root, session=CHILD)
    assert msg.startswith(f"{child}: OpenCode session {CHILD}, but its messages are not in "
                          f"{(root / 'message' / CHILD).resolve()}"), msg
    first = sorted((root / "message" / FERRY).glob("*.json"))[0]
    first.write_text("[1, 2]\n", encoding="utf-8")
    assert refusal_with(root, session=FERRY) == (
        f"{first}: the file is a JSON list, not object (a message's info, a JSON object)")
    first.unlink()
    part = sorted((root / "part").glob("*/*.json"))[1]
    part.write_text(json.dumps({"id": part.stem, "type": "tool", "tool": "bash",
                                "state": "done"}), encoding="utf-8")
    assert refusal_with(root, session=FERRY) == (
        f"{part}: state is a JSON string, not object ({{status, input, output}} of the call)")
    shutil.rmtree(root / "message")
    (root / "message").mkdir()
    assert refusal_with(root, session=FERRY).startswith(
        f"{root / 'session' / PROJECT / STORAGE.name}: OpenCode session {FERRY}, but its "
        "messages are not in ")
    assert refusal_with(root) == (
        f"{root}: OpenCode's JSON storage, but no session in session/<project id>/ has a "
        "message folder in message/; point `transcript` at the storage folder the CLI wrote "
        "the session to")


def test_a_folder_that_is_not_opencodes_storage_is_refused_as_a_directory(tmp_path):
    assert refusal_with(tmp_path, session=FERRY) == (
        f"{tmp_path}: {tmp_path} is a directory; name the session's file")


def test_a_storage_folder_is_a_scenario_wired_by_its_sessions_file(tmp_path, config_schema,
                                                                     resources):
    """The config names the folder and the session; the config check, the fixture rule's
    input and the lock's pin all take the session's file."""
    from foldstudy.io import sha256_file
    from foldstudy.release.redact import transcript_file
    from foldstudy.study.session_checks import session_content
    from foldstudy.study.spec import load_arm_table
    from foldstudy.wiring import load_wiring

    from ..study.test_sessions_config import config, load
    folder = str(OPENCODE / "storage")
    cfg = config({"transcript": folder, "facts": str(FACTS), "session": FERRY})
    fx = load(cfg, config_schema, resources).sessions["atlas"]
    assert session_content(fx)["transcript_sha256"] == sha256_file(STORAGE)
    w = load_wiring(cfg, {}, [], ROOT, load_arm_table(resources))
    assert w.sessions.fixture_session_inputs("mine")["transcript"] == str(STORAGE)
    assert w.sessions.session_transcript("atlas") == str(STORAGE)
    assert transcript_file(cfg["scenarios"]["atlas"]) == STORAGE
    # a folder no longer holding the session: the path as written, missing as a file is
    assert transcript_file({"transcript": str(tmp_path), "session": FERRY}) == tmp_path


def test_the_cache_keys_a_database_by_its_session_and_its_write_ahead_log(tmp_path):
    """Two sessions of one database are two entries; a row the CLI committed into the WAL
    (the database file itself unchanged until a checkpoint) is read, never served stale."""
    from foldstudy.study.session_cache import read_cached
    cache = tmp_path / "cache"
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    first = read_cached(db, where=cache, session=FERRY)
    assert read_cached(db, where=cache, session=OTHER).messages[0].text == \
        "Explain the spool format."
    cli = sqlite3.connect(db)  # the CLI's connection, open: no checkpoint on close below
    cli.execute("PRAGMA wal_autocheckpoint = 0")
    size = db.stat().st_size
    with cli:
        cli.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                    ("msg_1d2e3fffffffQm7Rt2VxK9pLwN", FERRY, 1764926000000, 1764926000000,
                     json.dumps({"role": "user", "time": {}})))
        cli.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    ("prt_1d2e3fffffff017Rt2VxK9pLwN", "msg_1d2e3fffffffQm7Rt2VxK9pLwN",
                     FERRY, 1764926000000, 1764926000000,
                     json.dumps({"type": "text", "text": "One more thing."})))
    try:
        assert db.stat().st_size == size and Path(f"{db}-wal").stat().st_size > 0
        again = read_cached(db, where=cache, session=FERRY)
        assert again.messages[-1].text == "One more thing." and \
            len(again.messages) == len(first.messages) + 1
    finally:
        cli.close()


# -- goose -------------------------------------------------------------------------------------


def test_a_goose_database_is_detected_and_its_facts_planted(tmp_path):
    db = build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db")
    tr = read(db, GOOSE_ID)
    assert tr.format == "goose" and "goose" in FORMATS
    assert tr.vocabulary == f"sessions.db schema v5, session {GOOSE_ID}"
    planted(db, GOOSE_ID)


def test_goose_the_agent_only_summary_is_the_baseline_and_what_came_before_stays(tmp_path):
    """goose hides what it compacted from the agent (agentVisible false) and gives the
    agent the summary alone: the summary is the baseline, never a turn; the continuation
    note and the UI's notice are counted; the history before stays on the thread."""
    tr = read(build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db"), GOOSE_ID)
    text = "\n".join(turns(tr))
    assert tr.compactions == 1 and tr.compaction_summaries[0].startswith("## Summary")
    assert "## Summary" not in text and "Your context was compacted" not in text
    assert text.index(BUCKET) < text.index(TAG)
    left = dict(tr.left_out)
    assert left["continuation"] == 1 and left["systemNotification"] == 1
    assert left["thinking"] == 1 and tr.orphan_outputs == ()
    # a tool response in the older list shape reads as the newer one does
    assert [m.role for m in tr.messages[-3:]] == ["assistant", "tool", "assistant"]


def test_goose_sessions_offered_leave_out_subagents_but_one_can_be_named(tmp_path):
    db = build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db")
    assert refusal(db) == (f"{db}: holds 2 goose sessions; set `session:` beside "
                           "`transcript:` to the one to fold (the most recent first: "
                           f"{GOOSE_ID}, {GOOSE_OTHER})")
    assert read(db, GOOSE_SUB).messages[0].text == "Find the archive bucket."


def test_goose_is_read_while_goose_holds_a_write_transaction(tmp_path):
    db = build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db")
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    before = turns(read(db, GOOSE_ID))
    cli = writer_holding(db, "INSERT INTO messages (session_id, role, content_json, "
                             "created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?)",
                         GOOSE_ID, "user", json.dumps([{"type": "text", "text": "later"}]),
                         1764925300, json.dumps({"userVisible": True, "agentVisible": True}))
    try:
        assert turns(read(db, GOOSE_ID)) == before
    finally:
        cli.rollback()
        cli.close()


def test_a_goose_jsonl_reads_as_the_database_does():
    tr = read(GOOSE_JSONL)
    assert tr.format == "goose" and tr.vocabulary == "JSONL (goose before 1.10)"
    planted(GOOSE_JSONL)
    assert tr.compaction_summaries[0].startswith("## Summary")


def test_the_same_goose_session_reads_the_same_from_the_database_and_the_jsonl(tmp_path):
    db = build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db")
    via_db, via_jsonl = read(db, GOOSE_ID), read(GOOSE_JSONL)
    assert turns(via_db) == turns(via_jsonl)
    assert via_db.compaction_summaries == via_jsonl.compaction_summaries


@pytest.mark.parametrize(("sql", "says"), [
    ("UPDATE messages SET content_json = '[{\"type\": \"text\"' WHERE id = 3",
     "content_json is not JSON"),
    ("UPDATE messages SET content_json = '{\"type\": \"text\"}' WHERE id = 3",
     "content_json is a JSON object, not list"),
    ("UPDATE messages SET content_json = '[{\"type\": \"toolResponse\", \"id\": \"x\", "
     "\"toolResult\": \"ok\"}]' WHERE id = 3", "content[0].toolResult is a JSON string"),
    ("UPDATE messages SET metadata_json = 'true' WHERE id = 3",
     "metadata_json is a JSON boolean, not object"),
])
def test_a_malformed_goose_row_is_refused_naming_the_row(tmp_path, sql, says):
    db = build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db")
    execute(db, sql)
    msg = refusal_with(db, session=GOOSE_ID)
    assert msg.startswith(f"{db}: messages row 3: ") and says in msg, msg


def test_a_malformed_goose_jsonl_line_is_refused_by_file_and_line(tmp_path):
    from .test_sessions import records, write
    recs = records(GOOSE_JSONL)
    recs[3]["content"][0]["toolResult"] = "ok"
    p = write(tmp_path, GOOSE_JSONL.name, recs)
    msg = refusal(p)
    assert msg.startswith(f"{p}:4: content[0].toolResult is a JSON string"), msg


# -- Kiro CLI's SQLite -------------------------------------------------------------------------

KIRO = DATA / "kiro"
KIRO_ID, KIRO_OTHER = "0b7c4e2a-91d3-4f58-a6e0-3c2d8b5f1a47", "5e1f0a9c-2b7d-4c36-8e4a-9d0f1b2c3e5a"


def test_a_kiro_database_is_detected_and_its_facts_planted(tmp_path):
    db = build(tmp_path, KIRO / "data-sqlite3.sql", "data.sqlite3")
    tr = read(db, KIRO_ID)
    assert tr.format == "kiro"
    assert tr.vocabulary == (f"conversations_v2 (history entries), conversation {KIRO_ID} "
                             "in /home/dev/ferry")
    planted(db, KIRO_ID)
    # a Json result is the JSON the model received
    assert json.loads([m.text for m in tr.messages if m.role == "tool"][-1]) == {
        "exit_status": "0", "stdout": "", "stderr": ""}


def test_kiro_the_compact_summary_is_the_baseline_and_the_ui_lines_are_not_read(tmp_path):
    """/compact drains the history it summarized: the turns after it are the thread, the
    summary the baseline; the UI's own transcript (which still holds the drained turns)
    and the context files sent with each message are counted, never read."""
    tr = read(build(tmp_path, KIRO / "data-sqlite3.sql", "data.sqlite3"), KIRO_ID)
    text = "\n".join(turns(tr))
    assert tr.compactions == 1 and tr.compaction_summaries[0].startswith("## Summary")
    assert "Wire the ferry relay" not in text and "## Summary" not in text
    left = dict(tr.left_out)
    assert left["ui_transcript"] == 6 and left["additional_context"] == 4


def test_kiro_a_conversation_is_named_by_its_id_or_its_directory(tmp_path):
    db = build(tmp_path, KIRO / "data-sqlite3.sql", "data.sqlite3")
    assert refusal(db) == (f"{db}: holds 2 Kiro CLI conversations; set `session:` beside "
                           "`transcript:` to the one to fold (the most recent first: "
                           f"{KIRO_ID}, {KIRO_OTHER})")
    assert turns(read(db, "/home/dev/ferry")) == turns(read(db, KIRO_ID))
    assert read(db, "/home/dev/spool").messages[0].text == "Explain the spool format."


def test_kiros_older_conversations_table_reads_as_the_newer_one(tmp_path):
    """Before migration 008 (and 1.13): one conversation a directory, history pairs, the
    summary a string."""
    old = build(tmp_path, KIRO / "data-sqlite3-v007.sql", "old.sqlite3")
    new = build(tmp_path, KIRO / "data-sqlite3.sql", "data.sqlite3")
    tr = read(old)
    assert tr.vocabulary == (f"conversations (history pairs), conversation {KIRO_ID} in "
                             "/home/dev/ferry")
    assert turns(tr) == turns(read(new, KIRO_ID))
    assert tr.compaction_summaries == read(new, KIRO_ID).compaction_summaries
    planted(old)


def test_kiro_is_read_while_the_client_holds_a_write_transaction(tmp_path):
    """The client's rollback journal: its open write transaction takes a reserved lock,
    which a reader's shared lock coexists with."""
    db = build(tmp_path, KIRO / "data-sqlite3.sql", "data.sqlite3")
    assert rows(db, "PRAGMA journal_mode") == [("delete",)]
    before = turns(read(db, KIRO_ID))
    cli = writer_holding(db, "INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
                         "/home/dev/new", "c0ffee00-0000-4000-8000-000000000000", "{}",
                         1, 99999999999999)
    try:
        assert turns(read(db, KIRO_ID)) == before
    finally:
        cli.rollback()
        cli.close()


@pytest.mark.parametrize(("edit", "says"), [
    (lambda doc: doc["history"][0]["user"].update(content={"Prompt": "hi"}),
     "history[0]: user.content.Prompt is a JSON string, not object"),
    (lambda doc: doc["history"][1]["assistant"].update(Response=None, Other={}),
     "history[1]: assistant is {Response, Other}, not one of Response, ToolUse"),
    (lambda doc: doc.update(history={"0": {}}), "history is a JSON object, not list"),
])
def test_a_malformed_kiro_conversation_is_refused_naming_the_row(tmp_path, edit, says):
    db = build(tmp_path, KIRO / "data-sqlite3.sql", "data.sqlite3")
    (value,) = rows(db, "SELECT value FROM conversations_v2 WHERE conversation_id = ?",
                    KIRO_ID)[0]
    doc = json.loads(value)
    edit(doc)
    execute(db, "UPDATE conversations_v2 SET value = ? WHERE conversation_id = ?",
            json.dumps(doc), KIRO_ID)
    msg = refusal_with(db, session=KIRO_ID)
    assert msg.startswith(f"{db}: conversations_v2 row 2") and says in msg, msg


# -- a database session through the config --------------------------------------------------


def _db_with_key(tmp_path: Path) -> tuple[Path, str, int]:
    """opencode.db with a GitHub token in the tool output holding the bucket; the line
    (row read) it is on."""
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    key = "ghp_" + "A1b2C3d4E5" * 4
    (pid, data), = rows(db, "SELECT id, data FROM part WHERE data LIKE ? AND session_id = ?",
                        '%"tool":"read"%', FERRY)
    execute(db, "UPDATE part SET data = ? WHERE id = ?",
            data.replace("region = ", f"token = {key}\\nregion = "), pid)
    tr = read(db, FERRY)
    n = next(i for i, line in enumerate(tr.lines, start=1) if key in line)
    assert tr.lines[n - 1].startswith(f"part {pid} ")
    return db, key, n


def test_a_database_session_is_named_in_the_config_and_its_secret_warned_by_row(
        tmp_path, config_schema, resources):
    from ..study.test_sessions_config import config, load
    db, key, n = _db_with_key(tmp_path)
    study = load(config({"transcript": str(db), "facts": str(FACTS), "session": FERRY}),
                 config_schema, resources)
    assert study.sessions["atlas"].meta["session"]["format"] == "opencode"
    said = [w for w in study.warnings if "credential" in w]
    assert len(said) == 1 and said[0].startswith(
        f"config.scenarios.atlas.transcript: {db}:{n}: a credential-shaped string (GitHub "
        "token; not shown)") and key not in said[0]


def test_a_database_session_without_its_session_key_is_refused_by_the_config(
        tmp_path, config_schema, resources):
    from ..study.test_sessions_config import config, problems
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    said = problems(config({"transcript": str(db), "facts": str(FACTS)}), config_schema,
                    resources)
    assert (f"{db}: holds 2 OpenCode sessions; set `session:` beside `transcript:` to the "
            f"one to fold (the most recent first: {FERRY}, {OTHER})") in said


def test_a_format_not_kept_in_a_database_is_refused_on_one(tmp_path):
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    msg = refusal_with(db, fmt="codex", session=FERRY)
    assert msg == (f"{db}: a SQLite database, and format 'codex' is not kept in one (the "
                   "formats kept in a database: kiro, opencode, goose); set `format:` to one "
                   "of them, or leave it out")
    assert read(db, FERRY, fmt="opencode").format == "opencode"


def test_a_database_fixture_is_pinned_by_the_rows_it_read(tmp_path, config_schema, resources):
    """A row OpenCode committed to its write-ahead log leaves the database file as it was:
    the fixture's content (the fixture rule's param) says the rows read, so it changes."""
    from foldstudy.study.session_checks import session_content

    from ..study.test_sessions_config import config, load
    db = build(tmp_path, OPENCODE / "opencode-1x.sql", "opencode.db")
    cfg = config({"transcript": str(db), "facts": str(FACTS), "session": FERRY})
    before = session_content(load(cfg, config_schema, resources).sessions["atlas"])
    cli = sqlite3.connect(db)
    cli.execute("PRAGMA wal_autocheckpoint = 0")
    with cli:
        cli.execute("UPDATE part SET data = json_set(data, '$.text', 'Listing it first.') "
                    "WHERE data LIKE '%Listing the spool first.%'")
    try:
        after = session_content(load(cfg, config_schema, resources).sessions["atlas"])
        assert after["transcript_sha256"] == before["transcript_sha256"]
        assert after["rows_sha256"] != before["rows_sha256"]
    finally:
        cli.close()
    assert "rows_sha256" not in fixture(STORAGE).meta["session"]


def test_a_damaged_database_is_refused_in_one_line(tmp_path):
    """A file with SQLite's header whose pages are gone (a copy cut short)."""
    db = build(tmp_path, GOOSE / "sessions-db.sql", "sessions.db")
    cut = tmp_path / "cut.db"
    cut.write_bytes(db.read_bytes()[:200])
    msg = refusal(cut)
    assert msg.startswith(f"{cut}: not a SQLite database the study can read ("), msg


def test_the_ids_listed_are_the_most_recent_twelve_and_a_count_of_the_rest(tmp_path):
    from foldstudy.transcripts.database import pick_session
    ids = [f"ses_{n:02d}" for n in range(15)]
    with pytest.raises(SessionError) as e:
        pick_session(tmp_path / "opencode.db", ids, None, "OpenCode session")
    assert str(e.value).endswith(f"(the most recent first: {', '.join(ids[:12])} and 3 more)")
    assert pick_session(tmp_path / "x.db", ids, "ses_14", "OpenCode session") == "ses_14"


def test_copilots_session_index_is_refused_pointing_at_the_sessions_own_file(tmp_path):
    """Copilot CLI's ~/.copilot/session-store.db holds each turn's user message and reply
    (tables as its public readers and its own issue threads name them), not the tool calls
    and output the model read: read as a session it would grade a session the model never
    saw, so it is refused in one line that names the file to read instead."""
    db = tmp_path / "session-store.db"
    with sqlite3.connect(db) as con:
        con.executescript(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, repository TEXT, "
            "branch TEXT, summary TEXT, created_at TEXT, updated_at TEXT);"
            "CREATE TABLE turns (session_id TEXT, turn_index INTEGER, user_message TEXT, "
            "assistant_response TEXT, timestamp TEXT);"
            "CREATE TABLE checkpoints (session_id TEXT, checkpoint_number INTEGER, "
            "title TEXT, overview TEXT);"
            "CREATE TABLE session_files (session_id TEXT, file_path TEXT, tool_name TEXT);")
        con.execute("INSERT INTO sessions VALUES ('3a9e', '/srv/ferry', NULL, NULL, "
                    "'ferry outage', '2026-11-02T09:00:00Z', '2026-11-02T09:40:00Z')")
        con.execute("INSERT INTO turns VALUES ('3a9e', 0, 'the ferry port is 52677', "
                    "'Noted.', '2026-11-02T09:00:05Z')")
    with pytest.raises(SessionError) as e:
        read_transcript(db)
    said = str(e.value)
    assert "\n" not in said and said.startswith(f"{db}: GitHub Copilot CLI's session-store.db")
    assert "events.jsonl" in said and "tool" in said
