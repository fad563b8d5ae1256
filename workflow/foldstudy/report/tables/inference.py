"""The study-wide inferential numbers in one table (paper §4).

Paper §4: "a one-way random-effects decomposition of the fourteen binary checks gives
ICC = 0.750 and a design effect of 10.745"; the correlations, the equivalence test and
the separation weight sit beside it, each with its denominator and its numbers.json key.
"""

from __future__ import annotations

from ...analysis import keys
from ...analysis.view import Evidence
from ..table import Body, Col, fmt
from .common import (
    SWEEP,
    builder,
)


@builder
def t_inference(c: Evidence) -> Body:
    """The study-wide inferential numbers with their denominators, in one place."""
    plan, nb = c.plan, c.numbers
    a, b = plan.equivalence
    out = []
    no_icc = "fewer than 2 rows, or no variation in the checks"

    def ci(key: str, lo: str, hi: str) -> str:
        if lo in nb and hi in nb:
            return f"{fmt(nb[key], 'p3')} [{nb[lo]:.3f}, {nb[hi]:.3f}]"
        return fmt(nb.get(key), "p3") or ""

    for g, _ in c.groups("icc"):
        icc_n = f"{nb.get(g.key('icc.n_rows'))} rows × k = {nb.get(g.key('icc.k'), 0):.2f}"
        for what, key in (("ICC(1) of the binary checks grouped by row", "icc.value"),
                          ("design effect 1 + (k − 1) ICC", "icc.design_effect"),
                          ("checks a row is worth (k / design effect)",
                           "icc.effective_n_per_row")):
            k = g.key(key)
            lo, hi = (g.key("icc.ci_low"), g.key("icc.ci_high")) if key == "icc.value" else (
                g.key(f"{key}_ci_low"), g.key(f"{key}_ci_high"))
            out.append({"sweep": g.label, "what": what + " [95% CI, exact F]", "key": k,
                        "value": ci(k, lo, hi) if k in nb else None,
                        "n": icc_n if k in nb else None, "_why_value": no_icc})
    for scope, name, what, unit in (("headings", "headings", "headings carried vs recall", "rows"),
                                    ("fill", "fill", "fill vs recall across models",
                                     "models")):
        for g, _ in c.groups(scope):
            k = g.key(f"{name}.r")
            n = nb.get(g.key(f"{name}.n_rows" if name == "headings" else f"{name}.n_models"))
            out.append({"sweep": g.label, "what": f"{what}, Pearson r [95% CI, Fisher z]",
                        "key": k, "value": ci(k, g.key(f"{name}.ci_low"),
                                              g.key(f"{name}.ci_high")) if k in nb else None,
                        "n": f"{n} {unit}" if k in nb else None,
                        "_why_value": f"fewer than 3 {unit}, or a constant side"})
    for g, _ in c.groups("ladder"):
        for prev, arm in zip(plan.ladder, plan.ladder[1:], strict=False):
            out += _paired_tests(nb, g.label, "ladder.effect", g.cell(arm, prev), arm, prev)
    for g, _ in c.groups("equivalence"):
        eq = g.cell(a, b)
        out += _paired_tests(nb, g.label, "equivalence", eq, a, b)[1:]
        diff = keys.paired("equivalence", "diff", eq)
        out.append({"sweep": g.label, "what": f"{a} − {b}, paired", "key": diff,
                    "value": fmt(nb.get(diff), "signed3"),
                    "n": f"{nb.get(keys.paired('equivalence', 'n_pairs', eq))} blocks",
                    "_why_value": f"no block ran both {a} and {b}"})
        verdict = nb.get(keys.at("equivalence.equivalent", eq))
        p = fmt(nb.get(keys.at("equivalence.tost_p", eq)), "pval")
        if p is None and verdict is not None:  # every paired difference the same
            p = "none (every paired difference the same)"
        out.append({"sweep": g.label, "what": f"{a} − {b}, TOST p at ±{plan.equivalence_margin}",
                    "key": keys.at("equivalence.tost_p", eq), "value": p,
                    "n": "equivalent" if verdict else "not shown equivalent",
                    "_why_value": "fewer than 2 pairs"})
    for g, _ in c.groups("partition"):
        k, nk = (g.at(f"separation.{x}", "all") for x in ("weight", "n_failing"))
        out.append({"sweep": g.label, "what": "separation weight 1/C(n,k), all failing models",
                    "key": k, "value": fmt(nb.get(k), "pval"),
                    "n": f"{nb.get(nk)} failing models",
                    "_why_value": "separation not complete"})
        cell = g.cell(plan.divided, plan.undivided)
        k = keys.at("partition.carried_less", cell)
        out.append({"sweep": g.label,
                    "what": f"text carried, {plan.divided} against {plan.undivided} (share less)",
                    "key": k, "value": fmt(nb.get(k), "pct"),
                    "n": f"{nb.get(keys.at('partition.carried_pairs', cell))} paired blocks",
                    "_why_value": f"no block ran both {plan.divided} and {plan.undivided}"})
    for r in out:
        if r["value"] is None:
            r["n"] = None
        r["_why_n"] = "no statistic"
    return Body(
        "Inferential numbers with their denominators and intervals; keys are those of "
        "numbers.json. Each reads the scope its section names in the study config.",
        [SWEEP, Col("what", "statistic"), Col("value", "value"), Col("n", "denominator"),
         Col("key", "numbers.json key")], out)



def _paired_tests(nb: dict, sweep: str, key: str, cell: str, a: str, b: str) -> list[dict]:
    """A paired contrast's two tests, one line each: the paper's within-model bootstrap
    interval (kept for its numbers), and the exact sign-flip permutation p over the same
    blocks (beyond the paper; the study's own verdicts use it), which says when the
    blocks are too few for any p below 0.05 (4 blocks: the smallest p is 0.125)."""
    diff, p = keys.paired(key, "diff", cell), keys.paired(key, "perm_p", cell)
    blocks = nb.get(keys.paired(key, "n_pairs", cell))
    low, high = keys.paired(key, "ci_low", cell), keys.paired(key, "ci_high", cell)
    boot = (f"{nb[diff]:+.3f} [{nb[low]:+.3f}, {nb[high]:+.3f}]" if diff in nb else None)
    least = nb.get(keys.paired(key, "perm_min_p", cell))
    few = f"; at most p = {least:.3g} with {blocks} blocks" if least and least > 0.05 else ""
    why = f"no block ran both {a} and {b}"
    return [{"sweep": sweep, "what": f"{a} − {b}, paired bootstrap within model [95% CI]",
             "key": diff, "value": boot, "n": f"{blocks} blocks", "_why_value": why},
            {"sweep": sweep, "what": f"{a} − {b}, exact sign-flip permutation p",
             "key": p, "value": fmt(nb.get(p), "pval"), "n": f"{blocks} blocks{few}",
             "_why_value": why}]
