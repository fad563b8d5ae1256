"""The carriers that keep the session (carriers/session.py) through the real
workflow, on the gateway stand-in made to drop identifiers by reply shape
(tests/support/reply_shapes.py): a one-field reply loses 90% of the planted values, so j
loses most; the model reads a kept session as well as a model could at best
(reads_session). One study is built for the module; each test reads it.

What it shows, from the issue's done-when: `uncompacted` recalls every fact and the card
names the ceiling; `clear_tool_output` keeps what j drops, with recall at least j's + 0.2
at more retained tokens; each is outside the matched comparison, on the card against
your best arm, in the retained-token and paired-arms tables, in the viewer and the
comparison pages, priced in plan.tsv and replayed from the store.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import GatewayStudy, gateway_model
from ..support.reply_shapes import ONE_FIELD, OTHER, PLAIN, ShapedModel, fixture_facts

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-session-carriers"
FIXTURE = "results/fixtures/s/fixture.json"
SHAPES = {ONE_FIELD: 0.9, PLAIN: 0.1, OTHER: 0.1}
ARMS = ["j", "clear", "uncompacted", "trim"]
TARGETS = ("results/decision.md", "results/tables", "results/graded/s/trace.csv",
           "results/viewer", "results/compare", "results/audit/plan.tsv")


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t" if path.suffix == ".tsv" else ","))


def _config(base_url: str) -> dict:
    return {"study": "session-carriers", "scale": 0.01, "temperature": 0.2,
            "recall_max_tokens": 200,
            "models": {"dear": gateway_model("acme/dear", base_url, timeout_s=10,
                                             max_attempts=2, retry_initial_wait_s=0.05)},
            "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ARMS,
                             "models": ["dear"], "repeats": len(ARMS)}},
            "compare_pairs": [["j", a] for a in ARMS[1:]]}


def _standin() -> GatewayStandin:
    return GatewayStandin([Model("acme/dear", [Endpoint(
        "Dear", "dear", "fp8", supported_parameters=ALL_PARAMETERS, price_prompt="2e-6",
        price_completion="8e-6")])], key=KEY)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("session-carriers")
    gw = _standin()
    with gw:
        cfg = _config(gw.base_url)
        s = GatewayStudy(work, cfg, KEY)
        p = s.snakemake(FIXTURE, cores=2)
        assert p.returncode == 0, p.stderr[-3000:]
        gw.state.reply = ShapedModel(fixture_facts(str(work / FIXTURE)), SHAPES, seed=5,
                                     reads_session=True)
        p = s.snakemake(*TARGETS, cores=2)
        assert p.returncode == 0, p.stderr[-4000:]
        fx = json.loads((work / FIXTURE).read_text())
        sent = [str(b.get("messages", [{}])[-1].get("content", ""))
                for b in gw.state.chat_calls()]
    # what the stand-in was asked: the recall turns (the SUMMARY slot first), and the
    # folds that sent a chunk of the session (only a model-written carry sends one)
    (work / "calls.json").write_text(json.dumps({
        "recalls": sum(m.startswith("SUMMARY:") for m in sent),
        "first_chunk_folds": sum(not m.startswith("SUMMARY:") and fx["chunks"][0] in m
                                 for m in sent)}))
    (work / "config.json").write_text(json.dumps(cfg))
    return work


def _rows(work: Path) -> list[dict[str, str]]:
    return _read(work / "results/graded/s/rows.csv")


def _mean(rows: list[dict[str, str]], arm: str, col: str) -> float:
    xs = [float(r[col]) for r in rows if r["arm"] == arm]
    return sum(xs) / len(xs)


def test_uncompacted_recalls_every_fact_and_the_card_names_the_ceiling(study):
    rows = _rows(study)
    assert all(r["valid"] == "true" for r in rows)
    ceiling = [float(r["recall"]) for r in rows if r["arm"] == "uncompacted"]
    assert ceiling and all(x == 1.0 for x in ceiling)
    doc = json.loads((study / "results/decision.json").read_text())
    (card,) = doc["cards"]
    lines = {x["arm"]: x for x in card["ceiling_lines"]}
    assert set(lines) == set(ARMS) - {"uncompacted"}
    j = lines["j"]
    assert j["lost"] > 0 and j["carrier_lost"] == j["lost"] and j["recall_lost"] == 0
    md = (study / "results/decision.md").read_text()
    assert "Against the ceiling `uncompacted`" in md and "the carrier's loss" in md


def test_clear_tool_output_keeps_what_j_drops_at_more_retained_tokens(study):
    rows = _rows(study)
    assert _mean(rows, "clear", "recall") >= _mean(rows, "j", "recall") + 0.2
    assert _mean(rows, "clear", "retained_tokens") > _mean(rows, "j", "retained_tokens")
    checks = _read(study / "results/graded/s/checks.csv")
    arm = {r["row_id"]: (r["arm"], r["repeat"]) for r in rows}
    correct = {(arm[c["row_id"]], c["label"]): c["correct"] == "true" for c in checks}
    lost_by_j = [(rep, lab) for (a, rep), lab in
                 ((k[0], k[1]) for k, ok in correct.items() if not ok) if a == "j"]
    assert lost_by_j and all(correct[(("clear", rep), lab)] for rep, lab in lost_by_j)


def test_no_fold_calls_the_model_and_plan_tsv_prices_the_recall_turn_alone(study):
    rows = _rows(study)
    for r in rows:
        if r["arm"] != "j":
            assert int(r["prompt_tokens"]) == int(r["completion_tokens"]) == 0
    # the stand-in was asked a recall turn per run, and a first fold by j's runs alone
    calls = json.loads((study / "calls.json").read_text())
    j_runs = sum(r["arm"] == "j" for r in rows)
    assert calls == {"recalls": len(rows), "first_chunk_folds": j_runs}
    # plan.tsv priced it so before any call: j's folds and recall, one call per other run
    n = len(json.loads((study / FIXTURE).read_text())["chunks"])
    (dear,) = [r for r in _read(study / "results/audit/plan.tsv") if r["model"] == "dear"]
    assert int(dear["calls"]) == j_runs * (n + 1) + (len(rows) - j_runs)


def test_each_is_outside_the_matched_comparison_and_read_against_your_best_arm(study):
    from foldstudy.carriers.registry import carrier_for

    (card,) = json.loads((study / "results/decision.json").read_text())["cards"]
    best = {v["b"]: v["source"] for v in card["contrasts"] if v["a"] == "j"}
    assert best == {"clear": carrier_for("clear_tool_output:3").against_best,
                    "uncompacted": carrier_for("uncompacted").against_best,
                    "trim": carrier_for("trim").against_best}
    md = (study / "results/decision.md").read_text()
    assert carrier_for("clear_tool_output:3").against_best in md


def test_they_are_on_the_retained_token_axis_and_in_the_paired_and_survival_tables(study):
    retained = {r["arm"] for r in _read(study / "results/tables/retained-tokens.csv")}
    assert {"clear", "uncompacted"} <= retained
    pairs = {(r["a"], r["b"]) for r in _read(study / "results/tables/paired-arms.csv")}
    assert {("j", "clear"), ("j", "uncompacted")} <= pairs
    survival = _read(study / "results/tables/fact-survival.csv")
    assert {"clear", "uncompacted"} <= {r["arm"] for r in survival}
    # the whole session keeps every fact at every fold
    assert {r["survival"] for r in survival if r["arm"] == "uncompacted"} == {"1"}


def test_the_viewer_and_the_comparison_page_show_the_kept_session(study):
    page = (study / "results/viewer/s/dear/r0/clear.html").read_text()
    assert "cleared]" in page
    block = (study / "results/compare/s/dear/r0.html").read_text()
    assert "clear" in block and "uncompacted" in block


def test_a_replay_rebuilds_every_row_from_the_store(study, tmp_path):
    work = tmp_path / "replay"
    shutil.copytree(study / "results/store", work / "results/store")
    cfg = {**json.loads((study / "config.json").read_text()), "replay": True}
    p = GatewayStudy(work, cfg, KEY).snakemake("results/graded/s/rows.csv", cores=2)
    assert p.returncode == 0, p.stderr[-3000:]
    again = {r["row_id"]: (r["recall"], r["retained_tokens"]) for r in _rows(work)}
    assert again == {r["row_id"]: (r["recall"], r["retained_tokens"]) for r in _rows(study)}


def test_trim_recalls_the_facts_planted_in_its_window_and_loses_the_earlier_ones(study):
    fx = json.loads((study / FIXTURE).read_text())
    starts = [sum(len(c) + 1 for c in fx["chunks"][:i]) for i in range(len(fx["chunks"]))]
    where = {f["label"]: starts[f["chunk"]] + f["offset"] for f in fx["facts"] if f["graded"]}
    rows = {r["row_id"]: r for r in _rows(study) if r["arm"] == "trim"}
    checks = [c for c in _read(study / "results/graded/s/checks.csv") if c["row_id"] in rows]
    for row_id in rows:
        rec = json.loads((study / f"results/runs/{row_id}.json").read_text())
        window = len("\n".join(fx["chunks"])) - len(rec["final_carry"])
        mine = {c["label"]: c["correct"] == "true" for c in checks if c["row_id"] == row_id}
        inside = {lab for lab, at in where.items() if at >= window}
        assert inside and inside != set(where)  # the window holds some facts, not all
        assert {lab for lab, ok in mine.items() if ok} == inside
