"""The shapes of a credential, below every stage that must refuse one.

The config check (study) refuses a key written into a config by its name or its shape,
and the release scanner (release) refuses a package that holds one: both read the
shapes here, so the two never disagree and neither stage imports the other.
"""

from __future__ import annotations

import re

# Values shaped like a provider's key: the scanner names a finding by its kind.
KEY_PATTERNS = {
    "OpenRouter key": re.compile(r"sk-or-v1-[0-9a-f]{16,}"),
    "OpenAI-style key": re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}"),
    "bearer token": re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    "Hugging Face token": re.compile(r"\bhf_[A-Za-z0-9]{30,}"),
    "Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
}
# Environment variables whose name says they hold a credential.
SECRET_ENV = re.compile(r"(?i)(api[_-]?key|token|secret|password)")
# Config keys (lowercased, - as _) whose value would be a credential.
SECRET_KEYS = ("api_key", "apikey", "key", "token", "secret", "password", "authorization")

# A name that says its value is a credential, anywhere in it (x_auth, X-Api-Key,
# refresh_token, client_secret, db_password): refused under the config keys whose
# contents go to a server as written (a model's extra_body and headers). "tokens" as a
# word's end is a count, not a credential (max_tokens, min_tokens, vLLM's
# skip_special_tokens): the server's ordinary parameters pass.
CREDENTIAL_NAME = re.compile(r"(?i)(auth|key|token(?!s(?![a-z]))|secret|password)")


def credential_name(name: str) -> bool:
    """A key name that says credential (CREDENTIAL_NAME)."""
    return bool(CREDENTIAL_NAME.search(name))


def looks_like_a_key(value: object) -> bool:
    """A credential-shaped string (the release scanner's key shapes)."""
    return isinstance(value, str) and any(p.search(value) for p in KEY_PATTERNS.values())
