"""The one base class of every error the package raises on purpose.

A refusal (bad config, impossible evidence, a forged store entry, a spent budget) is the
package doing its job: it prints as one plain line naming what, where and what would be
right, never inside a traceback. Anything else is a bug and keeps its traceback. Each
named error subclasses `StudyError` (beside the builtin it always was, so callers that
catch ValueError or RuntimeError still do).
"""

from __future__ import annotations


class StudyError(Exception):
    """An error the package raises on purpose: its message is the whole story."""


class SpecError(StudyError, ValueError):
    """A resource or config value that would break the study's design. Here, below every
    room, because an arm's carrier kind checks its own entry (carriers/) and the study's
    resolution of the arm table (study/spec.py) raises it too."""
