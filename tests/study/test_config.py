from __future__ import annotations

import copy

import pytest
import yaml

from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.spec import arm_ids, load_arm_table

from ..conftest import ROOT


@pytest.fixture(scope="module")
def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def study(cfg, config_schema, resources):
    return load_study(cfg, config_schema, load_arm_table(resources), resources)


def problems(cfg, config_schema, resources):
    with pytest.raises(ConfigError) as e:
        study(cfg, config_schema, resources)
    return str(e.value)


def test_default_config_resolves_every_run(base, config_schema, resources):
    s = study(base, config_schema, resources)
    sw = base["sweeps"]["main"]
    assert len(s.runs) == len(sw["arms"]) * sw["repeats"] * len(sw["models"])
    for r in s.runs:
        prev = [x for x in s.runs if (x.sweep, x.model, x.repeat) == (r.sweep, r.model, r.repeat)
                and x.position == r.position - 1]
        assert (prev[0].arm if prev else None) == r.previous_arm


def test_unknown_arm_names_the_key_and_the_arms(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["arms"] = ["j", "x"]
    msg = problems(cfg, config_schema, resources)
    known = " ".join(sorted(arm_ids(load_arm_table(resources))))
    assert f"config.sweeps.main.arms[1]: 'x' is not an arm (known: {known})" in msg


def test_negative_repeats_names_the_key(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["repeats"] = -2
    assert "config.sweeps.main.repeats: -2 is less than the minimum of 1" in problems(
        cfg, config_schema, resources)


def test_unknown_key_and_undeclared_model(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["sweps"] = {}
    msg = problems(cfg, config_schema, resources)
    assert "config: unknown key 'sweps'" in msg
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["models"] = ["nope"]
    assert "config.sweeps.main.models[0]: 'nope' is not a configured model" in problems(
        cfg, config_schema, resources)


def test_hand_written_q_ceiling_that_breaks_the_capacity_match(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["arm_overrides"] = {"q": {"ceiling_per_field_chars": 2000}}
    msg = problems(cfg, config_schema, resources)
    assert "config.arm_overrides.q.ceiling_per_field_chars" in msg
    assert "9600 / 5 sections = 1920" in msg
    cfg["arm_overrides"] = {"q": {"ceiling_per_field_chars": 1920}}
    study(cfg, config_schema, resources)  # the derived value itself is accepted


def test_q_follows_j_at_every_scale(base, config_schema, resources):
    # the ceiling reads the session whole: at a larger scale it needs a larger context
    base = copy.deepcopy(base)
    base["sweeps"]["main"]["arms"] = ["j", "m"]
    for scale in (1.0, 0.5, 0.1, 0.03, 0.02, 0.013, 0.01):
        cfg = copy.deepcopy(base)
        cfg["scale"] = scale
        cfg["arm_overrides"] = {"j": {"ceiling_chars": 12000}}
        s = study(cfg, config_schema, resources)
        j, q, t = s.arms["j"], s.arms["q"], s.arms["t"]
        assert q.declared_ceiling_chars == j.declared_ceiling_chars  # capacity match
        assert len(set(q.ceilings.values())) == 1 and q.n_fields == 5
        assert abs(t.declared_ceiling_chars - j.declared_ceiling_chars / 2) <= 1
    paper = study({**base, "scale": 1.0}, config_schema, resources).arms
    assert paper["j"].ceilings == {"summary": 9600}
    assert set(paper["q"].ceilings.values()) == {1920}
    assert paper["f"].ceilings == {"summary": 1024}
    assert (paper["l"].fold_budget_tokens, paper["m"].fold_budget_tokens) == (900, 2400)
    assert (paper["u"].carry_cap_tokens, paper["m"].carry_cap_tokens) == (1400, 2400)


def test_shared_system_prompt_digest(base, config_schema, resources):
    arms = study(base, config_schema, resources).arms
    assert len({arms[a].system_prompt_sha256 for a in "jqmptu"}) == 1
    assert arms["o"].system_prompt_sha256 != arms["j"].system_prompt_sha256
    assert len({arms[a].system_prompt_sha256 for a in "fng"}) == 1


KEY = "sk-or-v1-" + "5f0c1e2d9b8a7f6e" * 3


def test_a_key_hidden_in_extra_body_is_refused(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["models"]["srv"] = {"backend": "openai", "base_url": "http://127.0.0.1:8000/v1",
                            "extra_body": {"headers": {"Authorization": f"Bearer {KEY}"}}}
    msg = problems(cfg, config_schema, resources)
    assert "config.models.srv.extra_body.headers.Authorization" in msg and KEY not in msg
    cfg["models"]["srv"]["extra_body"] = {"options": [KEY]}
    msg = problems(cfg, config_schema, resources)
    assert "config.models.srv.extra_body.options[0]" in msg and KEY not in msg


def test_a_key_pasted_into_api_key_env_is_not_echoed(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["models"]["gw"] = {"backend": "openrouter", "model_id": "a/b", "api_key_env": KEY}
    msg = problems(cfg, config_schema, resources)
    assert "config.models.gw.api_key_env" in msg and KEY not in msg and KEY[:12] not in msg


def test_a_model_twice_in_a_sweep_is_refused(base, config_schema, resources):
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["models"] = ["smollm2-135m", "smollm2-135m"]
    assert "config.sweeps.main.models" in problems(cfg, config_schema, resources)


def test_probe_arms_are_checked_against_arms_yaml_and_never_folded(base, config_schema,
                                                                   resources):
    """A model's probe_arms (paper §4.2) name arms of resources/arms.yaml, none its sweeps
    fold; they reach no backend config, so naming one changes no fold job's params."""
    cfg = copy.deepcopy(base)
    model = cfg["sweeps"]["main"]["models"][0]
    cfg["models"][model]["probe_arms"] = ["x"]
    known = " ".join(sorted(arm_ids(load_arm_table(resources))))
    assert (f"config.models.{model}.probe_arms[0]: 'x' is not an arm (known: {known})"
            in problems(cfg, config_schema, resources))
    cfg["models"][model]["probe_arms"] = ["q", "j"]
    assert (f"config.models.{model}.probe_arms[1]: 'j' is folded on this model already "
            "(sweep main)" in problems(cfg, config_schema, resources))
    cfg["models"][model]["probe_arms"] = ["q"]
    s = study(cfg, config_schema, resources)
    plain = study(base, config_schema, resources)
    assert s.probe_arms(model) == ["q"] and plain.probe_arms(model) == []
    assert s.folded_arms(model) == plain.folded_arms(model) == ["j", "m", "uncompacted"]
    assert s.model_config(model) == plain.model_config(model)
    assert "probe_arms" not in s.model_config(model)


def test_the_paper_study_probes_qwen36_flash_schema(config_schema, resources):
    """§4.2: qwen3.6-flash's sweep runs plain arms; the paper study names j to probe."""
    cfg = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text())
    s = study(cfg, config_schema, resources)
    assert s.probe_arms("qwen3.6-flash") == ["j"]
    assert all(s.arms[a].schema is None for a in s.folded_arms("qwen3.6-flash"))


@pytest.mark.parametrize("compare", ["pairs", "ladder", [["m", "j"]], None])
def test_a_sweeps_compare_takes_its_words_or_its_own_pairs(base, config_schema, resources,
                                                           compare):
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["compare"] = compare
    assert study(cfg, config_schema, resources).config["sweeps"]["main"]["compare"] == compare


@pytest.mark.parametrize(("compare", "said"), [
    ("all", "config.sweeps.main.compare: 'all' is not allowed (allowed: pairs; ladder; a "
            "list of pairs [[a, b], ...]; null (by the sweep's size))"),
    ([["j", "x"]], "config.sweeps.main.compare[0][1]: 'x' is not an arm (known: "),
    ([["j", "m", "q"]], "config.sweeps.main.compare[0]: ['j', 'm', 'q'] is too long"),
    ([["j", "q"]], "config.sweeps.main.compare[0]: 'q' is not an arm of sweep main (its "
                   "arms: j m uncompacted)"),
    ([["j", "j"]], "config.sweeps.main.compare[0]: [j, j] compares arm 'j' with itself"),
    ([["j", "uncompacted"]], "config.sweeps.main.compare[0]: 'uncompacted' is "),
])
def test_a_wrong_compare_is_refused_naming_the_key_and_what_is_allowed(
        base, config_schema, resources, compare, said):
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["compare"] = compare
    msg = problems(cfg, config_schema, resources)
    assert said in msg and len(msg.splitlines()) == 2  # the heading and this one line
    if compare == [["j", "uncompacted"]]:  # outside the matched comparison, said why
        assert "in no card verdict" in msg


def test_a_native_arm_on_a_backend_without_native_compaction_is_refused(
        base, config_schema, resources):
    """Its runs could only be `not_run` records: the backend's kind says statically
    whether it has the provider's compaction (backends/base.py native_compaction)."""
    from foldstudy.backends.registry import backend_classes

    having = [k for k, c in backend_classes().items() if c.native_compaction]
    assert "anthropic" in having and "embedded" not in having and "openrouter" not in having
    cfg = copy.deepcopy(base)
    cfg["sweeps"]["main"]["arms"] = ["j", "m", "native"]
    msg = problems(cfg, config_schema, resources)
    assert ("config.sweeps.main.models[0]: 'smollm2-135m' runs on backend embedded, which "
            f"has no native compaction for arm 'native' (backends that have one: "
            f"{', '.join(having)})") in msg
    cfg["models"]["claude"] = {"backend": "anthropic", "model_id": "claude-sonnet-4-6",
                               "api_key_env": "ANTHROPIC_API_KEY",
                               "price_prompt_usd_per_mtok": 3.0,
                               "price_completion_usd_per_mtok": 15.0}
    cfg["sweeps"]["main"]["models"] = ["claude"]
    cfg["sweeps"]["main"]["arms"] = ["j", "m", "native"]
    assert "native" in study(cfg, config_schema, resources).config["sweeps"]["main"]["arms"]


@pytest.mark.parametrize("backend, host", [("anthropic", "api.anthropic.com"),
                                           ("openai_responses", "api.openai.com")])
def test_a_native_arm_off_the_providers_api_is_refused_until_native_via_says_whose(
        base, config_schema, resources, backend, host):
    """A gateway or proxy (LiteLLM, a self-hosted Responses server) may answer a
    compaction request with a summary of its own, which a native row would grade as the
    provider's: its base_url must be the provider's API unless `native_via` says whose
    compaction it is, and saying so changes no fold's backend config."""
    cfg = copy.deepcopy(base)
    cfg["models"]["x"] = {"backend": backend, "model_id": "m-1",
                          "base_url": "https://litellm.example.org/v1", "api_key_env": "K",
                          "price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0}
    cfg["sweeps"]["main"]["models"] = ["x"]
    cfg["sweeps"]["main"]["arms"] = ["j", "m", "native"]
    msg = problems(cfg, config_schema, resources)
    assert (f"config.models.x.native_via: arm 'native' grades "
            f"{'anthropic' if backend == 'anthropic' else 'openai'}'s own compaction, but "
            f"base_url https://litellm.example.org/v1 is not its API ({host})") in msg
    assert msg.count("config.models.x.native_via") == 1 and "(allowed: provider, proxy)" in msg
    for via in ("proxy", "provider"):
        cfg["models"]["x"]["native_via"] = via
        s = study(cfg, config_schema, resources)
        assert "native_via" not in s.model_config("x")
    cfg["models"]["x"]["native_via"] = "mine"
    assert "config.models.x.native_via" in problems(cfg, config_schema, resources)
    del cfg["models"]["x"]["native_via"]
    cfg["models"]["x"]["base_url"] = f"https://{host}/v1"
    assert study(cfg, config_schema, resources).model_config("x")["base_url"] == (
        f"https://{host}/v1")
    cfg["sweeps"]["main"]["arms"] = ["j", "m"]  # no native arm: the address is not checked
    cfg["models"]["x"]["base_url"] = "https://litellm.example.org/v1"
    study(cfg, config_schema, resources)
