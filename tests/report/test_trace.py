"""Where the facts were lost (report/trace.py loss_table): a native arm's line is titled
in its models' native words, so a proxy's compaction is never called the provider's."""

from __future__ import annotations

import pandas as pd

from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.carriers.native import native_words
from foldstudy.report.trace import loss_table

PROXY = {"native_via": "proxy", "base_url": "https://user:secret@gw.example:8443/v1?key=abc"}


def _losses(*models: str) -> pd.DataFrame:
    return pd.DataFrame([{"row_id": f"s/{m}/r0/native", "sweep": "s", "model": m,
                          "arm": "native", "label": "port", "kind": "recalled",
                          "planted_fold": 1, "last_carried_fold": 3, "lost_at_fold": None,
                          "final_in": ""} for m in models])


def test_the_loss_table_titles_a_native_arm_by_its_models_words():
    plan = AnalysisPlan.load().with_native_words({"px": native_words(PROXY)})

    def title(*models: str, plan: AnalysisPlan = plan) -> str:
        (row,) = loss_table(_losses(*models), plan).rows
        return row["title"]

    assert title("px") == "compaction by gw.example:8443"
    assert title("px", "pv") == "compaction by each model's endpoint"
    assert title("pv") == title("pv", plan=AnalysisPlan.load()) == "the provider's compaction"
