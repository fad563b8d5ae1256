"""Control facts (config sweeps.X.controls.tail): extra facts planted at the end of the
last chunk, where every working carrier keeps them, asked by the recall turn after the
graded facts and graded apart, never in recall. A sweep without them is exactly what it
was: the same fixture bytes, the same recall prompt, the same row."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from foldstudy.backends.base import Backend
from foldstudy.grade.rows import grade_record
from foldstudy.study.fixture_files import manifest
from foldstudy.study.fixture_types import Fact, Fixture
from foldstudy.study.fixtures import build_fixture, plant_controls
from foldstudy.study.spec import SpecError

from ..conftest import ROOT
from ..support.records import fixture, record


@pytest.fixture(scope="module")
def plain(facts_spec, filler, grading) -> Fixture:
    return build_fixture("distributed", 5, 0.02, facts_spec, filler,
                         set(grading["stock_signature"]["ports"]))


@pytest.fixture(scope="module")
def controlled(plain, facts_spec, grading) -> Fixture:
    return plant_controls(plain, 2, facts_spec, set(grading["stock_signature"]["ports"]))


def test_controls_sit_in_one_turn_at_the_end_of_the_last_chunk_and_change_nothing_else(
        plain, controlled, facts_spec):
    assert controlled.chunks[:-1] == plain.chunks[:-1]
    assert controlled.chunks[-1].startswith(plain.chunks[-1])
    added = controlled.chunks[-1][len(plain.chunks[-1]):]
    assert added.startswith("[turn ") and added.count("\n[turn ") == 0
    cs = controlled.controls
    assert [c.fact_id for c in cs] == [c["id"] for c in facts_spec["controls"][:2]]
    assert all(c.control and not c.graded and c.chunk == len(plain.chunks) - 1 for c in cs)
    for c in cs:  # recorded like the graded facts: where each value sits
        assert controlled.chunks[c.chunk][c.offset:].startswith(c.value)
    assert controlled.graded == plain.graded
    assert controlled.asked == [*plain.graded, *cs]
    # seeded: the same sweep plants the same controls
    again = plant_controls(plain, 2, facts_spec, set())
    assert [c.value for c in again.controls] == [c.value for c in cs]


def test_a_fixture_without_controls_is_written_as_before(plain, controlled):
    assert all("control" not in f for f in plain.to_dict()["facts"])
    assert "n_control" not in manifest(plain)
    assert plain.asked == plain.graded
    m = manifest(controlled)
    assert m["n_control"] == 2 and sum(f.get("control", False) for f in m["facts"]) == 2
    assert Fixture.from_dict(controlled.to_dict()) == controlled


def test_more_controls_than_facts_yaml_lists_are_refused(plain, facts_spec):
    n = len(facts_spec["controls"])
    with pytest.raises(SpecError, match=rf"controls.tail: {n + 1} .*\(1 to {n}\)"):
        plant_controls(plain, n + 1, facts_spec, set())


def test_the_recall_turn_asks_the_controls_after_the_graded_facts(controlled, resources):
    from foldstudy.backends.base import Reply
    from foldstudy.backends.store import ResponseStore
    from foldstudy.run.fold import Prompts, Sample, run_row
    from foldstudy.study.spec import load_arm_table, resolve_arm

    class Echo(Backend):
        """Answers "ok" to every call and records what it was sent."""

        def __init__(self) -> None:
            self.identity = {"backend": "echo", "model": "echo"}
            self.sent: list = []

        @classmethod
        def describe(cls, name, cfg, pin=None):
            return {"backend": "echo", "model": name}

        def complete(self, request):
            self.sent.append(request)
            return Reply(text="ok", finish_reason="stop", prompt_tokens=1,
                         completion_tokens=1, token_count_method="estimate", latency_s=0.0,
                         served_by="echo")

    d = resources / "prompts"
    prompts = Prompts.from_files(d / "fold_user.md.j2", d / "recall_system.md",
                                 d / "recall_user.md.j2")
    arm = resolve_arm("m", load_arm_table(resources), resources, 0.02)
    backend = Echo()
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        run_row(controlled, arm, backend, ResponseStore(tmp), prompts,
                Sample("s", "echo", "m", 0, 0, 5), temperature=0.0, recall_max_tokens=50)
    recall = backend.sent[-1].messages[-1]["content"]
    places = [recall.index(f.label) for f in controlled.asked]
    assert places == sorted(places)  # graded labels first, then the controls'


def test_controls_are_graded_apart_and_never_in_recall(grading):
    from foldstudy.grade.grader import StockSignature

    ctl = Fact("standby_port", "port", "61847", False, label="standby listener port",
               chunk=3, control=True)
    base = fixture()
    fx = replace(base, facts=(*base.facts, ctl))
    stock = StockSignature.from_dict(grading["stock_signature"])
    answer = ("primary ingress port: 52677\nDNS zone for the new records: unknown\n"
              "shard count of the event store: 19 shards\nstandby listener port: 61847")
    args = (grading["abstention_markers"], stock, [])
    row, checks, _ = grade_record(record(["x"] * 4, answer=answer), fx, *args)
    assert (row["n_graded"], row["n_correct"]) == (3, 2)  # the control is not counted
    assert [c["label"] for c in checks] == [f.label for f in base.graded]
    assert (row["n_control"], row["n_control_correct"], row["control_missed"]) == (1, 1, "")
    missed = answer.replace("61847", "I do not know")
    row, _, _ = grade_record(record(["x"] * 4, answer=missed), fx, *args)
    assert (row["n_correct"], row["n_control_correct"], row["control_missed"]) == (
        2, 0, "standby listener port")
    row, _, _ = grade_record(record(["x"] * 4, answer=answer), base, *args)
    assert (row["n_control"], row["n_control_correct"], row["control_missed"]) == (0, None, "")


def test_the_config_check_names_the_key_and_the_allowed_count(tmp_path):
    from foldstudy.study.checks import control_problems

    spec = {"controls": [{"id": "a"}, {"id": "b"}]}
    cfg = {"sweeps": {"main": {"scenario": "distributed", "controls": {"tail": 3}},
                      "own": {"scenario": "mine", "controls": {"tail": 1}},
                      "ok": {"scenario": "distributed", "controls": {"tail": 2}},
                      "none": {"scenario": "distributed"}},
           "scenarios": {"mine": {}}}
    assert control_problems(cfg, spec) == [
        "config.sweeps.main.controls.tail: 3 control facts; resources/facts.yaml lists 2 "
        "(1 to 2)",
        "config.sweeps.own.controls.tail: sweep own reads your own session 'mine'; mark its "
        "control facts `control: true` in its facts file instead (tail plants facts in a "
        "generated session)"]


def test_an_own_sessions_facts_file_marks_its_control_facts(tmp_path):
    """For own sessions the user marks control facts (`control: true`) in the facts file:
    planted like the others, asked after them and graded apart."""

    from foldstudy.study.sessions import SessionSpec, build_session_fixture
    from foldstudy.transcripts import SessionError

    data = ROOT / "tests/data/sessions"
    facts = (data / "atlas-facts.yaml").read_text(encoding="utf-8").splitlines()
    # the last fact of the file becomes a control
    marked = tmp_path / "facts.yaml"
    last = max(i for i, line in enumerate(facts) if "value:" in line)
    facts[last] = facts[last].rstrip().removesuffix("}") + ", control: true}" \
        if facts[last].rstrip().endswith("}") else facts[last] + "\n    control: true"
    marked.write_text("\n".join(facts) + "\n", encoding="utf-8")
    fx = build_session_fixture(SessionSpec("atlas", str(data / "atlas.messages.jsonl"),
                                           str(marked)), 1, "t")
    plain = build_session_fixture(SessionSpec("atlas", str(data / "atlas.messages.jsonl"),
                                              str(data / "atlas-facts.yaml")), 1, "t")
    assert len(fx.controls) == 1 and fx.controls[0].label == plain.graded[-1].label
    assert fx.graded == plain.graded[:-1] and fx.asked[-1] == fx.controls[0]

    bad = tmp_path / "bad.yaml"
    bad.write_text("facts:\n  - {label: port, value: '47213', control: 'yes'}\n",
                   encoding="utf-8")
    with pytest.raises(SessionError, match=r"facts\[0\]\.control: 'yes'; true"):
        build_session_fixture(SessionSpec("atlas", str(data / "atlas.messages.jsonl"),
                                          str(bad)), 1, "t")
    only = tmp_path / "only.yaml"
    only.write_text("facts:\n  - {label: port, value: '47213', control: true}\n",
                    encoding="utf-8")
    with pytest.raises(SessionError, match="at least one must be graded"):
        build_session_fixture(SessionSpec("atlas", str(data / "atlas.messages.jsonl"),
                                          str(only)), 1, "t")


def test_a_row_missing_a_control_fact_the_ceiling_recalled_is_control_lost():
    """A control fact sits where every working carrier keeps it: a row that misses one
    the ceiling (uncompacted) recalled in the same block is "control lost", and the card
    counts such rows per arm and says the arm's losses there are not the carrier's alone."""
    from foldstudy.analysis.card import Card
    from foldstudy.analysis.decision import CardInputs, cards
    from foldstudy.analysis.plan import AnalysisPlan
    from foldstudy.report.card_words import card_markdown
    from foldstudy.report.decision import json_safe
    from foldstudy.study.spec import load_arm_table, resolve_arm

    from ..support.evidence_rows import arm_rows, frames

    root = ROOT / "resources"
    table = load_arm_table(root)
    arms = {a: resolve_arm(a, table, root, 0.035) for a in ("j", "m", "uncompacted")}
    rows = []
    for arm, missed in (("uncompacted", ["", "b"]), ("j", ["a", "b"]), ("m", ["", ""])):
        rows += [dict(r, n_control=2, n_control_correct=2 - len([x for x in miss.split(";")
                                                               if x]),
                      control_missed=miss)
                 for r, miss in zip(arm_rows("s", "x", arm, [0.5, 0.5], k=10), missed,
                                    strict=True)]
    df, checks = frames(rows)
    plan = AnalysisPlan.load()
    (card,) = cards(df, checks, plan, CardInputs(margin=0.10, arms=arms))
    # j block 0 missed a, which the ceiling recalled; block 1 missed b, which it missed too
    assert card.control_lost == {"j": (1, 2), "m": (0, 2)}
    j_rows = [r["row_id"] for r in rows if r["arm"] == "j"]
    assert card.control_lost_rows == {"j": [j_rows[0]]}  # the row flagged, by its id
    text = "\n".join(card_markdown(card, plan))
    assert "**Control lost: j missed a control fact the ceiling recalled on 1 of 2 rows**" in text
    assert f"(flagged: `{j_rows[0]}`)" in text and j_rows[1] not in text
    assert "Control facts: m kept every control fact the ceiling recalled (2 rows read)" in text
    # through decision.json and back
    again = Card.from_dict(json.loads(json.dumps(json_safe(card.to_dict()))))
    assert again.control_lost == card.control_lost
    assert again.control_lost_rows == card.control_lost_rows


def test_where_the_ceiling_recalled_no_control_fact_the_card_reads_none():
    """The default study's small model: the ceiling misses both control facts in every
    block, so no arm's miss says anything about its carrier, and the card says the
    control facts cannot be read rather than that the arm's recall turn works."""
    from foldstudy.analysis.decision import CardInputs, cards
    from foldstudy.analysis.plan import AnalysisPlan
    from foldstudy.report.card_words import card_markdown
    from foldstudy.study.spec import load_arm_table, resolve_arm

    from ..support.evidence_rows import arm_rows, frames

    root = ROOT / "resources"
    table = load_arm_table(root)
    arms = {a: resolve_arm(a, table, root, 0.035) for a in ("j", "uncompacted")}
    rows = []
    for arm, missed in (("uncompacted", ["a;b", "a;b"]), ("j", ["a;b", "a;b"])):
        rows += [dict(r, n_control=2, n_control_correct=0, control_missed=miss)
                 for r, miss in zip(arm_rows("s", "x", arm, [0.5, 0.5], k=10), missed,
                                    strict=True)]
    df, checks = frames(rows)
    plan = AnalysisPlan.load()
    (card,) = cards(df, checks, plan, CardInputs(margin=0.10, arms=arms))
    assert card.control_lost == {"j": (0, 0)} and not card.control_lost_rows
    text = "\n".join(card_markdown(card, plan))
    assert ("Control facts: the ceiling recalled none of them in any block j ran beside it, "
            "so they cannot tell its recall turn from its carrier") in text
    assert "kept every control fact" not in text
