"""`snakemake -c1 results/atif` on a copy of the tiny study (conftest.py tiny_copy: the
one built study, never a new one): every run exported as an ATIF trajectory, and one read
back through the project's own ATIF reader."""

from __future__ import annotations

import json

import pytest

from foldstudy.records.run_record import RunRecord
from foldstudy.report.atif import MAIN
from foldstudy.study.fixture_types import Fixture
from foldstudy.transcripts import read_transcript
from foldstudy.transcripts.turns import parse_turns

from ..conftest import ROOT
from ..support.procs import snakemake

pytestmark = pytest.mark.workflow
TINY = str(ROOT / ".test/config.yaml")


def test_results_atif_exports_every_run_and_one_reads_back(tiny_copy):
    study = tiny_copy
    p = snakemake(study, "-c1", "results/atif", "--configfile", TINY)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    records = sorted((study / "results/runs").rglob("*.json"))
    assert records  # the tiny study's two runs
    for path in records:
        run = path.relative_to(study / "results/runs").with_suffix("")
        assert (study / "results/atif" / run / MAIN).is_file(), run

    made = [RunRecord.from_dict(json.loads(p.read_text())) for p in records]
    record = next(r for r in made if r.status == "run" and r.folds and r.recall)
    fixture = Fixture.from_dict(json.loads(
        (study / f"results/fixtures/{record.sweep}/fixture.json").read_text()))
    tr = read_transcript(study / "results/atif" / record.sweep / record.model /
                         f"r{record.repeat}" / record.arm / MAIN)
    assert tr.format == "atif"
    assert tr.compactions == len(record.folds)
    assert tr.compaction_summaries == tuple(f.carry for f in record.folds)
    # the thread: the turns of the chunks the folds read (a system turn is counted, not
    # read), then the recall question and the answer
    turns = [(t.role, t.text.rstrip("\n")) for f in record.folds for c in f.chunks
             for t in parse_turns(fixture.chunks[c]) if t.role != "system"]
    assert [(m.role, m.text) for m in tr.messages][:len(turns)] == turns
    assert tr.messages[-1].role == "assistant" and tr.messages[-1].text == record.answer
