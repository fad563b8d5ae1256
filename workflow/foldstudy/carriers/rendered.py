"""`rendered`: a schema reply rendered back to headed text, one heading per field
(paper §3.2 arms j, p, q, t, g)."""

from __future__ import annotations

from .base import Carrier
from .registry import register_carrier


@register_carrier
class RenderedFields(Carrier):
    """Every field of the reply under its title, in schema order (the base's render)."""

    kind = "rendered"
    pattern = "rendered"
    words = "the schema reply rendered back to headed text, one heading per field"
