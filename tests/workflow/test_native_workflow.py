"""The provider's own compaction as an arm, through the real workflow: one
stand-in model per provider (tests/support/anthropic_standin.py, openai_responses_standin.py)
under `native`, j and m, and `native@m` (sweeps.X.native_with: the provider's compaction
with m's prompt as its instructions). Anthropic's readable block is the carry, graded and
traced like any; OpenAI's encrypted item is recorded as opaque, its trace says so, and
only its recall answer is graded; a native arm is outside the matched comparison; its
calls are paid, stored, counted in the plan; and a rerun pays nothing.

One module-scoped build serves every assertion (the suite's cost: docs/benchmarks.md)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

from foldstudy.analysis.decision import NATIVE_SOURCE, native_with_sources
from foldstudy.carriers.registry import carrier_of
from foldstudy.grade.trace import OPAQUE
from foldstudy.study.arm import is_index_arm, is_matched
from foldstudy.study.fixture_types import Fixture
from foldstudy.study.spec import load_arm_table

from ..support import procs
from ..support.anthropic_standin import AnthropicStandin
from ..support.openai_responses_standin import OpenAIResponsesStandin
from ..support.provider_standin import dropped

pytestmark = pytest.mark.workflow
ROOT = procs.ROOT
KEYS = {"ANTHROPIC_STANDIN_KEY": "anthropic-standin-key",
        "OPENAI_STANDIN_KEY": "openai-standin-key"}
PRICES = {"price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0,
          "timeout_s": 10, "max_attempts": 2, "retry_initial_wait_s": 0.05}
SEED, LOSS = 4, 0.3  # the stand-ins' seeded loss: a native arm keeps ~70% of identifiers
TARGETS = ("results/evidence/rows.csv", "results/evidence/trace.csv",
           "results/trace/fact-losses.csv", "results/trace/fact-losses-by-fact.csv",
           "results/audit/plan.tsv", "results/decision.md")


def _config(anthropic: str, openai: str) -> dict[str, Any]:
    # the stand-ins answer each recall item with every identifier they were sent: room
    # for fourteen such lines
    return {"study": "native", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 6000,
            "budget_usd": 5.0,
            "models": {
                "claude": {"backend": "anthropic", "model_id": "claude-standin",
                           "base_url": anthropic, "api_key_env": "ANTHROPIC_STANDIN_KEY",
                           # the stand-ins speak for the providers (study/checks.py)
                           "native_via": "provider", **PRICES},
                "gpt": {"backend": "openai_responses", "model_id": "gpt-standin",
                        "base_url": openai, "api_key_env": "OPENAI_STANDIN_KEY",
                        "native_via": "provider", **PRICES}},
            "sweeps": {"s": {"scenario": "distributed", "seed": 3,
                             "models": ["claude", "gpt"], "arms": ["native", "j", "m"],
                             "native_with": ["m"], "repeats": 3}}}


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


class Study:
    def __init__(self, workdir: Path, anthropic: AnthropicStandin,
                 openai: OpenAIResponsesStandin) -> None:
        self.workdir, self.anthropic, self.openai = workdir, anthropic, openai
        self.configfile = workdir / "c.yaml"
        self.configfile.write_text(json.dumps(_config(anthropic.base_url, openai.base_url)))
        self.env = {**os.environ, **KEYS}

    def snakemake(self, *args: str) -> Any:
        return procs.snakemake(self.workdir, "--configfile", str(self.configfile), "-c2",
                               *args, timeout=600, env=self.env)

    def record(self, model: str, arm: str, repeat: int = 0) -> dict[str, Any]:
        path = self.workdir / f"results/runs/s/{model}/r{repeat}/{arm}.json"
        return json.loads(path.read_text(encoding="utf-8"))

    def fixture(self) -> Fixture:
        path = self.workdir / "results/fixtures/s/fixture.json"
        return Fixture.from_dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("native")
    with AnthropicStandin(seed=SEED, loss=LOSS) as a, \
            OpenAIResponsesStandin(seed=SEED, loss=LOSS) as o:
        s = Study(workdir, a, o)
        p = s.snakemake(*TARGETS)
        assert p.returncode == 0, p.stderr[-4000:]
        s.first_calls = (len(a.calls), len(o.calls))
        s.spent = json.loads((workdir / "results/spend/ledger.json").read_text())
        # the native runs made again: every call is answered from the response store
        s.rerun = s.snakemake(*TARGETS, "--forcerun", *(
            f"results/runs/s/{model}/r0/native.json" for model in ("claude", "gpt")))
        s.rerun_calls = (len(a.calls), len(o.calls))
        yield s


def test_the_native_arm_is_data_and_outside_the_matched_comparison():
    table = load_arm_table(ROOT / "resources")
    assert table["arms"]["native"]["carry"] == "native"
    assert not is_matched(table["arms"]["native"])
    # every other arm a model folds is matched (the native arms, index arms and the
    # carriers that keep the session, which call no model per fold, are outside)
    assert all(is_matched(a) for k, a in table["arms"].items()
               if not carrier_of(a).needs_native_compaction and not is_index_arm(a)
               and carrier_of(a).calls_model)
    assert not is_matched(table["arms"]["native_keep2"])


def test_each_native_fold_asks_the_provider_to_compact_and_replays_the_item(study):
    """Every fold of a native run is one compaction request carrying the previous item
    first; the recall continues from the last item."""
    compactions = [c for c in study.anthropic.calls if "compaction" in c.body]
    assert compactions and all(c.headers.get("anthropic-beta") == "compact-2026-09-04"
                               for c in compactions)
    rec = study.record("claude", "native")
    n = rec["n_chunks"]
    assert len(rec["folds"]) == n and rec["native"]["mechanism"] == "on_demand"
    # fold k > 0 sent fold k-1's block first, unchanged
    blocks = [f["reply"]["raw"]["compaction"] for f in rec["folds"]]
    sent = {json.dumps(c.body["messages"][0]["content"][0], sort_keys=True)
            for c in compactions if c.body["messages"][0]["role"] == "assistant"}
    assert {json.dumps(b, sort_keys=True) for b in blocks[:-1]} <= sent
    recalls = [c for c in study.anthropic.calls if "compaction" not in c.body
               and c.body["messages"][0]["role"] == "assistant"]
    assert any(c.body["messages"][0]["content"][0] == blocks[-1] for c in recalls)
    # OpenAI: POST /responses/compact with the chunk as an assistant message, then the
    # recall on /responses starting with the last compacted window
    g = study.record("gpt", "native")
    compact = [c for c in study.openai.calls if c.path.endswith("/compact")]
    assert compact and all(c.body["input"][-1]["role"] == "assistant" for c in compact)
    assert rec["retained_tokens"] > 0 and g["retained_tokens"] is None  # unknown, never guessed
    window = g["native"]["item"]
    assert window[-1]["type"] == "compaction"
    assert any(c.body["input"][: len(window)] == window for c in study.openai.calls
               if c.path.endswith("/responses"))


def test_anthropics_block_is_the_carry_graded_and_traced(study):
    fx = study.fixture()
    rec = study.record("claude", "native")
    assert rec["final_carry"] == rec["folds"][-1]["reply"]["raw"]["compaction"]["content"]
    rows = {r["row_id"]: r for r in _csv(study.workdir / "results/evidence/rows.csv")}
    row = rows["s/claude/r0/native"]
    assert row["valid"] == "true" and row["carrier_present"] != ""
    checks = [c for c in _csv(study.workdir / "results/evidence/checks.csv")
              if c["row_id"] == "s/claude/r0/native"]
    # what the stand-in's seeded loss keeps is what the carry holds, fact by fact
    for c in checks:
        fact = next(f for f in fx.graded if f.label == c["label"])
        kept = fact.value in rec["final_carry"]
        assert c["in_carrier"] == str(kept).lower()
        if " " not in fact.value and any(ch.isdigit() for ch in fact.value) \
                and len(fact.value) >= 4:
            assert kept == (not dropped(fact.value, SEED, LOSS))
    assert int(row["carrier_present"]) == sum(c["in_carrier"] == "true" for c in checks)
    trace = [t for t in _csv(study.workdir / "results/evidence/trace.csv")
             if t["row_id"] == "s/claude/r0/native"]
    assert trace and {t["present"] for t in trace} <= {"true", "false"}


def test_openais_item_is_opaque_and_only_its_answer_is_graded(study):
    rec = study.record("gpt", "native")
    assert rec["native"]["opaque"] and rec["final_carry"] == ""
    assert all(f["carry_opaque"] for f in rec["folds"])
    row = next(r for r in _csv(study.workdir / "results/evidence/rows.csv")
               if r["row_id"] == "s/gpt/r0/native")
    assert row["valid"] == "true" and row["carrier_present"] == "" and row["recall"] != ""
    assert int(row["n_correct"]) > 0  # the answer is graded
    checks = [c for c in _csv(study.workdir / "results/evidence/checks.csv")
              if c["row_id"] == "s/gpt/r0/native"]
    assert checks and all(c["in_carrier"] == "" for c in checks)
    trace = [t for t in _csv(study.workdir / "results/evidence/trace.csv")
             if t["row_id"] == "s/gpt/r0/native"]
    assert trace and all(t["present"] == "" for t in trace)
    # the trace's readers say "opaque", not lost or kept
    facts = [f for f in _csv(study.workdir / "results/trace/fact-losses-by-fact.csv")
             if f["row_id"] == "s/gpt/r0/native"]
    assert {f["kind"] for f in facts} <= {OPAQUE, "recalled"} and OPAQUE in \
        {f["kind"] for f in facts}
    opaque = [f for f in _csv(study.workdir / "results/trace/fact-losses-by-fact.csv")
              if f["kind"] == OPAQUE]
    natives = {"native", "native@m"}  # both are OpenAI's compaction there: opaque
    assert {f["model"] for f in opaque} == {"gpt"} and {f["arm"] for f in opaque} == natives
    by_arm = _csv(study.workdir / "results/trace/fact-losses.csv")
    assert sum(int(r[OPAQUE]) for r in by_arm if r["arm"] in natives) == len(opaque)
    assert all(r[OPAQUE] == "0" for r in by_arm if r["arm"] not in natives)


def test_native_calls_are_paid_stored_and_planned_and_a_rerun_pays_nothing(study):
    ledger = json.loads((study.workdir / "results/spend/ledger.json").read_text())
    assert ledger["calls"] >= 2 * 3 * 3 * (study.fixture().chunks.__len__() + 1)
    assert ledger["spent_usd"] > 0
    # the plan counts every run of each model, its native runs' calls among them
    plan = {r["model"]: r for r in _csv_tsv(study.workdir / "results/audit/plan.tsv")}
    calls = len(study.fixture().chunks) + 1
    for model in ("claude", "gpt"):  # native, j, m and native@m, three repeats
        assert int(plan[model]["runs"]) == 12 and int(plan[model]["calls"]) == 12 * calls
    assert study.rerun.returncode == 0, study.rerun.stderr[-3000:]
    assert study.rerun_calls == study.first_calls
    for model in ("claude", "gpt"):
        rec = study.record(model, "native")
        assert all(f["store_hit"] for f in rec["folds"]) and rec["recall"]["store_hit"]
    after = json.loads((study.workdir / "results/spend/ledger.json").read_text())
    assert after["calls"] == study.spent["calls"] == ledger["calls"]


def _csv_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_each_card_has_the_providers_compaction_against_the_best_arm(study):
    """The native arm on the decision card only as "the provider's
    compaction against your best arm" (difference, p, TOST), never in a matched contrast."""
    doc = json.loads((study.workdir / "results/decision.json").read_text())
    rows = _csv(study.workdir / "results/evidence/rows.csv")
    for card in doc["cards"]:
        lines = [v for v in card["contrasts"] if v["source"] == NATIVE_SOURCE]
        assert len(lines) == 1, card["model"]
        v = lines[0]
        mean = {a: sum(float(r["recall"]) for r in rows if r["model"] == card["model"]
                       and r["arm"] == a) / 3 for a in ("j", "m")}
        assert v["b"] == "native" and v["a"] == max(mean, key=mean.get)
        assert v["p_permutation"] is not None and "tost_p" in v and v["word"]
        mine = native_with_sources("m")
        assert not any("native" in (x["a"], x["b"]) for x in card["contrasts"]
                       if x["source"] not in (NATIVE_SOURCE, *mine))
        # native@m beside native and beside m, judged (outside the matched comparison)
        pairs = {x["source"]: (x["a"], x["b"]) for x in card["contrasts"]
                 if x["b"] == "native@m"}
        assert pairs == {mine[0]: ("native", "native@m"), mine[1]: ("m", "native@m")}
    text = (study.workdir / "results/decision.md").read_text()
    assert text.count(f"native ({NATIVE_SOURCE})") == 2
    assert text.count(f"native–native@m ({native_with_sources('m')[0]})") == 2


def test_native_at_m_sends_ms_prompt_as_instructions_through_the_workflow(study):
    """The generated arm runs in every block under its own id (a path, a wildcard, a row),
    its Anthropic compactions carry m's prompt as `compaction.instructions` beside the
    recall turn's system prompt, and its rows are graded like native's."""
    rec = study.record("claude", "native@m")
    m_prompt = (ROOT / "resources/prompts/fixed_headings.md").read_text(encoding="utf-8")
    assert rec["arm_spec"]["instructions"] == m_prompt
    chunks = set(study.fixture().chunks)  # the folds' compactions (not the probe's)
    sent = [c.body for c in study.anthropic.calls if "compaction" in c.body
            and c.body["messages"][-1]["content"] in chunks]
    mine = [b for b in sent if b["compaction"].get("instructions") == m_prompt]
    plain = [b for b in sent if "instructions" not in b["compaction"]]
    assert len(mine) >= 3 * rec["n_chunks"] and plain  # native@m's, and native's own
    recall_system = (ROOT / "resources/prompts/recall_system.md").read_text(encoding="utf-8")
    assert {b["system"] for b in sent} == {recall_system}
    rows = [r for r in _csv(study.workdir / "results/evidence/rows.csv")
            if r["arm"] == "native@m"]
    assert len(rows) == 6 and all(r["valid"] == "true" for r in rows)
