"""How a numbers.json key is spelled: one place for the writer (numbers.py) and the
readers (the tables, which read inference from numbers.json and must ask for the key
numbers.py wrote).

A key is `section.name` for a study-wide number and `section.name[a/b/c]` for a number
about one cell; a statistic with several parts puts the part before the cell
(`ladder.effect.diff[q/j]`), except a Fisher test, whose parts follow its key
(`ladder.fisher_full[j/q].p`): numbers.json's names, kept as they are.
"""

from __future__ import annotations


def cell(*parts: object) -> str:
    """The cell of a key from its parts: 'main/smollm2-135m/j'."""
    return "/".join(str(p) for p in parts)


def at(name: str, cell: str) -> str:
    """A number about one cell: 'recall.mean[main/smollm2-135m/j]'."""
    return f"{name}[{cell}]"


def paired(key: str, part: str, cell: str) -> str:
    """One part of a paired difference: 'ladder.effect.diff[q/j]'."""
    return at(f"{key}.{part}", cell)


def fisher_key(key: str, part: str) -> str:
    """One part of a Fisher test, whose key already holds its cell:
    'ladder.fisher_full[j/q].p'."""
    return f"{key}.{part}"
