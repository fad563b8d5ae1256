"""Frozen specs of the study (arms, facts), built once from resources/ and passed around.

Everything here is data in, data out: the entry points read the YAML, these functions
turn it into specs, and nothing deeper in the package reads a file again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import StudyError
from ..io import load_yaml, sha256_text

CARRY_RULES = ("text", "rendered", "under_headings", "raw_json")  # plus "field:NAME"


class SpecError(StudyError, ValueError):
    """A resource or config value that would break the study's design."""


@dataclass(frozen=True)
class Arm:
    """One output representation, resolved at a scale: everything a fold needs."""

    arm: str
    title: str  # the short label tables and figures print
    description: str  # what the arm changes (paper §3.2)
    system_prompt_name: str
    system_prompt: str
    system_prompt_sha256: str
    schema_name: str | None
    schema: dict[str, Any] | None  # with maxLength set from the declared ceilings
    ceilings: dict[str, int]  # field -> declared ceiling in chars (scaled)
    fold_budget_tokens: int
    carry_cap_tokens: int
    carry: str
    # carry "under_headings": fixed heading -> the schema fields rendered under it
    sections: dict[str, list[str]] = field(default_factory=dict)

    @property
    def n_fields(self) -> int:
        return len(self.schema["properties"]) if self.schema else 0

    @property
    def declared_ceiling_chars(self) -> int | None:
        """Sum over fields; None where the arm declares none (plain arms, k)."""
        return sum(self.ceilings.values()) if self.ceilings else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Arm:
        return cls(**d)


def scaled(value: float, scale: float) -> int:
    """Scale a paper-scale quantity; at least 1 so no budget or ceiling reaches zero."""
    return max(1, round(value * scale))


def load_arm_table(resources: Path) -> dict[str, Any]:
    return load_yaml(resources / "arms.yaml")


def arm_ids(table: dict[str, Any]) -> tuple[str, ...]:
    """The study's arms in the table's order (the paper's Table 1 order).

    resources/arms.yaml is the one place an arm is named: the config check, the
    `arm` wildcard and the tables all derive their arm lists from this.
    """
    return tuple(table["arms"])


def _per_section_sources(table: dict[str, Any]) -> dict[str, int]:
    """Arms whose ceiling another arm splits per section, with the section count."""
    out: dict[str, int] = {}
    for a in table["arms"].values():
        for v in a["ceilings"].values():
            if isinstance(v, dict) and v.get("per_section"):
                out[v["from_arm"]] = len(a["ceilings"])
    return out


def _single_ceiling(arm_id: str, table: dict[str, Any], scale: float, stack: tuple = ()) -> int:
    """The scaled single-field ceiling of an arm that others derive theirs from."""
    ceilings = table["arms"][arm_id]["ceilings"]
    if len(ceilings) != 1:
        raise SpecError(f"arms.{arm_id}: derived ceilings need a single-field source arm")
    (value,) = ceilings.values()
    return _resolve_ceiling(arm_id, value, table, scale, n_sections=1, stack=stack)


def _resolve_ceiling(
    arm_id: str, value: Any, table: dict[str, Any], scale: float, n_sections: int, stack: tuple
) -> int:
    if isinstance(value, int):
        split = _per_section_sources(table).get(arm_id)
        if split:
            # A ceiling another arm splits per section is rounded to a multiple of the
            # section count, so the split is exact at every scale (q's match with j).
            return max(split, split * round(value * scale / split))
        return scaled(value, scale)
    if not isinstance(value, dict) or "from_arm" not in value:
        raise SpecError(f"arms.{arm_id}.ceilings: {value!r} is neither an int nor {{from_arm: …}}")
    src = value["from_arm"]
    if src in stack or src == arm_id:
        raise SpecError(f"arms.{arm_id}.ceilings: circular from_arm via {src}")
    base = _single_ceiling(src, table, scale, stack + (arm_id,))
    if value.get("per_section"):
        return base // n_sections
    return max(1, round(base * float(value.get("factor", 1.0))))


def load_schema(resources: Path, name: str) -> dict[str, Any]:
    """resources/schemas/<name>.json, as written (no ceiling set yet)."""
    return json.loads((resources / "schemas" / f"{name}.json").read_text(encoding="utf-8"))


def resolve_arm(
    arm_id: str, table: dict[str, Any], resources: Path, scale: float
) -> Arm:
    """Build one arm at `scale` from the arm table and the prompt and schema files."""
    if arm_id not in table["arms"]:
        raise SpecError(f"{arm_id!r} is not an arm (known: {' '.join(sorted(table['arms']))})")
    a = table["arms"][arm_id]
    # a user's own arm (config arms_file) names its prompt and schema files by path
    prompt_path = (Path(a["system_prompt_file"]) if a.get("system_prompt_file")
                   else resources / "prompts" / f"{a['system_prompt']}.md")
    prompt = prompt_path.read_text(encoding="utf-8")
    schema = None
    ceilings: dict[str, int] = {}
    if a.get("schema_file"):
        schema = json.loads(Path(a["schema_file"]).read_text(encoding="utf-8"))
    elif a.get("schema"):
        schema = load_schema(resources, a["schema"])
    if schema is not None:
        sections = [k for k in a["ceilings"]]
        for fname, value in a["ceilings"].items():
            if fname not in schema["properties"]:
                raise SpecError(f"arms.{arm_id}.ceilings.{fname}: not a field of {a['schema']}")
            ceilings[fname] = _resolve_ceiling(
                arm_id, value, table, scale, n_sections=len(sections), stack=()
            )
            schema["properties"][fname]["maxLength"] = ceilings[fname]
    carry = a["carry"]
    if carry not in CARRY_RULES and not carry.startswith("field:"):
        known = " ".join(CARRY_RULES)
        raise SpecError(f"arms.{arm_id}.carry: {carry!r} (known: {known} field:NAME)")
    sections = {h: list(fs) for h, fs in (a.get("sections") or {}).items()}
    if carry == "under_headings":
        _check_sections(arm_id, sections, table.get("fixed_headings", []), schema)
    return Arm(
        arm=arm_id,
        title=a["title"],
        description=a.get("description", ""),
        system_prompt_name=a["system_prompt"],
        system_prompt=prompt,
        system_prompt_sha256=sha256_text(prompt),
        schema_name=a.get("schema") or (Path(a["schema_file"]).stem if a.get("schema_file")
                                         else None),
        schema=schema,
        ceilings=ceilings,
        fold_budget_tokens=scaled(a["fold_budget_tokens"], scale),
        carry_cap_tokens=scaled(a["carry_cap_tokens"], scale),
        carry=carry,
        sections=sections,
    )


def _check_sections(arm_id: str, sections: dict[str, list[str]], headings: list[str],
                    schema: dict[str, Any] | None) -> None:
    """Every fixed heading gets fields, and every field of the schema lands under one."""
    where = f"arms.{arm_id}.sections"
    if list(sections) != list(headings):
        raise SpecError(f"{where}: {list(sections)} must be the fixed headings in order "
                        f"({', '.join(headings)})")
    fields = [f for fs in sections.values() for f in fs]
    declared = list((schema or {}).get("properties", {}))
    if sorted(fields) != sorted(declared):
        raise SpecError(f"{where}: fields {sorted(fields)} must be the schema's fields, each "
                        f"once ({', '.join(declared)})")


@dataclass(frozen=True)
class Fact:
    """One planted fact and where the fixture put it."""

    fact_id: str
    fact_class: str
    value: str
    graded: bool
    label: str = ""
    unit: str = ""
    segment: int = -1
    chunk: int = -1
    offset: int = -1  # character offset inside the chunk text
    statement: str = ""


@dataclass(frozen=True)
class Fixture:
    """A generated session cut into chunks, one chunk per fold."""

    scenario: str
    seed: int
    scale: float
    chunks: tuple[str, ...]
    facts: tuple[Fact, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def graded(self) -> list[Fact]:
        return [f for f in self.facts if f.graded]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "scale": self.scale,
            "chunks": list(self.chunks),
            "facts": [asdict(f) for f in self.facts],
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fixture:
        return cls(
            scenario=d["scenario"],
            seed=d["seed"],
            scale=d["scale"],
            chunks=tuple(d["chunks"]),
            facts=tuple(Fact(**f) for f in d["facts"]),
            meta=d.get("meta", {}),
        )


# What a user's own arm (config arms_file) must say; the rest is arms.yaml's shape.
OWN_ARM_KEYS = ("title", "twin", "system_prompt", "fold_budget_tokens", "carry_cap_tokens",
                "carry")
OWN_ARM_OPTIONAL = ("description", "schema", "ceilings", "sections")


def merge_own_arms(table: dict[str, Any], path: str, resources: Path
                   ) -> tuple[dict[str, Any], list[str]]:
    """The arm table with a user's own arms added (issue 25: "your own compaction prompt as
    an arm"), and every problem with them, by file and key.

    The file is arms.yaml's shape, with two differences: `system_prompt` and `schema` are
    file paths (relative to the arms file), and each arm names a `twin`, one of the
    paper's arms, whose capacity it must match exactly at paper scale: fold budget, carry
    cap and declared ceiling (paper §3.2: "Prompt, input, fold protocol, and output
    budget are held fixed within a comparison"). Its prompt is recorded by its sha256
    digest on every row, as the paper's are.
    """
    import copy

    where = f"config.arms_file ({path})"
    src = Path(path).expanduser()
    if not src.is_file():
        return table, [f"{where}: no such file (a YAML in resources/arms.yaml's shape)"]
    doc = load_yaml(src)
    arms = doc.get("arms") if isinstance(doc, dict) else None
    if not isinstance(arms, dict) or not arms:
        return table, [f"{where}: needs `arms:`, a mapping of arm id -> its spec"]
    out = copy.deepcopy(table)
    problems: list[str] = []
    for arm_id, a in arms.items():
        problems += _own_arm(out, table, arm_id, a, f"{path}: arms.{arm_id}", src, resources)
    return out, problems


def own_arm_twins(path: str | None) -> dict[str, str]:
    """Each own arm of a (checked) arms file and the paper's arm it is twinned with."""
    if not path:
        return {}
    arms = load_yaml(Path(path).expanduser()).get("arms") or {}
    return {str(a): str(spec["twin"]) for a, spec in arms.items()}


def _own_arm(out: dict[str, Any], table: dict[str, Any], arm_id: str, a: Any, at: str,
             src: Path, resources: Path) -> list[str]:
    """Add one own arm to `out` (the merged table) and return its problems."""
    problems: list[str] = []
    if arm_id in table["arms"]:
        problems.append(f"{at}: {arm_id!r} is one of the paper's arms; give yours "
                        "another id")
        return problems
    if not isinstance(a, dict):
        problems.append(f"{at}: must be a mapping (keys: {', '.join(OWN_ARM_KEYS)})")
        return problems
    missing = [k for k in OWN_ARM_KEYS if k not in a]
    extra = sorted(set(a) - set(OWN_ARM_KEYS) - set(OWN_ARM_OPTIONAL))
    if missing or extra:
        problems.append(f"{at}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else [])
            + ([f"unknown key {', '.join(extra)}"] if extra else [])))
        return problems
    if a["twin"] not in table["arms"]:
        problems.append(f"{at}.twin: {a['twin']!r} is not one of the paper's arms "
                        f"(known: {' '.join(sorted(table['arms']))})")
        return problems
    spec = {k: v for k, v in a.items() if k not in ("system_prompt", "schema", "twin")}
    spec["system_prompt"] = f"own:{arm_id}"
    spec["system_prompt_file"] = str(src.parent / a["system_prompt"])
    if a.get("schema"):
        spec["schema_file"] = str(src.parent / a["schema"])
    spec.setdefault("ceilings", {})
    spec.setdefault("description", a["title"])
    for key in ("system_prompt_file", "schema_file"):
        if key in spec and not Path(spec[key]).is_file():
            problems.append(f"{at}.{key.removesuffix('_file')}: {spec[key]} does not "
                            "exist (a path relative to the arms file)")
    if problems:
        return problems
    out["arms"][arm_id] = spec
    try:
        mine, twin = (resolve_arm(arm_id, out, resources, 1.0),
                      resolve_arm(a["twin"], table, resources, 1.0))
    except (SpecError, ValueError) as e:
        problems.append(f"{at}: {e}")
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
