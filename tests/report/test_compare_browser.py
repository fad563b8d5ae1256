"""The comparison pages in headless Chromium, built from hand-made run records:
a planted value is highlighted in the column of the arm that carried it, a reply holding
<script> stays text (with a control page proving the check catches one that runs), the
page fits a 1280-pixel window for two and three arms, and every link resolves."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from foldstudy.report.compare import block_path

from ..support import browser
from ..support.compare_site import build, run

pytestmark = pytest.mark.browser

SCRIPT = "<script>document.title='PWNED';window.pwned=1</script>"
# A carry that would widen a careless table: long lines, and a token with no break.
WIDE = ("## Decisions\n" + "\n".join(f"- decision {i}: keep the port 52677 open for the "
                                     "ingress, and write it down every fold" for i in range(9))
        + "\n" + "x" * 400)

# Loads a page in a 1280-px-wide frame (same origin) and reports its width, and each
# highlighted value with the column and fold row it stands in.
PROBE = """<!DOCTYPE html><html><body style="margin:0"><pre id="out">pending</pre>
<iframe id="f" src="%s" style="width:1280px;height:900px;border:0"></iframe>
<script>
document.getElementById('f').onload = () => {
  const d = document.getElementById('f').contentDocument;
  const marks = [...d.querySelectorAll('table.side mark.present')].map(m => {
    const td = m.closest('td'), tr = m.closest('tr');
    return {text: m.textContent, fact: m.title, column: td.dataset.column, row: tr.id};
  });
  document.getElementById('out').textContent = JSON.stringify({
    scroll: d.documentElement.scrollWidth, client: d.documentElement.clientWidth,
    marks: marks});
};
</script></body></html>"""


def probe(results: Path, page: str) -> dict:
    (results / "probe.html").write_text(PROBE % page, encoding="utf-8")
    with browser.serve(results) as url:
        dom = browser.dump_dom(url + "probe.html")
    raw = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S).group(1)
    assert raw != "pending", "the probe never finished"
    return json.loads(html.unescape(raw))


@pytest.fixture()
def two(tmp_path, grading):
    """One block of two arms: j carries the port at folds 1-2, q never does; q's replies
    and answer hold a <script>."""
    browser.chromium()
    recs = [run(["52677", "52677", "19 shards", "19 shards"], "j", 0,
                  "1. primary ingress port: 52677"),
            run([f"x {SCRIPT}", "ranir.lasetot.lan", "ranir.lasetot.lan",
                   WIDE.replace("52677", "the port")], "q", 1,
                  f"2. DNS zone for the new records: ranir.lasetot.lan {SCRIPT}")]
    return build(tmp_path, recs, grading)


@pytest.fixture()
def three(tmp_path, grading):
    browser.chromium()
    recs = [run([WIDE] * 4, "j", 0), run(["ranir.lasetot.lan " + "y" * 300] * 4, "q", 1),
            run([WIDE.replace("\n", " ")] * 4, "m", 2, "1. primary ingress port: 52677")]
    return build(tmp_path, recs, grading)


def test_a_planted_value_is_highlighted_in_the_column_of_the_arm_that_carried_it(two):
    out = probe(two, "compare/" + block_path("s", "toy", 0))
    port = [m for m in out["marks"] if m["fact"] == "primary ingress port"]
    assert {(m["column"].split()[0], m["row"]) for m in port} == {("j", "r0-fold-1"),
                                                                    ("j", "r0-fold-2")}
    assert all(m["text"] == "52677" for m in port)
    zone = {(m["column"].split()[0], m["row"]) for m in out["marks"]
            if m["fact"] == "DNS zone for the new records"}
    assert ("q", "r0-fold-2") in zone and not any(c == "j" for c, _ in zone)


def test_a_reply_holding_a_script_stays_text(two, tmp_path):
    page = "compare/" + block_path("s", "toy", 0)
    # negative control: the same script, unescaped, does run under this harness
    (two / "control.html").write_text(f"<title>t</title><pre>{SCRIPT}</pre>")
    with browser.serve(two) as url:
        assert "<title>PWNED</title>" in browser.dump_dom(url + "control.html")
        dom = browser.dump_dom(url + page)
        shot = browser.screenshot(url + page, tmp_path / "compare.png", size="1280,1400")
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert title == "s · toy · repeat 0: arm against arm"  # the planted script never ran
    assert "&lt;script&gt;document.title='PWNED'" in dom  # shown as text
    assert "<script" not in dom.split("<body>", 1)[1]
    assert shot.stat().st_size > 10_000


@pytest.mark.parametrize("arms", ["two", "three"])
def test_the_page_fits_a_1280_pixel_window(arms, request):
    results = request.getfixturevalue(arms)
    out = probe(results, "compare/" + block_path("s", "toy", 0))
    assert out["client"] == 1280
    assert out["scroll"] <= out["client"], out


def crawl(root: Path, start: str) -> set[str]:
    """From `start`, every comparison and viewer page's every link names a file under
    root that exists (and an anchor the target holds), as Chromium read the DOM; the
    pages seen."""
    seen, todo = set(), [start]
    with browser.serve(root) as url:
        while todo:
            page = todo.pop()
            if page in seen:
                continue
            seen.add(page)
            dom = browser.dump_dom(url + page)
            for href in re.findall(r'href="([^"]+)"', dom):
                target = urlparse(urljoin(url + page, html.unescape(href)))
                path = target.path.lstrip("/") or "index.html"
                assert (root / path).is_file(), f"{page}: {href} -> {path}"
                if target.fragment:
                    assert f'id="{target.fragment}"' in (root / path).read_text(), href
                if path.startswith(("compare/", "viewer/")):
                    todo.append(path)
    return seen


def test_every_link_resolves(two):
    seen = crawl(two, "compare/index.html")
    assert {"compare/index.html", "compare/s/toy/r0.html", "viewer/s/toy/r0/j.html"} <= seen


def test_the_viewer_links_each_run_to_its_blocks_comparison(two):
    """Linked from the viewer's index and from every run page."""
    seen = crawl(two, "viewer/index.html")
    assert {"viewer/s/toy/r0/j.html", "compare/s/toy/r0.html", "compare/index.html"} <= seen
    page = (two / "viewer/s/toy/r0/q.html").read_text()
    assert 'href="../../../../compare/s/toy/r0.html"' in page


@pytest.mark.workflow
def test_a_real_studys_first_block_page_loads_and_every_link_resolves(tiny_study):
    """The tiny study (the real model, arms j and q: the test suite's stand-in for the
    default study) run by the workflow: its first block's page loads in Chromium, every
    link from it resolves (the viewer's run pages included), and a screenshot is kept
    under results/compare/ as the README's is."""
    browser.chromium()
    results = tiny_study / "results"
    first = "compare/" + block_path("tiny", "smollm2-135m", 0)
    seen = crawl(results, first)
    assert first in seen and "compare/index.html" in seen
    with browser.serve(results) as url:
        shot = browser.screenshot(url + first, results / "compare/screenshot.png",
                                  size="1280,1500")
    assert shot.stat().st_size > 10_000
