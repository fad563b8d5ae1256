from __future__ import annotations

from collections import Counter

import pytest

from foldstudy.study.design import block_order, cycle_length, williams_rows

ARMS = ["j", "q", "m", "o"]


@pytest.mark.parametrize("design", ["latin", "williams"])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_every_arm_in_every_position_over_a_cycle(design, n):
    arms = [chr(97 + i) for i in range(n)]
    reps = cycle_length(design, n)
    orders = [block_order(arms, r, design) for r in range(reps)]
    for order in orders:
        assert sorted(order) == arms
    for pos in range(n):
        counts = Counter(o[pos] for o in orders)
        assert len(set(counts.values())) == 1 and set(counts) == set(arms)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_williams_balances_first_order_carryover(n):
    rows = williams_rows(n)
    pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    assert len(pairs) == n * (n - 1)  # every ordered pair occurs
    assert len(set(pairs.values())) == 1  # equally often


def test_latin_square_does_not_balance_carryover():
    # The paper's limitation: a pure rotation gives each arm one predecessor.
    orders = [block_order(ARMS, r, "latin") for r in range(4)]
    preds = Counter((o[i], o[i + 1]) for o in orders for i in range(3))
    assert len(preds) == 4


def test_rotation_starts_with_the_configured_order():
    assert block_order(ARMS, 0, "latin") == ARMS
    assert block_order(ARMS, 1, "latin") == ["q", "m", "o", "j"]
