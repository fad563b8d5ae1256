"""Arm against arm on a hand-made block of two runs whose carries are known: the
fact-by-fold grid, the paired counts and the survival shares, every expected number
written by hand from the carries below, not computed by the code under test."""

from __future__ import annotations

import io
import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from foldstudy.analysis import stats
from foldstudy.analysis.compare import (
    GRID,
    block_arms,
    carried_to_end,
    compare_pairs,
    compare_tables,
    fact_grid,
    fact_survival,
    pair_label,
    paired_arms,
    why_not_built,
)
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.scopes import Group
from foldstudy.evidence import columns
from foldstudy.report.paths import arm_path, block_path
from foldstudy.report.summary import survival_summary
from foldstudy.report.trace import survival_figure

from ..support import records
from ..support.compare_site import build, run

PORT, ZONE, SHARDS = records.PORT.label, records.ZONE.label, records.SHARDS.label

# Block s/toy/r0: j ran first, q second; four folds, fold i took chunk i - 1, so the port
# is planted at fold 1, the zone at 2, the shards at 3.
#   j: port held at 1-2, gone at 3, back at 4; zone never carried; shards held at 3-4.
#      The answer recalls the port.
#   q: port never carried; zone held at 2-4; shards held at 3, gone at 4.
#      The answer recalls the zone.
J_CARRIES = ["52677", "52677", "19 shards", "19 shards, 52677"]
Q_CARRIES = ["x", "ranir.lasetot.lan", "ranir.lasetot.lan 19 shards", "ranir.lasetot.lan"]
J_ANSWER = "1. primary ingress port: 52677"
Q_ANSWER = "2. DNS zone for the new records: ranir.lasetot.lan"


def block(repeat=0, j=J_CARRIES, q=Q_CARRIES, ja=J_ANSWER, qa=Q_ANSWER, **kw):
    return [records.record(j, answer=ja, arm="j", repeat=repeat, position=0, **kw),
            records.record(q, answer=qa, arm="q", repeat=repeat, position=1)]


def evidence(recs, tmp_path, grading):
    return records.graded_frames(recs, tmp_path, grading)


@pytest.fixture()
def plan():
    return AnalysisPlan.load()


@pytest.fixture()
def grid(tmp_path, grading):
    rows, checks, trace = evidence(block(), tmp_path, grading)
    return fact_grid(trace, checks, rows)


def fates(grid):
    return {(r["arm"], r["label"]): r for r in grid.to_dict("records")}


def test_the_grid_dates_each_fact_per_arm(grid):
    f = fates(grid)

    def line(arm, label):
        r = f[(arm, label)]
        return tuple(None if pd.isna(r[k]) else r[k] for k in (
            "planted_fold", "kept_through", "lost_at", "last_held", "final", "recalled",
            "present"))

    # planted, kept through, lost at, last held, in the final carry, recalled, per fold
    assert line("j", PORT) == (1, 2, 3, 4, True, True, "1101")
    assert line("j", ZONE) == (2, None, 2, None, False, False, "0000")
    assert line("j", SHARDS) == (3, 4, None, 4, True, False, "0011")
    assert line("q", PORT) == (1, None, 1, None, False, False, "0000")
    assert line("q", ZONE) == (2, 4, None, 4, True, True, "0111")
    assert line("q", SHARDS) == (3, 3, 4, 3, False, False, "0010")
    assert len(grid) == 6 and set(grid["valid"]) == {True}
    assert block_arms(grid) == {("s", "toy", 0): ["j", "q"]}  # design order


def test_the_grid_reads_lines_in_any_order_and_only_from_planting_on(tmp_path, grading):
    rows, checks, trace = evidence(block(), tmp_path, grading)
    # j's shards (planted at 3) in j's fold-1 carry by chance: the line shows it, the
    # fate, which starts at planting, does not change
    j_row = rows.loc[rows["arm"] == "j", "row_id"].iloc[0]
    early = (trace["row_id"] == j_row) & (trace["label"] == SHARDS) & (trace["fold"] == 1)
    trace.loc[early, "present"] = True
    # an opaque carry's line and a line of a row not in rows.csv are not in the grid
    opaque = trace.iloc[[0]].assign(row_id="s/toy/r0/native", present=pd.NA)
    stray = trace.iloc[[0]].assign(row_id="elsewhere/r9/j")
    shuffled = pd.concat([trace, opaque, stray]).sample(frac=1, random_state=3)
    got = fates(fact_grid(shuffled, checks.iloc[::-1], rows))
    r = got[("j", SHARDS)]
    assert (r["present"], r["kept_through"], r["last_held"], r["final"]) == ("1011", 4, 4,
                                                                             True)
    assert pd.isna(r["lost_at"])
    assert got[("j", PORT)]["present"] == "1101" and got[("q", SHARDS)]["lost_at"] == 4
    assert len(got) == 6
    # a fact with no line in checks.csv was not recalled
    none = fact_grid(trace, checks.iloc[0:0], rows)
    assert not none["recalled"].any() and len(none) == 6
    # no line at all: the grid's columns, empty
    empty = fact_grid(trace.iloc[0:0], checks, rows)
    assert list(empty.columns) == GRID and empty.empty


def test_the_paired_counts_at_the_final_carry_and_in_the_answer(grid, plan):
    t = paired_arms(grid, compare_pairs(plan), plan)
    assert list(t.columns) == columns.PAIRED_ARMS_TABLE
    assert len(t) == 1  # q–m, j–t, j–p, k–m: no block ran both arms
    r = t.iloc[0].to_dict()
    # final carry: port j only, zone q only, shards j only
    assert (r["sweep"], r["pair"], r["blocks"], r["facts"]) == ("s", "j–q", 1, 3)
    assert (r["both_kept"], r["a_only"], r["b_only"], r["neither"]) == (0, 2, 1, 0)
    assert r["a_kept_share"] == pytest.approx(2 / 3)
    assert r["b_kept_share"] == pytest.approx(1 / 3)
    # one block: the interval is the block's own difference, q's share minus j's
    for k in ("kept_diff", "kept_diff_low", "kept_diff_high"):
        assert r[k] == pytest.approx(-1 / 3)
    # answer: port j only, zone q only, shards neither
    assert (r["both_recalled"], r["a_only_recalled"], r["b_only_recalled"],
            r["neither_recalled"]) == (0, 1, 1, 1)
    assert r["recalled_diff"] == pytest.approx(0.0)


def test_survival_separates_the_first_folds_loss_from_the_loss_over_folds(grid, plan):
    s = fact_survival(grid, plan)
    assert list(s.columns) == columns.FACT_SURVIVAL_TABLE
    by = {(r["arm"], r["k"]): r for r in s.to_dict("records")}
    assert sorted({k for _, k in by}) == [0, 1, 2, 3]  # last fold 4 minus first planting 1
    # facts observable k folds after planting: port (k<=3), zone (k<=2), shards (k<=1)
    assert [by[("j", k)]["facts"] for k in range(4)] == [3, 3, 2, 1]
    # j: port kept through 2 (k=0,1), zone never, shards kept through 4 (k=0,1)
    assert [by[("j", k)]["carried"] for k in range(4)] == [2, 2, 0, 0]
    # q: port never, zone kept through 4 (k=0,1,2), shards only at its planting fold
    assert [by[("q", k)]["carried"] for k in range(4)] == [2, 1, 1, 0]
    assert [by[("q", k)]["share"] for k in range(4)] == pytest.approx([2 / 3, 1 / 3, 1 / 2,
                                                                       0])
    # the loss at the first fold is 1 - share at k=0 (one of three facts, both arms);
    # the loss over folds is what share_of_taken_in shows: j keeps both it took in one
    # fold on, q one of two
    assert [by[("j", k)]["taken_in"] for k in range(4)] == [2, 2, 1, 1]
    assert [by[("j", k)]["share_of_taken_in"] for k in range(4)] == [1, 1, 0, 0]
    assert [by[("q", k)]["taken_in"] for k in range(3)] == [2, 2, 1]
    assert math.isnan(by[("q", 3)]["share_of_taken_in"])
    # survival with runs' ends censoring (product-limit): j 2/3 at k=0; at k=1 both
    # facts at risk kept (2/3); at k=2 only the port is at risk and is lost (0).
    # q: 2/3; at k=1 the shards are lost of two at risk (1/3); at k=2 the zone, the one
    # at risk, is kept (1/3); at k=3 nothing is at risk (nan): it never rises.
    assert [by[("j", k)]["survival"] for k in range(4)] == pytest.approx([2 / 3, 2 / 3, 0,
                                                                          0])
    assert [by[("q", k)]["survival"] for k in range(3)] == pytest.approx([2 / 3, 1 / 3,
                                                                          1 / 3])
    assert math.isnan(by[("q", 3)]["survival"])
    # one block: the band is the share itself
    assert by[("q", 1)]["share_low"] == by[("q", 1)]["share_high"] == pytest.approx(1 / 3)
    assert by[("q", 2)]["survival_low"] == by[("q", 2)]["survival_high"] == pytest.approx(
        1 / 3)
    assert {r["rows"] for r in by.values()} == {1} and {r["blocks"] for r in by.values()} \
        == {1}
    end = carried_to_end(grid, plan).set_index("arm")
    assert end.loc["j", "carried"] == 1 and end.loc["q", "carried"] == 1  # shards; zone
    assert end.loc["j", "facts"] == 3


def test_invalid_rows_stay_on_the_page_but_out_of_the_counts(tmp_path, grading, plan):
    recs = block() + block(repeat=1, catchup_fired=True)  # r1's j is invalid
    rows, checks, trace = evidence(recs, tmp_path, grading)
    grid = fact_grid(trace, checks, rows)
    assert not grid[(grid["repeat"] == 1) & (grid["arm"] == "j")]["valid"].any()
    t = paired_arms(grid, [("j", "q")], plan)
    assert t.iloc[0]["blocks"] == 1 and t.iloc[0]["facts"] == 3
    s = fact_survival(grid, plan)
    assert set(s[s["arm"] == "j"]["rows"]) == {1} and set(s[s["arm"] == "q"]["rows"]) == {2}


def test_the_interval_resamples_blocks_not_facts(tmp_path, grading, plan):
    # r0 as above; r1: j keeps all three to the end, q none, answers empty. The kept-share
    # difference per block is -1/3 (r0) and -1 (r1): any resample of two blocks gives a
    # mean in {-1/3, -2/3, -1}, so the interval's ends are among those.
    full = "52677 ranir.lasetot.lan 19 shards"
    recs = block() + block(repeat=1, j=[full] * 4, q=["x"] * 4, ja="", qa="")
    rows, checks, trace = evidence(recs, tmp_path, grading)
    grid = fact_grid(trace, checks, rows)
    r = paired_arms(grid, [("j", "q")], plan).iloc[0]
    assert (r["blocks"], r["facts"], r["both_kept"], r["a_only"], r["b_only"],
            r["neither"]) == (2, 6, 0, 5, 1, 0)
    assert r["kept_diff"] == pytest.approx((-1 / 3 - 1) / 2)
    allowed = [-1 / 3, -2 / 3, -1]
    assert any(r["kept_diff_low"] == pytest.approx(x) for x in allowed)
    assert any(r["kept_diff_high"] == pytest.approx(x) for x in allowed)
    # survival at k=0, j: 2/3 (r0) and 3/3 (r1): a resample is a mix of whole blocks
    s = fact_survival(grid, plan)
    j0 = s[(s["arm"] == "j") & (s["k"] == 0)].iloc[0]
    assert (j0["facts"], j0["carried"]) == (6, 5)
    assert any(j0["share_low"] == pytest.approx(x) for x in (2 / 3, 5 / 6, 1))
    # seeded: the same numbers again
    again = paired_arms(grid, [("j", "q")], plan).iloc[0]
    assert again["kept_diff_low"] == r["kept_diff_low"]


def test_a_pooled_scope_names_its_sweeps_and_pairs_within_blocks(grid, plan):
    t = paired_arms(grid, [("j", "q")], plan, [Group("s+t", ("s", "t"), None, False)])
    assert t.iloc[0]["sweep"] == "s+t" and t.iloc[0]["facts"] == 3


def test_block_bootstrap_share_draws_whole_blocks():
    carried = np.array([[2.0, 0.0], [3.0, 3.0]])
    facts = np.array([[3.0, 3.0], [3.0, 3.0]])
    low, high = stats.block_bootstrap_share(carried, facts, ["m", "m"], 500, 1)
    assert low[0] == pytest.approx(2 / 3) and high[0] == pytest.approx(1.0)
    assert low[1] == pytest.approx(0.0) and high[1] == pytest.approx(1.0)
    low, _ = stats.block_bootstrap_share(np.zeros((1, 1)), np.zeros((1, 1)), ["m"], 10, 1)
    assert math.isnan(low[0])


def test_pairs_come_from_analysis_yaml_and_a_config_adds_more(plan):
    assert compare_pairs(plan)[:2] == [("j", "q"), ("q", "m")]
    assert compare_pairs(plan, [["j", "q"], ["m", "u"]])[-1] == ("m", "u")
    assert len(compare_pairs(plan, [["j", "q"]])) == len(plan.compare_pairs)
    assert pair_label("j", "q") == "j–q"


def test_evidence_mode_says_why_in_one_line():
    assert why_not_built(True, True) is None
    assert "no fact trace" in why_not_built(False, False)
    assert "\n" not in why_not_built(False, True) and "run records" in why_not_built(
        False, True)


def test_the_survival_figure_draws_a_band_per_arm(grid, plan):
    s = fact_survival(grid, plan)
    fig = survival_figure(s, plan)
    ax = fig.axes[0]
    labels = [x.get_label() for x in ax.get_lines() if not x.get_label().startswith("_")]
    assert [x.split()[0] for x in labels] == ["j", "q"]
    assert len(ax.collections) >= 2  # one band per arm
    plt.close(fig)
    empty = survival_figure(None, plan)
    assert "no fact trace" in empty.axes[0].texts[0].get_text()
    plt.close(empty)


# ---------------------------------------------------------------------- the pages

SCRIPT = "<script>document.title='PWNED';window.pwned=1</script>"


@pytest.fixture()
def site(tmp_path, grading):
    recs = [run(J_CARRIES, "j", 0, J_ANSWER + f" {SCRIPT}"),
            run([c + f" {SCRIPT}" for c in Q_CARRIES], "q", 1, Q_ANSWER),
            run(["52677"] * 4, "j", 0, "", model="toy2"),
            run(Q_CARRIES, "q", 1, Q_ANSWER, model="toy2")]
    return build(tmp_path, recs, grading)


def column(page: str, fold: int, title_start: str) -> str:
    row = page.split(f'id="r0-fold-{fold}"')[1].split("</tr>")[0]
    cells = re.findall(r'<td data-column="([^"]*)">(.*?)</td>', row, re.S)
    return next(body for t, body in cells if t.startswith(title_start))


def test_a_block_page_shows_the_arms_side_by_side_with_the_grid_on_top(site):
    page = (site / "compare" / block_path("s", "toy", 0)).read_text()
    mark = '<mark class="present" title="primary ingress port">52677</mark>'
    assert mark in column(page, 1, "j ") and mark not in column(page, 1, "q ")
    assert "lost: primary ingress port (never taken in)" in column(page, 1, "q ")
    assert "lost: primary ingress port (dropped)" in column(page, 3, "j ")
    grid = page.split("<h3>Folds</h3>")[0]
    assert "kept through fold 2; lost at fold 3; back at fold 4 · ✓ recalled" in grid
    assert "never carried (lost at fold 1) · ✗ missed" in grid
    assert "kept through fold 4 · ✓ recalled" in grid  # q's zone
    # the strip: fold 1 of j, port held, zone and shards not planted yet
    strip = column(page, 1, "j ").split('<div class="strip">')[1].split("</div>")[0]
    assert re.findall(r'class="(\w+)"', strip) == ["held", "unplanted", "unplanted"]
    # design order and the viewer's pages one click away
    heads = re.findall(r'<th data-column="([^"]*)">', page)
    assert [h.split()[0] for h in heads] == ["j", "q"]
    assert 'href="../../../viewer/s/toy/r0/j.html"' in page
    assert "<script" not in page and "&lt;script&gt;document.title=" in page


def test_a_long_carry_collapses_to_its_first_lines(tmp_path, grading):
    long = "\n".join(f"line {i}" for i in range(12)) + "\nport 52677"
    out = build(tmp_path, [run([long] * 4, "j", 0), run(["x"] * 4, "q", 1)], grading)
    cell = column((out / "compare/s/toy/r0.html").read_text(), 1, "j ")
    preview, full = cell.split("<details>")
    assert "line 3" in preview and "line 4" not in preview
    assert "the full carry (13 lines" in full and "title=\"primary ingress port\"" in full


def test_the_two_model_page_and_the_index(site):
    page = (site / "compare" / arm_path("s", "q")).read_text()
    assert [h.split()[0] for h in re.findall(r'<th data-column="([^"]*)">', page)] == [
        "toy", "toy2"]
    assert 'href="../../viewer/s/toy2/r0/q.html"' in page
    index = (site / "compare/index.html").read_text()
    for href in ("s/toy/r0.html", "s/toy2/r0.html", "s/arm-j.html", "s/arm-q.html"):
        assert f'href="{href}"' in index


def test_summary_lines_name_the_share_carried_to_the_end(grid, plan):
    lines = survival_summary(carried_to_end(grid, plan), block_path("s", "toy", 0))
    assert "- s j: 1/3 = 0.333 (0.333–0.333)" in lines
    assert lines[-1] == "Arm against arm, fold by fold: results/compare/s/toy/r0.html"


def test_a_second_build_writes_the_same_bytes(tmp_path, grading, plan):
    recs = block()
    a, b = build(tmp_path / "a", recs, grading), build(tmp_path / "b", recs, grading)
    pages = sorted(p.relative_to(a) for p in (a / "compare").rglob("*.html"))
    assert len(pages) == 2  # the block's page and the index (one model: no model page)
    assert all((a / p).read_bytes() == (b / p).read_bytes() for p in pages)
    rows, checks, trace = evidence(recs, tmp_path, grading)
    paired, survival, _ = compare_tables(trace, checks, rows, plan)
    svgs = []
    for _ in range(2):
        fig = survival_figure(survival, plan)
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(fig)
        svgs.append(buf.getvalue())
    assert svgs[0] == svgs[1] and len(paired) == 1


PROXY = {"native_via": "proxy", "base_url": "https://user:secret@gw.example:8443/v1?key=abc"}


def test_a_proxy_models_native_arm_is_titled_by_its_endpoint_on_every_page(tmp_path,
                                                                             grading):
    """The comparison pages title a native arm by its model's native words: the block
    page of a model whose config says native_via: proxy, and the arm's page and the index
    over it alone, say "compaction by <host:port>"; over models whose words differ, each
    model's endpoint; a model on the provider's API, the provider's compaction."""
    from foldstudy.carriers.native import native_words

    plan = AnalysisPlan.load().with_native_words({"px": native_words(PROXY)})
    recs = [run(J_CARRIES, "j", 0, J_ANSWER, model=m) for m in ("px", "pv")] + [
        run(Q_CARRIES, "native", 1, Q_ANSWER, model=m) for m in ("px", "pv")]
    site = build(tmp_path, recs, grading, plan)
    proxy_block = (site / "compare" / block_path("s", "px", 0)).read_text()
    assert "native compaction by gw.example:8443" in proxy_block
    provider_block = (site / "compare" / block_path("s", "pv", 0)).read_text()
    assert "native the provider&#39;s compaction" in provider_block
    arm_page = (site / "compare" / arm_path("s", "native")).read_text()
    assert "arm native compaction by each model&#39;s endpoint: model against model" in arm_page
    for page in (proxy_block, arm_page, (site / "compare/index.html").read_text()):
        assert not [w for w in ("provider&#39;s compaction", "secret", "/v1", "key=")
                    if w in page]


def test_the_survival_legend_titles_a_proxys_native_arm_by_its_endpoint(grid, plan):
    from foldstudy.carriers.native import native_words

    s = fact_survival(grid, plan).replace({"arm": {"q": "native"}})
    sweep = str(s["sweep"].iloc[0])
    proxy = plan.with_native_words({"px": native_words(PROXY)})
    for models, title in (({(sweep, "native"): ("px",)}, "compaction by gw.example:8443"),
                          ({(sweep, "native"): ("pv",)}, "the provider's compaction"),
                          (None, "the provider's compaction")):
        fig = survival_figure(s, proxy, models=models)
        labels = [x.get_label() for x in fig.axes[0].get_lines()
                  if x.get_label().startswith("native ")]
        assert len(labels) == 1 and labels[0].startswith(f"native {title} (")
        plt.close(fig)
