"""The openai backend against a real OpenAI-compatible server: llama-cpp-python's own
server on loopback, serving the embedded SmolLM2 weights."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
import requests

from foldstudy.backends.base import BackendError, ChatRequest, ContextOverflow, grammar_schema
from foldstudy.backends.call import cached_complete
from foldstudy.backends.embedded import packaged_weights
from foldstudy.backends.openai_compat import OpenAICompatBackend
from foldstudy.backends.store import ResponseStore
from foldstudy.run.probe import NO_ENDPOINT_FOR_PARAMETERS, OK, UNREACHABLE, probe_model
from foldstudy.study.spec import load_arm_table, resolve_arm

pytestmark = pytest.mark.model
SCHEMA = {"type": "object", "properties": {"summary": {"type": "string", "maxLength": 200},
                                           "port": {"type": "string"}},
          "required": ["summary", "port"], "additionalProperties": False}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    # A file, not a pipe: an unread pipe fills and blocks the server mid-start.
    log = open(tmp_path_factory.mktemp("server") / "server.log", "w+b")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(packaged_weights()),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "1024", "--n_threads", "1",
         "--n_threads_batch", "1"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            if requests.get(f"{url}/models", timeout=2).ok:
                break
        except requests.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.seek(0)
            raise RuntimeError(f"llama_cpp.server did not start: {log.read()[-2000:]!r}")
        time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def backend(url: str, **over) -> OpenAICompatBackend:
    cfg = {"backend": "openai", "base_url": url, "model_id": "smollm2",
           "server": "llama-cpp-python", "structured_output": "json_object_schema",
           "context_length": 1024, "max_attempts": 2, "retry_initial_wait_s": 0.01,
           "retry_max_wait_s": 0.1, "timeout_s": 60, **over}
    return OpenAICompatBackend("smollm2-server", cfg)


def req(schema=None, content="The relay listens on port 48213. Summarise.", max_tokens=40):
    return ChatRequest(messages=({"role": "system", "content": "You keep notes."},
                                 {"role": "user", "content": content}),
                       max_tokens=max_tokens, temperature=0.2, seed=5, response_schema=schema)


def test_plain_reply_with_the_servers_own_token_counts(server, tmp_path):
    b = backend(server)
    reply, hit, _ = cached_complete(b, ResponseStore(tmp_path), req(), {"s": 0})
    assert not hit and reply.text.strip()
    assert reply.token_count_method == "exact"
    assert 20 < reply.prompt_tokens < 100 and 0 < reply.completion_tokens <= 40
    assert reply.finish_reason in ("stop", "length")
    assert reply.served_by == "llama-cpp-python" and "/" not in (reply.raw["model"] or "")
    again, hit, _ = cached_complete(b, ResponseStore(tmp_path), req(), {"s": 0})
    assert hit and again.text == reply.text


def test_schema_reply_conforms_under_the_servers_grammar(server, tmp_path):
    reply, _, _ = cached_complete(backend(server), ResponseStore(tmp_path),
                                  req(SCHEMA, max_tokens=80), {"s": 1})
    if reply.finish_reason == "stop":
        obj = json.loads(reply.text)
        assert set(obj) == {"summary", "port"}
    else:  # truncated by max_tokens: still the grammar's prefix of an object
        assert reply.text.lstrip().startswith("{")


def test_context_overflow_is_final(server, tmp_path):
    b = backend(server)
    with pytest.raises(ContextOverflow):
        cached_complete(b, ResponseStore(tmp_path), req(content="port 48213 " * 800), {"s": 2})


def test_openai_style_schema_is_refused_by_this_server_and_not_retried(server, tmp_path):
    b = backend(server, structured_output="json_schema")
    with pytest.raises(BackendError) as e:
        cached_complete(b, ResponseStore(tmp_path), req(SCHEMA), {"s": 3})
    assert e.value.kind == "bad_request" and len(e.value.detail["attempts"]) == 1


@pytest.fixture(scope="module")
def arms(resources):
    # Small enough for this server's 1,024-token slots, and a declared ceiling under the
    # 1,100 characters at which llama.cpp's grammar (the server's too) crashes (docs/design.md §4)
    table = load_arm_table(resources)
    return [resolve_arm(a, table, resources, 0.03) for a in "jm"]


def test_probe_names_the_schema_style_when_the_server_refuses_it(server, tmp_path, arms):
    cfg = {"backend": "openai"}
    ok = probe_model("s", backend(server), ResponseStore(tmp_path), arms, 600, 0.2, 1, cfg)
    assert ok["verdict"] == OK, ok
    assert {a: p["allowed"] for a, p in ok["permissions"].items()} == {"j": True, "m": True}
    bad = probe_model("s", backend(server, structured_output="json_schema"),
                      ResponseStore(tmp_path / "b"), arms, 600, 0.2, 1, cfg)
    assert bad["verdict"] == NO_ENDPOINT_FOR_PARAMETERS
    assert bad["responsible_parameter"] == "response_format"
    assert {a: p["allowed"] for a, p in bad["permissions"].items()} == {"j": False, "m": True}


def test_probe_finds_a_context_too_short(server, tmp_path, arms):
    rec = probe_model("s", backend(server), ResponseStore(tmp_path), arms, 5000, 0.2, 1,
                      {"backend": "openai"})
    assert rec["verdict"] == "context_too_short"


def test_unreachable_server(tmp_path, arms):
    b = backend(f"http://127.0.0.1:{free_port()}/v1")
    rec = probe_model("s", b, ResponseStore(tmp_path), arms, 600, 0.2, 1, {"backend": "openai"})
    assert rec["verdict"] == UNREACHABLE and not any(
        p["allowed"] for p in rec["permissions"].values())


def test_grammar_schema_drops_only_ceilings():
    assert "maxLength" not in grammar_schema(SCHEMA)["properties"]["summary"]
    assert grammar_schema(SCHEMA)["required"] == ["summary", "port"]
