"""Index arms through the real workflow, on the gateway stand-in made to drop
identifiers by reply shape (tests/support/reply_shapes.py): a one-field reply loses 90% of
the planted values, plain text 10%. j and m run beside their index arms jx and mx, whose
identifier index (carriers/identifier_index.py) keeps every planted value the one classifier finds,
whatever the model dropped. One study is built for the module; each test reads it.

Required: "An index arm on the gateway stand-in keeps planted identifiers the base arm
drops ... check that the trace attributes the survival to the index."
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from foldstudy.carriers.identifier_index import chunk_identifiers

from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import GatewayStudy, gateway_model
from ..support.reply_shapes import ONE_FIELD, OTHER, PLAIN, ShapedModel, fixture_facts

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-index-test"
FIXTURE = "results/fixtures/s/fixture.json"
SHAPES = {ONE_FIELD: 0.9, PLAIN: 0.1, OTHER: 0.1}  # the one-field reply loses most
ARMS = ["j", "jx", "m", "mx"]


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("index-study")
    gw = GatewayStandin([Model("acme/dear", [Endpoint(
        "Dear", "dear", "fp8", supported_parameters=ALL_PARAMETERS, price_prompt="2e-6",
        price_completion="8e-6")])], key=KEY)
    cfg = {"study": "index", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 200,
           "models": {"dear": gateway_model("acme/dear", "", timeout_s=10, max_attempts=2,
                                            retry_initial_wait_s=0.05)},
           "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ARMS,
                            "models": ["dear"], "repeats": 2}}}
    with gw:
        cfg["models"]["dear"]["base_url"] = gw.base_url
        s = GatewayStudy(work, cfg, KEY)
        p = s.snakemake(FIXTURE, cores=2)
        assert p.returncode == 0, p.stderr[-3000:]
        gw.state.reply = ShapedModel(fixture_facts(str(work / FIXTURE)), SHAPES, seed=5,
                                     reads_index=True)
        p = s.snakemake("results/decision.md", "results/graded/s/trace.csv",
                        "results/viewer", "results/compare", cores=2)
        assert p.returncode == 0, p.stderr[-4000:]
    return work


def _indexed_values(work: Path) -> set[str]:
    """The graded values the classifier finds in the session (what an index can keep)."""
    fx = json.loads((work / FIXTURE).read_text())
    found = {t for c in fx["chunks"] for t in chunk_identifiers(c)}
    return {str(f["value"]) for f in fx["facts"] if f["graded"] and str(f["value"]) in found}


def test_the_index_keeps_what_the_one_field_carry_drops_and_the_trace_says_so(study):
    trace = _read(study / "results/graded/s/trace.csv")
    rows = {r["row_id"]: r for r in _read(study / "results/graded/s/rows.csv")}
    final_fold: dict[str, int] = {}
    for t in trace:
        final_fold[t["row_id"]] = max(final_fold.get(t["row_id"], 0), int(t["fold"]))
    where = {}
    for t in trace:
        if int(t["fold"]) == final_fold[t["row_id"]]:
            where.setdefault(rows[t["row_id"]]["arm"], []).append(t["carried_in"])
    # the index arm's carrier is carry and index; the base arm's is its carry alone
    assert set(where["j"]) <= {"carry", ""} and set(where["m"]) <= {"carry", ""}
    assert "index" in where["jx"]  # kept by the index where the model's carry dropped it
    for t in trace:
        assert (t["present"] == "true") == (t["carried_in"] != "")
    # the index arm recalls more than its base over the blocks (the index adds)
    recall = {a: sum(float(r["recall"]) for r in rows.values() if r["arm"] == a)
              for a in ARMS}
    assert recall["jx"] > recall["j"]


def test_every_row_records_its_retained_tokens_within_the_base_capacity(study):
    rows = _read(study / "results/graded/s/rows.csv")
    records = {r["row_id"]: json.loads((study / f"results/runs/{r['row_id']}.json")
                                       .read_text()) for r in rows}
    for r in rows:
        rec = records[r["row_id"]]
        assert int(r["retained_tokens"]) == rec["retained_tokens"] > 0
        spec = rec["arm_spec"]
        if r["arm"] in ("jx", "mx"):
            base = records[r["row_id"].rsplit("/", 1)[0] + "/" + spec["base"]]["arm_spec"]
            # the shares are exact: the model's cap and the index's add up to the base's
            assert spec["carry_cap_tokens"] + spec["index_cap_tokens"] == base[
                "carry_cap_tokens"]
            assert rec["retained_tokens"] <= base["carry_cap_tokens"]
            assert rec["final_index"]
        else:
            assert "final_index" not in rec and "index_cap_tokens" not in spec


def test_the_card_says_whether_each_index_rescued_its_base(study):
    doc = json.loads((study / "results/decision.json").read_text())
    (card,) = doc["cards"]
    lines = {x["arm"]: x for x in card["index_lines"]}
    assert set(lines) == {"jx", "mx"}
    assert lines["jx"]["base"] == "j" and lines["mx"]["base"] == "m"
    jx = lines["jx"]
    assert jx["base_failing"] == (jx["verdict"]["a_mean"] < 0.5)
    if jx["base_failing"]:
        assert jx["rescued"] == (jx["verdict"]["b_mean"] >= 0.5)
    md = (study / "results/decision.md").read_text()
    assert "Index arm `jx` against its base `j`" in md
    assert "Index arm `mx` against its base `m`" in md
    # an index arm is outside the matched comparison: no verdict of the family reads it
    assert not any({"jx", "mx"} & {v["a"], v["b"]} for v in card["contrasts"])


def test_the_viewer_and_the_comparison_page_show_the_index_as_its_own_column(study):
    page = (study / "results/viewer/s/dear/r0/jx.html").read_text()
    assert "the identifier index (" in page and "the model's carry" in page
    assert "the identifier index (" not in (study / "results/viewer/s/dear/r0/j.html"
                                            ).read_text()
    block = (study / "results/compare/s/dear/r0.html").read_text()
    assert block.count("· its identifier index") >= 2  # jx's and mx's index columns
