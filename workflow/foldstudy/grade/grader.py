"""The one grader (paper §3.1, §4.10, §4.11): pure functions, text in, verdicts out.

Score: label-bound whole-token. The answer line for a label must hold the value as a
whole token, so a value inside a longer token, or the right value under another label,
does not count. Diagnostics, never the score: the unit-lenient variant (number kept,
unit word dropped), presence of the value in the final carry (same boundary rule),
abstention markers, and whether a wrong value has the stock-value signature.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The boundary rule is the study's, written once (study/boundary.py): a user's session
# plants its facts with the same rule that grades them.
from ..study.boundary import has_whole_token, whole_token_pattern  # noqa: F401
from ..study.fixture_types import Fact

# Typographic apostrophes and primes a model writes for ' ("I don’t know").
APOSTROPHES = str.maketrans({c: "'" for c in "\u2018\u2019\u02bc\u2032\uff07`"})


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.translate(APOSTROPHES).casefold())


def answer_lines(answer: str, labels: list[str]) -> dict[str, str | None]:
    """The text of the answer line that belongs to each label (after the label itself).

    A line belongs to a label when it names the label; failing that, when it starts with
    the label's number from the recall turn ("3." / "3)"). Labels are asked numbered.
    """
    lines = answer.splitlines()
    out: dict[str, str | None] = {}
    for i, label in enumerate(labels, start=1):
        found = None
        key = re.compile(r"\s+".join(map(re.escape, label.split())), re.IGNORECASE)
        for line in lines:
            m = key.search(line)
            if m:
                found = line[m.end() :]
                break
        if found is None:
            num = re.compile(rf"^\s*[*#-]*\s*{i}\s*[.):]\s*(.*)$")
            for line in lines:
                m = num.match(line)
                if m:
                    found = m.group(1)
                    break
        out[label] = found
    return out


# Numbering, bullets and emphasis before a line's value, and what may close it.
_LEAD = re.compile(r"^[\s*#>_`-]*(?:\d+\s*[.):]\s*)?")
_EDGE = " \t*_`\"'.,;:!?()[]-"


def line_values(text: str) -> list[str]:
    """Each line's value: its text after any numbering and label (up to ": "), with
    emphasis and closing punctuation stripped."""
    out = []
    for line in _norm_lines(text):
        v = _LEAD.sub("", line)
        if ": " in v:
            v = v.split(": ", 1)[1]
        out.append(v.strip(_EDGE))
    return out


def _norm_lines(text: str) -> list[str]:
    return [_norm(line) for line in text.splitlines()] or [""]


def abstention_in(text: str, markers: list[Any]) -> bool:
    """Paper §4.11's abstention: a phrase marker anywhere in the text, or a
    `{whole_value: w}` marker as the whole value of one of its lines."""
    t = _norm(text)
    phrases = [m for m in markers if isinstance(m, str)]
    whole = {m["whole_value"].casefold() for m in markers if isinstance(m, dict)}
    if any(re.search(rf"(?<![\w-]){re.escape(m.casefold())}(?![\w-])", t) for m in phrases):
        return True
    return bool(whole) and any(v in whole for v in line_values(text))


# Paper §4.11: "only the first 400 characters of each answer were retained ... The counts
# above are likewise computed on that prefix".
PAPER_ANSWER_PREFIX = 400


def answer_abstains(answer: str, markers: list[Any]) -> tuple[bool, bool]:
    """Whether the answer holds an abstention marker anywhere, and within its first 400
    characters (the paper's counts compare with the second).

    Paper §4.11: "Classifying every failing row (recall < 0.5) by whether its answer
    contains any abstention marker at all". A row that says "I do not know" in a preamble
    and then fills every line abstains, though no label line holds a marker (checks.csv's
    `abstained` is the per-line test).
    """
    return (abstention_in(answer, markers),
            abstention_in(answer[:PAPER_ANSWER_PREFIX], markers))


@dataclass(frozen=True)
class StockSignature:
    """High-frequency instances of each value type (paper §4.11's greppable signature)."""

    ports: frozenset[int]
    placeholder_hosts: tuple[str, ...]
    example_uuids: tuple[str, ...]
    round_minutes: frozenset[int]
    round_count_divisors: tuple[int, ...]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StockSignature:
        return cls(
            ports=frozenset(int(p) for p in d["ports"]),
            placeholder_hosts=tuple(d["placeholder_hosts"]),
            example_uuids=tuple(u.lower() for u in d["example_uuids"]),
            round_minutes=frozenset(d["round_minutes"]),
            round_count_divisors=tuple(d["round_count_divisors"]),
        )

    def matches(self, fact_class: str, text: str) -> bool:
        t = text.casefold()
        if fact_class == "port":
            return any(int(n) in self.ports for n in re.findall(r"(?<!\d)\d{2,5}(?!\d)", t))
        if fact_class in ("url", "dns_zone"):
            return any(h in t for h in self.placeholder_hosts)
        if fact_class == "uuid":
            return any(u in t for u in self.example_uuids)
        if fact_class == "utc_time":
            return any(int(m) in self.round_minutes for m in re.findall(r"\d{1,2}:(\d{2})", t))
        if fact_class == "shard_count":
            nums = [int(n) for n in re.findall(r"(?<!\d)\d{1,4}(?!\d)", t)]
            return any(
                n > 0 and (any(n % d == 0 for d in self.round_count_divisors) or n & (n - 1) == 0)
                for n in nums
            )
        return False


def number_part(fact: Fact) -> str:
    """The value without its unit word ("19 shards" -> "19")."""
    if fact.unit and fact.value.endswith(" " + fact.unit):
        return fact.value[: -len(fact.unit) - 1]
    return fact.value


def grade_check(
    fact: Fact,
    line: str | None,
    final_carry: str | None,
    markers: list[Any],
    stock: StockSignature,
) -> dict[str, Any]:
    """One graded fact of one run: the checks.csv columns it determines. final_carry
    None: the carry is opaque (a native arm's encrypted compaction), so in_carrier is
    empty and only the answer is graded."""
    text = line or ""
    correct = has_whole_token(fact.value, text)
    lenient = correct or (bool(fact.unit) and has_whole_token(number_part(fact), text))
    abstained = abstention_in(text, markers) if text else False
    answered = bool(re.search(r"\w", text))
    fabricated = answered and not correct and not abstained
    return {
        "label": fact.label,
        "fact_class": fact.fact_class,
        "expected": fact.value,
        "in_carrier": None if final_carry is None else has_whole_token(fact.value,
                                                                      final_carry),
        "correct": correct,
        "correct_unit_lenient": lenient,
        "abstained": abstained,
        "answered": answered,
        "fabricated": fabricated,
        "stock_signature": fabricated and stock.matches(fact.fact_class, text),
        "answer_line": text.strip(),
    }


def grade_answer(
    facts: list[Fact],
    answer: str,
    final_carry: str | None,
    markers: list[Any],
    stock: StockSignature,
) -> list[dict[str, Any]]:
    lines = answer_lines(answer, [f.label for f in facts])
    return [grade_check(f, lines[f.label], final_carry, markers, stock) for f in facts]


# A heading is a line of its own ("## Decisions", "**Decisions**", "Decisions:"), or opens
# a line with a colon ("Decisions: none"); "Decisions were made" is not one.
FIXED_HEADING_RE = r"^[ \t]*(?:#+[ \t]*|\*\*)?{h}[ \t]*(?:\*\*)?[ \t]*(?::.*)?$"


def headings_carried(carry: str, headings: list[str]) -> int:
    """How many of the fixed headings open a line of the carry (0-5, paper §4.8)."""
    n = 0
    for h in headings:
        pat = FIXED_HEADING_RE.format(h=re.escape(h))
        if re.search(pat, carry, flags=re.IGNORECASE | re.MULTILINE):
            n += 1
    return n


def json_envelope_carried(carry: str) -> bool:
    s = carry.strip()
    return s.startswith("{") and s.endswith("}")
