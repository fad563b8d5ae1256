"""results/probe/<model>.json, the capability probe's record (run/probe.py writes it), as
one typed record: the JSON object itself, its keys and their types declared here once,
and checked once where a job reads it (`read_probe`), so every reader (the fold job, the
audit, the token classes, the summary table, a carrier giving its arm a permission)
reads named fields of a known type instead of a `.get` with a default of its own.

Why a TypedDict and not a dataclass: the record is JSON, written by one function and
read by several, and its optional keys are absent, not null, where the probe never got
there (a gateway's listing, the reasoning comparison, the native compaction): a
TypedDict is that object, so the file a probe writes and the record a reader holds are
the same thing, byte for byte, with no to_dict/from_dict pair to keep in step.
"""

# No `from __future__ import annotations` here: TypedDict reads NotRequired[...] from the
# annotations themselves, and as strings (Python 3.11) every key would be required.
import json
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..io import MalformedFile


class Permission(TypedDict):
    """Whether the probe lets an arm run, and why (a probe record's `permissions`)."""

    allowed: bool
    verdict: str
    reason: str
    responsible_parameter: NotRequired[str]


class ShapeVerdict(TypedDict, total=False):
    """One request shape the probe sent, and what the endpoint made of it."""

    shape: str
    arms: list[str]
    verdict: str
    reason: str
    responsible_parameter: str


class ItemShape(TypedDict):
    """What the compaction item that answered showed (backends/base.py item_shape): its
    type and the names of its fields."""

    type: str
    fields: list[str]


class NativeVerdict(TypedDict):
    """The probe's one compaction request (`native_compaction`): whether the endpoint
    compacts (allowed), by which mechanism and beta, and the parameter responsible when
    refused."""

    allowed: bool
    verdict: str
    reason: NotRequired[str]
    responsible_parameter: NotRequired[str]
    mechanism: NotRequired[str | None]
    beta: NotRequired[str | None]
    # the mechanism asked for is `mechanism`; what answered, as its item shows it
    answered_by: NotRequired[ItemShape | None]


class ProbeRecord(TypedDict):
    """A model's probe record. The keys every record has are required; the rest are
    written where the probe got that far (a record of an endpoint that could not be
    built has no prices, no shapes' endpoint, no served_by_other)."""

    model: str
    backend: str
    verdict: str
    reason: str
    responsible_parameter: str
    required_context_tokens: int
    pin: dict[str, Any] | None
    shapes: list[ShapeVerdict]
    permissions: dict[str, Permission]
    probe_arms: dict[str, dict[str, Any]]
    probe_only: NotRequired[bool]
    context_length: NotRequired[int | None]
    price_prompt_usd_per_token: NotRequired[float | None]
    price_completion_usd_per_token: NotRequired[float | None]
    endpoint: NotRequired[dict[str, Any]]
    endpoints_listed: NotRequired[list[dict[str, Any]]]
    reasoning_mandatory: NotRequired[bool]
    reasoning_parameter: NotRequired[dict[str, Any]]
    native_compaction: NotRequired[NativeVerdict]
    served_by_other: NotRequired[dict[str, str]]


# The JSON type each key must have (a key absent from REQUIRED may be absent); None in a
# tuple: the key may be null.
_STR, _INT, _NUM, _OBJ = (str,), (int,), (int, float), (dict,)
KEY_TYPES: dict[str, tuple[type | None, ...]] = {
    "model": _STR, "backend": _STR, "verdict": _STR, "reason": _STR,
    "responsible_parameter": _STR, "required_context_tokens": _INT,
    "pin": (dict, None), "shapes": (list,), "permissions": _OBJ, "probe_arms": _OBJ,
    "probe_only": (bool,), "context_length": (int, None),
    "price_prompt_usd_per_token": (*_NUM, None), "price_completion_usd_per_token": (*_NUM, None),
    "endpoint": _OBJ, "endpoints_listed": (list,), "reasoning_mandatory": (bool,),
    "reasoning_parameter": _OBJ, "native_compaction": _OBJ, "served_by_other": _OBJ,
}
REQUIRED = ProbeRecord.__required_keys__


def _json_type(types: tuple[type | None, ...]) -> str:
    names: dict[type | None, str] = {str: "text", int: "an integer", float: "a number",
                                     dict: "an object", list: "a list",
                                     bool: "true or false", None: "null"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def probe_problems(obj: object) -> list[str]:
    """What makes obj no probe record: a required key missing, a key of the wrong JSON
    type, a permission that is not {allowed: bool, verdict: text, ...}."""
    if not isinstance(obj, dict):
        return ["not a JSON object"]
    out = [f"{k}: missing" for k in sorted(REQUIRED) if k not in obj]
    for k, types in KEY_TYPES.items():
        v = obj.get(k)
        if k not in obj or (v is None and None in types):
            continue
        if isinstance(v, bool) and bool not in types or not isinstance(
                v, tuple(t for t in types if t is not None)):
            out.append(f"{k}: {json.dumps(v)[:40]} is not {_json_type(types)}")
    for arm, perm in (obj.get("permissions") or {}).items() if isinstance(
            obj.get("permissions"), dict) else ():
        if not (isinstance(perm, dict) and isinstance(perm.get("allowed"), bool)
                and isinstance(perm.get("verdict"), str)):
            out.append(f"permissions.{arm}: not {{allowed: true or false, verdict: text}}")
    return out


def read_probe(path: str | Path) -> ProbeRecord:
    """The probe record at path, checked once: anything else is refused in one line
    naming the file and the key (an edited or truncated record would otherwise fail as a
    KeyError deep in the job that read it)."""
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MalformedFile(f"{p}: not readable as a probe record (JSON: {e}); rerun the "
                            "probe (snakemake --forcerun probe_model)") from None
    if problems := probe_problems(obj):
        raise MalformedFile(f"{p}: not a probe record ({'; '.join(problems[:3])}); rerun "
                            "the probe (snakemake --forcerun probe_model)")
    record: ProbeRecord = obj
    return record
