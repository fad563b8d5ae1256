"""One table of kinds: each class registers itself under its `kind`, once.

The shape the backends (backends/registry.py) and the carrier kinds
(carriers/registry.py) share, after inspect_ai's `@modelapi`: a kind is written in
two places, its class and the decorator over it. Two ways in, and no list to keep: every
module of the table's package is imported on first use, so a module added there
registers itself; a kind outside the package is a distribution declaring its module
under the table's entry-point group (the way pip-installed plugins are found).
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T", bound=type)


class KindTable(Generic[T]):
    """The classes of one family (backends, carriers), by kind."""

    def __init__(self, what: str, package: str, folder: Path, group: str) -> None:
        self.what, self.package, self.folder, self.group = what, package, folder, group
        self.classes: dict[str, T] = {}
        self._loaded = False

    def register(self, cls: T) -> T:
        """Class decorator: the class becomes known under its `kind`, once."""
        kind = getattr(cls, "kind", "")
        if not kind:
            raise TypeError(f"{cls.__name__} declares no kind")
        known = self.classes.get(kind)
        if known is not None and _name(known) != _name(cls):
            raise TypeError(f"{self.what} kind {kind!r} is registered twice: by "
                            f"{_name(known)} and by {_name(cls)}")
        self.classes[kind] = cls
        return cls

    def load(self) -> dict[str, T]:
        """Every registered class, by kind in sorted order, once the package's modules and
        the plugins' are imported (each registers what it defines)."""
        if not self._loaded:
            for module in pkgutil.iter_modules([str(self.folder)]):
                importlib.import_module(f"{self.package}.{module.name}")
            for ep in entry_points(group=self.group):
                ep.load()
            self._loaded = True
        return dict(sorted(self.classes.items()))


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
