"""The provider's compaction with the study's own prompt (config sweeps.X.native_with: the
arm `native@ARM`), and the system prompt every compaction request sends: the recall
turn's, on both providers' stand-ins. On the wire: Anthropic carries ARM's prompt as
`compaction.instructions` beside the recall turn's system prompt, OpenAI's compact
endpoint as its `instructions`; plain `native` sends no instructions. The config check
refuses what cannot run, each in one line naming its key; the arm's record names the
prompt by name and digest, so its store keys are its own; each card reads it against
`native` and against ARM, outside the matched comparison."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
import yaml

from foldstudy.analysis.decision import (
    NATIVE_SOURCE,
    CardInputs,
    cards,
    native_with_sources,
    planned_family_size,
)
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.backends import make_backend
from foldstudy.backends.store import ResponseStore, cache_key
from foldstudy.carriers.registry import carrier_of
from foldstudy.report.card_words import card_markdown, contrast_line
from foldstudy.report.carrier import chosen
from foldstudy.run.fold import Sample, run_row
from foldstudy.run.probe import NATIVE_UNSUPPORTED
from foldstudy.study.arm import is_matched
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.derived import native_with_of
from foldstudy.study.spec import SpecError, load_arm_table, resolve_arm

from ..backends.test_backend_providers import ANTHROPIC, PRICES, PROVIDERS, Provider
from ..conftest import ROOT
from ..support.evidence_rows import arm_rows, frames
from .test_native_fold import fixture, native  # noqa: F401 - module fixtures

# A model whose backend has the provider's compaction: the config check refuses a native
# arm on any other (the default study's embedded model has none)
CLAUDE = {"claude": {"backend": "anthropic", "model_id": "claude-x",
                     "price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0}}


def study(sweep: dict, models: dict | None = None, **top):
    """The default study with this sweep, on these models (the sweep runs them alone)."""
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg.update(top)
    cfg["sweeps"]["main"].update(sweep)
    models = models or CLAUDE
    cfg["models"].update(models)
    cfg["sweeps"]["main"]["models"] = list(models)
    schema = yaml.safe_load((ROOT / "config/schema/config.schema.yaml").read_text())
    return load_study(cfg, schema, load_arm_table(ROOT / "resources"), ROOT / "resources")


@pytest.fixture(scope="module")
def with_m():
    """A study running j, m, native and native@m (its arms resolved as the fold job gets
    them)."""
    return study({"arms": ["j", "m", "native"], "native_with": ["m"]})


def fold_all(p: Provider, standin, tmp_path, fixture, arm, prompts):  # noqa: F811
    backend = make_backend("m", p.cfg(standin))
    return run_row(fixture, arm, backend, ResponseStore(tmp_path / arm.arm), prompts,
                   Sample("s", "m", arm.arm, 0, 0, 3), temperature=0.2,
                   recall_max_tokens=300).to_dict()


# -- on the wire -------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS, indirect=True)
def test_every_compaction_sends_the_recall_turns_system_prompt_and_no_instructions(
        provider, fixture, native, prompts, tmp_path):  # noqa: F811
    """Anthropic's on-demand page: "send the same system prompt and tools as the rest of
    the conversation". The native arm's compaction requests carry, as their system
    prompt, exactly what its recall request carries."""
    with provider.start(seed=2, loss=0.3) as s:
        rec = fold_all(provider, s, tmp_path, fixture, native, prompts)
    n = len(fixture.chunks)
    assert rec["infra_error"] is None and len(s.calls) == n + 1
    folds, recall = s.calls[:n], s.calls[n]
    key = "system" if provider is ANTHROPIC else "instructions"
    assert recall.body[key] == prompts.recall_system
    assert all(call.body[key] == recall.body[key] for call in folds)
    if provider is ANTHROPIC:  # the provider's default summarization: no instructions
        assert all(call.body["compaction"] == {"type": "summarize"} for call in folds)
    assert rec["arm_spec"]["system_prompt_name"] == "recall_system"
    assert "instructions" not in rec["arm_spec"]


@pytest.mark.parametrize("provider", PROVIDERS, indirect=True)
def test_native_at_m_sends_ms_prompt_as_the_providers_compaction_instructions(
        provider, fixture, prompts, with_m, tmp_path):  # noqa: F811
    arm = with_m.arms["native@m"]
    m_prompt = (ROOT / "resources/prompts" / f"{with_m.arms['m'].system_prompt_name}.md"
                ).read_text(encoding="utf-8")
    with provider.start(seed=2, loss=0.3) as s:
        rec = fold_all(provider, s, tmp_path, fixture, arm, prompts)
    n = len(fixture.chunks)
    assert rec["infra_error"] is None and len(s.calls) == n + 1
    folds, recall = s.calls[:n], s.calls[n]
    if provider is ANTHROPIC:
        assert all(call.body["compaction"] == {"type": "summarize", "instructions": m_prompt}
                   for call in folds)
        # the system prompt stays the conversation's, the recall turn's
        assert all(call.body["system"] == recall.body["system"] == prompts.recall_system
                   for call in folds)
    else:
        # the compact endpoint takes one `instructions`: m's prompt, not the recall's
        assert all(call.body["instructions"] == m_prompt for call in folds)
        assert recall.body["instructions"] == prompts.recall_system != m_prompt
    # the recall turn is the native arm's: it continues from the last item
    assert "compaction" not in recall.body
    spec = rec["arm_spec"]
    assert (spec["instructions_from"], spec["instructions_name"]) == (
        "m", with_m.arms["m"].system_prompt_name)
    assert spec["instructions_sha256"] == hashlib.sha256(m_prompt.encode()).hexdigest()


def test_a_store_key_differs_between_native_and_native_at_m_for_the_same_chunk(
        fixture, with_m, monkeypatch):  # noqa: F811
    """The instructions are in the request the store keys, so even under one sample the
    two arms' compactions of one chunk never share an entry (and each arm's own sample
    names it too)."""
    monkeypatch.setenv("PROVIDER_TEST_KEY", ANTHROPIC.key)
    # no call is made: the request and its key are built, never sent
    backend = make_backend("m", {"backend": "anthropic", "model_id": "claude-standin",
                                 "base_url": "http://127.0.0.1:9", **PRICES,
                                 "api_key_env": "PROVIDER_TEST_KEY"})
    requests = {a: backend.compaction_request(None, fixture.chunks[0], arm.system_prompt,
                                              arm.fold_budget_tokens, 0.2,
                                              instructions=arm.instructions)
                for a, arm in ((a, with_m.arms[a]) for a in ("native", "native@m"))}
    assert "instructions" not in requests["native"].canonical()["native"]
    one = Sample("s", "m", "native", 0, 0, 3).identity("fold0")
    keys = {a: cache_key(r, backend.identity, one) for a, r in requests.items()}
    assert keys["native"] != keys["native@m"]
    own = cache_key(requests["native@m"], backend.identity,
                    Sample("s", "m", "native@m", 0, 0, 3).identity("fold0"))
    assert own not in keys.values()


# -- the config ------------------------------------------------------------------------


def test_native_with_adds_native_at_arm_to_the_sweep_outside_the_matched_comparison(with_m):
    assert with_m.config["sweeps"]["main"]["arms"] == ["j", "m", "native", "native@m"]
    per_block = {r.repeat: {x.arm for x in with_m.runs if x.repeat == r.repeat}
                 for r in with_m.runs}
    assert all("native@m" in arms for arms in per_block.values())
    arm = with_m.arms["native@m"]
    assert native_with_of("native@m") == ("native", "m") and native_with_of("m") is None
    assert arm.title == "the provider's compaction with m's prompt"
    assert not is_matched(arm) and carrier_of(arm).fold_failure == "returned no compaction"
    # its permission is the native arm's: on a backend without compaction, a record
    # saying so (the probe's native_compaction verdict decides per model)
    assert carrier_of(arm).permission({}, "openrouter")["verdict"] == NATIVE_UNSUPPORTED
    # the native arm and its twin with m's prompt differ in the instructions alone
    plain = with_m.arms["native"]
    assert dataclasses.replace(arm, arm="native", title=plain.title,
                               description=plain.description, instructions_from=None,
                               instructions_name=None, instructions=None,
                               instructions_sha256=None) == plain
    plan = AnalysisPlan.load(config=with_m.config)
    assert plan.native_with == {"native@m": ("native", "m")} and "native@m" in plan.unmatched
    assert plan.arm_title("native@m") == arm.title and "native@m" in plan.opaque_arms


@pytest.mark.parametrize("sweep, line", [
    ({"arms": ["j", "m", "native"], "native_with": ["uncompacted"]},
     r"config\.sweeps\.main\.native_with\[0\]: 'uncompacted' is not an arm whose folds "
     r"send its prompt \(allowed: f n j p q k o m t u l g\)"),
    ({"arms": ["j", "m", "native"], "native_with": ["m", "nope"]},
     r"config\.sweeps\.main\.native_with\[1\]: 'nope' is not an arm whose folds send its "
     r"prompt \(allowed: f n j p q k o m t u l g\)"),
    ({"arms": ["j", "m"], "native_with": ["m"]},
     r"config\.sweeps\.main\.native_with: sweep main runs no native arm \(add one of "
     r"native to its arms"),
])
def test_a_native_with_that_cannot_run_is_refused_in_one_line_naming_the_key(sweep, line):
    with pytest.raises(ConfigError, match=line) as e:
        study(sweep)
    assert len(e.value.problems) == 1


def test_an_own_arms_prompt_over_a_models_context_length_is_refused_naming_both(tmp_path):
    """Neither API documents a longest instructions text: the bound is the model's
    configured context, the prompt's tokens estimated as the study estimates text. An
    own arm's prompt (config arms_file) is sent like a paper arm's."""
    (tmp_path / "long.md").write_text("Keep every identifier. " * 100, encoding="utf-8")
    (tmp_path / "arms.yaml").write_text(yaml.safe_dump({"arms": {"long": {
        "title": "long", "twin": "m", "system_prompt": "long.md", "fold_budget_tokens": 2400,
        "carry_cap_tokens": 2400, "carry": "text"}}}), encoding="utf-8")
    small = {"claude": {"backend": "anthropic", "model_id": "claude-x", "context_length": 512,
                        "price_prompt_usd_per_mtok": 3.0, "price_completion_usd_per_mtok": 15.0}}
    sweep = {"arms": ["j", "m", "native"], "native_with": ["long"]}
    with pytest.raises(ConfigError) as e:
        study(sweep, small, arms_file=str(tmp_path / "arms.yaml"))
    assert e.value.problems == [
        "config.sweeps.main.native_with[0]: arm long's prompt is about 885 tokens, over "
        "model claude's context_length 512 (allowed: a prompt of at most 512 tokens)"]
    # at a context that holds it, the own arm's prompt is what native@long sends
    roomy = {"claude": {**small["claude"], "context_length": 200_000}}
    s = study(sweep, roomy, arms_file=str(tmp_path / "arms.yaml"))
    assert s.arms["native@long"].instructions == (tmp_path / "long.md").read_text()


def test_a_native_arm_naming_another_system_prompt_is_refused(resources):
    table = load_arm_table(resources)
    assert table["arms"]["native"]["system_prompt"] == "recall_system"
    table["arms"]["native"]["system_prompt"] = "unstructured_prose"
    with pytest.raises(SpecError, match=r"arms\.native\.system_prompt: 'unstructured_prose'; "
                                        r"an arm of carry native names 'recall_system'"):
        resolve_arm("native", table, resources, 1.0)


# -- the card --------------------------------------------------------------------------


def _card(with_m, native_at_m: list[float], **extra):
    recalls = {"j": [0.2] * 8, "m": [0.6, 0.5, 0.6, 0.7, 0.6, 0.5, 0.6, 0.7],
               "native": [0.3, 0.4, 0.3, 0.4, 0.3, 0.4, 0.3, 0.4], "native@m": native_at_m}
    rows = [r for arm, rs in recalls.items() for r in arm_rows("s", "x", arm, rs, k=10)]
    rows_df, checks = frames(rows)
    for col, value in extra.items():
        rows_df.loc[rows_df["arm"] == "native@m", col] = value
    plan = AnalysisPlan.load().with_native_prompts({"native@m": ("native", "m")})
    ci = CardInputs(margin=0.10, arms=dict(with_m.arms))
    (card,) = cards(rows_df, checks, plan, ci)
    return card, plan


def test_the_card_reads_native_at_m_against_native_and_against_m(with_m):
    mine = [0.9, 0.8, 1.0, 0.9, 0.8, 0.9, 1.0, 0.9]
    card, plan = _card(with_m, mine)
    default, fold = native_with_sources("m")
    assert default == "the provider's compaction with m's prompt against the provider's default"
    assert fold == "the provider's compaction with m's prompt against m as a fold arm"
    lines = {v.source: v for v in card.contrasts if v.b == "native@m"}
    assert set(lines) == {default, fold}  # and no "against your best arm" line
    assert (lines[default].a, lines[fold].a) == ("native", "m")
    assert lines[default].difference == pytest.approx(sum(mine) / 8 - 0.35)
    assert lines[fold].difference == pytest.approx(sum(mine) / 8 - 0.6)
    for v in lines.values():  # judged, with an interval, p and TOST, in the family
        assert v.word == "native@m better" and v.ci_low > 0 and v.p_permutation is not None
        assert v.tost_p is not None and v.family_size == len(card.contrasts)
    assert [(v.a, v.b) for v in card.contrasts if v.source == NATIVE_SOURCE] == [
        ("m", "native")]
    text = "\n".join(card_markdown(card, plan))
    assert f"native–native@m ({default})" in text and f"m–native@m ({fold})" in text
    # the provider's compaction is never the card's chosen carrier (no prompt folder)
    picked = chosen(card)
    assert picked is None or picked[0] != "native@m"
    # the lines the staged plan counts in the family
    assert planned_family_size(plan, [], {}, None, ["j", "m", "native", "native@m"], 1,
                                 "sweep") == len(card.contrasts)


def test_native_at_m_folds_that_returned_no_compaction_are_said_like_natives(with_m):
    card, plan = _card(with_m, [0.3] * 8, parse_failures=2)
    assert card.fold_failures == {"native@m": "16 of 40 folds returned no compaction"}
    default, _ = native_with_sources("m")
    (v,) = [v for v in card.contrasts if v.source == default]
    assert "native@m: 16 of 40 folds returned no compaction" in contrast_line(
        v, card.fold_failures)


def test_a_package_holding_native_at_m_is_read_as_the_study_read_it(tmp_path):
    """A reviewer's package (evidence mode): its rows' native@m is known by its id, as an
    A/A copy is, when both parts are arms of the study; the plan titles it and orders it
    beside native; an id whose parts are not arms is refused as before."""
    from foldstudy.evidence.load import EvidenceError, check_consistency
    from foldstudy.study.derived import native_prompts

    arms = AnalysisPlan.load().arm_order
    rows = [r for arm in ("m", "native", "native@m")
            for r in arm_rows("s", "x", arm, [0.5, 0.6], k=10)]
    rows_df, checks = frames(rows)
    check_consistency(rows_df, checks, arms)
    for bad in ("native@nope", "nope@m"):
        forged = rows_df.assign(arm=rows_df["arm"].replace("native@m", bad),
                                row_id=rows_df["row_id"].str.replace("native@m", bad))
        with pytest.raises(EvidenceError, match=f"{bad!r} on line 6 is not an arm"):
            check_consistency(forged, checks.assign(row_id=checks["row_id"].str.replace(
                "native@m", bad)), arms)
    rows_df.to_csv(tmp_path / "rows.csv", index=False)
    config = {"evidence": str(tmp_path), "sweeps": {"s": {"arms": ["m", "native"]}}}
    assert native_prompts(config, load_arm_table(ROOT / "resources")) == {
        "native@m": ("native", "m")}
    plan = AnalysisPlan.load(config=config)
    assert plan.arm_order.index("native@m") == plan.arm_order.index("native") + 1
    assert plan.arm_title("native@m") == "the provider's compaction with m's prompt"


def test_native_at_m_on_a_proxy_model_is_read_in_the_endpoints_words(with_m):
    """On a model whose config says native_via: proxy, native@m's two lines and its title
    name the endpoint's compaction and its default, never the provider's; the same rows
    on the provider's API read the provider's words (the test above)."""
    from foldstudy.carriers.native import native_words

    proxy = native_words({"native_via": "proxy",
                          "base_url": "https://user:secret@gw.example:8443/v1?key=abc"})
    recalls = {"j": [0.2] * 8, "m": [0.6, 0.5, 0.6, 0.7, 0.6, 0.5, 0.6, 0.7],
               "native": [0.3, 0.4] * 4, "native@m": [0.9, 0.8] * 4}
    rows_df, checks = frames([r for arm, rs in recalls.items()
                              for r in arm_rows("s", "x", arm, rs, k=10)])
    plan = AnalysisPlan.load().with_native_prompts(
        {"native@m": ("native", "m")}).with_native_words({"x": proxy})
    (card,) = cards(rows_df, checks, plan, CardInputs(margin=0.10, arms=dict(with_m.arms)))
    default, fold = native_with_sources("m", proxy)
    assert default == "compaction by gw.example:8443 with m's prompt against its default"
    assert fold == "compaction by gw.example:8443 with m's prompt against m as a fold arm"
    assert {v.source for v in card.contrasts if v.b == "native@m"} == {default, fold}
    assert [v.source for v in card.contrasts if v.b == "native"] == [
        "compaction by gw.example:8443 against your best arm"]
    text = "\n".join(card_markdown(card, plan))
    assert f"native–native@m ({default})" in text and "provider's" not in text
    assert plan.arm_title("native@m", "x") == "compaction by gw.example:8443 with m's prompt"
    assert plan.arm_title("native@m") == plan.arm_title("native@m", "y") == (
        "the provider's compaction with m's prompt")
