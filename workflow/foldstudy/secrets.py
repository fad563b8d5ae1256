"""Secrets in text: found by line, never shown, and redacted where text is published.

Below `study` (the config-time scan of a user's own transcripts) and `release` (the scan
of every released file, and the redaction of a published session's text): both call
`find_secrets` and `redact_secrets`, so the two never disagree about what a secret is.

Two sources of shapes, side by side: the project's own key shapes (credentials.py, the
one place they are written) and detect-secrets' maintained regex plugins (private keys,
Slack, Stripe, a password inside a URL, ...), at the version pyproject.toml pins. Its
entropy and keyword plugins are left out on purpose: the study plants high-entropy,
non-derivable values (paper §3.1: licence keys, signing-key ids, UUIDs) that they would
report as secrets, and a public IP address is no secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from .credentials import KEY_PATTERNS

# A PEM private key is redacted whole, header to footer (its base64 body lines carry no
# shape of their own); in a JSON or CSV cell its line breaks may be written as `\n`.
PEM_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?-----END \1-----", re.S)


# What a release puts where a private endpoint or a local path was (release/sanitize.py):
# here, below the config check, which accepts it in a reviewer's package (evidence=).
PLACEHOLDER = re.compile(r"<local server: [\w.-]+>|<private endpoint>|<local path: [^<>\n]*>")


def is_placeholder(value: object) -> bool:
    """A whole value that a release substituted for a private endpoint or a local path."""
    return isinstance(value, str) and PLACEHOLDER.fullmatch(value) is not None


@dataclass(frozen=True)
class SecretHit:
    """One secret: where (1-based line) and what kind. Never the value."""

    line: int
    kind: str


@cache
def _detectors() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, pattern) of every shape looked for: the project's, then detect-secrets'."""
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.ip_public import IPPublicDetector

    import_plugins()
    plugins = sorted((c for c in _subclasses(RegexBasedDetector)
                      if c is not IPPublicDetector and isinstance(c.__dict__.get("denylist"),
                                                                  list | tuple)),
                     key=lambda c: c.secret_type)
    return (*KEY_PATTERNS.items(),
            *((c.secret_type, pat) for c in plugins for pat in c.denylist))


def import_plugins() -> None:
    """Import every plugin module of detect-secrets, so each detector class exists."""
    import importlib
    import pkgutil

    import detect_secrets.plugins as plugins

    for mod in pkgutil.iter_modules(plugins.__path__):
        importlib.import_module(f"{plugins.__name__}.{mod.name}")


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each secret in one line, a key two shapes match once (the
    project's kind named first): the password of a URL's userinfo (a plugin's group),
    else the whole match."""
    found = []
    for order, (kind, pat) in enumerate(_detectors()):
        for m in pat.finditer(line):
            g = next((i for i, v in enumerate(m.groups(), start=1) if v), 0)
            found.append((m.start(g), order, m.end(g), kind))
    return _merged([(s, e, k) for s, _, e, k in sorted(found)])


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret of `text`, one hit per (line, kind), in line order."""
    out: list[SecretHit] = []
    for i, line in enumerate(text.splitlines(), start=1):
        kinds = dict.fromkeys(kind for _, _, kind in _spans(line))  # one per kind
        out += [SecretHit(i, kind) for kind in kinds]
    return out


def marker(kind: str) -> str:
    """What stands where a secret was: its kind, never its value."""
    return f"<redacted: {kind}>"


def redact_secrets(text: str) -> tuple[str, int]:
    """`text` with each secret replaced by a marker naming its kind, and how many were."""
    text, n = PEM_BLOCK.subn(lambda m: marker("Private Key"), text)
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        spans = _spans(line)
        for start, end, kind in reversed(spans):
            line = line[:start] + marker(kind) + line[end:]
        n += len(spans)
        lines[i] = line
    return "".join(lines), n


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans (two shapes of one key) as one, the first-starting kind kept."""
    out: list[tuple[int, int, str]] = []
    for s, e, k in spans:
        if out and s < out[-1][1]:
            ps, pe, pk = out[-1]
            out[-1] = (ps, max(pe, e), pk)
        else:
            out.append((s, e, k))
    return out
