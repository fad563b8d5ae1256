"""numbers.json: the contract keys, the validity filter, the paper's counts end to end."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from foldstudy.analysis import stats
from foldstudy.analysis.macros import latex_macros, macro_name
from foldstudy.analysis.numbers import compute_numbers
from foldstudy.analysis.plan import DEFAULT_ANALYSIS, DEFAULT_ARMS, AnalysisPlan
from foldstudy.analysis.scopes import Scopes
from foldstudy.evidence import columns
from foldstudy.evidence.load import EvidenceError, load_evidence, write_table

from ..support.evidence_rows import arm_rows, frames, full, row
from ..support.synthetic import SCOPES, synthetic_package

SC = Scopes.from_config(SCOPES)
ARMS = AnalysisPlan.load().arm_order  # the arm ids load_evidence checks rows.csv against

CONTRACT = ["icc.value", "icc.k", "icc.n_rows", "icc.design_effect", "icc.effective_n_per_row",
            "headings.r", "headings.n_rows", "fill.r", "fill.n_models"]


@pytest.fixture(scope="module")
def package():
    return synthetic_package(620, seed=3)


@pytest.fixture(scope="module")
def numbers(package):
    return compute_numbers(*package, scopes=SC)


def test_contract_keys_flat_finite_and_deterministic(package, numbers):
    assert set(CONTRACT) <= set(numbers)
    assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers.values())
    assert all(math.isfinite(v) for v in numbers.values())
    assert compute_numbers(*package, scopes=SC) == numbers
    json.dumps(numbers, allow_nan=False)


def test_contract_keys_against_independent_computations(package, numbers):
    rows, checks = package
    valid = rows[rows["valid"]]
    prim = valid[valid["scenario"] == "distributed"]
    c = checks[checks["row_id"].isin(prim["row_id"])]
    icc = stats.icc1(c["row_id"], c["correct"].astype(float))
    assert numbers["icc.value"] == pytest.approx(icc.value)
    assert numbers["icc.n_rows"] == prim["row_id"].nunique() == icc.n_rows
    assert numbers["icc.design_effect"] == pytest.approx(
        1 + (numbers["icc.k"] - 1) * numbers["icc.value"])
    assert numbers["icc.effective_n_per_row"] == pytest.approx(
        numbers["icc.k"] / numbers["icc.design_effect"])
    h = prim[["headings_carried", "recall"]].dropna()  # distributed rows only
    assert numbers["headings.r"] == pytest.approx(np.corrcoef(h.iloc[:, 0], h.iloc[:, 1])[0, 1])
    assert numbers["headings.n_rows"] == len(h)
    anchor = prim[prim["sweep"] == "anchor"]  # the partition scope's one sweep
    j = anchor[anchor["arm"] == "j"].groupby("model")[["fill", "recall"]].mean()
    j = j[j.index.isin(anchor.loc[anchor["arm"] == "q", "model"])]  # models with the pair
    assert numbers["fill.r"] == pytest.approx(np.corrcoef(j["fill"], j["recall"])[0, 1])
    assert numbers["fill.n_models"] == len(j)


def test_only_rows_the_validity_rule_admitted_enter_a_mean():
    rows = arm_rows("s", "m1", "j", [1.0, 0.0, 0.0])
    rows[0]["valid"], rows[0]["invalid_reason"] = False, "catchup_fired"
    rows[0]["catchup_fired"] = True
    n = compute_numbers(*frames(rows))
    assert n["recall.mean[s/m1/j]"] == 0.0 and n["recall.n[s/m1/j]"] == 2
    assert n["rows.n_invalid"] == 1 and n["rows.catchup_fired"] == 1
    # Flip it: the same row admitted moves the mean; nothing else decides validity.
    rows[0]["valid"] = True
    assert compute_numbers(*frames(rows))["recall.mean[s/m1/j]"] == pytest.approx(1 / 3)


def test_ladder_fisher_from_the_papers_counts():
    # Paper §4.3: q reaches full recall on 1 of 10 rows, m on 8 of 10: p = 0.0055.
    rows = (arm_rows("s5", "qwen", "j", [0.0] * 10) + arm_rows("s5", "qwen", "q", full(1, 10))
            + arm_rows("s5", "qwen", "m", full(8, 10)))
    n = compute_numbers(*frames(rows))
    assert n["ladder.fisher_full[q/m].a"] == 1 and n["ladder.fisher_full[q/m].b"] == 8
    assert round(n["ladder.fisher_full[q/m].p"], 4) == 0.0055
    assert n["ladder.n[q]"] == 10
    assert n["ladder.effect.diff[m/q]"] == pytest.approx(np.mean(full(8, 10)) -
                                                          np.mean(full(1, 10)))
    assert n["ladder.effect.ci_low[m/q]"] <= n["ladder.effect.diff[m/q]"] \
        <= n["ladder.effect.ci_high[m/q]"]


def test_capacity_representation_contrast_from_the_papers_counts():
    # Paper §4.5: j 3/11 and t 1/12 rows recalled against m 4/4 and u 4/4 -> 4/23 vs 8/8.
    rows = (arm_rows("cap", "a", "j", [1.0] * 3 + [0.0] * 8)
            + arm_rows("cap", "a", "t", [1.0] + [0.0] * 11)
            + arm_rows("cap", "a", "m", [1.0] * 4) + arm_rows("cap", "a", "u", [1.0] * 4))
    n = compute_numbers(*frames(rows))
    assert (n["capacity.fisher_representation.a"], n["capacity.fisher_representation.n1"],
            n["capacity.fisher_representation.b"], n["capacity.fisher_representation.n2"]) == (
        4, 23, 8, 8)
    assert f"{n['capacity.fisher_representation.p']:.2g}" == "6.3e-05"
    assert n["capacity.rows_recalled[j]"] == 3 and n["capacity.n[t]"] == 12


def _partition_rows(spec):
    rows = []
    for model, (j, q, fill) in spec.items():
        rows += arm_rows("s", model, "j", [j] * 4, k=1000, fill=fill)
        rows += arm_rows("s", model, "q", [q] * 4, k=1000)
    return rows


def test_partition_classes_follow_the_analysis_plan():
    plan = AnalysisPlan.load()
    spec = {  # model: (j recall, q recall, j fill)
        "over1": (0.0, 0.9, 0.99), "over2": (0.2, 0.7, 0.81), "over3": (0.1, 0.6, 0.85),
        "under1": (0.0, 0.16, 0.06), "under2": (0.3, 0.25, 0.36),
        "border": (0.49, 0.52, 0.59), "ok": (0.9, 0.8, 0.7),
    }
    n = compute_numbers(*frames(_partition_rows(spec)), plan)
    assert n["partition.n_models"] == 7
    assert n["partition.n_failing"] == 6 and n["partition.n_rescued"] == 4
    assert n["partition.borderline[border]"] == 1 and n["partition.failing[ok]"] == 0
    assert n["failure_mode.models[under_writing]"] == 2
    assert n["failure_mode.rescued[under_writing]"] == 0
    assert n["failure_mode.rescued[over_writing]"] == 4
    assert n["partition.gap[ok]"] == pytest.approx(-0.1)
    assert n["partition.mean_gap_working"] == pytest.approx(-0.1)
    # Complete separation: the 2 non-rescued are the 2 lowest fills of 6 -> 1/C(6,2).
    assert n["separation.complete[all]"] == 1
    assert n["separation.weight[all]"] == pytest.approx(1 / 15)
    assert n["separation.margin[all]"] == pytest.approx(0.59 - 0.36)
    # Without the borderline model the margin widens (0.81 - 0.36) and 1/C(5,2).
    assert n["separation.margin[excluding_borderline]"] == pytest.approx(0.81 - 0.36)
    assert n["separation.weight[excluding_borderline]"] == pytest.approx(1 / 10)


def test_a_statistic_without_data_has_no_key():
    n = compute_numbers(*frames(arm_rows("s", "m1", "m", [1.0, 1.0])))
    assert not any(k.startswith(("iteration.mean", "ladder.mean", "fill.r", "partition.n"))
                   for k in n)
    assert n["recall.mean[s/m1/m]"] == 1.0


def _write(tmp_path, rows, checks):
    write_table(rows, tmp_path / "rows.csv")
    write_table(checks, tmp_path / "checks.csv")
    return tmp_path


def test_load_evidence_round_trip(tmp_path, package):
    rows, checks = load_evidence(_write(tmp_path, *package), ARMS)
    assert len(rows) == 620 and rows["valid"].dtype == bool
    # The CSV keeps six significant digits, so the numbers agree to that precision.
    again, direct = compute_numbers(rows, checks), compute_numbers(*package)
    assert again.keys() == direct.keys()
    assert all(again[k] == pytest.approx(direct[k], rel=1e-4, abs=1e-6) for k in direct)


@pytest.mark.parametrize("column, file", [("fill", "rows.csv"), ("valid", "rows.csv"),
                                          ("in_carrier", "checks.csv")])
def test_load_evidence_names_a_missing_column(tmp_path, package, column, file):
    rows, checks = package
    _write(tmp_path, rows.drop(columns=[column]) if file == "rows.csv" else rows,
           checks.drop(columns=[column]) if file == "checks.csv" else checks)
    with pytest.raises(EvidenceError, match=rf"{file}: missing column\(s\) {column}"):
        load_evidence(tmp_path, ARMS)


def test_load_evidence_names_a_malformed_column(tmp_path, package):
    rows, checks = package
    d = _write(tmp_path, rows, checks)
    text = (d / "rows.csv").read_text().splitlines()
    header = text[0].split(",")
    cells = text[3].split(",")
    cells[header.index("headings_carried")] = "five"
    text[3] = ",".join(cells)
    (d / "rows.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(EvidenceError, match="column headings_carried is malformed: 'five' on "
                                            "line 4"):
        load_evidence(d, ARMS)
    write_table(rows, d / "rows.csv")
    bad = checks.astype({"correct": object})
    bad.loc[5, "correct"] = "yes"
    pd.DataFrame(bad).to_csv(d / "checks.csv", index=False)
    with pytest.raises(EvidenceError, match="column correct is malformed"):
        load_evidence(d, ARMS)


def test_load_evidence_checks_a_manifest_when_present(tmp_path, package):
    from foldstudy.evidence.provenance import build_manifest

    d = _write(tmp_path, *package)
    manifest = build_manifest({"rows.csv": d / "rows.csv", "checks.csv": d / "checks.csv"}, {})
    (d / "manifest.json").write_text(json.dumps(manifest))
    load_evidence(d, ARMS)
    with open(d / "rows.csv", "a") as f:
        f.write((d / "rows.csv").read_text().splitlines()[1] + "\n")
    with pytest.raises(EvidenceError, match="manifest.json: .*rows.csv"):
        load_evidence(d, ARMS)


def test_one_latex_macro_per_number(numbers):
    tex = latex_macros(numbers)
    names = re.findall(r"\\newcommand\{\\([^}]*)\}", tex)
    assert len(names) == len(numbers) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z]+", n) for n in names)
    assert macro_name("icc.value") == "fsIccValue"
    assert macro_name("recall.mean[main/qwen3.5-9b/j]") == "fsRecallMeanMainQwenThreeFiveNinebJ"
    collide = latex_macros({"a.b1": 1, "a.b-1": 2})
    assert len(set(re.findall(r"\\newcommand\{\\([^}]*)\}", collide))) == 2


def test_contract_columns_are_required():
    assert columns.ROWS_REQUIRED[-1] == "system_prompt_sha256"
    assert set(columns.CHECKS_REQUIRED) == {"row_id", "label", "fact_class", "expected",
                                            "in_carrier", "correct", "correct_unit_lenient",
                                            "abstained"}


def test_load_evidence_checks_folds_when_present(tmp_path, package):
    d = _write(tmp_path, *package)
    cols = [c for c in columns.FOLDS_REQUIRED if c != "finish_reason"]
    (d / "folds.csv").write_text(",".join(cols) + "\n")
    with pytest.raises(EvidenceError, match=r"folds.csv: missing column\(s\) finish_reason"):
        load_evidence(d, ARMS)
    (d / "folds.csv").write_text(",".join(columns.FOLDS_REQUIRED) + "\n")
    (d / "probes.csv").write_text("model,endpoint\nm1,x\n")
    with pytest.raises(EvidenceError, match=r"probes.csv: missing column\(s\) verdict"):
        load_evidence(d, ARMS)
    (d / "probes.csv").write_text("model,verdict\nm1,ok\n")
    load_evidence(d, ARMS)


def test_recall_is_the_exact_fraction_and_must_agree_with_its_counts(tmp_path):
    # 13/14 and 1/14 print as 0.928571 and 0.0714286: their printed mean is a hair under
    # 0.5, the exact one is 0.5, so the model is not failing (failing_recall 0.5).
    rows = (arm_rows("s", "m1", "j", [13 / 14, 1 / 14], k=14, fill=0.7)
            + arm_rows("s", "m1", "q", [1.0, 1.0], k=14))
    d = _write(tmp_path, *frames(rows))
    n = compute_numbers(*load_evidence(d, ARMS))
    assert n["partition.j_mean[m1]"] == 0.5 and n["partition.failing[m1]"] == 0
    r, c = frames(rows)
    r.loc[0, "recall"] = 0.5
    _write(tmp_path, r, c)
    with pytest.raises(EvidenceError, match="column recall is malformed: 0.5 on row "
                                            "'s/m1/r0/j' is not n_correct / n_graded"):
        load_evidence(tmp_path, ARMS)


def test_rows_at_their_ceiling_count_the_target_behaviour():
    # Paper §4.9: the halved-ceiling arm's carry lands at its ceiling: fill >= 0.995.
    rows = (arm_rows("s", "m1", "t", [0.0] * 3, fill=0.997)
            + arm_rows("s", "m1", "t", [0.0], fill=0.9) + arm_rows("s", "m1", "m", [1.0]))
    for r in rows:
        if r["arm"] == "t":
            r["finish_stop"], r["finish_length"] = 4, 1
    n = compute_numbers(*frames(rows))
    assert n["finish.rows_at_ceiling[t]"] == 3 and n["finish.rows_with_ceiling[t]"] == 4
    assert n["finish.stop[t]"] == 16 and n["finish.length[t]"] == 4 and n["finish.folds[t]"] == 20
    assert "finish.rows_at_ceiling[m]" not in n  # m declares no ceiling: no key, not 0


def test_described_arm_expected_delta_is_its_description_over_the_estimator_per_fold():
    """Paper §4.3: "if the description reached the model on all five folds the arm's
    prompt should exceed the undivided arm's by roughly 2,294 tokens, and the observed
    difference is +298". The expected delta comes from p's schema file (1,835 characters
    at 4 per token x 5 folds); the measured one from the rows' prompt tokens."""
    plan = AnalysisPlan.load()
    assert plan.described == ("p", "j") and plan.description_chars["p"] == 1835
    rows = []
    for rep in range(3):  # three blocks; p sends +298 tokens over its row in each
        rows.append(row("s", "m1", "j", rep, 7, prompt_tokens=10_000))
        rows.append(row("s", "m1", "p", rep, 7, prompt_tokens=10_298))
    rows.append(row("s", "m1", "p", 9, 7, prompt_tokens=99_999))  # no j in its block
    n = compute_numbers(*frames(rows), analysis=plan)
    assert n["tokens.description_chars[p/j]"] == 1835
    assert n["tokens.expected_delta[p/j]"] == pytest.approx(1835 / 4 * 5)  # 2,293.75
    assert round(n["tokens.expected_delta[p/j]"]) == 2294
    assert n["tokens.measured_delta[p/j]"] == pytest.approx(298)
    assert n["tokens.delivered_share[p/j]"] == pytest.approx(298 / 2293.75)
    assert n["tokens.expected_pairs[p/j]"] == 3
    # Fewer folds on the described row, less expected: it scales with what was sent.
    short = [dict(r, folds=4) if r["arm"] == "p" else r for r in rows]
    assert compute_numbers(*frames(short), analysis=plan)["tokens.expected_delta[p/j]"] == \
        pytest.approx(1835 / 4 * 4)
    # A described arm with no description in its schema has no expectation to compare.
    bare = AnalysisPlan.from_dict(*_plan(), description_chars={"p": 0})
    assert "tokens.expected_delta[p/j]" not in compute_numbers(*frames(rows), analysis=bare)


def _plan() -> tuple[dict, dict]:
    """The checkout's analysis plan and arm table, as AnalysisPlan.from_dict takes them."""
    return (yaml.safe_load(DEFAULT_ANALYSIS.read_text()), yaml.safe_load(DEFAULT_ARMS.read_text()))
