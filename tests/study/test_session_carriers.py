"""The carriers that keep the session itself (carriers/session.py): no fold calls
the model, every fold still leaves a record every reader reads, the probe allows the arm
wherever the recall turn's plain request may go, plan.tsv prices the recall turn alone,
and `uncompacted` gives the recall turn the whole session (paper §3.1's fold protocol
with the fold left out: "each fold receives the previous carry and the next chunk and
returns a replacement carry" -- here the replacement is the session itself)."""

from __future__ import annotations

from typing import Any

import pytest

from foldstudy.backends.base import Backend, Reply
from foldstudy.backends.store import ResponseStore
from foldstudy.carriers.registry import carrier_of
from foldstudy.grade.grader import StockSignature
from foldstudy.grade.rows import grade_record
from foldstudy.grade.validity import validity
from foldstudy.run.audit import Sizes, run_tokens
from foldstudy.run.fold import Sample, run_row
from foldstudy.study.arm import is_matched
from foldstudy.study.fixtures import build_fixture
from foldstudy.study.spec import load_arm_table, resolve_arm


class Echo(Backend):
    """Answers every call with what the test sets and records what it was sent."""

    def __init__(self, answer: str = "ok") -> None:
        self.identity = {"backend": "echo", "model": "echo", "pin": "p1"}
        self.sent: list[Any] = []
        self.answer = answer

    @classmethod
    def describe(cls, name, cfg, pin=None):
        return {"backend": "echo", "model": name}

    def complete(self, request):
        self.sent.append(request)
        return Reply(text=self.answer, finish_reason="stop", prompt_tokens=1,
                     completion_tokens=1, token_count_method="estimate", latency_s=0.0,
                     served_by="p1")


@pytest.fixture(scope="module")
def fixture(facts_spec, filler, grading):
    return build_fixture("distributed", 3, 0.01, facts_spec, filler,
                         set(grading["stock_signature"]["ports"]))


def arm_of(resources, arm_id: str, scale: float = 0.01):
    return resolve_arm(arm_id, load_arm_table(resources), resources, scale)


def run(resources, fixture, fold_prompts, tmp_path, arm_id: str, answer: str = "ok",
        scale: float = 1.0):
    backend = Echo(answer)
    rec = run_row(fixture, arm_of(resources, arm_id, scale), backend, ResponseStore(tmp_path),
                  fold_prompts, Sample("s", "echo", arm_id, 0, 0, 3), temperature=0.2,
                  recall_max_tokens=100).to_dict()
    return rec, backend


def test_uncompacted_calls_no_model_per_fold_and_the_recall_turn_reads_the_whole_session(
        resources, fixture, fold_prompts, tmp_path):
    rec, backend = run(resources, fixture, fold_prompts, tmp_path, "uncompacted")
    assert len(backend.sent) == 1  # the recall turn alone
    recall = backend.sent[0].messages[-1]["content"]
    session = "\n".join(fixture.chunks)
    assert session in recall and rec["final_carry"] == session
    assert all(f.value in recall for f in fixture.graded)
    assert rec["retained_tokens"] == backend.count_tokens(session)
    assert len(rec["folds"]) == len(fixture.chunks)


def test_a_fold_with_no_model_call_is_a_record_every_reader_reads(
        resources, fixture, fold_prompts, tmp_path, grading):
    rec, _ = run(resources, fixture, fold_prompts, tmp_path, "uncompacted")
    for f in rec["folds"]:
        r = f["reply"]
        assert (r["text"], r["finish_reason"], r["prompt_tokens"],
                r["completion_tokens"], r["served_by"]) == ("", "none", 0, 0, "")
        assert f["request_key"] is None and f["max_tokens"] == 0 and f["parse_ok"]
    # the validity rule's endpoint test has nothing to refuse, pinned or not
    rec["endpoint"] = {**rec["endpoint"], "pin": "p1"}
    assert validity(rec) == (True, "")
    row, checks, folds = grade_record(rec, fixture, [], StockSignature.from_dict(
        grading["stock_signature"]), [])
    assert row["valid"] and row["folds"] == len(fixture.chunks)
    assert row["prompt_tokens"] == row["completion_tokens"] == 0  # the folds' own
    assert [f["finish_reason"] for f in folds] == ["none"] * len(fixture.chunks)


def test_the_arm_is_outside_the_matched_comparison_and_no_own_arm_may_name_it(resources):
    table = load_arm_table(resources)
    c = carrier_of(table["arms"]["uncompacted"])
    assert not is_matched(table["arms"]["uncompacted"]) and c.ceiling
    assert not c.calls_model and not c.sends_fold_shape and not c.own_arm
    assert c.against_best


@pytest.mark.parametrize("probe, allowed, verdict", [
    ({"verdict": "ok", "shapes": []}, True, "ok"),
    ({"verdict": "ok", "shapes": [{"shape": "plain", "verdict": "ok"}]}, True, "ok"),
    # the recall turn is a plain request: a refused plain shape refuses the arm
    ({"verdict": "ok", "shapes": [{"shape": "plain", "verdict": "probe_rejected_x",
                                   "reason": "r"}]}, False, "probe_rejected_x"),
    # an endpoint the probe could not use at all
    ({"verdict": "auth_failed", "reason": "no key", "shapes": []}, False, "auth_failed"),
])
def test_the_probe_allows_the_arm_where_the_recall_turn_may_go(resources, probe, allowed,
                                                               verdict):
    perm = carrier_of(load_arm_table(resources)["arms"]["uncompacted"]).permission(
        probe, "echo")
    assert perm is not None and (perm["allowed"], perm["verdict"]) == (allowed, verdict)


def test_plan_prices_one_call_the_recall_turn_reading_the_whole_session(resources):
    sizes = Sizes(chunk_chars={"s": [9_000] * 5}, fold_template_chars=300,
                  recall_chars=1200, chars_per_token=3.0)
    calls, prompt, completion = run_tokens(arm_of(resources, "uncompacted", 1.0),
                                           [9_000] * 5, sizes, 400)
    assert (calls, completion) == (1, 400)
    assert prompt == round(1200 / 3 + 45_000 / 3)  # the recall template + the session


def _default_with_ceiling(n_ctx: int) -> dict[str, Any]:
    import yaml

    from ..conftest import ROOT

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    cfg["sweeps"]["main"].update(arms=["j", "m", "uncompacted"], repeats=3)
    cfg["models"]["smollm2-135m"]["n_ctx"] = n_ctx
    return cfg


def test_the_config_check_refuses_a_session_over_the_models_context_in_one_line(
        config_schema, resources):
    from foldstudy.study.config import ConfigError, load_study

    with pytest.raises(ConfigError) as e:
        load_study(_default_with_ceiling(2048), config_schema, load_arm_table(resources),
                   resources)
    (line,) = [p for p in str(e.value).splitlines() if "uncompacted" in p]
    assert "reads the whole session" in line and "context of 2,048 tokens" in line
    assert "give smollm2-135m a context of at least" in line
    # a context that holds it passes
    load_study(_default_with_ceiling(16384), config_schema, load_arm_table(resources),
               resources)


def _card(resources, recalls: dict[str, list[float]]):
    import dataclasses

    from foldstudy.analysis.decision import CardInputs, cards
    from foldstudy.analysis.plan import AnalysisPlan

    from ..support.evidence_rows import arm_rows, frames

    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25) for a in recalls}
    rows, checks = frames([r for a, v in recalls.items() for r in arm_rows("s", "x", a, v)])
    ci = dataclasses.replace(CardInputs(margin=0.1), arms=arms)
    (card,) = cards(rows, checks, AnalysisPlan.load(), ci)
    return card


def test_each_card_splits_an_arms_lost_facts_into_the_carriers_and_the_recall_turns(
        resources):
    """The ceiling recalls 8 of 10 facts in every block, j 2 (the first two), m none."""
    from foldstudy.analysis.card import Card
    from foldstudy.analysis.plan import AnalysisPlan
    from foldstudy.report.card_words import card_markdown

    card = _card(resources, {"j": [0.2] * 4, "m": [0.0] * 4, "uncompacted": [0.8] * 4})
    lines = {x.arm: x for x in card.ceiling_lines}
    assert set(lines) == {"j", "m"}  # the ceiling is not read against itself
    j, m = lines["j"], lines["m"]
    assert (j.blocks, j.lost, j.carrier_lost, j.recall_lost) == (4, 32, 24, 8)
    assert (m.lost, m.carrier_lost, m.recall_lost) == (40, 32, 8)
    assert j.ceiling_recall == pytest.approx(0.8)
    # no verdict of the family reads the ceiling; its against-your-best line does
    sources = {v.source for v in card.contrasts if "uncompacted" in (v.a, v.b)}
    assert sources == {carrier_of({"carry": "uncompacted"}).against_best}
    md = "\n".join(card_markdown(Card.from_dict(card.to_dict()), AnalysisPlan.load()))
    assert ("of the 32 facts j lost, **24 the carrier's loss** (the ceiling recalled them "
            "in the same block) and **8 the recall turn's**") in md
    assert "Against the ceiling `uncompacted`" in md


def test_where_every_arm_lost_every_fact_the_card_says_the_ceiling_missed_them_too(
        resources):
    card = _card(resources, {"j": [0.0] * 4, "m": [0.0] * 4, "uncompacted": [0.0] * 4})
    assert card.all_lost and card.ceiling_lines
    assert all(x.carrier_lost == 0 and x.recall_lost == x.lost == 40
               for x in card.ceiling_lines)
    # a card with no ceiling reads as it always did
    assert "ceiling_lines" not in _card(resources, {"j": [0.2] * 4, "m": [0.0] * 4}
                                        ).to_dict()


# -- clear_tool_output ------------------------------------------------------------------


def test_clearing_replaces_all_but_the_last_k_tool_outputs_with_a_line_naming_the_tool():
    from foldstudy.carriers.clear_tool_output import cleared
    from foldstudy.transcripts.base import Message, ToolCall, render_message
    from foldstudy.transcripts.turns import parse_turns, turn_line

    # a synthetic chunk (the tool turn's first word is its command) and a real session's
    # messages (the call is on the assistant's line), in the one turn format
    one = ("=== session chunk 1 of 2 ===\n" + turn_line(0, "tool", "kubectl get pods\nA 1/1")
           + "\n" + turn_line(1, "user", "port 52677 stays") + "\n")
    two = "\n".join(render_message(m, i) for i, m in enumerate([
        Message("assistant", "looking", (ToolCall("Bash", '{"command": "df"}'),)),
        Message("tool", "/dev/sda 91%"),
        Message("tool", "second output kept"),
    ], start=2)) + "\n"
    text = cleared([one, two], keep_last=1)
    turns = parse_turns(text)
    assert [t.text.strip() for t in turns if t.role == "tool"] == [
        "[output of kubectl cleared]", "[output of Bash cleared]", "second output kept"]
    # user and assistant turns, and the chunk header, are kept as read
    assert "port 52677 stays" in text and text.startswith("=== session chunk 1 of 2 ===\n")
    assert '-> tool call Bash {"command": "df"}' in text
    assert cleared([one, two], keep_last=9) == "\n".join([one, two])


def test_clear_tool_output_keeps_every_planted_fact_and_evicts_the_oldest_past_its_cap(
        resources, fixture, fold_prompts, tmp_path):
    rec, backend = run(resources, fixture, fold_prompts, tmp_path, "clear")
    assert len(backend.sent) == 1  # the recall turn alone
    recall = backend.sent[0].messages[-1]["content"]
    assert rec["final_carry"] in recall and "cleared]" in rec["final_carry"]
    assert all(f.value in recall for f in fixture.graded)  # facts are user turns
    assert rec["retained_tokens"] < backend.count_tokens("\n".join(fixture.chunks))
    # the same arm at a cap below the session: the newest text is kept, the oldest goes
    import dataclasses

    arm = dataclasses.replace(arm_of(resources, "clear", 1.0), carry_cap_tokens=300)
    small = run_row(fixture, arm, Echo(), ResponseStore(tmp_path / "s"), fold_prompts,
                    Sample("s", "echo", "clear", 0, 0, 3), temperature=0.2,
                    recall_max_tokens=100).to_dict()
    assert small["retained_tokens"] <= 300 and small["folds"][-1]["clipped"]
    assert rec["final_carry"].endswith(small["final_carry"])
    assert carrier_of(load_arm_table(resources)["arms"]["clear"]).keep_last == 3


# -- trim -------------------------------------------------------------------------------


def test_trim_keeps_the_newest_tokens_of_the_session_and_drops_the_rest(
        resources, fixture, fold_prompts, tmp_path):
    rec, backend = run(resources, fixture, fold_prompts, tmp_path, "trim", scale=0.25)
    session = "\n".join(fixture.chunks)
    cap = arm_of(resources, "trim", 0.25).carry_cap_tokens
    assert len(backend.sent) == 1  # the recall turn alone
    assert session.endswith(rec["final_carry"]) and rec["final_carry"] != session
    assert rec["retained_tokens"] <= cap and rec["folds"][-1]["clipped"]
    # the longest suffix within the cap: one character more is over it
    start = len(session) - len(rec["final_carry"])
    assert backend.count_tokens(session[start - 1:]) > cap
    recall = backend.sent[0].messages[-1]["content"]
    kept = [f.value in recall for f in fixture.graded]
    assert any(kept) and not all(kept)
