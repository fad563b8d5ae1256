"""A native arm's fold loop, unit by unit on the provider stand-ins: the
exact compaction request each fold sends (the previous item first, unchanged, then the
chunk as the item the endpoint compacts), the recall turn continuing from the last item,
a replay that rebuilds the same record from the store alone, the probe's verdict as the
arm's permission (a refused compaction writes a record saying why, and sends nothing),
and the grade of an opaque carry (only the answer)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldstudy.backends import make_backend
from foldstudy.backends.ledger import Ledger, read_ledger
from foldstudy.backends.store import ResponseStore
from foldstudy.grade.grader import StockSignature
from foldstudy.grade.rows import grade_record
from foldstudy.grade.trace import fact_trace
from foldstudy.io import write_json
from foldstudy.run.fold import NATIVE_RECALL_CARRY, Sample, run_fold, run_row
from foldstudy.run.probe import NATIVE_REFUSED, NATIVE_UNSUPPORTED, native_permission
from foldstudy.study.arm import is_matched
from foldstudy.study.fixtures import build_fixture
from foldstudy.study.own_arms import merge_own_arms
from foldstudy.study.spec import load_arm_table, resolve_arm

from ..backends.test_backend_providers import ANTHROPIC, OPENAI, PROVIDERS, Provider
from ..support.anthropic_standin import ON_DEMAND_BETA, THRESHOLD_BETA

SEED, LOSS = 2, 0.3


@pytest.fixture(scope="module")
def fixture(facts_spec, filler, grading):
    return build_fixture("distributed", 3, 0.01, facts_spec, filler,
                         set(grading["stock_signature"]["ports"]))


@pytest.fixture(scope="module")
def native(resources):
    return resolve_arm("native", load_arm_table(resources), resources, 0.25)


def fold_all(p: Provider, standin: Any, store: ResponseStore, fixture, arm, prompts,
             replay: bool = False) -> dict[str, Any]:
    backend = make_backend("m", p.cfg(standin), replay=replay)
    return run_row(fixture, arm, backend, store, prompts, Sample("s", "m", arm.arm, 0, 0, 3),
                   temperature=0.2, recall_max_tokens=300).to_dict()


@pytest.mark.parametrize("provider", PROVIDERS, indirect=True)
def test_each_fold_sends_the_previous_item_first_and_the_recall_continues_from_the_last(
        provider, fixture, native, prompts, tmp_path):
    with provider.start(seed=SEED, loss=LOSS) as s:
        rec = fold_all(provider, s, ResponseStore(tmp_path), fixture, native, prompts)
    n = len(fixture.chunks)
    assert len(s.calls) == n + 1 and rec["infra_error"] is None
    items = [f["reply"]["raw"]["compaction"] for f in rec["folds"]]
    folds, recall = s.calls[:n], s.calls[n]
    for i, call in enumerate(folds):
        if provider is ANTHROPIC:
            assert call.path == "/v1/messages" and call.body["compaction"] == {
                "type": "summarize"}
            assert call.headers["anthropic-beta"] == ON_DEMAND_BETA
            sent = call.body["messages"]
            assert sent[-1] == {"role": "user", "content": fixture.chunks[i]}
            assert sent[:-1] == ([{"role": "assistant", "content": [items[i - 1]]}]
                                 if i else [])
            assert call.body["system"] == native.system_prompt
            assert call.body["max_tokens"] == native.fold_budget_tokens
        else:
            assert call.path == "/v1/responses/compact"
            sent = call.body["input"]
            # the chunk as the item the endpoint compacts (a user message comes back whole)
            assert sent[-1] == {"role": "assistant", "content": fixture.chunks[i]}
            assert sent[:-1] == (items[i - 1] if i else [])
            assert "max_output_tokens" not in call.body and "temperature" not in call.body
    if provider is ANTHROPIC:
        assert recall.body["messages"][0] == {"role": "assistant", "content": [items[-1]]}
        assert recall.headers["anthropic-beta"] == ON_DEMAND_BETA
        question = recall.body["messages"][1]["content"]
        assert rec["final_carry"] == items[-1]["content"] and not rec["native"]["opaque"]
    else:
        assert recall.path == "/v1/responses" and recall.body["input"][:-1] == items[-1]
        question = recall.body["input"][-1]["content"]
        assert rec["final_carry"] == "" and rec["native"]["opaque"]
    assert NATIVE_RECALL_CARRY in question and "compaction" not in recall.body
    assert rec["native"]["item"] == items[-1]
    # the item goes on unchanged: no carry cap clips it
    assert not any(f["clipped"] for f in rec["folds"])


@pytest.mark.parametrize("provider", PROVIDERS, indirect=True)
def test_a_replay_rebuilds_the_record_from_the_store_and_the_ledger_settles_from_usage(
        provider, fixture, native, prompts, tmp_path):
    ledger = Ledger(tmp_path / "ledger.json", budget=5.0)
    with provider.start(seed=SEED, loss=LOSS) as s:
        live = fold_all(provider, s, ResponseStore(tmp_path / "store", ledger=ledger),
                        fixture, native, prompts)
        sent = len(s.calls)
        again = fold_all(provider, s, ResponseStore(tmp_path / "store"), fixture, native,
                         prompts, replay=True)
    assert len(s.calls) == sent  # the replay sent nothing
    assert all(f["store_hit"] for f in again["folds"]) and again["recall"]["store_hit"]
    for k in ("final_carry", "native", "retained_tokens"):
        assert again[k] == live[k]
    assert again["recall"]["answer"] == live["recall"]["answer"]
    spent = read_ledger(tmp_path / "ledger.json")
    replies = [f["reply"] for f in live["folds"]] + [live["recall"]["reply"]]
    assert spent["calls"] == len(replies)
    assert spent["spent_usd"] == pytest.approx(sum(r["cost_usd"] for r in replies))
    if provider is ANTHROPIC:  # the compaction pass is billed from usage.iterations
        usage = live["folds"][-1]["reply"]["raw"]["usage"]
        assert usage["input_tokens"] == 0 and live["folds"][-1]["reply"]["prompt_tokens"] > 0
        # the last compaction's own token count (the compaction pass's output)
        assert live["retained_tokens"] == usage["iterations"][0]["output_tokens"]
    else:
        assert live["retained_tokens"] is None  # unknown, never an estimate


def test_a_refused_compaction_writes_a_record_saying_why_and_sends_nothing(
        fixture, native, prompts, tmp_path, monkeypatch):
    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    refused = {"verdict": NATIVE_REFUSED, "allowed": False,
               "reason": "invalid_request: Unexpected value(s) `compact-2026-09-04`",
               "responsible_parameter": f"anthropic-beta: {ON_DEMAND_BETA}"}
    perm = native_permission(refused, "anthropic")
    assert not perm["allowed"] and perm["responsible_parameter"].startswith("anthropic-beta")
    write_json({"model": "m", "backend": "anthropic", "verdict": "ok", "reason": "",
                "responsible_parameter": "", "required_context_tokens": 1000, "pin": None,
                "shapes": [], "permissions": {"native": perm}, "probe_arms": {}},
               tmp_path / "probe.json")
    write_json(fixture.to_dict(), tmp_path / "fixture.json")
    with ANTHROPIC.start(betas=(THRESHOLD_BETA,)) as s:
        rec = run_fold(str(tmp_path / "fixture.json"), native.to_dict(), "m",
                       ANTHROPIC.cfg(s), {"sweep": "s", "model": "m", "arm": "native",
                                          "repeat": 0, "position": 0, "seed": 3},
                       prompts, 0.2, 300, str(tmp_path / "store"), str(tmp_path / "r.json"),
                       probe_path=str(tmp_path / "probe.json"))
    assert s.calls == []
    assert rec.status == "not_run" and rec.not_run_reason == NATIVE_REFUSED
    assert "compact-2026-09-04" in rec.not_run_detail
    # a backend whose provider does not compact: refused by name
    none = native_permission(None, "openrouter")
    assert none["verdict"] == NATIVE_UNSUPPORTED and "openrouter" in none["reason"]


def test_an_opaque_carry_grades_only_the_answer(fixture, native, prompts, tmp_path,
                                                monkeypatch, grading):
    monkeypatch.setenv("PROVIDER_TEST_KEY", OPENAI.key)
    with OPENAI.start(seed=SEED, loss=LOSS) as s:
        rec = fold_all(OPENAI, s, ResponseStore(tmp_path), fixture, native, prompts)
    row, checks, folds = grade_record(rec, fixture, grading["abstention_markers"],
                                      StockSignature.from_dict(grading["stock_signature"]),
                                      ["Constraints"])
    assert row["valid"] and row["n_correct"] > 0 and row["recall"] is not None
    assert row["carrier_present"] is None and row["carried_chars"] is None
    assert all(c["in_carrier"] is None for c in checks)
    assert all(f["carried_chars"] is None for f in folds)
    assert {t["present"] for t in fact_trace(rec, fixture)} == {None}


def test_a_native_arm_is_no_twin_of_an_own_arm(resources, tmp_path):
    table = load_arm_table(resources)
    assert not is_matched(table["arms"]["native"]) and is_matched(table["arms"]["m"])
    (tmp_path / "p.md").write_text("Summarize.", encoding="utf-8")
    (tmp_path / "arms.yaml").write_text(json.dumps({"arms": {"mine": {
        "title": "mine", "twin": "native", "system_prompt": "p.md", "fold_budget_tokens": 2400,
        "carry_cap_tokens": 2400, "carry": "text"}}}), encoding="utf-8")
    _, problems = merge_own_arms(table, str(tmp_path / "arms.yaml"), resources)
    # the twins the schema allows are the matched arms only (own_arms.own_arm_twins)
    assert any("twin: 'native' is not one of the paper's arms" in p for p in problems), \
        problems


def test_a_compaction_cut_at_max_tokens_is_the_arms_own_failure_named_in_its_row(
        fixture, native, prompts, tmp_path, monkeypatch, grading):
    """A provider reply cut at max_tokens (the study's own fold budget can cause it)
    carries no compaction: each such fold is recorded as failed with the provider's stop
    reason, the row stays valid (paper §3.3: "rows invalidated by an arm's own behaviour
    may not [be retried]") and its parse_failures count them, which the card then says
    beside every recall difference of the arm (test_decision.py)."""
    from dataclasses import replace

    from foldstudy.grade.validity import validity

    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    tight = replace(native, fold_budget_tokens=5)  # no summary fits: stop_reason max_tokens
    with ANTHROPIC.start(seed=SEED, loss=LOSS) as s:
        rec = fold_all(ANTHROPIC, s, ResponseStore(tmp_path), fixture, tight, prompts)
    n = len(fixture.chunks)
    assert [f["reply"]["raw"]["stop_reason"] for f in rec["folds"]] == ["max_tokens"] * n
    assert all(not f["parse_ok"] and "max_tokens" in f["schema_errors"][0]
               for f in rec["folds"])
    assert validity(rec) == (True, "") and rec["native"]["item"] is None
    row, _, _ = grade_record(rec, fixture, grading["abstention_markers"],
                             StockSignature.from_dict(grading["stock_signature"]),
                             ["Constraints"])
    assert row["valid"] and row["parse_failures"] == row["folds"] == n
