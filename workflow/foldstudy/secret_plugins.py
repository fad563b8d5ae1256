"""The project's own detect-secrets plugin: a private key's body line on its own.

detect-secrets' PrivateKeyDetector keys on a block's BEGIN line, and so does a scan of a
package by shape: a carry that kept a key's base64 body line without its BEGIN and END
lines (a model copies what it reads, line by line) passed as clean. This plugin finds
such a line by the shape a key block's body has: a run of 60 or more base64 characters
(PEM wraps its body at 64, OpenSSH at 70), holding upper and lower case letters and a
digit, standing alone: at a line's start or after whitespace, a comma, an escaped `\\n`
or an opening quote. A value of a JSON key (`"signature": "EqoB…"`, a tool's opaque
encrypted field) is not one, nor is a hex digest (no upper case), nor a file path or a
URL's path: a run holding two `/`-bounded words in a row (`/tests/data/`, `/src/Views/`),
each a letter or digit then lower-case letters or digits. Random base64 holds that shape
in about 3 lines of 10,000 of PEM's or OpenSSH's width (measured on 200,000 random
lines each); a key block's other lines, and its BEGIN line, are then still found.

It is a RegexBasedDetector, as detect-secrets' own plugins are, so foldstudy/secrets.py
collects it with them; `detect-secrets scan --plugin
workflow/foldstudy/secret_plugins.py` runs it too. Imported only when a scan runs (the
library takes a tenth of a second to import).
"""

from __future__ import annotations

import re

from detect_secrets.plugins.base import RegexBasedDetector

# A key block's body line: the run stands alone (not inside a longer token, not the value
# of a JSON key) and mixes the alphabet's classes as random base64 does.
BODY_LINE = re.compile(
    r"(?:(?<=\\n)|(?<![A-Za-z0-9+/=\\\"])|(?<=\")(?<!:\")(?<!: \"))"
    r"(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*[0-9])"
    r"(?![A-Za-z0-9+/]*/[A-Za-z0-9][a-z0-9]+/[A-Za-z0-9][a-z0-9]+/)"
    r"[A-Za-z0-9+/]{60,}={0,2}(?![A-Za-z0-9+/=])")


class KeyBlockBodyDetector(RegexBasedDetector):
    """A line of a private key block's base64 body, found without its BEGIN line."""

    secret_type = "Private Key body line"
    denylist = (BODY_LINE,)
