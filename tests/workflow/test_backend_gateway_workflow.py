"""A whole study through the workflow on the gateway stand-in: the probe gates arms, runs
the probe forbids write records saying why, the pin is checked on every fold, retries
are recorded, and the key set in the environment appears in no file under results/."""

from __future__ import annotations

import json
import os

import pytest

from foldstudy.run.probe import PROBE_USER

from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_standin import rows_by_id as rows
from ..support.procs import snakemake

pytestmark = pytest.mark.workflow
CANARY = "sk-or-v1-CANARY-7c1d9e4f0a2b6c8d"
ALL = ALL_PARAMETERS


def test_gateway_study_end_to_end(tmp_path):
    models = [
        Model("acme/healthy", [Endpoint("Cheap", "cheap", "fp8", supported_parameters=ALL,
                                        price_prompt="1e-8"),
                               Endpoint("Dear", "dear", "fp8", supported_parameters=ALL,
                                        price_prompt="1e-5")]),
        Model("acme/granite", [Endpoint("Chutes", "chutes", "bf16", supported_parameters=(
            "max_tokens", "temperature", "seed", "response_format", "structured_outputs"))]),
        Model("acme/plain-only", [Endpoint("Plain", "plain", "fp8", supported_parameters=(
            "max_tokens", "temperature", "seed", "reasoning"))]),
    ]
    common = {"backend": "openrouter", "api_key_env": "FOLDSTUDY_TEST_KEY", "timeout_s": 10,
              "max_attempts": 3, "retry_initial_wait_s": 0.05, "retry_max_wait_s": 2}
    with GatewayStandin(models, key=CANARY) as gw:
        cfg = {
            "study": "gw", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 64,
            "models": {
                "healthy": {**common, "model_id": "acme/healthy", "base_url": gw.base_url},
                "granite": {**common, "model_id": "acme/granite", "base_url": gw.base_url},
                "plainonly": {**common, "model_id": "acme/plain-only", "base_url": gw.base_url},
            },
            "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ["j", "m"],
                             "models": ["healthy", "granite", "plainonly"], "repeats": 2}},
        }
        path = tmp_path / "gw.yaml"
        path.write_text(json.dumps(cfg))
        gw.state.queue_faults("acme/healthy", [{"status": 429, "retry_after": 1},
                                               {"finish_error": True}])
        env = {**os.environ, "FOLDSTUDY_TEST_KEY": CANARY}
        p = snakemake(tmp_path, "--configfile", str(path), "-c2", "results/evidence/rows.csv",
                      "results/probe/summary.tsv", timeout=600, env=env)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        granite_calls = gw.state.chat_calls("acme/granite")

    r = rows(tmp_path / "results/evidence/rows.csv")
    assert len(r) == 12
    for rep in (0, 1):
        for arm in "jm":
            assert r[f"s/healthy/r{rep}/{arm}"]["valid"] == "true"
            # Paper §4.2: an endpoint that honours response_format and declares no
            # reasoning is not refused: it gets no reasoning parameter and runs its arms.
            assert r[f"s/granite/r{rep}/{arm}"]["valid"] == "true"
        assert r[f"s/plainonly/r{rep}/m"]["valid"] == "true"
        assert r[f"s/plainonly/r{rep}/j"]["invalid_reason"] == (
            "not_run:probe_rejected_no_endpoint_for_parameters")
    assert all(r[f"s/{m}/r0/j"]["ceiling_delivery"] == "response_format"
               for m in ("healthy", "granite"))
    assert r["s/healthy/r0/m"]["ceiling_delivery"] == "none"
    # No call of the study sent granite a reasoning parameter; only the probe's one
    # comparison of the paper's original request did, and was refused for it.
    with_reasoning = [c for c in granite_calls if "reasoning" in c]
    assert with_reasoning and all(c["messages"][-1]["content"] == PROBE_USER
                                  for c in with_reasoning)
    assert any(c["messages"][-1]["content"] != PROBE_USER for c in granite_calls)
    probe = json.loads((tmp_path / "results/probe/granite.json").read_text())
    assert probe["verdict"] == "ok"
    assert probe["reasoning_parameter"]["with"]["responsible_parameter"] == "reasoning"
    # A refused request still names the parameter responsible, never the model.
    plain = json.loads((tmp_path / "results/probe/plainonly.json").read_text())
    assert "response_format" in plain["permissions"]["j"]["responsible_parameter"]
    rec = json.loads((tmp_path / "results/runs/s/plainonly/r0/j.json").read_text())
    assert rec["status"] == "not_run" and "response_format" in rec["not_run_detail"]
    # The pin was chosen by price, recorded, and matched by every fold.
    healthy = json.loads((tmp_path / "results/runs/s/healthy/r0/j.json").read_text())
    assert healthy["endpoint"]["pin"] == "Cheap"
    assert {f["reply"]["served_by"] for f in healthy["folds"]} == {"Cheap"}
    assert all(f["reply"]["cost_usd"] > 0 for f in healthy["folds"])
    summary = (tmp_path / "results/probe/summary.tsv").read_text()
    assert summary.count("\n") == 4 and "auth_failed" not in summary
    assert "verdict_with_reasoning" in summary.splitlines()[0]
    # The scripted 429 and the HTTP-200 error were retried and recorded.
    recorded = "".join(x.read_text() for x in (tmp_path / "results").rglob("*.json"))
    assert '"outcome": "rate_limited"' in recorded and '"outcome": "provider_error"' in recorded
    # The key reached the gateway and nothing else.
    leaks = [x for x in tmp_path.rglob("*") if x.is_file() and CANARY.encode() in x.read_bytes()]
    assert leaks == [] and (tmp_path / "results/store").is_dir()
