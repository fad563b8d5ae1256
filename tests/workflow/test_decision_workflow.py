"""The staged decision through the real workflow, on the gateway stand-in made
to drop identifiers by reply shape (tests/support/reply_shapes.py: a one-field schema
loses 60% of them, plain text 10%): the card says m better for j against m, the staged
study stops before max_repeats and spends less than the fixed design would; a budget that
cannot cover the next stage, or runs out in the middle of one, gives undecided with the
spend, the remaining repeats and their price (and a higher one resumes the second);
with every shape at 10% the staged study ends equivalent or undecided, never a better arm.
And the embedded default's card, read from the shared tiny study (conftest.tiny_study)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ..conftest import ROOT
from ..support import procs
from ..support.gateway_standin import (
    ALL_PARAMETERS,
    Endpoint,
    GatewayStandin,
    Model,
    canonical,
    rows_by_id,
)
from ..support.gateway_study import GatewayStudy, gateway_model
from ..support.reply_shapes import ONE_FIELD, OTHER, PLAIN, ShapedModel, fixture_facts

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-decide-test"
DECIDE = {"pair": ["j", "m"], "margin": 0.10, "max_repeats": 24, "looks": 3}
FIXTURE = "results/fixtures/s/fixture.json"
SHAPES = {ONE_FIELD: 0.6, PLAIN: 0.1, OTHER: 0.1}  # the one-field schema loses most


def _config(base_url: str, budget: float | None = None, decide: dict = DECIDE) -> dict:
    cfg = {"study": "decide", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 200,
           "models": {"dear": gateway_model("acme/dear", base_url, timeout_s=10,
                                            max_attempts=2, retry_initial_wait_s=0.05)},
           "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ["j", "m"],
                            "models": ["dear"], "repeats": 2}},
           "decide": decide}
    return cfg if budget is None else {**cfg, "budget_usd": budget}


def _standin(cost_factor: float = 1.0) -> GatewayStandin:
    """The gateway, billing `cost_factor` times its listed price."""
    return GatewayStandin([Model("acme/dear", [Endpoint(
        "Dear", "dear", "fp8", supported_parameters=ALL_PARAMETERS, price_prompt="2e-6",
        price_completion="8e-6", cost_factor=cost_factor)])], key=KEY)


def _run(gw: GatewayStandin, workdir: Path, budget: float | None = None,
         decide: dict = DECIDE, drop: dict[str, float] = SHAPES) -> GatewayStudy:
    workdir.mkdir()
    study = GatewayStudy(workdir, _config(gw.base_url, budget, decide), KEY)
    p = study.snakemake(FIXTURE)
    assert p.returncode == 0, p.stderr[-3000:]
    gw.state.reply = ShapedModel(fixture_facts(str(workdir / FIXTURE)), drop, seed=5)
    p = study.snakemake("results/decision.md")
    assert p.returncode == 0, p.stderr[-4000:]
    return study


def _look(workdir: Path) -> dict:
    looks = sorted((workdir / "results/decide/s").glob("look*.json"))
    return json.loads(looks[-1].read_text())


GATE_LOSES = {"arm": "j", "against": "m", "at_least": "equivalent"}
GATE_HOLDS = {"arm": "m", "against": "j", "at_least": "better"}


def test_the_staged_study_finds_m_better_early_and_a_short_budget_leaves_it_undecided(
        tmp_path):
    with _standin() as gw:
        study = _run(gw, tmp_path / "staged", decide={**DECIDE, "gate": GATE_LOSES})
        card = (study.workdir / "results/decision.md").read_text()
        state = _look(study.workdir)["models"]["dear"]
        assert state["status"] == "difference" and state["repeats"] < DECIDE["max_repeats"]
        doc = json.loads((study.workdir / "results/decision.json").read_text())
        decide = next(v for v in doc["cards"][0]["contrasts"] if v["source"] == "decide")
        assert decide["word"] == "m better" and decide["blocks"] == state["repeats"]
        assert "**m better**" in card and "Staged decision" in card
        staged = doc["cards"][0]["staged"]
        assert staged["staged_worst_usd"] < staged["fixed_usd"]
        # what its runs cost as reported: every fold and recall the stand-in billed (the
        # rest of the bill is the probe's)
        assert 0 < staged["usd"] < sum(gw.state.billed_usd)
        folds_recalls = [u for b, u in zip(gw.state.billed, gw.state.billed_usd, strict=True)
                         if "NEXT CHUNK" in str(b["messages"][-1]["content"])
                         or str(b["messages"][-1]["content"]).startswith("SUMMARY:")]
        assert staged["usd"] == pytest.approx(sum(folds_recalls))
        rows = rows_by_id(study.workdir / "results/evidence/rows.csv")
        assert len(rows) == 2 * state["repeats"]  # no run past the stop
        summary = study.snakemake("results/summary.md")
        assert summary.returncode == 0, summary.stderr[-3000:]
        text = (study.workdir / "results/summary.md").read_text()
        assert text.index("### `dear` in sweep `s`") < text.index("## What ran")
        print(card)  # the README's example card (-s shows it)
        # its dollars priced as the ledger reserves, and what was spent within them
        assert "Dollar figures on this card: priced as the ledger reserves: listed " \
            "prices x 1.25" in card
        assert staged["usd"] <= staged["staged_worst_usd"] and staged["overrun"] is None

        # the gate: j must be at least equivalent to m, and loses: one line
        calls = len(gw.state.calls)
        p = study.snakemake("gate")
        assert p.returncode != 0
        lines = [x for x in (p.stdout + p.stderr).splitlines() if "gate fails on" in x]
        assert len(lines) == 1 and "gate fails on dear in sweep s: j must be at least " \
            "equivalent against m; j loses: m better" in lines[0], p.stderr[-3000:]
        assert "Traceback" not in p.stderr
        gate = json.loads((study.workdir / "results/gate.json").read_text())
        assert not gate["passed"] and gate["models"][0]["verdict"] == "m better"
        # turned round, m at least better than j: it holds, and no look reruns
        study.configfile.write_text(json.dumps(_config(
            gw.base_url, decide={**DECIDE, "gate": GATE_HOLDS})))
        p = study.snakemake("gate", "carriers")
        assert p.returncode == 0, p.stderr[-3000:]
        assert "gate passes on all 1 models" in p.stdout + p.stderr
        assert "decide_look" not in p.stdout + p.stderr and len(gw.state.calls) == calls
        assert json.loads((study.workdir / "results/gate.json").read_text())["passed"]
        # the chosen carrier as files: m's prompt and the request its folds sent
        folder = study.workdir / "results/decision/s/dear/carrier"
        request = json.loads((folder / "request.json").read_text())
        cap = json.loads((folder / "capacity.json").read_text())
        assert request["messages"][0]["content"] == (folder / "prompt.md").read_text()
        assert request["max_tokens"] == cap["fold_budget_tokens"] and cap["arm"] == "m"
        assert "NEXT CHUNK (1 of" in request["messages"][1]["content"]
        assert any(b["messages"] == request["messages"] for b in gw.state.billed)  # as sent

        # a budget that covers the first stage and runs out in the second
        look1 = json.loads((study.workdir / "results/decide/s/look1.json").read_text())
        first = look1["models"]["dear"]
        budget = first["spent_usd"] + 0.5 * first["price_per_repeat_usd"] * (
            first["next"] - first["repeats"])
        gw.state.billed_usd.clear()
        short = _run(gw, tmp_path / "short", budget)
        state = _look(short.workdir)["models"]["dear"]
        assert state["status"] == "undecided" and state["stop"] == "budget"
        assert state["remaining_repeats"] == DECIDE["max_repeats"] - state["repeats"]
        assert sum(gw.state.billed_usd) <= budget
        card = (short.workdir / "results/decision.md").read_text()
        assert "undecided (budget_usd reached)" in card
        assert f"{state['remaining_repeats']} repeats remain to max_repeats" in card


def _records(workdir: Path) -> dict[str, dict]:
    return {p.relative_to(workdir / "results/runs/s/dear").as_posix(): json.loads(p.read_text())
            for p in (workdir / "results/runs/s/dear").glob("r*/*.json")}


def test_a_budget_out_mid_stage_gives_undecided_and_a_higher_one_resumes_it(tmp_path):
    """Required: "A budget that runs out mid-stage gives *undecided* with the spend, the
    remaining repeats and their price."

    The stand-in bills its listing through look 1, then 40 times it (its price rose): the
    look priced the next stage as the ledger reserved then (listed x 1.25), so the budget,
    what look 1 left spent plus 1.02 times that price, lets the stage start (the look's
    budget_stop passes); the ledger learns the new ratio from the stage's first call and
    the stage runs out within a few calls (40 times the listing is far past the 1.25
    headroom, whatever the replies' lengths, where 8 times was not always: an earlier
    version of this test failed on it). The run still ends with a card whose spend stays
    within the worst case it names, or names the overruns the ledger logged past it
    (priced as the ledger reserves now); at the same budget a rerun sends nothing; a
    higher one reruns the runs the budget stopped (their paid folds from the store) and
    finishes."""
    with _standin() as gw:
        workdir = tmp_path / "mid"
        workdir.mkdir()
        study = GatewayStudy(workdir, _config(gw.base_url), KEY)
        assert study.snakemake(FIXTURE).returncode == 0
        gw.state.reply = ShapedModel(fixture_facts(str(workdir / FIXTURE)), SHAPES, seed=5)
        p = study.snakemake("results/decide/s/look1.json")  # stage 1, no budget yet
        assert p.returncode == 0, p.stderr[-3000:]
        first = _look(workdir)["models"]["dear"]
        spent = json.loads((workdir / "results/spend/ledger.json").read_text())["spent_usd"]
        budget = spent + 1.02 * first["price_per_repeat_usd"] * (
            first["next"] - first["repeats"])
        gw.state.models["acme/dear"].endpoints[0].cost_factor = 40.0

        study.configfile.write_text(json.dumps(_config(gw.base_url, budget)))
        p = study.snakemake("results/decision.md")
        assert p.returncode == 0, p.stderr[-4000:]  # a verdict, not a failed job
        assert sum(gw.state.billed_usd) <= budget
        state = _look(workdir)["models"]["dear"]
        assert (state["status"], state["stop"]) == ("undecided", "budget")
        assert first["repeats"] <= state["repeats"] < first["next"]
        assert state["stopped_mid_stage"] and state["spent_usd"] > first["spent_usd"]
        assert state["remaining_repeats"] == DECIDE["max_repeats"] - state["repeats"]
        assert state["remaining_usd"] > first["price_per_repeat_usd"] * \
            state["remaining_repeats"]  # priced at the ratio learned since look 1
        records = _records(workdir)
        stopped = {k: r for k, r in records.items() if r["status"] == "not_run"}
        assert stopped and all(r["not_run_reason"] == "budget" and r["budget_usd"] == budget
                               for r in stopped.values())
        # every paid call is in a record, the stopped runs' paid folds too (where the stop
        # falls within a run depends on the job order): beyond the records the ledger
        # holds only the probe's calls, as after look 1
        ledger = json.loads((workdir / "results/spend/ledger.json").read_text())["spent_usd"]
        assert ledger - state["spent_usd"] == pytest.approx(spent - first["spent_usd"])
        assert len(rows_by_id(workdir / "results/evidence/rows.csv")) == 2 * state["repeats"]
        card = (workdir / "results/decision.md").read_text()
        assert (f"**undecided (budget_usd reached)** after {state['repeats']} repeats" in card
                and "The budget ran out in the middle of a stage" in card)
        assert f"spent ${state['spent_usd']:.2f}" in card
        assert f"{state['remaining_repeats']} repeats remain to max_repeats, at $" in card
        print(card)  # the docs' mid-stage card (-s shows it)
        # billed above its listing, the card's figures are at the ratio learned (40 x
        # 1.25), and what was spent stays within the worst case it names
        staged = json.loads((workdir / "results/decision.json").read_text())["cards"][0][
            "staged"]
        assert "listed prices x 50" in card and "priced as the ledger reserves" in card
        # whether the first call at the new price costs more than it reserved depends on
        # its reply's length against max_tokens; where what was spent passes the worst
        # case, the card names the overruns the ledger logged
        overruns = json.loads((workdir / "results/spend/ledger.json").read_text())["overruns"]
        if staged["usd"] > staged["staged_worst_usd"]:
            assert overruns and "What was spent passes that worst case: the ledger " \
                f"logged {len(overruns)} call" in card
        assert staged["remaining_usd"] == pytest.approx(
            staged["price_per_repeat_usd"] * state["remaining_repeats"])

        # the same budget again: nothing reruns, nothing is sent
        calls = len(gw.state.calls)
        p = study.snakemake("results/decision.md")
        assert p.returncode == 0 and len(gw.state.calls) == calls, p.stderr[-3000:]
        assert "Nothing to be done" in p.stdout + p.stderr

        # raised: exactly the stopped runs run again, and no call is paid twice
        study.configfile.write_text(json.dumps(_config(gw.base_url, budget * 200)))
        p = study.snakemake("results/decision.md")
        assert p.returncode == 0, p.stderr[-4000:]
        state = _look(workdir)["models"]["dear"]
        assert state["status"] == "difference" and "stop" not in state  # m better
        assert state["repeats"] > first["repeats"]
        assert max(Counter(map(canonical, gw.state.billed)).values()) == 1
        ran = set(re.findall(r"output: results/runs/s/dear/(r\d+/\w+\.json)",
                             p.stdout + p.stderr))
        assert ran & set(records) == set(stopped)  # of the runs made, only the stopped
        after = _records(workdir)
        assert all(after[k] == r for k, r in records.items() if k not in stopped)
        assert all(after[k]["status"] == "run" for k in stopped)


def test_with_every_shape_at_10_percent_the_staged_study_names_no_better_arm(tmp_path):
    """Required: "With every shape at 10%, the staged study ends equivalent or undecided,
    never with a better arm ... the workflow run checks one." Eight repeats over two
    looks is the smallest study whose last look could still declare a difference (the
    sign-flip p of 8 blocks goes down to 2/2^8, under that look's level of about 0.048;
    the first look's 4 blocks cannot go under 0.125)."""
    decide = {**DECIDE, "max_repeats": 8, "looks": 2}
    with _standin() as gw:
        study = _run(gw, tmp_path / "even", decide=decide,
                     drop=dict.fromkeys(SHAPES, 0.1))
    state = _look(study.workdir)["models"]["dear"]
    assert state["status"] in ("equivalent", "undecided") and "stop" not in state
    if state["status"] == "undecided":  # no budget here: only max_repeats stops it so
        assert state["repeats"] == decide["max_repeats"]
    doc = json.loads((study.workdir / "results/decision.json").read_text())
    cd = doc["cards"][0]
    v = next(v for v in cd["contrasts"] if v["source"] == "decide")
    assert v["word"] in ("equivalent within ±0.1", "undecided")
    assert v["blocks"] == state["repeats"] and cd["staged"]["stop"] == state["status"]
    card = (study.workdir / "results/decision.md").read_text()
    assert "better**" not in card  # no contrast on the card names a better arm
    assert f"**{v['word']}**" in card and f"**{state['status']}** after" in card


def test_without_decide_the_plan_has_no_checkpoint(tmp_path):
    cfg = _config("http://127.0.0.1:9/api/v1")
    cfg.pop("decide")
    study = GatewayStudy(tmp_path, cfg, KEY)
    p = study.snakemake("-n", "results/evidence/rows.csv")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "decide_look" not in p.stdout and "decide:" not in p.stdout + p.stderr
    cfg["decide"] = DECIDE
    study = GatewayStudy(tmp_path, cfg, KEY)
    p = study.snakemake("-n", "results/evidence/rows.csv")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "first 8 repeats per model, at most 24 over 3 looks" in p.stdout + p.stderr


def test_the_audit_prices_the_first_stage_and_the_maximum(tmp_path):
    """Required: "The DAG stays plannable: -n and the audit show the first stage and the
    maximum." The audit (no call: the stand-in's address is closed) prices both."""
    import csv

    study = GatewayStudy(tmp_path, _config("http://127.0.0.1:9/api/v1"), KEY)
    p = study.snakemake("results/audit/plan.tsv")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "its DECIDE_FIRST and DECIDE_MAX lines" in p.stdout + p.stderr
    with open(tmp_path / "results/audit/plan.tsv", newline="") as f:
        plan = {r["model"]: r for r in csv.DictReader(f, delimiter="\t")}
    first, most = plan["DECIDE_FIRST"], plan["DECIDE_MAX"]
    assert (first["sweep"], first["repeats"], most["repeats"]) == ("s", "8", "24")
    assert (first["runs"], most["runs"]) == ("16", plan["TOTAL"]["runs"]) == ("16", "48")
    assert int(most["calls"]) == 3 * int(first["calls"])


@pytest.mark.model
def test_the_embedded_default_card_says_every_arm_lost_every_fact(tiny_study, tmp_path):
    """Read from the shared tiny study's evidence (evidence mode: no model runs here)."""
    p = procs.snakemake(tmp_path, "-c1", "results/decision.md", "--configfile",
                        str(ROOT / ".test/config.yaml"), "--config",
                        f"evidence={tiny_study / 'results/evidence'}", timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    card = (tmp_path / "results/decision.md").read_text()
    assert "every arm lost every fact" in card and "better**" not in card


def test_a_sweep_of_j_and_m_reads_their_pair_on_every_card_without_compare_pairs(tmp_path):
    """Neither the ladder's rungs (j–q, q–m) nor resources/analysis.yaml's compare pairs
    hold j–m, and this study names no `compare_pairs`: a sweep of two to four matched
    arms reads every pair of them (analysis/power.py sweep_contrasts), so each model's
    card reads j–m, the two cards' contrasts are one family of two adjusted by Holm, the
    gate reads that line, and the page shows it."""
    with GatewayStandin([Model(f"acme/{m}", [Endpoint(
            m.title(), m, "fp8", supported_parameters=ALL_PARAMETERS)])
            for m in ("dear", "thrift")], key=KEY) as gw:
        cfg = {"study": "pairs", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 200,
               "models": {m: gateway_model(f"acme/{m}", gw.base_url, timeout_s=10,
                                           max_attempts=2, retry_initial_wait_s=0.05)
                          for m in ("dear", "thrift")},
               "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ["j", "m"],
                                "models": ["dear", "thrift"], "repeats": 2}},
               "decide": {"pair": None, "gate": GATE_HOLDS}}
        study = GatewayStudy(tmp_path, cfg, KEY)
        p = study.snakemake(FIXTURE)
        assert p.returncode == 0, p.stderr[-3000:]
        gw.state.reply = ShapedModel(fixture_facts(str(tmp_path / FIXTURE)), SHAPES, seed=5)
        p = study.snakemake("results/decision.md", "results/decision.html")
        assert p.returncode == 0, p.stderr[-4000:]
        doc = json.loads((tmp_path / "results/decision.json").read_text())
        assert sorted(c["model"] for c in doc["cards"]) == ["dear", "thrift"]
        for c in doc["cards"]:
            assert not c["all_lost"], c
            jm = [v for v in c["contrasts"] if {v["a"], v["b"]} == {"j", "m"}]
            assert [(v["a"], v["b"], v["source"]) for v in jm] == [("j", "m", "analysis")]
            assert jm[0]["family_size"] == 2 and jm[0]["adjustment"] == "Holm"
            assert "unread_pairs" not in c  # the card reads every pair the sweep runs
        card = (tmp_path / "results/decision.md").read_text()
        assert card.count("| j–m (analysis) |") == 2 and "Pairs not read" not in card
        page = (tmp_path / "results/decision.html").read_text()
        assert page.count("j–m (analysis)") == 2
        p = study.snakemake("results/gate.json")
        assert p.returncode == 0, p.stderr[-3000:]
        gate = json.loads((tmp_path / "results/gate.json").read_text())
        words = {c["model"]: next(v["word"] for v in c["contrasts"]
                                  if {v["a"], v["b"]} == {"j", "m"}) for c in doc["cards"]}
        assert {g["model"]: g["verdict"] for g in gate["models"]} == words
        assert all("in a family of 2" in g["why"] for g in gate["models"]), gate
