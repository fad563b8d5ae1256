"""Figures: each renders from paper-scale and thin evidence, with n on every mean."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from foldstudy.analysis.analysis import Analysis
from foldstudy.analysis.numbers import compute_numbers
from foldstudy.analysis.scopes import Scopes
from foldstudy.evidence.load import write_table
from foldstudy.report.figures import make_figures, write_figures
from foldstudy.report.titles import FIGURES

from .support.evidence_rows import arm_rows, frames
from .support.synthetic import SCOPES, synthetic_package

SC = Scopes.from_config(SCOPES)


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.fixture(scope="module")
def figs():
    rows, checks = synthetic_package(620, seed=4)
    an = Analysis.load()
    numbers = compute_numbers(rows, checks, an, SC)
    out = make_figures(rows, numbers, an, SC)
    yield rows, numbers, out
    for f in out.values():
        plt.close(f)


def test_every_figure_is_made(figs):
    _, _, out = figs
    assert tuple(out) == FIGURES


def test_heatmap_carries_n_in_every_measured_cell(figs):
    rows, _, out = figs
    v = rows[rows["valid"] & (rows["scenario"] == "distributed")]
    v = v[v["sweep"] == "anchor"]  # Table 1's scope
    cells = v.groupby(["sweep", "model", "arm"]).size()
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
    an = Analysis.load()
    small = synthetic_package(620, seed=1)
    large = synthetic_package(8000, seed=1)
    h = [make_figures(r, compute_numbers(r, c, an), an)["recall-heatmap"].get_size_inches()[1]
         for r, c in (small, large)]
    plt.close("all")
    assert large[0]["model"].nunique() > 60 and h[1] > 3 * h[0]


def test_thin_evidence_still_renders_and_says_why(tmp_path):
    r, c = frames(arm_rows("s", "m1", "m", [1.0, 1.0]))
    write_table(r, tmp_path / "rows.csv")
    an = Analysis.load()
    (tmp_path / "n.json").write_text("{}")
    paths = write_figures(tmp_path / "rows.csv", tmp_path / "n.json", an, tmp_path / "fig")
    assert sorted(p.name for p in paths) == sorted(f"{n}.{e}" for n in FIGURES
                                                   for e in ("png", "svg"))
    assert all(p.stat().st_size > 1000 for p in paths)
    figs = make_figures(r, {}, an)
    assert any(t.startswith("—") for t in _texts(figs["ladder"]))
    assert any(t.startswith("—") for t in _texts(figs["partition-gap"]))
    plt.close("all")
