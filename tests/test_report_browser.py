"""`snakemake --report` in headless Chromium: every figure image loads, every table is
listed. Built from a synthetic evidence package (evidence mode: no model, no run job)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from foldstudy.evidence import columns
from foldstudy.evidence.load import write_table
from foldstudy.report.titles import TABLES

from .support import browser, procs
from .support.synthetic import synthetic_package

pytestmark = [pytest.mark.browser, pytest.mark.workflow]

# Drives the report's own app from a same-origin page: shows each image result as the
# report does (its "img" view) and reads naturalWidth, then opens the Tables category.
PROBE = """<!DOCTYPE html><html><body><pre id="out">pending</pre>
<iframe id="r" src="report.html" style="width:1400px;height:900px"></iframe>
<script>
const sleep = ms => new Promise(r => setTimeout(r, ms));
document.getElementById('r').onload = async () => {
  const w = document.getElementById('r').contentWindow;
  await sleep(1000);
  const app = w.eval('app'), out = {images: {}, tables: []};
  for (const [path, e] of Object.entries(w.results)) {
    if (!e.mime_type.startsWith('image/')) continue;
    app.setView({content: 'img', contentPath: e.data_uri});
    await sleep(500);
    const img = w.document.querySelector('img[src^="data:image"]');
    out.images[path] = img && img.complete ? img.naturalWidth : -1;
  }
  app.showCategory('Tables');
  await sleep(500);
  out.navbar = w.document.body.innerText;
  out.tables = Object.values(w.categories['Tables']).flat();
  document.getElementById('out').textContent = JSON.stringify(out);
};
</script></body></html>"""


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return procs.snakemake(workdir, *args, timeout=900)


def synthetic_trace(checks: pd.DataFrame, n_folds: int = 5) -> pd.DataFrame:
    """Five folds per check: planted at a fold by label, carried from then on when the
    final carry held it."""
    labels = sorted(set(checks["label"]))
    out = []
    for c in checks[["row_id", "label", "in_carrier"]].to_dict("records"):
        planted = labels.index(c["label"]) % n_folds + 1
        for f in range(1, n_folds + 1):
            out.append({"row_id": c["row_id"], "label": c["label"], "fold": f,
                        "present": bool(c["in_carrier"]) and f >= planted,
                        "planted_fold": planted})
    return pd.DataFrame(out, columns=columns.TRACE)


def test_the_report_shows_every_figure_and_table_in_chromium(tmp_path):
    browser.chromium()  # skip (or fail in CI) before the slow part when it is missing
    package = tmp_path / "package"
    package.mkdir()
    rows, checks = synthetic_package(120, seed=3)
    write_table(rows, package / "rows.csv")
    write_table(checks, package / "checks.csv")
    write_table(synthetic_trace(checks), package / "trace.csv")
    work = tmp_path / "work"
    work.mkdir()
    p = snakemake(work, "-c2", "results/tables", "--config", f"evidence={package}")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    p = snakemake(work, "--report", "results/report.html", "--config", f"evidence={package}",
                  "--", "results/tables")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (work / "results/probe.html").write_text(PROBE, encoding="utf-8")
    with browser.serve(work / "results") as url:
        dom = browser.dump_dom(url + "probe.html", budget_ms=60_000)
        browser.screenshot(url + "report.html", tmp_path / "report.png")
    raw = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S).group(1)
    assert raw != "pending", "the probe never finished"
    out = json.loads(raw.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                     .replace("&gt;", ">"))
    images = out["images"]
    assert "results/figures/fact-trace.png" in images and len(images) >= 6
    assert all(w > 0 for w in images.values()), images
    expected = {f"results/tables/{t.name}.csv" for t in TABLES} | {
        "results/trace/fact-losses.csv"}
    assert expected <= set(out["tables"])
    for name in [*(t.name for t in TABLES), "fact-losses"]:
        assert name in out["navbar"], name
