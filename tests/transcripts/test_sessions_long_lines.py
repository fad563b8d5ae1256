"""A session message longer than a chunk: cut at whitespace, then at a hard limit, the
cuts counted in the manifest; and the context refusal's advice is a `folds` that passes
(issue: "folds: 9 or more would fit" came back word for word with `folds: 9`, because a
line was never cut)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from foldstudy.study.boundary import has_whole_token
from foldstudy.study.capacity import smallest_fitting
from foldstudy.study.sessions import (
    OwnFact,
    _split_lines,
    plant,
    session_chunks,
    session_units,
)
from foldstudy.transcripts import SessionError, read_transcript

from ..study.test_sessions_config import config, load, problems

ADVICE = re.compile(r"folds: (\d+) fits")


def one_long_line_session(tmp_path: Path, chars: int = 60_000, spaces: bool = True) -> Path:
    """Ten short messages and one tool result of a single line of `chars` characters (a
    log pasted without newlines, or a minified JSON document)."""
    word = "shard-07 served 4181 requests; " if spaces else "shard-07:served:4181;"
    line = (word * (chars // len(word) + 1))[:chars]
    recs = [{"role": "user", "content": "Why did the cutover stall? The listener is on "
                                        "port 47213."}]
    for i in range(9):
        recs.append({"role": "assistant" if i % 2 else "user",
                     "content": f"Step {i}: checked the shard map again."})
    recs.insert(5, {"role": "tool", "content": line})
    p = tmp_path / "long-line.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    (tmp_path / "facts.yaml").write_text("facts:\n  - {label: the port, value: '47213'}\n",
                                         encoding="utf-8")
    return p


def tiny_context(folds: int, tmp_path: Path, session: Path) -> dict:
    cfg = config({"transcript": str(session), "folds": folds,
                  "facts": str(tmp_path / "facts.yaml")})
    cfg["models"]["s"]["n_ctx"] = 4096
    return cfg


def test_a_single_line_longer_than_a_chunk_folds_with_the_advised_folds(
        config_schema, resources, tmp_path):
    session = one_long_line_session(tmp_path)
    msg = problems(tiny_context(5, tmp_path, session), config_schema, resources)
    advised = ADVICE.search(msg)
    assert advised, msg
    folds = int(advised.group(1))
    study = load(tiny_context(folds, tmp_path, session), config_schema, resources)
    fx = study.sessions["atlas"]
    assert len(fx.chunks) == folds
    cut = fx.meta["session"]["cut"]
    assert cut["messages"] == 1 and cut["whitespace"] >= folds - 1 and cut["hard"] == 0


def test_a_line_without_whitespace_is_cut_at_the_hard_limit_and_counted():
    cuts = {"whitespace": 0, "hard": 0}
    pieces = _split_lines("a" * 25 + " " + "b" * 8, 10, cuts)
    assert pieces == ["a" * 10, "a" * 10, "a" * 5, "b" * 8]
    assert cuts == {"whitespace": 1, "hard": 2}
    assert all(len(p) <= 10 for p in pieces)


def test_units_of_a_session_are_each_at_most_a_chunks_share():
    rendered = ["short turn", "x " * 5000 + "y" * 9000, "last"]
    units, cut = session_units(rendered, 4)
    limit = sum(len(t) + 1 for t in rendered) // 4
    assert all(len(u) <= limit for u in units)
    assert "".join(units).replace(" ", "") == "".join(rendered).replace(" ", "")
    assert cut["messages"] == 1 and cut["hard"] >= 1


def test_no_folds_fits_when_the_messages_run_out_and_the_refusal_names_the_message(
        config_schema, resources, tmp_path):
    """A session of 11 messages whose one line needs more than 11 chunks: no `folds` is
    advised that the message count would then refuse; the longest message is named."""
    session = one_long_line_session(tmp_path, chars=200_000)
    msg = problems(tiny_context(5, tmp_path, session), config_schema, resources)
    assert "no `folds` fits" in msg and "the main thread has 11 messages" in msg
    assert "the longest, message 5 at transcript line 6, is 200,0" in msg
    assert not ADVICE.search(msg)


@pytest.mark.parametrize("start", [1, 7, 40])
def test_the_smallest_fitting_folds_is_one_that_fits(start):
    assert smallest_fitting(lambda f: f >= 23, start, 100) == max(23, start)
    assert smallest_fitting(lambda f: f >= 230, start, 100) is None


def test_a_fact_a_cut_goes_through_is_refused_saying_so(tmp_path):
    """A line of 4,000 characters without whitespace, cut hard at each chunk's share:
    an id the cut goes through is refused as cut, not as "inside a longer token"."""
    line = ";".join(f"id{i:07d}" for i in range(400))
    recs = [{"role": "user", "content": f"Step {i}."} for i in range(10)]
    recs.insert(5, {"role": "tool", "content": line})
    p = tmp_path / "ids.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    tr = read_transcript(p)
    chunks = session_chunks(tr, 10)
    ids = re.findall(r"id\d{7}", line)
    cut = [v for v in ids if not any(has_whole_token(v, c) for c in chunks)]
    assert cut  # the hard cuts went through ids
    with pytest.raises(SessionError, match="a line longer than a chunk was cut through it"):
        plant([OwnFact("an id at a cut", cut[0])], chunks, tr, "facts.yaml")
    plant([OwnFact("an id away from the cuts", ids[3])], chunks, tr, "facts.yaml")
