"""Every kind of fold through the real embedded model (SmolLM2-135M) at a tiny scale."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
import yaml

from foldstudy.backends.base import REPETITION, ChatRequest
from foldstudy.backends.embedded import EmbeddedBackend
from foldstudy.backends.store import ResponseStore
from foldstudy.carriers.registry import carrier_of
from foldstudy.grade.grader import StockSignature
from foldstudy.grade.rows import grade_record
from foldstudy.run.fold import Prompts, Sample, run_row
from foldstudy.study.arm import is_matched
from foldstudy.study.fixtures import build_fixture
from foldstudy.study.spec import arm_ids, load_arm_table, resolve_arm

from ..conftest import ROOT, TINY_CONFIG
from ..support.procs import MODEL_THREADS

pytestmark = pytest.mark.model
# A small session and capacity: prompt evaluation is most of a row's time at one thread
# (arm j's row: 31.6 s at 0.01 and 0.03, 23.5 s at 0.005; 2026-12-02). At 0.001 each of
# the two chunks is its planted facts and a line or two of filler, and a fold's prompt
# is mostly the arm's own system prompt.
SCALE = 0.001
# Fold budgets of 14 to 36 tokens (f, jx, and n, k and m): k's and m's folds write to
# their budget, and each token a fold writes is read again by the next fold and the
# recall turn. The module's model work: 4,260 tokens at 0.015 with the recall's 16 and
# the parrot's 48 below, against 4,556 at 0.02, 32 and 100 (bench/tokenlog, 2026-12-06).
CAPACITY = 0.015
# The recall turn's answer, cut short: what these rows test is each arm's folds and the
# grading's shape, not a score; 16 tokens are still an answer for the grader to read
# (200 took 6.4 s of a row's 41.5 s at one thread).
RECALL_MAX_TOKENS = 16
# The session's first two chunks, and the six graded facts planted in them: the second
# fold reads the carry of the first, and the recall turn reads the second's, as in the
# paper's five. The module alone took 73 s of CPU at two folds a row, 101 s at three
# (2026-12-04).
FOLDS = 2
# The graded facts alone (setup's spec), none of the scenario's 36 decoys: a decoy is
# haystack the grader never reads, and in these two chunks the decoys were 63% of the
# session's tokens (927 against 348 without them; the six graded facts are the same).


@pytest.fixture(scope="module")
def setup(config_schema, resources, facts_spec, filler, grading, tmp_path_factory):
    # The fold mechanics of every arm, not the capacity rule: the arms are resolved at
    # a capacity this small session can run fast (the config check would refuse it for
    # a study, tests/study/test_capacity.py), so its rows fit the CI budget.
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, CAPACITY) for a in arm_ids(table)}
    spec = copy.deepcopy(facts_spec)
    scenario = spec["scenarios"]["distributed"]
    scenario["planted"] = scenario["graded"]  # no decoys
    full = build_fixture("distributed", 3, SCALE, spec, filler,
                         set(grading["stock_signature"]["ports"]))
    fixture = replace(full, chunks=full.chunks[:FOLDS],
                      facts=tuple(f for f in full.facts if f.chunk < FOLDS))
    backend = EmbeddedBackend("smollm2-135m", {"n_ctx": 2048, "threads": MODEL_THREADS})
    store = ResponseStore(tmp_path_factory.mktemp("store"))
    yield {
        "arms": arms, "fixture": fixture, "backend": backend, "store": store,
        "prompts": Prompts.from_files(*(resources / "prompts" / n for n in (
            "fold_user.md.j2", "recall_system.md", "recall_user.md.j2"))),
        "headings": yaml.safe_load((resources / "arms.yaml").read_text())["fixed_headings"],
        "grading": grading,
        "rows": {},
    }
    backend.close()


def first_row(setup, arm_id):
    """The arm's row at repeat 0, made once in the module (conftest keeps the module's
    tests on one worker): the store test reruns the row the arm's own test made."""
    if arm_id not in setup["rows"]:
        setup["rows"][arm_id] = run(setup, arm_id)
    return setup["rows"][arm_id]


def run(setup, arm_id, repeat=0, backend=None):
    return run_row(
        setup["fixture"], setup["arms"][arm_id], backend or setup["backend"], setup["store"],
        setup["prompts"], Sample("t", "smollm2-135m", arm_id, repeat, 0, 99),
        temperature=0.2, recall_max_tokens=RECALL_MAX_TOKENS,
    ).to_dict()


# One row per shape of fold the real model writes, not per arm: the paper's matched arms
# hold one arm of each carry kind (raw_json, field:, rendered, under_headings, text), q
# (the decomposed schema, whose five fields the partition reads), and one index arm (its
# fold is its base's and the index is mechanical, so jx is the real model's test of both
# index arms). The other matched arms differ from one of these only in data the model
# sees no other way: a ceiling (which the embedded grammar drops, backends/embedded.py),
# a budget, a cap, a prompt's wording or a schema's description. Resolving those is
# tests/study/test_capacity.py's and test_config.py's; each row here took 20 s of CPU
# (2026-12-04). A native arm's folds are the provider's (test_native_workflow.py); the
# arms that call no model per fold are test_session_carriers_workflow.py's. j (rendered
# from one field) and q (the decomposed schema) are the tiny study's two arms, whose rows
# the real model folds through the whole chain (tests/workflow/test_workflow.py reads
# their folds with this file's checks), so they have no row here.
_TABLE = load_arm_table(ROOT / "resources")
REAL_MODEL_ARMS = ["f", "n", "k", "m", "jx"]
TINY_ARMS = [a for s in yaml.safe_load(TINY_CONFIG.read_text())["sweeps"]
             .values() for a in s["arms"]]


def test_the_real_model_rows_cover_every_kind_of_the_matched_arms():
    """A carry kind added to the matched arms gets a real-model row here or in the tiny
    study, or this fails."""
    kinds = {type(carrier_of(_TABLE["arms"][a])) for a in arm_ids(_TABLE)
             if is_matched(_TABLE["arms"][a])}
    covered = {type(carrier_of(_TABLE["arms"][a])) for a in REAL_MODEL_ARMS + TINY_ARMS}
    assert kinds <= covered and len(kinds) >= 5  # the paper's five kinds at least
    assert {"j", "q"} <= set(TINY_ARMS)  # one field against five: the partition pair


@pytest.mark.parametrize("arm_id", REAL_MODEL_ARMS)
def test_each_arm_runs_a_full_row(setup, arm_id):
    arm = setup["arms"][arm_id]
    rec = first_row(setup, arm_id)
    assert len(rec["folds"]) == FOLDS and rec["recall"] is not None
    assert rec["infra_error"] is None and not rec["catchup_fired"]
    for f in rec["folds"]:
        r = f["reply"]
        assert r["token_count_method"] == "exact" and r["prompt_tokens"] > 100
        assert 0 < r["completion_tokens"] <= arm.fold_budget_tokens
        assert r["finish_reason"] in ("stop", "length", REPETITION)
        assert setup["backend"].count_tokens(f["carry"]) <= arm.carry_cap_tokens
        if arm.has_index:  # the index holds its share, counted by the model's tokenizer
            assert f["index_tokens"] == setup["backend"].count_tokens(f["index"])
            assert f["index_tokens"] <= arm.index_cap_tokens
        if arm.schema is None:
            assert f["parse_ok"]
    g = setup["grading"]
    row, checks, _ = grade_record(rec, setup["fixture"], g["abstention_markers"],
                                 StockSignature.from_dict(g["stock_signature"]),
                                 setup["headings"])
    graded = len(setup["fixture"].graded)
    assert graded >= 6  # the two chunks hold facts enough to grade
    assert row["valid"] and row["n_graded"] == graded and len(checks) == graded
    assert row["declared_ceiling_chars"] == arm.declared_ceiling_chars
    assert row["finish_stop"] + row["finish_length"] + row["finish_repeat"] == FOLDS
    assert row["system_prompt_sha256"] == arm.system_prompt_sha256
    if arm_id == "f" and all(f["parse_ok"] for f in rec["folds"]):
        assert row["json_envelope_carried"]


def test_rerun_is_served_from_the_store_and_identical(setup):
    first = first_row(setup, "f")
    assert not any(f["store_hit"] for f in first["folds"])
    again = run(setup, "f")
    assert all(f["store_hit"] for f in again["folds"]) and again["recall"]["store_hit"]
    strip = lambda r: json.dumps([f["carry"] for f in r["folds"]] + [r["recall"]["answer"]])  # noqa: E731
    assert strip(first) == strip(again)


def test_context_overflow_fires_catch_up_and_invalidates_the_row(setup):
    # A context of m's first prompt (the same at every repeat): that prompt and its fold
    # budget no longer fit, whatever the session's size.
    n_ctx = first_row(setup, "m")["folds"][0]["reply"]["prompt_tokens"]
    small = EmbeddedBackend("smollm2-135m", {"n_ctx": n_ctx, "threads": MODEL_THREADS})
    try:
        rec = run(setup, "m", repeat=2, backend=small)
    finally:
        small.close()
    assert rec["catchup_fired"] and rec["missing_folds"] > 0
    g = setup["grading"]
    row, _, _ = grade_record(rec, setup["fixture"], g["abstention_markers"],
                             StockSignature.from_dict(g["stock_signature"]), setup["headings"])
    assert (row["valid"], row["invalid_reason"]) == (False, "catchup_fired")


PARROT = ChatRequest(messages=({"role": "user", "content": "Write the letters b2 one hundred "
                                "times with no spaces: b2b2b2b2b2b2b2b2"},),
                     max_tokens=48, temperature=0.0, seed=1)
BRIEF = ChatRequest(messages=({"role": "system", "content": "You answer briefly."},
                              {"role": "user", "content": "What is the capital of France?"}),
                    max_tokens=40, temperature=0.2, seed=1)


def test_a_reply_that_parrots_stops_at_the_repetition_and_says_so(setup):
    """The embedded backend's stop_on_repeat (its default): the model asked to parrot
    stops once one block is said three times over 32 tokens, its text what it wrote."""
    off = EmbeddedBackend("smollm2-135m", {"n_ctx": 2048, "threads": MODEL_THREADS,
                                           "stop_on_repeat": False})
    try:
        stopped, whole = setup["backend"].complete(PARROT), off.complete(PARROT)
        brief_on, brief_off = setup["backend"].complete(BRIEF), off.complete(BRIEF)
    finally:
        off.close()
    assert whole.finish_reason == "length" and whole.completion_tokens == PARROT.max_tokens
    assert stopped.finish_reason == REPETITION and stopped.raw["repeat_period"] >= 1
    assert 32 <= stopped.completion_tokens < PARROT.max_tokens
    assert whole.text.startswith(stopped.text) and len(stopped.text) < len(whole.text)
    assert stopped.prompt_tokens == whole.prompt_tokens
    # a reply that never repeats itself is the same reply, watched or not
    assert brief_on.finish_reason != REPETITION
    assert (brief_on.text, brief_on.finish_reason, brief_on.completion_tokens) == (
        brief_off.text, brief_off.finish_reason, brief_off.completion_tokens)
