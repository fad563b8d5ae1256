"""The tree's conventions, checked: formatting, the generated config reference, one home
for arm identity and for every backend capability."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from foldstudy.backends.base import Backend
from foldstudy.study import configdoc
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.spec import arm_ids, load_arm_table

from .conftest import ROOT

BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_python_is_ruff_clean():
    p = run(str(BIN / "ruff"), "check", ".")
    assert p.returncode == 0, p.stdout + p.stderr


def test_rules_are_snakefmt_clean():
    p = run(str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules")
    assert p.returncode == 0, p.stdout + p.stderr


def test_config_readme_is_generated_from_the_schema():
    schema = yaml.safe_load(configdoc.SCHEMA.read_text(encoding="utf-8"))
    assert configdoc.README.read_text(encoding="utf-8") == configdoc.render(schema), (
        "config/README.md is stale: run .venv/bin/python -m foldstudy.study.configdoc")
    # every key of every section is described there
    for section in ("models", "sweeps", "arm_overrides"):
        for key in schema["properties"][section]["additionalProperties"]["properties"]:
            assert f"`{key}`" in configdoc.README.read_text(encoding="utf-8")


def test_no_arm_id_is_written_outside_arms_yaml():
    """An arm is named in resources/arms.yaml only: no enum, regex or tuple repeats them."""
    ids = arm_ids(load_arm_table(ROOT / "resources"))
    listing = re.compile(r"\[\s*" + r"\s*,\s*".join(ids[:4]))  # e.g. [f, n, j, p ...
    literal = re.compile(r"[(\[]\s*" + r",\s*".join(f'"{a}"' for a in ids[:4]))
    for path in [ROOT / "config/schema/config.schema.yaml", ROOT / "resources/analysis.yaml",
                 *ROOT.glob("workflow/**/*.py"), *ROOT.glob("workflow/rules/*.smk"),
                 *ROOT.glob("tests/support/*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not listing.search(text) and not literal.search(text), path
        assert "fnjpqkomtulg" not in text, path


def test_the_config_check_follows_the_arm_table(config_schema, resources):
    table = load_arm_table(resources)
    table["arms"]["z"] = dict(table["arms"]["m"], title="a thirteenth arm")
    cfg = {"models": {"s": {"backend": "embedded"}},
           "sweeps": {"x": {"scenario": "distributed", "models": ["s"], "arms": ["z", "y"],
                            "repeats": 1}}}
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, table, resources)
    assert "config.sweeps.x.arms[1]: 'y' is not an arm (known: f g j k l m n o p q t u z)" in (
        str(e.value))
    assert "arms[0]" not in str(e.value)  # the new arm is known everywhere at once


def test_backend_capabilities_are_declared_not_probed():
    """Every capability a caller asks about has a default on the base class, and nothing
    in the package asks a backend what it is with getattr or hasattr."""
    for name in ("replay", "retry_policy", "context_length", "lists_endpoints",
                 "wire_parameters", "without", "list_endpoints", "model_info", "pinned",
                 "missing_key", "describe", "config_context_length", "replay_tokenizer"):
        assert hasattr(Backend, name), name
    for path in ROOT.glob("workflow/**/*.py"):
        code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines())
        assert not re.search(r"\b(getattr|hasattr)\(\s*(backend|self\.backend|b)\b", code), path


def test_the_fast_yaml_loader_reads_every_project_file_as_the_safe_loader_does(tmp_path):
    """io.load_yaml takes libyaml's loader where PyYAML has it; it must be a speed-up
    only: every YAML file the workflow reads comes out identical to yaml.safe_load."""
    from foldstudy.io import _SAFE_LOADER, load_yaml

    assert _SAFE_LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = sorted([*ROOT.glob("resources/**/*.yaml"), *ROOT.glob("config/**/*.yaml"),
                    *ROOT.glob("profiles/**/*.yaml")])
    assert len(files) >= 10
    for f in files:
        assert load_yaml(f) == yaml.safe_load(f.read_text(encoding="utf-8")), f
    # safe: a Python object tag is refused, as yaml.safe_load refuses it
    bad = tmp_path / "tag.yaml"
    bad.write_text("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.YAMLError):
        load_yaml(bad)
