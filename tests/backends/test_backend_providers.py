"""The providers' own APIs (backends anthropic and openai_responses) against loopback
stand-ins of their documented wire formats: the exact request each sends, how a reply
is read, errors classified and retried, paid calls settled from usage and replayed for
nothing, the native compaction each asks for, and the probe's verdict on it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from foldstudy.backends import make_backend
from foldstudy.backends.base import BackendError, ChatRequest, ContextOverflow
from foldstudy.backends.call import cached_complete
from foldstudy.backends.ledger import Ledger, read_ledger
from foldstudy.backends.store import ResponseStore, cache_key
from foldstudy.run.probe import (
    AUTH_FAILED,
    NATIVE_NOT_RETURNED,
    NATIVE_REFUSED,
    OK,
    PROBE_COMPACTION_CHUNK,
    probe_model,
)
from foldstudy.run.probe_summary import summary_row

from ..support.anthropic_standin import ON_DEMAND_BETA, THRESHOLD_BETA, AnthropicStandin
from ..support.openai_responses_standin import OpenAIResponsesStandin
from ..support.provider_standin import compact, identifiers

SYSTEM = "You keep notes of an operations session."
CHUNK = ("The relay listens on port 48213; the signing key is kx-7Q2M-93LD, the run id "
         "9f3c2e71-5b8a-4d06 and the release v7.41.3-kestrel.")
NEXT = "Later the cache origin moved to cdn-17.ops.internal and shard 4417 was drained."
PRICES = {"price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0}
FAST = {"max_attempts": 3, "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05,
        "timeout_s": 5}


@dataclass(frozen=True)
class Provider:
    kind: str
    model_id: str
    key: str
    standin: type

    def start(self, **kw: Any) -> Any:
        return self.standin(models=(self.model_id,), key=self.key, **kw)

    def cfg(self, standin: Any, **over: Any) -> dict[str, Any]:
        return {"backend": self.kind, "model_id": self.model_id, "base_url": standin.base_url,
                "api_key_env": "PROVIDER_TEST_KEY", **PRICES, **FAST, **over}


ANTHROPIC = Provider("anthropic", "claude-standin", "anthropic-standin-key", AnthropicStandin)
OPENAI = Provider("openai_responses", "gpt-standin", "openai-standin-key",
                  OpenAIResponsesStandin)
PROVIDERS = [pytest.param(ANTHROPIC, id="anthropic"), pytest.param(OPENAI, id="openai")]


@pytest.fixture(params=PROVIDERS)
def provider(request, monkeypatch) -> Provider:
    monkeypatch.setenv("PROVIDER_TEST_KEY", request.param.key)
    return request.param


@pytest.fixture()
def keyed(monkeypatch):
    def set_key(p: Provider) -> Provider:
        monkeypatch.setenv("PROVIDER_TEST_KEY", p.key)
        return p
    return set_key


def req(schema: dict[str, Any] | None = None, max_tokens: int = 200, seed: int | None = 7
        ) -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": SYSTEM},
                                 {"role": "user", "content": CHUNK}),
                       max_tokens=max_tokens, temperature=0.2, seed=seed,
                       response_schema=schema, schema_name="arm_j")


SCHEMA = {"type": "object", "properties": {"summary": {"type": "string", "maxLength": 400}},
          "required": ["summary"], "additionalProperties": False}


# -- the exact request --------------------------------------------------------------


def test_anthropic_sends_the_messages_body_and_the_headers_the_docs_show(keyed):
    keyed(ANTHROPIC)
    with ANTHROPIC.start() as s:
        b = make_backend("claude", ANTHROPIC.cfg(s))
        b.complete(req())
        b.complete(req(SCHEMA))
    plain, schema = s.calls
    assert plain.path == "/v1/messages"
    assert plain.body == {"model": "claude-standin", "max_tokens": 200, "system": SYSTEM,
                          "messages": [{"role": "user", "content": CHUNK}],
                          "temperature": 0.2}  # no seed: the API takes none
    assert schema.body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    h = plain.headers
    assert h["x-api-key"] == ANTHROPIC.key and h["anthropic-version"] == "2023-06-01"
    assert "authorization" not in h and "anthropic-beta" not in h
    assert b.seed_sent is False and b.wire_parameters(req(SCHEMA)) == ["temperature",
                                                                        "output_config"]


def test_openai_sends_the_responses_body_and_a_bearer_key(keyed):
    keyed(OPENAI)
    with OPENAI.start() as s:
        b = make_backend("gpt", OPENAI.cfg(s, reasoning={"effort": "none"}))
        b.complete(req())
        b.complete(req(SCHEMA))
    plain, schema = s.calls
    assert plain.path == "/v1/responses"
    assert plain.body == {"model": "gpt-standin", "instructions": SYSTEM,
                          "input": [{"role": "user", "content": CHUNK}],
                          "max_output_tokens": 200, "temperature": 0.2, "store": False,
                          "reasoning": {"effort": "none"}}
    assert schema.body["text"] == {"format": {"type": "json_schema", "name": "arm_j",
                                              "schema": SCHEMA, "strict": True}}
    assert plain.headers["authorization"] == f"Bearer {OPENAI.key}"
    assert b.identity == {"backend": "openai_responses", "model": "gpt",
                          "model_id": "gpt-standin", "reasoning": {"effort": "none"}}


def test_a_plain_request_keys_the_store_as_before_the_native_field(provider):
    """ChatRequest.native is left out of a plain request's canonical form, so a study's
    store replays unchanged; a compaction request's key holds its previous item."""
    plain = req()
    assert "native" not in plain.canonical()
    with provider.start() as s:
        b = make_backend("m", provider.cfg(s))
        one = b.compaction_request(None, CHUNK, SYSTEM, 300, 0.2)
        two = b.compaction_request({"type": "compaction", "content": "x"}, CHUNK, SYSTEM, 300,
                                   0.2)
    assert one.canonical()["native"]["mechanism"] == b.native_compaction
    sample = {"sweep": "s", "model": "m", "arm": "native", "repeat": 0, "turn": 1}
    assert cache_key(one, b.identity, sample) != cache_key(two, b.identity, sample)


# -- the reply ----------------------------------------------------------------------


def test_a_reply_is_read_and_priced_from_its_usage(provider):
    with provider.start() as s:
        b = make_backend("m", provider.cfg(s))
        r = b.complete(req())
        cut = b.complete(req(max_tokens=3))
    assert "48213" in r.text and "kx-7Q2M-93LD" in r.text
    assert r.finish_reason == "stop" and cut.finish_reason == "length"
    assert r.token_count_method == "exact" and r.prompt_tokens > 0 < r.completion_tokens
    assert r.cost_usd == pytest.approx((r.prompt_tokens * 3 + r.completion_tokens * 15) / 1e6)
    assert r.served_by == b.provider_name and r.raw["reasoning_returned"] is False


def test_a_missing_key_refuses_before_anything_is_sent(provider, monkeypatch, tmp_path):
    monkeypatch.delenv("PROVIDER_TEST_KEY")
    with provider.start() as s:
        b = make_backend("m", provider.cfg(s))
        with pytest.raises(BackendError, match="PROVIDER_TEST_KEY is not set") as e:
            b.complete(req())
        rec = probe_model("m", b, ResponseStore(tmp_path), [], 1000, 0.2, 1, provider.cfg(s))
    assert e.value.kind == "auth" and not s.calls
    assert rec["verdict"] == AUTH_FAILED and rec["native_compaction"]["verdict"] == AUTH_FAILED


# -- errors, classified once and retried ---------------------------------------------


def test_overloaded_and_rate_limited_calls_are_retried_with_each_attempt_recorded(
        provider, tmp_path):
    status = 529 if provider is ANTHROPIC else 503
    with provider.start() as s:
        s.queue_faults([{"status": status}, {"status": 429, "retry_after": 1}])
        b = make_backend("m", provider.cfg(s))
        reply, hit, _ = cached_complete(b, ResponseStore(tmp_path), req(), {"turn": 1})
    assert not hit and len(s.calls) == 3
    first, second, ok = reply.attempts
    assert (first["outcome"], first["status"]) == ("server", status)
    assert (second["outcome"], second["status"]) == ("rate_limited", 429)
    assert second["retry_after_s"] == 1.0 and ok["outcome"] == "ok"


def test_a_refusal_is_final_and_names_the_providers_error_type(keyed, tmp_path):
    keyed(ANTHROPIC)
    with ANTHROPIC.start(betas=(THRESHOLD_BETA,)) as s:
        b = make_backend("claude", ANTHROPIC.cfg(s))
        with pytest.raises(BackendError) as e:
            cached_complete(b, ResponseStore(tmp_path),
                            b.compaction_request(None, CHUNK, SYSTEM, 300, 0.2), {"turn": 1})
    assert len(s.calls) == 1  # a 400 is not sent again
    err = e.value
    assert err.kind == "bad_request" and not err.retryable
    assert err.detail["error_type"] == "invalid_request_error"
    assert f"`{ON_DEMAND_BETA}` for the `anthropic-beta` header" in err.message
    assert b.refused_parameter(err) == f"anthropic-beta: {ON_DEMAND_BETA}"


def test_anthropics_too_long_prompt_is_a_context_overflow():
    from foldstudy.backends.http import classify_http_error

    body = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 210511 tokens > "
                                                  "200000 maximum"}}
    assert isinstance(classify_http_error(400, body, "", {}, None), ContextOverflow)


def test_openais_quota_is_final_and_its_retry_after_ms_is_read(keyed, tmp_path):
    from foldstudy.backends.http import classify_http_error

    keyed(OPENAI)
    with OPENAI.start() as s:
        s.queue_faults([{"status": 429, "quota": True}])
        b = make_backend("gpt", OPENAI.cfg(s))
        with pytest.raises(BackendError) as e:
            cached_complete(b, ResponseStore(tmp_path), req(), {"turn": 1})
    assert e.value.kind == "insufficient_credits" and len(s.calls) == 1
    err = classify_http_error(429, {"error": {"message": "slow down"}}, "",
                              {"Retry-After-Ms": "250"}, None)
    assert err.kind == "rate_limited" and err.detail["retry_after_s"] == 0.25


def test_openais_failed_status_is_a_provider_fault_retried(keyed, tmp_path, monkeypatch):
    keyed(OPENAI)
    with OPENAI.start() as s:
        b = make_backend("gpt", OPENAI.cfg(s))
        real = s.response
        answers = iter([{"status": "failed", "output": [],
                         "error": {"code": "server_error", "message": "upstream failed"}}])
        monkeypatch.setattr(s, "response", lambda body: next(answers, None) or real(body))
        reply, _, _ = cached_complete(b, ResponseStore(tmp_path), req(), {"turn": 1})
    assert [a["outcome"] for a in reply.attempts] == ["provider_error", "ok"]


# -- spend, store, replay -----------------------------------------------------------


def test_paid_calls_settle_from_usage_and_a_replay_pays_nothing(provider, tmp_path):
    ledger = Ledger(tmp_path / "ledger.json", budget=1.0)
    store = ResponseStore(tmp_path / "store", ledger=ledger)
    sample = {"sweep": "s", "model": "m", "arm": "native", "repeat": 0, "turn": 1}
    with provider.start() as s:
        cfg = provider.cfg(s)
        live = make_backend("m", cfg)
        first = live.compaction_request(None, CHUNK, SYSTEM, 400, 0.2)
        r1, hit1, _ = cached_complete(live, store, first, sample)
        c1 = live.compaction_of(r1)
        second = live.compaction_request(c1.item, NEXT, SYSTEM, 400, 0.2)
        r2, _, _ = cached_complete(live, store, second, {**sample, "turn": 2})
        sent = len(s.calls)
        # the rerun: the store answers every call, whatever the backend
        again, hit_live, _ = cached_complete(make_backend("m", cfg), store, first, sample)
        replay = make_backend("m", cfg, replay=True)
        c2 = replay.compaction_of(cached_complete(
            replay, ResponseStore(tmp_path / "store"),
            replay.compaction_request(c1.item, NEXT, SYSTEM, 400, 0.2),
            {**sample, "turn": 2})[0])
    spent = read_ledger(tmp_path / "ledger.json")
    assert not hit1 and hit_live and again == r1 and len(s.calls) == sent == 2
    assert spent["calls"] == 2
    assert spent["spent_usd"] == pytest.approx(r1.cost_usd + r2.cost_usd)
    assert r1.cost_usd > 0 and c2.item == live.compaction_of(r2).item


# -- native compaction --------------------------------------------------------------


def compact_twice(s: Any, p: Provider) -> tuple[Any, Any, Any]:
    """CHUNK compacted, then NEXT after its item: (backend, first, second)."""
    b = make_backend("m", p.cfg(s))
    one = b.compact(None, CHUNK, SYSTEM, 400, 0.2)
    return b, one, b.compact(one.item, NEXT, SYSTEM, 400, 0.2)


def test_anthropics_on_demand_compaction_is_readable_and_replays_its_block_first(keyed):
    keyed(ANTHROPIC)
    with ANTHROPIC.start(seed=3, loss=0.4) as s:
        _, one, two = compact_twice(s, ANTHROPIC)
    first, second = s.calls
    assert first.body == {"model": "claude-standin", "max_tokens": 400, "system": SYSTEM,
                          "messages": [{"role": "user", "content": CHUNK}],
                          "temperature": 0.2, "compaction": {"type": "summarize"}}
    assert first.headers["anthropic-beta"] == ON_DEMAND_BETA
    # the block goes first, as an assistant message, byte for byte as it came back
    assert second.body["messages"] == [{"role": "assistant", "content": [one.item]},
                                       {"role": "user", "content": NEXT}]
    assert second.headers["anthropic-beta"] == ON_DEMAND_BETA
    kept, later = compact(CHUNK, 3, 0.4), compact(NEXT, 3, 0.4)
    assert 0 < len(kept) < len(identifiers(CHUNK))  # the seeded loss took some
    assert identifiers(one.text) == kept
    assert identifiers(two.text) == kept + later  # what survived stays; the new is cut
    assert not one.opaque and one.mechanism == "on_demand" and one.beta == ON_DEMAND_BETA
    assert one.retained_tokens == one.reply.raw["usage"]["iterations"][0]["output_tokens"]
    # on-demand usage is in the iterations only: counted and priced from them
    assert one.reply.raw["usage"]["input_tokens"] == 0 < one.reply.prompt_tokens


def test_a_changed_block_is_refused_and_a_failed_summary_is_no_compaction(keyed):
    keyed(ANTHROPIC)
    with ANTHROPIC.start() as s:
        b = make_backend("claude", ANTHROPIC.cfg(s))
        one = b.compact(None, CHUNK, SYSTEM, 400, 0.2)
        with pytest.raises(BackendError, match="was changed"):
            b.compact({**one.item, "content": one.text + "\nport 1"}, NEXT, SYSTEM, 400, 0.2)
        tiny = b.compact(None, CHUNK, SYSTEM, 2, 0.2)
    assert tiny.item is None and tiny.text is None
    assert tiny.reply.finish_reason == "length" and "no compaction block" in tiny.failure


def test_openais_compaction_is_opaque_and_keeps_user_messages_whole(keyed):
    keyed(OPENAI)
    with OPENAI.start(seed=3, loss=0.4) as s:
        b, one, two = compact_twice(s, OPENAI)
        window = [{"role": "user", "content": "Keep port 50321 in mind."}, *one.item]
        three = b.compact(window, NEXT, SYSTEM, 400, 0.2)
    first, second, _ = s.calls
    assert first.path == "/v1/responses/compact"
    # no output budget or temperature: the endpoint takes neither
    assert first.body == {"model": "gpt-standin", "instructions": SYSTEM,
                          "input": [{"role": "assistant", "content": CHUNK}]}
    assert second.body["input"] == [*one.item, {"role": "assistant", "content": NEXT}]
    (item,) = one.item
    assert item["type"] == "compaction" and one.opaque and one.text is None
    assert "48213" not in json.dumps(one.item) and one.retained_tokens is None
    assert s.decrypt(item["encrypted_content"]) == compact(CHUNK, 3, 0.4)
    assert s.decrypt(two.item[-1]["encrypted_content"]) == (compact(CHUNK, 3, 0.4)
                                                           + compact(NEXT, 3, 0.4))
    # a user message comes back whole, before the one compaction item
    assert three.item[0] == {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Keep port 50321 in mind."}]}
    assert [i["type"] for i in three.item] == ["message", "compaction"]


# -- the probe ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_arms(study_arms):
    study = study_arms("config.yaml", 0.1)
    return [study[a] for a in "jm"]


def probe(p: Provider, standin: Any, arms: list, tmp_path, replay: bool = False
          ) -> dict[str, Any]:
    cfg = p.cfg(standin)
    return probe_model("m", make_backend("m", cfg, replay=replay), ResponseStore(tmp_path),
                       arms, 2000, 0.2, 1, cfg)


@pytest.mark.parametrize("p, mechanism, beta", [(ANTHROPIC, "on_demand", ON_DEMAND_BETA),
                                                (OPENAI, "compact_endpoint", "")])
def test_the_probe_compacts_once_and_names_the_mechanism(p, mechanism, beta, keyed,
                                                         two_arms, tmp_path):
    keyed(p)
    with p.start() as s:
        rec = probe(p, s, two_arms, tmp_path)
        sent = len(s.calls)
        replayed = probe(p, s, two_arms, tmp_path, replay=True)
    assert len(s.calls) == sent  # a replay builds and reads the compaction as live did
    verdict = ("verdict", "mechanism", "beta", "compacts", "opaque", "retained_tokens",
               "responsible_parameter", "allowed", "answered_by")
    assert [replayed["native_compaction"][k] for k in verdict] == [
        rec["native_compaction"][k] for k in verdict]
    assert replayed["native_compaction"]["exact_request"]["store_hit"]
    native = rec["native_compaction"]
    assert rec["verdict"] == OK and rec["permissions"]["j"]["allowed"]
    assert native["verdict"] == OK and native["allowed"] and native["compacts"]
    assert (native["mechanism"], native["beta"]) == (mechanism, beta)
    assert native["opaque"] is (p is OPENAI)
    # what answered, as its item shows it: the block's field names, never its contents
    assert native["answered_by"] == {"type": "compaction", "fields": (
        ["encrypted_content", "id", "type"] if p is OPENAI else
        ["content", "signature", "type"])}
    assert sum(PROBE_COMPACTION_CHUNK in json.dumps(c.body) for c in s.calls) == 1
    assert rec["price_prompt_usd_per_token"] == pytest.approx(3e-6)
    assert summary_row(rec)["native_compaction"] == f"ok {mechanism} {beta}".strip()


def test_a_proxys_own_compaction_shows_in_what_the_probe_says_answered(keyed, two_arms,
                                                                        tmp_path):
    """A proxy that writes the summary itself (the stand-in's polyfill, as LiteLLM's
    synthesized block: type and content) answers the same request with the same
    mechanism; what tells it apart is the item, and the probe records its field names."""
    keyed(ANTHROPIC)
    with ANTHROPIC.start() as s:
        signed = probe(ANTHROPIC, s, two_arms, tmp_path / "provider")["native_compaction"]
    with ANTHROPIC.start(polyfill=True) as s:
        proxy = probe(ANTHROPIC, s, two_arms, tmp_path / "proxy")["native_compaction"]
    assert (proxy["verdict"], proxy["mechanism"]) == (signed["verdict"], signed["mechanism"])
    assert signed["answered_by"]["fields"] == ["content", "signature", "type"]
    assert proxy["answered_by"] == {"type": "compaction", "fields": ["content", "type"]}


def test_the_probe_names_a_refused_beta_and_still_allows_the_plain_arms(keyed, two_arms,
                                                                        tmp_path):
    keyed(ANTHROPIC)
    with ANTHROPIC.start(betas=(THRESHOLD_BETA,)) as s:
        rec = probe(ANTHROPIC, s, two_arms, tmp_path)
    native = rec["native_compaction"]
    assert rec["verdict"] == OK and rec["permissions"]["m"]["allowed"]
    assert native["verdict"] == NATIVE_REFUSED and not native["allowed"]
    assert native["responsible_parameter"] == f"anthropic-beta: {ON_DEMAND_BETA}"
    assert summary_row(rec)["native_compaction"] == (
        f"{NATIVE_REFUSED} on_demand {ON_DEMAND_BETA} (anthropic-beta: {ON_DEMAND_BETA})")


def test_the_probe_names_a_missing_compact_endpoint(keyed, two_arms, tmp_path):
    """A gateway that serves /responses but not /responses/compact: the plain arms run,
    the native arm may not."""
    keyed(OPENAI)
    with OPENAI.start(compact_endpoint=False) as s:
        rec = probe(OPENAI, s, two_arms, tmp_path)
    native = rec["native_compaction"]
    assert rec["permissions"]["j"]["allowed"] and native["verdict"] == NATIVE_REFUSED
    assert native["responsible_parameter"] == "POST /responses/compact"


def test_a_summary_that_does_not_fit_is_not_returned(keyed, two_arms, tmp_path, monkeypatch):
    keyed(ANTHROPIC)
    monkeypatch.setattr("foldstudy.run.probe.PROBE_COMPACTION_MAX_TOKENS", 2)
    with ANTHROPIC.start() as s:
        rec = probe(ANTHROPIC, s, two_arms, tmp_path)
    assert rec["native_compaction"]["verdict"] == NATIVE_NOT_RETURNED


def test_reasoning_returned_is_read_from_each_providers_reply(monkeypatch):
    """The probe refuses an endpoint whose model reasons although the study runs without
    it (paper §4.2): a thinking block, or a Responses reasoning item with text; an empty
    reasoning item is not reasoning."""
    monkeypatch.setenv("PROVIDER_TEST_KEY", "k")
    cfg = {"model_id": "m", "base_url": "http://127.0.0.1:9/v1", **PRICES, **FAST,
           "api_key_env": "PROVIDER_TEST_KEY"}
    claude = make_backend("c", {**cfg, "backend": "anthropic"})
    gpt = make_backend("g", {**cfg, "backend": "openai_responses"})
    usage = {"input_tokens": 5, "output_tokens": 2}
    thought = {"content": [{"type": "thinking", "thinking": "first, the port", "signature": "s"},
                           {"type": "text", "text": "ok"}], "stop_reason": "end_turn",
               "usage": usage}
    assert claude.reply_of(req(), thought, 0.0).raw["reasoning_returned"]

    def reasoning(summary: list) -> dict[str, Any]:
        return {"status": "completed", "usage": usage, "output": [
            {"type": "reasoning", "summary": summary},
            {"type": "message", "content": [{"type": "output_text", "text": "ok"}]}]}
    assert gpt.reply_of(req(), reasoning([{"type": "summary_text", "text": "first"}]),
                        0.0).raw["reasoning_returned"]
    quiet = gpt.reply_of(req(), reasoning([]), 0.0)
    assert not quiet.raw["reasoning_returned"] and quiet.text == "ok"
