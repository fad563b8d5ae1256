"""The lock compares each session fixture's manifest with the transcript it pins
(release/lock.py): a transcript edited after its fixture was cut (its size and mtime
kept, so nothing reran) is refused in one line naming the manifest and the file, where
the lock pinned the new file's sha256 beside a fixture cut from the old text."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from foldstudy.release.lock import LockRefused, lock_stage, stale_fixtures

from ..conftest import ROOT

DATA = ROOT / "tests/data/sessions"


def built(tmp_path: Path) -> tuple[Path, dict, Path]:
    """A transcript, a config folding it, and the fixture manifest its build wrote."""
    transcript = tmp_path / "atlas.jsonl"
    shutil.copy(DATA / "atlas.claude-code.jsonl", transcript)
    config = {"scenarios": {"atlas": {"transcript": str(transcript), "facts": "f.yaml"}},
              "sweeps": {"mine": {"scenario": "atlas"}, "paper": {"scenario": "distributed"}}}
    fixtures = tmp_path / "results/fixtures"
    (fixtures / "mine").mkdir(parents=True)
    sha = hashlib.sha256(transcript.read_bytes()).hexdigest()
    (fixtures / "mine/manifest.json").write_text(json.dumps(
        {"session": {"transcript_sha256": sha, "inherited": []}}))
    return transcript, config, fixtures


def test_a_fixture_of_the_transcript_as_it_is_passes(tmp_path):
    _, config, fixtures = built(tmp_path)
    assert stale_fixtures(fixtures, config) == []


def test_a_transcript_edited_after_its_fixture_is_named(tmp_path):
    transcript, config, fixtures = built(tmp_path)
    transcript.write_bytes(transcript.read_bytes().replace(b"listener", b"acceptor"))
    (said,) = stale_fixtures(fixtures, config)
    assert said.startswith(f"{fixtures / 'mine/manifest.json'}: its fixture was cut from "
                           f"{transcript} with sha256 ")
    assert "rebuild" in said
    transcript.unlink()
    assert "is missing" in stale_fixtures(fixtures, config)[0]


def test_the_lock_refuses_it_in_one_line(tmp_path):
    transcript, config, fixtures = built(tmp_path)
    transcript.write_bytes(transcript.read_bytes() + b"\n")
    params = SimpleNamespace(results=str(tmp_path / "results"), build_locks=str(tmp_path / "l"),
                             dirs={"store": None, "fixtures": str(fixtures)}, config=config,
                             lock=str(tmp_path / "study.lock.json"))
    with pytest.raises(LockRefused) as e:
        lock_stage(SimpleNamespace(), SimpleNamespace(), params)
    assert "\n" not in str(e.value) and "its fixture was cut from" in str(e.value)
    assert not (tmp_path / "study.lock.json").exists()
