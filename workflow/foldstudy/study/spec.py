"""Arms resolved from resources/arms.yaml: the arm table read once, each arm built at a
scale into its frozen Arm (study/arm.py) with its prompt, schema and declared ceilings,
and the index arms' share of their base's capacity checked and split.

Everything here is data in, data out: the entry points read the YAML, these functions
turn it into specs, and nothing deeper in the package reads a file again. The arms the
config derives from these (an A/A copy, `native@ARM`) are declared in study/derived.py,
and join the table before any is resolved.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..carriers.registry import (
    CarrierError,
    carrier_for,
    carrier_of,
)
from ..errors import SpecError
from ..io import load_yaml, sha256_text
from .arm import Arm, is_index_arm, is_matched


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
        for v in (a.get("ceilings") or {}).values():
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
    if a.get("copy_of"):  # an A/A copy: its original, under its own id and title
        return replace(resolve_arm(a["copy_of"], table, resources, scale), arm=arm_id,
                       title=a["title"], copy_of=a["copy_of"])
    if is_index_arm(a):
        return resolve_index_arm(arm_id, table, resources, scale)
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
    try:
        carrier = carrier_for(carry)
    except CarrierError as e:
        raise SpecError(f"arms.{arm_id}.carry: {e}") from None
    if carrier.system_prompt and a["system_prompt"] != carrier.system_prompt:
        raise SpecError(f"arms.{arm_id}.system_prompt: {a['system_prompt']!r}; an arm of "
                        f"carry {carry} names {carrier.system_prompt!r}, the prompt its "
                        "carrier sends")
    sections = {h: list(fs) for h, fs in (a.get("sections") or {}).items()}
    carrier.check(arm_id, sections, table.get("fixed_headings", []), schema)
    arm = Arm(
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
    if a.get("instructions_from"):  # native@ARM: ARM's prompt as its instructions
        given = resolve_arm(a["instructions_from"], table, resources, scale)
        return replace(arm, instructions_from=given.arm,
                       instructions_name=given.system_prompt_name,
                       instructions=given.system_prompt,
                       instructions_sha256=given.system_prompt_sha256)
    return arm


# The most of its base's capacity an index may take: an index arm is its base's fold with
# an index beside it, so the summary keeps at least as much as the index. Without a
# floor, `index_share: 0.999` left the model a fold budget and carry cap of about two
# tokens: no summary at all, yet the arm read as "the base's fold with an index".
INDEX_SHARE_MAX = 0.5


def index_problems(arm_id: str, table: dict[str, Any]) -> list[str]:
    """What is wrong with an index arm's entry (`base`, `index_share`), each in one line
    naming its key: the base is an arm inside the matched comparison (is_matched: a
    model-written carry at the study's capacity, whose fold the index arm sends; the
    native arm, a carrier that keeps the session or another index arm has no such fold),
    and the share lies in (0, INDEX_SHARE_MAX]."""
    a = table["arms"][arm_id]
    where = f"arms.{arm_id}"
    base_id, out = a["base"], []
    base = table["arms"].get(base_id)
    if not isinstance(base, dict) or is_index_arm(base) or not is_matched(base):
        folds = [k for k, v in table["arms"].items() if isinstance(v, dict)
                 and not is_index_arm(v) and is_matched(v)]
        why = ("no arm" if not isinstance(base, dict) else
               "an index arm" if is_index_arm(base) else
               carrier_of(base).outside(base) or "outside the matched comparison")
        out.append(f"{where}.base: {base_id!r} is {why}; an index arm's base is an arm "
                   "whose fold it sends, inside the matched comparison (one of: "
                   f"{' '.join(folds)})")
    share = a.get("index_share")
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not (
            0 < share <= INDEX_SHARE_MAX):
        out.append(f"{where}.index_share: {share!r} is not a share of the base arm's capacity "
                   f"above 0 and at most {INDEX_SHARE_MAX:g} (the summary keeps at least "
                   "as much as the index)")
    return out


def builtin_arm_problems(table: dict[str, Any], where: str = "resources/arms.yaml"
                         ) -> list[str]:
    """What the config check refuses in the built-in arm table, each in one line naming
    the file and the key: an index arm's `base` and `index_share` (index_problems), and
    `match`, which belongs to a user's own arm (config.arms_file: `match: false` keeps its
    own capacity); on a built-in arm `match: false` took it out of every matched contrast
    without a word."""
    arms = {k: a for k, a in table.get("arms", {}).items() if isinstance(a, dict)}
    out = [f"{where}: arms.{k}.match: {a['match']!r} is an own arm's key (config.arms_file: "
           "match: false keeps its own capacity); a built-in arm is matched by its carrier, "
           "so remove the key" for k, a in arms.items() if "match" in a]
    # an index arm is judged as its base would be without that key: one line, not two
    clean = {**table, "arms": {k: {x: v for x, v in a.items() if x != "match"}
                               for k, a in arms.items()}}
    return out + [f"{where}: {x}" for k, a in arms.items() if is_index_arm(a)
                  for x in index_problems(k, clean)]


def index_shares(base: Arm, share: float) -> tuple[int, int, int]:
    """(model's fold budget, model's carry cap, index cap) of an index arm on `base`: the
    index takes `share` of the base's carry cap, and the model's budget and cap shrink by
    the same share, so the carry and the index together never pass the base's cap (the
    capacity match). Rounded once, at the scale the arm runs at, so the split is exact."""
    index_cap = max(1, round(base.carry_cap_tokens * share))
    budget = max(1, base.fold_budget_tokens - round(base.fold_budget_tokens * share))
    return budget, max(1, base.carry_cap_tokens - index_cap), index_cap


def resolve_index_arm(arm_id: str, table: dict[str, Any], resources: Path, scale: float
                      ) -> Arm:
    """An index arm at `scale`: its base arm resolved from the same table (overrides of
    the base move it too), with the base's prompt, schema, ceilings and carry rule
    unchanged ("The model's fold prompt is the base arm's, unchanged") and the capacity
    split by index_shares."""
    a = table["arms"][arm_id]
    base_id, share = a["base"], a.get("index_share")
    if problems := index_problems(arm_id, table):
        raise SpecError(problems[0])
    base = resolve_arm(base_id, table, resources, scale)
    budget, cap, index_cap = index_shares(base, float(share))
    return replace(base, arm=arm_id, title=a["title"],
                   description=a.get("description", base.description),
                   fold_budget_tokens=budget, carry_cap_tokens=cap, base=base_id,
                   index_share=float(share), index_cap_tokens=index_cap,
                   index_heading=str(table.get("index_heading", "Identifier index")))

