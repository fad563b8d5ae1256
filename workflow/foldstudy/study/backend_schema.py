"""The config schema's backend lists, filled in from the backend registry.

The schema file names no backend: a backend is written in its class and its
registration only (backends/registry.py). This is where the two meet, before any job
runs: the kinds a model may name (and what each is), the keys each kind requires, and
the Snakemake resources `limits` may set.
"""

from __future__ import annotations

import copy
from typing import Any

from ..backends.registry import backend_classes


def with_backends(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config schema with every registered backend in it."""
    classes = backend_classes()
    out = copy.deepcopy(schema)
    model = out["properties"]["models"]["additionalProperties"]
    model["properties"]["backend"] = {
        "enum": list(classes),
        "description": "; ".join(f"{k} = {c.summary}" for k, c in classes.items()) + ".",
    }
    model["allOf"] = [{"if": {"properties": {"backend": {"const": k}}},
                       "then": {"required": list(c.required_keys)}}
                      for k, c in classes.items() if c.required_keys]
    slots = {k: c.slot_resource for k, c in classes.items() if c.slot_resource}
    limits = out["properties"]["limits"]
    limits["properties"] = {s: {"type": "integer", "minimum": 1} for s in slots.values()}
    limits["description"] += " Resources: " + ", ".join(
        f"{s} ({k})" for k, s in slots.items()) + "."
    return out
