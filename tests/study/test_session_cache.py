"""A session read once (study/session_cache.py): a second read of the same file content
loads the cache, a changed file or a changed reader parses again, and a corrupt entry is
ignored and rewritten, never an error. The cache is no way in: a planted pickle is never
loaded, and an entry edited or copied by whoever can write the working directory (the
text a fixture is cut from, a secret scan) is discarded, said in the log, and rebuilt."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from foldstudy.io import CACHE_KEY_FILE_ENV
from foldstudy.study import session_cache
from foldstudy.study.session_cache import read_cached, secrets_cached
from foldstudy.transcripts import SessionError, Transcript, read_transcript

from ..conftest import ROOT

DATA = ROOT / "tests/data/sessions"
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
    assert len(list(cache.glob("transcript-*.json"))) == 1


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


@pytest.mark.parametrize("garbage", [b"", b"not an entry", pickle.dumps({"a": 1})])
def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path, parses, garbage):
    p, cache = session(tmp_path), tmp_path / "cache"
    read_cached(p, where=cache)
    (entry,) = cache.glob("transcript-*.json")
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
    assert not list(cache.glob("*.json"))


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
    assert len(list(cache.glob("transcript-*.json"))) == 2


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
    assert len(parses) == 2 and not list(cache.glob("transcript-*.json"))


# ------------------------------------------- the cache is no way in (hostile entries)

class RunsCode:
    """What a planted pickle holds: loading it runs a shell command (here, one that
    leaves a file behind)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_planted_pickle_is_never_loaded(tmp_path, parses):
    """Whoever can write the working directory plants a pickle under an entry's name
    (the old `.pickle` one and the current one): the next read runs none of it."""
    p, cache = session(tmp_path), tmp_path / "cache"
    read_cached(p, where=cache)
    (entry,) = cache.glob("transcript-*")
    marker = tmp_path / "ran"
    for name in (entry.with_suffix(".pickle"), entry.with_suffix(".json")):
        name.write_bytes(pickle.dumps(RunsCode(marker)))
    assert read_cached(p, where=cache) == read_transcript(p)
    assert not marker.exists()


def test_an_edited_entry_never_puts_foreign_text_into_the_fixture(tmp_path, parses, caplog):
    """An entry edited in place (the transcript's word swapped for one it never had, the
    entry's length kept) is refused, said in one line, and rebuilt from the file."""
    p, cache = session(tmp_path), tmp_path / "cache"
    read_cached(p, where=cache)
    (entry,) = cache.glob("transcript-*")
    entry.write_bytes(entry.read_bytes().replace(b"harbor", b"forged"))
    with caplog.at_level("WARNING"):
        tr = read_cached(p, where=cache)
    assert not any("forged" in m.text for m in tr.messages)
    assert tr == read_transcript(p) and len(parses) == 2
    (said,) = [r.getMessage() for r in caplog.records]
    assert "discarded" in said and entry.name in said and "\n" not in said
    assert read_cached(p, where=cache) == tr and len(parses) == 2  # rebuilt, then served


def test_an_entry_copied_from_another_key_is_refused(tmp_path, parses):
    """A genuine entry of another transcript, copied under this one's name, is foreign:
    an entry is signed for its own key."""
    cache = tmp_path / "cache"
    a = session(tmp_path, "a.jsonl")
    b = tmp_path / "b.jsonl"
    b.write_text(a.read_text(encoding="utf-8").replace("harbor", "marina"), encoding="utf-8")
    read_cached(a, where=cache)
    read_cached(b, where=cache)
    entries = sorted(cache.glob("transcript-*"), key=lambda e: e.stat().st_mtime_ns)
    entries[1].write_bytes(entries[0].read_bytes())  # b's entry now holds a's parse
    assert not any("harbor" in m.text for m in read_cached(b, where=cache).messages)


def test_an_emptied_secret_scan_keeps_the_credential_warning(tmp_path, monkeypatch):
    """The scan's entry emptied (no findings) would drop the warning that a key reaches
    the model; it is refused and the file scanned again."""
    from foldstudy.study.sessions import credential_lines

    from ..release.test_release_package import SECRETS

    p = session(tmp_path)
    with p.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"role": "user", "content": f"env dump: {SECRETS[1][1]}"}) + "\n")
    monkeypatch.setenv(session_cache.CACHE_ENV, str(tmp_path / "cache"))
    found = credential_lines(read_transcript(p))
    assert found
    (entry,) = (tmp_path / "cache").glob("secrets-*")
    signed, _, _ = entry.read_bytes().partition(b"\n")
    entry.write_bytes(pickle.dumps([]) if entry.suffix == ".pickle" else signed + b"\n[]")
    assert credential_lines(read_transcript(p)) == found


def test_a_signing_key_in_a_read_only_place_means_no_cache_not_an_error(tmp_path,
                                                                        monkeypatch, parses):
    monkeypatch.setenv(CACHE_KEY_FILE_ENV, str(tmp_path / "nodir" / "x" / "k"))
    (tmp_path / "nodir").write_text("a file where a directory would be", encoding="utf-8")
    p, cache = session(tmp_path), tmp_path / "cache"
    assert read_cached(p, where=cache) == read_cached(p, where=cache) == read_transcript(p)
    assert len(parses) == 2 and not list(cache.glob("*"))


def test_a_new_field_of_a_parsed_session_needs_no_change_in_the_cache():
    """The cache rebuilds any dataclass from its type hints: a reader's new field (a
    tuple of pairs, an optional number) round-trips without a line here."""
    from dataclasses import dataclass

    from foldstudy.study.session_cache import from_data, to_data

    @dataclass(frozen=True)
    class Later:
        pairs: tuple[tuple[str, int], ...] = ()
        ratio: float | None = None
        tr: Transcript | None = None

    value = Later((("fork_prefix", 2),), 0.5, read_transcript(SAMPLE))
    assert from_data(Later, json.loads(json.dumps(to_data(value)))) == value
    with pytest.raises(session_cache.ForeignEntry):
        from_data(Later, {"pairs": [["fork_prefix", "2"]]})
