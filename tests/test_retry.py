"""Rows infrastructure broke are retried on request; rows the arm broke never are.

Paper §3.3: "Rows invalidated by infrastructure faults may be retried; rows invalidated
by an arm's own behaviour may not, since retrying those would select for the arm
succeeding." Driven through the whole workflow against the gateway stand-in.
"""

from __future__ import annotations

import json

import pytest

from .gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from .gateway_standin import rows_by_id as rows
from .support.gateway_study import GatewayStudy, gateway_model

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-standin-retry"
ALL = ALL_PARAMETERS


def test_an_infrastructure_invalid_row_is_retried_and_nothing_else(tmp_path):
    models = [Model("acme/flaky", [Endpoint("F", "f", supported_parameters=ALL)]),
              Model("acme/plain-only", [Endpoint("P", "p", supported_parameters=(
                  "max_tokens", "temperature", "seed", "reasoning"))])]
    policy = {"timeout_s": 10, "max_attempts": 2, "retry_initial_wait_s": 0.01,
              "retry_max_wait_s": 0.1}
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {"study": "retry", "scale": 0.01, "recall_max_tokens": 32,
               "models": {"flaky": gateway_model("acme/flaky", gw.base_url, **policy),
                          "plainonly": gateway_model("acme/plain-only", gw.base_url,
                                                     **policy)},
               "sweeps": {"s": {"scenario": "distributed", "seed": 5, "repeats": 1,
                                "models": ["flaky", "plainonly"], "arms": ["j", "m"]}}}
        snakemake = GatewayStudy(tmp_path, cfg, KEY).snakemake

        p = snakemake("results/probe/summary.tsv")
        assert p.returncode == 0, p.stderr[-3000:]
        # flaky's first fold job (j leads the block) gets fold 0, then 502s past its
        # two attempts on fold 1: an infrastructure fault.
        gw.state.queue_faults("acme/flaky", [{}, {"status": 502}, {"status": 502}])
        n0 = len(gw.state.chat_calls("acme/flaky"))
        p = snakemake("results/evidence/rows.csv")
        assert p.returncode == 0, p.stderr[-3000:]
        first = rows(tmp_path / "results/evidence/rows.csv")
        assert first["s/flaky/r0/j"]["invalid_reason"] == "infrastructure:server"
        assert first["s/flaky/r0/m"]["valid"] == "true"
        not_run = tmp_path / "results/runs/s/plainonly/r0/j.json"
        assert first["s/plainonly/r0/j"]["invalid_reason"].startswith("not_run:")
        untouched = {x: x.read_bytes() for x in (tmp_path / "results/runs").rglob("*.json")
                     if "flaky/r0/j" not in str(x)}
        n1 = len(gw.state.chat_calls("acme/flaky"))

        # Without the flag a rerun has nothing to do and sends nothing.
        p = snakemake("results/evidence/rows.csv", "-n")
        assert "Nothing to be done" in p.stdout + p.stderr
        # The stand-in heals; the flagged rerun retries exactly the broken row.
        p = snakemake("results/evidence/rows.csv", "--config", "retry_infrastructure=true")
        assert p.returncode == 0, p.stderr[-3000:]
        retry_calls = gw.state.chat_calls("acme/flaky")[n1:]

    again = rows(tmp_path / "results/evidence/rows.csv")
    assert again["s/flaky/r0/j"]["valid"] == "true" and again["s/flaky/r0/j"]["attempt"] == "2"
    assert again["s/flaky/r0/m"]["attempt"] == "1"
    # Only the missing calls went out: folds 1-4 and the recall turn, not fold 0.
    assert len(retry_calls) == 5 and n1 - n0 > 5
    record = json.loads((tmp_path / "results/runs/s/flaky/r0/j.json").read_text())
    assert record["folds"][0]["store_hit"] and not record["folds"][1]["store_hit"]
    earlier = record["previous_attempts"]
    assert [a["attempt"] for a in earlier] == [1]
    assert earlier[0]["invalid_reason"] == "infrastructure:server"
    assert earlier[0]["infra_error"]["turn"] == "fold1"
    # Every other record, the probe-forbidden (arm-invalid) one included, is untouched.
    assert all(x.read_bytes() == b for x, b in untouched.items())
    assert not_run in untouched
