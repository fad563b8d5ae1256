"""A user's own arms (config `arms_file`): the file checked like the config, by a JSON
schema filled in from the arm table (own_arms_schema), each arm resolved against its twin
or at its own capacity, and merged into the table the study runs (merge_own_arms); the
files an arm names (prompts, schemas) found inside the arms file's own folder, scanned
for secrets, and carried into a release (own_arm_files). study/arm.py holds the Arm
these become, and study/spec.py resolves it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..carriers.registry import (
    own_arm_pattern,
)
from ..io import load_yaml
from .arm import is_matched
from .spec import SpecError, resolve_arm

# The JSON schema a user's own arms file is checked by (filled in by own_arms_schema).
ARMS_SCHEMA = Path(__file__).resolve().parents[3] / "config/schema/arms.schema.yaml"


def own_arms_schema(paper_arms: list[str], name_rule: str,
                    path: Path = ARMS_SCHEMA, twins: list[str] | None = None
                    ) -> dict[str, Any]:
    """config/schema/arms.schema.yaml with what is named once elsewhere filled in: the
    arm id's name rule (the config's), the ids taken (every arm of resources/arms.yaml),
    the twins (those inside the matched comparison, is_matched; all of them when not
    given) and the carry kinds an own arm may name (carriers/registry.py)."""
    schema = load_yaml(path)
    arms = schema["properties"]["arms"]
    arms["propertyNames"] = {"type": "string", "pattern": name_rule,
                             "not": {"enum": sorted(paper_arms)}}
    props = arms["additionalProperties"]["properties"]
    props["twin"]["enum"] = sorted(paper_arms if twins is None else twins)
    props["carry"]["pattern"] = own_arm_pattern()
    return schema


def _schema_problem(path: str, e: Any, paper_arms: list[str],
                    twins: list[str] | None = None) -> str:
    """One jsonschema error as `file: arms.<arm>.<key>: what is wrong`."""
    where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
    if "propertyNames" in e.schema_path:  # e.instance is the arm id
        arm = e.instance
        why = ("is one of the paper's arms; give yours another id" if arm in paper_arms else
               "cannot be an arm id: an id names a path (results/runs/.../<arm>.json), so it "
               "is letters, digits and ._-, starting with a letter, digit or _, at most 100 "
               "characters")
        return f"{path}: arms.{arm}: {arm!r} {why}"
    if e.validator == "additionalProperties" and isinstance(e.instance, dict):
        allowed = set(e.schema.get("properties", {}))
        extra = sorted(str(k) for k in e.instance if k not in allowed)
        return (f"{path}: {where}: unknown key {', '.join(extra)} (known: "
                f"{', '.join(sorted(allowed))})")
    if e.validator == "enum":
        return (f"{path}: {where}: {e.instance!r} is not one of the paper's arms (known: "
                f"{' '.join(sorted(paper_arms if twins is None else twins))})")
    if e.validator == "oneOf":
        return (f"{path}: {where}: {e.instance!r} is neither a positive integer nor "
                "{from_arm: ..., per_section: true}")
    return f"{path}: {where}: {e.message}"


def own_arms_problems(doc: Any, path: str, paper_arms: list[str], name_rule: str,
                      twins: list[str] | None = None) -> tuple[list[str], set[Any] | None]:
    """Every problem of an own arms file by file, arm and key (its JSON schema), and the
    arms they concern (None: the file as a whole is wrong)."""
    import jsonschema

    schema = own_arms_schema(paper_arms, name_rule, twins=twins)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    bad: set[Any] | None = set()
    for e in errors:
        where = list(e.absolute_path)
        if "propertyNames" in e.schema_path:
            bad.add(e.instance)
        elif len(where) >= 2 and bad is not None:
            bad.add(where[1])
        else:
            bad = None
    return list(dict.fromkeys(_schema_problem(path, e, paper_arms, twins)
                              for e in errors)), bad


def case_collisions(own: list[Any], taken: list[str], path: str, bad: set[Any]
                    ) -> list[str]:
    """Own arm ids that differ from another arm's id only by case (`M` beside the paper's
    `m`): an id names files (results/runs/.../<arm>.json), and on a case-insensitive file
    system (macOS's and Windows' defaults) the two are one file, so one arm's runs would
    overwrite the other's. Each is refused by file and arm, and added to `bad`."""
    seen = {a.casefold(): a for a in taken}
    out = []
    for arm in own:
        key = str(arm).casefold()
        other = seen.setdefault(key, str(arm))
        if other != arm:
            out.append(f"{path}: arms.{arm}: {arm!r} differs from arm {other!r} only by case; "
                       "an id names files, which a case-insensitive file system (macOS, "
                       "Windows) holds as one, so give yours an id no other arm has in any "
                       "case")
            bad.add(arm)
    return out


def merge_own_arms(table: dict[str, Any], path: str, resources: Path,
                   name_rule: str = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$"
                   ) -> tuple[dict[str, Any], list[str]]:
    """The arm table with a user's own arms added ("your own compaction prompt as
    an arm"), and every problem with them, by file, arm and key, before any job.

    The file is arms.yaml's shape, checked by config/schema/arms.schema.yaml, with two
    differences: `system_prompt` and `schema` are file paths (relative to the arms file,
    and inside its folder: a prompt reaches the model, so no file from elsewhere is sent),
    and each arm names a `twin`, one of the paper's arms, whose capacity it must match
    exactly at paper scale: fold budget, carry cap and declared ceiling (paper §3.2:
    "Prompt, input, fold protocol, and output budget are held fixed within a
    comparison"). Its prompt is recorded by its sha256 digest on every row, as the
    paper's are. name_rule: the config's rule for a name that becomes a path.
    """
    import copy

    where = f"config.arms_file ({path})"
    src = Path(path).expanduser()
    if src.is_dir():
        return table, [f"{where}: a directory, not a file; name the YAML in it (a file in "
                       "resources/arms.yaml's shape, e.g. arms.yaml)"]
    if not src.is_file():
        return table, [f"{where}: no such file (a YAML in resources/arms.yaml's shape)"]
    try:
        doc = load_yaml(src)
    except (ValueError, OSError) as e:
        return table, [f"{where}: not readable YAML ({str(e)[:200]})"]
    twins = [a for a, spec in table["arms"].items() if is_matched(spec)]
    problems, bad = own_arms_problems(doc, path, list(table["arms"]), name_rule, twins)
    problems += [f"{where}: {line}" for line in secret_lines(
        src, "the arms file is carried in a release, and an arm's id becomes a path, a log "
        "line and a row id")]
    if bad is None:
        return table, problems
    problems += case_collisions(list(doc["arms"]), list(table["arms"]), path, bad)
    out = copy.deepcopy(table)
    for arm_id, a in doc["arms"].items():
        if arm_id not in bad:  # its files and capacity, once its keys are right
            problems += _own_arm(out, table, arm_id, a, f"{path}: arms.{arm_id}", src,
                                 resources)
    return out, problems


def _inside(folder: Path, rel: str, at: str) -> tuple[Path, str | None]:
    """The file `rel` names beside the arms file, or why it may not be used."""
    p = (folder / rel).resolve()
    if not p.is_relative_to(folder.resolve()):
        return p, (f"{at}: {rel} is outside the arms file's folder {folder}; keep it "
                   "beside the arms file (what an arm names is sent to the model)")
    if p.is_dir():
        return p, f"{at}: {p} is a directory; name a file in it (a path relative to the arms file)"
    if not p.is_file():
        return p, f"{at}: {p} does not exist (a path relative to the arms file)"
    return p, None


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def _schema_file_problem(path: Path, at: str) -> str | None:
    """Why an own arm's schema file is no JSON Schema of a reply, or None: it must be a
    JSON object whose `properties` is an object (one entry per field the arm writes)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return f"{at}: {path} is not readable JSON ({str(e)[:120]})"
    if not isinstance(doc, dict) or not isinstance(doc.get("properties"), dict):
        what = ("a JSON object without `properties`" if isinstance(doc, dict) else
                f"a JSON {_JSON_KINDS.get(type(doc), type(doc).__name__)}")
        return (f"{at}: {path} is {what}; a schema is a JSON object whose `properties` "
                "names each field of the reply, e.g. {\"type\": \"object\", "
                "\"properties\": {\"summary\": {\"type\": \"string\"}}}")
    return None


# Where a release carries the user's own arms (config arms_file): the arms file and the
# prompt and schema files it names, at their places relative to it (release/package.py).
PACKAGED_ARMS = "arms"


def packaged_arms_file(path: str) -> str:
    """What a released config's `arms_file` says: the arms file inside the package."""
    return f"{PACKAGED_ARMS}/{Path(path).name}"


def arms_file_path(config: dict[str, Any]) -> Path | None:
    """The arms file the config names (relative to the working directory), or, in
    evidence mode (config `evidence`), the one inside the package when it holds it: a
    released config says `arms/<name>`, relative to the package."""
    path = config.get("arms_file")
    if not isinstance(path, str):
        return None
    p = Path(path).expanduser()
    if isinstance(config.get("evidence"), str) and config["evidence"] and not p.is_absolute():
        packaged = Path(config["evidence"]).parent / p
        if packaged.is_file():
            return packaged
    return p


def own_arm_files(path: str | Path) -> dict[str, Path]:
    """The files a release carries for a (checked) arms file: package path -> source, the
    arms file and each prompt and schema file it names (inside its folder, at the same
    place relative to it). They are the study's method, as its Snakefile is."""
    src = Path(path).expanduser()
    out = {packaged_arms_file(str(src)): src}
    for a in (load_yaml(src).get("arms") or {}).values():
        for key in ("system_prompt", "schema"):
            if isinstance(a.get(key), str):
                f = (src.parent / a[key]).resolve()
                out[f"{PACKAGED_ARMS}/{f.relative_to(src.parent.resolve()).as_posix()}"] = f
    return out


def secret_lines(path: Path, why: str) -> list[str]:
    """Each credential-shaped string in a file a user wrote (an own arm's prompt, schema
    or arms file, a session's facts file), by file and line, never its value: found as a
    transcript's and a config's are (foldstudy/secrets.py's find_secrets). `why`: where
    the file's text would go."""
    from ..secrets import find_secrets

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [f"{path} is not readable as UTF-8 text ({str(e)[:120]})"]
    return [f"{path}:{h.line}: a credential-shaped string ({h.kind}; not shown); {why}: "
            "remove it" for h in find_secrets(text)]


def _secret_lines(path: Path, at: str) -> list[str]:
    """A secret in an own arm's prompt or schema file: the file is sent to the model with
    every fold, and a release carries it."""
    return [f"{at}: {line}" for line in secret_lines(
        path, "it would be sent to the model with every fold and carried in a release")]


def own_arm_twins(path: str | Path | None) -> dict[str, str]:
    """Each own arm of a (checked) arms file and the paper's arm it is twinned with: the
    matched ones only (is_matched), since a twin is what a matched contrast compares."""
    if not path:
        return {}
    arms = load_yaml(Path(path).expanduser()).get("arms") or {}
    return {str(a): str(spec["twin"]) for a, spec in arms.items() if is_matched(spec)}


def unmatched_own_arms(path: str | Path | None) -> list[str]:
    """The own arms of a (checked) arms file that keep their own capacity (`match:
    false`): outside every matched contrast (is_matched)."""
    if not path:
        return []
    arms = load_yaml(Path(path).expanduser()).get("arms") or {}
    return [str(a) for a, spec in arms.items() if not is_matched(spec)]


def _own_arm(out: dict[str, Any], table: dict[str, Any], arm_id: str, a: dict[str, Any],
             at: str, src: Path, resources: Path) -> list[str]:
    """Add one own arm, already checked by its schema, to `out` (the merged table) and
    return its problems."""
    problems: list[str] = []
    spec = {k: v for k, v in a.items() if k not in ("system_prompt", "schema", "twin")}
    spec["system_prompt"] = f"own:{arm_id}"
    for key in ("system_prompt", "schema"):
        if a.get(key):
            p, problem = _inside(src.parent, a[key], f"{at}.{key}")
            spec[f"{key}_file"] = str(p)
            if problem is None and key == "schema":
                problem = _schema_file_problem(p, f"{at}.{key}")
            problems += [problem] if problem else _secret_lines(p, f"{at}.{key}")
    spec.setdefault("ceilings", {})
    spec.setdefault("description", a["title"])
    if problems:
        return problems
    out["arms"][arm_id] = spec
    try:
        mine, twin = (resolve_arm(arm_id, out, resources, 1.0),
                      resolve_arm(a["twin"], table, resources, 1.0))
    except (SpecError, ValueError, KeyError, TypeError) as e:
        problems.append(f"{at}: {e}")
        return problems
    if not is_matched(spec):  # `match: false`: the arm keeps its own capacity
        return problems
    for what, have, want in (
            ("fold_budget_tokens", mine.fold_budget_tokens, twin.fold_budget_tokens),
            ("carry_cap_tokens", mine.carry_cap_tokens, twin.carry_cap_tokens),
            ("ceilings (sum over fields)", mine.declared_ceiling_chars,
             twin.declared_ceiling_chars)):
        if have != want:
            problems.append(f"{at}.{what.split(' ')[0]}: {have} breaks the capacity match "
                            f"with its twin {a['twin']} ({want}); the arms compared keep "
                            "the same capacity (paper §3.2)")
    return problems
