"""A gateway stand-in whose model drops identifiers by the shape of the reply it is asked
for: a one-field schema loses 60% of the planted values, plain text 10%, any
other schema 10% (the rates are the test's). Plugged into the stand-in through its
`reply` option (tests/support/gateway_standin.py), so the stand-in's routing, billing and
faults are untouched.

The model it plays reads the fold's request: each graded value that arrives in the NEXT
CHUNK is kept with probability 1 - drop(shape), once (a value already in the previous
summary stays), and written back as `label: value` lines in the reply's first string
field (schema) or under an Identifiers heading (plain). At the recall turn it answers each
numbered item with the value its summary holds, or `unknown`. Seeded, and under the
stand-in's lock, so a -c1 run draws the same values in the same order.
"""

from __future__ import annotations

import json
import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any

ONE_FIELD, PLAIN, OTHER = "one_field", "plain", "other_schema"


def reply_shape(body: dict[str, Any]) -> str:
    """The shape a fold asks for: one string field, plain text, or another schema."""
    rf = body.get("response_format") or {}
    if rf.get("type") != "json_schema":
        return PLAIN
    props = rf["json_schema"]["schema"].get("properties", {})
    strings = [k for k, p in props.items() if p.get("type") == "string"]
    return ONE_FIELD if len(strings) == 1 else OTHER


@dataclass
class ShapedModel:
    facts: dict[str, str]  # graded label -> value (the fixture's)
    drop: dict[str, float]  # shape -> share of new values lost
    seed: int = 0
    # At the recall turn, a value standing alone on a line of what it reads
    # (an index arm's identifier index, one token a line) counts as held too. A real
    # model must still match the bare token to its label; this one is told the labels'
    # values, so it reads the index as well as a model could at best.
    reads_index: bool = False
    # At the recall turn, a value anywhere in what it reads counts as held: the model
    # reads a kept session (the carriers that keep the session's text, which state a
    # fact in a sentence, never as `label: value`) as well as a model could at best.
    reads_session: bool = False
    # Labels kept at every fold that reads their value, whatever the shape: a model
    # playing a working carrier keeps the control facts (config sweeps.X.controls.tail),
    # which sit where every working carrier keeps them, so a row that misses one points
    # at its recall turn or grader, not at the draw.
    keeps: frozenset[str] = frozenset()
    rng: random.Random = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, body: dict[str, Any], default: str) -> str:
        user = str(body.get("messages", [{}])[-1].get("content", ""))
        if user.startswith("SUMMARY:"):
            return self.answer(user)
        return self.fold(body, user, default)

    def _held(self, text: str) -> dict[str, str]:
        return {lab: v for lab, v in self.facts.items() if f"{lab}: {v}" in text}

    def fold(self, body: dict[str, Any], user: str, default: str) -> str:
        prev, _, chunk = user.partition("NEXT CHUNK")
        kept = self._held(prev)
        rate = self.drop[reply_shape(body)]
        with self.lock:
            for lab, v in self.facts.items():
                if lab not in kept and v in chunk and (lab in self.keeps
                                                       or self.rng.random() >= rate):
                    kept[lab] = v
        lines = "\n".join(f"{lab}: {v}" for lab, v in kept.items()) or "none"
        if reply_shape(body) == PLAIN:
            return f"Identifiers\n{lines}\n"
        obj = json.loads(default)
        schema = body["response_format"]["json_schema"]["schema"]
        first = next(k for k, p in schema["properties"].items() if p.get("type") == "string")
        obj[first] = lines
        return json.dumps(obj)

    def answer(self, user: str) -> str:
        summary, _, items = user.partition("Give the value of each item")
        held = self._held(summary)
        if self.reads_session:
            held |= {lab: v for lab, v in self.facts.items() if lab not in held and v in summary}
        if self.reads_index:
            lines = {line.strip() for line in summary.splitlines()}
            held |= {lab: v for lab, v in self.facts.items() if lab not in held and v in lines}
        out = []
        for n, label in re.findall(r"^(\d+)\. (.+)$", items, flags=re.M):
            out.append(f"{n}. {label}: {held.get(label.strip(), 'unknown')}")
        return "\n".join(out)


def fixture_facts(path: str) -> dict[str, str]:
    """The graded facts of a built fixture (results/fixtures/<sweep>/fixture.json)."""
    doc = json.loads(open(path, encoding="utf-8").read())
    return {f["label"]: str(f["value"]) for f in doc["facts"] if f["graded"]}
