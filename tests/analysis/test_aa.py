"""The A/A control (config sweeps.X.controls.aa): an arm against an exact copy of itself
through the same endpoint. The copy sends byte-identical requests (only the store's key,
through the sample's arm, tells them apart), is outside the matched comparison, and is
read against its original on its own card line; a copy declared different is the
instrument failing, which the card says first and the gate fails on."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import yaml

from foldstudy.analysis.card import AA_SOURCE, Card, CeilingLine, ContrastVerdict
from foldstudy.analysis.decision import CardInputs, cards
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.verdict import UNDECIDED
from foldstudy.backends.store import cache_key
from foldstudy.report.card_words import card_markdown
from foldstudy.report.carrier import chosen
from foldstudy.report.decision import Decision, decision_json
from foldstudy.report.gate import failing_lines, gate_result
from foldstudy.run.fold import Sample, fold_request
from foldstudy.study.arm import is_matched
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.derived import aa_copies
from foldstudy.study.spec import load_arm_table

from ..conftest import ROOT
from ..support.evidence_rows import arm_rows, frames


def study(controls: dict, arms: tuple[str, ...] = ("j", "m")):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["sweeps"]["main"].update(arms=list(arms), controls=controls)
    schema = yaml.safe_load((ROOT / "config/schema/config.schema.yaml").read_text())
    return load_study(cfg, schema, load_arm_table(ROOT / "resources"), ROOT / "resources")


def test_the_copy_runs_in_every_block_and_sends_its_originals_requests_byte_for_byte():
    s = study({"aa": "j"})
    assert s.config["sweeps"]["main"]["arms"] == ["j", "m", "j~aa"]
    per_block = {r.repeat: {x.arm for x in s.runs if x.repeat == r.repeat} for r in s.runs}
    assert all(arms == {"j", "m", "j~aa"} for arms in per_block.values())
    j, copy = s.arms["j"], s.arms["j~aa"]
    assert copy.copy_of == "j" and copy.title.endswith("(A/A copy)")
    assert not is_matched(copy) and is_matched(j)
    assert copy.to_dict()["copy_of"] == "j" and "copy_of" not in j.to_dict()
    sent = [fold_request(a, "the fold's message", 0.2, 7) for a in (j, copy)]
    assert sent[0].canonical() == sent[1].canonical()  # nothing differs on the wire
    keys = [cache_key(r, {"backend": "x"}, Sample("main", "m1", a.arm, 0, 0, 1)
                      .identity("fold0")) for r, a in zip(sent, (j, copy), strict=True)]
    assert keys[0] != keys[1]  # the store keeps the two apart by the sample's arm


def test_a_copy_of_an_index_arm_sends_its_bases_schema_name_as_the_original_does():
    s = study({"aa": "jx"}, arms=("j", "jx"))
    sent = [fold_request(s.arms[a], "u", 0.2, 7) for a in ("jx", "jx~aa")]
    assert sent[0].canonical() == sent[1].canonical() and sent[0].schema_name == "arm_j"


def test_an_aa_arm_the_sweep_does_not_run_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"config.sweeps.main.controls.aa: 'q' is not an "
                                          r"arm of sweep main \(its arms: j m\)"):
        study({"aa": "q"})


def test_the_copy_is_outside_every_paper_reader():
    cfg = {"sweeps": {"main": {"controls": {"aa": "m"}}, "other": {}}}
    assert aa_copies(cfg) == {"m~aa": "m"}
    plan = AnalysisPlan.load(config=cfg)
    assert "m~aa" in plan.unmatched and plan.aa == {"m~aa": "m"}
    assert plan.arm_title("m~aa") == f"{plan.arm_title('m')} (A/A copy)"


def _cards(copy: list[float], original: list[float] | None = None, j: float = 0.2):
    original = original or [0.6, 0.4, 0.5, 0.7, 0.5, 0.3, 0.6, 0.4, 0.5, 0.5, 0.6, 0.4]
    rows = [r for arm, recalls in (("j", [j] * 12), ("m", original), ("m~aa", copy))
            for r in arm_rows("s", "x", arm, recalls, k=10)]
    rows_df, checks = frames(rows)
    plan = PLAN.with_copies({"m~aa": "m"})
    return cards(rows_df, checks, plan, CardInputs(margin=0.10, gate_pair=("j", "m"))), plan


PLAN = AnalysisPlan.load()


def test_an_equal_copy_reads_no_difference_and_the_card_says_nothing_first():
    (card,), plan = _cards([0.6, 0.4, 0.5, 0.7, 0.5, 0.3, 0.6, 0.4, 0.5, 0.5, 0.6, 0.4])
    (aa,) = card.aa_lines
    assert (aa.a, aa.b, aa.source) == ("m", "m~aa", AA_SOURCE)
    assert aa.difference == 0 and not aa.word.endswith("better")
    assert aa.family_size == len(card.contrasts)  # adjusted within the family
    assert card.instrument_fails == []
    lines = card_markdown(card, plan)
    assert "instrument fails" not in "\n".join(lines)
    assert any(AA_SOURCE in line for line in lines)  # the A/A line, named as a control


def test_a_copy_declared_better_is_the_instrument_failing_said_first_and_the_gate_fails():
    (card,), plan = _cards([1.0] * 12)
    (bad,) = card.instrument_fails
    assert bad.word == "m~aa better"
    lines = card_markdown(card, plan)
    assert lines[2].startswith("**The instrument fails its A/A control: m against its exact "
                               "copy m~aa reads m~aa better")
    doc = json.loads(decision_json(Decision(margin=0.10, family="sweep", alpha=plan.alpha,
                                            cards=[card])))
    # the copy is never the card's chosen carrier
    assert chosen(card) is None or chosen(card)[0] != "m~aa"
    gate = {"arm": "m", "against": "j", "at_least": "better", "models": None}
    result = gate_result(gate, {"s": {"arms": ["j", "m", "m~aa"], "models": ["x"]}},
                         Decision.from_dict(doc))
    assert not result["passed"] and result["instrument"][0]["copy"] == "m~aa"
    (line,) = [x for x in failing_lines(result) if "A/A" in x]
    assert line == ("gate fails on x in sweep s: the instrument fails its A/A control, m "
                    "against its exact copy m~aa reads m~aa better")


def test_a_difference_inside_the_aa_noise_floor_is_never_worded_as_a_finding():
    """Each contrast of a model that ran an A/A shows the A/A interval beside its own; a
    difference no larger than what the arm and its copy differed by stays undecided."""
    copy = [0.9, 0.2, 0.8, 0.1, 0.9, 0.3, 0.8, 0.2, 0.9, 0.1, 0.8, 0.3]
    (card,), plan = _cards(copy, j=0.35)
    (aa,) = card.aa_lines
    floor = max(abs(aa.ci_low), abs(aa.ci_high))
    others = [v for v in card.contrasts if v.source != AA_SOURCE]
    assert others and all(v.aa_floor == floor for v in others)
    jm = next(v for v in others if {v.a, v.b} == {"j", "m"})
    # j at 0.35 and m around 0.5: a clear difference, but inside this noisy floor
    assert abs(jm.difference) <= floor and jm.inside_noise and jm.word == UNDECIDED
    text = "\n".join(card_markdown(card, plan))
    assert "inside the A/A noise floor" in text and f"A/A ±{floor:.3f}" in text
    # without the A/A line, the same rows read j–m as a finding
    rows = [r for arm, recalls in (("j", [0.35] * 12), ("m", [0.6, 0.4, 0.5, 0.7, 0.5, 0.3,
                                                                0.6, 0.4, 0.5, 0.5, 0.6, 0.4]))
            for r in arm_rows("s", "x", arm, recalls, k=10)]
    rows_df, checks = frames(rows)
    (plain,) = cards(rows_df, checks, PLAN, CardInputs(margin=0.10, gate_pair=("j", "m")))
    jm = next(v for v in plain.contrasts if {v.a, v.b} == {"j", "m"})
    assert jm.word == "m better" and jm.aa_floor is None


def _verdict(a: str, b: str, source: str, d: float, lo: float, hi: float, word: str,
             aa_floor: float | None = None) -> ContrastVerdict:
    return ContrastVerdict(a=a, b=b, source=source, blocks=4, a_mean=0.5, b_mean=0.5 + d,
                           difference=d, ci_low=lo, ci_high=hi, p_permutation=0.5,
                           tost_p=0.5, equivalent=False, word=word, icc=0.1,
                           icc_source="cell", aa_floor=aa_floor)


def test_the_forest_draws_the_aa_floor_and_the_ceiling():
    """The decision page's forest plot draws the A/A band on each contrast of a card
    that ran one, and the ceiling's line (the whole session against the best arm) as a
    diamond labelled with the ceiling's own recall."""
    from matplotlib.collections import PolyCollection

    from foldstudy.carriers.uncompacted import UNCOMPACTED_SOURCE
    from foldstudy.report.figures import decision_forest, forest_rows

    card = Card(sweep="s", model="x", valid_rows=12, all_lost=False, contrasts=[
        _verdict("j", "m", "analysis", 0.05, -0.02, 0.12, "undecided", aa_floor=0.08),
        _verdict("m", "m~aa", AA_SOURCE, 0.01, -0.08, 0.06, "undecided"),
        _verdict("m", "uncompacted", UNCOMPACTED_SOURCE, 0.3, 0.2, 0.4, "uncompacted better",
                 aa_floor=0.08)],
        ceiling_lines=[CeilingLine(arm="m", ceiling="uncompacted", blocks=4, lost=8,
                                   carrier_lost=6, recall_lost=2, ceiling_recall=0.83)])
    doc = Decision(margin=0.1, family="sweep", alpha=0.05, cards=[card])
    labels = [label for label, _ in forest_rows(doc)]
    assert labels == ["x (s)  m − j", "x (s)  m~aa − m",
                      "x (s)  uncompacted − m [ceiling, recall 0.83]"]
    fig = decision_forest(doc)
    (ax,) = fig.axes
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    # one band per contrast read against the floor, none on the A/A line itself
    assert len(bands) == 2
    assert all(np.allclose(sorted({round(x, 6) for x in b.get_paths()[0].vertices[:, 0]}),
                           [-0.08, 0.08]) for b in bands)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "A/A noise floor (the card's A/A interval)" in legend
    assert "the ceiling (whole session) − best arm" in legend
    markers = [c.get_paths()[0].vertices.round(2).tolist() for c in ax.collections
               if not isinstance(c, PolyCollection)]
    assert len({str(m) for m in markers}) == 2  # circles and the ceiling's diamond
    # a card without either draws neither
    plain = dataclasses.replace(doc, cards=[dataclasses.replace(card, contrasts=[
        _verdict("j", "m", "analysis", 0.05, -0.02, 0.12, "undecided")], ceiling_lines=[])])
    ax = decision_forest(plain).axes[0]
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert "A/A noise floor (the card's A/A interval)" not in [
        t.get_text() for t in ax.get_legend().get_texts()]
