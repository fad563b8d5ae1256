"""Secrets in a user's own session (issue 31, DESIGN §3: "A transcript is a private input:
... scanned for secrets"): each named by file and line, never shown, when the config is
loaded, before any call; the transcript's raw text is scanned line by line, so a secret
is found wherever the reader would put it (a tool result, a thinking block)."""

from __future__ import annotations

import json

import pytest

from .test_release_package import SECRETS
from .test_sessions_config import CC, config, load


@pytest.mark.parametrize("text, kind, value", [c[1:] for c in SECRETS],
                         ids=[c[0] for c in SECRETS])
def test_a_secret_in_a_session_is_named_by_file_and_line_before_any_call(
        tmp_path, config_schema, resources, text, kind, value):
    lines = CC.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["toolUseResult"] = f"env dump: {text}"  # raw text the chunk may not even show
    lines[1] = json.dumps(record)
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = sorted(tmp_path.rglob("*"))
    study = load(config({"transcript": str(p)}), config_schema, resources)
    said = [w for w in study.warnings if "credential-shaped" in w]
    assert said == [f"config.scenarios.atlas.transcript: {p}:2: a credential-shaped string "
                    f"({kind}; not shown); it would reach the model in a chunk"]
    assert value not in "\n".join(study.warnings)
    assert sorted(tmp_path.rglob("*")) == before  # read only: nothing written anywhere


def test_a_clean_session_has_no_secret_warning(config_schema, resources):
    study = load(config(), config_schema, resources)
    assert not [w for w in study.warnings if "credential-shaped" in w]
