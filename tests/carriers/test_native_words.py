"""Whose compaction a native arm grades, in a reader's words (carriers/native.py
native_words): the provider's on its own API, "compaction by <host[:port]>" on a model
whose config says native_via: proxy, and never a URL's path, userinfo or query."""

from __future__ import annotations

import pytest

from foldstudy.carriers.native import (
    NATIVE_SOURCE,
    PROVIDER,
    endpoint,
    native_words,
    native_words_of,
)
from foldstudy.carriers.registry import says_against_best

SECRET_URL = "https://user:secret@gw.example:8443/v1?key=abc"


def test_a_provider_model_keeps_the_providers_words():
    for config in ({"backend": "anthropic"}, {"native_via": "provider", "base_url": SECRET_URL},
                   {"base_url": "https://api.anthropic.com"}, None):
        words = native_words(config)
        assert words == PROVIDER
        assert words.compaction == "the provider's compaction"
        assert words.against_best == NATIVE_SOURCE == (
            "the provider's compaction against your best arm")


def test_a_proxy_model_is_titled_by_its_endpoint_and_never_the_providers():
    words = native_words({"backend": "anthropic", "native_via": "proxy",
                          "base_url": SECRET_URL})
    assert words.compaction == "compaction by gw.example:8443"
    assert words.against_best == "compaction by gw.example:8443 against your best arm"
    said = f"{words.compaction} {words.default} {words.against_best}"
    assert "provider" not in said
    for leak in ("user", "secret", "/v1", "key", "abc", "https"):
        assert leak not in said


@pytest.mark.parametrize("url, host", [
    ("http://litellm.internal:4000", "litellm.internal:4000"),
    ("https://GW.Example/v1/", "gw.example"),
    ("http://[::1]:8080/v1?k=1", "[::1]:8080"),
    ("https://h.example:notaport/x", "h.example"),
    ("", "the model's endpoint"),
    (None, "the model's endpoint"),
])
def test_the_endpoint_is_the_host_and_port_alone(url, host):
    assert endpoint(url) == host


def test_only_the_models_whose_words_are_not_the_providers_are_listed():
    models = {"a": {"backend": "anthropic"},
              "b": {"backend": "openai_responses", "native_via": "proxy",
                    "base_url": "http://litellm.internal:4000/v1"},
              "c": {"backend": "anthropic", "native_via": "provider", "base_url": SECRET_URL}}
    assert {m: w.compaction for m, w in native_words_of(models).items()} == {
        "b": "compaction by litellm.internal:4000"}
    assert native_words_of(None) == {}


def test_a_proxys_line_against_your_best_arm_is_known_as_the_native_arms():
    proxy = native_words({"native_via": "proxy", "base_url": SECRET_URL})
    assert says_against_best(NATIVE_SOURCE) and says_against_best(proxy.against_best)
    assert not says_against_best("compaction by gw.example:8443 with m's prompt against "
                                 "its default")
    assert not says_against_best("analysis")
