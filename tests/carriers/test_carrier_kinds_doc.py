"""docs/own-sessions.md's table of carrier kinds names every kind the registry holds: a
kind added to carriers/ fails here until an engineer choosing an arm can read it."""

from __future__ import annotations

import re

from foldstudy.carriers.registry import carrier_classes

from ..conftest import ROOT


def doc_kinds() -> set[str]:
    """The `carry:` values in the first column of the section's table, below its header."""
    doc = (ROOT / "docs/own-sessions.md").read_text(encoding="utf-8")
    section = doc.split("## The carrier kinds", 1)[1].split("\n## ", 1)[0]
    body = section.split("|---", 1)[1]
    return set(re.findall(r"^\| `([^`]+)` \|", body, flags=re.M))


def test_the_table_names_every_registered_kind_and_no_other():
    registered = {cls.shown or cls.kind for cls in carrier_classes().values()}
    assert doc_kinds() == registered


def test_a_kind_missing_from_the_table_is_found(monkeypatch):
    """The check reads the table, not the registry twice: a kind the table lacks shows."""
    assert "trim" in doc_kinds()
    text = (ROOT / "docs/own-sessions.md").read_text(encoding="utf-8")
    trimmed = "\n".join(line for line in text.splitlines() if not line.startswith("| `trim`"))
    monkeypatch.setattr("pathlib.Path.read_text", lambda self, encoding=None: trimmed)
    assert "trim" not in doc_kinds()
