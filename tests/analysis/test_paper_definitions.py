"""The paper's definitions of the carrier cross-tab, abstention, the fill table, the
all-arm parse line and §4.5's fold count, on small hand-built evidence.

Each population is the paper's: the cross-tab reads only rows whose carrier was recorded
(§4.10), a row abstains when its answer holds a marker anywhere (§4.11), the fill table
pools a model's sweeps (§4.6), and the parse and non-conforming counts include invalid
rows (§6, §4.5). A carrier that cannot exist (an answer right about a value the recorded
carrier lacks) is refused by row and label.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from foldstudy.analysis.cells import valid_rows
from foldstudy.analysis.headings import carrier_crosstab
from foldstudy.analysis.instrument import abstention
from foldstudy.analysis.numbers import compute_numbers
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.scopes import Scopes
from foldstudy.evidence.load import (
    EvidenceError,
    evidence_package_problem,
    load_evidence,
    write_table,
)

from ..conftest import RESOURCES
from ..support.evidence_rows import arm_rows, frames, row

PLAN = AnalysisPlan.load()
POOLED = Scopes.from_config({a: {"pool": True} for a in (
    "carrier", "abstention", "parse", "capacity", "fill_table", "invalid")})


def _package(tmp_path, rows, checks):
    write_table(rows, tmp_path / "rows.csv")
    write_table(checks, tmp_path / "checks.csv")
    return tmp_path


def _unrecord(rows: pd.DataFrame, checks: pd.DataFrame, row_ids) -> None:
    """The carrier of these rows was not recorded: both columns empty (docs/design.md §8)."""
    rows.loc[rows["row_id"].isin(row_ids), "carrier_present"] = None
    checks["in_carrier"] = checks["in_carrier"].astype(object)
    checks.loc[checks["row_id"].isin(row_ids), "in_carrier"] = None


@pytest.fixture
def carrier_evidence():
    """Two arms over two sweeps; the carrier recorded on the s1 rows only. On one q row
    the carrier held a value the answer missed."""
    recs = (arm_rows("s1", "m1", "q", [0.5, 1.0, 0.8]) + arm_rows("s1", "m1", "j", [0.2, 0.6])
            + arm_rows("s2", "m1", "q", [0.0, 0.3]) + arm_rows("s2", "m1", "j", [0.1]))
    rows, checks = frames(recs)
    first = checks.index[(checks["row_id"] == "s1/m1/r0/q") & ~checks["correct"]][0]
    checks.loc[first, "in_carrier"] = True
    rows.loc[rows["row_id"] == "s1/m1/r0/q", "carrier_present"] += 1
    _unrecord(rows, checks, rows.loc[rows["sweep"] == "s2", "row_id"])
    return rows, checks


def test_a_package_with_unrecorded_carriers_is_read_and_only_recorded_rows_cross(
        carrier_evidence, tmp_path):
    rows, checks = load_evidence(_package(tmp_path, *carrier_evidence), PLAN.arm_order)
    cc = carrier_crosstab(valid_rows(rows), checks, PLAN).set_index("arm")
    assert cc.loc["q", "rows"] == 3 and cc.loc["j", "rows"] == 2  # s1's rows only
    assert (cc.loc["q", "missed"], cc.loc["q", "missed_checks"]) == (1, 1)
    n = compute_numbers(rows, checks, PLAN, POOLED)
    assert (n["carrier.rows"], n["carrier.valid_rows"]) == (5, 8)
    assert (n["carrier.agree"], n["carrier.missed"], n["carrier.answer_beyond_carrier"]) == (
        4, 1, 0)
    assert (n["carrier.missed[q]"], n["carrier.missed[j]"]) == (1, 0)


@pytest.mark.parametrize("break_it, words", [
    (lambda r, c: r.__setitem__("carrier_present", r["carrier_present"].where(
        r["row_id"] != "s1/m1/r1/q")), ["carrier_present is empty", "s1/m1/r1/q"]),
    (lambda r, c: c.__setitem__("in_carrier", c["in_carrier"].where(
        c["row_id"] != "s1/m1/r1/j")), ["in_carrier empty", "s1/m1/r1/j"]),
    (lambda r, c: c.__setitem__("in_carrier", c["in_carrier"].mask(
        c.index.isin(c.index[c["row_id"] == "s1/m1/r2/q"][:3]))),
     ["in_carrier is empty on 3 of the 10 checks", "s1/m1/r2/q"]),
])
def test_carrier_present_and_in_carrier_are_empty_together(carrier_evidence, tmp_path,
                                                           break_it, words):
    rows, checks = (f.copy() for f in carrier_evidence)
    break_it(rows, checks)
    with pytest.raises(EvidenceError) as e:
        load_evidence(_package(tmp_path, rows, checks), PLAN.arm_order)
    assert all(w in str(e.value) for w in words), str(e.value)


def _traced(tmp_path, rows, checks, opaque=(), empty_lines=0):
    """The package with its fact trace; the rows in `opaque` had an opaque carry (issue
    44: present empty on every line, carrier_present and in_carrier empty), and the
    first `empty_lines` lines of the first recorded row have present empty too."""
    from ..support.synthetic import synthetic_trace

    _unrecord(rows, checks, opaque)
    trace = synthetic_trace(checks).astype({"present": object})
    trace.loc[trace["row_id"].isin(opaque), "present"] = None
    recorded = trace.index[trace["row_id"] == "s1/m1/r0/q"]
    trace.loc[recorded[:empty_lines], "present"] = None
    _package(tmp_path, rows, checks)
    write_table(trace, tmp_path / "trace.csv")
    return tmp_path


def test_an_opaque_run_leaves_present_empty_on_every_trace_line_and_its_carrier_empty(
        carrier_evidence, tmp_path):
    """An opaque carry is neither kept nor lost, so trace.csv's present is empty
    on all of its run's lines, as its row's carrier_present is; anything between is
    refused naming the trace line."""
    rows, checks = (f.copy() for f in carrier_evidence)
    load_evidence(_traced(tmp_path / "ok", rows, checks, opaque=["s1/m1/r1/j"]), PLAN.arm_order)
    # the study's arms name who may be opaque (their carrier kinds): j never is
    with pytest.raises(EvidenceError) as e:
        load_evidence(tmp_path / "ok", PLAN.arm_order, None, PLAN.opaque_arms)
    assert str(e.value).startswith("trace.csv: column present is empty on line ")
    assert ("row 's1/m1/r1/j' of arm 'j' claims an opaque carry, which its carrier kind "
            "never has (arms whose carry may be opaque: native native_keep2)") in str(e.value)
    rows, checks = (f.copy() for f in carrier_evidence)
    with pytest.raises(EvidenceError) as e:
        load_evidence(_traced(tmp_path / "part", rows, checks, empty_lines=3), PLAN.arm_order)
    assert "trace.csv: column present is empty on line 2" in str(e.value)
    assert "on 3 of the 50 lines of row 's1/m1/r0/q'" in str(e.value)
    rows, checks = (f.copy() for f in carrier_evidence)
    with pytest.raises(EvidenceError) as e:
        load_evidence(_traced(tmp_path / "all", rows, checks, empty_lines=50), PLAN.arm_order)
    assert "whose carrier_present in rows.csv is recorded" in str(e.value), str(e.value)


def test_an_answer_beyond_its_carrier_is_counted_in_a_package_and_here_alike(
        carrier_evidence, tmp_path):
    """Paper §4.10: "There is not a single row in which the answer was right about a fact
    the carrier did not contain". One rule for a package and this checkout's own
    evidence: such a row loads in both, `carrier.answer_beyond_carrier` counts it, and the
    paper's sentence is a claim verify reports as not reproduced, never a refusal (so the
    release of any study the checkout made rebuilds from its package)."""
    from foldstudy.release.claims import claim_mismatches, judge_claims

    rows, checks = (f.copy() for f in carrier_evidence)
    i = checks.index[(checks["row_id"] == "s1/m1/r1/q") & checks["correct"]][2]
    checks.loc[i, "in_carrier"] = False
    rows.loc[rows["row_id"] == "s1/m1/r1/q", "carrier_present"] -= 1
    d = _package(tmp_path, rows, checks)
    assert evidence_package_problem(d, PLAN.arm_order, PLAN.scenarios, {}) is None
    rows, checks = load_evidence(d, PLAN.arm_order)
    n = compute_numbers(rows, checks, PLAN, POOLED)
    assert n["carrier.answer_beyond_carrier"] == 1
    claims = yaml.safe_load((RESOURCES / "claims/paper.yaml").read_text())["claims"]
    claim = [c for c in claims if c["key"] == "carrier.answer_beyond_carrier"]
    assert claim and claim[0]["value"] == 0 and claim[0]["where"] == "§4.10"
    for package in (True, False):
        (v,) = judge_claims(claim, n, package)
        assert v.verdict == "not reproduced" and claim_mismatches([v], "paper.yaml") == []
    (v,) = judge_claims(claim, {**n, "carrier.answer_beyond_carrier": 0}, True)
    assert v.verdict == "reproduced"


def test_an_answer_beyond_its_carrier_is_said_once_naming_the_first_row(
        carrier_evidence, tmp_path, caplog):
    """Such a row was counted in `carrier.answer_beyond_carrier` and said nowhere
    else. The stats job warns once: how many rows, the first row and its label."""
    import logging

    from foldstudy.analysis.numbers import write_numbers

    rows, checks = (f.copy() for f in carrier_evidence)
    for rid in ("s1/m1/r1/q", "s1/m1/r0/q"):
        i = checks.index[(checks["row_id"] == rid) & checks["correct"]][0]
        checks.loc[i, "in_carrier"] = False
        rows.loc[rows["row_id"] == rid, "carrier_present"] -= 1
    first = checks[(checks["correct"]) & (checks["in_carrier"] == False)].iloc[0]  # noqa: E712
    out = tmp_path / "stats"
    with caplog.at_level(logging.WARNING, logger="foldstudy.analysis.numbers"):
        write_numbers(_package(tmp_path, rows, checks), out / "n.json", out / "p.json",
                      out / "n.tex", PLAN, POOLED)
    said = [r.getMessage() for r in caplog.records if "carrier lacked" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("2 valid row(s) answer a fact right that their carrier lacked")
    assert f"the first: row {first['row_id']!r}, label {first['label']!r}" in said[0]


def test_abstention_table_counts_the_whole_answer_and_its_prefix():
    """Two failing rows abstain in the answer, one only past character 400: the whole-
    answer count holds both, the prefix count (the paper's) one."""
    recs = [row("s", "m", "j", i, 2, abstained=a, abstained_prefix400=p)
            for i, (a, p) in enumerate([(True, True), (True, False), (False, False)])]
    recs.append(row("s", "m", "j", 3, 12, abstained=False, abstained_prefix400=False))
    rows, _ = frames(recs)
    ab = abstention(valid_rows(rows), PLAN).set_index("arm").loc["j"]
    assert (ab["failing_rows"], ab["abstains"], ab["fabricates"]) == (3, 2, 1)
    assert (ab["abstains_prefix400"], ab["fabricates_prefix400"]) == (1, 2)
    old = rows.drop(columns="abstained_prefix400")  # a package from before the column
    assert pd.isna(abstention(valid_rows(old), PLAN).loc[0, "abstains_prefix400"])


def test_fill_table_pools_each_models_sweeps():
    """Paper §4.6: granite-4.1-8b's 16 rows are its 4 partition rows and 12 depth rows."""
    recs = (arm_rows("partition", "g", "j", [0.1] * 4, fill=0.2)
            + arm_rows("depth", "g", "j", [0.4] * 12, fill=0.4)
            + arm_rows("depth", "g", "o", [1.0] * 3))  # no ceiling: not a line
    rows, checks = frames(recs)
    sc = Scopes.from_config({"fill_table": {"sources": {"g": {"j": ["partition", "depth"]}}}})
    n = compute_numbers(rows, checks, PLAN, sc)
    assert n["fill_table.rows[g/j]"] == 16
    assert n["fill_table.fill[g/j]"] == pytest.approx((4 * 0.2 + 12 * 0.4) / 16)
    assert n["fill_table.mean[g/j]"] == pytest.approx((4 * 0.1 + 12 * 0.4) / 16)
    assert not any(k.startswith("fill_table.") and "/o]" in k for k in n)


def test_parse_lines_and_nonconforming_folds_count_invalid_rows():
    """Paper §6: "Over all arms the counts are 63 rows carrying a parse failure, 57
    valid"; §4.5: "j fails to produce a conforming fold on 4 of 60 folds" (its catch-up
    row among the 60)."""
    recs = (arm_rows("c", "m", "j", [0.2, 0.3, 1.0])
            + arm_rows("c", "m", "t", [0.1, 0.2]) + arm_rows("c", "m", "m", [1.0, 1.0]))
    recs[0]["schema_invalid_folds"] = 1
    recs[1]["parse_failures"] = 1
    recs.append(row("c", "m", "j", 3, 0, k=10, valid=False, catchup_fired=True,
                    invalid_reason="catchup_fired", parse_failures=1))
    recs[5]["parse_failures"] = 1  # an m row
    rows, checks = frames(recs)
    n = compute_numbers(rows, checks, PLAN, POOLED)
    assert (n["capacity.nonconforming_folds[j]"], n["capacity.folds_all[j]"]) == (3, 20)
    assert (n["capacity.n[j]"], n["capacity.folds[j]"]) == (3, 15)
    assert (n["parse.all_arms.rows_with_failure"], n["parse.all_arms.valid_with_failure"]) == (
        3, 2)
    assert n["parse.all_arms.mean_with_failure"] == pytest.approx((0.3 + 1.0) / 2)
    assert n["parse.all_arms.rows_clean"] == 5
    assert (n["parse.single_field.rows_with_failure"],
            n["parse.single_field.valid_with_failure"]) == (2, 1)
