"""The per-fold fact trace (docs/design.md §8) and the losses read from it (paper §4.10), on run
records built by hand: no model."""

from __future__ import annotations

import matplotlib.pyplot as plt

from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.evidence import columns
from foldstudy.grade.trace import fact_trace
from foldstudy.report.trace import (
    DROPPED,
    MISSED_IN_ANSWER,
    NEVER_CARRIED,
    RECALLED,
    fact_losses,
    losses_by_arm,
    trace_figure,
)

from ..support import records

PORT, ZONE, SHARDS = records.PORT.label, records.ZONE.label, records.SHARDS.label


def lines(record, fixture=None):
    return {(t["label"], t["fold"]): t for t in fact_trace(record, fixture or records.fixture())}


def test_a_fact_present_at_folds_1_and_2_and_gone_at_3():
    rec = records.record(["port 52677 noted", "keep port 52677; zone ranir.lasetot.lan",
                          "zone ranir.lasetot.lan, 19 shards", "zone ranir.lasetot.lan"])
    t = lines(rec)
    assert [t[(PORT, f)]["present"] for f in (1, 2, 3, 4)] == [True, True, False, False]
    assert {t[(PORT, f)]["planted_fold"] for f in (1, 2, 3, 4)} == {1}
    assert t[(ZONE, 1)]["planted_fold"] == 2 and t[(SHARDS, 3)]["planted_fold"] == 3
    # one line per graded fact and fold made; the planted-but-never-asked fact has none
    assert len(t) == 3 * 4 and not any(k[0] == records.TENANT.label for k in t)
    assert set(fact_trace(rec, records.fixture())[0]) == set(columns.TRACE)


def test_presence_is_the_graders_whole_token_rule():
    rec = records.record(["port 526771", "port 52677.5", "(52677).", "x"])
    t = lines(rec)
    assert [t[(PORT, f)]["present"] for f in (1, 2, 3, 4)] == [False, False, True, False]


def test_a_catch_up_fold_carries_two_chunks_under_its_last_chunks_number():
    # fold 2 overflowed: its chunk 1 was folded together with chunk 2 at fold 3
    folds = [records.fold(0, "52677"),
             records.fold(2, "52677 ranir.lasetot.lan 19 shards", chunks=[1, 2]),
             records.fold(3, "52677")]
    rec = records.record([], folds=folds, catchup_fired=True)
    t = lines(rec)
    assert sorted({f for _, f in t}) == [1, 3, 4]
    assert t[(ZONE, 3)]["planted_fold"] == 3 and t[(SHARDS, 3)]["planted_fold"] == 3
    assert t[(PORT, 1)]["planted_fold"] == 1


def test_a_not_run_record_has_no_trace_and_a_cut_short_run_dates_unreached_facts():
    assert fact_trace(records.not_run(), records.fixture()) == []
    rec = records.record(["52677"], infra_error={"kind": "timeout", "message": "", "turn": "fold1"})
    t = lines(rec)
    assert set(t) == {(PORT, 1), (SHARDS, 1), (ZONE, 1)}
    assert t[(SHARDS, 1)]["planted_fold"] == 3  # the fold it was due in


def graded(recs, fixture=None, tmp_path=None, grading=None):
    return records.graded_frames(recs, tmp_path, grading, fixture)


def test_every_missed_fact_gets_one_kind_and_the_read_loss_matches_the_carrier(
        tmp_path, grading):
    # port: carried at 1-2, dropped at 3; zone: carried to the end, answer misses it;
    # shards: never carried; the second run recalls the port from its final carry.
    a = records.record(["52677", "52677 ranir.lasetot.lan", "ranir.lasetot.lan",
                        "ranir.lasetot.lan"],
                       answer="1. primary ingress port: unknown\n2. DNS zone for the new records: "
                              "example.lan\n3. shard count of the event store: 16 shards")
    b = records.record(["52677", "52677", "52677", "52677"], repeat=1,
                       answer="1. primary ingress port: 52677")
    rows, checks, trace = graded([a, b, records.not_run()], tmp_path=tmp_path, grading=grading)
    losses = fact_losses(trace, checks, rows)
    kind = {(r["row_id"], r["label"]): r for r in losses.to_dict("records")}
    assert kind[(a["row_id"], PORT)]["kind"] == DROPPED
    assert kind[(a["row_id"], PORT)]["lost_at_fold"] == 3
    assert kind[(a["row_id"], PORT)]["last_carried_fold"] == 2
    assert kind[(a["row_id"], ZONE)]["kind"] == MISSED_IN_ANSWER
    assert kind[(a["row_id"], SHARDS)]["kind"] == NEVER_CARRIED
    assert kind[(b["row_id"], PORT)]["kind"] == RECALLED
    assert len(losses) == 2 * 3  # valid rows only: the not_run row has no fact
    # the read's loss is exactly checks.csv's carrier-had-it-answer-missed-it (§4.10)
    missed = checks[checks["in_carrier"] & ~checks["correct"]]
    assert set(zip(missed["row_id"], missed["label"], strict=True)) == {
        k for k, r in kind.items() if r["kind"] == MISSED_IN_ANSWER}
    table = losses_by_arm(losses, AnalysisPlan.load())
    assert table.to_dict("records") == [{
        "sweep": "s", "arm": "m", "rows": 2, "facts": 6, "never_carried": 3, "dropped": 1,
        "dropped_at": "3: 1", "missed_in_answer": 1, "recalled": 1}]


def test_the_fact_trace_figure_is_the_fact_survival_figure(tmp_path, grading):
    recs = [records.record(["52677", "52677", "x", "x"], arm="m"),
            records.record(["52677", "52677 ranir.lasetot.lan", "ranir.lasetot.lan 19 shards",
                            "19 shards"], arm="q")]
    rows, checks, trace = graded(recs, tmp_path=tmp_path, grading=grading)
    fig = trace_figure(trace, checks, rows, AnalysisPlan.load())
    ax = fig.axes[0]
    arm_lines = [x.get_label() for x in ax.get_lines() if not x.get_label().startswith("_")]
    assert [x.split()[0] for x in arm_lines] == ["q", "m"]  # arms.yaml order
    assert ax.get_xlabel() == "folds after the fold that planted the fact (k)"
    # m keeps the port (planted at fold 1) through fold 2: k = 0, 1 of 0..3
    m = next(x for x in ax.get_lines() if x.get_label().startswith("m "))
    assert list(m.get_xdata()) == [0, 1, 2, 3]
    assert [round(y, 3) for y in m.get_ydata()] == [0.333, 0.333, 0.0, 0.0]
    plt.close(fig)
    empty = trace_figure(None, checks, rows, AnalysisPlan.load())
    assert "no fact trace" in empty.axes[0].texts[0].get_text()
    plt.close(empty)
