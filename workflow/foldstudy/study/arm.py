"""The Arm: one output representation resolved at a scale, frozen, and the predicates
every stage asks of an arm (an index arm, inside the matched comparison).

study/spec.py builds an Arm from resources/arms.yaml (resolve_arm); study/derived.py
declares the arms the config derives from others (an A/A copy, `native@ARM`), which an
Arm names by `copy_of` and `instructions_from`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..carriers.registry import carrier_of, index_base


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
    # an identifier index beside the carry (carriers/identifier_index.py). The index may hold
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

