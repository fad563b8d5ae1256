"""The audit: runs, calls, tokens and dollars per model, before any call."""

from __future__ import annotations

import csv

import pytest
import yaml

from foldstudy.carriers.registry import carrier_of
from foldstudy.run.audit import PlannedRun, Sizes, plan_rows, run_tokens
from foldstudy.study.spec import load_arm_table

from ..conftest import RESOURCES, ROOT
from ..support.procs import snakemake

SIZES = Sizes(chunk_chars={"s": [90_000] * 5}, fold_template_chars=300, recall_chars=1200,
              chars_per_token=3.0)


def test_run_tokens_counts_folds_carry_and_recall(arms):
    calls, prompt, completion = run_tokens(arms["l"], [90_000] * 5, SIZES, 400)
    assert calls == 6
    assert completion == 5 * 900 + 400  # l's deployed 900-token budget
    # five 30,000-token chunks, four carried summaries of at most 900 tokens, + recall
    assert 150_000 + 4 * 900 < prompt < 150_000 + 4 * 900 + 3_000


def test_a_keep_recent_arm_prices_no_call_for_its_first_folds(arms):
    """native:keep_recent=2 sends nothing at its first two folds (no chunk is older than
    the kept tail yet): two calls fewer than plain native, two fold budgets fewer, and
    every chunk still counted once, in a later compaction or the recall turn."""
    plain = run_tokens(arms["native"], [90_000] * 5, SIZES, 400)
    kept = run_tokens(arms["native_keep2"], [90_000] * 5, SIZES, 400)
    assert carrier_of(arms["native_keep2"]).folds_without_call() == 2
    assert (plain[0], kept[0]) == (6, 4)
    budget = arms["native"].fold_budget_tokens
    assert plain[2] - kept[2] == 2 * budget
    chunks = 5 * 30_000
    assert chunks < kept[1] < plain[1]


def test_plan_prices_from_the_probe_and_counts_forbidden_runs_as_no_call(arms):
    runs = [PlannedRun("s", "hosted", a) for a in "jqm"] + [PlannedRun("s", "local", "m")]
    forbidden = {"allowed": False, "verdict": "schema_advertised_reply_nonconforming"}
    probes = {"hosted": {"price_prompt_usd_per_token": 1e-6,
                         "price_completion_usd_per_token": 2e-6,
                         "pin": {"provider_name": "DeepInfra"},
                         "permissions": {"j": {"allowed": True}, "m": {"allowed": True},
                                         "q": forbidden}}}
    rows = {r["model"]: r for r in plan_rows(runs, arms, {"hosted": "openrouter",
                                                           "local": "embedded"},
                                             probes, SIZES, 400)}
    h = rows["hosted"]
    assert (h["runs"], h["runs_forbidden"], h["calls"], h["pin"]) == (3, 1, 12, "DeepInfra")
    usd = h["est_prompt_tokens"] * 1e-6 + h["max_completion_tokens"] * 2e-6
    assert h["est_usd_max"] == f"{usd:.2f}" and h["price_source"] == "probe pin"
    assert rows["local"]["est_usd_max"] == "0.00"
    assert rows["TOTAL"]["calls"] == 18 and rows["TOTAL"]["runs"] == 4


def test_unknown_prices_make_the_total_a_lower_bound(arms):
    rows = plan_rows([PlannedRun("s", "hosted", "m")], arms, {"hosted": "openrouter"},
                     {"hosted": {"permissions": {"m": {"allowed": False,
                                                       "verdict": "auth_failed"}}}},
                     SIZES, 400)
    # auth_failed says nothing about the arm: its calls are still in the plan
    assert rows[0]["calls"] == 6 and rows[0]["est_usd_max"] == ""
    assert rows[-1]["est_usd_max"].endswith("+")


def test_a_staged_decision_prices_its_first_stage_and_its_maximum(arms):
    """Required: "The DAG stays plannable: -n and the audit show the first stage and the
    maximum." A sweep decided in stages plans its maximum (the per-model lines and TOTAL
    count every run up to max_repeats); its DECIDE_FIRST line gives the first stage's
    repeats, runs, calls and worst-case dollars, every model's, and DECIDE_MAX the
    maximum's, which is the sweep's whole plan."""
    from foldstudy.run.audit import PLAN_COLUMNS, StagedSweep

    runs = [PlannedRun("s", model, arm, rep) for model in ("hosted", "other")
            for rep in range(24) for arm in "jm"]
    probes = {m: {"price_prompt_usd_per_token": 1e-6, "price_completion_usd_per_token": 2e-6}
              for m in ("hosted", "other")}
    backends = dict.fromkeys(probes, "openrouter")
    rows = plan_rows(runs, arms, backends, probes, SIZES, 400, 50.0,
                     [StagedSweep("s", ("j", "m"), 8, 24, 3)])
    assert [r["model"] for r in rows[-4:]] == ["TOTAL", "DECIDE_FIRST", "DECIDE_MAX", "BUDGET"]
    first, most, total = rows[-3], rows[-2], rows[-4]
    assert all(set(r) == set(PLAN_COLUMNS) for r in rows)
    assert (first["sweep"], first["repeats"], most["repeats"]) == ("s", 8, 24)
    assert first["runs"] == 8 * 2 * 2 and most["runs"] == total["runs"] == 96
    assert most["calls"] == total["calls"] == 3 * first["calls"]
    # the DECIDE lines are priced as the ledger reserves: the prompt at its 2 characters
    # a token (the audit's estimate is at the fixtures' 3), max_tokens, listed prices
    # (nothing learned yet), so the maximum's worst case is above the audit's TOTAL
    prompt, completion = most["est_prompt_tokens"], most["max_completion_tokens"]
    assert prompt == total["est_prompt_tokens"]
    assert float(most["est_usd_max"]) == pytest.approx(
        prompt * SIZES.chars_per_token / 2 * 1e-6 + completion * 2e-6, abs=0.01)
    assert float(most["est_usd_max"]) > float(total["est_usd_max"])
    assert float(first["est_usd_max"]) == pytest.approx(float(most["est_usd_max"]) / 3,
                                                        abs=0.01)
    assert "j vs m: the first stage, 8 repeats per model over 2 models" in \
        first["price_source"]
    assert "priced as the ledger reserves" in first["price_source"]
    assert "learned on 0 of 2 endpoints" in first["price_source"]
    # with the gateway billing 3 times its listing learned on one endpoint, that
    # model's maximum costs 3 x 1.25 times as much
    from foldstudy.backends.ledger import empty_ledger, endpoint_key

    ident = {"backend": "openrouter", "model_id": "acme/hosted", "pin": "Dear"}
    probes["hosted"]["endpoint"] = ident
    state = {**empty_ledger(), "learned": {endpoint_key(ident): 1},
             "ratios": {endpoint_key(ident): 3.0}}
    learned = plan_rows(runs, arms, backends, probes, SIZES, 400, None,
                        [StagedSweep("s", ("j", "m"), 8, 24, 3)], state)
    most_l = next(r for r in learned if r["model"] == "DECIDE_MAX")
    assert float(most_l["est_usd_max"]) == pytest.approx(
        float(most["est_usd_max"]) * (1 + 3 * 1.25) / 2, abs=0.02)
    assert "learned on 1 of 2 endpoints" in most_l["price_source"]
    # without a staged decision the plan is as before: no DECIDE lines
    assert not [r for r in plan_rows(runs, arms, backends, probes, SIZES, 400)
                if r["model"].startswith("DECIDE")]


@pytest.mark.workflow
def test_audit_rule_calls_no_model(tmp_path):
    p = snakemake(tmp_path, "-c1", "results/audit/plan.tsv", timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    with open(tmp_path / "results/audit/plan.tsv", newline="") as f:
        plan = {r["model"]: r for r in csv.DictReader(f, delimiter="\t")}
    m = plan["smollm2-135m"]
    sw = yaml.safe_load((ROOT / "config/config.yaml").read_text())["sweeps"]["main"]
    runs = len(sw["arms"]) * sw["repeats"]  # the default study's plan, every run
    # a run whose folds call the model makes a call per fold and the recall turn; a run
    # of a carrier that keeps the session (the ceiling) makes the recall turn alone
    table = load_arm_table(RESOURCES)
    no_call = sw["repeats"] * sum(not carrier_of(table["arms"][a]).calls_model
                                  for a in sw["arms"])
    per_run = int(m["folds"]) // runs
    assert m["runs"] == str(runs)
    assert int(m["calls"]) == (runs - no_call) * (per_run + 1) + no_call
    assert m["est_usd_max"] == "0.00"
    assert not (tmp_path / "results/probe").exists() and not (tmp_path / "results/runs").exists()


def test_the_budget_line_counts_the_runs_its_worst_case_covers(arms):
    from foldstudy.run.audit import run_usd

    runs = [PlannedRun("s", "hosted", a) for a in "jqmjqm"]
    probes = {"hosted": {"price_prompt_usd_per_token": 1e-6,
                         "price_completion_usd_per_token": 2e-6}}
    each = [run_usd(arms[r.arm], SIZES.chunk_chars["s"], SIZES, 400,
                    (1e-6, 2e-6, "probe pin"))[1] for r in runs]
    budget = sum(each[:4]) + each[4] / 2  # four runs and half of the fifth
    rows = plan_rows(runs, arms, {"hosted": "openrouter"}, probes, SIZES, 400, budget)
    line = rows[-1]
    assert line["model"] == "BUDGET" and line["runs"] == 4
    assert line["est_usd_max"] == f"{budget:.2f}" and "covers 4 of 6 runs" in line["price_source"]
    assert rows[-2]["model"] == "TOTAL"
    assert plan_rows(runs, arms, {"hosted": "openrouter"}, probes, SIZES, 400)[-1]["model"] \
        == "TOTAL"  # no budget, no line


def test_the_dry_run_line_says_the_spend_and_the_last_plan_against_this_budget(arms, tmp_path):
    from foldstudy.io import write_tsv
    from foldstudy.run.audit import PLAN_COLUMNS, budget_note

    ledger, plan = str(tmp_path / "ledger.json"), str(tmp_path / "plan.tsv")
    assert budget_note(None, ledger, plan) is None
    assert "projects the cost" in budget_note(5.0, ledger, plan)
    runs = [PlannedRun("s", "hosted", "m")]
    probes = {"hosted": {"price_prompt_usd_per_token": 1e-6,
                         "price_completion_usd_per_token": 2e-6}}
    write_tsv(plan_rows(runs, arms, {"hosted": "openrouter"}, probes, SIZES, 400, 5.0),
              PLAN_COLUMNS, plan)
    note = budget_note(5.0, ledger, plan)
    assert note.startswith("budget_usd 5: spent $0.0000") and "covers 1 of 1 runs" in note
    assert "rerun it for the runs budget_usd 0.01 covers" in budget_note(0.01, ledger, plan)
