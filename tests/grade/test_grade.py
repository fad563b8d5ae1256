from __future__ import annotations

import json

import pytest

from foldstudy.backends.base import Backend, Reply
from foldstudy.backends.store import ResponseStore
from foldstudy.grade.grader import (
    StockSignature,
    abstention_in,
    answer_abstains,
    answer_lines,
    grade_answer,
    has_whole_token,
    headings_carried,
)
from foldstudy.study.fixture_types import Fact

PORT = Fact("ingress_port", "port", "52677", True, label="primary ingress port")
EXPORTER = Fact("exporter_port", "port", "44855", True, label="metrics exporter port")
SHARDS = Fact("shard_count", "shard_count", "19 shards", True,
              label="shard count of the event store", unit="shards")
TIME = Fact("cutover_time", "utc_time", "01:26 UTC", True, label="database cutover time",
            unit="UTC")
DEPT = Fact("department", "cyrillic_department", "Отдел Ригугур", True,
            label="department that owns the migration")
FACTS = [PORT, EXPORTER, SHARDS, TIME, DEPT]


@pytest.fixture(scope="module")
def markers(grading):
    return grading["abstention_markers"]


@pytest.fixture(scope="module")
def stock(grading):
    return StockSignature.from_dict(grading["stock_signature"])


def grade(answer, markers, stock, carry=""):
    return {c["label"]: c for c in grade_answer(FACTS, answer, carry, markers, stock)}


@pytest.mark.parametrize("text, expected", [
    ("port: 52677", True),
    ("(52677).", True),
    ("52677", True),
    ("152677", False),
    ("526770", False),
    ("52677.5", False),
    ("x-52677", False),
    ("v52677", False),
    ("52677/tcp", False),
])
def test_whole_token_boundary(text, expected):
    assert has_whole_token("52677", text) is expected


def test_value_inside_a_longer_token_does_not_count(markers, stock):
    g = grade("1. primary ingress port: 526771", markers, stock)
    assert not g["primary ingress port"]["correct"]


def test_right_value_under_the_wrong_label_does_not_count(markers, stock):
    answer = "1. primary ingress port: 44855\n2. metrics exporter port: 52677"
    g = grade(answer, markers, stock)
    assert not g["primary ingress port"]["correct"]
    assert not g["metrics exporter port"]["correct"]


def test_correct_answers_by_label_or_by_number(markers, stock):
    answer = ("1. Primary ingress port: 52677\n2. 44855\n"
              "3. shard count of the event store: 19 shards\n"
              "5. department that owns the migration: «Отдел Ригугур»")
    g = grade(answer, markers, stock)
    assert g["primary ingress port"]["correct"]
    assert g["metrics exporter port"]["correct"]  # line found by its number
    assert g["shard count of the event store"]["correct"]
    assert g["department that owns the migration"]["correct"]
    assert not g["database cutover time"]["correct"]
    assert not g["database cutover time"]["answered"]


def test_dropped_unit_counts_only_unit_leniently(markers, stock):
    g = grade("3. shard count of the event store: 19\n4. database cutover time: 01:26",
              markers, stock)
    for label in ("shard count of the event store", "database cutover time"):
        assert not g[label]["correct"]
        assert g[label]["correct_unit_lenient"]
    g = grade("1. primary ingress port: 5267", markers, stock)
    assert not g["primary ingress port"]["correct_unit_lenient"]  # no unit to drop


def test_abstention_is_detected_and_not_a_fabrication(markers, stock):
    g = grade("1. primary ingress port: unknown\n2. metrics exporter port: "
              "not mentioned in the summary", markers, stock)
    for label in ("primary ingress port", "metrics exporter port"):
        assert g[label]["abstained"] and not g[label]["fabricated"]
    assert not g["database cutover time"]["abstained"]


def test_fabrication_with_stock_signature(markers, stock):
    g = grade("1. primary ingress port: 8443\n2. metrics exporter port: 41237\n"
              "3. shard count of the event store: 16 shards\n"
              "4. database cutover time: 02:00 UTC", markers, stock)
    assert g["primary ingress port"]["fabricated"] and g["primary ingress port"]["stock_signature"]
    assert g["metrics exporter port"]["fabricated"]
    assert not g["metrics exporter port"]["stock_signature"]
    assert g["shard count of the event store"]["stock_signature"]
    assert g["database cutover time"]["stock_signature"]


def test_presence_in_carrier_uses_the_same_boundary_rule(markers, stock):
    g = grade("", markers, stock, carry="Identifiers\n- ingress 52677\n- exporter 448551")
    assert g["primary ingress port"]["in_carrier"]
    assert not g["metrics exporter port"]["in_carrier"]


def test_answer_lines_missing_label_is_none():
    assert answer_lines("nothing here", ["primary ingress port"]) == {"primary ingress port": None}


@pytest.mark.parametrize("carry, n", [
    ("Constraints\nx\nDecisions\ny\nIdentifiers\nz\nOpen issues\n-\nNext steps\n-", 5),
    ("## Constraints\n**Decisions**\nIdentifiers: 52677", 3),
    ("Constraints are tight. Decisions were made.", 0),
    ("", 0),
])
def test_headings_carried(carry, n):
    headings = ["Constraints", "Decisions", "Identifiers", "Open issues", "Next steps"]
    assert headings_carried(carry, headings) == n


def test_a_truncated_run_record_is_named_not_a_traceback(tmp_path):
    import pytest

    from foldstudy.grade.rows import RunRecordError, read_record

    p = tmp_path / "j.json"
    p.write_text('{"row_id": "s/m/r0/j", "folds": [{"fold": 0, "rep')
    with pytest.raises(RunRecordError, match=f"{p}: not a readable run record"):
        read_record(str(p))
    p.write_text('{"row_id": "s/m/r0/j"}')
    with pytest.raises(RunRecordError, match="without status, arm_spec, folds"):
        read_record(str(p))


def test_fold_headings_are_counted_from_each_recorded_carry(grading):
    """folds.csv counts each fold's headings and envelope from its carry, as rows.csv
    counts the final carry's; a record's own per-fold counts (older records froze them at
    run time) are not read, so an old record and a new one grade the same."""
    from foldstudy.grade.rows import grade_record

    from ..support import records

    headings = ["Constraints", "Decisions", "Identifiers", "Open issues", "Next steps"]
    carries = ["Constraints\n52677", "## Decisions\nIdentifiers: 52677", '{"summary": "x"}']
    new = records.record(carries)
    old = records.record(carries, folds=[{**records.fold(i, c), "headings_carried": 5,
                                          "json_envelope_carried": False}
                                   for i, c in enumerate(carries)])
    args = (records.fixture(3), grading["abstention_markers"],
            StockSignature.from_dict(grading["stock_signature"]), headings)
    graded = [grade_record(rec, *args) for rec in (new, old)]
    assert graded[0] == graded[1]
    row, _, folds = graded[0]
    assert [(f["headings_carried"], f["json_envelope_carried"]) for f in folds] == [
        (1, False), (2, False), (0, True)]
    assert (row["headings_carried"], row["json_envelope_carried"]) == (0, True)


class _Writes(Backend):
    """A backend that replies with one fixed text, counting tokens by the estimator."""

    kind = "fixed-reply-test"

    def __init__(self, text: str) -> None:
        self.text = text
        self.identity = {"backend": self.kind, "model": "toy"}

    @classmethod
    def describe(cls, name, cfg, pin=None):
        return {"backend": cls.kind, "model": name}

    def complete(self, request):
        return Reply(text=self.text, finish_reason="stop", prompt_tokens=1,
                     completion_tokens=1, token_count_method="estimate", latency_s=0.0,
                     served_by="toy")


def _fold(arm, text, tmp_path, resources):
    from foldstudy.run.fold import Caller, Prompts, Sample, fold_step

    from ..support import records

    prompts = Prompts.from_files(*(resources / "prompts" / n for n in (
        "fold_user.md.j2", "recall_system.md", "recall_user.md.j2")))
    # a store per reply: the request is the same each time, the reply is not
    caller = Caller(_Writes(text), ResponseStore(tmp_path / f"{arm.arm}-{len(text)}"),
                    Sample("s", "toy", arm.arm, 0, 0, 7))
    return fold_step(caller, arm, prompts, records.fixture(1), "", [0], 0, 0.2).to_dict()


def test_fill_and_clipping_measure_the_models_text_not_the_carrys_labels(
        arms, grading, tmp_path, resources):
    """Paper §4.9 ("within 0.5% of the declared ceiling") and §4.5 ("clipped on 17 of
    about 53 folds") are about what the model wrote. A t reply exactly at its 4,800-char
    ceiling fills it 1.0, not 1.0017 ("Summary\\n" is the carry's heading, not the
    model's); a full j reply is not clipped because the heading pushes the carry 2 tokens
    past the 2,400-token cap, though the carry sent on is still clipped as it was."""
    from foldstudy.grade.rows import grade_record

    from ..support import records

    t, j = arms["t"], arms["j"]
    assert (t.ceilings, j.ceilings, j.carry_cap_tokens) == (
        {"summary": 4800}, {"summary": 9600}, 2400)
    args = (records.fixture(1), grading["abstention_markers"],
            StockSignature.from_dict(grading["stock_signature"]), [])
    ft = _fold(t, json.dumps({"summary": "x" * 4800}), tmp_path, resources)
    assert ft["carry"] == "Summary\n" + "x" * 4800  # what the next fold receives
    assert (ft["carried_chars"], ft["model_chars"], ft["model_clipped"]) == (4808, 4800, False)
    rec = records.record([], arm="t", folds=[ft], arm_spec=t.to_dict())
    row, _, folds = grade_record(rec, *args)
    assert (row["carried_chars"], row["fill"], row["folds_clipped"]) == (4800, 1.0, 0)
    assert (folds[0]["carried_chars"], folds[0]["clipped"]) == (4800, False)
    fj = _fold(j, json.dumps({"summary": "y" * 9600}), tmp_path, resources)
    assert fj["carry"] == ("Summary\n" + "y" * 9600)[:9600] and fj["clipped"]
    assert (fj["model_chars"], fj["model_clipped"]) == (9592, False)
    row, _, _ = grade_record(records.record([], arm="j", folds=[fj], arm_spec=j.to_dict()), *args)
    assert row["folds_clipped"] == 0
    # The model's text past the cap is clipped, and only what survived is carried.
    fo = _fold(j, json.dumps({"summary": "z" * 9700}), tmp_path, resources)
    assert fo["model_clipped"] and fo["model_chars"] == 9592
    # A record from before model_chars grades as it did: on the carry, labels included.
    old = {k: v for k, v in ft.items() if k not in ("model_chars", "model_clipped")}
    row, _, _ = grade_record(records.record([], arm="t", folds=[old], arm_spec=t.to_dict()), *args)
    assert (row["carried_chars"], row["fill"]) == (4808, 4808 / 4800)


FILLED = "\n".join(f"{i}. {f.label}: 8443" for i, f in enumerate(FACTS, start=1))


@pytest.mark.parametrize("answer, anywhere, prefix", [
    # a preamble that abstains, then every line filled with a stand-in value
    ("I do not know most of these values; the summary does not hold them.\n" + FILLED,
     True, True),
    (FILLED + "\nThe rest is not in the summary.", True, True),  # a closing line
    ("1. primary ingress port: unknown\n" + FILLED[FILLED.index("\n") + 1:], True, True),
    ("x" * 400 + "\nI do not know the others.\n" + FILLED, True, False),  # past char 400
    (FILLED, False, False),
])
def test_a_row_abstains_when_its_answer_holds_a_marker_anywhere(
        answer, anywhere, prefix, markers, stock):
    """Paper §4.11: failing rows classified "by whether its answer contains any
    abstention marker at all", and its counts "computed on that prefix" (400 chars).
    rows.csv's abstained reads the whole answer, abstained_prefix400 its first 400
    characters; checks.csv's abstained stays per label line."""
    from foldstudy.grade.rows import grade_record

    from ..support import records

    fixture = records.fixture(1, facts=tuple(FACTS))
    row, checks, _ = grade_record(records.record(["no identifiers"], answer=answer), fixture,
                                  markers, stock, [])
    assert (row["abstained"], row["abstained_prefix400"]) == (anywhere, prefix)
    by_label = {c["label"]: c["abstained"] for c in checks}
    on_a_line = answer.startswith("1. primary ingress port: unknown")
    assert by_label["primary ingress port"] is on_a_line
    assert not any(v for k, v in by_label.items() if k != "primary ingress port")
    assert row["n_correct"] == 0


# Paper §4.11: "whether its answer contains any abstention marker at all". A marker is a
# phrase of abstention; "none" and "unknown" are one only as a line's whole value or
# inside such a phrase, and a typographic apostrophe reads as the plain one.
@pytest.mark.parametrize("text, abstains", [
    ("I don\u2019t know the release tag.", True),
    ("I don\u2018t know", True),
    ("i can\u2019t determine it", True),
    ("4. release tag: unknown", True),
    ("- **Release tag**: None.", True),
    ("none", True),
    ("Unknown", True),
    ("The value is unknown.", True),
    ("none given in the summary", True),
    ("(None of the values were changed.)", False),
    ("5. cache origin URL: https://unknown-host.example/", False),
    ("origin https://cdn.none-such.example/a", False),
    ("None of the five headings was kept, but the port is 52677", False),
    ("the unknown-host entry was removed", False),
])
def test_abstention_markers_read_apostrophes_and_whole_values(markers, text, abstains):
    assert abstention_in(text, markers) is abstains


def test_the_prefix400_and_anywhere_definitions_are_kept(markers):
    """§4.11's table: `abstained` anywhere in the answer, `abstained_prefix400` on its
    first 400 characters (the prefix the paper kept)."""
    late = "1. primary ingress port: 52677\n" + "x" * 420 + "\n5. release tag: unknown"
    assert answer_abstains(late, markers) == (True, False)
    early = "5. release tag: unknown\n" + "x" * 420
    assert answer_abstains(early, markers) == (True, True)
