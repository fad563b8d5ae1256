"""The openrouter backend against a loopback stand-in speaking the gateway's documented
wire format: the pin on the wire, the serving endpoint checked, usage and cost, and one
test per error class (which are retried, which are final, every attempt recorded)."""

from __future__ import annotations

import time

import pytest

from foldstudy.backends.base import BackendError, ChatRequest, ContextOverflow, Reply
from foldstudy.backends.call import cached_complete
from foldstudy.backends.openrouter import OpenRouterBackend, endpoint_pin
from foldstudy.backends.store import ResponseStore
from foldstudy.grade.validity import validity

from ..support.gateway_standin import NO_ENDPOINTS, Endpoint, GatewayStandin, Model

KEY = "sk-or-v1-canary-5f0c1e2d9b8a7f6e"
MODEL = "acme/widget-7b"
FULL = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs",
        "reasoning")


@pytest.fixture()
def gateway(monkeypatch):
    monkeypatch.setenv("TEST_OR_KEY", KEY)
    models = [
        Model(MODEL, [Endpoint("DeepInfra", "deepinfra/fp8", "fp8", supported_parameters=FULL),
                      Endpoint("Novita", "novita", "bf16", supported_parameters=FULL,
                               price_prompt="0.0000009")]),
        Model("acme/no-reasoning-8b", [Endpoint("Chutes", "chutes", "bf16")]),
    ]
    with GatewayStandin(models, key=KEY) as g:
        yield g


def backend(gateway, model=MODEL, **over) -> OpenRouterBackend:
    cfg = {"backend": "openrouter", "model_id": model, "base_url": gateway.base_url,
           "api_key_env": "TEST_OR_KEY", "timeout_s": 5, "max_attempts": 4,
           "retry_initial_wait_s": 0.05, "retry_max_wait_s": 3, **over}
    b = OpenRouterBackend("widget", cfg)
    eps = b.list_endpoints()
    return b.pinned(endpoint_pin(next((e for e in eps if e["tag"].startswith("deepinfra")),
                                      eps[0])))


def request(schema: bool = False) -> ChatRequest:
    return ChatRequest(
        messages=({"role": "system", "content": "Fold the session."},
                  {"role": "user", "content": "Port 48213 is the relay."}),
        max_tokens=64, temperature=0.2, seed=11,
        response_schema={"type": "object", "properties": {"summary": {
            "type": "string", "maxLength": 100}}, "required": ["summary"],
            "additionalProperties": False} if schema else None)


def call(b, store, sample="s0", schema=False):
    return cached_complete(b, store, request(schema), {"sample": sample})


def test_pin_is_on_the_wire_and_the_serving_endpoint_recorded(gateway, tmp_path):
    b = backend(gateway)
    reply, hit, _ = call(b, ResponseStore(tmp_path), schema=True)
    sent = gateway.state.chat_calls()[-1]
    assert sent["provider"] == {"only": ["deepinfra/fp8"], "order": ["deepinfra/fp8"],
                                "allow_fallbacks": False, "require_parameters": True,
                                "quantizations": ["fp8"]}
    assert sent["reasoning"] == {"effort": "none"} and sent["seed"] == 11
    rf = sent["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    # The schema goes as declared, ceiling included (docs/design.md §4).
    assert rf["json_schema"]["schema"]["properties"]["summary"]["maxLength"] == 100
    assert not hit and reply.served_by == "DeepInfra" == b.identity["pin"]
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    assert reply.cost_usd == pytest.approx(reply.prompt_tokens * 2e-7
                                           + reply.completion_tokens * 8e-7)
    assert [a["outcome"] for a in reply.attempts] == ["ok"]
    assert b.identity["quantization"] == "fp8" and "pin" in b.identity


def test_served_by_comes_from_generation_stats_when_the_body_lacks_it(gateway, tmp_path):
    gateway.state.omit_provider_field = True
    reply, _, _ = call(backend(gateway), ResponseStore(tmp_path))
    assert reply.served_by == "DeepInfra"


def test_a_failed_generation_lookup_is_retried_not_left_unknown(gateway, tmp_path):
    """A free read: one 502 on GET /generation must not leave the endpoint unknown, which
    would make the row invalid for good (a retry serves the same stored reply)."""
    gateway.state.omit_provider_field = True
    gateway.state.queue_get_faults("generation", [{"status": 502}, {"status": 503}])
    reply, _, _ = call(backend(gateway), ResponseStore(tmp_path))
    assert reply.served_by == "DeepInfra"
    assert gateway.state.lookups() == 3
    assert len(gateway.state.chat_calls(MODEL)) == 1  # the paid call was sent once


def test_generation_stats_not_there_yet_are_polled(gateway, tmp_path):
    """Reference A4: how soon the stats exist after the completion is unconfirmed, "poll
    with retry". A 404 on the lookup is asked again, not taken as "unknown"."""
    gateway.state.omit_provider_field = True
    gateway.state.queue_get_faults("generation", [{"status": 404}, {"status": 404}])
    reply, _, _ = call(backend(gateway), ResponseStore(tmp_path))
    assert reply.served_by == "DeepInfra"
    assert gateway.state.lookups() == 3
    assert len(gateway.state.chat_calls(MODEL)) == 1


def test_a_retried_row_completes_or_buys_again_what_the_store_holds(gateway, tmp_path):
    """Paper §3.3: a row invalid for its endpoint may be retried. On the retry a stored
    reply whose endpoint was never named is looked up again (free), one another endpoint
    served is sent again (the pinned endpoint's reply is the study's), and a good one is
    served as it is. Without the retry every stored reply is served unchanged."""
    b, st = backend(gateway), gateway.state

    def retry(sample: str):
        return cached_complete(b, ResponseStore(tmp_path), request(), {"sample": sample},
                               recheck=True)

    # The lookup never answers (4 attempts): the paid reply is stored with no endpoint.
    st.omit_provider_field = True
    st.queue_get_faults("generation", [{"status": 502}] * 4)
    lost, _, key = call(b, ResponseStore(tmp_path), sample="lost")
    assert lost.served_by == "unknown"
    # Another endpoint served this one.
    st.omit_provider_field = False
    st.queue_faults(MODEL, [{"served_by": "SomewhereElse"}])
    strayed, _, _ = call(b, ResponseStore(tmp_path), sample="strayed")
    assert strayed.served_by == "SomewhereElse"
    good, _, _ = call(b, ResponseStore(tmp_path), sample="good")
    n_calls, n_gets = len(st.chat_calls(MODEL)), st.lookups()

    # Not a retry: the store answers, unchanged, and nothing goes out.
    for sample, stored in (("lost", lost), ("strayed", strayed), ("good", good)):
        assert call(b, ResponseStore(tmp_path), sample=sample)[:2] == (stored, True)
    assert (len(st.chat_calls(MODEL)), st.lookups()) == (n_calls, n_gets)

    # The retry: one lookup, no call, and the store now names the endpoint.
    st.omit_provider_field = True
    found, hit, _ = retry("lost")
    assert hit and found.served_by == "DeepInfra" and found.text == lost.text
    assert (len(st.chat_calls(MODEL)), st.lookups()) == (n_calls, n_gets + 1)
    assert ResponseStore(tmp_path).get(key, b.identity).served_by == "DeepInfra"
    # The stray is bought again from the pinned endpoint, and replaces the stored one.
    again, hit, _ = retry("strayed")
    assert not hit and again.served_by == "DeepInfra"
    assert len(st.chat_calls(MODEL)) == n_calls + 1
    assert call(b, ResponseStore(tmp_path), sample="strayed")[:2] == (again, True)
    # A reply from the pinned endpoint is served as it is.
    assert retry("good")[:2] == (good, True)
    assert len(st.chat_calls(MODEL)) == n_calls + 1


def test_without_a_pin_a_retry_buys_nothing_again(gateway, tmp_path):
    """The validity rule checks the endpoint only against a pin; so does the retry: an
    unpinned model's stored replies are all served as they are."""
    cfg = {"backend": "openrouter", "model_id": MODEL, "base_url": gateway.base_url,
           "api_key_env": "TEST_OR_KEY"}
    unpinned = OpenRouterBackend("widget", cfg)
    assert not unpinned.identity["pin"]
    reply = Reply(text="x", finish_reason="stop", prompt_tokens=1, completion_tokens=1,
                  token_count_method="exact", latency_s=0.1, served_by="Anyone")
    assert unpinned.recheck(reply) is reply
    assert backend(gateway).recheck(reply) is None  # pinned to DeepInfra: bought again


def test_another_endpoint_serving_makes_the_row_invalid(gateway, tmp_path):
    b = backend(gateway)
    gateway.state.queue_faults(MODEL, [{"served_by": "SomewhereElse"}])
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert reply.served_by == "SomewhereElse"
    record = {"endpoint": b.identity, "folds": [{"reply": reply.to_dict()}],
              "recall": {"answer": ""}}
    assert validity(record) == (False, "endpoint_mismatch:SomewhereElse")


def test_a_stored_call_is_never_sent_again(gateway, tmp_path):
    b, store = backend(gateway), ResponseStore(tmp_path)
    first, hit1, k1 = call(b, store)
    n = len(gateway.state.chat_calls())
    again, hit2, k2 = call(b, ResponseStore(tmp_path))
    assert (hit1, hit2, k1) == (False, True, k2) and again.text == first.text
    assert len(gateway.state.chat_calls()) == n
    # Another repeat sending the byte-identical request is another sample: it is sent.
    _, hit3, k3 = call(b, store, sample="s1")
    assert not hit3 and k3 != k1 and len(gateway.state.chat_calls()) == n + 1


# -- final verdicts: one attempt, no retry ---------------------------------------------


def test_404_no_endpoints_is_final_and_classified_by_message(gateway, tmp_path):
    b = backend(gateway, model="acme/no-reasoning-8b")  # its endpoint lacks `reasoning`
    assert "reasoning" not in b.body(request())  # so the study's calls never send it
    with pytest.raises(BackendError) as e:  # the paper's original request (§4.2) does
        call(b.with_reasoning_forced(), ResponseStore(tmp_path))
    assert e.value.kind == "no_endpoint" and NO_ENDPOINTS in e.value.message
    assert not e.value.retryable and len(e.value.detail["attempts"]) == 1
    assert len(gateway.state.chat_calls()) == 1


def test_404_for_an_unlisted_model_is_final_and_names_it(gateway, tmp_path):
    b = backend(gateway)
    b.model_id = "acme/nope"
    with pytest.raises(BackendError) as e:
        call(b, ResponseStore(tmp_path))
    # "No endpoints found for <model>." (docs/design.md §4, gateway A6): final, and it names
    # the model.
    assert e.value.kind == "no_endpoint" and not e.value.retryable
    assert "acme/nope" in e.value.message


def test_401_is_final_and_the_key_appears_nowhere(gateway, tmp_path, monkeypatch):
    b = backend(gateway)
    gateway.state.key = "sk-or-v1-rotated"
    with pytest.raises(BackendError) as e:
        call(b, ResponseStore(tmp_path))
    assert e.value.kind == "auth" and not e.value.retryable
    assert len(e.value.detail["attempts"]) == 1
    assert KEY not in repr(e.value.detail) + str(e.value)


def test_402_insufficient_credits_is_final(gateway, tmp_path):
    b = backend(gateway)
    gateway.state.credits = False
    with pytest.raises(BackendError) as e:
        call(b, ResponseStore(tmp_path))
    assert e.value.kind == "insufficient_credits" and "more credits" in e.value.message
    assert len(gateway.state.chat_calls()) == 1


def test_no_key_fails_before_any_call(gateway, tmp_path, monkeypatch):
    b = backend(gateway)
    monkeypatch.delenv("TEST_OR_KEY")
    b2 = b.pinned(b.pin)
    with pytest.raises(BackendError) as e:
        call(b2, ResponseStore(tmp_path))
    assert e.value.kind == "auth" and "TEST_OR_KEY" in e.value.message
    assert gateway.state.chat_calls() == []


def test_context_overflow_is_final(gateway, tmp_path):
    b = backend(gateway)
    big = ChatRequest(messages=({"role": "user", "content": "x" * 600_000},), max_tokens=64,
                      temperature=0.2)
    with pytest.raises(ContextOverflow):
        cached_complete(b, ResponseStore(tmp_path), big, {"sample": "big"})
    assert len(gateway.state.chat_calls()) == 1


# -- infrastructure faults: retried with bounded backoff, every attempt recorded -------


def test_429_honours_retry_after(gateway, tmp_path):
    b = backend(gateway)
    gateway.state.queue_faults(MODEL, [{"status": 429, "retry_after": 1}])
    t0 = time.monotonic()
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert time.monotonic() - t0 >= 1.0
    assert [a["outcome"] for a in reply.attempts] == ["rate_limited", "ok"]
    assert reply.attempts[0]["retry_after_s"] == 1.0 and reply.attempts[0]["status"] == 429


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_retried(gateway, tmp_path, status):
    b = backend(gateway)
    gateway.state.queue_faults(MODEL, [{"status": status}, {"status": status}])
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert [a["outcome"] for a in reply.attempts] == ["server", "server", "ok"]


def test_http_200_with_finish_reason_error_is_retried(gateway, tmp_path):
    b = backend(gateway)
    gateway.state.queue_faults(MODEL, [{"finish_error": True}])
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert [a["outcome"] for a in reply.attempts] == ["provider_error", "ok"]
    assert reply.finish_reason == "stop"


def test_malformed_body_is_retried(gateway, tmp_path):
    b = backend(gateway)
    gateway.state.queue_faults(MODEL, [{"malformed": True}])
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert [a["outcome"] for a in reply.attempts] == ["malformed", "ok"]


def test_body_cut_off_mid_read_is_retried(gateway, tmp_path):
    b = backend(gateway)
    gateway.state.queue_faults(MODEL, [{"truncated": True}])
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert [a["outcome"] for a in reply.attempts] == ["malformed", "ok"]


def test_timeout_is_retried(gateway, tmp_path):
    b = backend(gateway, timeout_s=0.5)
    gateway.state.queue_faults(MODEL, [{"sleep": 1.5}])
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert [a["outcome"] for a in reply.attempts] == ["timeout", "ok"]


def test_retries_are_bounded_and_a_failed_call_is_not_stored(gateway, tmp_path):
    b = backend(gateway, max_attempts=3)
    gateway.state.queue_faults(MODEL, [{"status": 502}] * 3)
    store = ResponseStore(tmp_path)
    with pytest.raises(BackendError) as e:
        call(b, store)
    assert e.value.kind == "server" and e.value.retryable
    assert [a["outcome"] for a in e.value.detail["attempts"]] == ["server"] * 3
    assert not list(tmp_path.rglob("*.json"))
    reply, hit, _ = call(b, store)  # the next run sends it again, and now it works
    assert not hit and reply.text


def test_unreachable_gateway_is_retried_then_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_OR_KEY", KEY)
    cfg = {"backend": "openrouter", "model_id": MODEL, "base_url": "http://127.0.0.1:9/api/v1",
           "api_key_env": "TEST_OR_KEY", "timeout_s": 2, "max_attempts": 2,
           "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05, "provider": "deepinfra"}
    with pytest.raises(BackendError) as e:
        call(OpenRouterBackend("widget", cfg), ResponseStore(tmp_path))
    assert e.value.kind == "unreachable" and len(e.value.detail["attempts"]) == 2


def test_key_never_reaches_the_store(gateway, tmp_path):
    call(backend(gateway), ResponseStore(tmp_path), schema=True)
    files = list(tmp_path.rglob("*.json"))
    assert files and all(KEY not in f.read_text() for f in files)


@pytest.mark.parametrize(("cost", "charged"), [(0.00042, "reported"), ("NaN", "worst")])
def test_an_error_reply_that_reports_a_cost_is_charged_it(gateway, tmp_path, cost, charged):
    """An error reply was charged $0 even where the gateway reported a cost. A
    cost that is no number ("NaN") is refused and the call counted at its worst case."""
    from foldstudy.backends.ledger import Ledger, read_ledger

    b = backend(gateway, max_attempts=1)
    gateway.state.queue_faults(MODEL, [{"finish_error": True, "cost": cost}])
    ledger = Ledger(tmp_path / "l.json", 1.0)
    with pytest.raises(BackendError):
        call(b, ResponseStore(tmp_path / "store", ledger=ledger))
    state = read_ledger(ledger.path)
    if charged == "reported":
        assert state["spent_usd"] == pytest.approx(sum(gateway.state.billed_usd)) == cost
    else:
        assert state["spent_usd"] == state["unknown_usd"] > 0


def test_the_gateways_generation_record_gives_a_calls_cost(gateway, tmp_path):
    b = backend(gateway)
    reply, _, _ = call(b, ResponseStore(tmp_path))
    assert b.generation_cost(reply.raw["id"]) == pytest.approx(reply.cost_usd)
    assert b.generation_cost("gen-none") is None


@pytest.mark.parametrize("cost", ["abc", True, [1]])
def test_a_reported_cost_that_is_no_number_is_refused_by_name(gateway, tmp_path, cost,
                                                              caplog, monkeypatch):
    """usage.cost "abc" was read as no cost and charged at the listed price,
    unseen. Like "NaN" or a negative, it is refused by name and the call counted at its
    worst case."""
    import logging

    from foldstudy.backends.ledger import Ledger, read_ledger

    b = backend(gateway)
    post = b.post

    def misreported(req):
        body, choice, finish, usage, latency = post(req)
        return body, choice, finish, {**usage, "cost": cost}, latency

    monkeypatch.setattr(b, "post", misreported)
    ledger = Ledger(tmp_path / "l.json", 1.0)
    with caplog.at_level(logging.WARNING):
        reply, _, _ = call(b, ResponseStore(tmp_path / "store", ledger=ledger))
    state = read_ledger(ledger.path)
    assert f"usage.cost {cost!r}" in caplog.text and "refused" in caplog.text
    assert state["spent_usd"] == state["unknown_usd"] > sum(gateway.state.billed_usd)
    assert state["learned"] == {}


def test_a_numeric_string_cost_is_charged_as_reported(gateway, tmp_path, monkeypatch):
    from foldstudy.backends.ledger import Ledger, read_ledger

    b = backend(gateway)
    post = b.post
    monkeypatch.setattr(b, "post", lambda req: (lambda r: (*r[:3], {**r[3], "cost": "0.00042"},
                                                           r[4]))(post(req)))
    ledger = Ledger(tmp_path / "l.json", 1.0)
    call(b, ResponseStore(tmp_path / "store", ledger=ledger))
    assert read_ledger(ledger.path)["spent_usd"] == pytest.approx(0.00042)
