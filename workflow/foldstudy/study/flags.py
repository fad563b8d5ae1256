"""The `--config` flags as Snakemake hands them over, before the config is checked:
an empty one refused by name, and a typed one read as the type the schema declares
(foldstudy/wiring/ load_wiring calls both first)."""

from __future__ import annotations

from typing import Any


def empty_flag_problems(flags: Any) -> list[str]:
    """`--config evidence=` arrives as no value at all (Snakemake reads an empty value as
    null), so the study would silently run as if the flag were absent: live, for
    evidence=. A key given empty on the command line is refused by name."""
    why = {"evidence": " (so this would run the live study, not rebuild from a package)"}
    return [f"config.{k}: `--config {k}=` is empty, which Snakemake reads as unset"
            f"{why.get(k, '')}; give it a value (evidence=/path/to/package/evidence), or "
            "drop the flag" for k, v in dict(flags or {}).items() if v is None]


def command_line_flags(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """`--config replay=true` arrives as the string 'true': read it as the boolean the
    schema declares (in place, before any check), as a user typing it means."""
    for key, prop in schema["properties"].items():
        value = config.get(key)
        if key in ("power", "decide") and isinstance(value, dict):
            # `--config "power={target_difference: 0.3}"` arrives with string values
            _numbers_from_strings(value, prop.get("properties", {}))
        if prop.get("type") == "boolean" and isinstance(value, str):
            if value.lower() in ("true", "yes", "1"):
                config[key] = True
            elif value.lower() in ("false", "no", "0"):
                config[key] = False


def _numbers_from_strings(section: dict[str, Any], props: dict[str, Any]) -> None:
    """A number typed on the command line inside an object, read as the number it is
    (a value that is not one stays a string, and the schema names it); `null` where the
    schema allows null (`--config "decide={pair: null, ...}"`), read as null."""
    for k, p in props.items():
        types = p.get("type")
        types = types if isinstance(types, list) else [types]  # ["number", "null"] too
        if "null" in types and section.get(k) == "null":
            section[k] = None
            continue
        kind = float if "number" in types else int if "integer" in types else None
        if kind and isinstance(section.get(k), str):
            try:
                section[k] = kind(section[k])
            except ValueError:
                pass
