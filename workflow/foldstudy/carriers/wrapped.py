"""A carrier that is another carrier with something added (an index arm's, index.py):
every hook of Carrier is the wrapped carrier's, unless a subclass overrides it to say
what it adds.

The hooks are forwarded once, for every method and property Carrier declares, so a hook
added to Carrier reaches the wrapped kind with no line here and no wrapper can forget
one. Its class flags (`kind`, `matched`, ...) are the wrapper's own: a wrapper says the
ones its inner carrier decides (`sends_fold_shape`, `may_be_opaque`) itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .base import Carrier


class WrappedCarrier(Carrier):
    """The carrier `inner` (None where only an arms.yaml entry is known, which may not
    name the wrapped kind: its hooks then refuse with `unresolved`), every hook its."""

    def __init__(self, inner: Carrier | None, unresolved: str) -> None:
        super().__init__(inner.name if inner else "")
        self.inner = inner
        self.unresolved = unresolved

    def wrapped(self) -> Carrier:
        """The inner carrier; TypeError where it was not resolved."""
        if self.inner is None:
            raise TypeError(self.unresolved)
        return self.inner


def hook_names() -> list[str]:
    """The hooks of Carrier: its public methods and properties (not `names`, a question
    asked of a kind's class before there is a carrier)."""
    return [name for name, value in vars(Carrier).items() if not name.startswith("_")
            and (inspect.isfunction(value) or isinstance(value, property))]


def _forwarded(name: str) -> Callable[..., object] | property:
    """Carrier's hook `name`, asked of the wrapped carrier."""
    if isinstance(vars(Carrier)[name], property):
        return property(lambda self: getattr(self.wrapped(), name),
                        doc=f"The wrapped carrier's `{name}`.")

    def hook(self: WrappedCarrier, /, *args: object, **kwargs: object) -> object:
        return getattr(self.wrapped(), name)(*args, **kwargs)

    hook.__name__ = name
    hook.__qualname__ = f"{WrappedCarrier.__qualname__}.{name}"
    hook.__doc__ = f"The wrapped carrier's `{name}`."
    return hook


for _name in hook_names():
    setattr(WrappedCarrier, _name, _forwarded(_name))
