"""Rows infrastructure broke are retried on request; rows the arm broke never are.

Paper §3.3: "Rows invalidated by infrastructure faults may be retried; rows invalidated
by an arm's own behaviour may not, since retrying those would select for the arm
succeeding." Driven through the whole workflow against the gateway stand-in.
"""

from __future__ import annotations

import json
import re

import pytest

from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_standin import rows_by_id as rows
from ..support.gateway_study import GatewayStudy, gateway_model

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
        # The runs after flaky's j in its block run again (the DAG orders a block), but
        # every call of theirs is answered by the store; every other record is untouched.
        untouched = {x: x.read_bytes() for x in (tmp_path / "results/runs").rglob("*.json")
                     if "flaky/r0/" not in str(x)}
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
    # Every other record, the probe-forbidden (arm-invalid) one included, is untouched;
    # the run after the retried one was served whole from the store, its row the same.
    assert all(x.read_bytes() == b for x, b in untouched.items())
    after = json.loads((tmp_path / "results/runs/s/flaky/r0/m.json").read_text())
    assert all(t["store_hit"] for t in [*after["folds"], after["recall"]])
    assert again["s/flaky/r0/m"] == first["s/flaky/r0/m"]
    assert not_run in untouched


def test_a_row_invalid_for_its_endpoint_is_retried_by_lookup_or_by_buying_again(tmp_path):
    """Paper §3.3 and validity.py: endpoint_mismatch is an infrastructure reason, so the
    row may be retried. The retry must be able to heal it: a reply whose endpoint the
    lookup never named is looked up again (no call), and the one reply another endpoint
    served is bought again from the pinned one (one call); everything else the row
    stored is reused. Every served_by comes from GET /generation here (no provider
    field), as it may on the live gateway."""
    models = [Model("acme/routed", [Endpoint("R", "r", supported_parameters=ALL)])]
    policy = {"timeout_s": 10, "max_attempts": 2, "retry_initial_wait_s": 0.01,
              "retry_max_wait_s": 0.1}
    with GatewayStandin(models, key=KEY) as gw:
        st = gw.state
        st.omit_provider_field = True
        cfg = {"study": "retry", "scale": 0.01, "recall_max_tokens": 32,
               "models": {"routed": gateway_model("acme/routed", gw.base_url, **policy)},
               "sweeps": {"s": {"scenario": "distributed", "seed": 5, "repeats": 1,
                                "models": ["routed"], "arms": ["j", "m"]}}}
        snakemake = GatewayStudy(tmp_path, cfg, KEY).snakemake
        p = snakemake("results/probe/summary.tsv")
        assert p.returncode == 0, p.stderr[-3000:]
        # j leads the block: its first lookup fails past both attempts. Then m's third
        # fold is served by another endpoint.
        st.queue_get_faults("generation", [{"status": 502}] * 2)
        st.queue_faults("acme/routed", [{}] * 6 + [{}, {}, {"served_by": "Elsewhere"}])
        p = snakemake("results/evidence/rows.csv")
        assert p.returncode == 0, p.stderr[-3000:]
        first = rows(tmp_path / "results/evidence/rows.csv")
        assert first["s/routed/r0/j"]["invalid_reason"] == "endpoint_mismatch:unknown"
        assert first["s/routed/r0/m"]["invalid_reason"] == "endpoint_mismatch:Elsewhere"
        strayed = st.chat_calls("acme/routed")[-4]  # m's fold 2 (then folds 3, 4, recall)
        n_calls, n_gets = len(st.chat_calls("acme/routed")), len(st.gets)

        p = snakemake("results/evidence/rows.csv", "-n")
        assert "Nothing to be done" in p.stdout + p.stderr
        p = snakemake("results/evidence/rows.csv", "--config", "retry_infrastructure=true")
        assert p.returncode == 0, p.stderr[-3000:]
        resent = st.chat_calls("acme/routed")[n_calls:]
        lookups = st.lookups(since=n_gets)

    again = rows(tmp_path / "results/evidence/rows.csv")
    assert {r: (again[r]["valid"], again[r]["attempt"]) for r in again} == {
        "s/routed/r0/j": ("true", "2"), "s/routed/r0/m": ("true", "2")}
    # One call went out, the stray's body, and two lookups: j's fold 0 and the new reply.
    assert resent == [strayed]
    assert lookups == 2
    j, m = (json.loads((tmp_path / f"results/runs/s/routed/r0/{a}.json").read_text())
            for a in ("j", "m"))
    assert all(f["store_hit"] and f["reply"]["served_by"] == "R" for f in j["folds"])
    assert [f["store_hit"] for f in m["folds"]] == [True, True, False, True, True]
    assert {f["reply"]["served_by"] for f in m["folds"]} == {"R"}
    assert [a["invalid_reason"] for a in m["previous_attempts"]] == [
        "endpoint_mismatch:Elsewhere"]


def test_a_changed_input_reruns_every_run_of_each_block_not_its_first(tmp_path):
    """The DAG orders a block's runs by making each depend on the one before. Snakemake
    skips its own rerun checks for jobs downstream of one it reruns and, with that
    dependency marked ancient(), never reached them: a new probe verdict (or an edited
    prompt) reran each block's first run only, and the tables mixed the old and the new
    (snakemake/snakemake#4166). Every run that reads a changed input runs again."""
    models = [Model("acme/routed", [Endpoint("R", "r", supported_parameters=ALL)])]
    with GatewayStandin(models, key=KEY) as gw:
        cfg = {"study": "reruns", "scale": 0.01, "recall_max_tokens": 32,
               "models": {"routed": gateway_model("acme/routed", gw.base_url)},
               "sweeps": {"s": {"scenario": "distributed", "seed": 5, "repeats": 2,
                                "models": ["routed"], "arms": ["j", "q", "m"]}}}
        snakemake = GatewayStudy(tmp_path, cfg, KEY).snakemake
        p = snakemake("results/evidence/rows.csv")
        assert p.returncode == 0, p.stderr[-3000:]
    p = snakemake("results/evidence/rows.csv", "-n")
    assert "Nothing to be done" in p.stdout + p.stderr
    # The probe's record rewritten (same verdicts, other bytes): every fold reads it.
    probe = tmp_path / "results/probe/routed.json"
    probe.write_text(json.dumps(json.loads(probe.read_text()), indent=1))
    p = snakemake("results/evidence/rows.csv", "-n", "--quiet", "rules")
    planned = re.search(r"^fold\s+(\d+)$", p.stdout + p.stderr, re.M)
    assert planned and int(planned.group(1)) == 6, p.stdout[-2000:]
