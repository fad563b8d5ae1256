"""Derived arms declared once: each kind of arm the config derives from arms of the table
(the A/A copy `ARM~aa`, the native arm with another arm's prompt `native@ARM`), with its id
rule, title, place outside the matched comparison and opacity, and the one parse and make
of such ids.

A derived arm is known by its id alone wherever a row, a card or a package names it, so
the id rule is the contract: `DERIVATIONS` states each rule once, `parse` reads an id back
and `make` writes one, and nothing else in the package splits or builds such an id
(tests/test_layout.py fails on a module that does). A new kind is one more `Derivation`
here and the config key that asks for it. The rest of this module is what the config's
derived arms are: the copies and `native@ARM` arms a config's sweeps run (or a reviewer's
package holds), and the arm table with an entry per derived arm, which study/spec.py
resolve_arm builds as the arm it derives from.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from typing import Any

from ..carriers.native import PROVIDER, NativeWords
from ..carriers.registry import carrier_of
from .arm import is_index_arm

# What an arm id may hold (config.schema.yaml's name rule, own arms' too): a derivation's
# marks hold a character outside it, so a derived id never collides with an arm's.
_ARM_ID_CHARS = re.compile(r"[A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Derivation:
    """One kind of derived arm.

    id_rule: the id from the arms it names, as a format string whose fields are those
    arms in id order and whose literal text is the mark (`{arm}~aa`); every field but the
    last is read up to the first mark after it, the last up to the rule's end.
    source: the field naming the arm it runs as (its table entry, carrier and capacity).
    names: (the key of its table entry naming an arm, the field that key holds).
    title_rule / description_rule: format strings over the fields, and `<field>_title`
    for the title the table gives that field's arm (the arm's id where it gives none).
    title_words: more fields of the title rule, each with the words it reads where a
    caller gives none (a native@ARM arm's `compaction`: the provider's, or a proxy's
    for a model whose config says so, carriers/native.py native_words).
    matched: inside the paper's matched comparison; a derived arm is a control, read only
    against the arms it derives from, on card lines of its own.
    opaque_like_source: its carry may be opaque where its source arm's may (it runs as
    that arm), so evidence accepts an opaque trace on it exactly there."""

    name: str
    id_rule: str
    source: str
    names: tuple[str, str]
    title_rule: str
    description_rule: str
    title_words: tuple[tuple[str, str], ...] = ()
    matched: bool = False
    opaque_like_source: bool = True

    def __post_init__(self) -> None:
        prefix, fields = _pieces(self.id_rule)
        marks = [prefix, *(after for _, after in fields)]
        if not fields or any(not after for _, after in fields[:-1]):
            raise ValueError(f"derivation {self.name}: {self.id_rule!r} has no field, or "
                             "two fields with no mark between them")
        if all(_ARM_ID_CHARS.fullmatch(m) for m in marks):
            raise ValueError(f"derivation {self.name}: {self.id_rule!r} holds no mark an "
                             "arm id cannot hold, so its ids could collide with an arm's")
        if self.source not in self.parts or self.names[1] not in self.parts:
            raise ValueError(f"derivation {self.name}: source and names name fields of "
                             f"{self.id_rule!r}")

    @property
    def parts(self) -> tuple[str, ...]:
        """The fields of the id rule, in id order: the arms an id of this kind names."""
        return tuple(name for name, _ in _pieces(self.id_rule)[1])

    @property
    def marks(self) -> tuple[str, ...]:
        """The id rule's literal text: what marks an id as of this kind."""
        prefix, fields = _pieces(self.id_rule)
        return tuple(m for m in (prefix, *(after for _, after in fields)) if m)

    def make(self, *arms: str) -> str:
        """The id of this kind naming `arms` (one per field, in id order)."""
        if len(arms) != len(self.parts):
            raise ValueError(f"derivation {self.name}: {self.id_rule!r} names "
                             f"{len(self.parts)} arm(s), not {len(arms)}")
        return self.id_rule.format(**dict(zip(self.parts, arms, strict=True)))

    def read(self, arm_id: str) -> tuple[str, ...] | None:
        """The arms an id of this kind names, in id order, or None where arm_id is no
        id of this kind (each arm named must be non-empty)."""
        prefix, fields = _pieces(self.id_rule)
        if not arm_id.startswith(prefix):
            return None
        rest, out = arm_id[len(prefix):], []
        for i, (_, after) in enumerate(fields):
            if i == len(fields) - 1:  # the last field runs to the rule's end
                if not rest.endswith(after):
                    return None
                value = rest[:len(rest) - len(after)]
            else:
                value, mark, rest = rest.partition(after)
                if not mark:
                    return None
            if not value:
                return None
            out.append(value)
        return tuple(out)

    def title(self, **names: str) -> str:
        """The title tables, cards and pages print: the title rule over the fields and
        their arms' titles (`<field>_title`), as far as the rule names them, and its
        title_words (their defaults where not given)."""
        return self.title_rule.format(**{**dict(self.title_words), **names})

    def entry(self, arms: tuple[str, ...], table_arms: dict[str, Any]) -> dict[str, Any]:
        """The arm table's entry of the arm of this kind naming `arms`: its source arm's
        entry, naming the arm it derives from (`names`), titled and described."""
        named = dict(zip(self.parts, arms, strict=True))
        titles = {f"{p}_title": (table_arms.get(a) or {}).get("title", a)
                  for p, a in named.items()}
        key, field = self.names
        return {**table_arms[named[self.source]], key: named[field],
                "title": self.title(**named, **titles),
                "description": self.description_rule.format(**named)}


def _pieces(rule: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(the literal text before the first field, ((field, the literal after it), ...))."""
    parsed = list(Formatter().parse(rule))
    fields = tuple((name, parsed[i + 1][0] if i + 1 < len(parsed) else "")
                   for i, (_, name, _, _) in enumerate(parsed) if name is not None)
    return (parsed[0][0] if parsed else ""), fields


# An A/A copy (config sweeps.X.controls.aa): an exact copy of ARM, sending its requests
# byte for byte, read against ARM only (the card's A/A line).
AA = Derivation(
    name="aa", id_rule="{arm}~aa", source="arm", names=("copy_of", "arm"),
    title_rule="{arm_title} (A/A copy)",
    description_rule="an exact copy of arm {arm} (A/A control)")
# The native arm sending ARM's system prompt as the provider's compaction instructions
# (config sweeps.X.native_with), read against the native arm and against ARM.
NATIVE_WITH = Derivation(
    name="native_with", id_rule="{native}@{arm}", source="native",
    names=("instructions_from", "arm"),
    title_rule="{compaction} with {arm}'s prompt",
    title_words=(("compaction", PROVIDER.compaction),),
    description_rule="arm {native} sending arm {arm}'s system prompt as the provider's "
                     "compaction instructions")
# Every kind, in the order parse tries them.
DERIVATIONS: tuple[Derivation, ...] = (AA, NATIVE_WITH)


def parse(arm_id: str) -> tuple[Derivation, tuple[str, ...]] | None:
    """(the kind, the arms it names) of a derived arm's id, or None where arm_id is an
    arm's own; the first kind of DERIVATIONS whose rule reads it."""
    for d in DERIVATIONS:
        if (arms := d.read(arm_id)) is not None:
            return d, arms
    return None


def make(derivation: Derivation, *arms: str) -> str:
    """The id of the arm of kind `derivation` naming `arms`, in id order."""
    return derivation.make(*arms)


def derived_from(arm_id: str, arms: Collection[str]) -> bool:
    """Whether arm_id is, by any kind's rule, a derived arm naming only arms of `arms`
    (a package's rows know a derived arm by its id alone)."""
    return any((named := d.read(arm_id)) is not None and set(named) <= set(arms)
               for d in DERIVATIONS)


def aa_copy_id(arm: str) -> str:
    """The id of `arm`'s A/A copy (config sweeps.X.controls.aa)."""
    return AA.make(arm)


def aa_original(arm: str) -> str | None:
    """The arm an A/A copy's id copies, or None where the id is no copy's: the mark is
    one no other id can hold, so a copy is known by its id alone (a package's rows)."""
    return named[0] if (named := AA.read(arm)) else None


def native_with_id(native: str, arm: str) -> str:
    """The id of the native arm `native` sending arm `arm`'s prompt as its instructions."""
    return NATIVE_WITH.make(native, arm)


def native_with_of(arm_id: str) -> tuple[str, str] | None:
    """(the native arm, the arm whose prompt it sends) of a native_with id, else None."""
    named = NATIVE_WITH.read(arm_id)
    return (named[0], named[1]) if named else None


def native_with_title(arm: str, words: NativeWords = PROVIDER) -> str:
    """The title of `native@<arm>`, where tables, cards and pages print it, in a model's
    native words (carriers/native.py native_words; the provider's by default)."""
    return NATIVE_WITH.title(arm=arm, compaction=words.compaction)


def spec_title(spec: Mapping[str, Any], words: NativeWords = PROVIDER) -> str:
    """An arm spec's title (a run record's arm_spec, a table entry) on a model whose
    native words are `words` (carriers/native.py native_words): a native arm's is that
    compaction's, a native@ARM arm's names it with ARM's prompt, an A/A copy's is a copy
    of its original's; any other arm's, or any arm's in the provider's words, is the
    spec's own."""
    title = str(spec.get("title", ""))
    if words == PROVIDER or not carrier_of(spec).needs_native_compaction:
        return title
    said = (native_with_title(str(spec["instructions_from"]), words)
            if spec.get("instructions_from") else words.compaction)
    return AA.title(arm=str(spec["copy_of"]), arm_title=said) if spec.get("copy_of") else said


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


def _with_entries(table: dict[str, Any], derivation: Derivation,
                  made: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """The arm table with an entry (Derivation.entry) per derived arm of `made` (id ->
    the arms it names)."""
    if not made:
        return table
    arms = dict(table["arms"])
    for arm_id, named in made.items():
        arms[arm_id] = derivation.entry(named, arms)
    return {**table, "arms": arms}


def with_aa_copies(table: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The arm table with an entry per A/A copy the config runs: its original's entry,
    titled as a copy, naming what it copies (resolve_arm builds it as the original)."""
    return _with_entries(table, AA, {c: (a,) for c, a in aa_copies(config).items()})


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
    return _with_entries(table, NATIVE_WITH, dict(native_prompts(config, table)))
