"""The release scanner: each kind of leak refuses the release, naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldstudy.release.package import tarball
from foldstudy.release.scan import (
    ReleaseRefused,
    live_secrets,
    local_markers,
    scan_text,
    scan_tree,
)

CLEAN = ("row_id,answer\nmain/m/r0/j,\"1. cache origin URL: https://zobes-f072.bakuk.internal/fovik\n"
         "2. primary ingress port: 52677\"\n")
PLANTED = {"https://zobes-f072.bakuk.internal/fovik", "52677", "/var/lib/munul/seror/pukot.ckpt"}


def kinds(findings):
    return [(f.path, f.line, f.kind) for f in findings]


def test_clean_text_passes_with_planted_internal_url():
    assert scan_text("rows.csv", CLEAN, {}, PLANTED) == []


@pytest.mark.parametrize("line, kind", [
    ("key sk-or-v1-" + "ab12" * 16, "OpenRouter key"),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "bearer token"),
    ("token=sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXyz", "OpenAI-style key"),
    ("aws AKIAABCDEFGHIJKLMNOP", "AWS access key"),
])
def test_planted_key_is_found(line, kind):
    found = scan_text("folds.csv", "header\n" + line + "\n", {}, PLANTED)
    assert ("folds.csv", 2, kind) in kinds(found)


def test_live_environment_key_value_is_found():
    secrets = live_secrets({"OPENROUTER_API_KEY": "canary-0123456789", "HOME": "/root"})
    assert secrets == {"OPENROUTER_API_KEY": "canary-0123456789"}
    found = scan_text("stats/numbers.json", '{"x": "canary-0123456789"}', secrets, set())
    assert kinds(found) == [("stats/numbers.json", 1, "value of $OPENROUTER_API_KEY")]
    assert "canary-0123456789" not in str(found[0])  # the report does not leak it again


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "https://10.2.3.4/v1",
    "http://192.168.1.20:8000/v1/chat/completions", "https://llm.corp/v1",
    # as the system resolver reads them (inet_aton): short, integer, hex and octal forms
    "http://10.1:8000", "http://127.1:8080", "http://2130706433/", "http://0x7f.1/v1",
    "http://0177.0.0.1/v1", "http://[::ffff:127.0.0.1]:8000/v1", "http://0.0.0.0:8000",
    "http://localhost.:8000/v1", "http://[::1]:8000/v1",
])
def test_private_endpoint_url_is_found(url):
    found = scan_text("config.yaml", f"base_url: {url}\n", {}, PLANTED)
    assert ("config.yaml", 1, "private endpoint URL") in kinds(found)


def test_public_url_is_not_a_finding():
    assert scan_text("README.md", "see https://openrouter.ai/api/v1\n", {}, PLANTED) == []


def test_a_public_name_is_released_as_written_and_never_looked_up(monkeypatch):
    """docs/release.md: a host name is judged by its spelling, never resolved (a lookup
    would tie the release to this machine's resolver and send the name out). A public
    name whose DNS answer is loopback (localtest.me) is released as written."""
    import socket

    from foldstudy.release.sanitize import sanitize_config

    def no_lookup(*a, **k):
        raise AssertionError("a host name was resolved")

    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        monkeypatch.setattr(socket, name, no_lookup)
    url = "http://localtest.me:8000/v1"
    released, substituted = sanitize_config({"models": {"m": {"backend": "openai",
                                                              "base_url": url}}})
    assert released["models"]["m"]["base_url"] == url and substituted == {}
    assert scan_text("config.yaml", f"base_url: {url}\n", {}, set()) == []


@pytest.mark.parametrize("host, private", [
    ("10.1", True), ("127.1", True), ("2130706433", True), ("0x7f000001", True),
    ("8.8.8.8", False), ("134744072", False), ("1e100.net", False), ("deadbeef", False),
    ("openrouter.ai", False), ("1password.com", False),
])
def test_hosts_are_read_as_the_resolver_reads_them(host, private):
    from foldstudy.release.scan import private_host

    assert private_host(host) is private


@pytest.mark.parametrize("line, kind", [
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "Private Key"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "Slack Token"),
    ("db postgres://admin:Sup3rS3cretPw@db.example.org:5432/app", "Basic Auth Credentials"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "Stripe Access Key"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key"),
    ("hf hf_" + "Zq8RtY2wXv" * 4, "Hugging Face token"),
])
def test_detect_secrets_plugins_and_our_shapes_find_a_secret_by_line(line, kind):
    from foldstudy.secrets import SecretHit, find_secrets, redact_secrets

    text = "clean first line\n" + line + "\n"
    assert find_secrets(text) == [SecretHit(2, kind)]
    redacted, n = redact_secrets(text)
    assert n == 1 and f"<redacted: {kind}>" in redacted and find_secrets(redacted) == []
    found = scan_text("folds.csv", text, {}, PLANTED)
    assert kinds(found) == [("folds.csv", 2, kind)] and found[0].excerpt == "not shown"


def test_a_planted_value_high_in_entropy_is_no_secret():
    """Paper §3.1's values are high-entropy and non-derivable (licence keys, UUIDs, digests):
    the maintained detector's entropy plugins stay out, so they are no finding."""
    from foldstudy.secrets import find_secrets

    text = ("licence LIC-7QX9-ZK2M-84WD-PQ1R\nuuid 8f14e45f-ceea-467f-a0e6-2f4c1d8b9a3e\n"
            "digest sha256:9b2c4e1f0a7d3c5b8e6f1a2d4c7b9e0f3a5d8c1b6e4f7a9d2c5b8e1f4a7d0c3b\n")
    assert find_secrets(text) == []


@pytest.mark.parametrize("text", ["/home/alice/study/results", "C:\\Users\\alice\\x",
                                  "/Users/alice/work", "/root/.cache/x"])
def test_absolute_local_path_is_found(text):
    found = scan_text("manifest.json", f'"path": "{text}"', {}, PLANTED)
    assert [k for k in kinds(found) if k[2] == "absolute local path"]


def test_planted_path_and_checkout_path(tmp_path):
    markers = local_markers(tmp_path)
    assert str(tmp_path.resolve()) in markers
    ok = scan_text("checks.csv", "state_path,/var/lib/munul/seror/pukot.ckpt\n", {}, PLANTED,
                   markers)
    assert ok == []
    bad = scan_text("log.txt", f"wrote {tmp_path.resolve()}/results/x\n", {}, PLANTED, markers)
    assert kinds(bad) == [("log.txt", 1, "local path or user name")]


def test_scan_tree_and_refusal_message(tmp_path):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence/rows.csv").write_text(CLEAN)
    assert scan_tree(tmp_path, {}, PLANTED, []) == []
    (tmp_path / "evidence/folds.csv").write_text("a\nb sk-or-v1-" + "0f" * 32 + "\n")
    findings = scan_tree(tmp_path, {}, PLANTED, [])
    err = ReleaseRefused(findings)
    assert "evidence/folds.csv:2: OpenRouter key" in str(err)


def test_tarball_is_reproducible(tmp_path):
    src = tmp_path / "pkg"
    (src / "a").mkdir(parents=True)
    (src / "a/x.txt").write_text("x")
    tarball(src, tmp_path / "one.tar.gz")
    (src / "a/x.txt").touch()
    tarball(src, tmp_path / "two.tar.gz")
    assert Path(tmp_path / "one.tar.gz").read_bytes() == Path(tmp_path / "two.tar.gz").read_bytes()
