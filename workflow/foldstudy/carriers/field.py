"""`field:NAME`: only that field's text is carried (paper §3.2 arm n).

Paper §5 on n: "two of its three fields ... are discarded rather than carried, so what
reaches the next fold is again a single free-text slot".
"""

from __future__ import annotations

from .base import Carrier
from .registry import register_carrier
from .render import Rendered
from .types import ArmView, JsonObject


@register_carrier
class Field(Carrier):
    """One named field of the reply, as written, is the carry."""

    kind = "field"
    pattern = "field:[A-Za-z0-9_]+"
    shown = "field:NAME"

    @property
    def field(self) -> str:
        return self.name.split(":", 1)[1]

    def describe(self, arm: ArmView) -> str:
        return f"the field `{self.field}` only"

    def render(self, arm: ArmView, obj: JsonObject, reply_text: str) -> Rendered:
        return Rendered(str(obj.get(self.field, "")), True)

    def carried_fields(self, arm: ArmView) -> list[str]:
        return [self.field] if arm.schema else []
