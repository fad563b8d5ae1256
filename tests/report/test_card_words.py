"""A card's words (report/card_words.py): each line of a card is one Card field and one
renderer registered under its name, so a new line is those two and nothing else."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

from foldstudy.analysis.card import Card, omitted_when_empty
from foldstudy.analysis.plan import AnalysisPlan
from foldstudy.report import card_words
from foldstudy.report.card_words import CARD_LINES, card_line, card_markdown, paragraphs
from foldstudy.report.decision import decision_markdown, json_safe

from ..support.cards import full_card

PLAN = AnalysisPlan.load()
# The fields the card's heading says, and those another field's line says beside it.
HEADING = {"sweep", "model", "valid_rows"}
SAID_BY = {"control_lost_rows": "control_lost", "compare_key": "unread_pairs"}


def test_every_field_of_a_card_has_a_renderer():
    rendered = {line.field for line in CARD_LINES}
    assert rendered <= {f.name for f in fields(Card)}
    assert {f.name for f in fields(Card)} - rendered == HEADING | set(SAID_BY)
    assert set(SAID_BY.values()) <= rendered


def test_every_line_of_a_full_card_is_said():
    text = "\n".join(card_markdown(full_card(), PLAN))
    for words in ("Contrasts (", "Pairs not read", "The family's size costs power",
                  "Staged decision", "Dollar figures on this card: listed prices",
                  "Diagnosis (paper §4.6–4.7)", "How it fails (paper §4.11)",
                  "Your arm `mine`", "Index arm `m+index`", "Against the ceiling",
                  "**Control lost: j", "**native: 2 of 8 folds returned no compaction**",
                  "*m: 2 of 24 folds ended", "served by a model other than `x`"):
        assert words in text, words


@dataclass(frozen=True, kw_only=True)
class NotedCard(Card):
    """A card with one line more, declared as a new line is: one field..."""

    reviewer_note: str = omitted_when_empty(default="")


def _note(c: Card, plan: AnalysisPlan) -> list[str]:
    """...and one renderer."""
    return paragraphs([f"Reviewer's note: {c.reviewer_note}"] if c.reviewer_note else [])


def test_a_new_line_is_one_field_and_one_renderer(monkeypatch):
    base = full_card()
    before = card_markdown(base, PLAN)
    monkeypatch.setattr(card_words, "CARD_LINES", list(CARD_LINES))
    card_line("reviewer_note")(_note)
    c = NotedCard(**{f.name: getattr(base, f.name) for f in fields(Card)},
                  reviewer_note="rerun m on the new endpoint")
    # through decision.json and back, by the one to_dict/from_dict every card has
    d = json.loads(json.dumps(json_safe(c.to_dict())))
    assert d["reviewer_note"] == "rerun m on the new endpoint"
    again = NotedCard.from_dict(d)
    assert again.reviewer_note == c.reviewer_note
    assert json.loads(json.dumps(json_safe(again.to_dict()))) == d
    # said on the card, last (registered last), and in decision.md
    lines = card_markdown(again, PLAN)
    assert lines[-2:] == ["Reviewer's note: rerun m on the new endpoint", ""]
    assert "Reviewer's note: rerun m" in decision_markdown([again], PLAN, 0.1)
    # a card without a note is written and worded as before the line existed
    plain = NotedCard(**{f.name: getattr(base, f.name) for f in fields(Card)})
    assert "reviewer_note" not in plain.to_dict()
    assert card_markdown(plain, PLAN) == before
