"""The analysis plan's titles of a native arm (analysis/plan.py AnalysisPlan.arm_title):
per model, in its native words (carriers/native.py native_words), so a model whose config
says native_via: proxy never has its arm called the provider's compaction, and a study
without one reads the table's titles unchanged."""

from __future__ import annotations

import pandas as pd

from foldstudy.analysis.plan import AnalysisPlan, models_by_arm

PROXY = {"backend": "anthropic", "native_via": "proxy",
         "base_url": "https://user:secret@gw.example:8443/v1?key=abc"}
CONFIG = {"models": {"px": PROXY, "pv": {"backend": "anthropic"}},
          "sweeps": {"s": {"arms": ["m", "native"], "controls": {"aa": "native"},
                           "native_with": ["m"]}}}


def test_the_config_names_each_proxy_models_words():
    plan = AnalysisPlan.load(config=CONFIG)
    assert {m: w.compaction for m, w in plan.native_words.items()} == {
        "px": "compaction by gw.example:8443"}
    assert {"native", "native@m", "native~aa"} <= plan.native_arms
    assert "m" not in plan.native_arms


def test_a_native_arms_title_is_per_model_and_a_proxys_never_the_providers():
    plan = AnalysisPlan.load(config=CONFIG)
    provider = {a: plan.arm_titles[a] for a in ("native", "native@m", "native~aa", "m")}
    assert provider["native"] == "the provider's compaction"
    for arm, title in provider.items():  # no model, or a model on the provider's API
        assert plan.arm_title(arm) == plan.arm_title(arm, "pv") == title
    assert plan.arm_title("native", "px") == "compaction by gw.example:8443"
    assert plan.arm_title("native@m", "px") == "compaction by gw.example:8443 with m's prompt"
    assert plan.arm_title("native~aa", "px") == "compaction by gw.example:8443 (A/A copy)"
    assert plan.arm_title("m", "px") == provider["m"]
    # a line over both models names neither's alone
    assert plan.arm_title("native", "px", "pv") == "compaction by each model's endpoint"
    assert plan.arm_title("native", "px", "px") == "compaction by gw.example:8443"
    # a native arm keeping recent chunks keeps saying so, in the proxy's words
    assert plan.arm_titles["native_keep2"] == "the provider's compaction, last 2 chunks kept"
    assert plan.arm_title("native_keep2", "px") == \
        "compaction by gw.example:8443, last 2 chunks kept"
    for arm in ("native", "native@m", "native~aa", "native_keep2"):
        assert "provider" not in plan.arm_title(arm, "px")
        assert "secret" not in plan.arm_title(arm, "px")
        assert "/v1" not in plan.arm_title(arm, "px")


def test_the_models_an_arm_ran_on_per_sweep():
    rows = pd.DataFrame({"sweep": ["s", "s", "s", "t"], "model": ["b", "a", "b", "c"],
                         "arm": ["native", "native", "m", "native"]})
    assert models_by_arm(rows) == {("s", "m"): ("b",), ("s", "native"): ("a", "b"),
                                   ("t", "native"): ("c",)}
    assert models_by_arm(None) == {} and models_by_arm(rows[["sweep", "arm"]]) == {}
