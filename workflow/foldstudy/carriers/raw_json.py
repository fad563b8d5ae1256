"""`raw_json`: the raw JSON envelope carried as returned (paper §3.2 arm f, the deployed
shape)."""

from __future__ import annotations

from .base import Carrier
from .registry import register_carrier
from .render import Rendered
from .types import ArmView, JsonObject


@register_carrier
class RawJson(Carrier):
    """The reply's text, envelope and all, is the carry: every field reaches the next
    fold inside it."""

    kind = "raw_json"
    pattern = "raw_json"
    words = "the raw JSON envelope as returned"

    def render(self, arm: ArmView, obj: JsonObject, reply_text: str) -> Rendered:
        return Rendered(reply_text.strip(), True)
