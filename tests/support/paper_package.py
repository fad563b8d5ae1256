"""An evidence package rebuilt from the published tables of "Two Ways to Lose a Fact".

Why: the workflow's evidence mode must regenerate the paper's tables, with the paper's
own scopes. A package consistent with those tables is the test input, and it
must come from the tables' numbers, not from a hand-typed CSV, so that every cell can be
traced to the sentence or table it transcribes. The cells below are the paper's numbers
(means, n, rows >= 0.5, rows full, fills, carried chars, clipped folds, headings, counts);
the code turns each cell into rows whose recall reproduces the printed mean exactly at
three decimals (distributed rows grade 14 checks, single-chunk rows 7), and into checks
that agree with the rows (rows.csv and checks.csv with the columns of
foldstudy.evidence.columns, written by foldstudy.evidence.load.write_table). Sweep names,
models and arms are those of config/study-paper.yaml, read from it. Free choices come
from one seeded generator (SEED), so the package is byte-for-byte deterministic.

API: `paper_package()` -> (rows, checks); `paper_package_dir(d)` writes d/rows.csv and
d/checks.csv. `python -m tests.support.paper_package DIR` writes one from the shell.

Where the paper's table mixes sweeps (the lead must know which sweep a table read):
- The partition table's cells for granite-4.1-8b and ling-2.6-flash equal the depth table
  and glm-5.2's is its twelve-row depth re-run, so those three cells live in sweep
  `depth` (12 rows per arm; glm j 11 valid). The partition sweep's own 4-row cells for
  the three models are deliberately different (chosen, not printed, except glm's j 0.393
  which §4.7 quotes): granite j 0.089 (5/56, forced by §4.6's "granite 16 rows 0.250":
  56 correct over 16 rows minus the depth's 51), fill 26.9% (§4.6's 3,238 chars over 16
  rows minus the depth's 36%), q 0.119 over 3 valid rows (the fourth is a catch-up row);
  ling j 0.000 (forced by §4.6's 16 rows at 0.000), 621 chars, q 0.571; glm j 0.393,
  q 0.607, fill 62%. Read from the partition sweep alone these give 7 failing models
  rescued instead of 6 (ling and glm rescued, granite not), glm not borderline, and
  separation margins of 6.5% - 26.9% = -20.4 points both with and without the
  borderline models (qwen3.5-9b is then the only borderline one), against the paper's
  +23 and +45 read with the depth cells.
- Single-chunk rows (sweep iteration) carry headings, two parse failures and a q - j
  token delta of -400, so a pooled analysis that lets them in shows it.
- Ceiling replication (§4.6): qwen's j "6/28" is the anchor sweep, its t "1/12" the two
  ceiling sweeps; its j fill 81% is the capacity rows (7,818 / 9,600), not the anchor's
  89%; glm-5.2's 4/4 and 2/4 are the ceiling sweep (j fill 56%).

Reproduced exactly (tests/evidence/test_paper_package.py asserts each on the frames):
- every cell's n, mean at 3 decimals, rows >= 0.5 and rows full where printed, and its
  fill / carried chars where printed: Table 1 (table1, flash_lm), the ladder and p, o
  (decomposition_a + decomposition_b), iteration (iteration, 7 graded), capacity (§4.5),
  ceiling replication (§4.6), the fill table of §4.6 (p 9 rows 9,044 94%; qwen 28 rows
  8,501 89%; deepseek-v4-pro 4 rows 4,740 49%; granite 16 rows 3,238 34%; ling 16 rows
  621 6%), the partition table (20 models, gaps too), the depth table (n, mean, rows
  >= 0.5, fill, headings) and granite's within-model split (14 rows with no headings at
  0.194, 2 with five at 0.643);
- derived: 8 of 20 failing, 6 of 8 rescued, borderline glm-5.2 and qwen3.5-9b, margins
  23 and 45 points, the twelve working models' mean gap -0.075 and mimo-v2.5-pro's
  -0.411, the ladder's 1 of 10 against 8 of 10 full rows, capacity's 4/23 against 8/8;
- headings: q carries five on every q row, k on every k row (39 of 39: k's cells are
  given 7+7+7+5+4+3+3+3 rows); the single-field table's rows per headings count (38, 58,
  5, 5, 11, 69 = 186) and j's 37 / 40 / 69 of 161 (five j rows of the anchor and six f
  rows have no count recorded, so 570 rows have one);
- abstention (§4.11): failing rows per arm j 23/64, q 4/48, n 12/20, t 8/5, f 1/44;
- finish reasons (§4.9): t 80 of 80 folds stop; j 694 stop, 20 length (the j folds the
  package has beyond the paper's 714 finish "other": 23 anchor rows recorded none, one
  recorded 4 of 5); t lands within 0.5% of its ceiling on 14 of 16 rows;
- envelope (§5): json_envelope_carried on 45 valid rows, all f;
- parse failures (§6): 23 single-field rows carry one, 18 valid at mean 0.560; over all
  arms 63 rows, 57 valid at mean 0.476; §4.5's "4 of 60 folds": j's 12 capacity rows
  (11 valid and its catch-up row, whose parse failure is one of the 4) hold 4
  non-conforming folds of 60;
- catch-up (§6): 6 invalid rows, catchup_fired, j 4 / p 1 / q 1, recalls 1, 1, 0, 0, 0, 0;
- carrier (§4.10): recorded on 215 valid rows only, q 88, j 103, m 4, t 16, u 4: there
  carrier_present and checks.csv in_carrier are filled, on every other row both are
  empty (docs/design.md §8), so a cross-tab that read unrecorded rows would fail, not drift;
  carrier had it and the answer missed it on q 31 (35.2%) and j 13 (12.6%) rows, so 171
  agree; no check is correct with the value absent from the carrier;
- abstention on the answer's first 400 characters (rows.csv abstained_prefix400) equals
  abstained: the paper kept only that prefix, and its §4.11 counts were computed on it;
- ICC (§4 opening) 0.750 and design effect 10.745 over the package's valid distributed
  rows (the row counts are tuned, the row set is the package's);
- prompt tokens (§1, §4.3): q - j is -2,319 in decomposition_a, -3,089 in
  decomposition_b and -1,534 pooled over every sweep's pairs; p - j is +298.

Not reproduced, and why (arithmetic from the paper's own numbers):
- 620 valid distributed rows: the printed tables sum to fewer (Table 1 223, flash 14,
  anchor 28, decomposition 49, ceiling sweeps 39, partition 157, depth 71 = 581); the
  paper's other rows came from runs its text does not describe. So n_rows of the ICC,
  "575 of 620" false envelopes (here 536 of 581) and the 563 clean rows of §6 differ.
- j 161 and q 134 together: with the anchor as its own 28-row sweep and the partition's
  j and q paired in 4-row blocks, j = 28 + 10 + 11 + 4 + 78 + 35 = 166 valid rows and
  q = 10 + 79 + 36 = 125. Five anchor j rows have no headings count, so the headings
  table still sees 161 j rows; q's "134 of 134" comes back as 125 of 125.
- The single-field headings table's means and rows >= 0.5 in full: its cells total 1,111
  correct checks and 83 rows >= 0.5, but the cells the other tables fix leave the 186
  single-field rows 1,023 correct checks and 82 rows >= 0.5. Counts 0-4 keep their
  means exactly (0.086, 0.041, 0.457, 0.529, 0.610) and counts 2-4 their rows >= 0.5
  (2, 3, 7); count 0 has 4 rows >= 0.5 (paper 5) and count 1 has 1 (paper 2): with
  every zero row already under counts 0-4 no row can move in without moving the means;
  count 5 takes the shortfall (0.808 and 65 rows >= 0.5, paper 0.900 and 64).
- §6's clean-row mean 0.399 over 175 rows: the package has 173 clean valid single-field
  rows (191 - 18; their mean 0.364 is fixed by the cells, not by §6), and over all arms
  524 clean rows (581 - 57), not 563 at 0.553. The 5 invalid single-field rows with a
  parse failure are the j and p catch-up rows (23 - 18 = 5, as the paper's arithmetic
  needs); q's catch-up row is the sixth of 63 - 57.
- r = +0.61 (headings, 570 rows) and r = -0.23 (fill over 25 models; the config holds 21
  models with j rows): correlations over rows and models the tables do not list.
- §4.5's "17/47 against 3/16, p = 0.23": qwen's anchor 28 + capacity 11 and glm's 4 j
  rows are 43 rows with 6 + 3 + 4 = 13 recalled; no printed cell supplies the other 4
  rows, all recalled, that 17/47 needs. 3/16 is t (1/12 + 2/4) and is reproduced.
- "0.947" (deepseek-v4-flash q, gemma-4-26b-a4b-it j): no n <= 18 of fourteen-check rows
  has a mean printing 0.947 (53/56 = 0.94643). The paper's value is the mean of its
  rows' 3-decimal recalls rounded half up (1, 1, 1, 0.786 -> 0.9465), and its gaps
  (+0.786, -0.089) are those of 53/56; the package holds rows 14, 14, 14, 11: the exact
  mean prints 0.946 and the mean of printed recalls is 0.9465.
- mistral-small-2603's gap -0.053 is the difference of the printed means (0.929 - 0.982);
  the exact gap of 52/56 - 55/56 is -0.054, and no row counts give both means and -0.053.
- Table 1's 0.725 (local l) needs 13 rows (132/182); the paper's cells may have had 7
  with 3-decimal recalls. The package takes 13 rows, which the paper does not contradict
  (Table 1 prints no n). Table 1's k-m paired gap 0.066 is not targeted.
- Row counts beyond the config's repeats, where a printed mean needs them: iteration
  holds 10 rows per arm (0.300 over 7-check rows needs 21/70; the config plans 5
  repeats), Table 1's cells 3-13 rows (the config plans 5, 7 for flash_lm).
- Unprinted and chosen: glm-5.2's ceiling t mean (0.500), the partition cells' q fills,
  rows >= 0.5 where not printed (chosen to hit the abstention table's failing rows),
  which checks fail, abstain or sit in the carrier, tokens apart from the deltas above.
  The ceiling sweep's glm-5.2 m and u rows (planned by the config) are absent: the paper
  prints nothing of them, and §4.10's m 4 / u 4 are qwen's alone.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from foldstudy.evidence import columns

from .synthetic import LABELS, SCHEMA_ARMS, SPECS

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "study-paper.yaml"
SEED = 20260728
K = {"distributed": 14, "single_chunk": 7}
HALF = 0.5

# --------------------------------------------------------------------- transcription

QWEN, GLM, GRANITE, LING = "qwen3.6-35b-a3b", "glm-5.2", "granite-4.1-8b", "ling-2.6-flash"


@dataclass(frozen=True)
class Part:
    """Rows of one cell that share what is printed about them (a cell has one or more).

    mean: the printed mean (3 decimals); total: correct checks summed, where arithmetic
    across tables fixes it; rows: explicit n_correct per row (the paper's 0.947 cells).
    """

    n: int
    mean: float | None = None
    total: int | None = None
    ge_half: int | None = None
    full: int | None = None
    headings: int | None = None
    rows: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Cell:
    """One (sweep or sweeps, model, arm) of a published table, with what is printed.

    sweeps: the rows are dealt to these sweeps in turn, sizes[i] rows each (the ladder
    pools two sweeps). carried: mean carried chars; fill: printed fill (0.36 for "36%");
    at_ceiling: rows whose carry lands within 0.5% of the ceiling; invalid: recalls of
    catch-up rows (invalid, not retried); clipped, nonconforming: fold counts summed
    over the valid rows; finish_none: rows that recorded no finish reason.
    """

    sweeps: tuple[str, ...]
    model: str
    arm: str
    parts: tuple[Part, ...]
    sizes: tuple[int, ...] | None = None
    carried: float | None = None
    fill: float | None = None
    at_ceiling: int | None = None
    invalid: tuple[float, ...] = ()
    invalid_sweep: str | None = None
    clipped: int = 0
    nonconforming: int = 0
    source: str = ""

    @property
    def n(self) -> int:
        return sum(p.n for p in self.parts)


def _cell(sweep: str | tuple[str, ...], model: str, arm: str, n: int, mean: float | None,
          **kw: Any) -> Cell:
    part_kw = {k: kw.pop(k) for k in ("ge_half", "full", "headings", "total", "rows")
               if k in kw}
    sweeps = (sweep,) if isinstance(sweep, str) else sweep
    return Cell(sweeps, model, arm, (Part(n, mean, **part_kw),), **kw)


# Table 1 (§4.1): model -> arm -> printed mean. Its n is not printed; the row counts
# below are chosen so each mean is exact and f totals 45 rows (§5: the 45 envelopes are
# all f; §4.11: f fails on 45), k 39 (§4.8: 39 of 39), n fails on 32 (§4.11: 12 + 20).
TABLE1 = {
    "qwen3.6-local": {"f": .051, "n": .061, "k": .969, "l": .725, "m": .969},
    QWEN: {"f": .000, "n": .051, "k": .878, "l": .735, "m": .990},
    "hy3": {"f": .000, "n": .857, "k": .816, "l": .694, "m": .786},
    GLM: {"f": .086, "n": .000, "k": .800, "l": .929, "m": 1.000},
    "minimax-m3": {"f": .000, "n": .750, "k": 1.000, "l": .871, "m": 1.000},
    "mistral-small-2603": {"f": .257, "n": .786, "k": 1.000, "l": .829, "m": .986},
    "deepseek-v4-flash": {"f": .071, "n": .171, "k": .929, "l": .929, "m": 1.000},
    "mimo-v2.5": {"f": .000, "n": .000, "k": .857, "l": .857, "m": 1.000},
}
TABLE1_N = {
    "qwen3.6-local": {"f": 7, "n": 7, "k": 7, "l": 13, "m": 7},
    QWEN: {"f": 6, "n": 7, "k": 7, "l": 7, "m": 7},
    "hy3": {"f": 6, "n": 5, "k": 7, "l": 7, "m": 5},
    GLM: {"f": 5, "n": 5, "k": 5, "l": 5, "m": 5},
    "minimax-m3": {"f": 6, "n": 4, "k": 4, "l": 5, "m": 5},
    "mistral-small-2603": {"f": 5, "n": 5, "k": 3, "l": 5, "m": 5},
    "deepseek-v4-flash": {"f": 5, "n": 5, "k": 3, "l": 5, "m": 5},
    "mimo-v2.5": {"f": 5, "n": 5, "k": 3, "l": 5, "m": 5},
}
FLASH = {"l": (.786, 7), "m": (.990, 7)}  # Table 1's qwen3.6-flash row, 7 repeats

# §4.3 ladder with p and o, pooled over the two decomposition sweeps (n = 10 per rung;
# p has 9 valid rows, §4.6, and one catch-up row, §6).
DECOMP = ("decomposition_a", "decomposition_b")
LADDER = {"j": (.071, 10, {}), "q": (.771, 10, {"full": 1}), "m": (.986, 10, {"full": 8}),
          "o": (.921, 10, {}), "p": (.016, 9, {})}
# §4.4 iteration, single chunk (7 graded facts): 0.300 needs 10 rows (21/70).
ITERATION = {"j": .300, "p": .300, "q": 1.000, "o": 1.000, "m": 1.000}
ITERATION_N = 10

# §4.5 capacity, qwen over ceiling (4 repeats) + ceiling_jt (8): arm -> (n, rows
# recalled, mean, carried chars, folds clipped).
CAPACITY = {"j": (11, 3, .325, 7818, 17), "t": (12, 1, .131, 4697, 0),
            "m": (4, 4, 1.000, 6269, 0), "u": (4, 4, 1.000, 5505, 13)}

# §4.7 partition table: model -> (j mean, q mean, printed gap, j fill).
PARTITION = {
    LING: (.000, .161, +.161, .06), "qwen3.5-122b-a10b": (.000, .714, +.714, 1.00),
    "qwen3.5-35b-a3b": (.000, .625, +.625, 1.00), "mimo-v2.5": (.000, .929, +.929, .99),
    GRANITE: (.304, .250, -.054, .36), "deepseek-v4-flash": (.161, .947, +.786, .81),
    GLM: (.487, .518, +.031, .59), "qwen3.5-9b": (.482, .661, +.179, .81),
    "qwen3.5-397b-a17b": (.625, .821, +.196, .79), "minimax-m3": (.643, .875, +.232, .93),
    "qwen3.6-27b": (.750, .536, -.214, .68),
    "nemotron-3-ultra-550b-a55b": (.875, .929, +.054, .60),
    "hy3": (.881, .661, -.220, .62), "ling-2.6-1t": (.929, .929, +.000, .61),
    "gemma-4-26b-a4b-it": (.947, .857, -.089, .69),
    "mistral-small-2603": (.982, .929, -.053, .71),
    "nemotron-3-super-120b-a12b": (.982, .589, -.393, .69),
    "deepseek-v4-pro": (1.000, 1.000, +.000, .49), "gemma-4-31b-it": (1.000, 1.000, +.000, .63),
    "mimo-v2.5-pro": (1.000, .589, -.411, .58),
}
DEPTH_MODELS = (GRANITE, LING, GLM)  # their partition-table cells are the depth sweep's
# The partition sweep's own 4-row cells of those three (chosen; see the docstring).
PARTITION_OWN = {GRANITE: {"j": (.089, .269), "q": (.119, None)},
                 LING: {"j": (.000, None), "q": (.571, None)},
                 GLM: {"j": (.393, .62), "q": (.607, None)}}
# §4.8: "deepseek-v4-pro and gemma-4-31b-it both carry five sections on 4 of 4 rows";
# "deepseek-v4-flash carries one section per row".
PARTITION_J_HEADINGS = {"deepseek-v4-pro": 5, "gemma-4-31b-it": 5, "deepseek-v4-flash": 1}
# The paper's 0.947 cells: the mean of printed row recalls (1, 1, 1, 0.786) is 0.9465.
ROUNDED_CELLS = {("deepseek-v4-flash", "q"), ("gemma-4-26b-a4b-it", "j")}
ROUNDED_ROWS = (14, 14, 14, 11)

# §4.7 depth table: (model, arm) -> (n, mean, rows >= 0.5, fill, headings per row).
DEPTH = {
    (GRANITE, "j"): (12, .304, 6, .36, "0 on 10 rows, 5 on 2"),
    (GRANITE, "q"): (12, .250, 0, .20, "5 on all 12"),
    (LING, "j"): (12, .000, 0, .06, "0 on 11 rows, 1 on 1"),
    (LING, "q"): (12, .161, 2, .13, "5 on all 12"),
    (GLM, "j"): (11, .487, 5, .59, None),  # "5 of 11 and 6 of 12 rows above half"
    (GLM, "q"): (12, .518, 6, None, "5 on all 12"),
}
# §4.7: granite's j, "the 14 rows that carried no headings average 0.194, the 2 that
# carried five average 0.643" (over partition 4 + depth 12 rows).
GRANITE_WITHIN = {0: (14, .194), 5: (2, .643)}
# §4.6 fill table: (label, rows, carried chars, fill, recall).
FILL_TABLE = [("p", 9, 9044, .94, .016), (QWEN, 28, 8501, .89, .214),
              ("deepseek-v4-pro", 4, 4740, .49, 1.000), (GRANITE, 16, 3238, .34, .250),
              (LING, 16, 621, .06, .000)]
# §4.6 ceiling replication: model -> (j recalled, j n, t recalled, t n, j fill).
CEILING = {QWEN: (6, 28, 1, 12, .81), GLM: (4, 4, 2, 4, .56)}

# §4.8 single-field-schema arms (j, p, t): headings -> (rows, mean, rows >= 0.5).
HEADINGS_SINGLE_FIELD = {0: (38, .086, 5), 1: (58, .041, 2), 2: (5, .457, 2),
                         3: (5, .529, 3), 4: (11, .610, 7), 5: (69, .900, 64)}
HEADINGS_J = {0: 37, 1: 40, 5: 69}  # "of j's 161 rows, 37 ... 40 ... 69"
SINGLE_FIELD_ROWS = {"j": 161, "t": 16, "p": 9}
HEADINGS_FIVE = {"q": 134, "k": 39}
HEADINGS_RECORDED = 570
# §4.11: arm -> (fabricates with no abstention, abstains somewhere), rows recall < 0.5.
ABSTENTION = {"j": (23, 64), "q": (4, 48), "n": (12, 20), "t": (8, 5), "f": (1, 44)}
# §4.5: "j fails to produce a conforming fold on 4 of 60 folds", over every j row of the
# capacity cells (11 valid + 1 catch-up, five folds each).
CAPACITY_NONCONFORMING = (4, 60)
# §4.9: arm -> (stop, length) folds.
FINISH = {"t": (80, 0), "j": (694, 20)}
AT_CEILING = {"t": (14, 16)}
# §5: envelope carried on 45 valid rows, all f.
ENVELOPE_ROWS = 45
# §6 parse failures: single-field (rows, valid, valid mean); all arms likewise.
PARSE_SINGLE_FIELD = (23, 18, .560)
PARSE_ALL = (63, 57, .476)
# §6 catch-up: (arm, recall) of the six invalid rows.
CATCHUP = [("j", 1.0), ("j", 1.0), ("p", 0.0), ("q", 0.0), ("j", 0.0), ("j", 0.0)]
# §4.10 carrier cross-tab: arm -> (rows recorded, rows where the carrier held a value
# the answer missed).
CARRIER = {"q": (88, 31), "j": (103, 13), "m": (4, 0), "t": (16, 0), "u": (4, 0)}
# §4 opening.
ICC_VALUE, DESIGN_EFFECT = .750, 10.745
# §1, §4.3: prompt-token deltas, paired within block.
TOKENS_QJ = {"decomposition_a": -2319, "decomposition_b": -3089, "pooled": -1534}
TOKENS_PJ = 298


# --------------------------------------------------------------------- the cells

def cells() -> list[Cell]:
    """Every published cell, as Cell specs, in a fixed order."""
    out: list[Cell] = []
    for model, arms in TABLE1.items():
        for arm, mean in arms.items():
            out.append(_cell("table1", model, arm, TABLE1_N[model][arm], mean,
                             source="Table 1"))
    for arm, (mean, n) in FLASH.items():
        out.append(_cell("flash_lm", "qwen3.6-flash", arm, n, mean, source="Table 1"))
    out.append(_cell("anchor", QWEN, "j", 28, .214, ge_half=6, carried=8501,
                     source="§4.3, §4.6"))
    out.extend(_ladder_cells())
    for arm, mean in ITERATION.items():
        out.append(_cell("iteration", QWEN, arm, ITERATION_N, mean, source="§4.4"))
    out.extend(_capacity_cells())
    out.extend(_partition_cells())
    out.extend(_depth_cells())
    return out


def _ladder_cells() -> list[Cell]:
    out = []
    for arm, (mean, n, kw) in LADDER.items():
        extra: dict[str, Any] = {}
        if arm == "p":
            extra = {"carried": 9044, "invalid": (0.0,), "invalid_sweep": DECOMP[1],
                     "sizes": (5, 4)}
        out.append(_cell(DECOMP, QWEN, arm, n, mean, source="§4.3", **kw, **extra))
    return out


def _capacity_cells() -> list[Cell]:
    sizes = {"j": (4, 7), "t": (4, 8), "m": (4,), "u": (4,)}
    out = []
    for arm, (n, recalled, mean, carried, clipped) in CAPACITY.items():
        sweeps = ("ceiling", "ceiling_jt")[: len(sizes[arm])]
        extra: dict[str, Any] = {}
        if arm == "j":
            extra = {"invalid": (0.0,), "invalid_sweep": "ceiling_jt", "nonconforming": 4}
        if arm == "t":
            extra = {"at_ceiling": 11}
        out.append(_cell(sweeps, QWEN, arm, n, mean, ge_half=recalled, carried=carried,
                         clipped=clipped, sizes=sizes[arm], source="§4.5", **extra))
    r = CEILING[GLM]
    out.append(_cell("ceiling", GLM, "j", r[1], 1.000, ge_half=r[0], fill=r[4], source="§4.6"))
    out.append(_cell("ceiling", GLM, "t", r[3], .500, ge_half=r[2], at_ceiling=3,
                     carried=4566, source="§4.6"))
    return out


def _partition_cells() -> list[Cell]:
    """The partition sweep: 4 rows per arm and model (three cells lose one row to a
    catch-up, §6); granite, ling and glm hold the sweep's own cells, not the table's."""
    out = []
    for model, (jm, qm, _gap, fill) in PARTITION.items():
        for arm, mean in (("j", jm), ("q", qm)):
            kw: dict[str, Any] = {"source": "§4.7 partition",
                                  "fill": fill if arm == "j" else None}
            if model in DEPTH_MODELS:
                mean, kw["fill"] = PARTITION_OWN[model][arm]
                kw["source"] = "partition sweep's own cell (chosen)"
            if arm == "j" and model in PARTITION_J_HEADINGS:
                kw["headings"] = PARTITION_J_HEADINGS[model]
            if (model, arm) in ROUNDED_CELLS:
                kw["rows"] = ROUNDED_ROWS
            out.append(_cell("partition", model, arm, 4, mean, **kw))
    return [_partition_fix(c) for c in out]


# Partition cells that arithmetic elsewhere fixes, or that hold a catch-up row (§6).
_PARTITION_FIX: dict[tuple[str, str], dict[str, Any]] = {
    (GRANITE, "j"): {"part": {"mean": None, "total": 5, "headings": 0, "ge_half": 0},
                     "carried": 2584, "fill": None},
    (LING, "j"): {"carried": 621, "fill": None},
    ("deepseek-v4-pro", "j"): {"carried": 4740, "fill": None},  # §4.6: 4,740 chars, 49%
    (GRANITE, "q"): {"part": {"n": 3}, "invalid": (0.0,)},
    ("hy3", "j"): {"part": {"n": 3}, "invalid": (1.0,)},
    ("qwen3.5-122b-a10b", "j"): {"part": {"n": 3}, "invalid": (0.0,)},
}


def _partition_fix(c: Cell) -> Cell:
    fix = dict(_PARTITION_FIX.get((c.model, c.arm), {}))
    if not fix:
        return c
    part = Part(**{**c.parts[0].__dict__, **fix.pop("part", {})})
    return Cell(**{**c.__dict__, "parts": (part,), **fix})


def _depth_cells() -> list[Cell]:
    out = []
    for (model, arm), (n, mean, ge, fill, _h) in DEPTH.items():
        kw: dict[str, Any] = {"fill": fill, "source": "§4.7 depth"}
        if model == GRANITE and arm == "j":
            # 2 rows with five headings at 0.643 (18 correct), 10 with none: 51 - 18.
            parts = (Part(2, GRANITE_WITHIN[5][1], ge_half=2, headings=5),
                     Part(10, None, total=51 - 18, ge_half=ge - 2, headings=0))
            out.append(Cell(("depth",), model, arm, parts, **kw))
            continue
        if model == LING and arm == "j":
            parts = (Part(11, .000, headings=0), Part(1, .000, headings=1))
            out.append(Cell(("depth",), model, arm, parts, carried=621,
                            source="§4.7 depth"))
            continue
        if model == GLM and arm == "j":
            kw["invalid"] = (1.0,)
        out.append(_cell("depth", model, arm, n, mean, ge_half=ge,
                         headings=5 if arm == "q" else None, **kw))
    return out
# --------------------------------------------------------------------- row counts

def _k(sweep: str, sweeps: dict[str, Any]) -> int:
    return K[sweeps[sweep]["scenario"]]


def exact_total(mean: float, n: int, k: int) -> int:
    """The correct-check total whose mean over n rows of k checks prints `mean` at three
    decimals (no tie at the half), nearest mean * n * k; fails if none does."""
    fits = [s for s in range(n * k + 1)
            if abs(Fraction(s, n * k) * 1000 - Fraction(round(mean * 1000))) < Fraction(1, 2)]
    if not fits:
        raise ValueError(f"no total of {n} rows x {k} checks prints {mean:.3f}")
    return min(fits, key=lambda s: abs(s - mean * n * k))


def part_total(p: Part, k: int) -> int:
    if p.rows is not None:
        return sum(p.rows)
    if p.total is not None:
        return p.total
    assert p.mean is not None
    return exact_total(p.mean, p.n, k)


def _lo(k: int) -> int:
    """Fewest correct checks of a row at or above half."""
    return -(-k // 2)


def ge_half_range(total: int, n: int, k: int, full: int | None) -> tuple[int, int]:
    """Rows >= 0.5 a part of n rows and `total` correct can have (near-binary or not)."""
    lo, hi = _lo(k), _lo(k) - 1
    feasible = []
    for h in range(n + 1):
        f = full or 0
        if f > h:
            continue
        top = f * k + (h - f) * (k if full is None else k - 1) + (n - h) * hi
        bottom = f * k + (h - f) * lo
        if bottom <= total <= top:
            feasible.append(h)
    if not feasible:
        raise ValueError(f"{total} correct over {n} rows cannot be laid out")
    return min(feasible), max(feasible)


def _spread(total: int, n: int) -> list[int]:
    """total over n rows as evenly as possible, larger first."""
    if n == 0:
        return []
    q, r = divmod(total, n)
    return [q + 1] * r + [q] * (n - r)


def part_rows(total: int, n: int, k: int, h: int, full: int | None, lam: float) -> list[int]:
    """n_correct per row: h rows at or above half, `full` of them (when printed) at k.

    lam in [0, 1] sets how far from binary the rows are: 0 puts the failing rows as low
    and as many succeeding rows at k as the total allows, 1 the opposite.
    """
    lo, fail_max = _lo(k), _lo(k) - 1
    f_min = full if full is not None else 0
    s_cap = k if full is None else k - 1
    s_max = f_min * k + (h - f_min) * s_cap
    s_min = f_min * k + (h - f_min) * lo
    f_lo, f_hi = max(0, total - s_max), min(fail_max * (n - h), total - s_min)
    fail_total = f_lo + round(lam * (f_hi - f_lo))
    fail = _spread(fail_total, n - h)
    s_total = total - fail_total
    if full is not None:
        rest = _spread(s_total - full * k, h - full)
        return [k] * full + rest + fail
    # as many rows at k as leave the rest between lo and k - 1
    n_full = [x for x in range(h + 1)
              if (h - x) * lo <= s_total - x * k <= (h - x) * (k - 1) or (x == h and
                                                                           s_total == h * k)]
    x = round((1 - lam) * max(n_full) + lam * min(n_full))
    x = min(n_full, key=lambda v: abs(v - x))
    return [k] * x + _spread(s_total - x * k, h - x) + fail


@dataclass
class _Plan:
    """One part as laid out: its rows' n_correct, and where they go."""

    cell: Cell
    part: Part
    k: int
    total: int
    h: int
    h_range: tuple[int, int]
    values: list[int] = field(default_factory=list)

    @property
    def free(self) -> bool:
        """Rows >= 0.5 not printed and rows not given: the layout may choose."""
        return self.part.ge_half is None and self.part.rows is None

    @property
    def tunable(self) -> bool:
        return self.part.rows is None


def _plans(cs: list[Cell], sweeps: dict[str, Any]) -> list[_Plan]:
    out = []
    for c in cs:
        k = _k(c.sweeps[0], sweeps)
        for p in c.parts:
            total = part_total(p, k)
            lo, hi = ge_half_range(total, p.n, k, p.full)
            if p.rows is not None:
                h = sum(v >= _lo(k) for v in p.rows)
            elif p.ge_half is not None:
                h = p.ge_half
                if not lo <= h <= hi:
                    raise ValueError(f"{c.model} {c.arm}: {h} rows >= 0.5 impossible")
            else:
                h = min(max(round(total / k), lo), hi)
            out.append(_Plan(c, p, k, total, h, (lo, hi)))
    return out


def _failing_targets() -> dict[str, int]:
    return {arm: fab + ab for arm, (fab, ab) in ABSTENTION.items()}


def _fit_failing(plans: list[_Plan]) -> None:
    """Choose rows >= 0.5 where unprinted so the failing rows (recall < 0.5) per arm are
    those of §4.11's table, over the distributed scenario's valid rows."""
    for arm, target in _failing_targets().items():
        ps = [p for p in plans if p.cell.arm == arm and p.k == K["distributed"]]
        while (failing := sum(p.part.n - p.h for p in ps)) != target:
            step = 1 if failing > target else -1
            movable = [p for p in ps if p.free and p.h_range[0] <= p.h + step <= p.h_range[1]]
            if not movable:
                raise ValueError(f"{arm}: {failing} failing rows, cannot reach {target}")
            best = max(movable, key=lambda p: (p.h_range[1] - p.h) * step
                       - (p.h - p.h_range[0]) * (step < 0))
            best.h += step


def _lay_rows(plans: list[_Plan], lam: float) -> None:
    for p in plans:
        p.values = (list(p.part.rows) if p.part.rows is not None else
                    part_rows(p.total, p.part.n, p.k, p.h, p.part.full, lam))


def icc_from_counts(counts: list[int] | np.ndarray, k: int) -> float:
    """ICC(1) of binary checks grouped by row, from each row's correct count (the
    one-way ANOVA of foldstudy.analysis.stats.icc1 with every row holding k checks)."""
    c = np.asarray(counts, dtype=float)
    g, n = len(c), len(c) * k
    grand = c.sum() / n
    ssb = float((c * c / k).sum() - n * grand * grand)
    ssw = float((c - c * c / k).sum())
    msb, msw = ssb / (g - 1), ssw / (n - g)
    return (msb - msw) / (msb + (k - 1) * msw)


def _icc_ok(icc: float) -> bool:
    return round(icc, 3) == ICC_VALUE and round(1 + 13 * icc, 3) == DESIGN_EFFECT


def _distributed(plans: list[_Plan]) -> list[_Plan]:
    return [p for p in plans if p.k == K["distributed"]]


def _fit_icc(plans: list[_Plan]) -> None:
    """Rows' spread such that §4 opening's ICC 0.750 / design effect 10.745 come back
    over the valid distributed rows: a bisection on lam, then single-check moves
    within a part (each keeps the part's total, rows >= 0.5 and rows full)."""
    dist = _distributed(plans)
    target = (DESIGN_EFFECT - 1) / 13

    def icc() -> float:
        return icc_from_counts([v for p in dist for v in p.values], K["distributed"])

    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        _lay_rows(plans, mid)
        if icc() > target:
            lo = mid
        else:
            hi = mid
    _lay_rows(plans, lo)
    for _ in range(2000):
        now = icc()
        if _icc_ok(now):
            return
        move = _best_move(dist, now > target)
        if move is None:
            break
        p, a, b = move
        p.values[a] -= 1
        p.values[b] += 1
    raise ValueError(f"ICC {icc():.5f} cannot be brought to {ICC_VALUE}")


def _best_move(dist: list[_Plan], lower: bool) -> tuple[_Plan, int, int] | None:
    """The smallest single-check move that moves the ICC the wanted way: from a row to
    one with fewer correct (lower) or more (raise), inside one part's class bounds."""
    best, best_gap = None, None
    for p in dist:
        if not p.tunable:
            continue
        k, lo = p.k, _lo(p.k)
        for a, va in enumerate(p.values):
            for b, vb in enumerate(p.values):
                if a == b:
                    continue
                na, nb = va - 1, vb + 1
                if (va >= lo) != (na >= lo) or (vb >= lo) != (nb >= lo) or nb > k or na < 0:
                    continue
                if p.part.full is not None and k in (va, nb):
                    continue
                gap = vb - va + 1  # change of sum of squares / 2
                if (gap < 0) != lower or gap == 0:
                    continue
                if best_gap is None or abs(gap) < abs(best_gap):
                    best, best_gap = (p, a, b), gap
    return best


# --------------------------------------------------------------------- rows

def load_sweeps(path: Path = CONFIG) -> dict[str, Any]:
    """The paper study's sweeps (config/study-paper.yaml): names, scenario, models, arms."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))["sweeps"]


def _deal(cell: Cell, values: list[int]) -> list[tuple[str, int]]:
    """(sweep, n_correct) per valid row: a cell's rows dealt to its sweeps in turn."""
    sizes = cell.sizes or tuple(_spread(len(values), len(cell.sweeps)))
    out, i = [], 0
    for sweep, size in zip(cell.sweeps, sizes, strict=True):
        out.extend((sweep, v) for v in values[i:i + size])
        i += size
    assert i == len(values), (cell.model, cell.arm)
    return out


def _base_rows(plans: list[_Plan], sweeps: dict[str, Any], rng: np.random.Generator
               ) -> list[dict[str, Any]]:
    """One record per row: where it sits, its n_correct, and its cell; catch-up rows last
    in their block so a pair's partner keeps its repeat."""
    by_cell: dict[int, list[_Plan]] = {}
    for p in plans:
        by_cell.setdefault(id(p.cell), []).append(p)
    recs: list[dict[str, Any]] = []
    repeat: dict[tuple[str, str, str], int] = {}
    for parts in by_cell.values():
        cell = parts[0].cell
        tagged = [(v, p.part.headings) for p in parts for v in p.values]
        order = rng.permutation(len(tagged))
        tagged = [tagged[i] for i in order]
        dealt = _deal(cell, [v for v, _ in tagged])
        k = parts[0].k
        rows = [(s, v, h, True) for (s, v), (_, h) in zip(dealt, tagged, strict=True)]
        inv_sweep = cell.invalid_sweep or cell.sweeps[-1]
        rows += [(inv_sweep, round(r * k), None, False) for r in cell.invalid]
        for sweep, v, h, valid in rows:
            key = (sweep, cell.model, cell.arm)
            r = repeat.get(key, 0)
            repeat[key] = r + 1
            arms = sweeps[sweep]["arms"]
            recs.append({
                "row_id": f"{sweep}/{cell.model}/r{r}/{cell.arm}", "sweep": sweep,
                "scenario": sweeps[sweep]["scenario"], "model": cell.model,
                "arm": cell.arm, "repeat": r,
                "position": (arms.index(cell.arm) - r) % len(arms), "valid": valid,
                "n_graded": k, "n_correct": v, "headings_carried": h, "_cell": cell})
    return recs


def _carried(cell: Cell, n: int, ceiling: int | None, rng: np.random.Generator
             ) -> list[float]:
    """Carried chars of a cell's valid rows: their mean is the printed carried chars or
    fill (of the declared ceiling), exactly; symmetric jitter around it."""
    if cell.carried is not None:
        mean = float(cell.carried)
    elif cell.fill is not None and ceiling:
        mean = round(cell.fill * ceiling)
    else:
        mean = DEFAULT_CARRIED[cell.arm] * (ceiling or 1)
        mean = float(round(mean))
    cap = ceiling or 10 * mean
    if cell.at_ceiling:
        top = [ceiling - int(x) for x in rng.integers(0, 20, cell.at_ceiling)]
        rest = n * mean - sum(top)
        assert rest / (n - cell.at_ceiling) < 0.995 * ceiling, cell
        return [float(x) for x in top] + [float(x) for x in _spread(int(rest), n - len(top))]
    amp = int(min(0.05 * mean, cap - mean, mean - 1))
    d = [int(x) for x in rng.integers(0, amp + 1, n // 2)] if amp > 0 else [0] * (n // 2)
    vals = [mean + x for x in d] + [mean - x for x in d] + ([mean] if n % 2 else [])
    return [float(v) for v in vals]


# Mean fill of the declared ceiling (arms with one) or mean carried chars (the others)
# where the paper prints neither: chosen, plausible, inert.
DEFAULT_CARRIED = {"f": .99, "g": .99, "n": .62, "j": .80, "p": .90, "q": .42, "t": .97,
                   "k": 4100, "o": 5400, "m": 6100, "u": 5400, "l": 3600}


def _rows_frame(recs: list[dict[str, Any]], rng: np.random.Generator) -> pd.DataFrame:
    """rows.csv's columns from the records: what each arm declares, and carried chars."""
    df = pd.DataFrame(recs)
    df["recall"] = df["n_correct"] / df["n_graded"]
    spec = {a: SPECS[a] for a in df["arm"].unique()}
    df["n_fields"] = df["arm"].map(lambda a: spec[a].n_fields)
    df["declared_ceiling_chars"] = df["arm"].map(
        lambda a: float(spec[a].declared_ceiling_chars or np.nan))
    df["system_prompt_sha256"] = df["arm"].map(lambda a: spec[a].system_prompt_sha256)
    df["carried_chars"] = np.nan
    for _, g in df.groupby(df["_cell"].map(id), sort=False):
        c = g["_cell"].iloc[0]
        ceiling = SPECS[c.arm].declared_ceiling_chars
        valid = g[g["valid"]]
        df.loc[valid.index, "carried_chars"] = _carried(c, len(valid), ceiling, rng)
        inv = g[~g["valid"]]
        if len(inv):
            df.loc[inv.index, "carried_chars"] = float(np.mean(df.loc[valid.index,
                                                                      "carried_chars"]))
    df["fill"] = df["carried_chars"] / df["declared_ceiling_chars"]
    df["invalid_reason"] = np.where(df["valid"], "", "catchup_fired")
    df["catchup_fired"] = ~df["valid"]
    df["json_envelope_carried"] = df["arm"].eq("f") & df["valid"]
    df["folds"] = 5
    df["folds_clipped"] = 0
    df["parse_failures"] = 0
    df["schema_invalid_folds"] = 0
    df["finish_length"] = 0
    df["token_count_method"] = np.where(df["model"].eq("qwen3.6-local"), "tokenizer",
                                        "estimator")
    df["endpoint"] = "{}"
    df["served_by"] = np.where(df["model"].eq("qwen3.6-local"), "vllm", "paper-package")
    df["temperature"] = 0.2
    df["recall_finish_reason"] = "stop"
    df["answer"] = ""
    df["ceiling_delivery"] = np.where(df["declared_ceiling_chars"].notna(), "response_format",
                                      "none")
    df["attempt"] = 1
    return df


def _dist_valid(df: pd.DataFrame) -> pd.Series:
    return df["valid"] & df["scenario"].eq("distributed")


def _clipped(df: pd.DataFrame) -> None:
    """§4.5: j clipped on 17 folds of its capacity rows, u on 13 of 20."""
    for arm, (_n, _r, _m, _c, clipped) in CAPACITY.items():
        sel = df.index[df["valid"] & df["sweep"].isin(["ceiling", "ceiling_jt"])
                       & df["model"].eq(QWEN) & df["arm"].eq(arm)]
        df.loc[sel, "folds_clipped"] = _spread(clipped, len(sel))


def _headings(df: pd.DataFrame, rng: np.random.Generator) -> None:
    """Headings carried: five wherever a schema or the plain headed arms guarantee it,
    none on o, j-like on n; the single-field rows laid out against §4.8's table."""
    arm = df["arm"]
    free = df["headings_carried"].isna()
    fixed = {**dict.fromkeys(["q", "k", "m", "u", "l"], 5), "o": 0, "f": 0}
    for a, h in fixed.items():
        df.loc[free & arm.eq(a), "headings_carried"] = h
    for a in ("n", "g"):
        sel = df.index[free & arm.eq(a)]
        df.loc[sel, "headings_carried"] = rng.choice([0, 1], len(sel), p=[0.4, 0.6])
    single = df["scenario"].eq("single_chunk")
    sel = df.index[single & arm.isin(["j", "p"])]
    df.loc[sel, "headings_carried"] = rng.choice([0, 1, 5], len(sel))
    sel = df.index[~df["valid"] & df["headings_carried"].isna()]
    df.loc[sel, "headings_carried"] = 1
    # no count recorded: five anchor j rows with nothing recalled, six f rows
    anchor = df.index[df["sweep"].eq("anchor") & df["n_correct"].eq(0)][:5]
    f_rows = df.index[_dist_valid(df) & arm.eq("f")][:6]
    _single_field_headings(df, rng, exclude=set(anchor))
    df.loc[anchor.union(f_rows), "headings_carried"] = np.nan


def _single_field_headings(df: pd.DataFrame, rng: np.random.Generator, exclude: set[int]
                           ) -> None:
    """Headings of the distributed single-field rows not fixed by a table: the counts
    per headings value are §4.8's exactly (j: 37 / 40 / 69 of 161); rows are then
    swapped within j, or within t + p, to bring each count's mean and rows >= 0.5 as
    near §4.8's as the rows allow (an annealing with a fixed seed)."""
    sf = df.index[_dist_valid(df) & df["arm"].isin(list(SINGLE_FIELD_ROWS))
                  & ~df.index.isin(list(exclude))]
    counts = {"j": {0: 37, 1: 40, 2: 3, 3: 3, 4: 9, 5: 69},
              "tp": {0: 1, 1: 18, 2: 2, 3: 2, 4: 2, 5: 0}}
    cls = np.where(df.loc[sf, "arm"].eq("j"), "j", "tp")
    free_by: dict[str, list[int]] = {"j": [], "tp": []}
    for i, c in zip(sf, cls, strict=True):
        h = df.at[i, "headings_carried"]
        if pd.isna(h):
            free_by[c].append(i)
        else:
            counts[c][int(h)] -= 1
    for c, idx in free_by.items():
        need = [h for h, n in counts[c].items() for _ in range(n)]
        if len(need) != len(idx) or min(counts[c].values()) < 0:
            raise ValueError(f"{c}: {len(idx)} free rows for {len(need)} headings")
        order = sorted(idx, key=lambda i: df.at[i, "n_correct"])
        for i, h in zip(order, sorted(need), strict=True):
            df.at[i, "headings_carried"] = h
    _anneal_headings(df, sf, free_by, rng)


def _heading_targets() -> dict[int, tuple[int, int]]:
    """§4.8's table as (correct checks, rows >= 0.5) per headings count."""
    return {h: (exact_total(mean, rows, 14), ge)
            for h, (rows, mean, ge) in HEADINGS_SINGLE_FIELD.items()}


def _heading_cost(s: dict[int, int], g: dict[int, int],
                  targets: dict[int, tuple[int, int]]) -> float:
    """Distance from §4.8's cells; count 5 weighs least: it takes the shortfall."""
    return sum((0.2 if h == 5 else 1.0) * (4 * abs(s[h] - t) + 3 * abs(g[h] - ge))
               for h, (t, ge) in targets.items())


STEPS = 60_000


def _anneal_headings(df: pd.DataFrame, sf: pd.Index, free_by: dict[str, list[int]],
                     rng: np.random.Generator) -> None:
    h = {i: int(df.at[i, "headings_carried"]) for i in sf}
    v = {i: int(df.at[i, "n_correct"]) for i in sf}
    s = {x: 0 for x in range(6)}
    g = {x: 0 for x in range(6)}
    for i in sf:
        s[h[i]] += v[i]
        g[h[i]] += v[i] >= 7
    targets = _heading_targets()
    cost = _heading_cost(s, g, targets)
    best, best_h = cost, dict(h)
    temp = 2.0
    for step in range(STEPS):
        c = "j" if rng.random() < 0.85 else "tp"
        a, b = (free_by[c][x] for x in rng.integers(0, len(free_by[c]), 2))
        if h[a] == h[b] or v[a] == v[b]:
            continue
        ha, hb = h[a], h[b]
        for x, i, sign in ((ha, a, -1), (hb, b, -1), (hb, a, 1), (ha, b, 1)):
            s[x] += sign * v[i]
            g[x] += sign * (v[i] >= 7)
        new = _heading_cost(s, g, targets)
        if new <= cost or rng.random() < np.exp((cost - new) / temp):
            h[a], h[b], cost = hb, ha, new
            if cost < best:
                best, best_h = cost, dict(h)
        else:
            for x, i, sign in ((ha, a, 1), (hb, b, 1), (hb, a, -1), (ha, b, -1)):
                s[x] += sign * v[i]
                g[x] += sign * (v[i] >= 7)
        temp = max(0.01, 3.0 * (1 - step / (0.8 * STEPS)))
    for i in sf:
        df.at[i, "headings_carried"] = best_h[i]


def _subset(df: pd.DataFrame, pool: pd.Index, n: int, total: int, rng: np.random.Generator
            ) -> pd.Index:
    """n rows of `pool` whose n_correct sums to `total` (a seeded swap search)."""
    vals = df.loc[pool, "n_correct"].to_numpy()
    pick = rng.choice(len(pool), n, replace=False)
    rest = np.setdiff1d(np.arange(len(pool)), pick)
    for _ in range(20000):
        gap = total - int(vals[pick].sum())
        if gap == 0:
            return pool[np.sort(pick)]
        a, b = rng.integers(0, n), rng.integers(0, len(rest))
        new_gap = gap + int(vals[pick[a]]) - int(vals[rest[b]])
        if abs(new_gap) <= abs(gap):
            pick[a], rest[b] = rest[b], pick[a]
    raise ValueError(f"no {n} rows sum to {total}")


def _nonconforming(df: pd.DataFrame, rng: np.random.Generator) -> None:
    """§6 parse failures (every catch-up row; 18 valid single-field rows at 0.560; 39
    valid rows of the other schema arms, so that 57 valid rows average 0.476), §4.5's 4
    nonconforming j folds of the capacity rows, §4.9's 20 j folds that hit the length
    bound (the schema-invalid folds), and the j folds with no finish reason recorded."""
    dv = _dist_valid(df)
    capacity = df["sweep"].isin(["ceiling", "ceiling_jt"])
    df.loc[~df["valid"], "parse_failures"] = 1
    n_sf, n_sf_valid, sf_mean = PARSE_SINGLE_FIELD
    n_all, n_all_valid, all_mean = PARSE_ALL
    pool = df.index[dv & df["arm"].isin(["j", "p"]) & ~capacity]
    sf = _subset(df, pool, n_sf_valid, exact_total(sf_mean, n_sf_valid, 14), rng)
    others = [a for a in SCHEMA_ARMS if a not in SINGLE_FIELD_ROWS]
    pool = df.index[dv & df["arm"].isin(others)]
    rest_total = exact_total(all_mean, n_all_valid, 14) - int(df.loc[sf, "n_correct"].sum())
    oth = _subset(df, pool, n_all_valid - n_sf_valid, rest_total, rng)
    df.loc[sf.union(oth), "parse_failures"] = 1
    assert (~df["valid"] & df["arm"].isin(list(SINGLE_FIELD_ROWS))).sum() == n_sf - n_sf_valid
    assert (~df["valid"]).sum() == n_all - n_all_valid
    # single-chunk rows carry parse failures too, so a table that pools them shows it
    df.loc[df.index[df["scenario"].eq("single_chunk") & df["arm"].eq("j")][:2],
           "parse_failures"] = 1
    j = dv & df["arm"].eq("j")
    # §4.5's "4 of 60 folds" counts j's 12 capacity rows, the catch-up row (its parse
    # failure above) among them: 3 schema-invalid folds on the valid rows make it 4.
    cap = df.index[j & capacity & df["model"].eq(QWEN)]
    cap_bad = CAPACITY_NONCONFORMING[0] - int(
        (~df["valid"] & capacity & df["arm"].eq("j")).sum())
    df.loc[cap[:cap_bad], "schema_invalid_folds"] = 1
    stop, length = FINISH["j"]
    others_j = df.index[j & df["sweep"].eq("partition")]
    df.loc[rng.choice(others_j, length - cap_bad, replace=False), "schema_invalid_folds"] = 1
    df["finish_length"] = np.where(df["arm"].eq("j"), df["schema_invalid_folds"], 0)
    df["finish_stop"] = df["folds"] - df["finish_length"]
    other = 5 * int(j.sum()) - stop - length  # j folds beyond the paper's 714
    anchor = df.index[j & df["sweep"].eq("anchor")]
    whole, part = divmod(other, 5)
    df.loc[anchor[:whole], "finish_stop"] = 0
    if part:
        df.loc[anchor[whole], "finish_stop"] = 5 - part


def _carrier_recorded(df: pd.DataFrame) -> pd.Series:
    """§4.10's 215 rows: the partition sweep, the ceiling sweeps, and the decomposition
    sweeps' j rows with 9 of their 10 q rows (the paper's q 88 and j 103)."""
    dv = _dist_valid(df)
    rec = dv & df["sweep"].isin(["partition", "ceiling", "ceiling_jt"])
    dec = dv & df["sweep"].isin(list(DECOMP))
    rec |= dec & df["arm"].eq("j")
    q = df.index[dec & df["arm"].eq("q")]
    rec.loc[q[: CARRIER["q"][0] - int((rec & df["arm"].eq("q")).sum())]] = True
    return rec


def _abstaining(df: pd.DataFrame, rng: np.random.Generator) -> pd.Series:
    """Rows whose answer abstains somewhere: §4.11's counts among each arm's failing
    rows (distributed, valid); half of the other failing rows; no succeeding row."""
    failing = df["recall"] < HALF
    out = pd.Series(False, index=df.index)
    dv = _dist_valid(df)
    for arm, g in df[failing].groupby("arm"):
        idx = g.index[dv.loc[g.index]]
        n_ab = ABSTENTION[arm][1] if arm in ABSTENTION else len(idx) // 2
        if arm in ABSTENTION and len(idx) != sum(ABSTENTION[arm]):
            raise ValueError(f"{arm}: {len(idx)} failing rows, §4.11 has "
                             f"{sum(ABSTENTION[arm])}")
        out.loc[rng.choice(idx, n_ab, replace=False)] = True
        rest = g.index[~dv.loc[g.index]]
        out.loc[rest] = rng.random(len(rest)) < 0.5
    return out


def _checks(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """checks.csv: n_correct true checks per row; the carrier holds every correct value,
    and on §4.10's missed rows one or two values the answer then missed; abstaining
    rows abstain on some wrong checks, the other wrong checks are fabricated."""
    recorded = _carrier_recorded(df)
    missed: set[int] = set()
    for arm, (_rows, n_missed) in CARRIER.items():
        pool = df.index[recorded & df["arm"].eq(arm) & (df["n_correct"] < df["n_graded"])]
        missed |= set(rng.choice(pool, n_missed, replace=False).tolist()) if n_missed else set()
    abst = _abstaining(df, rng)
    lenient_rows = set(df.index[_dist_valid(df) & (df["recall"] < HALF)][[3, 40, 90]])
    out = []
    for i, r in df.iterrows():
        k, nc = int(r["n_graded"]), int(r["n_correct"])
        order = rng.permutation(k)
        correct = np.zeros(k, bool)
        correct[order[:nc]] = True
        in_carrier = correct.copy()
        if i in missed:
            in_carrier[order[nc:nc + 1 + int(rng.random() < 0.4 and nc + 1 < k)]] = True
        abstained = np.zeros(k, bool)
        if abst[i]:
            wrong = order[nc:]
            abstained[wrong[: max(1, len(wrong) // 2)]] = True
        fabricated = ~correct & ~abstained
        stock = fabricated & (rng.random(k) < 0.3)
        lenient = correct.copy()
        if i in lenient_rows:
            unit = [x for x in order[nc:] if LABELS[x][1] in ("shard_count", "utc_time")]
            lenient[unit[:1]] = True
        for x in range(k):
            out.append((r["row_id"], LABELS[x][0], LABELS[x][1], f"v{x:02d}",
                        in_carrier[x] if recorded[i] else None, correct[x], lenient[x],
                        abstained[x], not abstained[x], fabricated[x], stock[x], ""))
        df.at[i, "carrier_present"] = int(in_carrier.sum()) if recorded[i] else np.nan
        df.at[i, "abstained"] = bool(abstained.any())
        df.at[i, "n_fabricated"] = int(fabricated.sum())
        df.at[i, "n_stock_signature"] = int(stock.sum())
        df.at[i, "n_correct_unit_lenient"] = int(lenient.sum())
    return pd.DataFrame(out, columns=columns.CHECKS)


def _tokens(df: pd.DataFrame, rng: np.random.Generator) -> None:
    """Prompt tokens grow with the carry; q - j and p - j are set pair by pair so that
    §1's -2,319 / -3,089 per decomposition sweep and -1,534 pooled over every
    distributed sweep's pairs, and §4.3's +298, come back exactly."""
    df["prompt_tokens"] = (5 * (1100 + df["carried_chars"] / 4)
                           + rng.integers(-40, 41, len(df))).round().astype(int)
    df["completion_tokens"] = (5 * df["carried_chars"] / 4).round().astype(int)
    v = df[df["valid"]]
    block = ["sweep", "model", "repeat"]
    j = v[v["arm"].eq("j")].set_index(block)["prompt_tokens"]

    def partners(arm: str, sweeps: list[str]) -> list[tuple[int, int]]:
        a = v[v["arm"].eq(arm) & v["sweep"].isin(sweeps)]
        return [(i, int(j[key])) for i, key in zip(a.index, map(tuple, a[block].to_numpy()),
                                                    strict=True) if key in j.index]

    dist = sorted(set(df.loc[_dist_valid(df), "sweep"]))
    pairs = {s: partners("q", [s]) for s in dist}
    n_pairs = sum(len(p) for p in pairs.values())
    fixed = {s: TOKENS_QJ[s] for s in DECOMP}
    rest_total = TOKENS_QJ["pooled"] * n_pairs - sum(fixed[s] * len(pairs[s]) for s in fixed)
    rest = [p for s in dist if s not in fixed for p in pairs[s]]
    deltas = [-x for x in _spread(-rest_total, len(rest))]
    for s in fixed:
        for i, base in pairs[s]:
            df.at[i, "prompt_tokens"] = base + fixed[s]
    for (i, base), d in zip(rest, deltas, strict=True):
        df.at[i, "prompt_tokens"] = base + d
    for i, base in partners("p", list(DECOMP)):
        df.at[i, "prompt_tokens"] = base + TOKENS_PJ
    for i, base in partners("q", ["iteration"]):  # single-chunk: never in the pooled line
        df.at[i, "prompt_tokens"] = base - 400


# --------------------------------------------------------------------- the package

def paper_package(seed: int = SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, checks) with the columns of foldstudy.evidence.columns, from the cells."""
    rng = np.random.default_rng(seed)
    sweeps = load_sweeps()
    plans = _plans(cells(), sweeps)
    _fit_failing(plans)
    _fit_icc(plans)
    df = _rows_frame(_base_rows(plans, sweeps, rng), rng)
    _clipped(df)
    _headings(df, rng)
    _nonconforming(df, rng)
    _tokens(df, rng)
    for c in ("carrier_present", "n_fabricated", "n_stock_signature",
              "n_correct_unit_lenient"):
        df[c] = np.nan
    df["abstained"] = False
    checks = _checks(df, rng)
    # The paper kept each answer's first 400 characters and counted §4.11 on them: its
    # whole-answer test and its prefix test are one test here.
    df["abstained_prefix400"] = df["abstained"]
    df["retained_tokens"] = np.nan  # the paper did not record the tokens a carry kept
    df["n_control"], df["n_control_correct"], df["control_missed"] = 0, np.nan, ""  # none
    df["finish_repeat"] = 0  # the paper ran no embedded model: no fold stopped at a repeat
    rows = df[columns.ROWS].copy()
    rows["headings_carried"] = rows["headings_carried"].astype(float)
    return rows.reset_index(drop=True), checks


def paper_package_dir(d: str | Path, seed: int = SEED) -> Path:
    """The package in directory d: rows.csv and checks.csv, no manifest."""
    from foldstudy.evidence.load import write_table

    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    rows, checks = paper_package(seed)
    write_table(rows, d / "rows.csv")
    write_table(checks, d / "checks.csv")
    return d


if __name__ == "__main__":
    print(paper_package_dir(sys.argv[1] if len(sys.argv) > 1 else "paper-package"))
