"""Hand-made decision cards (analysis/card.py) for the tests of the card's record, words
and file: one card holding every line a card can hold."""

from __future__ import annotations

from foldstudy.analysis.card import (
    Card,
    CeilingLine,
    ContrastVerdict,
    Diagnosis,
    FamilyCost,
    IndexLine,
    Loudness,
    Overrun,
    OwnArmCheck,
    OwnCompactionLine,
    StagedSummary,
)


def verdict(a: str = "j", b: str = "m", **kw) -> ContrastVerdict:
    return ContrastVerdict(**{
        "a": a, "b": b, "source": "analysis", "blocks": 8, "a_mean": 0.4, "b_mean": 0.7,
        "difference": 0.3, "ci_low": 0.1, "ci_high": 0.5, "p_permutation": 0.01,
        "tost_p": None, "equivalent": False, "word": f"{b} better", "icc": 0.75,
        "icc_source": "paper §4", **kw})


def full_card() -> Card:
    """A card with every line it can hold."""
    return Card(
        sweep="s", model="x", valid_rows=32, all_lost=False,
        contrasts=[verdict(), verdict("m", "q", word="undecided", repeats_to_decide=12,
                                      planned_difference=0.05, planned_test="difference",
                                      more_repeats=4, k=float("nan"))],
        diagnosis=Diagnosis(j_n=8, j_mean=0.4, failing=True, borderline=False, j_fill=0.8,
                            mode="description", q_mean=0.7, rescued=True),
        loudness=Loudness(failing_rows=3, abstained=1, fabricated=2, stock=1,
                          caught_by_abstention_log=1 / 3, stock_fabricated=1,
                          stock_abstained=0),
        own_arms=[OwnArmCheck(arm="mine", twin="m", undivided_slot=True, why="one field")],
        staged=StagedSummary(stop="decided", repeats=4, looks=2, max_repeats=12,
                             overrun=Overrun(count=1, first_call=1, excess_usd=0.002)),
        price_basis="listed prices",
        index_lines=[IndexLine(arm="m+index", base="m", verdict=verdict("m", "m+index"),
                               base_failing=True, rescued=False)],
        fold_failures={"native": "2 of 8 folds returned no compaction"},
        ceiling_lines=[CeilingLine(arm="j", ceiling="uncompacted", blocks=8, lost=10,
                                   carrier_lost=6, recall_lost=4, ceiling_recall=0.9)],
        control_lost={"j": (1, 8)}, control_lost_rows={"j": ["r1"]},
        repeat_stops={"m": (2, 24)}, served_by_other=["r9 (served by y)"],
        own_compaction=OwnCompactionLine(summaries=2, summary_chars=1840, held=5, facts=7,
                                         arm="m", rows=4, carried=0.75, recall=0.5,
                                         carry_chars=912.5),
        unread_pairs=[("j", "q")], compare_key="sweeps.s.compare",
        family_cost=FamilyCost(size=6, alpha=0.05, level=0.05 / 6, min_blocks=8,
                               min_blocks_alone=6, difference=0.1, power=0.8, repeats=20,
                               repeats_alone=None, key="sweeps.s.compare"))
