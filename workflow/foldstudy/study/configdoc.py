"""config/README.md, generated from the config schema and the backends' model defaults.

The schema (config/schema/config.schema.yaml) describes every key; the backends, and
the defaults of a model's keys, are each backend class's (backends/registry.py), the
one place a backend is written. This page is rendered from both, and a test fails when
the page and the two disagree, so the reference a user reads is never stale.
Regenerate it with

    .venv/bin/python -m foldstudy.study.configdoc
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..backends.registry import backend_classes
from ..io import load_yaml
from .backend_schema import with_backends
from .scopes import ANALYSES

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "config" / "schema" / "config.schema.yaml"
README = ROOT / "config" / "README.md"


def _type(p: dict[str, Any]) -> str:
    if "enum" in p:
        return " \\| ".join("null" if v is None else f"`{v}`" for v in p["enum"])
    if "anyOf" in p:  # each alternative by its title (sweeps.X.compare)
        return " \\| ".join(str(a.get("title") or a.get("type")) for a in p["anyOf"])
    t = p.get("type", "")
    return " or ".join(t) if isinstance(t, list) else str(t)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(value: Any) -> str:
    return "`" + json.dumps(value) + "`"


def _rows(props: dict[str, Any], prefix: str, defaults: dict[str, str]) -> list[str]:
    out = []
    for key, p in props.items():
        default = _default(p["default"]) if "default" in p else defaults.get(key, "")
        limits = [f"{k} {p[k]}" for k in ("minimum", "exclusiveMinimum", "maximum") if k in p]
        what = _cell(p.get("description", ""))
        if limits:
            what = (what + " " if what else "") + f"({', '.join(limits)})"
        out.append(f"| `{prefix}{key}` | {_type(p)} | {default} | {what} |")
    return out


def model_defaults() -> dict[str, str]:
    """Per model key, its default on each backend that has one."""
    keys: dict[str, list[str]] = {}
    for backend, cls in backend_classes().items():
        for k, v in cls.defaults.items():
            keys.setdefault(k, []).append(f"{backend}: {_default(v)}")
    return {k: "; ".join(v) for k, v in keys.items()}


# The two transcript formats a session scenario reads (transcripts/), each with a
# ten-line example cut from the sample sessions of tests/data/sessions/: prose kept beside
# the schema, rendered into the page under `scenarios.<name>`.
SESSION_FORMATS = SCHEMA.parent / "session-formats.md"


def config_readme(schema: dict[str, Any]) -> str:
    schema = with_backends(schema)
    props = schema["properties"]
    head = "| key | type | default | what it sets |\n|---|---|---|---|"
    top = {k: p for k, p in props.items()
           if k not in ("models", "sweeps", "arm_overrides", "scopes", "scenarios")}
    model = props["models"]["additionalProperties"]["properties"]
    sweep = props["sweeps"]["additionalProperties"]["properties"]
    override = props["arm_overrides"]["additionalProperties"]["properties"]
    scope = props["scopes"]["additionalProperties"]["properties"]
    scenario = props["scenarios"]["additionalProperties"]["properties"]
    return "\n".join([
        "# Configuration reference",
        "",
        "Generated from `config/schema/config.schema.yaml` and the backend classes",
        "(`workflow/foldstudy/backends/`) by `.venv/bin/python -m "
        "foldstudy.study.configdoc`;",
        "do not edit by hand. The config is checked against the schema before any job runs;",
        "an error names the key and what is allowed. Study configs: `config.yaml` (the",
        "embedded default), `study-paper.yaml` (the paper's study), `.test/config.yaml`.",
        "",
        _cell(schema.get("description", "")),
        "",
        "## Top-level keys",
        "",
        head, *_rows(top, "", {}),
        "",
        "## `models.<name>`",
        "",
        "One entry per model; the key is the name rows and tables use. Keys come from the",
        "environment only (`api_key_env` names the variable); a key written here is refused.",
        "",
        head, *_rows(model, "", model_defaults()),
        "",
        "## `sweeps.<name>`",
        "",
        "A sweep is a scenario × models × arms × repeats × design; contrasts are paired",
        "within a sweep (paper §3.3). Arms are the ids of `resources/arms.yaml`.",
        "",
        head, *_rows(sweep, "", {}),
        "",
        "## `scenarios.<name>`",
        "",
        _cell(props["scenarios"].get("description", "")),
        "",
        head, *_rows(scenario, "", {}),
        "",
        SESSION_FORMATS.read_text(encoding="utf-8").rstrip("\n"),
        "",
        "## `decide`",
        "",
        _cell(props["decide"].get("description", "")),
        "",
        head, *_rows(props["decide"]["properties"], "decide.", {}),
        "",
        "## `arm_overrides.<arm>`",
        "",
        _cell(props["arm_overrides"].get("description", "")),
        "",
        head, *_rows(override, "", {}),
        "",
        "## `scopes.<analysis>`",
        "",
        _cell(props["scopes"].get("description", "")),
        "",
        "| analysis | what it covers |\n|---|---|",
        *(f"| `{k}` | {_cell(v)} |" for k, v in ANALYSES.items()),
        "",
        head, *_rows(scope, "", {}),
        "",
    ])


def main() -> None:
    README.write_text(config_readme(load_yaml(SCHEMA)),
                      encoding="utf-8")
    print(f"wrote {README.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
