"""`snakemake --report` in headless Chromium: every figure image loads, every table is
listed. Built from a synthetic evidence package (evidence mode: no model, no run job)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from foldstudy.report.titles import TABLES

from ..support import browser

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


def test_the_report_shows_every_figure_and_table_in_chromium(evidence_build, tmp_path):
    """The session's evidence-mode build (conftest.evidence_build: a package with its fact
    trace, rebuilt with its report), served from a copy."""
    work = tmp_path / "work"
    shutil.copytree(evidence_build / "results", work / "results")
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
