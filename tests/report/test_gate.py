"""The gate (decide.gate): pass or fail per model from the cards, one
line per failing model, an undecided model failing with what would decide it. The
workflow run (`snakemake gate` on the stand-in) is test_decision_workflow's."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from foldstudy.analysis.decision import CardInputs, cards, cell_contrasts, planned_family_size
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.verdict import Price
from foldstudy.report.decision import Decision, decision_json, json_safe
from foldstudy.report.gate import GateFailed, gate_result, gate_stage, gate_verdicts_stage
from foldstudy.study.decide_checks import gate_problems

from ..support.evidence_rows import arm_rows, frames

PLAN = AnalysisPlan.load()
SWEEPS = {"s": {"arms": ["m", "mine"], "models": ["wins", "same", "loses", "close"],
                "design": "latin"}}


def _doc(gate: dict) -> Decision:
    """decision.json, read back, of a sweep where `mine` beats m on one model, equals it on one,
    loses on one and is close on the last (ten blocks of ten checks each)."""
    cells = {"wins": ([0.2] * 10, [0.9] * 10), "same": ([0.5] * 10, [0.5] * 10),
             "loses": ([0.9] * 10, [0.1] * 10),
             "close": ([0.5] * 10, [0.3, 0.7, 0.6, 0.4, 0.8, 0.2, 0.5, 0.7, 0.3, 0.6])}
    rows = [r for model, (m, mine) in cells.items()
            for arm, recalls in (("m", m), ("mine", mine))
            for r in arm_rows("s", model, arm, recalls, k=10)]
    rows_df, checks = frames(rows)
    ci = CardInputs(margin=0.10, gate_pair=(gate["against"], gate["arm"]),
                      price=lambda s, m, a: Price(calls=6, usd=0.25), rotation=lambda s: 2)
    made = cards(rows_df, checks, PLAN, ci)
    return Decision.from_dict(json.loads(json.dumps(json_safe(
        {"margin": 0.10, "family": "sweep", "alpha": PLAN.alpha,
         "cards": [c.to_dict() for c in made]}))))


GATE = {"arm": "mine", "against": "m", "at_least": "equivalent", "models": None}


def test_the_gate_reads_each_models_card():
    result = gate_result(GATE, SWEEPS, _doc(GATE))
    by = {m["model"]: m for m in result["models"]}
    assert not result["passed"]
    assert by["wins"]["pass"] and by["wins"]["verdict"] == "mine better"
    assert by["same"]["pass"] and by["same"]["verdict"].startswith("equivalent")
    assert not by["loses"]["pass"] and by["loses"]["why"].startswith("mine loses: m better")
    close = by["close"]
    assert not close["pass"] and close["verdict"] == "undecided"
    assert close["more_repeats"] > 0 and close["more_usd"] == pytest.approx(
        0.5 * close["more_repeats"])
    assert f"{close['more_repeats']} more repeats would decide it" in close["why"]
    # `better` fails what is only equivalent
    better = gate_result({**GATE, "at_least": "better"}, SWEEPS, _doc(GATE))
    by = {m["model"]: m for m in better["models"]}
    assert by["wins"]["pass"] and not by["same"]["pass"]
    assert "where the gate needs mine better" in by["same"]["why"]


def test_a_failing_gate_names_each_failing_model_on_one_line(tmp_path, caplog):
    result = gate_result(GATE, SWEEPS, _doc(GATE))
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(result))
    with caplog.at_level(logging.ERROR), pytest.raises(GateFailed, match="2 of 4 models"):
        gate_stage(SimpleNamespace(gate=str(path)))
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(lines) == 2 and all("\n" not in x for x in lines)
    assert lines[0].startswith("gate fails on loses in sweep s: mine must be at least "
                               "equivalent against m; mine loses")
    assert "undecided" in lines[1] and "more repeats would decide it ($" in lines[1]


def test_a_gate_on_listed_models_only_and_one_no_sweep_runs():
    gate = {**GATE, "models": ["wins", "same"]}
    assert gate_result(gate, SWEEPS, _doc(gate))["passed"]
    gate = {**GATE, "models": ["wins", "elsewhere"]}
    result = gate_result(gate, SWEEPS, _doc(gate))
    assert not result["passed"]
    assert "no sweep runs both mine and m" in result["models"][1]["why"]


def test_a_passing_gate_writes_its_file_and_raises_nothing(tmp_path):
    gate = {**GATE, "models": ["wins"]}
    decision = tmp_path / "decision.json"
    decision.write_text(decision_json(_doc(gate)))
    out = tmp_path / "gate.json"
    gate_verdicts_stage(SimpleNamespace(decision=str(decision)),
                          SimpleNamespace(gate=str(out)), SimpleNamespace(gate=gate,
                                                                          sweeps=SWEEPS))
    assert json.loads(out.read_text())["passed"]
    gate_stage(SimpleNamespace(gate=str(out)))
    with pytest.raises(GateFailed, match="config.decide.gate: not set"):
        gate_verdicts_stage(SimpleNamespace(decision=str(decision)),
                              SimpleNamespace(gate=str(out)),
                              SimpleNamespace(gate=None, sweeps=SWEEPS))


def test_the_gate_is_checked_before_any_job():
    assert gate_problems(GATE, SWEEPS) == []
    assert "both 'm'" in gate_problems({**GATE, "arm": "m"}, SWEEPS)[0]
    assert "no sweep runs both q and m" in gate_problems({**GATE, "arm": "q"}, SWEEPS)[0]
    assert "gate.models[0]: 'x'" in gate_problems({**GATE, "models": ["x"]}, SWEEPS)[0]


def test_the_gate_pair_is_read_once_and_counted_in_the_family():
    n = planned_family_size(PLAN, [], {}, None, ["m", "mine"], 4, "sweep", ("m", "mine"))
    assert n == 4
    assert [c for c in cell_contrasts(PLAN, [["m", "mine"]], {}, None, ("mine", "m"))
            if c[2] == "gate"] == []
