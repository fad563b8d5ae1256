"""The instrument's controls through the real workflow, on the gateway stand-in: an A/A
copy of arm m (controls.aa) and two control facts (controls.tail) beside j, m and the
ceiling (uncompacted). The stand-in's model (tests/support/reply_shapes.py) keeps each
value a fold reads with a seeded chance, so two byte-identical requests get different
replies, as from an endpoint that samples: what an A/A control measures. It keeps the
control facts always, as a working carrier does, and the stand-in fails j's recall turn
on them (RecallFails): what a control fact is there to catch. One study is built for
the module; each test reads it."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ..support.gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model
from ..support.gateway_study import GatewayStudy, gateway_model
from ..support.reply_shapes import ONE_FIELD, OTHER, PLAIN, ShapedModel

pytestmark = pytest.mark.workflow
KEY = "sk-or-v1-controls-test"
FIXTURE = "results/fixtures/s/fixture.json"
# j's recall request is the only one whose SUMMARY slot opens with its one field's heading
# (carriers/render.py fields_rendered): m carries plain text, the ceiling the session
J_RECALL = "SUMMARY:\nSummary\n"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _facts(path: Path) -> dict[str, str]:
    """Every asked fact of the fixture, graded and control: the stand-in's model reads
    and answers each like any value of the session."""
    doc = json.loads(path.read_text())
    return {f["label"]: str(f["value"]) for f in doc["facts"] if f["graded"] or
            f.get("control")}


def _controls(path: Path) -> dict[str, str]:
    """The fixture's control facts (config sweeps.X.controls.tail), label -> value."""
    doc = json.loads(path.read_text())
    return {f["label"]: str(f["value"]) for f in doc["facts"] if f.get("control")}


class RecallFails:
    """The stand-in's model, except that j's recall turn answers `unknown` for every
    control fact: a recall turn that fails where the carrier kept the fact. Its folds and
    every other arm's recall are the model's; `failed` counts the answers it changed."""

    def __init__(self, model: ShapedModel, controls: dict[str, str]) -> None:
        self.model, self.controls, self.failed = model, controls, 0

    def __call__(self, body: dict, default: str) -> str:
        out = self.model(body, default)
        if not str(body.get("messages", [{}])[-1].get("content", "")).startswith(J_RECALL):
            return out
        self.failed += 1
        return re.sub(r"^(\d+)\. (.+?): .*$", lambda m: f"{m[1]}. {m[2]}: unknown"
                      if m[2] in self.controls else m[0], out, flags=re.M)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    work = tmp_path_factory.mktemp("controls-study")
    gw = GatewayStandin([Model("acme/dear", [Endpoint(
        "Dear", "dear", "fp8", supported_parameters=ALL_PARAMETERS, price_prompt="2e-6",
        price_completion="8e-6")])], key=KEY)
    cfg = {"study": "controls", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 200,
           "models": {"dear": gateway_model("acme/dear", "", timeout_s=10, max_attempts=2,
                                            retry_initial_wait_s=0.05)},
           "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ["j", "m", "uncompacted"],
                            "models": ["dear"], "repeats": 2,
                            "controls": {"aa": "m", "tail": 2}}}}
    with gw:
        cfg["models"]["dear"]["base_url"] = gw.base_url
        s = GatewayStudy(work, cfg, KEY)
        p = s.snakemake(FIXTURE, cores=2)
        assert p.returncode == 0, p.stderr[-3000:]
        controls = _controls(work / FIXTURE)
        model = RecallFails(ShapedModel(_facts(work / FIXTURE),
                                        {ONE_FIELD: 0.6, PLAIN: 0.2, OTHER: 0.2}, seed=5,
                                        reads_session=True, keeps=frozenset(controls)),
                            controls)
        gw.state.reply = model
        p = s.snakemake("results/decision.md", "results/viewer", "results/compare", cores=2)
        assert p.returncode == 0, p.stderr[-4000:]
        billed = list(gw.state.billed)
        again = s.snakemake("results/decision.md", "--forcerun", "fold", cores=2)
        assert again.returncode == 0, again.stderr[-3000:]
        calls_after = len(gw.state.billed)
    yield work, billed, calls_after, model.failed


def test_the_copy_runs_in_every_block_with_the_originals_requests(study):
    work, billed, _, _ = study
    rows = _rows(work / "results/evidence/rows.csv")
    assert Counter(r["arm"] for r in rows) == {"j": 2, "m": 2, "m~aa": 2, "uncompacted": 2}
    records = {a: json.loads((work / f"results/runs/s/dear/r0/{a}.json").read_text())
               for a in ("m", "m~aa")}
    keys = [[f["request_key"] for f in records[a]["folds"]] for a in ("m", "m~aa")]
    assert not set(keys[0]) & set(keys[1])  # the store keeps them apart
    # the first fold of a block reads the same (empty) carry and chunk in both, so the
    # copy sends what the original sent, byte for byte, and the stand-in billed it twice
    # (later folds read each one's own carry, which the sampling endpoint made differ)
    store = work / "results/store"
    requests = [json.loads(next(store.rglob(f"{k}.json")).read_text())["request"]
                for k in (keys[0][0], keys[1][0])]
    assert requests[0] == requests[1]
    bodies = Counter(json.dumps(b, sort_keys=True) for b in billed)
    first = [b for b in bodies if "NEXT CHUNK (1 of" in b and '"response_format"' not in b]
    assert first and all(bodies[b] == 2 for b in first)


def test_a_rerun_replays_the_copy_from_the_store_and_sends_nothing(study):
    _, billed, calls_after, _ = study
    assert calls_after == len(billed)


def test_the_card_reads_the_aa_line_and_the_control_facts(study):
    work, _, _, _ = study
    doc = json.loads((work / "results/decision.json").read_text())
    (card,) = doc["cards"]
    aa = [v for v in card["contrasts"] if v["source"].startswith("A/A control")]
    assert [(v["a"], v["b"]) for v in aa] == [("m", "m~aa")]
    assert not aa[0]["word"].endswith("better")  # two blocks cannot reject anything
    rows = _rows(work / "results/evidence/rows.csv")
    assert {r["n_control"] for r in rows} == {"2"}
    assert all(r["n_control_correct"] != "" for r in rows)
    # the comparison pages show the copy as its own arm, named as a copy
    pages = "".join(p.read_text() for p in (work / "results/compare").rglob("*.html"))
    assert "m~aa" in pages and "(A/A copy)" in pages


def test_the_arm_whose_recall_turn_fails_is_flagged_control_lost_and_its_card_says_so(study):
    work, _, _, failed = study
    rows = {r["row_id"]: r for r in _rows(work / "results/evidence/rows.csv")}
    controls = _controls(work / FIXTURE)
    j = sorted(i for i, r in rows.items() if r["arm"] == "j")
    assert failed == len(j) == 2  # the stand-in failed j's recall turns, and no other
    for i, r in rows.items():
        if r["arm"] == "j":  # its carrier kept both; its recall turn answered neither
            final = json.loads((work / f"results/runs/{i}.json").read_text())["final_carry"]
            assert all(v in final for v in controls.values())
            assert r["n_control_correct"] == "0"
            assert set(r["control_missed"].split(";")) == set(controls)
        else:  # the ceiling recalled both in every block, and so did m and its copy
            assert r["n_control_correct"] == "2" and not r["control_missed"], i
    doc = json.loads((work / "results/decision.json").read_text())
    (card,) = doc["cards"]
    assert card["control_lost_rows"] == {"j": j}
    assert card["control_lost"] == {"j": [2, 2], "m": [0, 2], "m~aa": [0, 2]}
    text = (work / "results/decision.md").read_text()
    (lost,) = [line for line in text.splitlines() if "Control lost" in line]
    assert lost.startswith("**Control lost: j missed a control fact the ceiling recalled on "
                           "2 of 2 rows**") and all(f"`{i}`" in lost for i in j)
    for arm in ("m", "m~aa"):
        assert f"Control facts: {arm} kept every control fact the ceiling recalled " \
            "(2 rows read)" in text
