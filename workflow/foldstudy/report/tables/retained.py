"""Recall at retained tokens, beyond the paper: every arm a point, the paper's
arms, index arms and own arms alike, with the frontier marked (analysis/retained.py)."""

from __future__ import annotations

import pandas as pd

from ...analysis.retained import COLUMNS, NO_RETAINED, retained_points
from ...analysis.view import Evidence
from ..table import Body, Col
from .common import SWEEP, builder, lines, reads


@builder
def t_retained_tokens(c: Evidence) -> Body:
    """Recall read against the tokens a carrier keeps, as agent builders read a
    compaction strategy; the frontier and the pick say which carrier is cheapest for
    its recall."""
    plan = c.plan
    recs = lines(c, "retained", lambda vg: retained_points(vg, plan), own_sweep=True)
    if not recs:
        recs = [{"_why_row": NO_RETAINED}]
    for r in recs:
        if "arm" in r:
            r["band"] = (None if r["recall_low"] != r["recall_low"] else
                         f"{r['recall_low']:.3f}–{r['recall_high']:.3f}")
            r["on_frontier"] = "frontier" if r["frontier"] else None
            r["picked"] = "pick" if r["pick"] else ""
    csv = pd.DataFrame(recs, columns=COLUMNS) if "arm" in recs[0] else None
    return Body(
        "Per (sweep, model, arm), over valid rows that record it: mean label-bound recall "
        f"with a {plan.confidence:.0%} bootstrap interval over rows, against the mean tokens "
        "retained at the run's end (the final carry's and, on an index arm, its "
        "identifier index's, counted as the study counts tokens). Every arm is a point: "
        "the paper's, index arms (kind index) and own arms (own; unmatched for one with "
        "match: false). Frontier: no other arm of the model keeps at most as many tokens "
        "and recalls at least as much. Pick: the frontier arm at the fewest tokens whose "
        f"mean recall is within the equivalence margin ({plan.equivalence_margin:g}) of the "
        "model's best." + reads(c, "retained"),
        [SWEEP, Col("model", "model"), Col("arm", "arm"), Col("kind", "kind"),
         Col("n", "n", "int"), Col("mean_recall", "mean recall", "p3", "no valid row"),
         Col("band", "interval", "str", "fewer than 2 rows"),
         Col("retained_tokens", "retained tokens", "chars", "not recorded"),
         Col("on_frontier", "frontier", "str", "dominated"),
         Col("picked", "pick", "str", "not picked")],
        recs, csv=csv)
