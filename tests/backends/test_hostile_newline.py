"""A value pasted with its final line break (a key read from a file, a date copied from
the API docs, a name typed in a YAML block scalar): Python's `$` matches before a final
"\\n", so the schema's patterns let "tiny\\n" and "2023-06-01\\n" through, and the value
failed later as "unreachable ... InvalidHeader" or a Snakemake MissingInputException.
Every pattern of config/schema/config.schema.yaml is anchored at the true end and such a
value is refused before any job, naming the key; and no header is ever sent holding a
control character, whichever backend built it (backends/http.py's one sending place)."""

from __future__ import annotations

import re

import pytest

from foldstudy.backends import make_backend
from foldstudy.backends.base import BackendError, ChatRequest

from ..workflow.test_hostile_inputs import _sweep_named, base, refused  # noqa: F401

PRICES = {"price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0}
CLAUDE = {"backend": "anthropic", "model_id": "claude-x", "api_key_env": "NEWLINE_TEST_KEY",
          **PRICES}


def _claude(**m):
    return lambda c: c["models"].update({"claude": {**CLAUDE, **m}})


CASES = [
    ("anthropic_version with a line break", _claude(anthropic_version="2023-06-01\n"),
     "config.models.claude.anthropic_version"),
    ("sweep named tiny\\n", _sweep_named("tiny\n"), "config.sweeps: key 'tiny\\n'"),
    ("study named tiny\\n", lambda c: c.update(study="tiny\n"), "config.study: 'tiny\\n'"),
    ("model key m\\n", lambda c: c["models"].update({"m\n": c["models"].pop("smollm2-135m")}),
     "config.models: key 'm\\n'"),
    ("api_key_env with a line break", _claude(api_key_env="NEWLINE_TEST_KEY\n"),
     "config.models.claude.api_key_env"),
    ("sha256 with a line break", lambda c: c["models"]["smollm2-135m"].update(
        sha256="0" * 64 + "\n"), "config.models.smollm2-135m.sha256"),
    ("base_url with a line break", _claude(base_url="https://api.anthropic.com/v1\n"),
     "config.models.claude.base_url"),
    ("model_id with a line break", _claude(model_id="claude-x\n"),
     "config.models.claude.model_id"),
]


@pytest.mark.parametrize("change, key", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_value_with_a_final_line_break_is_refused_by_key(base, config_schema, change,  # noqa: F811
                                                           key):
    said = refused(base, config_schema, change)
    assert key in said and "Traceback" not in said


def test_a_key_in_the_environment_ending_in_a_line_break_is_refused_unshown(
        base, config_schema, monkeypatch):  # noqa: F811
    """`export KEY=$(cat keyfile)` keeps no line break, but `KEY="$(cat f)\n"`, a .env file
    with CRLF endings or a secret manager's value may: named by key, never shown."""
    monkeypatch.setenv("NEWLINE_TEST_KEY", "sk-ant-api03-secretvalue\r\n")
    said = refused(base, config_schema, _claude())
    assert "config.models.claude.api_key_env: the key in $NEWLINE_TEST_KEY holds a control " \
           "character ('\\r'" in said
    assert "secretvalue" not in said


def test_every_pattern_of_the_schema_ends_at_the_true_end(config_schema):
    """A pattern that anchors its end anchors it past a final line break, in Python's
    re.search (jsonschema's) as in ECMA-262 (no `\\Z` there)."""
    patterns: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                patterns.append(node["pattern"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(config_schema)
    anchored = [p for p in patterns if "$" in p]
    assert anchored
    for p in anchored:
        assert not re.search(r"\$(?!\(\?!\\n\))", p), p


class NoWire:
    """A requests session that records a request instead of sending it."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def request(self, method, url, **kwargs):
        self.sent.append(kwargs)
        raise AssertionError("a request was sent")

    def close(self) -> None:
        pass


def test_no_header_is_sent_with_a_control_character(monkeypatch):
    """Past the config check (a library call, a key changed between the check and the
    job): the one place every request leaves refuses it, naming the header, not the
    value, and nothing reaches the wire."""
    monkeypatch.setenv("NEWLINE_TEST_KEY", "sk-ant-api03-secretvalue\n")
    claude = make_backend("claude", {**CLAUDE, "base_url": "http://127.0.0.1:9/v1",
                                     "anthropic_version": "2023-06-01\n"})
    claude.session = NoWire()
    request = ChatRequest(messages=({"role": "user", "content": "hi"},), max_tokens=5,
                          temperature=0.0, seed=None)
    with pytest.raises(BackendError) as e:
        claude.complete(request)
    assert "header holds a control character ('\\n')" in str(e.value)
    assert "secretvalue" not in str(e.value) and not e.value.retryable
    assert claude.session.sent == []


def test_an_own_arms_carry_with_a_final_line_break_is_refused_by_key():
    """The own-arm schema's carry pattern comes from the carrier registry: it ends at the
    true end too, so `carry: "text\\n"` is refused naming the arm and key."""
    from foldstudy.study.own_arms import own_arms_problems

    doc = {"arms": {"mine": {"title": "mine", "twin": "m", "system_prompt": "p.md",
                             "fold_budget_tokens": 2400, "carry_cap_tokens": 2400,
                             "carry": "text\n"}}}
    problems, _ = own_arms_problems(doc, "arms.yaml", ["j", "m"],
                                    r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$(?!\n)", ["m"])
    assert any(p.startswith("arms.yaml: arms.mine.carry:") for p in problems), problems
    doc["arms"]["mine"]["carry"] = "text"
    problems, _ = own_arms_problems(doc, "arms.yaml", ["j", "m"],
                                    r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$(?!\n)", ["m"])
    assert not any(".carry" in p for p in problems), problems
