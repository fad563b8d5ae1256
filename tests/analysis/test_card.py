"""The decision card as one typed record (analysis/card.py): built by keyword only, written
with one to_dict and read back with one from_dict that checks every field against its
type, refusing what is not a card by the field's path."""

from __future__ import annotations

import json
import math

import pytest

from foldstudy.analysis.card import Card, CardShapeError, ContrastVerdict, OwnArmCheck
from foldstudy.io import MalformedFile
from foldstudy.report.decision import json_safe

from ..support.cards import full_card


def through_json(c: Card) -> dict:
    """The card as decision.json holds it."""
    return json.loads(json.dumps(json_safe(c.to_dict())))


def test_a_card_is_built_by_keyword_only():
    with pytest.raises(TypeError):
        Card("s", "x", 32, False)  # type: ignore[misc]
    with pytest.raises(TypeError):
        OwnArmCheck("mine", "m", True, "why")  # type: ignore[misc]


def test_every_line_of_a_card_goes_through_decision_json_and_back():
    c = full_card()
    again = Card.from_dict(through_json(c))
    # NaN is written as null and read back as NaN, so compare through the JSON once more
    assert through_json(again) == through_json(c)
    assert again.control_lost == {"j": (1, 8)} and again.unread_pairs == [("j", "q")]
    assert isinstance(again.index_lines[0].verdict, ContrastVerdict)
    assert math.isnan(again.contrasts[1].k)
    assert again.family_cost == c.family_cost and again.loudness == c.loudness


def test_a_line_most_cards_lack_is_left_out_where_empty_and_read_as_empty():
    c = Card(sweep="s", model="x", valid_rows=4, all_lost=True)
    d = c.to_dict()
    for key in ("fold_failures", "ceiling_lines", "control_lost", "control_lost_rows",
                "repeat_stops", "served_by_other", "unread_pairs", "compare_key",
                "family_cost"):
        assert key not in d
    assert {"contrasts", "diagnosis", "loudness", "own_arms", "staged", "price_basis",
            "index_lines"} <= set(d)
    assert Card.from_dict(d) == c


@pytest.mark.parametrize(("edit", "said"), [
    (lambda d: d.pop("valid_rows"), "valid_rows: missing"),
    (lambda d: d["contrasts"][0].pop("word"), "contrasts[0].word: missing"),
    (lambda d: d["contrasts"][1].update(p_adjusted="small"),
     'contrasts[1].p_adjusted: "small" is not a number'),
    (lambda d: d.update(all_lost=1), "all_lost: 1 is not true or false"),
    (lambda d: d["contrasts"][0].update(blocks=True), "contrasts[0].blocks: true is not an "
                                                      "integer"),
    (lambda d: d["control_lost"].update(j=[1]), "control_lost.j: [1] is not a list of 2"),
    (lambda d: d["index_lines"][0]["verdict"].update(icc="high"),
     'index_lines[0].verdict.icc: "high" is not a number'),
    (lambda d: d.update(loudness=[]), "loudness: [] is not an object"),
    (lambda d: d.update(verdict_word="x"), "verdict_word: not a field of Card"),
])
def test_a_card_of_the_wrong_shape_is_refused_naming_the_field(edit, said):
    d = through_json(full_card())
    edit(d)
    with pytest.raises(CardShapeError) as e:
        Card.from_dict(d)
    assert str(e.value) == said
    assert isinstance(e.value, MalformedFile)  # the package's own error: one line, no trace


def _own_cell():
    import pandas as pd

    rows = pd.DataFrame({"row_id": ["a", "b", "c", "d"], "arm": ["j", "m", "j", "m"],
                         "recall": [0.2, 0.6, 0.4, 0.4], "carried_chars": [300, 500, 310, 700]})
    checks = pd.DataFrame({"row_id": ["b", "b", "d", "d"], "label": ["x", "y", "x", "y"],
                           "in_carrier": [True, True, True, False]})
    return rows, checks


def test_the_clis_own_compaction_is_read_against_the_best_arm():
    """A session whose file holds the CLI's compaction: its summaries' held facts beside
    the best matched arm's (highest mean recall) final carry and answers."""
    from foldstudy.analysis.card_lines import own_compaction_line
    from foldstudy.analysis.plan import AnalysisPlan
    from foldstudy.study.spec import load_arm_table, resolve_arm

    from ..conftest import ROOT

    table = load_arm_table(ROOT / "resources")
    arms = {a: resolve_arm(a, table, ROOT / "resources", 1.0) for a in ("j", "m")}
    plan = AnalysisPlan.load()
    rows, checks = _own_cell()
    own = {"summaries": 1, "summary_chars": 420, "held": ["x"], "facts": 2}
    line = own_compaction_line(rows, checks, arms, plan, own)
    assert (line.arm, line.rows, line.held, line.facts) == ("m", 2, 1, 2)
    assert (line.carried, line.recall, line.carry_chars) == (0.75, 0.5, 600.0)
    # no line where the file holds none, only an opaque one, or no matched arm ran
    assert own_compaction_line(rows, checks, arms, plan, None) is None
    assert own_compaction_line(rows, checks, arms, plan, {**own, "summaries": 0}) is None
    assert own_compaction_line(rows, checks, arms, plan, {**own, "opaque": "encrypted"}) is None
    assert own_compaction_line(rows, checks, arms, plan.with_unmatched(["j", "m"]), own) is None
