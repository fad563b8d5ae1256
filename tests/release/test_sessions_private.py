"""A user's transcript is a private input (docs/design.md §3 "Own sessions"): the lock
pins it by sha256, and a release is refused while a session sweep's fixture, fold viewer
or comparison pages hold a credential (named by file and line, never echoed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from foldstudy.release.lock import check_lock, private_inputs
from foldstudy.release.package import SessionsUnpublished, check_sessions_publishable

from ..conftest import ROOT

DATA = ROOT / "tests/data/sessions"


def study_config(transcript: Path) -> dict:
    return {"scenarios": {"atlas": {"transcript": str(transcript)}},
            "sweeps": {"mine": {"scenario": "atlas"}, "main": {"scenario": "distributed"}}}


def test_the_lock_pins_the_transcript_and_verify_names_an_edit(tmp_path):
    t = tmp_path / "atlas.jsonl"
    shutil.copy(DATA / "atlas.claude-code.jsonl", t)
    cfg = study_config(t)
    res = str(tmp_path / "res")
    pinned = private_inputs(None, None, None, res, cfg)
    assert "transcript:atlas" in pinned and pinned["transcript:atlas"]["files"] == 1
    lock = {"private": pinned, "public": {}, "numbers": {}}
    assert check_lock(lock, private_inputs(None, None, None, res, cfg), {}, {}) == []
    t.write_text(t.read_text(encoding="utf-8").replace("47213", "47214"), encoding="utf-8")
    drift = check_lock(lock, private_inputs(None, None, None, res, cfg), {}, {})
    assert [m.what for m in drift] == ["transcript:atlas"]


def test_a_study_folding_your_sessions_is_released_only_when_the_config_says_so(tmp_path):
    """docs/design.md §3: "A transcript is a private input: pinned by the lock, never in a
    release". The package leaves the transcript and its chunks out, yet its carries and
    answers quote the session: without `release.publish_sessions` the release is refused
    in one line naming the sweep and the key, and a synthetic study is never asked."""
    cfg = study_config(tmp_path / "atlas.jsonl")
    with pytest.raises(SessionsUnpublished, match="release.publish_sessions") as e:
        check_sessions_publishable(cfg)
    assert "\n" not in str(e.value) and "mine" in str(e.value)
    check_sessions_publishable({**cfg, "release": {"publish_sessions": True}})
    synthetic = {"sweeps": {"main": {"scenario": "distributed"}}}
    check_sessions_publishable(synthetic)
