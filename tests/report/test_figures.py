"""Figures: each renders from paper-scale and thin evidence, with n on every mean; each is
declared once (report/titles.FIGURES), and the rule's outputs and the report's captions
follow from that entry."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from foldstudy.analysis.numbers import compute_numbers
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.scopes import Scopes
from foldstudy.evidence.load import write_table
from foldstudy.report import captions, figures, titles
from foldstudy.report.figures import make_figures, write_figures
from foldstudy.report.titles import FigureEntry, drawn_by

from ..support.evidence_rows import arm_rows, frames
from ..support.synthetic import SCOPES, synthetic_package

SC = Scopes.from_config(SCOPES)


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.fixture(scope="module")
def figs():
    rows, checks = synthetic_package(620, seed=4)
    plan = AnalysisPlan.load()
    numbers = compute_numbers(rows, checks, plan, SC)
    out = make_figures(rows, numbers, plan, SC)
    yield rows, numbers, out
    for f in out.values():
        plt.close(f)


def test_every_figure_is_made(figs):
    _, _, out = figs
    assert tuple(out) == tuple(f.name for f in drawn_by())


def test_heatmap_carries_n_in_every_measured_cell(figs):
    rows, _, out = figs
    valid = rows[rows["valid"] & (rows["scenario"] == "distributed")]
    valid = valid[valid["sweep"] == "anchor"]  # Table 1's scope
    cells = valid.groupby(["sweep", "model", "arm"]).size()
    texts = [t for t in _texts(out["recall-heatmap"]) if "n=" in t]
    assert len(texts) == len(cells)
    assert sorted(int(t.split("n=")[1]) for t in texts) == sorted(cells.tolist())


def test_ladder_and_headings_read_numbers(figs):
    _, numbers, out = figs
    lad = " ".join(_texts(out["ladder"]))
    assert f"{numbers['ladder.mean[q]']:.3f}" in lad
    assert f"{numbers['ladder.effect.diff[q/j]']:+.3f}" in lad
    assert f"r = {numbers['headings.r']:+.2f}" in out["headings-vs-recall"].axes[0].get_title()


def test_heatmap_grows_with_the_number_of_models():
    """Its drawer alone (it reads the rows, not the numbers): computing every number and
    drawing every figure of an 8,000-row package took 51 s of a loaded suite."""
    from foldstudy.report.figures import recall_heatmap

    plan = AnalysisPlan.load()
    small = synthetic_package(620, seed=1)
    large = synthetic_package(8000, seed=1)
    h = [recall_heatmap(r, {}, plan).get_size_inches()[1] for r, _ in (small, large)]
    plt.close("all")
    assert large[0]["model"].nunique() > 60 and h[1] > 3 * h[0]


def test_thin_evidence_still_renders_and_says_why(tmp_path):
    r, c = frames(arm_rows("s", "m1", "m", [1.0, 1.0]))
    write_table(r, tmp_path / "rows.csv")
    plan = AnalysisPlan.load()
    (tmp_path / "n.json").write_text("{}")
    paths = write_figures(tmp_path / "rows.csv", tmp_path / "n.json", plan, tmp_path / "fig")
    assert sorted(p.name for p in paths) == sorted(f"{f.name}.{e}" for f in drawn_by()
                                                   for e in ("png", "svg"))
    assert all(p.stat().st_size > 1000 for p in paths)
    figs = make_figures(r, {}, plan)
    assert any(t.startswith("—") for t in _texts(figs["ladder"]))
    assert any(t.startswith("—") for t in _texts(figs["partition-gap"]))
    plt.close("all")


# ------------------------------------------------------------------- one entry per figure
def test_the_report_captions_are_the_registrys():
    """workflow/report/figure-*.rst are generated from report/titles.FIGURES: a caption
    edited in one place only, or left behind by a figure no longer declared, fails here."""
    assert captions.stale() == [], (
        "stale figure captions: run .venv/bin/python -m foldstudy.report.captions")


def test_a_stale_or_orphan_caption_file_is_found(tmp_path):
    captions.write(tmp_path)
    assert captions.stale(tmp_path) == []
    (tmp_path / "figure-ladder.rst").write_text("edited by hand\n")
    (tmp_path / "figure-gone.rst").write_text("a figure no longer declared\n")
    assert captions.stale(tmp_path) == ["figure-gone.rst", "figure-ladder.rst"]
    captions.write(tmp_path)
    assert captions.stale(tmp_path) == [] and not (tmp_path / "figure-gone.rst").exists()


def test_figures_of_other_rules_are_declared_but_drawn_there():
    """The fact trace (rule trace) and the decision's forest (rule decision_page) have
    their entries and captions here; rule figures does not draw them."""
    assert {f.name: f.rule for f in titles.FIGURES if f.rule != "figures"} == {
        "fact-trace": "trace", "decision": "decision_page"}
    assert not {"fact-trace", "decision"} & {f.name for f in drawn_by()}
    for name in ("fact-trace", "decision"):
        assert f"figure-{name}.rst" in captions.rendered()


def test_a_figure_without_a_drawer_or_a_drawer_without_a_figure_fails_naming_it():
    extra = FigureEntry("arm-count", "Rows per arm", "Rows per arm.")
    with pytest.raises(LookupError, match=r"figure arm-count \(no arm_count\)"):
        figures._bind((*drawn_by(), extra), figures.DRAWERS)
    with pytest.raises(LookupError, match="drawer ladder has no entry"):
        figures._bind(tuple(f for f in drawn_by() if f.name != "ladder"), figures.DRAWERS)
    with pytest.raises(ValueError, match="figures declared twice.*: ladder"):
        titles._check((titles.figure("ladder"), titles.figure("ladder")), "figure")
    with pytest.raises(LookupError, match="no figure 'nope'.*recall-heatmap"):
        titles.figure("nope")


ARM_COUNT = FigureEntry("arm-count", "Rows per arm",
                        "Rows per arm, valid or not: a figure declared by a test.",
                        all_arms=True)


def arm_count(rows, numbers, plan, sc):
    """A drawer as report/figures.py writes one: the rows its entry reads, in, a figure out."""
    fig, ax = plt.subplots()
    counts = rows["arm"].value_counts().sort_index()
    ax.bar(counts.index, counts.to_numpy())
    return fig


@pytest.fixture
def one_more_figure(monkeypatch):
    """A figure added as a maintainer adds one: one entry and its drawer, nothing else."""
    monkeypatch.setattr(titles, "FIGURES", (*titles.FIGURES, ARM_COUNT))
    monkeypatch.setattr(figures, "DRAWERS", {**figures.DRAWERS, "arm_count": arm_count})


def test_a_figure_added_as_one_entry_is_drawn_written_and_captioned(one_more_figure,
                                                                     tmp_path):
    r, _ = frames(arm_rows("s", "m1", "m", [1.0, 0.0]))
    write_table(r, tmp_path / "rows.csv")
    (tmp_path / "n.json").write_text("{}")
    paths = write_figures(tmp_path / "rows.csv", tmp_path / "n.json", AnalysisPlan.load(),
                          tmp_path / "fig")
    plt.close("all")
    assert {"arm-count.png", "arm-count.svg"} <= {p.name for p in paths}
    assert captions.rendered()["figure-arm-count.rst"] == (
        "Rows per arm, valid or not: a figure declared by a test.\n")
    captions.write(tmp_path)
    assert (tmp_path / "figure-arm-count.rst").is_file()


@pytest.mark.workflow
def test_a_figure_added_as_one_entry_is_an_output_of_rule_figures(one_more_figure,
                                                                   monkeypatch, tmp_path):
    """The Snakefile, loaded in this process, reads the patched registry: rule figures
    then declares the new PNG, in the report under Figures with its caption file, and its
    SVG, with no line of workflow/rules/ touched."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import OutputSettings, ResourceSettings

    from foldstudy.study.session_cache import CACHE_ENV

    monkeypatch.chdir(captions.ROOT)
    # the Snakefile names a session cache for this process when none is set: set one for
    # this test alone, so no later test of this worker reads a cache it never asked for
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "session-cache"))
    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(resource_settings=ResourceSettings(),
                          snakefile=captions.ROOT / "Snakefile")
        rule = wf._workflow.get_rule("figures")
        outputs = {str(f): f.flags.get("report") for f in rule.output}
    assert "results/figures/arm-count.svg" in outputs
    flag = outputs["results/figures/arm-count.png"]
    assert flag.category == "Figures"
    assert str(flag.caption).endswith("workflow/rules/../report/figure-arm-count.rst")
