"""The backend registry is the one place a backend is known: the config schema, the
Snakemake slot resources and both profiles follow from it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from foldstudy.backends import backend_class, backend_classes, register_backend
from foldstudy.backends.base import Backend, BackendError
from foldstudy.backends.embedded import EmbeddedBackend
from foldstudy.io import load_yaml
from foldstudy.study.backend_schema import with_backends

from ..conftest import ROOT

BUILT_IN = ("anthropic", "embedded", "openai", "openai_responses", "openrouter")


def slot_resources() -> set[str]:
    return {c.slot_resource for c in backend_classes().values() if c.slot_resource}


def test_each_backend_declares_its_kind_and_is_found_by_it():
    classes = backend_classes()
    assert tuple(classes) == BUILT_IN  # this process installs no plugin
    for kind, cls in classes.items():
        assert cls.kind == kind and backend_class(kind) is cls and cls.summary
    assert slot_resources() == {"embedded_model", "api_openai", "api_openrouter",
                                "api_anthropic", "api_openai_responses"}
    with pytest.raises(BackendError, match=r"'bedrock' is not available \(known: anthropic, "
                                           r"embedded, openai, openai_responses, openrouter\)"):
        backend_class("bedrock")


def test_a_kind_is_registered_once_and_must_be_declared():
    class Twin(EmbeddedBackend):
        pass

    class Nameless(Backend):
        pass

    with pytest.raises(TypeError, match="registered twice"):
        register_backend(Twin)
    with pytest.raises(TypeError, match="declares no kind"):
        register_backend(Nameless)
    assert backend_class("embedded") is EmbeddedBackend


def test_the_schema_file_names_no_backend_and_the_loaded_schema_names_every_one():
    raw = load_yaml(ROOT / "config/schema/config.schema.yaml")
    model = raw["properties"]["models"]["additionalProperties"]
    assert model["properties"]["backend"] == {} and "allOf" not in model
    assert raw["properties"]["limits"]["properties"] == {}
    schema = with_backends(raw)
    model = schema["properties"]["models"]["additionalProperties"]
    assert model["properties"]["backend"]["enum"] == list(BUILT_IN)
    required = {rule["if"]["properties"]["backend"]["const"]: rule["then"]["required"]
                for rule in model["allOf"]}
    prices = ["model_id", "price_prompt_usd_per_mtok", "price_completion_usd_per_mtok"]
    assert required == {"openai": ["base_url"], "openrouter": ["model_id"],
                        "anthropic": prices, "openai_responses": prices}
    assert set(schema["properties"]["limits"]["properties"]) == slot_resources()


@pytest.mark.parametrize("profile", ["default", "slurm"])
def test_each_profile_limits_exactly_the_backends_slot_resources(profile):
    """A profile is YAML, so its limits are written there; they name every backend's
    resource and nothing else."""
    cfg = yaml.safe_load((ROOT / f"profiles/{profile}/config.yaml").read_text())
    names = {line.split("=")[0] for line in cfg["resources"]}
    assert names == slot_resources()


def test_the_study_configs_limits_name_slot_resources():
    cfg = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text())
    assert set(cfg["limits"]) <= slot_resources()


def test_each_backend_prices_the_audit():
    probe = {"price_prompt_usd_per_token": 1e-6, "price_completion_usd_per_token": 2e-6}
    assert backend_class("embedded").audit_prices(probe) == (0.0, 0.0, "local (no charge)")
    assert backend_class("openai").audit_prices({}) == (0.0, 0.0, "local server (no charge)")
    assert backend_class("openrouter").audit_prices(probe) == (1e-6, 2e-6, "probe pin")
    assert backend_class("openrouter").audit_prices({})[2] == "unknown: run the probe"
    for direct in ("anthropic", "openai_responses"):  # the config's list prices, as probed
        assert backend_class(direct).audit_prices(probe) == (1e-6, 2e-6,
                                                             "list price in the config")
        assert backend_class(direct).audit_prices({})[2] == "unknown: run the probe"


def test_only_a_backend_that_lists_endpoints_pins_one():
    ep = {"provider_name": "DeepInfra", "tag": "deepinfra", "pricing": {"prompt": "1e-7"}}
    assert backend_class("openrouter").endpoint_pin(ep)["price_prompt_usd_per_token"] == 1e-7
    with pytest.raises(BackendError, match="lists no endpoints"):
        backend_class("openai").endpoint_pin(ep)


def test_the_dag_never_imports_llama_cpp():
    """Every backend module is imported to learn its defaults; the model is not."""
    code = ("import sys; from foldstudy.backends import backend_classes, resolve_model_config;"
            "backend_classes(); resolve_model_config({'backend': 'embedded'});"
            "print('llama_cpp' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert p.stdout.strip() == "False", p.stderr
