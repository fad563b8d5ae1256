"""The fixture's types (study/fixture_types.py): fixture.json written and read back the
same, and the recall turn's order of graded facts and controls."""

from __future__ import annotations

import json

from foldstudy.study.fixture_types import Fact, Fixture

PORT = Fact("port", "port", "4242", True, chunk=0, offset=5)
TENANT = Fact("tenant", "tenant_code", "TN-1", False, chunk=1)
CONTROL = Fact("canary", "port", "7", False, chunk=1, control=True)  # graded apart


def test_a_fixture_without_controls_writes_no_control_key():
    """A fact that is no control writes no `control` key, so a fixture without controls
    is byte for byte what it was before controls existed."""
    assert "control" not in PORT.to_dict() and CONTROL.to_dict()["control"] is True
    fx = Fixture("distributed", 7, 0.5, ("a", "b"), (PORT, TENANT), meta={"k": 1})
    text = json.dumps(fx.to_dict())
    assert '"control"' not in text
    assert Fixture.from_dict(json.loads(text)) == fx


def test_the_recall_turn_asks_the_graded_facts_then_the_controls():
    fx = Fixture("distributed", 7, 0.5, ("a", "b"), (CONTROL, TENANT, PORT))
    assert fx.graded == [PORT] and fx.controls == [CONTROL]
    assert fx.asked == [PORT, CONTROL]  # the planted, ungraded TENANT is never asked
    assert Fixture.from_dict(json.loads(json.dumps(fx.to_dict()))).asked == fx.asked
