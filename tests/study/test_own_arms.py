"""A user's own arms (config `arms_file`) are checked like the config: by a JSON
schema (config/schema/arms.schema.yaml) with the name rule, types and allowed values,
every problem named by file, arm and key before any job, and a prompt read only from
the arms file's own folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .test_sessions_config import config, problems

GOOD = {"title": "my agent's compaction", "twin": "m", "system_prompt": "prompt.md",
        "fold_budget_tokens": 2400, "carry_cap_tokens": 2400, "carry": "text"}
KEY = "sk-or-v1-" + "ab12" * 16


def arms_file(tmp_path: Path, arms: dict) -> Path:
    d = tmp_path / "mine"
    d.mkdir(exist_ok=True)
    (d / "prompt.md").write_text("Summarise the session. Keep every identifier.\n")
    (tmp_path / "outside.md").write_text(f"Summarise. Use {KEY} for the gateway.\n")
    # inside the folder, yet holding a key: the prompt, and a schema's description
    (d / "leaky.md").write_text(f"Summarise the session.\nUse {KEY} for the gateway.\n")
    (d / "leaky.json").write_text('{"type": "object", "properties": {"summary": {"type": '
                                  '"string", "description": "keep xoxb-123456789012-'
                                  '1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"}}}\n')
    (d / "list.json").write_text('[{"type": "object"}]\n')
    (d / "prompts").mkdir(exist_ok=True)
    p = d / "arms.yaml"
    p.write_text(yaml.safe_dump({"arms": arms}))
    return p


CASES = [
    ("an id that walks out of results/", {"../../../../../../escaped": GOOD},
     "arms.../../../../../../escaped: '../../../../../../escaped' cannot be an arm id"),
    ("an integer id", {5: GOOD}, "arms.5: 5 cannot be an arm id"),
    ("a paper arm's id", {"m": GOOD}, "arms.m: 'm' is one of the paper's arms"),
    # one file on a case-insensitive file system (macOS's, Windows' default): M's runs
    # would overwrite m's
    ("a paper arm's id in another case", {"M": GOOD},
     "arms.M: 'M' differs from arm 'm' only by case"),
    ("two own ids that differ by case", {"Mine": GOOD, "mine": GOOD},
     "arms.mine: 'mine' differs from arm 'Mine' only by case"),
    ("a string budget", {"mine": {**GOOD, "fold_budget_tokens": "2400"}},
     "arms.mine.fold_budget_tokens: '2400' is not of type 'integer'"),
    ("a boolean cap", {"mine": {**GOOD, "carry_cap_tokens": True}},
     "arms.mine.carry_cap_tokens: True is not of type 'integer'"),
    ("a numeric carry", {"mine": {**GOOD, "carry": 3}},
     "arms.mine.carry: 3 is not of type 'string'"),
    ("an unknown carry rule", {"mine": {**GOOD, "carry": "verbatim"}},
     "arms.mine.carry: 'verbatim' does not match"),
    ("a list twin", {"mine": {**GOOD, "twin": ["m"]}},
     "arms.mine.twin: ['m'] is not one of the paper's arms"),
    ("a twin that is no arm", {"mine": {**GOOD, "twin": "z"}},
     "arms.mine.twin: 'z' is not one of the paper's arms"),
    ("a [] schema", {"mine": {**GOOD, "schema": []}},
     "arms.mine.schema: [] is not of type 'string'"),
    ("a missing key", {"mine": {k: v for k, v in GOOD.items() if k != "carry"}},
     "arms.mine: 'carry' is a required property"),
    ("an unknown key", {"mine": {**GOOD, "temperature": 0.2}},
     "arms.mine: unknown key temperature"),
    ("a ceiling that is a string", {"mine": {**GOOD, "ceilings": {"summary": "9600"}}},
     "arms.mine.ceilings.summary: '9600' is neither a positive integer"),
    ("a prompt outside the arms folder", {"mine": {**GOOD, "system_prompt": "../outside.md"}},
     "arms.mine.system_prompt: ../outside.md is outside the arms file's folder"),
    ("a prompt that does not exist", {"mine": {**GOOD, "system_prompt": "nope.md"}},
     "nope.md does not exist"),
    ("a schema file that is a JSON list", {"mine": {**GOOD, "schema": "list.json",
                                                    "carry": "raw_json"}},
     "arms.mine.schema: {d}/list.json is a JSON array; a schema is a JSON object"),
    ("a prompt that is a directory", {"mine": {**GOOD, "system_prompt": "prompts"}},
     "arms.mine.system_prompt: {d}/prompts is a directory; name a file in it"),
    ("a key in a prompt inside the folder", {"mine": {**GOOD, "system_prompt": "leaky.md"}},
     "leaky.md:2: a credential-shaped string ("),
    ("a token in a schema inside the folder", {"mine": {**GOOD, "schema": "leaky.json",
                                                        "carry": "raw_json"}},
     "leaky.json:1: a credential-shaped string (Slack Token; not shown)"),
]


@pytest.mark.parametrize("arms, line", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_own_arms_problem_is_named_by_file_arm_and_key_before_any_job(
        tmp_path, config_schema, resources, arms, line):
    path = arms_file(tmp_path, arms)
    before = sorted(tmp_path.rglob("*"))
    msg = problems(config(arms_file=str(path)), config_schema, resources)
    line = line.replace("{d}", str(path.parent.resolve()))
    said = [s.strip() for s in msg.splitlines() if line in s]
    assert said and said[0].startswith(f"{path}: arms."), msg
    assert "Traceback" not in msg and KEY not in msg
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, in results/ or out


def test_every_problem_of_every_arm_at_once(tmp_path, config_schema, resources):
    path = arms_file(tmp_path, {"a1": {**GOOD, "carry": 3},
                                "a2": {**GOOD, "fold_budget_tokens": "x"},
                                "a3": {**GOOD, "system_prompt": "../outside.md"}})
    msg = problems(config(arms_file=str(path)), config_schema, resources)
    for line in ("arms.a1.carry:", "arms.a2.fold_budget_tokens:", "arms.a3.system_prompt:"):
        assert f"{path}: {line}" in msg, msg


def test_an_arms_file_that_is_a_directory_is_named_as_one(tmp_path, config_schema, resources):
    """A directory was reported as "no such file"."""
    path = arms_file(tmp_path, {"mine": GOOD}).parent
    msg = problems(config(arms_file=str(path)), config_schema, resources)
    assert f"config.arms_file ({path}): a directory, not a file; name the YAML in it" in msg
    assert "no such file" not in msg and "Traceback" not in msg
