"""The paper's treatment on every request (paper §3.2, §4.2, §4.8; docs/design.md §4-5): the
schema travels in response_format only, ceilings included; reasoning suppression and
the seed go only where the endpoint declares them; k carries the five headings; p's
description is the paper's length."""

from __future__ import annotations

import copy
import json

import pytest

from foldstudy.backends.embedded import EmbeddedBackend
from foldstudy.backends.openrouter import OpenRouterBackend, endpoint_pin
from foldstudy.grade.grader import headings_carried
from foldstudy.run.fold import Prompts, Sample, carry_of, fold_request

from ..support.gateway_standin import Endpoint, GatewayStandin, Model

FULL = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs",
        "reasoning")
NO_REASONING = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs")
HEADINGS = ["Constraints", "Decisions", "Identifiers", "Open issues", "Next steps"]


@pytest.fixture(scope="module")
def arms(study_arms):
    return study_arms("study-paper.yaml")


@pytest.fixture(scope="module")
def prompts(resources):
    return Prompts.from_files(*(resources / "prompts" / n for n in (
        "fold_user.md.j2", "recall_system.md", "recall_user.md.j2")))


def pinned(base_url: str, model: str, endpoint: dict) -> OpenRouterBackend:
    cfg = {"backend": "openrouter", "model_id": model, "base_url": base_url,
           "api_key_env": "TEST_OR_KEY"}
    return OpenRouterBackend(model.split("/")[1], cfg, endpoint_pin(endpoint))


def listing(ep: Endpoint, model: str) -> dict:
    return ep.listing(model)


def test_j_q_p_fold_requests_differ_only_in_response_format(arms, prompts):
    """Paper §3.2: "Prompt, input, fold protocol, and output budget are held fixed within a
    comparison": the fold-1 requests of j, q and p of one block differ in nothing but
    response_format, and p's only in its field description."""
    b = pinned("http://127.0.0.1:9/api/v1", "acme/widget",
               listing(Endpoint("DeepInfra", "deepinfra", supported_parameters=FULL),
                       "acme/widget"))
    sample = Sample("decomposition_a", "widget", "j", 0, 0, 20260702)
    user = prompts.render_fold("", "=== session chunk 1 of 5 ===\nport 48213", 0, 5)
    bodies = {a: b.body(fold_request(arms[a], user, 0.2, sample.call_seed("fold0")))
              for a in "jqp"}
    rest = {a: {k: v for k, v in body.items() if k != "response_format"}
            for a, body in bodies.items()}
    assert rest["j"] == rest["q"] == rest["p"]
    assert "schema" not in json.dumps(rest["j"]["messages"]).lower()
    assert "maxLength" not in json.dumps(rest["j"]["messages"])
    rf = {a: bodies[a]["response_format"]["json_schema"] for a in "jqp"}
    # The ceilings travel in the schema, as declared (maxLength included).
    assert rf["j"]["schema"]["properties"]["summary"]["maxLength"] == 9600
    assert {p["maxLength"] for p in rf["q"]["schema"]["properties"].values()} == {1920}
    # p differs from j only in the field description (and the schema's name).
    pj, pp = copy.deepcopy(rf["j"]), copy.deepcopy(rf["p"])
    del pp["schema"]["properties"]["summary"]["description"]
    del pj["schema"]["properties"]["summary"]["description"]
    pj.pop("name"), pp.pop("name")
    assert pj == pp


def test_the_fold_message_is_one_text_for_every_arm(prompts):
    text = prompts.render_fold("prev", "chunk", 2, 5)
    assert text.endswith("Reply with the replacement summary.\n")
    assert "schema" not in text.lower() and "maxlength" not in text.lower()


def test_embedded_grammar_drops_the_ceiling_and_says_so(arms):
    """The one exception (docs/design.md §4): llama-cpp-python's grammar cannot hold a large
    maxLength, so the embedded backend decodes structure only and records it."""
    from foldstudy.backends.base import chat_body

    body = chat_body(fold_request(arms["j"], "x", 0.2, 1), "json_object_schema",
                     ceilings_on_wire=False)
    assert "maxLength" not in json.dumps(body["response_format"])
    assert EmbeddedBackend.ceiling_delivery == "validated_after"
    assert OpenRouterBackend.ceiling_delivery == "response_format"


def test_reasoning_and_seed_go_only_where_the_endpoint_declares_them():
    """Paper §4.2: "this harness adds a reasoning-suppression parameter to every call ...
    An endpoint that honours response_format but does not declare reasoning is refused"."""
    declared = pinned("http://127.0.0.1:9/api/v1", "acme/a", listing(
        Endpoint("A", "a", supported_parameters=FULL), "acme/a"))
    silent = pinned("http://127.0.0.1:9/api/v1", "acme/b", listing(
        Endpoint("B", "b", supported_parameters=("max_tokens", "temperature",
                                                 "response_format", "structured_outputs")),
        "acme/b"))
    req = fold_request_plain()
    assert declared.body(req)["reasoning"] == {"effort": "none"}
    assert declared.body(req)["seed"] == 7 and declared.seed_sent
    assert "reasoning" not in silent.body(req) and "seed" not in silent.body(req)
    assert silent.identity["reasoning"] is None and not silent.seed_sent
    forced = silent.with_reasoning_forced()
    assert forced.body(req)["reasoning"] == {"effort": "none"}
    assert forced.identity != silent.identity  # its replies never share a cache key


def fold_request_plain():
    from foldstudy.backends.base import ChatRequest

    return ChatRequest(messages=({"role": "user", "content": "x"},), max_tokens=8,
                       temperature=0.2, seed=7)


def test_k_carries_the_five_fixed_headings(arms):
    """Paper §4.8: "q carries five sections on 134 of 134 rows, and k on 39 of 39"."""
    reply = json.dumps({"goal": "cut over", "environment": "prod eu",
                        "configuration_values": ["port 48213"], "people_and_owners": ["@ana"],
                        "schedule": ["02:17 UTC"], "status": "green"})
    carry, ok, valid, _ = carry_of(arms["k"], reply)
    assert ok and valid and headings_carried(carry, HEADINGS) == 5
    assert "port 48213" in carry and "@ana" in carry


def test_p_description_is_the_papers_length(resources):
    """Paper §4.3: "A third arm adds a 1,835-character natural-language description"."""
    schema = json.loads((resources / "schemas/single_described.json").read_text())
    assert len(schema["properties"]["summary"]["description"]) == 1835


def test_non_reasoning_endpoint_is_probed_ok_and_mandatory_reasoning_is_refused(
        tmp_path, monkeypatch, arms):
    from foldstudy.backends.store import ResponseStore
    from foldstudy.run.probe import OK, REASONING_NOT_DISABLEABLE, PinRule, probe_model

    monkeypatch.setenv("TEST_OR_KEY", "sk-or-v1-standin")
    models = [Model("acme/granite", [Endpoint("Chutes", "chutes", "bf16",
                                              supported_parameters=NO_REASONING)]),
              Model("acme/trinity", [Endpoint("Arcee", "arcee", supported_parameters=FULL,
                                              reasoning_mandatory=True)],
                    reasoning_mandatory=True)]
    with GatewayStandin(models) as gw:
        def probe(model_id):
            cfg = {"backend": "openrouter", "model_id": model_id, "base_url": gw.base_url,
                   "api_key_env": "TEST_OR_KEY", "max_attempts": 1}
            b = OpenRouterBackend(model_id.split("/")[1], cfg)
            return probe_model(model_id, b, ResponseStore(tmp_path), [arms["j"], arms["m"]],
                               1000, 0.2, 1, cfg, PinRule(131072, True))
        granite, trinity = probe("acme/granite"), probe("acme/trinity")
        granite_calls = gw.state.chat_calls("acme/granite")
    assert granite["verdict"] == OK
    assert granite["permissions"]["j"]["allowed"] and granite["permissions"]["m"]["allowed"]
    assert all("reasoning" not in c for c in granite_calls[:2])
    # The §4.2 re-probe: the paper's own request shape is refused, naming the parameter.
    assert granite["reasoning_parameter"]["without"]["verdict"] == OK
    with_r = granite["reasoning_parameter"]["with"]
    assert with_r["verdict"] != OK and with_r["responsible_parameter"] == "reasoning"
    assert trinity["verdict"] == REASONING_NOT_DISABLEABLE


def test_pin_rule_names_the_requirement_that_failed():
    from foldstudy.run.pin import PinRule, pick_endpoint
    from foldstudy.run.verdicts import CONTEXT_TOO_SHORT, NO_STRUCTURED_OUTPUTS, OK

    small = listing(Endpoint("S", "s", context_length=65536, supported_parameters=FULL), "a/b")
    plain = listing(Endpoint("P", "p", supported_parameters=("max_tokens",)), "a/b")
    rule = PinRule(131072, True)
    ep, verdict, why = pick_endpoint([small], None, None, 20000, True, rule)
    assert ep is None and verdict == CONTEXT_TOO_SHORT and "131072" in why and "pin rule" in why
    ep, verdict, why = pick_endpoint([plain], None, None, 20000, True, rule)
    assert ep is None and verdict == NO_STRUCTURED_OUTPUTS and "structured_outputs" in why
    assert pick_endpoint([plain], None, None, 20000, False, rule)[1] == OK  # plain arms only
    assert pick_endpoint([small], None, None, 20000, True)[1] == OK  # the default rule


def test_reasoning_that_comes_back_fails_the_probe(tmp_path, monkeypatch, arms):
    """An endpoint that reasons although no reasoning was asked for (it declares none,
    so none could be sent) cannot run the protocol, which measures folds without it."""
    from foldstudy.backends.store import ResponseStore
    from foldstudy.run.probe import REASONING_NOT_DISABLEABLE, probe_model

    monkeypatch.setenv("TEST_OR_KEY", "sk-or-v1-standin")
    ep = Endpoint("T", "t", supported_parameters=NO_REASONING, returns_reasoning=True)
    with GatewayStandin([Model("acme/thinker", [ep])]) as gw:
        cfg = {"backend": "openrouter", "model_id": "acme/thinker", "base_url": gw.base_url,
               "api_key_env": "TEST_OR_KEY", "max_attempts": 1}
        rec = probe_model("thinker", OpenRouterBackend("thinker", cfg),
                          ResponseStore(tmp_path), [arms["m"]], 1000, 0.2, 1, cfg)
    assert rec["verdict"] == REASONING_NOT_DISABLEABLE
    assert "no reasoning parameter was sent" in rec["reason"]


@pytest.mark.parametrize("message, returned", [
    ({"content": "Constraints ..."}, False),
    ({"content": "x", "reasoning_content": "thinking"}, True),  # vLLM's reasoning parser
    ({"content": "<think>plan</think>Constraints"}, True),  # no parser: the raw block
    ({"content": "x", "reasoning": "thinking"}, True),  # the gateway's field
])
def test_reasoning_text_is_recognised_in_every_server_shape(message, returned):
    from foldstudy.backends.openai_compat import reasoning_returned

    assert reasoning_returned(message) is returned
