"""The card's lines beyond the contrasts (analysis/card_lines.py), unit by unit."""

from __future__ import annotations

import pandas as pd

from foldstudy.analysis.card_lines import fold_failures


def _rows(arm: str, failures: list[int], folds: int = 5) -> pd.DataFrame:
    return pd.DataFrame({"arm": arm, "row_id": [f"s/x/r{i}/{arm}" for i in range(len(failures))],
                         "folds": folds, "parse_failures": failures})


def test_the_failed_folds_are_counted_over_the_folds_that_sent_a_request(arms):
    """A native fold that returned no compaction is counted "k of n folds": n is the folds
    that asked the provider. A keep_recent=2 arm's first two folds ask nothing (no chunk
    is older than its kept tail yet), so its n is three a row, where plain native's is
    five."""
    cell = pd.concat([_rows("native", [1, 0, 2]), _rows("native_keep2", [1, 0, 2])],
                     ignore_index=True)
    assert fold_failures(cell, arms) == {
        "native": "3 of 15 folds returned no compaction",
        "native_keep2": "3 of 9 folds returned no compaction"}
