"""`decide:` bounded and consistent: a schema maximum and a run ceiling
said before any run is planned, looks no rotation can take refused, evidence mode checked
against the package's sweeps, and a look where both arms lost everything stopping as the
card reads it."""

from __future__ import annotations

import time

import pandas as pd
import pytest
import yaml

from foldstudy.analysis.sequential import ALL_LOST
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.decide_checks import DECIDE_RUN_CEILING, decide_evidence_note, decide_sweeps
from foldstudy.study.derived import package_arms
from foldstudy.study.spec import load_arm_table

from ..conftest import ROOT


@pytest.fixture(scope="module")
def base() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))


def _load(cfg: dict, config_schema, resources):
    return load_study(cfg, config_schema, load_arm_table(resources), resources)


def test_a_billion_repeats_is_refused_by_the_schema_at_once(base, config_schema, resources):
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"config.decide.max_repeats.*1000"):
        _load({**base, "decide": {"max_repeats": 1_000_000_000}}, config_schema, resources)
    assert time.perf_counter() - t0 < 5


def test_a_maximum_past_the_run_ceiling_is_refused_naming_what_fits(base, config_schema,
                                                                    resources):
    sweeps = {"s": {**next(iter(base["sweeps"].values())), "arms": ["j", "m"]}}
    models = len(sweeps["s"]["models"])
    cfg = {**base, "sweeps": sweeps, "decide": {"max_repeats": 1000}, "budget_usd": 40}
    if 2 * models * 1000 <= DECIDE_RUN_CEILING:  # a config of one model: give it more
        cfg["models"] = {**base["models"], **{f"m{i}": next(iter(base["models"].values()))
                                              for i in range(6)}}
        sweeps["s"]["models"] = list(cfg["models"])
        models = len(cfg["models"])
    runs = 2 * models * 1000
    with pytest.raises(ConfigError) as e:
        _load(cfg, config_schema, resources)
    msg = str(e.value)
    assert f"plans {runs:,} runs" in msg and f"{DECIDE_RUN_CEILING:,}" in msg
    assert f"at most {DECIDE_RUN_CEILING // (2 * models)} repeats fit" in msg
    assert "budget_usd 40 stops the spend" in msg


def test_looks_past_what_the_rotation_allows_are_refused(base, config_schema, resources):
    sw = {**next(iter(base["sweeps"].values())), "arms": ["j", "m"], "design": "latin"}
    cfg = {**base, "sweeps": {"s": sw}, "decide": {"max_repeats": 100, "looks": 100}}
    with pytest.raises(ConfigError, match=r"100 looks cannot be taken in sweep s: .*"
                                          r"\(2 repeats for 2 arms\).* at most 50"):
        _load(cfg, config_schema, resources)
    study = _load({**cfg, "decide": {"max_repeats": 100, "looks": 50}}, config_schema,
                  resources)
    assert study.config["decide"]["looks"] == 50


def test_evidence_mode_stages_nothing_and_checks_the_pair_against_the_package(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("row_id,sweep,arm\na,s1,j\nb,s1,m\nc,s2,j\nd,s2,q\n")
    held = package_arms(rows)
    assert held == {"s1": {"j", "m"}, "s2": {"j", "q"}}
    cfg = {"evidence": str(tmp_path), "decide": {"pair": ["j", "m"]},
           "sweeps": {"s1": {"arms": ["j", "m"]}}}
    assert decide_sweeps(cfg) == []  # nothing staged, so nothing announced
    refusal, note = decide_evidence_note(cfg, held)
    assert refusal is None and "stages nothing" in note and "sweep s1 " in note
    refusal, note = decide_evidence_note({**cfg, "decide": {"pair": ["q", "m"]}}, held)
    assert note is None and "no sweep of the evidence package" in refusal
    assert "s2: j q" in refusal
    assert decide_evidence_note({**cfg, "evidence": None}, held) == (None, None)


def _lost_rows(n: int) -> pd.DataFrame:
    return pd.DataFrame([{"row_id": f"s/dear/r{r}/{a}", "sweep": "s", "model": "dear",
                          "arm": a, "repeat": r, "valid": True, "invalid_reason": "",
                          "recall": 0.0, "n_graded": 14, "n_correct": 0}
                         for r in range(n) for a in "jm"])


def test_a_look_where_both_arms_lost_everything_is_not_equivalence():
    """Required: "A staged look where both arms lost every fact says 'equivalent after 2
    repeats', right under a card saying no contrast is read." Zero differences pass TOST;
    the look says what the card says instead."""
    from types import SimpleNamespace

    from foldstudy.analysis.staging import look_state

    params = SimpleNamespace(decide={"pair": ["j", "m"], "margin": 0.1, "max_repeats": 24,
                                     "looks": 3},
                             alpha=0.05, power=0.8, rotation=2, seed=1, models=["dear"],
                             budget_usd=None)
    state = look_state("s", 1, None, _lost_rows(8), pd.DataFrame(columns=["row_id", "correct"]),
                       {}, params, {"dear": 0.1}, 0.0)
    s = state["models"]["dear"]
    assert s["status"] == ALL_LOST == "every arm lost every fact"
    assert state["done"] and "next" not in s
    # the same blocks with one fact recalled are compared as before
    rows = _lost_rows(8)
    rows.loc[0, ["n_correct", "recall"]] = [1, 1 / 14]
    s = look_state("s", 1, None, rows, pd.DataFrame(columns=["row_id", "correct"]), {},
                   params, {"dear": 0.1}, 0.0)["models"]["dear"]
    assert s["status"] != ALL_LOST


def test_a_null_pair_typed_on_the_command_line_stages_nothing(base, config_schema,
                                                              resources):
    from foldstudy.study.flags import command_line_flags

    cfg = {**base, "decide": {"pair": "null", "gate": {"arm": "m", "against": "j",
                                                       "at_least": "better"}}}
    command_line_flags(cfg, config_schema)
    study = _load(cfg, config_schema, resources)
    assert study.config["decide"]["pair"] is None and decide_sweeps(study.config) == []
