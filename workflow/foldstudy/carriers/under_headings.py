"""`under_headings`: a schema reply's fields rendered under the five fixed headings
(paper §3.2 arm k)."""

from __future__ import annotations

from ..errors import SpecError
from .base import Carrier
from .registry import register_carrier
from .render import Rendered, headings_rendered
from .types import ArmView, JsonObject


@register_carrier
class UnderHeadings(Carrier):
    """Paper §4.8: "the carry is the concatenation of the named fields under their
    headings". Which field sits under which heading is the arm's `sections`."""

    kind = "under_headings"
    pattern = "under_headings"
    words = "the schema's fields rendered under the five fixed headings (capacity.json " \
            "`sections`)"

    def check(self, arm_id: str, sections: dict[str, list[str]], headings: list[str],
              schema: JsonObject | None) -> None:
        """Every fixed heading gets fields, and every field of the schema lands under one."""
        where = f"arms.{arm_id}.sections"
        if list(sections) != list(headings):
            raise SpecError(f"{where}: {list(sections)} must be the fixed headings in order "
                            f"({', '.join(headings)})")
        fields = [f for fs in sections.values() for f in fs]
        declared = list((schema or {}).get("properties", {}))
        if sorted(fields) != sorted(declared):
            raise SpecError(f"{where}: fields {sorted(fields)} must be the schema's fields, "
                            f"each once ({', '.join(declared)})")

    def render(self, arm: ArmView, obj: JsonObject, reply_text: str) -> Rendered:
        assert arm.schema is not None
        return headings_rendered(obj, arm.schema, arm.sections)

    def carried_fields(self, arm: ArmView) -> list[str]:
        return [f for fs in arm.sections.values() for f in fs] if arm.schema else []
