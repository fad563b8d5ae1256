"""The one table of backends: each class registers itself under its kind.

A backend is written in two places, its class and the `@register_backend` over it
(inspect_ai's `@modelapi` shape). Everything else that differs per backend follows from
this table: the config schema's backend enum, required keys and limits
(study/backend_schema.py), a model's defaults (resolve_model_config), the Snakemake slot
resource of its jobs (foldstudy/wiring/runs.py), the audit's prices and the probe's pin (methods
on the class).

Two ways in, and no list to keep: every module of this package is imported on first
use, so a module added here registers itself; a backend outside the package is a
distribution declaring its module under the entry-point group `foldstudy.backends`
(the way pip-installed plugins are found; inspect_ai finds its extensions so too).
Importing a provider module is cheap: what is heavy (llama_cpp) is imported by the
methods that need it, so the DAG never loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from ..kinds import KindTable
from .base import Backend, BackendError

ENTRY_POINT_GROUP = "foldstudy.backends"

B = TypeVar("B", bound=type[Backend])

_TABLE: KindTable[type[Backend]] = KindTable("backend", __package__ or "",
                                             Path(__file__).parent, ENTRY_POINT_GROUP)


def register_backend(cls: B) -> B:
    """Class decorator: the backend becomes known under its `kind`, once."""
    return _TABLE.register(cls)


def backend_classes() -> dict[str, type[Backend]]:
    """Every registered backend, by kind in sorted order."""
    return _TABLE.load()


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
