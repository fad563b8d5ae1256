"""The fold's carry rules, the validity rule and the response store, without a model."""

from __future__ import annotations

import json
import threading

import pytest

from foldstudy.backends.base import Backend, ChatRequest, Reply
from foldstudy.backends.store import ResponseStore, cache_key
from foldstudy.grade.validity import retryable, validity
from foldstudy.run.fold import carry_of


def test_q_is_rendered_back_under_the_five_headings(arms):
    reply = json.dumps({"constraints": "c", "decisions": "d", "identifiers": "52677",
                        "open_issues": "o", "next_steps": "n"})
    carry, ok, valid, errors = carry_of(arms["q"], reply)
    assert ok and valid and not errors
    assert carry.splitlines()[0] == "Constraints" and "Identifiers\n52677" in carry


def test_f_carries_the_raw_envelope_n_only_summary_g_the_parsed_text(arms):
    reply = json.dumps({"summary": "s 52677", "preserved_paths": ["/opt/x"],
                        "preserved_tool_names": ["kubectl"]})
    assert carry_of(arms["f"], reply)[0] == reply
    assert carry_of(arms["n"], reply)[0] == "s 52677"
    g = carry_of(arms["g"], reply)[0]
    assert "- /opt/x" in g and not g.startswith("{")


def test_over_ceiling_reply_is_recorded_not_fixed(arms):
    reply = json.dumps({"summary": "x" * 2000, "preserved_paths": [],
                        "preserved_tool_names": []})
    carry, ok, valid, errors = carry_of(arms["f"], reply)  # f declares 1,024 chars
    assert ok and not valid and errors == ["summary: 2000 chars, over its declared ceiling of 1024"]
    assert carry == reply


def test_a_plain_text_arms_fold_never_loads_the_schema_validator():
    """A fold job is a process of its own, and a text arm's never validates a reply, so
    it does not pay jsonschema's import; a schema arm's loads it and validates."""
    import subprocess
    import sys

    from ..conftest import ROOT

    code = ("import sys; from pathlib import Path; "
            "from foldstudy.study.spec import load_arm_table, resolve_arm; "
            "from foldstudy.run.fold import carry_of; "
            f"r = Path({str(ROOT / 'resources')!r}); t = load_arm_table(r); "
            "print(carry_of(resolve_arm('m', t, r, 0.05), 'notes 52677')[:2], "
            "'jsonschema' in sys.modules); "
            "print(carry_of(resolve_arm('j', t, r, 0.05), '{\"summary\": 7}')[2:], "
            "'jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "('notes 52677', True) False"
    assert out[1] == f"{(False, ['summary: fails type=' + repr('string')])} True"


def test_unparseable_reply_is_carried_as_written(arms):
    carry, ok, valid, errors = carry_of(arms["j"], '{"summary": "cut off mid')
    assert not ok and not valid and carry == '{"summary": "cut off mid'


def base_record(**kw):
    rec = {"status": "run", "folds": [{"reply": {"served_by": "p1"}}], "recall": {"answer": ""},
           "catchup_fired": False, "missing_folds": 0, "infra_error": None,
           "endpoint": {"pin": "p1"}}
    rec.update(kw)
    return rec


@pytest.mark.parametrize("kw, valid, reason, retry", [
    ({}, True, "", False),
    ({"infra_error": {"kind": "transport"}}, False, "infrastructure:transport", True),
    ({"folds": [{"reply": {"served_by": "p2"}}]}, False, "endpoint_mismatch:p2", True),
    ({"catchup_fired": True, "missing_folds": 1}, False, "catchup_fired", False),
    ({"recall": None}, False, "missing_folds", True),
    ({"status": "not_run", "not_run_reason": "probe:context_too_short"}, False,
     "not_run:probe:context_too_short", False),
    # a staged run budget_usd stopped part-way: its folds kept, rerun only at a new budget
    ({"status": "not_run", "not_run_reason": "budget", "recall": None}, False,
     "not_run:budget", False),
])
def test_validity_rule(kw, valid, reason, retry):
    assert validity(base_record(**kw)) == (valid, reason)
    if not valid:
        assert retryable(reason) is retry


def test_arm_behaviour_stays_valid():
    rec = base_record(folds=[{"reply": {"served_by": "p1", "finish_reason": "length"},
                              "parse_ok": False}])
    assert validity(rec) == (True, "")


REQ = ChatRequest(messages=({"role": "user", "content": "hi"},), max_tokens=5, temperature=0.0)
SAMPLE = {"sweep": "s", "model": "m", "arm": "j", "repeat": 0, "turn": "fold0"}


def test_cache_key_separates_repeats_and_endpoints():
    k = cache_key(REQ, {"backend": "embedded"}, SAMPLE)
    assert k == cache_key(REQ, {"backend": "embedded"}, dict(SAMPLE))
    assert k != cache_key(REQ, {"backend": "embedded"}, {**SAMPLE, "repeat": 1})
    assert k != cache_key(REQ, {"backend": "other"}, SAMPLE)


def test_store_round_trip_and_parallel_writers(tmp_path):
    store = ResponseStore(tmp_path)
    reply = Reply("t", "stop", 1, 1, "exact", 0.1, "embedded")
    key = cache_key(REQ, {}, SAMPLE)
    assert store.get(key) is None
    threads = [threading.Thread(target=store.put, args=(key, REQ, SAMPLE, reply, {}))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get(key, {}) == reply
    assert (store.hits, store.misses) == (1, 1)
    assert not list(tmp_path.rglob(".tmp-*"))


def _stored(tmp_path):
    from ..support.store import two_entries

    return two_entries(tmp_path)


def test_a_store_entry_is_verified_on_every_read(tmp_path):
    """A reply rewritten on disk is refused by name, never served."""
    import pytest

    from foldstudy.backends.store import StoreCorrupt

    store, endpoint, keys = _stored(tmp_path)
    assert store.get(keys[0], endpoint).text == "0 of 14 facts"
    p = store.path(keys[0])
    p.write_text(p.read_text().replace("0 of 14 facts", "14 of 14 fact"))
    with pytest.raises(StoreCorrupt, match=str(p)) as e:
        store.get(keys[0], endpoint)
    assert "digest" in str(e.value)


def test_an_entry_copied_over_another_key_is_refused(tmp_path):
    import pytest

    from foldstudy.backends.store import StoreCorrupt

    store, endpoint, keys = _stored(tmp_path)
    store.path(keys[1]).write_bytes(store.path(keys[0]).read_bytes())
    with pytest.raises(StoreCorrupt, match="do not hash to its key"):
        store.get(keys[1], endpoint)


def test_a_store_entry_with_flipped_bytes_is_named_not_a_traceback(tmp_path):
    import pytest

    from foldstudy.backends.store import StoreCorrupt

    store, endpoint, keys = _stored(tmp_path)
    p = store.path(keys[0])
    p.write_bytes(b"\xff\xfe" + p.read_bytes()[2:])
    with pytest.raises(StoreCorrupt, match="not readable JSON"):
        store.get(keys[0], endpoint)


def test_a_rendered_carry_knows_which_characters_the_model_wrote(arms):
    """Fill counts the model's characters (paper §4.9), not the headings and labels the
    carry adds: q's five field values, k's values under the fixed headings, and all of a
    plain or raw carry. The carry text itself is unchanged (carry_of)."""
    from foldstudy.run.fold import carry_rendered

    values = {"constraints": "c" * 10, "decisions": "d" * 20, "identifiers": "52677",
              "open_issues": "", "next_steps": "n"}
    q, *_ = carry_rendered(arms["q"], json.dumps(values))
    assert q.text == carry_of(arms["q"], json.dumps(values))[0]
    assert q.model_chars() == 36 < len(q.text)
    assert q.model_chars(len("Constraints\n") + 4) == 4  # a clipped carry: what is left
    k_reply = json.dumps({k: ["a", "bb"] if v.get("type") == "array" else "v"
                          for k, v in arms["k"].schema["properties"].items()})
    k, *_ = carry_rendered(arms["k"], k_reply)
    assert k.text == carry_of(arms["k"], k_reply)[0]
    assert k.model_chars() == sum(len(t) for t, mine in k.pieces if mine) < len(k.text)
    for arm, reply in (("m", " plain text "), ("f", '{"summary": "s"}')):
        r, *_ = carry_rendered(arms[arm], reply)
        assert r.model_chars() == len(r.text) == len(reply.strip())


class _RunsOut(Backend):
    """Answers two calls, then the ledger's refusal (BudgetExhausted) as the third
    call's reservation would raise it."""

    kind = "runs-out-test"

    def __init__(self) -> None:
        self.identity = {"backend": self.kind, "model": "toy"}
        self.sent = 0

    @classmethod
    def describe(cls, name, cfg, pin=None):
        return {"backend": cls.kind, "model": name}

    def complete(self, request):
        from foldstudy.backends.ledger import BudgetExhausted

        if self.sent == 2:
            raise BudgetExhausted("budget_usd 1 reached at s/toy/r0/m fold2: spent $1.0000")
        self.sent += 1
        return Reply(text="a summary", finish_reason="stop", prompt_tokens=1,
                     completion_tokens=1, token_count_method="estimate", latency_s=0.0,
                     served_by="toy", cost_usd=0.25)


def test_a_staged_run_the_budget_stops_keeps_its_paid_folds_and_any_other_fails_its_job(
        arms, resources, tmp_path):
    """In a staged decision's sweep the run ends as a not_run:budget record with
    the two folds it paid (a look counts their spend); elsewhere the ledger's one-line
    refusal ends the job, as before, and no record is made."""
    from foldstudy.analysis.staging import record_usd
    from foldstudy.backends.ledger import BudgetExhausted
    from foldstudy.run.fold import Prompts, Sample, run_row

    from ..support.records import fixture

    prompts = Prompts.from_files(*(resources / "prompts" / n for n in (
        "fold_user.md.j2", "recall_system.md", "recall_user.md.j2")))

    def run(staged: bool, where: str):
        return run_row(fixture(4), arms["m"], _RunsOut(), ResponseStore(tmp_path / where),
                       prompts, Sample("s", "toy", "m", 0, 1, 7), 0.2, 64, staged=staged)

    record = run(True, "staged").to_dict()
    assert (record["status"], record["not_run_reason"]) == ("not_run", "budget")
    assert record["not_run_detail"].startswith("budget_usd 1 reached")
    assert len(record["folds"]) == 2 and record["recall"] is None
    assert validity(record) == (False, "not_run:budget") and record_usd(record) == 0.5
    with pytest.raises(BudgetExhausted, match="budget_usd 1 reached"):
        run(False, "plain")
