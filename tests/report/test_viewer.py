"""The fold viewer on run records built by hand: the chain, the highlights, the escaping,
and (marked browser) the pages in headless Chromium."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

from foldstudy.evidence import columns
from foldstudy.evidence.load import write_table
from foldstudy.grade.grader import StockSignature
from foldstudy.grade.rows import grade_record
from foldstudy.io import load_yaml, write_json
from foldstudy.report.viewer import build_viewer, page_path, run_page, segments

from ..conftest import RESOURCES
from ..support import browser
from ..support.records import PORT, arm_spec, fixture, not_run, record

SCRIPT = "<script>document.title='PWNED';window.pwned=1</script>"
IMG = '<img src=x onerror="document.title=\'PWNED-IMG\'">'
HEADINGS = load_yaml(RESOURCES / "arms.yaml")["fixed_headings"]


@pytest.fixture()
def site(tmp_path, grading):
    """A viewer over three runs: one with a <script> planted in its replies and answer."""
    fx = fixture()
    hostile = record([f"port 52677 {SCRIPT}", f"52677 ranir.lasetot.lan {IMG}",
                        "ranir.lasetot.lan", "ranir.lasetot.lan 19 shards"],
                       answer=f"1. primary ingress port: 52677 {SCRIPT}\n"
                              "2. DNS zone for the new records: unknown")
    plain = record(["52677", "52677", "x", "x"], repeat=1, answer="1. primary ingress port: 1")
    recs = [hostile, plain, not_run()]
    stock = StockSignature.from_dict(grading["stock_signature"])
    rows, checks = [], []
    for i, rec in enumerate(recs):
        write_json(rec, tmp_path / f"runs/{i}.json")
        row, c, _ = grade_record(rec, fx, grading["abstention_markers"], stock, [])
        rows.append(row)
        checks += c
    write_json(fx.to_dict(), tmp_path / "fixtures/s/fixture.json")
    write_table(pd.DataFrame(rows, columns=columns.ROWS), tmp_path / "rows.csv")
    write_table(pd.DataFrame(checks, columns=columns.CHECKS), tmp_path / "checks.csv")
    out = tmp_path / "viewer"
    runs = [{k: rec[k] for k in ("sweep", "model", "repeat", "arm")}
            | {"path": str(tmp_path / f"runs/{i}.json")} for i, rec in enumerate(recs)]
    build_viewer(runs,
                 {"s": str(tmp_path / "fixtures/s/fixture.json")}, str(tmp_path / "rows.csv"),
                 str(tmp_path / "checks.csv"), RESOURCES / "templates", out, HEADINGS)
    return out, hostile


def test_model_output_is_escaped_never_markup(site):
    out, hostile = site
    page = (out / page_path(hostile)).read_text()
    assert "<script" not in page.lower() and "onerror=" not in page.replace("onerror=&#34;", "")
    assert html.escape(SCRIPT, quote=True) in page or "&lt;script&gt;" in page
    assert "&lt;img src=x onerror" in page


def test_every_fold_is_shown_with_its_values_present_or_lost(site):
    out, hostile = site
    page = (out / page_path(hostile)).read_text()
    assert [int(n) for n in re.findall(r'id="fold-(\d+)"', page)] == [1, 2, 3, 4]
    fold3 = page.split('id="fold-3"')[1].split('id="fold-4"')[0]
    assert "primary ingress port: dropped" in fold3  # carried at 1-2, gone at 3
    assert '<mark class="present" title="DNS zone for the new records">' in fold3
    assert "shard count of the event store: never taken in" in fold3
    recall = page.split("<h2>Recall</h2>")[1]
    assert '<mark class="correct" title="primary ingress port">52677</mark>' in recall
    assert "✓ correct" in recall and "✗ missed" in recall
    index = (out / "index.html").read_text()
    assert all(f'href="{p}"' in index for p in ("s/toy/r0/m.html", "s/toy/r1/m.html",
                                                 "s/toy/r0/q.html"))
    assert "Not run: schema_unsupported" in (out / "s/toy/r0/q.html").read_text()


def test_a_folds_headings_are_counted_from_its_carry():
    # as folds.csv counts them (grade/rows.py); a count an older record froze is not read
    rec = record(["Constraints\n52677", "## Decisions\nIdentifiers: 52677"])
    rec["folds"][0]["headings_carried"] = 5
    page = run_page(rec, fixture(), [], None, HEADINGS)
    assert [f["headings"] for f in page["folds"]] == [1, 2]


def test_highlights_follow_the_graders_whole_token_rule():
    segs = segments("port 526771 and 52677.", [PORT])
    assert [s["text"] for s in segs if s["fact"]] == ["52677"]
    assert "".join(s["text"] for s in segs) == "port 526771 and 52677."


@pytest.mark.browser
def test_the_viewer_in_chromium_shows_a_planted_script_as_text(site, tmp_path):
    out, hostile = site
    # negative control: the same script, unescaped, does run under this harness
    (out / "control.html").write_text(f"<title>t</title><pre>{SCRIPT}</pre>")
    with browser.serve(out) as url:
        assert "<title>PWNED</title>" in browser.dump_dom(url + "control.html")
        dom = browser.dump_dom(url + page_path(hostile))
        shot = browser.screenshot(url + page_path(hostile), tmp_path / "viewer.png")
        index = browser.dump_dom(url + "index.html")
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert title == "s/toy/r0/m: the fold chain"  # the planted script never ran
    assert "PWNED" not in title and "PWNED-IMG" not in title
    assert "&lt;script&gt;document.title='PWNED'" in dom  # shown as text
    body = dom.split("<body>", 1)[1]
    assert "<script" not in body and "<img" not in body
    assert shot.stat().st_size > 10_000
    assert index.count('href="s/toy/') == 3


def test_a_native_runs_page_names_a_proxys_compaction_by_its_endpoint():
    """A native run's page says its arm's title in its model's native words: on a model
    whose config says native_via: proxy, the endpoint's compaction (host and port, never
    the URL's path, userinfo or query); on the provider's API the record's own title."""
    from foldstudy.carriers.native import native_words, native_words_of
    from foldstudy.report.viewer import environment
    from foldstudy.study.derived import NATIVE_WITH

    rec = record(["52677", "52677"], arm="m")
    rec["arm_spec"] = arm_spec("native")
    proxy = {"native_via": "proxy", "base_url": "https://user:secret@gw.example:8443/v1?key=abc"}
    template = environment(RESOURCES / "templates").get_template("viewer-run.html.j2")

    def shown(**kw):
        ctx = run_page(rec, fixture(), [], None, HEADINGS, **kw)
        page = template.render(**ctx, compare_href=None)
        return ctx["arm_title"], page.split("<p class=\"meta\">")[1].split("·")[2]

    title, meta = shown(words=native_words(proxy))
    assert title == "compaction by gw.example:8443" and f"({title})" in meta
    assert not [w for w in ("provider", "secret", "user", "/v1", "key=") if w in meta]
    assert native_words_of({"x": proxy})["x"] == native_words(proxy)
    title, meta = shown()  # the provider's: the record's title, as before
    assert title == rec["arm_spec"]["title"] == "the provider's compaction"
    assert "(the provider&#39;s compaction)" in meta  # escaped, as every text
    rec["arm_spec"] = {**arm_spec("native"), "instructions_from": "m",
                       "title": NATIVE_WITH.title(arm="m")}
    assert shown(words=native_words(proxy))[0] == (
        "compaction by gw.example:8443 with m's prompt")
    # an opaque carry says whose compaction item cannot be read
    rec["native"] = {"opaque": True}
    said = {w: template.render(**run_page(rec, fixture(), [], None, HEADINGS, words=w),
                               compare_href=None)
            for w in (native_words(proxy), native_words({}))}
    assert ("the carry is opaque: the item of compaction by gw.example:8443 cannot be read"
            in said[native_words(proxy)])
    assert "provider" not in said[native_words(proxy)]
    assert ("the carry is opaque: the provider&#39;s compaction item cannot be read"
            in said[native_words({})])
