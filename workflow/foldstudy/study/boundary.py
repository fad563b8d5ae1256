"""The whole-token boundary rule, written once (paper §3.1: a value counts only as a whole
token). The grader scores answers and carries with it (grade/grader.py), and a user's own
session plants each fact at its value's first occurrence under the same rule
(study/sessions.py): so a planted fold and a graded check can never disagree about what
"the value occurs" means. It lives here, below both, because the fixture is built before
anything is graded.
"""

from __future__ import annotations

import re

# A value is a whole token when no word character touches it, and no joiner (- . / @,
# and : on the right) sits between it and a word character: "52677" is not in "152677",
# "52677.5" or "x-52677", but is in "port: 52677." and "(52677)".
_LEFT = r"(?<!\w)(?<!\w[-./@])"
_RIGHT = r"(?!\w)(?![-./:@]\w)"


def whole_token_pattern(value: str) -> re.Pattern[str]:
    return re.compile(_LEFT + re.escape(value) + _RIGHT)


def has_whole_token(value: str, text: str) -> bool:
    return bool(value) and whole_token_pattern(value).search(text) is not None


def whole_token_count(value: str, text: str) -> int:
    """How many times `value` occurs in `text` as a whole token (the grader's rule: the
    same count as whole_token_pattern(value).findall(text)), found by substring search
    and each hit checked where it stands: the pattern's lookbehinds, tried at every
    character, take seconds a token on a 30 MB session; a substring search takes
    milliseconds."""
    pattern, n, i = whole_token_pattern(value), 0, text.find(value)
    while i >= 0:
        if pattern.match(text, i):
            n += 1
            i = text.find(value, i + len(value))
        else:
            i = text.find(value, i + 1)
    return n
