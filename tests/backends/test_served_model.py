"""Who really answered: each call's record keeps what the response says served it, and a
row another model served is invalid as `served_by_other`, never graded as the model's.

The shapes of Anthropic's server-side fallback are learned from anthropic-sdk-python
(src/anthropic/types/beta/, generated from the API's OpenAPI spec) and the docs page
https://platform.claude.com/docs/en/build-with-claude/refusals-and-fallback; the
stand-in (tests/support/anthropic_standin.py) answers in them. What each test relies on
is quoted beside it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldstudy.backends import make_backend
from foldstudy.backends.base import ChatRequest, same_model, served_by_other, served_record
from foldstudy.backends.call import cached_complete
from foldstudy.backends.openrouter import OpenRouterBackend, endpoint_pin
from foldstudy.backends.store import ResponseStore
from foldstudy.grade.validity import fold_attempt, retryable, validity
from foldstudy.io import write_json
from foldstudy.run.probe import OK, probe_model
from foldstudy.run.probe_summary import summary_row

from ..support import records
from ..support.anthropic_standin import AnthropicStandin
from ..support.gateway_standin import Endpoint, GatewayStandin, Model

KEY = "anthropic-standin-key"
ASKED, OTHER = "claude-standin", "claude-fallback"
CFG = {"backend": "anthropic", "model_id": ASKED, "api_key_env": "SERVED_TEST_KEY",
       "price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0,
       "max_attempts": 2, "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05,
       "timeout_s": 5}
# The fallback betas and request field this study never sends (the docs page's
# "betas: ["server-side-fallback-2026-06-01"], fallbacks: [{ model: ... }]", and the
# 2026-07-01 beta with `fallbacks: "default"` that clients send)
FALLBACK_BETAS = ("server-side-fallback-2026-06-01", "server-side-fallback-2026-07-01")


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("SERVED_TEST_KEY", KEY)


def request(text: str = "The relay listens on port 48213.", **kw: Any) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "Keep notes."},
                                 {"role": "user", "content": text}),
                       max_tokens=200, temperature=0.2, seed=3, **kw)


def cfg(standin: AnthropicStandin) -> dict[str, Any]:
    return {**CFG, "base_url": standin.base_url}


# -- the matching rule ----------------------------------------------------------------


@pytest.mark.parametrize("asked, served", [
    ("claude-x", "claude-x"),
    ("claude-x", "claude-x-20260101"),  # an alias answered by its dated id (Anthropic)
    ("gpt-4o", "gpt-4o-2024-08-06"),  # OpenAI's dated form
    ("qwen/qwen3-8b", "qwen/qwen3-8b"),  # the gateway answers with the slug asked
    ("qwen/qwen3-8b", "qwen/qwen3-8b-04-28"),  # ... or its dated canonical slug
    ("deepseek/deepseek-r1", "deepseek/deepseek-r1-0528"),
    ("meta-llama/llama-3.1-8b-instruct:free", "meta-llama/llama-3.1-8b-instruct"),
    ("Claude-X", "claude-x"),  # case is not identity
])
def test_a_provider_normalized_id_is_the_model_asked(asked, served):
    assert same_model(asked, served)


@pytest.mark.parametrize("asked, served", [
    ("claude-x", "claude-x-mini"),  # another model sharing a prefix
    ("gpt-4o", "gpt-4o-mini"),
    ("gpt-4o", "gpt-4o-mini-2024-07-18"),
    ("claude-x-20260101", "claude-x-20260301"),  # a dated id asked: another date is not it
    ("claude-x", "claude-y-20260101"),
    ("qwen/qwen3-8b", "qwen/qwen3-8b-fp4"),  # a quantization under the same name is not it
    ("qwen/qwen3-8b", "mistral/qwen3-8b"),
    ("claude-x", "claude-x-1"),  # one digit is no release date
])
def test_another_model_is_not_the_model_asked(asked, served):
    assert not same_model(asked, served)


def test_what_served_a_call_is_judged_only_where_the_response_says():
    assert served_by_other({}) == ""  # a reply stored before Reply.served existed
    assert served_by_other(served_record(ASKED, None)) == ""  # the response names none
    assert served_by_other(served_record(ASKED, f"{ASKED}-20260101")) == ""
    assert served_by_other(served_record(ASKED, OTHER)) == OTHER
    # a local server names what it loaded: recorded, not judged
    assert served_by_other(served_record("qwen3", "Qwen3-8B-Q4_K_M.gguf", judged=False)) == ""
    # a fallback is another model even where the top-level model echoes the one asked
    hop = [{"from": ASKED, "to": OTHER}]
    assert served_by_other(served_record(ASKED, ASKED, fallbacks=hop)) == OTHER
    assert served_by_other(served_record(ASKED, OTHER, fallbacks=[],
                                         iterations=["fallback_message"])) == OTHER


# -- Anthropic: never asks for a fallback; one served anyway is recorded -------------------


def test_the_anthropic_backend_never_asks_for_a_fallback():
    """No request of any kind (plain, schema, compaction, continuing from a block)
    carries `fallbacks` or a fallback beta: the row must measure the model it names."""
    with AnthropicStandin() as s:
        b = make_backend("claude", cfg(s))
        b.complete(request())
        b.complete(request(response_schema={"type": "object", "properties": {
            "notes": {"type": "string"}}, "required": ["notes"]}))
        block = b.compact(None, "Port 48213 and key kx-7Q2M-93LD.", "Keep notes.").item
        b.complete(request(context=block))
        b.compact(block, "Shard 4417 was drained.", "Keep notes.")
    assert len(s.calls) == 5
    for c in s.calls:
        assert "fallbacks" not in c.body
        assert not any(beta in c.headers.get("anthropic-beta", "") for beta in FALLBACK_BETAS)


def test_a_fallback_block_and_iteration_are_kept_beside_what_was_asked():
    """anthropic-sdk-python BetaFallbackBlock: "Marks the point in `content` where one
    model's output gives way to the next" with `from` ("the model that declined at this
    hop") and `to` ("The fallback model producing the content that follows this block");
    BetaFallbackMessageIterationUsage: "Whether a fallback model served the response is
    signalled by the presence of this entry in `usage.iterations`" (type
    "fallback_message"); a declined hop leaves a "message" entry."""
    with AnthropicStandin(fallback_to=OTHER) as s:
        reply = make_backend("claude", cfg(s)).complete(request())
    body_content = s.fell_back  # the stand-in answered this request from the fallback
    assert len(body_content) == 1
    assert reply.served == {"asked": ASKED, "model": OTHER, "judged": True,
                            "fallbacks": [{"from": ASKED, "to": OTHER}],
                            "iterations": ["message", "fallback_message"]}
    assert served_by_other(reply.served) == OTHER
    assert reply.text  # the fallback's text is the reply's: nothing says so but `served`
    # both hops are billed from usage.iterations, as the compaction's are
    assert reply.prompt_tokens == 2 * reply.raw["usage"]["input_tokens"]


def test_a_sticky_fallback_with_no_block_is_caught_by_its_iteration():
    """BetaFallbackBlock: "A turn routed directly by the sticky decision has no such
    boundary and carries no block — the signal for whether a fallback model served the
    response is the presence of a `fallback_message` entry in `usage.iterations`"."""
    with AnthropicStandin(fallback_to=OTHER, sticky=True) as s:
        reply = make_backend("claude", cfg(s)).complete(request())
    assert reply.served["fallbacks"] == [] and reply.served["iterations"] == [
        "fallback_message"]
    assert served_by_other(reply.served) == OTHER


@pytest.mark.parametrize("serves, other", [({ASKED: f"{ASKED}-20260101"}, ""),
                                           ({ASKED: "claude-haiku-standin"},
                                            "claude-haiku-standin")])
def test_the_model_the_response_names_is_compared_with_the_one_asked(serves, other):
    with AnthropicStandin(serves=serves) as s:
        reply = make_backend("claude", cfg(s)).complete(request())
    assert reply.served["asked"] == ASKED and reply.served["model"] == serves[ASKED]
    assert served_by_other(reply.served) == other


# -- the gateway: the slug it answers with ------------------------------------------------


def test_the_gateway_records_the_slug_and_provider_that_served(monkeypatch):
    """Gateway A4: the response's `model` and `provider` say what served the call."""
    monkeypatch.setenv("OPENROUTER_TEST_KEY", "sk-or-v1-standin")
    slug = "acme/widget-7b"
    with GatewayStandin([Model(slug, [Endpoint("DeepInfra", "deepinfra/fp8")])]) as gw:
        b = OpenRouterBackend("widget", {
            "backend": "openrouter", "model_id": slug, "base_url": gw.base_url,
            "api_key_env": "OPENROUTER_TEST_KEY", "timeout_s": 5, "max_attempts": 1})
        b = b.pinned(endpoint_pin(b.list_endpoints()[0]))
        own = b.complete(request())
        gw.state.queue_faults(slug, [{"served_model": "acme/widget-7b-distill"}])
        other = b.complete(request("another"))
    assert own.served == {"asked": slug, "model": slug, "judged": True,
                          "provider": "DeepInfra"}
    assert served_by_other(own.served) == ""
    assert served_by_other(other.served) == "acme/widget-7b-distill"


# -- the validity rule ----------------------------------------------------------------------


def served_fold(i: int, served: dict[str, Any]) -> dict[str, Any]:
    f = records.fold(i, f"carry {i}")
    f["reply"]["served"] = served
    return f


def test_a_row_another_model_served_is_invalid_and_never_retried(tmp_path):
    own = served_record(ASKED, f"{ASKED}-20260101")
    fell = served_record(ASKED, OTHER, fallbacks=[{"from": ASKED, "to": OTHER}],
                         iterations=["message", "fallback_message"])
    fine = records.record(["a", "b"], folds=[served_fold(0, own), served_fold(1, own)])
    assert validity(fine) == (True, "")
    bad = records.record(["a", "b"], folds=[served_fold(0, own), served_fold(1, fell)])
    valid, reason = validity(bad)
    assert (valid, reason) == (False, f"served_by_other:{OTHER}")
    assert not retryable(reason)
    # the recall turn is a call too
    recall_fell = records.record(["a"], folds=[served_fold(0, own)])
    recall_fell["recall"]["reply"] = {"served": fell}
    assert validity(recall_fell)[1] == f"served_by_other:{OTHER}"
    # --config retry_infrastructure=true leaves it decided: the attempt stays 1
    path = tmp_path / "r.json"
    write_json(bad, path)
    assert fold_attempt(path, retry_infrastructure=True) == 1
    # a record made before replies kept `served` is judged exactly as it was
    old = records.record(["a", "b"])
    assert all("served" not in f["reply"] for f in old["folds"])
    assert validity(old) == (True, "")


def test_the_store_serves_a_fallback_reply_again_and_the_row_stays_decided(tmp_path):
    """A rerun sends nothing for a row already decided: the stored fallback reply is the
    reply, and the row it makes is served_by_other again."""
    with AnthropicStandin(fallback_to=OTHER) as s:
        b = make_backend("claude", cfg(s))
        first, hit, _ = cached_complete(b, ResponseStore(tmp_path), request(), {"t": 1})
        again, hit2, _ = cached_complete(b, ResponseStore(tmp_path), request(), {"t": 1},
                                         recheck=True)
    assert not hit and hit2 and len(s.calls) == 1
    assert again.served == first.served and served_by_other(again.served) == OTHER


# -- the probe reports it ---------------------------------------------------------------------


def test_the_probe_reports_whether_the_endpoint_fell_back(study_arms, tmp_path):
    arms = [study_arms("config.yaml", 0.1)[a] for a in "jm"]
    with AnthropicStandin(fallback_to=OTHER) as s:
        c = cfg(s)
        rec = probe_model("claude", make_backend("claude", c), ResponseStore(tmp_path),
                          arms, 2000, 0.2, 1, c)
    # every plain reply fell back (the compaction is never a plain reply)
    assert rec["served_by_other"] and set(rec["served_by_other"].values()) == {OTHER}
    assert "native_compaction" not in rec["served_by_other"]
    assert rec["verdict"] == OK  # reported, never a verdict: the rows decide
    row = summary_row(rec)
    assert row["served_by_other"] == " ".join(f"{k}={OTHER}" for k in
                                              sorted(rec["served_by_other"]))
    exact = rec["shapes"][0]["exact_request"]["reply"]["served"]
    assert exact["fallbacks"] == [{"from": ASKED, "to": OTHER}]
    json.dumps(rec)  # the record is written as JSON
    with AnthropicStandin() as s:
        c = cfg(s)
        own = probe_model("claude", make_backend("claude", c), ResponseStore(tmp_path / "o"),
                          arms, 2000, 0.2, 1, c)
    assert own["served_by_other"] == {} and summary_row(own)["served_by_other"] == ""
