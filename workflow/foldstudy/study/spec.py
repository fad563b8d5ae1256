"""Frozen specs of the study (arms, facts), built once from resources/ and passed around.

Everything here is data in, data out: the entry points read the YAML, these functions
turn it into specs, and nothing deeper in the package reads a file again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import StudyError
from ..io import load_yaml, sha256_text
from .carriers.registry import (
    CarrierError,
    carrier_for,
    carrier_of,
    index_base,
)


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
    # An index arm (resources/arms.yaml `base`, `index_share`): the base arm's fold, with
    # an identifier index beside the carry (study/index.py). The index may hold
    # index_cap_tokens; the model's budget and carry cap are the base's less that share,
    # so the total the arm retains stays the base's. None/0 on every other arm.
    base: str | None = None
    index_share: float = 0.0
    index_cap_tokens: int = 0
    index_heading: str = ""
    # An A/A copy (config sweeps.X.controls.aa): the arm it copies, whose requests it
    # sends byte for byte; None on every other arm
    copy_of: str | None = None
    # A native arm with another arm's prompt (config sweeps.X.native_with: `native@ARM`,
    # with_native_prompts): ARM, and ARM's system prompt as the provider's compaction
    # instructions, by name and sha256 as the system prompt is (so every request key,
    # store key and record changes with it); None on every other arm
    instructions_from: str | None = None
    instructions_name: str | None = None
    instructions: str | None = None
    instructions_sha256: str | None = None

    @property
    def wire_arm(self) -> str:
        """The arm whose name a request carries (the schema's name): an index arm's base,
        an A/A copy's original, else the arm itself, so neither differs on the wire."""
        return self.base or self.copy_of or self.arm

    @property
    def has_index(self) -> bool:
        return self.index_cap_tokens > 0

    @property
    def n_fields(self) -> int:
        return len(self.schema["properties"]) if self.schema else 0

    @property
    def declared_ceiling_chars(self) -> int | None:
        """Sum over fields; None where the arm declares none (plain arms, k)."""
        return sum(self.ceilings.values()) if self.ceilings else None

    def to_dict(self) -> dict[str, Any]:
        """The arm as a record keeps it; an arm without an index writes no index key, so
        the paper's arms' records and fold jobs' params are what they always were."""
        d = asdict(self)
        if self.base is None:
            for k in INDEX_KEYS:
                d.pop(k)
        if self.copy_of is None:
            d.pop("copy_of")
        if self.instructions_from is None:
            for k in INSTRUCTION_KEYS:
                d.pop(k)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Arm:
        return cls(**d)


INDEX_KEYS = ("base", "index_share", "index_cap_tokens", "index_heading")
INSTRUCTION_KEYS = ("instructions_from", "instructions_name", "instructions",
                    "instructions_sha256")


def is_index_arm(spec: Arm | dict[str, Any]) -> bool:
    """An arms.yaml entry that names a `base`: the base's fold plus an identifier index
    (carriers/index.py)."""
    return index_base(spec) is not None


def is_matched(arm: Arm | dict[str, Any]) -> bool:
    """Whether an arm (its arms.yaml or arms_file entry, or the resolved Arm) is inside the
    paper's matched comparison: a model-written carry at its arm's capacity, or an own
    arm holding its twin's exactly (paper §3.2: "Prompt, input, fold protocol, and output
    budget are held fixed within a comparison").

    The one test of "outside the matched comparison": an index arm (a carrier beyond the
    paper's: it is compared with its base arm only, on its own card line), a native arm
    (the provider's compaction, at the provider's capacity, not the study's) and an own
    arm with `match: false` (at its own capacity) are outside, and so never reach a
    matched contrast, a decision card's verdict or a paper table; they appear on the
    retained-token axis and in the arm-against-arm tables. Whether a kind is inside is
    its carrier's to say (carriers/base.py `matched`). An A/A copy is a control, outside
    too: it is read against its original only (the card's A/A line)."""
    if (arm.copy_of if isinstance(arm, Arm) else arm.get("copy_of")):
        return False
    if not carrier_of(arm).matched:
        return False
    return isinstance(arm, Arm) or arm.get("match", True) is not False


# An A/A copy's id is its original's with this mark, which no arm id of arms.yaml or of an
# arms file can hold (their rule allows letters, digits and ._- only): it never collides
# with an arm, and reads as a control wherever the id is printed.
AA_MARK = "~aa"


def aa_copy_id(arm: str) -> str:
    """The id of `arm`'s A/A copy (config sweeps.X.controls.aa)."""
    return f"{arm}{AA_MARK}"


def aa_original(arm: str) -> str | None:
    """The arm an A/A copy's id copies, or None where the id is no copy's: the mark is
    one no other id can hold, so a copy is known by its id alone (a package's rows)."""
    return (arm[:-len(AA_MARK)] or None) if arm.endswith(AA_MARK) else None


def aa_copies(config: dict[str, Any] | None) -> dict[str, str]:
    """Each A/A copy a config's sweeps run (controls.aa) -> the arm it copies; in evidence
    mode (config `evidence`) also each copy the package's rows hold, so a reviewer
    re-deciding a package with an A/A control reads it as the study that made it did."""
    out = {}
    for sw in ((config or {}).get("sweeps") or {}).values():
        arm = ((sw or {}).get("controls") or {}).get("aa") if isinstance(sw, dict) else None
        if isinstance(arm, str) and arm:
            out[aa_copy_id(arm)] = arm
    out.update({a: o for a in packaged_arm_ids(config) if (o := aa_original(a))})
    return out


def packaged_arm_ids(config: dict[str, Any] | None) -> list[str]:
    """In evidence mode (config `evidence`), every arm id the package's rows hold, sorted
    (an arm the config derives, a copy or a native@ARM arm, is known there by its id
    alone); outside it, none."""
    evidence = (config or {}).get("evidence")
    if not evidence:
        return []
    return sorted({a for arms in package_arms(Path(evidence) / "rows.csv").values()
                   for a in arms})


def package_arms(rows_csv: str | Path) -> dict[str, set[str]]:
    """sweep -> the arms a package's rows.csv holds (its sweep and arm columns; none
    where the file or a column is missing: the package's own check names that)."""
    import csv

    out: dict[str, set[str]] = {}
    try:
        with open(rows_csv, newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                out.setdefault(str(r.get("sweep")), set()).add(str(r.get("arm")))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return out


def with_aa_copies(table: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The arm table with an entry per A/A copy the config runs: its original's entry,
    titled as a copy, naming what it copies (resolve_arm builds it as the original)."""
    copies = aa_copies(config)
    if not copies:
        return table
    arms = dict(table["arms"])
    for copy, arm in copies.items():
        arms[copy] = {**arms[arm], "copy_of": arm,
                      "title": f"{arms[arm].get('title', arm)} (A/A copy)",
                      "description": f"an exact copy of arm {arm} (A/A control)"}
    return {**table, "arms": arms}


# A native arm sending another arm's prompt (config sweeps.X.native_with) is
# `<native>@<arm>`: a mark no arm id of arms.yaml or of an arms file can hold (their rule
# allows letters, digits and ._- only), so it never collides with an arm.
NATIVE_WITH_MARK = "@"


def native_with_id(native: str, arm: str) -> str:
    """The id of the native arm `native` sending arm `arm`'s prompt as its instructions."""
    return f"{native}{NATIVE_WITH_MARK}{arm}"


def native_with_of(arm_id: str) -> tuple[str, str] | None:
    """(the native arm, the arm whose prompt it sends) of a native_with id, else None."""
    native, mark, arm = arm_id.partition(NATIVE_WITH_MARK)
    return (native, arm) if mark and native and arm else None


def instruction_arms(table: dict[str, Any]) -> list[str]:
    """The arms of a table whose folds send a system prompt of their own to a model
    (their carrier calls the model and sends the arm's fold shape): those whose prompt
    a native arm may send as its instructions (config sweeps.X.native_with). An index
    arm sends its base's prompt, so its base is named instead."""
    return [a for a, spec in table["arms"].items()
            if not is_index_arm(spec) and not spec.get("copy_of")
            and (c := carrier_of(spec)).calls_model and c.sends_fold_shape]


def native_arms(sweep: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """The arms a sweep runs whose carrier may send another arm's prompt as its
    instructions (carriers/base.py `takes_instructions`: the native arm)."""
    arms = table.get("arms", {})
    return [a for a in sweep.get("arms") or [] if isinstance(arms.get(a), dict)
            and carrier_of(arms[a]).takes_instructions]


def sweep_native_prompts(sweep: dict[str, Any], table: dict[str, Any]
                         ) -> dict[str, tuple[str, str]]:
    """Each `native@ARM` arm one sweep runs (its native_with) -> (the native arm, ARM),
    in the order native_with names them."""
    natives = native_arms(sweep, table)
    return {native_with_id(native, str(arm)): (native, str(arm))
            for arm in sweep.get("native_with") or [] for native in natives}


def native_prompts(config: dict[str, Any] | None, table: dict[str, Any]
                   ) -> dict[str, tuple[str, str]]:
    """Each `native@ARM` arm a config's sweeps run (sweeps.X.native_with) -> (the native
    arm, ARM); in evidence mode (config `evidence`) also each the package's rows hold,
    known by its id as an A/A copy is (aa_copies), so a package is read as the study
    that made it read it."""
    out: dict[str, tuple[str, str]] = {}
    for sw in ((config or {}).get("sweeps") or {}).values():
        if isinstance(sw, dict):
            out.update(sweep_native_prompts(sw, table))
    out.update({a: made for a in packaged_arm_ids(config) if (made := native_with_of(a))
                and native_arms({"arms": [made[0]]}, table)})
    return out


def with_native_prompts(table: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The arm table with an entry per `native@ARM` arm the config runs: the native arm's
    entry, titled for the prompt it sends, naming ARM (resolve_arm reads ARM's prompt
    from the same table)."""
    made = native_prompts(config, table)
    if not made:
        return table
    arms = dict(table["arms"])
    for arm_id, (native, arm) in made.items():
        arms[arm_id] = {**arms[native], "instructions_from": arm,
                        "title": native_with_title(arm),
                        "description": f"arm {native} sending arm {arm}'s system prompt as "
                                       "the provider's compaction instructions"}
    return {**table, "arms": arms}


def native_with_title(arm: str) -> str:
    """The title of `native@<arm>`, where tables, cards and pages print it."""
    return f"the provider's compaction with {arm}'s prompt"


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
    # a control fact (config sweeps.X.controls.tail; own sessions: `control: true` in the
    # facts file): asked by the recall turn beside the graded facts, graded apart and never
    # counted in recall, so no paper number reads it. It sits where every working carrier
    # keeps it, so a row that loses it shows a broken recall turn or grader.
    control: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fact as fixture.json keeps it; a fact that is no control writes no
        `control` key, so a fixture without controls is byte for byte what it was."""
        d = asdict(self)
        if not self.control:
            d.pop("control")
        return d


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

    @property
    def controls(self) -> list[Fact]:
        """The control facts, graded apart from the graded ones (Fact.control)."""
        return [f for f in self.facts if f.control]

    @property
    def asked(self) -> list[Fact]:
        """What the recall turn asks for, in this order: the graded facts, then the
        controls (none: the graded facts alone, so the recall turn is what it was)."""
        return self.graded + self.controls

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "scale": self.scale,
            "chunks": list(self.chunks),
            "facts": [f.to_dict() for f in self.facts],
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
