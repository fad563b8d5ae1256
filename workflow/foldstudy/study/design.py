"""Order of arms within a block (sweep, model, repeat) (paper §3.3).

latin: a rotating Latin square; every arm leads equally often, so execution position is
balanced against endpoint drift, but each arm keeps the same predecessor.
williams: a Williams design (Williams 1949), which also balances first-order carryover:
every arm follows every other arm equally often over a full cycle (n rows for an even
number of arms, 2n for an odd number).
"""

from __future__ import annotations

import math

DESIGNS = ("latin", "williams")


def latin_row(n: int, r: int) -> list[int]:
    return [(i + r) % n for i in range(n)]


def williams_rows(n: int) -> list[list[int]]:
    # first row 0, 1, n-1, 2, n-2, ...; row r adds r (mod n)
    first = [0]
    lo, hi = 1, n - 1
    take_lo = True
    while len(first) < n:
        first.append(lo if take_lo else hi)
        if take_lo:
            lo += 1
        else:
            hi -= 1
        take_lo = not take_lo
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        rows += [list(reversed(row)) for row in rows]
    return rows


def cycle_length(design: str, n: int) -> int:
    """Repeats needed for the design to close (every arm in every position)."""
    if design == "williams" and n % 2:
        return 2 * n
    return n


def block_order(arms: list[str], repeat: int, design: str) -> list[str]:
    """The arms of block `repeat` in execution order."""
    n = len(arms)
    if design == "latin":
        idx = latin_row(n, repeat)
    elif design == "williams":
        rows = williams_rows(n)
        idx = rows[repeat % len(rows)]
    else:
        raise ValueError(f"design {design!r} (known: {' '.join(DESIGNS)})")
    return [arms[i] for i in idx]


def round_up(n: int, rotation: int) -> int:
    """n repeats rounded up to whole rotations of the design."""
    return rotation * math.ceil(n / rotation)


def first_stage(max_repeats: int, looks: int, rotation: int) -> int:
    """A staged (decide) sweep's first stage: an equal share of the maximum over the
    looks, rounded up to the rotation (what `-n` and the audit show beside the maximum).
    Here, not in analysis.sequential, because the DAG needs it and scipy (which the
    sequential test needs) would cost every dry run a second of imports."""
    return min(max_repeats, round_up(max(math.ceil(max_repeats / looks), 1), rotation))


# A staged decision's look, as the workflow reads it while planning (common.smk): which
# runs the next stage adds. Here, beside first_stage, for the same reason: pure and light.

def repeats_after(state: dict) -> dict[str, int]:
    """model -> the repeats it has once the stage after a look ran: its next stage's
    where the look says go on, else those it stopped at."""
    return {m: s.get("next", s["repeats"]) if s["status"] == "continue" else s["repeats"]
            for m, s in state["models"].items()}


def repeats_stopped(state: dict) -> dict[str, int]:
    """model -> the repeats made when the last look was taken (the runs the cards read)."""
    return {m: s["repeats"] for m, s in state["models"].items()}


def look_is_final(state: dict, look: int, looks: int) -> bool:
    """Whether no look follows this one: every model stopped, or it was the last."""
    return look >= looks or bool(state["done"])
