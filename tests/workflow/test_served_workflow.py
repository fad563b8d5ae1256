"""A provider's fallback through the real workflow: Anthropic's stand-in
(tests/support/anthropic_standin.py) answers each arm's first recall turn from another
model, as server-side fallback documents it (a `fallback` block, a `fallback_message`
iteration), unasked. Under `native`, j and m, every row holding such a reply is invalid
`served_by_other`, its card names it and counts none of it, the gate reads only the
blocks left, and a rerun with the infrastructure retry on sends nothing.

One module-scoped build serves every assertion."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..support import procs
from ..support.anthropic_standin import AnthropicStandin
from ..support.provider_standin import RECALL_ASK

pytestmark = pytest.mark.workflow
KEY = {"ANTHROPIC_STANDIN_KEY": "anthropic-standin-key"}
FALLBACK = "claude-fallback-standin"
ARMS = ("native", "j", "m")
REPEATS = 4


def first_recall(body: dict[str, Any], seen: int) -> bool:
    """The stand-in falls back on a recall turn the first time it is sent: an arm's
    repeats send byte-identical recall requests, so one row of each arm (whichever
    repeat came first) holds a fallback reply, and its other rows do not."""
    return seen == 0 and RECALL_ASK in json.dumps(body.get("messages"))

TARGETS = ("results/evidence/rows.csv", "results/decision.md", "results/gate.json",
           "results/probe/summary.tsv")


def _config(base_url: str) -> dict[str, Any]:
    return {"study": "served", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 6000,
            "budget_usd": 5.0,
            "decide": {"pair": None, "gate": {"arm": "j", "against": "m",
                                              "at_least": "equivalent"}},
            "models": {"claude": {
                "backend": "anthropic", "model_id": "claude-standin", "base_url": base_url,
                "api_key_env": "ANTHROPIC_STANDIN_KEY", "native_via": "provider",
                "price_prompt_usd_per_mtok": 3.0,
                "price_completion_usd_per_mtok": 15.0, "timeout_s": 10, "max_attempts": 2,
                "retry_initial_wait_s": 0.05}},
            "sweeps": {"s": {"scenario": "distributed", "seed": 3, "models": ["claude"],
                             "arms": list(ARMS), "repeats": REPEATS}}}


def _csv(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("served")
    with AnthropicStandin(fallback_to=FALLBACK, fallback_when=first_recall) as a:
        configfile = workdir / "c.yaml"
        configfile.write_text(json.dumps(_config(a.base_url)))
        env = {**os.environ, **KEY}

        def snakemake(*args: str) -> Any:
            return procs.snakemake(workdir, "--configfile", str(configfile), "-c2", *args,
                                   timeout=600, env=env)

        p = snakemake(*TARGETS)
        assert p.returncode == 0, p.stderr[-4000:]
        first = len(a.calls)
        # the infrastructure retry: served_by_other rows are decided, so nothing is sent
        again = snakemake(*TARGETS, "--config", "retry_infrastructure=true")
        yield {"workdir": workdir, "standin": a, "first": first, "again": again,
               "after": len(a.calls)}


def records(workdir: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for r in range(REPEATS):
        for arm in ARMS:
            rec = json.loads((workdir / f"results/runs/s/claude/r{r}/{arm}.json").read_text())
            out[rec["row_id"]] = rec
    return out


def replies(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return [f["reply"] for f in rec["folds"]] + [rec["recall"]["reply"]]


def test_every_call_names_what_served_it(study):
    for rec in records(study["workdir"]).values():
        for reply in replies(rec):
            assert reply["served"]["asked"] == "claude-standin"
            assert reply["served"]["model"] in ("claude-standin", FALLBACK)


def test_each_row_holding_a_fallback_reply_is_invalid_served_by_other(study):
    recs = records(study["workdir"])
    fell = {rid for rid, rec in recs.items()
            if any(r["served"].get("fallbacks") for r in replies(rec))}
    # one row of each arm holds a fallback reply (its recall turn), the others none
    assert sorted(rid.rsplit("/", 1)[1] for rid in fell) == sorted(ARMS)
    assert all("compaction" not in b for b in study["standin"].fell_back)
    rows = {r["row_id"]: r for r in _csv(study["workdir"] / "results/evidence/rows.csv")}
    for rid in recs:
        if rid in fell:
            assert (rows[rid]["valid"], rows[rid]["invalid_reason"]) == (
                "false", f"served_by_other:{FALLBACK}"), rid
        else:
            assert rows[rid]["valid"] == "true", (rid, rows[rid]["invalid_reason"])


def test_the_card_names_them_and_counts_none(study):
    rows = _csv(study["workdir"] / "results/evidence/rows.csv")
    fell = sorted(r["row_id"] for r in rows if r["invalid_reason"].startswith("served_by"))
    valid = [r for r in rows if r["valid"] == "true"]
    doc = json.loads((study["workdir"] / "results/decision.json").read_text())
    (card,) = doc["cards"]
    assert card["valid_rows"] == len(valid)
    assert card["served_by_other"] == [f"{rid} (served by {FALLBACK})" for rid in fell]
    text = (study["workdir"] / "results/decision.md").read_text()
    assert f"{len(fell)} row(s) were served by a model other than `claude`" in text
    assert all(rid in text for rid in fell)
    # the gate's j-m contrast reads only the blocks where both rows are the model's own
    both = {r["repeat"] for r in valid if r["arm"] == "j"} & {
        r["repeat"] for r in valid if r["arm"] == "m"}
    jm = next(v for v in card["contrasts"] if {v["a"], v["b"]} == {"j", "m"})
    assert jm["blocks"] == len(both) < REPEATS
    gate = json.loads((study["workdir"] / "results/gate.json").read_text())
    (verdict,) = gate["models"]
    assert f"({len(both)} blocks," in verdict["why"]


def test_the_probe_table_says_whether_the_endpoint_fell_back(study):
    probe = json.loads((study["workdir"] / "results/probe/claude.json").read_text())
    (row,) = _csv(study["workdir"] / "results/probe/summary.tsv", "\t")
    assert row["served_by_other"] == " ".join(
        f"{shape}={m}" for shape, m in probe["served_by_other"].items())


def test_a_rerun_sends_nothing_for_rows_already_decided(study):
    assert study["again"].returncode == 0, study["again"].stderr[-3000:]
    assert study["after"] == study["first"]
