"""The analysis plan: resources/analysis.yaml and the arms' order and titles, frozen once.

The paper's analyses (§4) are pure functions of the evidence, DataFrames in and out, one
module per section as report/tables/ has one per table (recall, capacity, partition,
headings, instrument; compare and retained beside them). Thresholds and arm roles come
from resources/analysis.yaml through `AnalysisPlan`, built here once and passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..carriers.native import MIXED, PROVIDER, NativeWords, native_words_of
from ..carriers.registry import carrier_of
from ..io import load_yaml
from ..study.arm import is_index_arm, is_matched
from ..study.derived import AA, NATIVE_WITH, Derivation, native_with_title
from ..study.spec import load_schema

RESOURCES = Path(__file__).resolve().parents[3] / "resources"
DEFAULT_ANALYSIS = RESOURCES / "analysis.yaml"
DEFAULT_ARMS = RESOURCES / "arms.yaml"


@dataclass(frozen=True)
class AnalysisPlan:
    """The analysis plan of resources/analysis.yaml, frozen, with the arms' order and
    titles from resources/arms.yaml (the one place an arm is named)."""

    primary_scenario: str
    single_chunk_scenario: str
    failing_recall: float
    rescued_recall: float
    row_recalled: float
    failure_mode_fill_split: float
    # Paper §4.7's table: the highest fill it saw in the gist mode and the lowest in the
    # description mode (a decision card says "between the paper's modes" between them).
    failure_mode_paper_fills: tuple[float, float]
    at_ceiling_fill: float
    borderline_margin: float
    equivalence_margin: float
    resamples: int
    seed: int
    confidence: float
    alpha: float
    undivided: str
    divided: str
    ladder: tuple[str, ...]
    equivalence: tuple[str, str]
    capacity: tuple[str, ...]
    ceiling_pair: tuple[str, str]
    representation_failing: tuple[str, ...]
    representation_healthy: tuple[str, ...]
    iteration: tuple[str, ...]
    single_field_schema: tuple[str, ...]
    token_deltas: tuple[tuple[str, str], ...]
    # §4.3: the described arm and its undescribed twin, and the characters of each arm's
    # field descriptions (read from its schema file by `load`)
    described: tuple[str, str]
    description_chars: dict[str, int]
    arm_order: tuple[str, ...]
    arm_titles: dict[str, str]
    # The pairs of arms compared fact by fact within a block, as (a, b).
    compare_pairs: tuple[tuple[str, str], ...] = ()
    # The arms outside the matched comparison (arm.is_matched: index arms,
    # own arms with `match: false`), which no paper table, matched contrast or card
    # verdict reads, and each index arm's base arm (its card line's contrast).
    unmatched: frozenset[str] = frozenset()
    index_bases: dict[str, str] = field(default_factory=dict)
    # The arms a card reads against the best matched arm that ran (the native arm: the
    # provider's compaction), each with its line's source (carriers/base.py
    # `against_best`; decision.best_arm_contrasts)
    against_best: dict[str, str] = field(default_factory=dict)
    # The arms whose carry may be opaque (carriers/base.py `may_be_opaque`): evidence
    # refuses an opaque trace on any other (evidence/load.py)
    opaque_arms: frozenset[str] = frozenset()
    # The config's A/A copies (config sweeps.X.controls.aa): copy -> the arm it copies
    # (derived.aa_copies); each card reads a copy against its original on its A/A line
    aa: dict[str, str] = field(default_factory=dict)
    # The config's native arms with another arm's prompt (config sweeps.X.native_with):
    # `native@ARM` -> (the native arm, ARM) (derived.native_prompts); each card reads one
    # against the native arm and against ARM (decision.native_with_contrasts)
    native_with: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The arms whose folds ask for the provider's own compaction (carriers/base.py
    # `needs_native_compaction`: the native arm, and each native@ARM arm), titled per model
    native_arms: frozenset[str] = frozenset()
    # model -> its native words where they are not the provider's (a model whose config
    # says native_via: proxy; carriers/native.py native_words): its native arms' titles
    # and card lines name that endpoint's compaction, never the provider's
    native_words: dict[str, NativeWords] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any], arm_table: dict[str, Any],
                  description_chars: dict[str, int] | None = None) -> AnalysisPlan:
        a, b = d["arms"], d["bootstrap"]
        return cls(
            primary_scenario=d["primary_scenario"],
            single_chunk_scenario=d["single_chunk_scenario"],
            failing_recall=float(d["failing_recall"]),
            rescued_recall=float(d["rescued_recall"]),
            row_recalled=float(d["row_recalled"]),
            failure_mode_fill_split=float(d["failure_mode_fill_split"]),
            failure_mode_paper_fills=(float(d["failure_mode_paper_fills"]["gist_up_to"]),
                                      float(d["failure_mode_paper_fills"]["description_from"])),
            at_ceiling_fill=float(d["at_ceiling_fill"]),
            borderline_margin=float(d["borderline_margin"]),
            equivalence_margin=float(d["equivalence_margin"]),
            resamples=int(b["resamples"]), seed=int(b["seed"]),
            confidence=float(b["confidence"]), alpha=float(d["alpha"]),
            undivided=a["undivided"], divided=a["divided"],
            ladder=tuple(a["ladder"]), equivalence=tuple(a["equivalence"]),
            capacity=tuple(a["capacity"]), ceiling_pair=tuple(a["ceiling_pair"]),
            representation_failing=tuple(a["representation"]["failing"]),
            representation_healthy=tuple(a["representation"]["healthy"]),
            iteration=tuple(a["iteration"]),
            single_field_schema=tuple(a["single_field_schema"]),
            token_deltas=tuple(tuple(p) for p in a["token_deltas"]),
            described=(a["described"][0], a["described"][1]),
            description_chars=dict(description_chars or {}),
            arm_order=tuple(arm_table["arms"]),
            arm_titles={k: str(v.get("title", "")) for k, v in arm_table["arms"].items()},
            compare_pairs=tuple((p[0], p[1]) for p in a.get("compare_pairs", [])),
            unmatched=frozenset(k for k, v in arm_table["arms"].items() if not is_matched(v)),
            index_bases={k: str(v["base"]) for k, v in arm_table["arms"].items()
                         if is_index_arm(v)},
            against_best={k: c.against_best for k, v in arm_table["arms"].items()
                          if (c := carrier_of(v)).against_best},
            opaque_arms=frozenset(k for k, v in arm_table["arms"].items()
                                  if carrier_of(v).may_be_opaque),
            native_arms=frozenset(k for k, v in arm_table["arms"].items()
                                  if carrier_of(v).needs_native_compaction),
        )

    def with_unmatched(self, arms: Iterable[str]) -> AnalysisPlan:
        """This plan with more arms outside the matched comparison (the config's own
        arms with `match: false`, which resources/arms.yaml does not hold)."""
        return replace(self, unmatched=self.unmatched | frozenset(arms))

    @property
    def scenarios(self) -> tuple[str, str]:
        """The scenarios a row may name: the distributed one and the single-chunk one."""
        return (self.primary_scenario, self.single_chunk_scenario)

    @classmethod
    def load(cls, path: str | Path | None = None, arms: str | Path | None = None,
             config: dict[str, Any] | None = None) -> AnalysisPlan:
        """The plan from these files (a rule names the ones it read; tests use the
        checkout's own). config: the study config, whose own arms with `match: false`
        (its arms_file) join the arms outside the matched comparison."""
        from ..study.derived import aa_copies, native_prompts
        from ..study.own_arms import arms_file_path, unmatched_own_arms

        arms_path = Path(arms or DEFAULT_ARMS)
        table = load_yaml(arms_path)
        plan = cls.from_dict(load_yaml(path or DEFAULT_ANALYSIS), table,
                           schema_description_chars(table, arms_path.parent))
        own = unmatched_own_arms(arms_file_path(config)) if config else []
        plan = plan.with_unmatched(own) if own else plan
        if not config:
            return plan
        return plan.with_copies(aa_copies(config)).with_native_prompts(
            native_prompts(config, table)).with_native_words(
            native_words_of(config.get("models")))

    @classmethod
    def of_params(cls, path: str | Path, arms: str | Path, params: Any) -> AnalysisPlan:
        """The plan a decision rule reads (decision, decide_look): these files, with the
        arms its params name outside the matched comparison: own arms with `match:
        false` (`unmatched`), A/A copies (`aa`) and native@ARM arms (`native_with`: id ->
        (the native arm, ARM))."""
        made = {str(a): (str(p[0]), str(p[1]))
                for a, p in (getattr(params, "native_with", {}) or {}).items()}
        words = {str(m): NativeWords(**w)
                 for m, w in (getattr(params, "native_words", {}) or {}).items()}
        return cls.load(path, arms).with_unmatched(
            getattr(params, "unmatched", ()) or ()).with_copies(
            dict(getattr(params, "aa", {}) or {})).with_native_prompts(
            made).with_native_words(words)

    def with_copies(self, copies: dict[str, str]) -> AnalysisPlan:
        """This plan with the config's A/A copies (copy -> the arm it copies; derived.aa_copies):
        outside the matched comparison, titled as copies of their originals."""
        if not copies:
            return self
        titles = {c: AA.title(arm=a, arm_title=self.arm_titles.get(a) or a)
                  for c, a in copies.items()}
        return replace(self._with_derived(AA, copies, titles), aa={**self.aa, **copies},
                       native_arms=self.native_arms | {c for c, a in copies.items()
                                                       if a in self.native_arms})

    def with_native_prompts(self, made: dict[str, tuple[str, str]]) -> AnalysisPlan:
        """This plan with the config's `native@ARM` arms (id -> (the native arm, ARM);
        derived.native_prompts): outside the matched comparison, titled for the prompt they
        send, opaque where their native arm may be."""
        if not made:
            return self
        titles = {a: NATIVE_WITH.title(arm=arm) for a, (_, arm) in made.items()}
        derived = self._with_derived(NATIVE_WITH, {a: native for a, (native, _) in made.items()},
                                     titles)
        return replace(derived, native_with={**self.native_with, **made},
                       native_arms=self.native_arms | {a for a, (native, _) in made.items()
                                                       if native in self.native_arms})

    def with_native_words(self, words: dict[str, NativeWords]) -> AnalysisPlan:
        """This plan with the models whose native arms are not the provider's compaction
        (model -> its words; carriers/native.py native_words_of)."""
        if not words:
            return self
        return replace(self, native_words={**self.native_words, **words})

    def words_of(self, model: str) -> NativeWords:
        """Whose compaction a native arm on `model` grades, in a reader's words."""
        return self.native_words.get(model, PROVIDER)

    def _with_derived(self, derivation: Derivation, sources: dict[str, str],
                      titles: dict[str, str]) -> AnalysisPlan:
        """This plan with arms the config derives from others, of one kind (study/derived.py;
        id -> the arm it runs as: an A/A copy's original, a native@ARM arm's native arm):
        outside the matched comparison unless the kind is matched, titled, ordered right
        after their source so tables and pages show them beside it, and opaque where the
        kind follows its source's opacity and their source may be opaque."""
        order = [x for a in self.arm_order if a not in sources
                 for x in (a, *(d for d, src in sources.items() if src == a))]
        opaque = ({d for d, src in sources.items() if src in self.opaque_arms}
                  if derivation.opaque_like_source else set())
        unmatched = [] if derivation.matched else list(sources)
        return replace(self.with_unmatched(unmatched), arm_titles={**self.arm_titles, **titles},
                       arm_order=tuple(dict.fromkeys([*order, *sources])),
                       opaque_arms=self.opaque_arms | opaque)

    def arm_title(self, arm: str, *models: str) -> str:
        """The arm's title where a reader sees it. A native arm's depends on the model
        (its native words: the provider's compaction, or an endpoint's): given the models
        a line is over, their one title, or MIXED's where they differ; given none, the
        table's (a line that names no model)."""
        said = {self._title_in(arm, self.words_of(m)) for m in models}
        if arm not in self.native_arms or not said:
            return self.arm_titles.get(arm, "")
        return said.pop() if len(said) == 1 else self._title_in(arm, MIXED)

    def _title_in(self, arm: str, words: NativeWords) -> str:
        """A native arm's title in these words (the table's, where they are the
        provider's: a study without a proxy reads as it always did)."""
        if words == PROVIDER or arm not in self.native_arms:
            return self.arm_titles.get(arm, "")
        if arm in self.aa:  # an A/A copy of a native arm: titled as a copy of it
            original = self.aa[arm]
            return AA.title(arm=original, arm_title=self._title_in(original, words))
        if arm in self.native_with:
            return native_with_title(self.native_with[arm][1], words)
        # what the table's title says beyond the provider's compaction stays (a
        # `native:keep_recent=N` arm's "last N chunks kept"), so two native arms of one
        # proxy keep two titles
        title = self.arm_titles.get(arm, "")
        rest = title[len(PROVIDER.compaction):] if title.startswith(PROVIDER.compaction) else ""
        return words.compaction + rest

    def against_best_source(self, arm: str, model: str, source: str) -> str:
        """The source of `arm`'s "against your best arm" line on `model`'s card: its
        carrier's (`source`), in the model's native words where the arm is native."""
        words = self.words_of(model)
        return words.against_best if arm in self.native_arms and words != PROVIDER else source


def models_by_arm(frame: Any) -> dict[tuple[str, str], tuple[str, ...]]:
    """(sweep, arm) -> the models a frame's rows (columns sweep, model, arm) ran it on,
    sorted: what a line over an arm's rows titles it over (AnalysisPlan.arm_title: a
    native arm's title depends on the model). Empty where the frame has none."""
    if frame is None or len(frame) == 0 or not {"sweep", "model", "arm"} <= set(frame.columns):
        return {}
    return {(str(s), str(a)): tuple(sorted({str(m) for m in g["model"]}))
            for (s, a), g in frame.groupby(["sweep", "arm"], sort=True)}


def schema_description_chars(arm_table: dict[str, Any], resources: Path) -> dict[str, int]:
    """Per arm with a schema, the characters of its field descriptions: what the schema
    says about its fields, which reaches the model only through `response_format`."""
    out = {}
    for arm, spec in arm_table["arms"].items():
        if spec.get("schema"):
            schema = load_schema(resources, spec["schema"])
            out[arm] = sum(len(str(f.get("description", "")))
                           for f in schema.get("properties", {}).values())
    return out
