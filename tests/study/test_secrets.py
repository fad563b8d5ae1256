"""Secrets in a user's own session (docs/design.md §3: "A transcript is a private input:
... scanned for secrets"): each named by file and line, never shown, when the config is
loaded, before any call; the transcript's raw text is scanned line by line, so a secret
is found wherever the reader would put it (a tool result, a thinking block)."""

from __future__ import annotations

import json

import pytest

from ..release.test_release_package import SECRETS
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


# --------------------------------------- a key wherever a user types

KEY = "sk-or-v1-" + "5f0c1e2d9b8a7f6e" * 4


def _rename(d: dict, old: str, new: str) -> dict:
    return {new if k == old else k: v for k, v in d.items()}


def _facts_with(tmp_path, label: str = "the gateway key", value: str = "47213") -> str:
    import yaml

    from .test_sessions_config import FACTS

    doc = yaml.safe_load(FACTS.read_text())
    doc["facts"][0].update(label=label, value=value)
    p = tmp_path / "facts.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(p)


TYPED = [
    ("a sweep name", lambda c, t: c.update(sweeps=_rename(c["sweeps"], "mine", KEY)),
     "config.sweeps: a name shaped like a credential (OpenRouter key; not shown); a name "
     "becomes a path"),
    ("study:", lambda c, t: c.update(study=KEY),
     "config.study: a value shaped like a credential (OpenRouter key; not shown); a key "
     "would be written into paths"),
    ("a scenario name", lambda c, t: (c.update(scenarios=_rename(c["scenarios"], "atlas", KEY)),
                                      c["sweeps"]["mine"].update(scenario=KEY)),
     "config.scenarios: a name shaped like a credential (OpenRouter key; not shown)"),
    ("a model key", lambda c, t: (c.update(models={KEY: {"backend": "embedded"}}),
                                  c["sweeps"]["mine"].update(models=[KEY])),
     "config.models: a name shaped like a credential (OpenRouter key; not shown)"),
    ("a facts label", lambda c, t: c["scenarios"]["atlas"].update(
        facts=_facts_with(t, label=f"the key {KEY}")),
     "facts.yaml:2: a credential-shaped string (OpenRouter key; not shown); a label is sent "
     "to the model in the recall turn"),
    ("a facts value", lambda c, t: c["scenarios"]["atlas"].update(
        facts=_facts_with(t, value=KEY)),
     "facts.yaml:3: a credential-shaped string (OpenRouter key; not shown)"),
]


@pytest.mark.parametrize("change, said", [c[1:] for c in TYPED], ids=[c[0] for c in TYPED])
def test_a_key_typed_anywhere_is_refused_before_any_job_never_shown(
        tmp_path, config_schema, resources, change, said):
    """A key-shaped sweep name, study or scenario name passed the config check
    (it looked under `models:` only) and then sat in every path, log and row id; a key in
    a facts label was sent to the model in the recall turn. One scan refuses each by key
    (or by file and line), never echoing it, before anything is read or written."""
    from .test_sessions_config import config, problems

    cfg = config()
    change(cfg, tmp_path)
    before = sorted(tmp_path.rglob("*"))
    msg = problems(cfg, config_schema, resources)
    assert said in msg, msg
    assert KEY not in msg and KEY[:16] not in msg and "Traceback" not in msg
    assert sorted(tmp_path.rglob("*")) == before


def test_a_key_in_a_config_file_is_named_by_its_line(tmp_path, config_schema, resources):
    import yaml

    from foldstudy.study.config import ConfigError, load_study
    from foldstudy.study.spec import load_arm_table

    from .test_sessions_config import config

    cfg = config()
    cfg["sweeps"] = _rename(cfg["sweeps"], "mine", KEY)
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(cfg, sort_keys=False))
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if KEY in t)
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, load_arm_table(resources), resources,
                   config_files=[f])
    assert f"config.sweeps ({f} line {line}): a name shaped like a credential" in str(e.value)
    assert KEY not in str(e.value)


def test_an_own_arm_id_shaped_like_a_key_is_refused(tmp_path, config_schema, resources):
    from .test_own_arms import GOOD, arms_file
    from .test_sessions_config import config, problems

    path = arms_file(tmp_path, {KEY: GOOD})
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if KEY in t)
    msg = problems(config(arms_file=str(path)), config_schema, resources)
    assert f"{path}:{line}: a credential-shaped string (" in msg and "an arm's id becomes" in msg
    assert KEY not in msg and KEY[:16] not in msg
