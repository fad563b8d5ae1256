"""The capability probe against the gateway stand-in: each verdict of docs/design.md §5, the
parameter responsible named by removing one at a time (paper §4.2), and per-arm
permissions (plain arms need no structured-output support)."""

from __future__ import annotations

import pytest
import yaml

from foldstudy.backends.openrouter import OpenRouterBackend
from foldstudy.backends.store import ResponseStore
from foldstudy.run.probe import (
    AUTH_FAILED,
    CONTEXT_TOO_SHORT,
    NO_ENDPOINT_FOR_PARAMETERS,
    OK,
    REASONING_NOT_DISABLEABLE,
    SCHEMA_NONCONFORMING,
    UNREACHABLE,
    pick_endpoint,
    probe_model,
    shapes_for,
)
from foldstudy.run.probe_summary import summary_row
from foldstudy.study.config import load_study
from foldstudy.study.spec import load_arm_table

from ..conftest import ROOT
from ..support.gateway_standin import Endpoint, GatewayStandin, Model

KEY = "sk-or-v1-probe-canary-0a1b2c"
ALL = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs",
       "reasoning")
NO_REASONING = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs")
REQUIRED = 20_000


@pytest.fixture(scope="module")
def arms(study_arms):
    study = study_arms("config.yaml", 0.1)
    return [study[a] for a in "jqmo"]


@pytest.fixture()
def gateway(monkeypatch):
    monkeypatch.setenv("TEST_OR_KEY", KEY)
    models = [
        Model("acme/healthy", [
            Endpoint("Cheap", "cheap", "fp4", supported_parameters=ALL, price_prompt="1e-8"),
            Endpoint("DeepInfra", "deepinfra", "fp8", supported_parameters=ALL),
            Endpoint("Tiny", "tiny", "fp8", context_length=8192, supported_parameters=ALL,
                     price_prompt="0"),
        ]),
        # granite-like: honours response_format, does not declare `reasoning`
        Model("acme/granite", [Endpoint("Chutes", "chutes", "bf16",
                                        supported_parameters=NO_REASONING)]),
        # trinity-like: reasoning is mandatory on its endpoint
        Model("acme/trinity", [Endpoint("Arcee", "arcee", "fp8", supported_parameters=ALL,
                                        reasoning_mandatory=True)], reasoning_mandatory=True),
        # qwen3.6-flash-like: advertises structured outputs, omits a required property
        Model("acme/flash", [Endpoint("Alibaba", "alibaba", "fp8", supported_parameters=ALL,
                                      omits_required=True)]),
        # no structured outputs at all: plain arms still run
        Model("acme/plain-only", [Endpoint("Plain", "plain", "fp8", supported_parameters=(
            "max_tokens", "temperature", "seed", "reasoning"))]),
        Model("acme/short", [Endpoint("Short", "short", "fp8", context_length=8192,
                                      supported_parameters=ALL)]),
        # the cheaper endpoint declares no structured outputs: plain folds pin it
        Model("acme/mixed", [
            Endpoint("Bare", "bare", "fp8", price_prompt="1e-8", supported_parameters=(
                "max_tokens", "temperature", "seed", "reasoning")),
            Endpoint("Rich", "rich", "fp8", supported_parameters=ALL)]),
    ]
    with GatewayStandin(models, key=KEY) as g:
        yield g


def probe(gateway, arms, tmp_path, model_id, probe_arms=None, **over):
    cfg = {"backend": "openrouter", "model_id": model_id, "base_url": gateway.base_url,
           "api_key_env": "TEST_OR_KEY", "timeout_s": 5, "max_attempts": 2,
           "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05, **over}
    b = OpenRouterBackend(model_id.split("/")[1], cfg)
    return probe_model(model_id.split("/")[1], b, ResponseStore(tmp_path), arms, REQUIRED,
                       0.2, 1, cfg, probe_arms=probe_arms)


def allowed(rec):
    return "".join(a for a, p in rec["permissions"].items() if p["allowed"])


def test_shapes_group_arms_by_what_they_send(arms):
    shapes = {s.name: s for s in shapes_for(arms)}
    assert set(shapes) == {"plain", "schema:decomposed", "schema:single"}
    assert shapes["plain"].arms == ("m", "o") and shapes["plain"].schema is None
    assert shapes["schema:single"].max_tokens == arms[0].fold_budget_tokens


def test_healthy_model_is_pinned_by_context_and_price_and_allowed_every_arm(
        gateway, arms, tmp_path):
    rec = probe(gateway, arms, tmp_path, "acme/healthy")
    assert rec["verdict"] == OK and allowed(rec) == "jmoq"
    # Tiny is cheapest but its context is too short; Cheap is next.
    assert rec["pin"]["provider_name"] == "Cheap" and rec["pin"]["quantization"] == "fp4"
    assert rec["endpoint"]["pin"] == "Cheap"
    sent = gateway.state.chat_calls("acme/healthy")
    # one per request shape, then the §4.2 comparison: a schema shape without reasoning
    assert len(sent) == 4 and all(c["provider"]["only"] == ["cheap"] for c in sent)
    assert sum("response_format" in c for c in sent) == 3
    assert rec["reasoning_parameter"]["with"]["verdict"] == OK
    assert rec["reasoning_parameter"]["without"]["verdict"] == OK


def test_configured_quantization_is_honoured(gateway, arms, tmp_path):
    rec = probe(gateway, arms, tmp_path, "acme/healthy", quantization="fp8")
    assert rec["verdict"] == OK and rec["pin"]["provider_name"] == "DeepInfra"


def test_an_endpoint_without_reasoning_runs_every_arm_and_the_old_request_is_named(
        gateway, arms, tmp_path):
    """Paper §4.2: an endpoint that declares no reasoning is not a reasoning model; the
    study sends it no reasoning parameter and it runs every arm. The paper's original
    request, with the parameter, is still probed once and its refusal is pinned on the
    parameter, never on the model."""
    rec = probe(gateway, arms, tmp_path, "acme/granite")
    assert rec["verdict"] == OK and allowed(rec) == "jmoq"
    assert all("reasoning" not in s["request_parameters"] for s in rec["shapes"])
    old = rec["reasoning_parameter"]["with"]
    assert old["verdict"] == NO_ENDPOINT_FOR_PARAMETERS
    assert old["responsible_parameter"] == "reasoning"
    assert rec["reasoning_parameter"]["without"]["verdict"] == OK


def test_mandatory_reasoning_is_its_own_verdict(gateway, arms, tmp_path):
    rec = probe(gateway, arms, tmp_path, "acme/trinity")
    assert rec["verdict"] == REASONING_NOT_DISABLEABLE and allowed(rec) == ""
    assert rec["responsible_parameter"] == "reasoning"


def test_nonconforming_schema_reply_forbids_schema_arms_only(gateway, arms, tmp_path):
    rec = probe(gateway, arms, tmp_path, "acme/flash")
    assert rec["verdict"] == SCHEMA_NONCONFORMING and allowed(rec) == "mo"
    assert "required property" in rec["permissions"]["q"]["reason"]


def test_no_structured_outputs_forbids_schema_arms_and_names_response_format(
        gateway, arms, tmp_path):
    rec = probe(gateway, arms, tmp_path, "acme/plain-only")
    assert allowed(rec) == "mo"
    assert rec["verdict"] == NO_ENDPOINT_FOR_PARAMETERS
    assert rec["responsible_parameter"] == "response_format"


def test_short_context_is_found_from_the_listing_without_a_call(gateway, arms, tmp_path):
    rec = probe(gateway, arms, tmp_path, "acme/short")
    assert rec["verdict"] == CONTEXT_TOO_SHORT and allowed(rec) == ""
    assert gateway.state.chat_calls("acme/short") == []


def test_no_key_is_auth_failed_quickly_with_no_call(gateway, arms, tmp_path, monkeypatch):
    monkeypatch.delenv("TEST_OR_KEY")
    rec = probe(gateway, arms, tmp_path, "acme/healthy")
    assert rec["verdict"] == AUTH_FAILED and "TEST_OR_KEY" in rec["reason"]
    assert gateway.state.calls == [] and allowed(rec) == ""


def test_wrong_key_is_auth_failed(gateway, arms, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_OR_KEY", "sk-or-v1-wrong")
    rec = probe(gateway, arms, tmp_path, "acme/healthy")
    assert rec["verdict"] == AUTH_FAILED and allowed(rec) == ""
    assert "sk-or-v1-wrong" not in str(rec)


def test_a_transient_fault_on_the_listings_is_retried_not_a_verdict(gateway, arms, tmp_path):
    """The listings are free reads: one 502 on each must not make the model `unreachable`,
    a verdict that forbids every arm and that no rerun revisits (the probe's output
    exists)."""
    gateway.state.queue_get_faults("models/acme/healthy/endpoints", [{"status": 502}])
    gateway.state.queue_get_faults("models", [{"status": 503}])
    rec = probe(gateway, arms, tmp_path, "acme/healthy")
    assert rec["verdict"] == OK and allowed(rec) == "jmoq"
    assert gateway.state.gets.count("models/acme/healthy/endpoints") == 2
    # ...but a listing that keeps failing past the attempts is still reported, by kind
    gateway.state.queue_get_faults("models/acme/healthy/endpoints", [{"status": 502}] * 2)
    rec = probe(gateway, arms, tmp_path / "again", "acme/healthy")
    assert rec["verdict"] == UNREACHABLE and "server" in rec["reason"]


def test_unreachable_gateway(arms, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_OR_KEY", KEY)
    cfg = {"backend": "openrouter", "model_id": "acme/healthy", "api_key_env": "TEST_OR_KEY",
           "base_url": "http://127.0.0.1:9/api/v1", "max_attempts": 1, "timeout_s": 2}
    rec = probe_model("healthy", OpenRouterBackend("healthy", cfg), ResponseStore(tmp_path),
                      arms, REQUIRED, 0.2, 1, cfg)
    assert rec["verdict"] == UNREACHABLE and allowed(rec) == ""


def test_pick_endpoint_reports_a_missing_pin():
    eps = [{"tag": "a", "provider_name": "A", "quantization": "fp8", "context_length": 10**6}]
    assert pick_endpoint(eps, "b", None, 100, False)[1] == "pinned_endpoint_not_listed"
    assert pick_endpoint(eps, "a", "bf16", 100, False)[1] == "pinned_endpoint_not_listed"
    assert pick_endpoint(eps, "a", "fp8", 100, False)[0]["tag"] == "a"


def test_summary_row_reads_per_million_prices(gateway, arms, tmp_path):
    row = summary_row(probe(gateway, arms, tmp_path, "acme/healthy"))
    assert row["usd_per_mtok_prompt"] == "0.01" and row["arms_allowed"] == "jmoq"
    assert row["pin"] == "Cheap" and row["verdict"] == "ok"


def test_a_probe_arm_is_probed_and_recorded_and_decides_no_fold(gateway, arms, tmp_path):
    """Paper §4.2: qwen3.6-flash "recorded as schema_advertised_reply_nonconforming"
    while its only sweep runs plain arms. A plain-only model with j as a probe arm gets
    j's schema shape sent, the omitted property recorded against j, and its folded
    arms' permissions exactly as without it."""
    plain = [a for a in arms if a.schema is None]
    j = next(a for a in arms if a.arm == "j")
    bare = probe(gateway, plain, tmp_path / "bare", "acme/flash")
    assert bare["verdict"] == OK and bare["probe_arms"] == {}
    assert not any("response_format" in c for c in gateway.state.chat_calls("acme/flash"))
    rec = probe(gateway, plain, tmp_path / "with", "acme/flash", probe_arms=[j])
    sent = gateway.state.chat_calls("acme/flash")
    assert any(c.get("response_format", {}).get("json_schema", {}).get("name") == "arm_j"
               for c in sent)
    assert rec["probe_arms"]["j"]["verdict"] == SCHEMA_NONCONFORMING
    assert "required property" in rec["probe_arms"]["j"]["reason"]
    assert rec["verdict"] == SCHEMA_NONCONFORMING  # the model's verdict, as the paper's
    assert rec["permissions"] == bare["permissions"] and "j" not in rec["permissions"]
    row = summary_row(rec)
    assert (row["arms_allowed"], row["arms_forbidden"]) == ("mo", "")
    assert row["probe_arms"] == "j=schema_advertised_reply_nonconforming"
    assert summary_row(bare)["probe_arms"] == ""


def test_a_probe_arm_changes_neither_the_pin_nor_the_shapes(gateway, arms, tmp_path):
    """The pin is chosen for the folded arms: a schema probe arm does not move a
    plain-only model to a structured-output endpoint; it is judged on the folds' pin."""
    plain = [a for a in arms if a.schema is None]
    j = next(a for a in arms if a.arm == "j")
    bare = probe(gateway, plain, tmp_path / "bare", "acme/mixed")
    rec = probe(gateway, plain, tmp_path / "with", "acme/mixed", probe_arms=[j])
    assert bare["pin"] == rec["pin"] and rec["pin"]["provider_name"] == "Bare"
    def sent(shapes):  # what each shape put on the wire and got, without the clock
        return [(s["shape"], s["request_parameters"], s["max_tokens"], s["verdict"])
                for s in shapes]

    assert sent(rec["shapes"][:len(bare["shapes"])]) == sent(bare["shapes"])
    assert [s["shape"] for s in rec["shapes"]][len(bare["shapes"]):] == [
        "probe_arms:schema:single"]
    assert rec["permissions"] == bare["permissions"]
    assert rec["probe_arms"]["j"]["verdict"] == NO_ENDPOINT_FOR_PARAMETERS
    assert rec["probe_arms"]["j"]["responsible_parameter"] == "response_format"


# -- the paper's study through the workflow, with no key ---------------------------------


def snakemake_paper(workdir, *args, env=None):
    from ..support.procs import snakemake

    return snakemake(workdir, "--configfile", str(ROOT / "config/study-paper.yaml"), *args,
                     timeout=600, env=env)


@pytest.mark.workflow
def test_paper_dry_run_shows_every_run_job(tmp_path, config_schema, resources):
    """Every run job is in the plan (no checkpoint hides one). How fast the plan is made
    is a measurement, not a test: bench/dry_run.py times it against its 15 s goal."""
    cfg = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text())
    study = load_study(cfg, config_schema, load_arm_table(resources), resources)
    p = snakemake_paper(tmp_path, "-n", "--quiet", "rules")
    assert p.returncode == 0, p.stderr[-2000:]
    counts = dict(line.split()[:2] for line in (p.stdout + p.stderr).splitlines()
                  if len(line.split()) == 2 and line.split()[1].isdigit())
    assert int(counts["fold"]) == len(study.runs) > 500
    assert int(counts["probe_model"]) == len(cfg["models"])


@pytest.mark.workflow
def test_paper_probe_without_a_key_gives_a_verdict_per_model_and_runs_no_fold(tmp_path):
    import csv
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    p = snakemake_paper(tmp_path, "--until", "probe", "-c2", env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "rule fold" not in p.stdout + p.stderr
    assert not (tmp_path / "results/runs").exists()
    with open(tmp_path / "results/probe/summary.tsv", newline="") as f:
        summary = {r["model"]: r for r in csv.DictReader(f, delimiter="\t")}
    cfg = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text())
    assert set(summary) == set(cfg["models"])
    for name, m in cfg["models"].items():
        expected = AUTH_FAILED if m["backend"] == "openrouter" else UNREACHABLE
        assert summary[name]["verdict"] == expected, summary[name]
        assert summary[name]["arms_allowed"] == ""
    assert "OPENROUTER_API_KEY" in summary["glm-5.2"]["reason"]
