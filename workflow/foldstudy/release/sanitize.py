"""What a release leaves out of the config it carries (paper §7).

Paper §7: "Account state, credentials, private endpoints and local paths are excluded
from the release". Left out, not refused: a study run against a local server (the paper's
own local vLLM reference) is releasable. In the config the package carries (config.yaml,
the manifest's copy, the crate's values) a private endpoint becomes `<local server:
vllm>` (the model's `server`) or `<private endpoint>`, and a local path `<local path:
name>` (the file's own name). The lock keeps the digest of the config as it ran, and
records each substituted key with the value it was given, so verify accepts exactly that
substitution and nothing else (`accepted_config_changes`). A config's `arms_file` becomes
`arms/<name>`: the package carries the user's own arms there (release/package.py).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

from ..io import canonical_sha256
from ..secrets import PLACEHOLDER
from ..study.own_arms import packaged_arms_file
from .scan import ABSOLUTE_PATH, URL, private_host


def _endpoint(server: str | None) -> str:
    """A private endpoint's placeholder: the local server it is (the model's `server`)."""
    return f"<local server: {server}>" if server else "<private endpoint>"


def _path(path: str) -> str:
    name = path.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return f"<local path: {name}>"


def sanitize_text(text: str, server: str | None = None) -> str:
    """`text` with each private endpoint URL and each absolute local path replaced."""

    def url(m: re.Match[str]) -> str:
        try:
            host = urlparse(m.group(0)).hostname or ""
        except ValueError:
            return "<private endpoint>"  # unreadable: never released as it stands
        return _endpoint(server) if private_host(host) else m.group(0)

    text = URL.sub(url, text)
    return ABSOLUTE_PATH.sub(lambda m: _path(m.group(0)), text)


def sanitize_config(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config as released, and {dotted key: its released value} for every leaf
    changed (config_keys' keys: the lock's per-key digests)."""
    changed: dict[str, Any] = {}

    def walk(obj: Any, key: str, server: str | None) -> Any:
        if isinstance(obj, dict) and obj:
            here = obj.get("server") if isinstance(obj.get("server"), str) else server
            return {k: walk(v, f"{key}{k}.", here) for k, v in obj.items()}
        new = _leaf(obj, server)
        if new != obj:
            changed[key.removesuffix(".")] = new
        return new

    released = walk(config, "", None)
    if isinstance(config.get("arms_file"), str):
        # the user's own arms travel in the package (release/package.py): the released
        # config names them there, relative to the package
        released["arms_file"] = changed["arms_file"] = packaged_arms_file(config["arms_file"])
        if released["arms_file"] == config["arms_file"]:
            del changed["arms_file"]
    return released, changed


def _leaf(value: Any, server: str | None) -> Any:
    if isinstance(value, str):
        return sanitize_text(value, server)
    if isinstance(value, list):
        return [_leaf(v, server) for v in value]
    if isinstance(value, dict):
        return {k: _leaf(v, server) for k, v in value.items()}
    return value


def accepted_config_changes(changes: list[str], now_keys: dict[str, str],
                            substituted: dict[str, Any]) -> list[str]:
    """The config changes (provenance.config_changes' lines) left once the release's own
    substitutions are accepted: a key the lock records as substituted, whose value now is
    the recorded one and holds a placeholder. Anything else stays a change."""
    ok = {k for k, v in substituted.items()
          if (PLACEHOLDER.search(str(v)) or (k == "arms_file" and isinstance(v, str) and v
                                              == packaged_arms_file(v)))
          and now_keys.get(k) == canonical_sha256(v)}
    return [c for c in changes if not any(c == f"config key {k}: changed since the lock"
                                          for k in ok)]
