"""A carry built piece by piece, and the two ways a schema reply is rendered back to
text (one heading per field; the fields under the fixed headings): what the carriers
that read a schema reply build their carry from.
"""

from __future__ import annotations

from typing import Any

from .types import JsonObject


class Rendered:
    """A carry built piece by piece, each piece the model's (a field's value, a plain
    reply) or the harness's (a heading, a "Title: " label, a bullet, a separator).

    The carry sent on is the pieces joined, byte for byte what it always was; fill and
    clipping are measured on the model's pieces (paper §4.9: the carried text "landed
    within 0.5% of the declared ceiling" is about what the model wrote, and a t reply
    at its 4,800-char ceiling is not 1.0017 of it because the carry adds "Summary\n").
    """

    def __init__(self, text: str = "", model: bool = False) -> None:
        self.pieces: list[tuple[str, bool]] = []
        self.add(text, model)

    def add(self, text: str, model: bool = False) -> Rendered:
        if text:
            self.pieces.append((text, model))
        return self

    def rstrip(self) -> Rendered:
        """Trailing whitespace removed across pieces, as str.rstrip of the joined text."""
        while self.pieces:
            text, model = self.pieces[-1]
            if text.rstrip():
                self.pieces[-1] = (text.rstrip(), model)
                break
            self.pieces.pop()
        return self

    @staticmethod
    def join(parts: list[Rendered], sep: str) -> Rendered:
        out = Rendered()
        for i, part in enumerate(parts):
            out.add(sep if i else "")
            out.pieces += part.pieces
        return out

    @property
    def text(self) -> str:
        return "".join(t for t, _ in self.pieces)

    def model_text(self) -> str:
        """What the model wrote, its pieces one per line, without the harness's labels."""
        return "\n".join(t for t, model in self.pieces if model)

    def model_chars(self, upto: int | None = None) -> int:
        """The model's characters among the first `upto` of the text (all: None): what a
        carry clipped to that prefix still holds of the model's writing."""
        left = len(self.text) if upto is None else upto
        n = 0
        for text, model in self.pieces:
            take = min(len(text), max(left, 0))
            n += take if model else 0
            left -= len(text)
        return n


def _title(name: str, prop: dict[str, Any]) -> str:
    return prop.get("title") or name.replace("_", " ").capitalize()


def fields_rendered(obj: JsonObject, schema: JsonObject) -> Rendered:
    """render_fields, with each piece marked the model's or the harness's."""
    parts = []
    for name, prop in schema["properties"].items():
        part = Rendered(f"{_title(name, prop)}\n")
        value = obj.get(name, "")
        if isinstance(value, list):
            for i, v in enumerate(value):
                part.add("\n- " if i else "- ").add(f"{v}", True)
        else:
            part.add(str(value), True)
        parts.append(part.rstrip())
    return Rendered.join(parts, "\n\n")


def render_fields(obj: JsonObject, schema: JsonObject) -> str:
    """A schema reply rendered back to headed text: one heading per field, in schema order."""
    return fields_rendered(obj, schema).text


def headings_rendered(obj: JsonObject, schema: JsonObject,
                      sections: dict[str, list[str]]) -> Rendered:
    """render_under_headings, with each piece marked the model's or the harness's."""
    parts = []
    for heading, fields in sections.items():
        part = Rendered(f"{heading}\n")
        for i, name in enumerate(fields):
            title = _title(name, schema["properties"][name])
            value = obj.get(name, "")
            part.add("\n" if i else "")
            if isinstance(value, list):
                part.add(f"{title}:")
                for v in value:
                    part.add("\n- ").add(f"{v}", True)
            else:
                part.add(f"{title}: ").add(f"{value}", True)
        parts.append(part)
    return Rendered.join(parts, "\n\n")


def render_under_headings(obj: JsonObject, schema: JsonObject,
                          sections: dict[str, list[str]]) -> str:
    """A reply of named fields carried under the five fixed headings.

    Paper §4.8: "A five-field schema does not merely suggest division -- it guarantees it,
    because the carry is the concatenation of the named fields under their headings: q
    carries five sections on 134 of 134 rows, and k on 39 of 39." k's semantic fields are
    grouped under the headings as resources/arms.yaml says (`sections`).
    """
    return headings_rendered(obj, schema, sections).text
