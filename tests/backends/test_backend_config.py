"""Per-backend config: clear errors naming the key, keys never from a file, and the
factory building each backend without a network call."""

from __future__ import annotations

import copy

import pytest
import yaml

from foldstudy.backends import make_backend
from foldstudy.backends.openai_compat import OpenAICompatBackend
from foldstudy.backends.openrouter import OpenRouterBackend
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.spec import load_arm_table

from ..conftest import ROOT


@pytest.fixture(scope="module")
def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def problems(cfg, config_schema, resources) -> str:
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, load_arm_table(resources), resources)
    return str(e.value)


def with_model(base, **model):
    cfg = copy.deepcopy(base)
    cfg["models"]["hosted"] = model
    cfg["sweeps"]["main"]["models"].append("hosted")
    return cfg


def test_openrouter_needs_its_model_id(base, config_schema, resources):
    msg = problems(with_model(base, backend="openrouter"), config_schema, resources)
    assert "config.models.hosted: 'model_id' is required" in msg


def test_openai_needs_its_base_url(base, config_schema, resources):
    msg = problems(with_model(base, backend="openai", model_id="m"), config_schema, resources)
    assert "config.models.hosted: 'base_url' is required" in msg


def test_unknown_backend_and_quantization_name_what_is_allowed(base, config_schema, resources):
    msg = problems(with_model(base, backend="bedrock"), config_schema, resources)
    assert ("'bedrock' is not allowed (allowed: anthropic, embedded, openai, "
            "openai_responses, openrouter)") in msg
    msg = problems(with_model(base, backend="openrouter", model_id="a/b", quantization="q4"),
                   config_schema, resources)
    assert "config.models.hosted.quantization: 'q4' is not allowed" in msg


def test_a_key_in_the_config_is_refused(base, config_schema, resources):
    msg = problems(with_model(base, backend="openrouter", model_id="a/b",
                              api_key="sk-or-v1-written-down"), config_schema, resources)
    assert "config.models.hosted.api_key: keys come from the environment only" in msg


def test_paper_study_validates_and_plans_every_sweep(config_schema, resources):
    cfg = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text())
    study = load_study(cfg, config_schema, load_arm_table(resources), resources)
    assert study.scale == 1.0
    assert study.arms["j"].ceilings == {"summary": 9600}
    assert set(study.arms["q"].ceilings.values()) == {1920}
    assert (study.arms["l"].fold_budget_tokens, study.arms["m"].fold_budget_tokens) == (900, 2400)
    assert (study.arms["m"].carry_cap_tokens, study.arms["u"].carry_cap_tokens) == (2400, 1400)
    sweeps = cfg["sweeps"]
    assert len(sweeps["partition"]["models"]) == 20 and sweeps["partition"]["arms"] == ["j", "q"]
    assert sweeps["iteration"]["scenario"] == "single_chunk"
    assert sweeps["depth"]["repeats"] == 12 and len(sweeps["ceiling"]["models"]) == 2
    assert all(m["backend"] in ("openrouter", "openai") for m in cfg["models"].values())
    assert all(m.get("api_key_env") in (None, "OPENROUTER_API_KEY")
               for m in cfg["models"].values())


def _planned(study, sweep, model, arm):
    return sum(1 for r in study.runs if (r.sweep, r.model, r.arm) == (sweep, model, arm))


def test_paper_study_plans_the_papers_row_counts(config_schema, resources):
    """Every sweep the paper reports, with its row counts (paper §4.1-§4.7)."""
    cfg = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text())
    study = load_study(cfg, config_schema, load_arm_table(resources), resources)
    qwen = "qwen3.6-35b-a3b"
    # §4.3/§4.6: the anchor corpus, j on qwen, 28 rows.
    assert _planned(study, "anchor", qwen, "j") == 28
    # §4.5: qwen's capacity rows j 11 (12 planned), t 12, m 4, u 4; §4.6: glm 4 per arm.
    cap = {a: _planned(study, "ceiling", qwen, a) + _planned(study, "ceiling_jt", qwen, a)
           for a in "jtmu"}
    assert cap == {"j": 12, "t": 12, "m": 4, "u": 4}
    assert {a: _planned(study, "ceiling", "glm-5.2", a) for a in "jtmu"} == dict.fromkeys(
        "jtmu", 4)
    # §4.1: qwen3.6-flash's unclosed rotation, l and m over 7 repeats (l leads 4 times).
    flash = [r for r in study.runs if r.sweep == "flash_lm"]
    assert len(flash) == 14 and sum(r.position == 0 and r.arm == "l" for r in flash) == 4
    # §4.3: ten j rows over the two decomposition sweeps; §4.7: 20 models x 4 rows.
    assert sum(_planned(study, s, qwen, "j") for s in ("decomposition_a",
                                                       "decomposition_b")) == 10
    assert len({r.model for r in study.runs if r.sweep == "partition"}) == 20
    assert _planned(study, "depth", "granite-4.1-8b", "q") == 12
    # §4.2: the re-probed models get a verdict and no row.
    assert len(study.config["probe_only"]) == 8
    assert not {r.model for r in study.runs} & set(study.config["probe_only"])
    assert set(study.config["probe_only"]) <= set(study.probed_models)
    assert cfg["probe"] == {"min_context_tokens": 131072, "require_structured_outputs": True}
    local = study.model_config("qwen3.6-local")
    assert local["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}


def test_factory_builds_each_backend_without_a_call(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    b = make_backend("x", {"backend": "openrouter", "model_id": "a/b", "provider": "deepinfra"})
    assert isinstance(b, OpenRouterBackend) and "OPENROUTER_API_KEY" in b.missing_key()
    assert b.identity["pin_tag"] == "deepinfra" and b.identity["allow_fallbacks"] is False
    o = make_backend("y", {"backend": "openai", "base_url": "http://127.0.0.1:1/v1"})
    assert isinstance(o, OpenAICompatBackend)
    assert "127.0.0.1" not in str(o.identity)  # the identity never names a host
    r = make_backend("x", {"backend": "openrouter", "model_id": "a/b", "provider": "deepinfra"},
                     replay=True)
    assert r.identity == b.identity
