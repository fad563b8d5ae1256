"""The identifier index of an index arm (resources/arms.yaml `base`, `index_share`): a
mechanical carrier of exact identifiers beside the model's carry.

After each fold the index is the previous index plus the identifier-shaped tokens of the
chunk just folded, in order of first appearance, found by the project's one identifier
classifier (transcripts/identifiers.py `classify`, the own-session candidates rule: every token
it does not set aside). A token already in the index is not repeated. When the index
passes its share of the capacity (counted in tokens as the study counts them, the
backend's count_tokens), its oldest entries go first. It is plain text, one token a
line; the recall turn reads it under the arm's index heading beside the carry.

The two choices that decide what the index keeps are here and in the classifier:
eviction is oldest first (`update_index`), and a token is kept when classify gives it a
class and no set-aside reason (`chunk_identifiers`); changing either changes every index.
"""

from __future__ import annotations

from collections.abc import Callable

from ..transcripts.identifiers import classify


def chunk_identifiers(text: str) -> list[str]:
    """The identifier-shaped tokens of a chunk the classifier keeps, in order of first
    appearance, each once."""
    return list(dict.fromkeys(t.text for t in classify(text) if not t.set_aside))


def index_text(entries: list[str]) -> str:
    """The index as carried: one token a line."""
    return "\n".join(entries)


def update_index(entries: list[str], chunk: str, cap_tokens: int,
                 count_tokens: Callable[[str], int]) -> list[str]:
    """The index after folding `chunk`: the previous entries, then the chunk's new
    identifiers; while its text counts more than cap_tokens, the oldest entry goes.
    An entry that alone passes the cap leaves the index empty of it."""
    seen = set(entries)
    out = list(entries) + [t for t in chunk_identifiers(chunk) if t not in seen]
    # Drop the oldest until it fits, counting the whole text each time: tokens do not
    # add up exactly across lines, and the share must hold as the study counts it.
    while out and count_tokens(index_text(out)) > cap_tokens:
        out.pop(0)
    return out


def recall_carrier(carry: str, index: str, heading: str) -> str:
    """What the recall turn reads for an index arm: the model's carry, then the index
    under its heading (no index: the carry alone, byte for byte)."""
    if not index:
        return carry
    return f"{carry}\n\n{heading}\n{index}" if carry else f"{heading}\n{index}"
