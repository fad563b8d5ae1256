"""The one table of backends: each class registers itself under its kind.

A backend is written in two places, its class and the `@register_backend` over it
(inspect_ai's `@modelapi` shape). Everything else that differs per backend follows from
this table: the config schema's backend enum, required keys and limits
(study/backend_schema.py), a model's defaults (resolve_model_config), the Snakemake slot
resource of its jobs (rules/common.smk), the audit's prices and the probe's pin (methods
on the class).

Two ways in, and no list to keep: every module of this package is imported on first
use, so a module added here registers itself; a backend outside the package is a
distribution declaring its module under the entry-point group `foldstudy.backends`
(the way pip-installed plugins are found; inspect_ai finds its extensions so too).
Importing a provider module is cheap: what is heavy (llama_cpp) is imported by the
methods that need it, so the DAG never loads it.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from .base import Backend, BackendError

ENTRY_POINT_GROUP = "foldstudy.backends"

B = TypeVar("B", bound=type[Backend])

_REGISTRY: dict[str, type[Backend]] = {}
_loaded = False


def register_backend(cls: B) -> B:
    """Class decorator: the backend becomes known under its `kind`, once."""
    if not cls.kind:
        raise TypeError(f"{cls.__name__} declares no kind")
    known = _REGISTRY.get(cls.kind)
    if known is not None and _name(known) != _name(cls):
        raise TypeError(f"backend kind {cls.kind!r} is registered twice: by {_name(known)} "
                        f"and by {_name(cls)}")
    _REGISTRY[cls.kind] = cls
    return cls


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _load() -> None:
    """Import this package's modules and the plugins' (each registers what it defines)."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{__package__}.{module.name}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        ep.load()
    _loaded = True


def backend_classes() -> dict[str, type[Backend]]:
    """Every registered backend, by kind in sorted order."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def backend_class(kind: str) -> type[Backend]:
    """The class of a backend kind."""
    classes = backend_classes()
    if kind not in classes:
        raise BackendError("config", f"backend {kind!r} is not available (known: "
                           f"{', '.join(classes)})", False)
    return classes[kind]


def resolve_model_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """A model's config with its backend's defaults filled in (config already validated)."""
    return backend_class(cfg["backend"]).resolve_config(cfg)
