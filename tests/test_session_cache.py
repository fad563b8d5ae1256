"""A session read once (study/session_cache.py): a second read of the same file content
loads the cache, a changed file or a changed reader parses again, and a corrupt entry is
ignored and rewritten, never an error."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from foldstudy.study import session_cache
from foldstudy.study.session_cache import read_cached, secrets_cached
from foldstudy.study.transcripts import SessionError, read_transcript

DATA = Path(__file__).parent / "data" / "sessions"
SAMPLE = DATA / "harbor.messages.jsonl"


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The paths the reader parsed, in order (the cache calls read_transcript on a miss)."""
    seen: list[str] = []

    def counting(path, *args):
        seen.append(str(path))
        return read_transcript(path, *args)

    monkeypatch.setattr(session_cache, "read_transcript", counting)
    return seen


def session(tmp_path: Path, name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    shutil.copy(SAMPLE, p)
    return p


def test_the_second_read_of_a_file_loads_the_cache(tmp_path, parses):
    p, cache = session(tmp_path), tmp_path / "cache"
    first = read_cached(p, where=cache)
    second = read_cached(p, where=cache)
    assert parses == [str(p)]
    assert second == first == read_transcript(p)
    assert len(list(cache.glob("transcript-*.pickle"))) == 1


def test_a_changed_file_is_parsed_again(tmp_path, parses):
    p, cache = session(tmp_path), tmp_path / "cache"
    read_cached(p, where=cache)
    p.write_text(p.read_text(encoding="utf-8").replace("harbor", "marina"), encoding="utf-8")
    tr = read_cached(p, where=cache)
    assert parses == [str(p), str(p)]
    assert any("marina" in m.text for m in tr.messages)


def test_a_changed_reader_parses_again(tmp_path, parses, monkeypatch):
    p, cache = session(tmp_path), tmp_path / "cache"
    read_cached(p, where=cache)
    monkeypatch.setattr(session_cache, "reader_digest", lambda: "another reader")
    read_cached(p, where=cache)
    assert len(parses) == 2


@pytest.mark.parametrize("garbage", [b"", b"not a pickle", pickle.dumps({"a": 1})])
def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path, parses, garbage):
    p, cache = session(tmp_path), tmp_path / "cache"
    read_cached(p, where=cache)
    (entry,) = cache.glob("transcript-*.pickle")
    entry.write_bytes(garbage)
    assert read_cached(p, where=cache) == read_transcript(p)
    assert len(parses) == 2
    assert read_cached(p, where=cache) == read_transcript(p) and len(parses) == 2


def test_the_same_content_at_another_path_says_its_own_path(tmp_path, parses):
    cache = tmp_path / "cache"
    a, b = session(tmp_path, "a.jsonl"), session(tmp_path, "b.jsonl")
    read_cached(a, where=cache)
    assert read_cached(b, where=cache).path == str(b)
    assert parses == [str(a)]


def test_a_refusal_is_never_cached(tmp_path):
    p, cache = tmp_path / "bad.jsonl", tmp_path / "cache"
    p.write_text("{not json\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SessionError):
            read_cached(p, where=cache)
    assert not list(cache.glob("*.pickle"))


def test_a_scan_is_cached_by_content_and_without_a_directory_nothing_is(tmp_path,
                                                                          monkeypatch):
    p, cache = session(tmp_path), tmp_path / "cache"
    scans: list[int] = []

    def scan() -> list[tuple[int, str]]:
        scans.append(1)
        return [(3, "OpenAI-style key")]

    assert secrets_cached(p, scan, where=cache) == secrets_cached(p, scan, where=cache)
    assert len(scans) == 1
    monkeypatch.delenv(session_cache.CACHE_ENV, raising=False)
    secrets_cached(p, scan)
    read_cached(p)
    assert len(scans) == 2 and not (tmp_path / ".snakemake").exists()


def test_the_cache_keeps_the_most_recently_used_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(session_cache, "MAX_ENTRIES", 2)
    cache = tmp_path / "cache"
    paths = [session(tmp_path, f"{i}.jsonl") for i in range(3)]
    for i, p in enumerate(paths):  # three contents, three entries written
        p.write_text(p.read_text(encoding="utf-8").replace("harbor", f"harbor{i}"),
                     encoding="utf-8")
        read_cached(p, where=cache)
    assert len(list(cache.glob("transcript-*.pickle"))) == 2


def test_a_codex_fork_that_reads_its_parents_rollout_is_never_cached(tmp_path, parses):
    """A fork's thread is its parent's prefix and its own lines: its own content is not
    the whole key, so it is parsed at every read."""
    fork = next((DATA / "codex").rglob("rollout-*-0f6c8a31-*.jsonl"))
    tree = tmp_path / "codex"
    shutil.copytree(DATA / "codex", tree)
    copy = tree / fork.relative_to(DATA / "codex")
    cache = tmp_path / "cache"
    first = read_cached(copy, where=cache)
    assert dict(first.repaired).get("fork_prefix") == 1
    assert read_cached(copy, where=cache) == first
    assert len(parses) == 2 and not list(cache.glob("transcript-*.pickle"))
