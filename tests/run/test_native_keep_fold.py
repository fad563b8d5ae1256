"""A `native:keep_recent=N` arm's fold loop on the provider stand-ins: the exact messages
of each compaction request and of the recall turn over four chunks, for N=1 and N=2, the
beta header on both, what the record keeps of the cut, a replay from the store alone,
and the config's one-line refusal of a malformed N.

The rule the requests follow is Anthropic's "Compaction that keeps recent turns"
(https://platform.claude.com/docs/en/build-with-claude/compaction-keep-recent-turns):
no parameter sets the turns kept; the client cuts its history, sends only the messages
before the cut to the compaction request ("The API summarizes every message it is
sent"), and sends the block first, then the kept turns exactly as they were, then the
new message, with the beta header on both requests. OpenAI's compact endpoint documents
no equivalent, so the same client-side cut is applied there (carriers/native_keep.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from foldstudy.backends import make_backend
from foldstudy.backends.store import ResponseStore
from foldstudy.carriers.native_keep import cut
from foldstudy.records.run_record import Fold
from foldstudy.run.fold import NATIVE_RECALL_CARRY
from foldstudy.study.arm import is_matched
from foldstudy.study.fixtures import build_fixture
from foldstudy.study.spec import SpecError, load_arm_table, resolve_arm

from ..backends.test_backend_providers import ANTHROPIC, PROVIDERS
from ..support.anthropic_standin import ON_DEMAND_BETA
from .test_native_fold import fold_all

SEED, LOSS, CHUNKS = 2, 0.3, 4


@pytest.fixture(scope="module")
def fixture(facts_spec, filler, grading):
    made = build_fixture("distributed", 3, 0.01, facts_spec, filler,
                         set(grading["stock_signature"]["ports"]))
    assert len(made.chunks) >= CHUNKS
    return replace(made, chunks=made.chunks[:CHUNKS])


@pytest.fixture(scope="module")
def table(resources):
    return load_arm_table(resources)


def keep_arm(n: int, table, resources):
    """The table's native_keep2 arm, or the same arm keeping n chunks."""
    arm = resolve_arm("native_keep2", table, resources, 0.25)
    return arm if n == 2 else replace(arm, arm=f"native_keep{n}",
                                      carry=f"native:keep_recent={n}")


def test_the_cut_keeps_the_last_n_chunks_and_compacts_each_older_one_once():
    def folds(*made: int) -> list[Fold]:
        return [Fold(fold=i, chunks=[i], request_key=None, store_hit=False, seed=None,
                     max_tokens=0, reply={}, parse_ok=True, schema_valid=True,
                     schema_errors=[], carry="", carried_chars=0, clipped=False)
                for i in made]

    assert [cut(folds(*range(i)), i, 1) for i in range(4)] == [
        ([], [0]), ([0], [1]), ([1], [2]), ([2], [3])]
    assert [cut(folds(*range(i)), i, 2) for i in range(4)] == [
        ([], [0]), ([], [0, 1]), ([0], [1, 2]), ([1], [2, 3])]
    # fold 2 overflowed (folded with the next): fold 3 compacts both chunks it left
    assert cut(folds(0, 1), 3, 1) == ([1, 2], [3])


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("provider", PROVIDERS, indirect=True)
def test_each_request_sends_the_older_chunks_to_compaction_and_the_kept_ones_after_the_item(
        provider, n, fixture, table, resources, prompts, tmp_path):
    """The page's rule: "You pick a cut point in your history: the messages before it go
    into the compaction request, and the messages from it on are kept"; the next request
    puts the block in front of the kept turns, sent as they were, with the beta header."""
    arm = keep_arm(n, table, resources)
    chunks = fixture.chunks
    with provider.start(seed=SEED, loss=LOSS) as s:
        rec = fold_all(provider, s, ResponseStore(tmp_path), fixture, arm, prompts)
    assert rec["infra_error"] is None
    # folds 0..n-1 keep everything and call nothing; each later fold is one compaction
    assert len(s.calls) == CHUNKS - n + 1
    assert [f["reply"]["finish_reason"] == "none" for f in rec["folds"]] == \
        [i < n for i in range(CHUNKS)]
    assert [f["kept"] for f in rec["folds"]] == [
        list(range(max(0, i - n + 1), i + 1)) for i in range(CHUNKS)]
    items = [f["reply"]["raw"]["compaction"] for f in rec["folds"][n:]]
    compactions, recall = s.calls[:-1], s.calls[-1]
    kept = list(chunks[CHUNKS - n:])
    if provider is ANTHROPIC:
        def block(item: Any) -> list[dict[str, Any]]:
            return [{"role": "assistant", "content": [item]}]

        # fold n+k compacts the previous block and the chunk that fell out of the tail
        for k, call in enumerate(compactions):
            assert call.body["compaction"] == {"type": "summarize"}
            assert call.headers["anthropic-beta"] == ON_DEMAND_BETA
            assert call.body["messages"] == [*(block(items[k - 1]) if k else []),
                                              {"role": "user", "content": chunks[k]}]
        assert recall.headers["anthropic-beta"] == ON_DEMAND_BETA
        assert "compaction" not in recall.body
        sent = recall.body["messages"]
        assert sent[:-1] == [*block(items[-1]),
                             *({"role": "user", "content": c} for c in kept)]
        # the carry is what the recall turn reads: the block's text, then the kept chunks
        assert rec["final_carry"] == "\n".join([items[-1]["content"], *kept])
        assert not rec["native"]["opaque"]
    else:
        for k, call in enumerate(compactions):
            assert call.path == "/v1/responses/compact"
            assert call.body["input"] == [*(items[k - 1] if k else []),
                                          {"role": "assistant", "content": chunks[k]}]
        assert recall.path == "/v1/responses"
        sent = recall.body["input"]
        assert sent[:-1] == [*items[-1],
                             *({"role": "assistant", "content": c} for c in kept)]
        assert rec["final_carry"] == "" and rec["native"]["opaque"]
    assert sent[-1]["role"] == "user" and NATIVE_RECALL_CARRY in sent[-1]["content"]
    assert rec["native"]["item"] == items[-1]
    assert rec["native"]["kept"] == list(range(CHUNKS - n, CHUNKS))


@pytest.mark.parametrize("n", [1, 2])
def test_the_kept_chunks_count_as_retained_beside_the_compactions_own_count(
        n, fixture, table, resources, prompts, tmp_path, monkeypatch):
    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    arm = keep_arm(n, table, resources)
    with ANTHROPIC.start(seed=SEED, loss=LOSS) as s:
        rec = fold_all(ANTHROPIC, s, ResponseStore(tmp_path), fixture, arm, prompts)
        backend = make_backend("m", ANTHROPIC.cfg(s))

    def tail(f: dict[str, Any]) -> int:
        return sum(backend.count_tokens(fixture.chunks[c]) for c in f["kept"])

    for f in rec["folds"]:
        usage = f["reply"]["raw"].get("usage")
        own = usage["iterations"][0]["output_tokens"] if usage else 0  # no call: no item
        assert f["retained_tokens"] == own + tail(f) and tail(f) > 0
    assert rec["retained_tokens"] == rec["folds"][-1]["retained_tokens"]


def test_a_replay_rebuilds_the_kept_record_from_the_store(fixture, table, resources,
                                                          prompts, tmp_path, monkeypatch):
    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    arm = keep_arm(1, table, resources)
    with ANTHROPIC.start(seed=SEED, loss=LOSS) as s:
        live = fold_all(ANTHROPIC, s, ResponseStore(tmp_path), fixture, arm, prompts)
        sent = len(s.calls)
        again = fold_all(ANTHROPIC, s, ResponseStore(tmp_path), fixture, arm, prompts,
                         replay=True)
    assert len(s.calls) == sent  # the recall's kept chunks key the same request
    assert again["recall"]["store_hit"] and again["recall"]["answer"] == live["recall"]["answer"]
    for k in ("final_carry", "native", "retained_tokens"):
        assert again[k] == live[k]


def test_a_failed_compaction_keeps_the_previous_block_and_the_new_tail(
        fixture, table, resources, prompts, tmp_path, monkeypatch):
    """A reply cut at max_tokens carries no compaction (the arm's own behaviour): the
    previous block goes on unchanged, the chunk that fell out of the tail is lost, and
    the carry is still that block's text and the new tail."""
    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    arm = keep_arm(1, table, resources)
    with ANTHROPIC.start(seed=SEED, loss=LOSS) as s:
        good = fold_all(ANTHROPIC, s, ResponseStore(tmp_path / "a"), fixture, arm, prompts)
    # a budget the first compactions fit and the last one does not
    sizes = [f["reply"]["raw"]["usage"]["iterations"][0]["output_tokens"]
             for f in good["folds"][1:]]
    assert sizes[-1] > max(sizes[:-1])  # the stand-in's summary grows at this seed
    tight = replace(arm, fold_budget_tokens=max(sizes[:-1]))
    with ANTHROPIC.start(seed=SEED, loss=LOSS) as s:
        rec = fold_all(ANTHROPIC, s, ResponseStore(tmp_path / "b"), fixture, tight, prompts)
    last, before = rec["folds"][-1], rec["folds"][-2]
    assert not last["parse_ok"] and before["parse_ok"]
    block = before["reply"]["raw"]["compaction"]
    assert rec["native"]["item"] == block
    assert last["carry"] == "\n".join([block["content"], fixture.chunks[CHUNKS - 1]])
    assert s.calls[-1].body["messages"][:2] == [
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": fixture.chunks[CHUNKS - 1]}]


def test_the_keep_arm_is_a_native_arm_outside_the_matched_comparison(table):
    entry = table["arms"]["native_keep2"]
    assert entry["carry"] == "native:keep_recent=2" and not is_matched(entry)
    assert entry["system_prompt"] == table["arms"]["native"]["system_prompt"]


@pytest.mark.parametrize("carry", ["native:keep_recent=0", "native:keep_recent=x",
                                   "native:keep_recent=-1", "native:keep_recent",
                                   "native:keep_recent=2.5"])
def test_a_malformed_keep_recent_is_refused_in_one_line_naming_the_arm_and_key(
        carry, table, resources):
    bad = {**table, "arms": {**table["arms"],
                             "native_keep2": {**table["arms"]["native_keep2"], "carry": carry}}}
    with pytest.raises(SpecError) as e:
        resolve_arm("native_keep2", bad, resources, 1.0)
    assert str(e.value) == (f"arms.native_keep2.carry: {carry!r}: keep_recent must be a "
                            "whole number of chunks, 1 or more (e.g. native:keep_recent=2)")


def test_a_kept_chunk_is_graded_as_carried_verbatim(fixture, table, resources, prompts,
                                                    tmp_path, monkeypatch, grading):
    """The carry the grader reads is the block's text and the kept chunks: a graded fact
    planted in a kept chunk is present in the trace of the fold that kept it, however the
    compaction summarized it, and the row is valid."""
    from foldstudy.grade.grader import StockSignature
    from foldstudy.grade.rows import grade_record
    from foldstudy.grade.trace import fact_trace

    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    arm = keep_arm(1, table, resources)
    with ANTHROPIC.start(seed=SEED, loss=1.0) as s:  # the summaries keep no identifier
        rec = fold_all(ANTHROPIC, s, ResponseStore(tmp_path), fixture, arm, prompts)
    row, _, _ = grade_record(rec, fixture, grading["abstention_markers"],
                             StockSignature.from_dict(grading["stock_signature"]),
                             ["Constraints"])
    assert row["valid"]
    last = [f for f in fixture.graded if f.chunk == CHUNKS - 1]
    assert last, "the fixture plants a graded fact in its fourth chunk"
    trace = fact_trace(rec, fixture)
    for fact in last:
        assert [t["present"] for t in trace if t["label"] == fact.label and
                t["fold"] == CHUNKS] == [True]
    # what only the compaction held is gone at this loss: the presence above is the tail's
    first = [f for f in fixture.graded if f.chunk == 0]
    assert first and all(t["present"] is False for t in trace
                         if t["label"] in {f.label for f in first} and t["fold"] == CHUNKS)
