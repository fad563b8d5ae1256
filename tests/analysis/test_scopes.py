"""Scopes: every number from the sweep the study config names for it, never pooled
across sweeps by default (paper §4.7: "A model's j and q means come from the same run")."""

from __future__ import annotations

import pytest
import yaml

from foldstudy.analysis.numbers import compute_numbers
from foldstudy.analysis.partition import partition
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.scopes import ScopeError, Scopes
from foldstudy.evidence import columns
from foldstudy.evidence.load import load_evidence, write_table
from foldstudy.release.claims import claim_mismatches, judge_claims
from foldstudy.report.tables import build_tables
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.spec import load_arm_table

from ..conftest import RESOURCES, ROOT
from ..support.evidence_rows import arm_rows, frames, row

ARMS = AnalysisPlan.load().arm_order  # the arm ids load_evidence checks rows.csv against

PAPER = yaml.safe_load((ROOT / "config/study-paper.yaml").read_text(encoding="utf-8"))
PAPER_SCOPES = Scopes.from_config(PAPER["scopes"])
QWEN = "qwen3.6-35b-a3b"


def paper_shaped_evidence() -> list[dict]:
    """Rows in every sweep the paper's scopes name. glm-5.2 works in the partition sweep
    and fails in the depth sweep; decomp-only ran j and q in a decomposition sweep only;
    glm-5.2 ran j and t in the ceiling sweep (the ceiling scope names it there)."""
    rows = []
    rows += arm_rows("table1", QWEN, "m", [1.0, 1.0])
    for sweep in ("decomposition_a", "decomposition_b"):
        for arm, r in (("j", 0.0), ("q", 0.8), ("m", 1.0)):
            rows += arm_rows(sweep, "decomp-only", arm, [r, r])
    rows += arm_rows("iteration", "decomp-only", "j", [0.3, 0.3], scenario="single_chunk", k=7)
    rows += arm_rows("ceiling", QWEN, "j", [0.2, 0.2]) + arm_rows("ceiling", QWEN, "t",
                                                                   [0.1, 0.1])
    rows += arm_rows("ceiling_jt", QWEN, "j", [0.3]) + arm_rows("ceiling_jt", QWEN, "t", [0.1])
    rows += arm_rows("anchor", QWEN, "j", [0.0, 0.0, 1.0])
    rows += arm_rows("ceiling", "glm-5.2", "j", [1.0]) + arm_rows("ceiling", "glm-5.2", "t",
                                                                  [0.0])
    rows += arm_rows("flash_lm", "qwen3.6-flash", "m", [1.0])
    for model, j, q, fill in (("glm-5.2", 1.0, 1.0, 0.6), ("mimo-v2.5", 0.0, 0.9, 0.99),
                              ("ling-2.6-flash", 0.0, 0.1, 0.06)):
        rows += arm_rows("partition", model, "j", [j] * 4, fill=fill)
        rows += arm_rows("partition", model, "q", [q] * 4)
    # The depth re-run: glm-5.2 with the opposite behaviour, at three times the depth.
    rows += arm_rows("depth", "glm-5.2", "j", [0.0] * 12, fill=0.3)
    rows += arm_rows("depth", "glm-5.2", "q", [0.0] * 12)
    # The fill table's (§4.6) undivided rows with no divided partner, and p.
    for sweep in ("decomposition_a", "decomposition_b"):
        rows += arm_rows(sweep, QWEN, "p", [0.0], fill=0.94)
    rows += arm_rows("partition", "deepseek-v4-pro", "j", [1.0], fill=0.49)
    for sweep in ("partition", "depth"):
        rows += arm_rows(sweep, "granite-4.1-8b", "j", [0.3, 0.2], fill=0.34)
    rows += arm_rows("depth", "ling-2.6-flash", "j", [0.0], fill=0.06)
    return rows


@pytest.fixture(scope="module")
def paper_run():
    rows, checks = frames(paper_shaped_evidence())
    plan = AnalysisPlan.load()
    numbers = compute_numbers(rows, checks, plan, PAPER_SCOPES)
    tables = {t.name: t for t in build_tables(rows, checks, numbers, plan, scopes=PAPER_SCOPES)}
    return rows, numbers, tables


def test_partition_takes_each_models_pair_from_one_sweep_by_precedence(paper_run):
    rows, n, tables = paper_run
    in_sweep = rows.loc[(rows["sweep"] == "partition") & (rows["arm"] == "q"), "model"].nunique()
    assert n["partition.n_models"] == in_sweep == 3
    # glm-5.2 was re-run at depth, so its pair is the depth sweep's (fails),
    # not the partition sweep's (works), and never the two pooled.
    assert n["partition.failing[glm-5.2]"] == 1 and n["partition.j_mean[glm-5.2]"] == 0.0
    assert n["partition.j_n[glm-5.2]"] == 12
    assert n["partition.n_failing"] == 3 and n["partition.n_rescued"] == 1
    assert n["failure_mode.models[over_writing]"] == 1
    assert n["failure_mode.models[under_writing]"] == 2
    # Paper §4.6: fill against recall over every measured model ("twenty-five"), more
    # than the partition's twenty: the fill scope reads each model with undivided rows
    # anywhere (decomp-only and qwen too), one point per model.
    assert n["fill.n_models"] == 7
    j = rows[(rows["arm"] == "j") & (rows["scenario"] == "distributed")]
    per_model = j.groupby("model")[["fill", "recall"]].mean()
    assert n["fill.r"] == pytest.approx(per_model["fill"].corr(per_model["recall"]))
    part = tables["partition"].frame()
    assert list(part.columns[:13]) == columns.PARTITION_TABLE[:13]
    assert set(part["model"]) == {"glm-5.2", "mimo-v2.5", "ling-2.6-flash"}
    # decomp-only ran j and q, out of scope; each line names the sweep its pair came from
    assert dict(zip(part["model"], part["sweep"], strict=True)) == {
        "glm-5.2": "depth", "mimo-v2.5": "partition", "ling-2.6-flash": "partition"}


def test_the_depth_table_shows_the_depth_rows(paper_run):
    _, n, tables = paper_run
    d = tables["depth"].frame()
    assert set(d["sweep"]) == {"depth"} and set(d["model"]) == {"glm-5.2"}
    assert list(d["n"]) == [12, 12] and list(d["mean"]) == [0.0, 0.0]
    assert n["depth.mean[glm-5.2/j]"] == 0.0 and n["depth.n[glm-5.2/q]"] == 12


def test_each_paper_scope_reads_its_sweeps(paper_run):
    _, n, tables = paper_run
    # Table 1: its own sweep and qwen3.6-flash's; capacity: qwen's ceiling rows only.
    t1 = tables["table1-recall-model-arm"].frame()
    assert set(t1["sweep"]) == {"table1+flash_lm"} and "qwen3.6-flash" in set(t1["model"])
    assert n["capacity.n[j]"] == 3 and n["capacity.n[t]"] == 3
    # Ladder: the two decomposition sweeps (rows of both, pairs within each).
    assert n["ladder.n[j]"] == 4 and n["ladder.effect.n_pairs[q/j]"] == 4
    # Iteration: the decomposition sweeps against the single-chunk sweep.
    assert n["iteration.n[single/j]"] == 2 and n["iteration.n[distributed/j]"] == 4


def test_the_fill_table_pools_each_models_named_sweeps(paper_run):
    """§4.6: granite's rows are its partition and depth rows together; qwen's p line is
    its decomposition rows; a model or arm the scope does not name is not a line."""
    _, n, tables = paper_run
    ft = tables["fill-by-model-arm"].frame().set_index(["model", "arm"])
    assert set(ft.index) == {(QWEN, "p"), (QWEN, "j"), ("deepseek-v4-pro", "j"),
                             ("granite-4.1-8b", "j"), ("ling-2.6-flash", "j")}
    assert ft.loc[("granite-4.1-8b", "j"), "rows"] == 4
    assert ft.loc[(QWEN, "j"), "rows"] == 3 and ft.loc[(QWEN, "p"), "rows"] == 2
    assert ft.loc[("ling-2.6-flash", "j"), "rows"] == 5  # partition 4 + depth 1
    assert n["fill_table.fill[granite-4.1-8b/j]"] == pytest.approx(0.34)


def test_nothing_is_pooled_by_default():
    rows, checks = frames(arm_rows("s1", "m1", "j", [1.0, 1.0]) + arm_rows("s2", "m1", "j",
                                                                            [0.0, 0.0])
                          + arm_rows("s1", "m1", "q", [1.0, 1.0])
                          + arm_rows("s2", "m1", "q", [1.0, 1.0]))
    plan = AnalysisPlan.load()
    n = compute_numbers(rows, checks, plan)
    tables = {t.name: t for t in build_tables(rows, checks, n, plan)}
    recall = tables["recall-by-model-arm"].frame()
    assert len(recall[(recall["model"] == "m1") & (recall["arm"] == "j")]) == 2
    # Each sweep is its own group: keys carry the sweep, and no flat key pools them.
    assert n["partition.j_mean[s1/m1]"] == 1.0 and n["partition.j_mean[s2/m1]"] == 0.0
    assert n["partition.n_failing[s2]"] == 1 and "partition.n_models" not in n
    assert n["table1.mean[s1/distributed/m1/j]"] == 1.0
    assert sorted(tables["partition"].frame()["sweep"]) == ["s1", "s2"]
    # Pooling is asked for, by name; the pair stays within each sweep's blocks.
    pooled = compute_numbers(rows, checks, plan, Scopes.from_config(
        {"partition": {"pool": True}, "ladder": {"pool": True}}))
    assert pooled["partition.n_models"] == 2


def test_a_scope_naming_what_the_evidence_lacks_fails_by_name():
    rows, checks = frames(arm_rows("partition", "a", "j", [1.0]))
    with pytest.raises(ScopeError, match=r"scopes\.depth\.sweeps: 'depth' is not a sweep of "
                                         r"the evidence \(sweeps: partition\)"):
        compute_numbers(rows, checks, None, Scopes.from_config({"depth": {"sweeps": ["depth"]}}))
    with pytest.raises(ScopeError, match=r"scopes\.capacity\.models: 'qwen' has no row in "
                                         r"partition \(models there: a\)"):
        compute_numbers(rows, checks, None, Scopes.from_config(
            {"capacity": {"sweeps": ["partition"], "models": ["qwen"]}}))
    with pytest.raises(ScopeError, match=r"config\.scopes\.partiton: not an analysis"):
        Scopes.from_config({"partiton": {}})


def test_precedence_takes_each_models_rows_from_the_first_sweep_with_both_arms():
    # Pure: a model reads the first sweep of `prefer` holding every arm of
    # `arms`; a sweep with one arm only does not count, and nothing is pooled.
    a = AnalysisPlan.load()
    v = frames(arm_rows("deep", "m1", "j", [0.0] * 3) + arm_rows("deep", "m1", "q", [1.0] * 3)
               + arm_rows("part", "m1", "j", [1.0]) + arm_rows("part", "m1", "q", [1.0])
               + arm_rows("deep", "m2", "j", [0.0])  # no q at depth: m2 reads `part`
               + arm_rows("part", "m2", "j", [1.0]) + arm_rows("part", "m2", "q", [1.0])
               + arm_rows("part", "m2", "o", [1.0]))[0]
    sc = Scopes.from_config({"partition": {"prefer": ["deep", "part"], "arms": ["j", "q"]}})
    [(g, got)] = sc.select("partition", v, a.primary_scenario)
    assert g.label == "deep+part" and not g.qualified
    assert got.groupby("model")["sweep"].unique().map(list).to_dict() == {
        "m1": ["deep"], "m2": ["part"]}
    assert set(got["arm"]) == {"j", "q"}  # `arms` restricts what is read
    part = partition(got, a)
    assert dict(zip(part["model"], part["sweep"], strict=True)) == {"m1": "deep", "m2": "part"}


def test_sources_name_the_sweeps_of_each_model_and_arm():
    # The ceiling replication mixes corpora within a row.
    v = frames(arm_rows("anchor", "qw", "j", [0.0] * 5) + arm_rows("ceil", "qw", "j", [1.0] * 2)
               + arm_rows("ceil", "qw", "t", [0.0] * 2) + arm_rows("ceil2", "qw", "t", [1.0])
               + arm_rows("ceil", "gl", "j", [1.0]) + arm_rows("ceil", "gl", "t", [1.0])
               + arm_rows("ceil", "gl", "m", [1.0]))[0]
    sc = Scopes.from_config({"ceiling": {"sources": {
        "qw": {"j": ["anchor"], "t": ["ceil", "ceil2"]}, "gl": {"j": ["ceil"], "t": ["ceil"]}}}})
    [(g, got)] = sc.select("ceiling", v)
    assert g.label == "anchor+ceil+ceil2"
    cells = got.groupby(["model", "arm"])["sweep"].agg(lambda s: sorted(set(s))).to_dict()
    assert cells == {("qw", "j"): ["anchor"], ("qw", "t"): ["ceil", "ceil2"],
                     ("gl", "j"): ["ceil"], ("gl", "t"): ["ceil"]}
    with pytest.raises(ScopeError, match=r"scopes\.ceiling\.sources\.gl\.u: no row of gl on "
                                         r"arm u in sweep 'ceil'"):
        Scopes.from_config({"ceiling": {"sources": {"gl": {"u": ["ceil"]}}}}).check(v)
    with pytest.raises(ScopeError, match=r"config\.scopes\.ceiling: sweeps and sources each "
                                         r"choose the sweeps; name one"):
        Scopes.from_config({"ceiling": {"sweeps": ["ceil"], "sources": {"gl": {"j": ["c"]}}}})


def test_pooled_analyses_filter_the_scenario_before_grouping():
    # One distributed sweep and one single-chunk sweep under the default
    # config: the contract's plain keys, since the single-chunk sweep is never a group.
    rows, checks = frames(
        arm_rows("s5", "m1", "j", [1.0, 0.0, 0.6], headings_carried=5)
        + arm_rows("s5", "m2", "j", [0.0, 0.2, 1.0], headings_carried=0, fill=0.9)
        + arm_rows("s5", "m3", "j", [0.5, 0.5, 0.7], fill=0.2, headings_carried=2)
        + arm_rows("one", "m1", "j", [1.0, 1.0], scenario="single_chunk", k=7,
                   headings_carried=1))
    n = compute_numbers(rows, checks)
    for key in ("icc.value", "headings.r", "fill.r"):
        assert key in n and not any(k.startswith(key + "[") for k in n)
    assert n["headings.n_rows"] == 9  # the single-chunk rows never enter
    # A scope may name another scenario.
    one = compute_numbers(rows, checks, None, Scopes.from_config(
        {"headings": {"scenario": "single_chunk"}}))
    assert one["headings.rows[j]"] == 2


def test_the_config_check_names_a_scope_sweep_the_study_does_not_run(config_schema):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))
    cfg["scopes"] = {"partition": {"sweeps": ["anchor"]}, "ladder": {"models": ["nobody"]}}
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, load_arm_table(RESOURCES), RESOURCES)
    assert "config.scopes.partition.sweeps: 'anchor' is not a sweep of this study" in str(e.value)
    assert "config.scopes.ladder.models: 'nobody' is not run by main" in str(e.value)
    # The new keys are checked by name too.
    cfg["scopes"] = {"partition": {"prefer": ["main", "deep"], "arms": ["j", "q"]},
                     "ceiling": {"sources": {"nobody": {"j": ["main"]}}}}
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, load_arm_table(RESOURCES), RESOURCES)
    assert "config.scopes.partition.prefer: 'deep' is not a sweep of this study" in str(e.value)
    assert "config.scopes.ceiling.sources.nobody.j: sweep 'main' does not run nobody" in str(
        e.value)
    cfg["scopes"] = {"partition": {"prefer": ["main"], "arms": ["j", "zz"]}}
    with pytest.raises(ConfigError, match=r"config\.scopes\.partition\.arms: 'zz' is not "
                                          r"run by main"):
        load_study(cfg, config_schema, load_arm_table(RESOURCES), RESOURCES)
    # The paper's study names only sweeps it runs.
    load_study(PAPER, config_schema, load_arm_table(RESOURCES), RESOURCES)


def test_the_papers_column_names_are_read_as_aliases(tmp_path):
    rows, checks = frames(arm_rows("s", "m1", "j", [1.0, 0.0], headings_carried=3))
    rows = rows.rename(columns={"headings_carried": "carried_fixed_headings",
                                "json_envelope_carried": "carried_json_envelope"})
    write_table(rows, tmp_path / "rows.csv")
    write_table(checks, tmp_path / "checks.csv")
    r, _ = load_evidence(tmp_path, ARMS)
    assert list(r["headings_carried"]) == [3, 3] and r["json_envelope_carried"].dtype == bool
    both = rows.assign(headings_carried=3)
    write_table(both, tmp_path / "rows.csv")
    with pytest.raises(ValueError, match="carried_fixed_headings/headings_carried"):
        load_evidence(tmp_path, ARMS)


CLAIMS = [
    {"key": "n", "value": 620, "kind": "exact", "where": "§4"},
    {"key": "k", "value": 14, "kind": "design", "where": "§4"},
    {"key": "r", "value": 0.61, "kind": "behavioural", "where": "§4.8",
     "interval": {"low": "r_lo", "high": "r_hi", "method": "Fisher z"}},
]


def test_claims_have_kinds_and_a_live_run_is_not_drift_for_a_count():
    live = {"n": 12, "k": 14, "r": 0.2, "r_lo": -0.1, "r_hi": 0.5}
    verdicts = {v.key: v for v in judge_claims(CLAIMS, live, package=False)}
    assert verdicts["n"].verdict == "not checkable here"
    assert verdicts["k"].verdict == "reproduced"
    assert verdicts["r"].verdict == "not reproduced" and verdicts["r"].high == 0.5
    assert claim_mismatches(list(verdicts.values()), "paper.yaml") == []
    inside = {**live, "r_hi": 0.7}
    assert {v.key: v.verdict for v in judge_claims(CLAIMS, inside, False)}["r"] == "reproduced"
    # On the paper's package an exact count is checked, and a wrong one is drift.
    [m] = claim_mismatches(judge_claims(CLAIMS, live, package=True), "paper.yaml")
    assert m.what == "n" and "620" in m.detail


def test_a_finding_sentence_follows_the_numbers():
    # Ceiling halved recalls more rows than j here: the note says so, whatever the paper.
    rows = (arm_rows("c", "m1", "j", [0.0, 0.0, 0.0, 1.0])
            + arm_rows("c", "m1", "t", [1.0, 1.0, 1.0, 0.0]))
    r, c = frames(rows)
    plan = AnalysisPlan.load()
    t = {x.name: x for x in build_tables(r, c, compute_numbers(r, c, plan), plan)}
    notes = " ".join(t["capacity"].notes)
    assert "t recalled a higher share of rows than j (1/4 vs 3/4" in notes
    assert "does not separate them" in notes


def test_new_results_have_keys():
    rows = (arm_rows("p", "granite", "j", [0.0, 0.3, 1.0], headings_carried=0)
            + [row("p", "granite", "j", 3, 10, k=10, headings_carried=5)]
            + arm_rows("p", "granite", "q", [0.0] * 4, fill=0.2))
    for r in rows:
        r["answer"] = "1. 10000\n2. 10001"
    r, c = frames(rows)
    n = compute_numbers(r, c)
    assert n["headings.within_model.mean[granite/0]"] == pytest.approx(1.3 / 3)
    assert n["headings.within_model.n[granite/5]"] == 1
    # q carried 0.2 x 9,600 against j's 0.5 x 9,600 in paired blocks: 60% less text.
    assert n["partition.carried_less[q/j]"] == pytest.approx(0.6)
    # Label-bound and presence grading agree where the answer holds exactly the correct.
    assert n["grader.rows"] == 8 and 0 <= n["grader.agree_rows"] <= 8
    assert n["icc.ci_low"] <= n["icc.value"] <= n["icc.ci_high"]


def test_the_ceiling_fisher_pools_the_models_that_ran_both():
    rows = (arm_rows("anchor", "qwen", "j", [1.0] * 3 + [0.0] * 5)
            + arm_rows("ceiling", "qwen", "t", [0.0] * 4) + arm_rows("ceiling", "glm", "j",
                                                                      [1.0] * 2)
            + arm_rows("ceiling", "glm", "t", [1.0, 0.0]))
    r, c = frames(rows)
    n = compute_numbers(r, c, None, Scopes.from_config(
        {"ceiling": {"sweeps": ["anchor", "ceiling"], "pool": True}}))
    assert (n["ceiling.fisher_recalled[j/t].a"], n["ceiling.fisher_recalled[j/t].n1"]) == (5, 10)
    assert (n["ceiling.fisher_recalled[j/t].b"], n["ceiling.fisher_recalled[j/t].n2"]) == (1, 6)
    assert n["ceiling.recalled[qwen/j]"] == 3 and n["ceiling.n[qwen/j]"] == 8



def test_every_analysis_a_config_may_name_is_read_by_a_table_or_a_section():
    from foldstudy.analysis.numbers import SECTIONS
    from foldstudy.report.titles import TABLES
    from foldstudy.study.scopes import ANALYSES

    read = {a for t in TABLES for a in t.reads} | {a for s in SECTIONS for a in s.reads}
    assert read == set(ANALYSES)


def test_a_reader_reads_only_the_analyses_it_declares():
    from foldstudy.analysis.numbers import section
    from foldstudy.analysis.view import Evidence

    rows, checks = frames(arm_rows("s", "m1", "j", [1.0]))
    ev = Evidence.of(rows, checks, AnalysisPlan.load()).reading(("ladder",))
    assert [g.label for g, _ in ev.groups("ladder")] == ["s"]
    with pytest.raises(KeyError, match="'partition' is read but not declared"):
        ev.groups("partition")

    def _new(ev, out):
        pass

    with pytest.raises(KeyError, match="numbers section _new reads 'nope', not an analysis"):
        section("nope")(_new)
