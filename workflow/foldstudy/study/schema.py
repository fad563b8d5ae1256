"""The config's checks key by key, and its defaults, before any job runs.

The schema's checks (config/schema/config.schema.yaml, with the arms of
resources/arms.yaml and the registered backends filled in), each error one line naming
the key and what would be right, e.g.
`config.sweeps.main.arms[3]: 'x' is not an arm (known: f g j ... u)`; the one rule for a
name that becomes a path; what the schema cannot state (NaN, a URL without a host, a key
written into the config, a field the study fixes); then the schema's defaults and the
config's arm overrides. study/config.py's load_study runs them, in that order.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import jsonschema

from ..backends.base import STUDY_FIXED_FIELDS
from ..credentials import SECRET_KEYS, credential_name, looks_like_a_key
from ..secrets import is_placeholder
from .backend_schema import with_backends


def _path(parts: Any) -> str:
    out = "config"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _message(err: jsonschema.ValidationError, arms: tuple[str, ...]) -> str:
    where = _path(err.absolute_path)
    v = err.validator
    if looks_like_a_key(err.instance):
        return f"{where}: {_shown(err.instance)} is not allowed here ({v})"
    if v == "anyOf":
        return _any_of_message(err, arms)
    if v == "enum":
        allowed = err.validator_value
        if set(allowed) == set(arms):
            return f"{where}: {err.instance!r} is not an arm (known: {' '.join(sorted(arms))})"
        return f"{where}: {err.instance!r} is not allowed (allowed: {', '.join(map(str, allowed))})"
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        return f"{where}: unknown key {', '.join(map(repr, extra))} (allowed: {', '.join(allowed)})"
    if v == "required":
        return f"{where}: {err.message.replace(' is a required property', '')} is required"
    if v in ("minimum", "exclusiveMinimum", "maximum", "minItems", "minProperties"):
        return f"{where}: {err.message}"
    if v == "propertyNames":
        return f"{where}: key {err.instance!r} must match {err.schema.get('pattern', '')}"
    if v == "type":
        return f"{where}: {err.instance!r} is not of type {err.validator_value}"
    return f"{where}: {err.message}"


def _any_of_message(err: jsonschema.ValidationError, arms: tuple[str, ...]) -> str:
    """A value none of a key's alternatives takes (sweeps.X.compare: a word, or a list):
    a list is judged by the list alternative, whose own error names the item; anything
    else is named with every alternative the key allows (each alternative's title)."""
    alternatives = err.validator_value
    if isinstance(err.instance, list):
        listed = [i for i, alt in enumerate(alternatives) if alt.get("type") == "array"]
        inner = [e for e in err.context if e.schema_path and e.schema_path[0] in listed]
        if inner:
            return _message(max(inner, key=lambda e: len(e.absolute_path)), arms)
    allowed = "; ".join(str(alt.get("title") or alt.get("const")) for alt in alternatives)
    return f"{_path(err.absolute_path)}: {err.instance!r} is not allowed (allowed: {allowed})"


def with_arm_enums(schema: dict[str, Any], arms: tuple[str, ...]) -> dict[str, Any]:
    """The config schema with the arm lists it checks filled in from resources/arms.yaml.

    The schema file names no arm (arms.yaml is the one place an arm is written down);
    this is where the two meet, before any job runs.
    """
    out = copy.deepcopy(schema)
    sweep = out["properties"]["sweeps"]["additionalProperties"]["properties"]
    sweep["arms"]["items"] = {"enum": list(arms)}
    for alt in sweep["compare"]["anyOf"]:  # a list of pairs names arms
        if alt.get("type") == "array":
            alt["items"]["items"] = {"enum": list(arms)}
    model = out["properties"]["models"]["additionalProperties"]["properties"]
    model["probe_arms"]["items"] = {"enum": list(arms)}
    out["properties"]["arm_overrides"]["propertyNames"] = {"enum": list(arms)}
    out["properties"]["compare_pairs"]["items"]["items"] = {"enum": list(arms)}
    out["properties"]["decide"]["properties"]["pair"]["items"] = {"enum": list(arms)}
    return out


def builtin_scenarios(schema: dict[str, Any]) -> list[str]:
    """The generated scenarios (paper §3.1), as the schema lists them."""
    return list(schema["properties"]["sweeps"]["additionalProperties"]["properties"]
                ["scenario"]["enum"])


def with_scenarios(schema: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The schema with the config's own session scenarios added to what a sweep may name
    ("the sweep names it like a built-in one")."""
    own = config.get("scenarios")
    if not isinstance(own, dict) or not own:
        return schema
    out = copy.deepcopy(schema)
    sweep = out["properties"]["sweeps"]["additionalProperties"]["properties"]
    sweep["scenario"]["enum"] = builtin_scenarios(schema) + [
        n for n in own if n not in builtin_scenarios(schema)]
    return out


def schema_problems(config: dict[str, Any], schema: dict[str, Any],
                    arms: tuple[str, ...] = ()) -> list[str]:
    schema = with_scenarios(with_backends(schema), config)
    if arms:
        schema = with_arm_enums(schema, arms)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    rule = name_pattern(schema)
    out = []
    for e in errors:
        if e.validator == "pattern" and e.validator_value == rule:
            out.append(_name_message(e))
        # propertyNames errors carry the offending name as the instance
        elif e.validator == "propertyNames" or (e.parent and e.parent.validator == "propertyNames"):
            out.append(f"{_path(e.absolute_path)}: key {e.instance!r} is not allowed ({e.message})")
        else:
            out.append(_message(e, arms))
    return out


NAME_RULE = ("letters, digits and ._-, starting with a letter, digit or _, at most 100 "
             "characters")


# How every pattern of config.schema.yaml ends: the true end of the value, in Python's re
# (jsonschema's re.search, whose `$` matches before a final line break) and in ECMA-262.
TRUE_END = "$(?!\\n)"


def name_pattern(schema: dict[str, Any]) -> str:
    """The one rule for a name that becomes a path (study, model key, sweep name): the
    schema's, written once there (config.schema.yaml's `study` pattern)."""
    return schema["properties"]["study"]["pattern"]


def name_wildcard(schema: dict[str, Any]) -> str:
    """The name rule as a Snakemake wildcard constraint (no anchors: Snakemake adds them)."""
    return name_pattern(schema).removeprefix("^").removesuffix(TRUE_END)


def _name_message(e: jsonschema.ValidationError) -> str:
    """A name that would become a path outside its folder, or a hidden one."""
    if "propertyNames" in e.schema_path:
        where, what = _path(e.absolute_path), f"key {_shown(e.instance)}"
    else:
        where, what = _path(e.absolute_path), _shown(e.instance)
    return (f"{where}: {what} cannot name a path (results/.../<name>/); a name is "
            f"{NAME_RULE}, e.g. 'qwen3.6-local'")


def nonfinite_problems(config: Any, where: str = "config") -> list[str]:
    """NaN and infinity pass every min/max check (each comparison with NaN is false) and
    then fail deep inside a job ("cannot convert float NaN to integer"): refused first,
    by key. `--config scale=nan` arrives as a float."""
    if isinstance(config, dict):
        return [p for k, v in config.items() for p in nonfinite_problems(v, f"{where}.{k}")]
    if isinstance(config, list):
        return [p for i, v in enumerate(config) for p in nonfinite_problems(v, f"{where}[{i}]")]
    if isinstance(config, float) and not math.isfinite(config):
        return [f"{where}: {config!r} is not a number this study can use (NaN and infinity "
                "never are); write a finite number"]
    return []


def url_problems(config: dict[str, Any]) -> list[str]:
    """A base_url the schema's ^https?:// lets through with no host ("http://") would be
    reported later as http://None, and a model_id with a `..` part would walk the
    gateway's paths (it cannot be percent-encoded away): refused here, naming the key."""
    from urllib.parse import urlsplit

    from ..backends.http import control_character, dot_segment

    out = []
    for name, m in (config.get("models") or {}).items():
        mid = m.get("model_id") if isinstance(m, dict) else None
        if isinstance(mid, str) and dot_segment(mid) is not None:
            out.append(f"config.models.{name}.model_id: {_shown(mid)} has a "
                       f"{dot_segment(mid)!r} part between slashes; it would change the "
                       "gateway path requested (an id like author/slug)")
        url = m.get("base_url") if isinstance(m, dict) else None
        for key in ("model_id", "base_url"):
            if isinstance(v := m.get(key) if isinstance(m, dict) else None, str) and (
                    control_character(v)):
                out.append(f"config.models.{name}.{key}: {_shown(v)} holds a control "
                           f"character ({control_character(v)}); it would be sent in a "
                           "request line: remove it (a line break pasted with the value?)")
        if is_placeholder(url) and not config.get("evidence"):
            out.append(f"config.models.{name}.base_url: {url} is what a release puts where a "
                       "private endpoint was; point it at your server (a URL like "
                       "http://127.0.0.1:8000/v1), or rebuild from the package with "
                       "--config evidence=DIR")
            continue
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            continue  # a missing or non-http base_url is the schema's to name
        try:
            host = urlsplit(url).hostname
        except ValueError as e:  # e.g. an unclosed [ in an IPv6 literal
            out.append(f"config.models.{name}.base_url: {url!r} is not a URL ({e}); "
                       "a URL like http://127.0.0.1:8000/v1")
            continue
        if not host:
            out.append(f"config.models.{name}.base_url: {url!r} has no host (a URL like "
                       "http://127.0.0.1:8000/v1)")
    return out


def _shown(value: Any) -> str:
    """A value for an error message: never a credential echoed to the terminal."""
    return "<a value shaped like a key, not shown>" if looks_like_a_key(value) else repr(value)


def secret_problems(config: dict[str, Any], sources: Mapping[str, str] | None = None
                    ) -> list[str]:
    """A key written into the config would travel into paths, logs, records and releases.

    One scan (foldstudy/secrets.py's find_secrets: the project's key shapes and
    detect-secrets' plugins) over every name the config gives (study, sweeps, scenarios,
    models, any key at any depth) and every string value: a credential-shaped one is
    refused by key, and by file and line where a config file holds it (`sources`: config
    file -> its text), never echoed. A name is also a path (results/runs/<sweep>/...), a
    log line and a row id, so a key-shaped sweep name would be in every one of them.
    Under a model, a key named like a credential (api_key, token, ...) is refused by its
    name; under `extra_body` and `headers`, which travel to the server and into the
    manifest as written, any name that says credential (credentials.credential_name:
    auth, key, token, secret, password) is.
    """
    from ..secrets import find_secrets

    out: list[str] = []
    lines = [(path, n, line) for path, text in (sources or {}).items()
             for n, line in enumerate(text.splitlines(), start=1)]

    def shaped(text: str, where: str, what: str) -> bool:
        """Whether `text` holds a credential; if so, it is refused at `where` as `what`,
        by its kinds and, where a config file holds it, by file and line."""
        kinds = ", ".join(dict.fromkeys(h.kind for h in find_secrets(text)))
        if kinds:
            at = next((f" ({path} line {n})" for path, n, line in lines if text in line), "")
            out.append(f"{where}{at}: {what} ({kinds}; not shown)")
        return bool(kinds)

    def walk(obj: Any, where: str, model: bool = False, sent: bool = False) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                name = str(k)
                here = f"{where}.{name}"
                if shaped(name, where, "a name shaped like a credential"):
                    out[-1] += ("; a name becomes a path, a log line and a row id: rename "
                                "it (keys come from the environment only)")
                    here = f"{where}.<a name shaped like a credential>"
                if model and (name.lower().replace("-", "_") in SECRET_KEYS or (
                        sent and credential_name(name))):
                    out.append(f"{here}: keys come from the environment only; name the "
                               "variable instead, e.g. api_key_env: OPENROUTER_API_KEY "
                               "(the value is not shown and is never written)")
                    continue
                walk(v, here, model or where == "config.models",
                     sent or (model and name in SENT_AS_WRITTEN))
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{where}[{i}]", model, sent)
        elif isinstance(obj, str) and shaped(obj, where, "a value shaped like a credential"):
            out[-1] += ("; keys come from the environment only: name the variable in "
                        "api_key_env" if model else "; a key would be written into paths, "
                        "logs and the release: remove it")

    walk(config, "config")
    return out


# A model's keys whose contents go to the server as written (and into the manifest).
SENT_AS_WRITTEN = ("extra_body", "headers")


def fixed_field_problems(config: dict[str, Any]) -> list[str]:
    """An extra_body naming a field the study fixes (temperature, seed, the model, the
    output budget, the schema, the routing) would send a request other than the one its
    store entry and run record describe, and the probe would judge an arm on it."""
    out = []
    for name, m in (config.get("models") or {}).items():
        for where in SENT_AS_WRITTEN:
            sent = m.get(where) if isinstance(m, dict) else None
            for key in sent if isinstance(sent, dict) else ():
                if str(key).lower() in STUDY_FIXED_FIELDS:
                    out.append(f"config.models.{name}.{where}.{key}: the study sets {key} "
                               f"itself (fixed: {', '.join(STUDY_FIXED_FIELDS)}); {where} "
                               "adds only a server's own parameters, so remove it (set "
                               "temperature and the like in the config's own keys)")
    return out


def with_defaults(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Fill schema defaults (top level, power, models, sweeps) into a copy of the config."""
    cfg = copy.deepcopy(config)
    props = schema["properties"]
    for k, p in props.items():
        if k not in cfg and "default" in p:
            cfg[k] = copy.deepcopy(p["default"])
    for k, p in props["power"]["properties"].items():  # the repeat plan's
        if k not in cfg["power"] and "default" in p:
            cfg["power"][k] = copy.deepcopy(p["default"])
    if isinstance(cfg.get("decide"), dict):  # the staged decision's
        for k, p in props["decide"]["properties"].items():
            cfg["decide"].setdefault(k, copy.deepcopy(p["default"]))
    for section in ("models", "sweeps", "scenarios"):
        item = props[section]["additionalProperties"]["properties"]
        for entry in cfg.get(section, {}).values():
            for k, p in item.items():
                if k not in entry and "default" in p:
                    entry[k] = copy.deepcopy(p["default"])
    return cfg


def apply_overrides(table: dict[str, Any], overrides: dict[str, Any]) -> tuple[dict, list[str]]:
    """The arm table with config overrides applied, and problems with them."""
    t = copy.deepcopy(table)
    problems = []
    for arm_id, ov in overrides.items():
        a = t["arms"][arm_id]
        where = f"config.arm_overrides.{arm_id}"
        if a.get("base"):  # an index arm (arm.is_index_arm) is sized from its base
            problems.append(f"{where}: arm {arm_id} takes its capacity from its base arm "
                            f"{a['base']} (less its index share); override {a['base']} "
                            "instead")
            continue
        for key in ("fold_budget_tokens", "carry_cap_tokens"):
            if key in ov:
                a[key] = ov[key]
        literal = [k for k, v in a["ceilings"].items() if isinstance(v, int)]
        derived = {k: v for k, v in a["ceilings"].items() if isinstance(v, dict)}
        if "ceiling_chars" in ov:
            if len(a["ceilings"]) == 1 and literal:
                a["ceilings"][literal[0]] = ov["ceiling_chars"]
            elif derived:
                src = next(iter(derived.values()))["from_arm"]
                problems.append(f"{where}.ceiling_chars: {arm_id}'s ceiling is derived from "
                                f"{src}'s; override {src} instead")
            else:
                problems.append(f"{where}.ceiling_chars: arm {arm_id} declares no "
                                "single-field ceiling")
    return t, problems
