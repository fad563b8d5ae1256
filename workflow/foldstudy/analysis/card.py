"""The decision card as one typed record: what analysis/decision.py decides per (sweep,
model), what results/decision.json holds, and what report/decision.py and report/gate.py
read back, declared here once (docs/design.md §6, Decision).

Every record of a card (the card, a contrast's verdict, each kind of line) is a frozen
dataclass built by keyword, and shares one to_dict/from_dict pair (`CardRecord`) derived
from its fields' types, so a field is written and read without code of its own. from_dict
checks each value against its field's type once, where decision.json is read: a field
missing, a value of the wrong type or a key no field names is refused in one line
naming the field (`CardShapeError`; report/decision.py read_decision adds the file), so
the words and the gate work with checked records and never choose a default of their own.

A card line is one field here and one renderer in report/card_words.py (registered with
`card_line` under the field's name, in the order the card shows them). A line most cards
do not have is declared with `omitted_when_empty`: to_dict leaves it out where it is
empty (a card without one reads as it did before the line existed) and from_dict reads
its absence as that empty default.
"""

from __future__ import annotations

import json
import math
import types
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from ..io import MalformedFile

# The source of a card's A/A line (config sweeps.X.controls.aa): an arm against an exact
# copy of itself through the same endpoint. Any verdict but equivalent or undecided there
# is the instrument's own noise or drift, not a carrier's difference.
AA_SOURCE = "A/A control: the arm against its exact copy"

R = TypeVar("R", bound="CardRecord")
OMIT_WHEN_EMPTY = "omitted_when_empty"


class CardShapeError(MalformedFile):
    """A card's dict that is not of the card's shape, naming the field (`cards[2].contrasts[0].
    p_adjusted: "x" is not a number`)."""


def omitted_when_empty(default: Any = MISSING, default_factory: Any = MISSING) -> Any:
    """A field to_dict leaves out where it is empty and from_dict reads as its default
    where absent: a line most cards do not have, so a card without one is written as it
    was before the line existed."""
    return field(default=default, default_factory=default_factory,
                 metadata={OMIT_WHEN_EMPTY: True})


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """A record class's field types, its annotations resolved once."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _plain(v: Any) -> Any:
    """v as JSON holds it: a record as its dict, containers of records likewise (tuples
    stay tuples, as dataclasses.asdict keeps them; JSON writes both as lists)."""
    if isinstance(v, CardRecord):
        return v.to_dict()
    if isinstance(v, list | tuple):
        return type(v)(_plain(x) for x in v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


_JSON_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "text"}


def _wrong(where: str, v: Any, what: str) -> CardShapeError:
    shown = json.dumps(v, default=str)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return CardShapeError(f"{where}: {shown} is not {what}")


def _read(tp: Any, v: Any, where: str) -> Any:
    """v checked against the type tp, as the record holds it. A float field's null is NaN:
    decision.json writes a missing number as null (report/decision.py json_safe)."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return v
    if origin in (Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _read(inner, v, where)
    if isinstance(tp, type) and issubclass(tp, CardRecord):
        return tp.from_dict(v, where)
    if origin is list:
        if not isinstance(v, list):
            raise _wrong(where, v, "a list")
        return [_read(args[0], x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin is tuple:
        if not isinstance(v, list | tuple) or len(v) != len(args):
            raise _wrong(where, v, f"a list of {len(args)}")
        return tuple(_read(t, x, f"{where}[{i}]")
                     for i, (t, x) in enumerate(zip(args, v, strict=True)))
    if origin is dict:
        if not isinstance(v, dict):
            raise _wrong(where, v, "an object")
        return {k: _read(args[1], x, f"{where}.{k}") for k, x in v.items()}
    if tp is float and v is None:
        return math.nan
    ok = (isinstance(v, bool) if tp is bool else
          isinstance(v, int | float) and not isinstance(v, bool) if tp is float else
          isinstance(v, tp) and not isinstance(v, bool) if tp is int else isinstance(v, tp))
    if not ok:
        raise _wrong(where, v, _JSON_WORDS.get(tp, tp.__name__))
    return v


def _required(f: Field[Any]) -> bool:
    return not f.metadata.get(OMIT_WHEN_EMPTY)


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


@dataclass(frozen=True, kw_only=True)
class CardRecord:
    """A record of a card: written with to_dict, read back, checked, with from_dict."""

    def to_dict(self) -> dict[str, Any]:
        """The record as decision.json holds it (before json_safe writes NaN as null)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if _required(f) or getattr(self, f.name)}

    @classmethod
    def from_dict(cls: type[R], d: Any, where: str = "") -> R:
        """The record of d as to_dict wrote it, each field checked against its type;
        anything else is refused naming the field (where: the path to d)."""
        at = f"{where}." if where else ""
        if not isinstance(d, dict):
            raise _wrong(where or cls.__name__, d, "an object")
        own = fields(cls)
        names = {f.name for f in own}
        if unknown := sorted(set(d) - names):
            raise CardShapeError(f"{at}{unknown[0]}: not a field of {cls.__name__}")
        kw: dict[str, Any] = {}
        for f in own:
            if f.name in d:
                kw[f.name] = _read(_hints(cls)[f.name], d[f.name], f"{at}{f.name}")
            elif _required(f):
                raise CardShapeError(f"{at}{f.name}: missing")
            else:
                kw[f.name] = _default(f)
        return cls(**kw)


@dataclass(frozen=True, kw_only=True)
class ContrastVerdict(CardRecord):
    """One contrast of a card: b - a over blocks, its tests and its one word."""

    a: str
    b: str
    source: str  # "analysis" (the sweep's pairs), "own arm", "decide", NATIVE_SOURCE
    blocks: int
    a_mean: float
    b_mean: float
    difference: float  # b - a, mean over blocks
    ci_low: float | None
    ci_high: float | None
    p_permutation: float | None
    tost_p: float | None
    equivalent: bool
    word: str
    icc: float
    icc_source: str
    # undecided only: the repeats in all that would decide it, the more to run, their cost
    repeats_to_decide: int | None = None
    planned_difference: float | None = None  # the difference that plan is made at
    planned_test: str | None = None  # power.DIFFERENCE or power.EQUIVALENCE
    more_repeats: int | None = None
    more_calls: int | None = None
    more_usd: float | None = None
    k: float = float("nan")  # checks per row, which the plan to decide reads
    # error control over the family (decide.family): the p the word reads, beside the raw
    # one; the family's name and size; how it was adjusted; the level the adjusted p
    # is compared with
    p_adjusted: float | None = None
    family: str = ""
    family_size: int = 1
    adjustment: str = ""
    level: float | None = None
    # the noise floor, where the cell ran an A/A control (noise_floor): the half-width of
    # the A/A difference's interval, and whether this contrast's difference lies inside
    # it (then its word is undecided, never a finding)
    aa_floor: float | None = None
    inside_noise: bool = False


@dataclass(frozen=True, kw_only=True)
class Diagnosis(CardRecord):
    """Paper §4.6-4.7 on one model: the undivided arm j, its fill, and q's rescue."""

    j_n: int
    j_mean: float
    failing: bool
    borderline: bool
    j_fill: float | None
    mode: str  # "healthy", "description", "gist", BETWEEN, "unknown"
    q_mean: float | None
    rescued: bool | None


@dataclass(frozen=True, kw_only=True)
class Loudness(CardRecord):
    """Paper §4.11 on one model: its failing rows, abstaining or fabricating."""

    failing_rows: int
    abstained: int
    fabricated: int  # no abstention marker anywhere in the answer
    stock: int  # failing rows with a stock-value signature among their values
    caught_by_abstention_log: float | None  # abstained / failing_rows
    # the stock rows split by the two classes above (they overlap: a row that abstains on
    # one label may answer another with a stock value); None where no row recorded its
    # stock values (a package without n_stock_signature)
    stock_fabricated: int | None = None
    stock_abstained: int | None = None


@dataclass(frozen=True, kw_only=True)
class OwnArmCheck(CardRecord):
    """Paper §5 on a user's own arm: whether it holds an undivided free-text slot."""

    arm: str
    twin: str
    undivided_slot: bool
    why: str


@dataclass(frozen=True, kw_only=True)
class IndexLine(CardRecord):
    """An index arm against its base arm in one cell (b − a: index arm minus
    base over blocks, with its permutation p and TOST), and whether the index rescued a
    failing carrier: the base below failing_recall and the index arm at rescued_recall or
    more (paper §4.7's threshold, 0.5). rescued is None where the base was not failing."""

    arm: str
    base: str
    verdict: ContrastVerdict
    base_failing: bool
    rescued: bool | None


@dataclass(frozen=True, kw_only=True)
class CeilingLine(CardRecord):
    """An arm read against the ceiling (carriers/base.py `ceiling`: `uncompacted`, whose
    recall turn reads the whole session) over the blocks that ran both: of the graded
    facts the arm lost, those the ceiling recalled in the same block are the carrier's
    loss, those it missed too the recall turn's (the model could not answer them even
    reading everything). ceiling_recall: the ceiling's mean recall over those blocks."""

    arm: str
    ceiling: str
    blocks: int
    lost: int
    carrier_lost: int
    recall_lost: int
    ceiling_recall: float


@dataclass(frozen=True, kw_only=True)
class OwnCompactionLine(CardRecord):
    """A sweep on the user's own session whose file holds the CLI's own compaction
    (study/sessions.py baseline): that compaction against your best arm, outside the
    matched comparison. held of facts: the graded facts its summaries hold (the presence
    grader's rule); carried and recall: the best arm's mean share of them in its final
    carry and in its answers over its valid rows; the sizes in characters."""

    summaries: int
    summary_chars: int
    held: int
    facts: int
    arm: str
    rows: int
    carried: float
    recall: float
    carry_chars: float


@dataclass(frozen=True, kw_only=True)
class Overrun(CardRecord):
    """Calls the ledger logged on a model's endpoint billed above their reservation (the
    one way what was spent passes a staged decision's worst case): how many, how many
    were the endpoint's first call, and the dollars past what they reserved."""

    count: int
    first_call: int
    excess_usd: float


@dataclass(frozen=True, kw_only=True)
class StagedSummary(CardRecord):
    """What a model's staged decision (`decide:`) took, from its sweep's final look
    (report/decision.py staged_summaries), its dollars priced as the ledger reserves now
    (reprice_staged): the outcome and why it stopped, repeats and looks, the spend, one
    repeat's price and the worst cases of the repeats taken and of the fixed design at
    max_repeats, what is left to it, the last look's p against its nominal level, the
    family its looks split alpha over, and whether the budget stopped it mid-stage."""

    stop: str
    repeats: int
    looks: int
    max_repeats: int
    usd: float | None = None
    price_per_repeat_usd: float | None = None
    fixed_usd: float | None = None
    staged_worst_usd: float | None = None
    remaining_repeats: int | None = None
    remaining_usd: float | None = None
    p: float | None = None
    nominal: float | None = None
    family_size: int = 1
    mid_stage: bool = False
    price_basis: str | None = None
    overrun: Overrun | None = None


@dataclass(frozen=True, kw_only=True)
class FamilyCost(CardRecord):
    """What a family of many contrasts costs each of them in power (Holm's first step
    judges the smallest p at alpha / size): the level, the fewest blocks whose sign-flip
    p can reach it against alpha's, and the repeats per model that detect a difference
    of `difference` (the margin) at the card's power, at the family's level and alone,
    at the family's median ICC and checks per row. repeats None: no number decides it."""

    size: int
    alpha: float
    level: float
    min_blocks: int
    min_blocks_alone: int
    difference: float
    power: float
    repeats: int | None
    repeats_alone: int | None
    key: str  # the config key that narrows the family (sweeps.X.compare)


@dataclass(frozen=True, kw_only=True)
class Card(CardRecord):
    """One (sweep, model)'s decision card. Each field past the first four is a line of
    the card, rendered by the function report/card_words.py registers under its name."""

    sweep: str
    model: str
    valid_rows: int
    all_lost: bool
    contrasts: list[ContrastVerdict] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    loudness: Loudness | None = None
    own_arms: list[OwnArmCheck] = field(default_factory=list)
    # decide: the repeats this model took and what they cost
    staged: StagedSummary | None = None
    price_basis: str | None = None  # how the card's dollars are priced
    # A line per index arm that ran in the cell, against its base arm; outside
    # the verdicts' family (an index arm is outside the matched comparison)
    index_lines: list[IndexLine] = field(default_factory=list)
    # arm -> what its carrier's failed folds were in the cell ("3 of 12 folds returned
    # no compaction", fold_failures): said on the card and beside each of its contrasts
    fold_failures: dict[str, str] = omitted_when_empty(default_factory=dict)
    # a line per arm of the cell read against the ceiling that ran beside it (outside
    # the verdicts' family: the ceiling is outside the matched comparison)
    ceiling_lines: list[CeilingLine] = omitted_when_empty(default_factory=list)
    # arm -> its rows that missed a control fact the ceiling recalled in the same block,
    # and its rows read so (control_lost_rows): those rows' losses are not the carrier's alone
    control_lost: dict[str, tuple[int, int]] = omitted_when_empty(default_factory=dict)
    # arm -> the row ids of those rows (each flagged "control lost" on the decision page)
    control_lost_rows: dict[str, list[str]] = omitted_when_empty(default_factory=dict)
    # arm -> (folds the embedded backend ended at a repetition, folds) over the cell's
    # valid rows (repeat_stops): what those folds wrote is their text up to the stop
    repeat_stops: dict[str, tuple[int, int]] = omitted_when_empty(default_factory=dict)
    # the cell's rows another model served (validity: served_by_other), each as
    # "row_id (served by model)": left out of every number on the card, and named there
    served_by_other: list[str] = omitted_when_empty(default_factory=list)
    # the CLI's own compaction against your best arm (a session whose file holds one)
    own_compaction: OwnCompactionLine | None = omitted_when_empty(default=None)
    # the pairs of matched arms that ran in the cell which no contrast reads (a sweep of
    # more than PAIRS_UP_TO matched arms, or its own `compare`), and the config key that
    # adds them (sweeps.X.compare)
    unread_pairs: list[tuple[str, str]] = omitted_when_empty(default_factory=list)
    compare_key: str = omitted_when_empty(default="")
    # a sweep of more than PAIRS_UP_TO matched arms: what the family's size costs in
    # power (FamilyCost), said on the card with how to narrow it
    family_cost: FamilyCost | None = omitted_when_empty(default=None)

    @property
    def aa_lines(self) -> list[ContrastVerdict]:
        """The card's A/A lines (AA_SOURCE): each arm against its exact copy."""
        return [v for v in self.contrasts if v.source == AA_SOURCE]

    @property
    def instrument_fails(self) -> list[ContrastVerdict]:
        """The A/A lines declared different: an arm "better" than its exact copy is the
        instrument failing (the endpoint's drift, or noise the test does not hold), so no
        other word on the card can be read as the carriers'."""
        return [v for v in self.aa_lines if v.word.endswith(" better")]


@dataclass(frozen=True, kw_only=True)
class Decision(CardRecord):
    """results/decision.json: the cards, and the margin, family and alpha they were read
    at (the page's forest plot reads the margin, the gate the family)."""

    margin: float
    family: str
    alpha: float
    cards: list[Card]


def read_decision(path: str | Path) -> Decision:
    """decision.json as the typed cards, checked once: a file that lacks a field, holds
    one of the wrong type or one no card names is refused in one line naming the file
    and the field (the words and the gate would otherwise fail on it as a KeyError)."""
    p = Path(path)
    rebuild = "rebuild it: snakemake --forcerun decision"
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MalformedFile(f"{p}: not readable as a decision file (JSON: {e}); "
                            f"{rebuild}") from None
    try:
        return Decision.from_dict(obj)
    except CardShapeError as e:
        raise MalformedFile(f"{p}: not a decision file ({e}); {rebuild}") from None
