"""`text`: the plain reply carried as written (paper §3.2 arms o, m, u, l)."""

from __future__ import annotations

from .base import Carrier
from .registry import register_carrier


@register_carrier
class Text(Carrier):
    """The model's plain reply is the carry (a schema reply, were one declared, is
    rendered field by field, as `rendered` does)."""

    kind = "text"
    pattern = "text"
    words = "the plain reply as written"
