"""The newcomer's one screen: counts with their denominators, where facts were lost,
and where every output is."""

from __future__ import annotations

import pandas as pd

from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.io import print_if_written
from foldstudy.report.summary import summary_text

from ..support.evidence_rows import arm_rows, frames


def test_the_summary_gives_every_count_with_its_denominator(tmp_path, capsys):
    rows, _ = frames(arm_rows("main", "smol", "j", [0.0, 0.1])
                     + arm_rows("main", "smol", "m", [1.0, 0.5]))
    rows.loc[0, "valid"] = False
    rows.loc[0, "invalid_reason"] = "infrastructure:server"
    losses = pd.DataFrame([{"sweep": "main", "arm": "m", "rows": 2, "facts": 28,
                            "never_carried": 3, "dropped": 4, "dropped_at": "3: 4",
                            "missed_in_answer": 0, "recalled": 21}])
    text = summary_text(rows, losses, AnalysisPlan.load(), "default", viewer=True)
    assert "Runs: 4, valid: 3." in text and "infrastructure:server 1" in text
    # j: one valid row, 1 of its 10 facts recalled; m: 10 + 5 of 20
    assert "| main | j one opaque field | 1 | 1/10 = 0.100 | 1/10 = 0.100 | 0 |" in text
    assert "| main | m plain, five headings | 2 | 15/20 = 0.750 | 15/20 = 0.750 | 2 |" in text
    assert "| main | m | 28 | 3 | 4 (fold: count 3: 4) | 0 | 21 |" in text
    assert "results/viewer/index.html" in text and "results/tables/index.md" in text
    assert "viewer" not in summary_text(rows, None, AnalysisPlan.load(), "x", viewer=False)
    # printed at the end of a run that wrote it, not after one that did not
    p = tmp_path / "summary.md"
    p.write_text(text)
    print_if_written(p, since=p.stat().st_mtime + 60)
    assert capsys.readouterr().out == ""
    print_if_written(p, since=0)
    assert "Runs: 4, valid: 3." in capsys.readouterr().out


def test_a_proxy_models_native_arm_is_titled_by_its_endpoint_on_the_summary():
    """The summary's line of a native arm names whose compaction it is: on a model whose
    config says native_via: proxy, "compaction by <host:port>", never the provider's; over
    models whose words differ, each model's endpoint; a study with no proxy model reads
    the provider's, word for word as before."""
    from foldstudy.carriers.native import native_words

    proxy = native_words({"native_via": "proxy",
                          "base_url": "https://user:secret@gw.example:8443/v1?key=abc"})
    plan = AnalysisPlan.load().with_native_words({"px": proxy})

    def summary(*models: str, plan: AnalysisPlan = plan) -> str:
        rows, _ = frames([r for m in models for r in arm_rows("s", m, "native", [0.5, 0.4])])
        return summary_text(rows, None, plan, "x", viewer=False)

    text = summary("px")
    assert "| s | native compaction by gw.example:8443 | 2 |" in text
    assert not [w for w in ("provider's", "secret", "/v1", "key=") if w in text]
    assert "| s | native compaction by each model's endpoint | 4 |" in summary("px", "pv")
    assert summary("pv") == summary("pv", plan=AnalysisPlan.load())
    assert "| s | native the provider's compaction | 2 |" in summary("pv")
