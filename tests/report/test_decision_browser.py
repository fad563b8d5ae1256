"""The decision's page in headless Chromium: results/decision.html
shows the forest plot (its image loads) and every card with its contrasts; a string a
user typed (here a model id in the price basis) holding <script> stays text. Built from
hand-made cards through the page's own functions, as the rule builds it."""

from __future__ import annotations

import html
import json
import re
from types import SimpleNamespace

import pytest

from foldstudy.analysis.decision import CardInputs, cards
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.analysis.verdict import Price
from foldstudy.report.decision import decision_page_stage, json_safe

from ..conftest import ROOT
from ..support import browser
from ..support.evidence_rows import arm_rows, frames

pytestmark = pytest.mark.browser

SCRIPT = "<script>document.title='PWNED';window.pwned=1</script>"
PROBE = """<!DOCTYPE html><html><body style="margin:0"><pre id="out">pending</pre>
<iframe id="f" src="decision.html" style="width:1280px;height:900px;border:0"></iframe>
<script>
document.getElementById('f').onload = () => {
  const w = document.getElementById('f').contentWindow, d = w.document;
  const img = d.querySelector('figure.forest img');
  document.getElementById('out').textContent = JSON.stringify({
    image: img && img.complete ? img.naturalWidth : -1,
    cards: [...d.querySelectorAll('section.card h2')].map(h => h.textContent),
    rows: d.querySelectorAll('table.contrasts tr').length,
    strong: [...d.querySelectorAll('table.contrasts strong')].map(s => s.textContent),
    links: [...d.querySelectorAll('p.carrier a')].map(a => a.getAttribute('href')),
    pwned: w.pwned === 1 || d.title === 'PWNED', text: d.body.innerText});
};
</script></body></html>"""


def _doc() -> dict:
    cells = {"wins": ([0.2] * 8, [0.9] * 8), "same": ([0.5] * 8, [0.5] * 8),
             "lost": ([0.0] * 8, [0.0] * 8),
             "close": ([0.5] * 8, [0.3, 0.7, 0.6, 0.4, 0.8, 0.2, 0.5, 0.7])}
    rows = [r for model, (j, m) in cells.items() for arm, recalls in (("j", j), ("m", m))
            for r in arm_rows("s", model, arm, recalls, k=10)]
    rows_df, checks = frames(rows)
    ci = CardInputs(margin=0.10, decide_pair=("j", "m"),
                      price=lambda s, m, a: Price(calls=6, usd=0.25),
                      price_basis=lambda m: f"listed prices of {m}{SCRIPT}")
    made = cards(rows_df, checks, PLAN, ci)
    return json.loads(json.dumps(json_safe({"margin": 0.10, "family": "sweep", "alpha": PLAN.alpha,
                                            "cards": [c.to_dict() for c in made]})))


PLAN = AnalysisPlan.load()


def test_the_decision_page_shows_the_forest_and_the_cards(tmp_path):
    browser.chromium()
    results = tmp_path / "results"
    results.mkdir()
    (results / "decision.json").write_text(json.dumps(_doc()))
    out = SimpleNamespace(html=str(results / "decision.html"),
                          png=str(results / "figures/decision.png"),
                          svg=str(results / "figures/decision.svg"))
    inp = SimpleNamespace(decision=str(results / "decision.json"),
                          analysis=str(ROOT / "resources/analysis.yaml"),
                          arms_yaml=str(ROOT / "resources/arms.yaml"),
                          template=str(ROOT / "resources/templates/decision.html.j2"))
    decision_page_stage(inp, out, SimpleNamespace(links=True))
    assert (results / "figures/decision.svg").read_text().count("equivalent") >= 1
    (results / "probe.html").write_text(PROBE, encoding="utf-8")
    with browser.serve(results) as url:
        dom = browser.dump_dom(url + "probe.html")
    raw = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S).group(1)
    assert raw != "pending", "the probe never finished"
    got = json.loads(html.unescape(raw))
    assert got["image"] > 0 and not got["pwned"]
    assert got["cards"] == ["close in sweep s (16 valid rows)", "lost in sweep s (16 valid rows)",
                            "same in sweep s (16 valid rows)", "wins in sweep s (16 valid rows)"]
    assert got["rows"] == 3 * 2  # a table (header, the pair) per model compared
    assert "m better" in got["strong"] and "equivalent within ±0.1" in got["strong"]
    assert "undecided" in got["strong"] and "repeats would decide it" in got["text"]
    assert "every arm lost every fact" in got["text"] and "family of 3" in got["text"]
    assert SCRIPT in got["text"]  # the typed text shown as text, never run
    # each decided card links its carrier folder (rule carriers writes it), no other
    assert got["links"] == ["decision/s/same/carrier/README.md",
                            "decision/s/wins/carrier/README.md"]
