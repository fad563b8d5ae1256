"""Capacity that can hold the facts at every scale (docs/design.md §3): the session is scaled,
the capacities are chosen to hold the graded facts twice over, the paper's capacity
matches still hold exactly, and a config too small for its facts is refused."""

from __future__ import annotations

import copy

import pytest
import yaml

from foldstudy.study.capacity import FactLoad
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.fixtures import build_fixture
from foldstudy.study.spec import load_arm_table

from ..conftest import ROOT


@pytest.fixture(scope="module")
def default_cfg():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def study(cfg, config_schema, resources):
    return load_study(cfg, config_schema, load_arm_table(resources), resources)


def test_the_default_holds_its_facts_twice_and_keeps_the_papers_ratios(
        default_cfg, config_schema, resources):
    cfg = copy.deepcopy(default_cfg)
    cfg["sweeps"]["main"]["arms"] = ["j", "q", "m", "t", "u"]
    s = study(cfg, config_schema, resources)
    a = s.arms
    # q's five fields sum exactly to j's one; t is half of j; u's cap is 1,400/2,400 of m's
    assert sum(a["q"].ceilings.values()) == a["j"].declared_ceiling_chars
    assert a["t"].declared_ceiling_chars * 2 == a["j"].declared_ceiling_chars
    assert a["u"].carry_cap_tokens == round(a["m"].carry_cap_tokens * 1400 / 2400)
    # the facts fit twice in every capacity of every arm the study runs
    sw = cfg["sweeps"]["main"]
    fx = build_fixture("distributed", sw["seed"], s.scale,
                       yaml.safe_load((resources / "facts.yaml").read_text()),
                       yaml.safe_load((resources / "scenario/filler.yaml").read_text()), set())
    load = FactLoad.of("distributed", fx.graded)
    for arm in sw["arms"]:
        assert a[arm].fold_budget_tokens >= 2 * load.tokens
        assert a[arm].carry_cap_tokens >= 2 * load.tokens
        if a[arm].declared_ceiling_chars:
            assert a[arm].declared_ceiling_chars >= 2 * load.chars
    # the default study's own arms: a chunk still needs compressing (twice a budget)
    assert not study(copy.deepcopy(default_cfg), config_schema, resources).warnings
    # u's smaller cap needs more capacity; the haystack would then be too small: said
    assert s.capacity_scale == 0.45 and "over half a chunk" in s.warnings[0]


def test_a_capacity_that_cannot_hold_the_facts_is_refused_naming_the_numbers(
        default_cfg, config_schema, resources):
    cfg = copy.deepcopy(default_cfg)
    cfg["capacity_scale"] = 0.05
    with pytest.raises(ConfigError) as e:
        study(cfg, config_schema, resources)
    msg = str(e.value)
    assert "config.sweeps.main (capacity_scale 0.05): arm j's declared ceiling is 480 chars" in msg
    assert "twice the 14 graded distributed facts" in msg and "fold budget is 120 tokens" in msg


def test_an_arm_the_paper_gave_less_room_keeps_its_paper_capacity(
        default_cfg, config_schema, resources):
    """Paper §4.1: f's 1,024-character ceiling "cannot hold the material regardless of
    shape". Scaled, it may not get less room than the paper gave it."""
    cfg = copy.deepcopy(default_cfg)
    cfg["sweeps"]["main"]["arms"] = ["f", "m"]
    assert study(cfg, config_schema, resources).arms["f"].declared_ceiling_chars == 1024
    cfg["capacity_scale"] = 0.5
    with pytest.raises(ConfigError, match="arm f's declared ceiling is 512 chars, under its "
                                          "paper capacity"):
        study(cfg, config_schema, resources)


@pytest.mark.model
def test_the_default_holds_the_facts_twice_in_the_models_own_tokens(
        default_cfg, config_schema, resources):
    """The config check estimates tokens at two characters each; the embedded model's
    own tokenizer must find the facts no larger than that."""
    from foldstudy.backends.embedded import GGUFTokenizer, packaged_weights

    s = study(copy.deepcopy(default_cfg), config_schema, resources)
    sw = default_cfg["sweeps"]["main"]
    fx = build_fixture("distributed", sw["seed"], s.scale,
                       yaml.safe_load((resources / "facts.yaml").read_text()),
                       yaml.safe_load((resources / "scenario/filler.yaml").read_text()), set())
    tok = GGUFTokenizer.vocab_only(packaged_weights())
    try:
        facts = tok.count_tokens("\n".join(f"{f.label}: {f.value}" for f in fx.graded))
        chunk = min(tok.count_tokens(c) for c in fx.chunks)
    finally:
        tok.close()
    for arm in sw["arms"]:
        assert s.arms[arm].fold_budget_tokens >= 2 * facts
        assert s.arms[arm].carry_cap_tokens >= 2 * facts
        assert chunk >= 2 * s.arms[arm].fold_budget_tokens
