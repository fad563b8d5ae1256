"""results/decision.json read back (report/decision.py read_decision): the typed cards the
page and the gate read, checked once; a file that is not one is refused in one line
naming the file and the field, by the job that reads it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.io import MalformedFile
from foldstudy.report.decision import Decision, decision_json, read_decision
from foldstudy.report.gate import gate_verdicts_stage

from ..support.cards import full_card

PLAN = AnalysisPlan.load()


def _written(tmp_path, edit=None):
    d = json.loads(decision_json(Decision(margin=0.1, family="sweep", alpha=PLAN.alpha,
                                          cards=[full_card()])))
    if edit:
        edit(d)
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return path


def test_decision_json_reads_back_as_the_cards_it_was_written_from(tmp_path):
    path = _written(tmp_path)
    doc = read_decision(path)
    assert doc.family == "sweep" and doc.cards[0].model == "x"
    assert decision_json(doc) == path.read_text()  # byte for byte


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["cards"][0].pop("all_lost"), "cards[0].all_lost: missing"),
    (lambda d: d["cards"][0]["contrasts"][0].update(difference="+0.3"),
     'cards[0].contrasts[0].difference: "+0.3" is not a number'),
    (lambda d: d.pop("family"), "family: missing"),
])
def test_a_decision_file_of_the_wrong_shape_is_refused_naming_file_and_field(
        tmp_path, edit, field):
    path = _written(tmp_path, edit)
    with pytest.raises(MalformedFile) as e:
        read_decision(path)
    said = str(e.value)
    assert said.startswith(f"{path}: not a decision file ({field})")
    assert "snakemake --forcerun decision" in said and "\n" not in said


def test_the_gate_job_refuses_a_truncated_decision_file_in_one_line(tmp_path):
    path = tmp_path / "decision.json"
    path.write_text('{"cards": [')
    gate = {"arm": "m", "against": "j", "at_least": "better", "models": None}
    with pytest.raises(MalformedFile, match=r"decision.json: not readable as a decision file"):
        gate_verdicts_stage(SimpleNamespace(decision=str(path)),
                            SimpleNamespace(gate=str(tmp_path / "gate.json")),
                            SimpleNamespace(gate=gate, sweeps={"s": {"arms": ["j", "m"],
                                                                     "models": ["x"]}}))
