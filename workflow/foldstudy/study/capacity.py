"""Capacity that can hold the facts, at every scale (docs/design.md §3; issue: a default study
whose 58-character fields could not hold its own fact load read as recall 0.000).

`scale` sizes the haystack: the session and its chunks. Capacity -- declared ceilings,
fold budgets, carry caps -- is scaled by `capacity_scale`, chosen (or checked, when the
config sets it) so that every arm the study runs holds its graded facts with their
labels at least twice over, while the paper's capacity matches keep holding exactly (q's
five fields sum to j's one, t is half of j, u's cap is 1,400/2,400 of m's: they are
ratios in resources/arms.yaml, scaled together). Each chunk should still need
compressing: a chunk under twice the fold budget could be carried whole.

`resolve_capacity` is the config check's step for all of this (study/config.py
load_study calls it): it reads the config and returns the scale with the problems and
warnings it found, leaving the config as it was.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import load_yaml
from .arm import Arm
from .fixture_types import Fact, Fixture

# Tokens of a graded fact line ("primary ingress port: 52677") are estimated at two
# characters a token, on the safe side: identifiers tokenize badly, and SmolLM2-135M,
# the embedded default, measured 2.42 on the default fixture's fact lines (596 chars,
# 246 tokens). The estimate is used before any model is loaded (config time).
IDENTIFIER_CHARS_PER_TOKEN = 2.0
# Fixture text (filler with planted turns) measured 2.6 chars a SmolLM2 token (2.4 at
# the smallest scales); the generator, the probe and the audit size it at 3.0 instead, a
# convention that fixes the fixture bytes (fixtures.CHARS_PER_TOKEN says why both stay).
# The check that an own session's chunk fits a folding model's context uses this one
# (resolve_capacity): at 3.0 it would undercount the chunk by about a sixth.
TEXT_CHARS_PER_TOKEN = 2.6
HOLD = 2  # the facts must fit at least twice over
# The prompt the arms of one comparison share (paper §3.2: "Prompt, input, fold protocol,
# and output budget are held fixed within a comparison"): j, p, q, m, t, u in
# resources/arms.yaml; the arms themselves are read from the table, never listed here.
COMPARISON_PROMPT = "fixed_headings"


def comparison_arms(table: dict[str, Any]) -> list[str]:
    """The arms of the comparison, in the table's order: those sharing its prompt."""
    return [a for a, spec in table["arms"].items()
            if spec.get("system_prompt") == COMPARISON_PROMPT]


def matched_keys() -> tuple[str, ...]:
    """The capacities an override may move only together across the comparison, keeping
    the ratios arms.yaml gives them (equal budgets; u's cap 1,400/2,400 of the others').
    The ceilings' matches (q = j/5 per field, t = j/2, p = j) hold by construction:
    they are derived from j's, and an override of a derived ceiling is refused."""
    return ("fold_budget_tokens", "carry_cap_tokens")
STEP = 0.05  # an automatic capacity scale is a multiple of this (stable, readable)


@dataclass(frozen=True)
class FactLoad:
    """The graded facts of a scenario, as a carry would have to hold them."""

    scenario: str
    n_facts: int
    chars: int

    @property
    def tokens(self) -> int:
        return math.ceil(self.chars / IDENTIFIER_CHARS_PER_TOKEN)

    @classmethod
    def of(cls, scenario: str, graded: list[Fact]) -> FactLoad:
        lines = [f"{f.label}: {f.value}" for f in graded]
        return cls(scenario, len(lines), len("\n".join(lines)))


def _held(a: Arm) -> list[tuple[str, int | None, str]]:
    return [("fold budget", a.fold_budget_tokens, "tokens"),
            ("carry cap", a.carry_cap_tokens, "tokens"),
            ("declared ceiling", a.declared_ceiling_chars, "chars")]


def capacity_problems(arms: dict[str, Arm], paper: dict[str, Arm], load: FactLoad,
                      where: str) -> list[str]:
    """Every arm whose ceiling, fold budget or carry cap cannot hold the load twice.

    An arm the paper itself gave less room (f and g's 1,024-character ceiling, paper
    §4.1: "cannot hold the material regardless of shape") must keep at least its paper
    capacity instead: a scaled study never gives an arm less room than the paper did.
    """
    out = []
    for name, a in arms.items():
        for (what, have, unit), (_, at_paper, _) in zip(_held(a), _held(paper[name]),
                                                        strict=True):
            if have is None or at_paper is None:
                continue
            twice = HOLD * (load.chars if unit == "chars" else load.tokens)
            need = min(twice, at_paper)
            if have < need:
                basis = (f"twice the {load.n_facts} graded {load.scenario} facts with their "
                         f"labels ({twice} {unit})" if need == twice else
                         f"its paper capacity ({at_paper} {unit}), which is already under "
                         f"twice the facts ({twice} {unit})")
                out.append(f"{where}: arm {name}'s {what} is {have} {unit}, under {basis}; "
                           "raise capacity_scale (or leave it unset to have it chosen)")
    return out


def chunk_problems(arms: dict[str, Arm], chunk_chars: list[int], where: str) -> list[str]:
    """Arms whose fold budget could carry a whole chunk (nothing left to compress).

    chunk_chars: the sizes of the chunks the fixture holds at this scale (at a tiny scale
    a chunk is its planted turn, far above the generator's target), so the figure said
    is the one the folds will see."""
    chunk_tokens = int(max(chunk_chars) / TEXT_CHARS_PER_TOKEN)
    lo, hi = min(chunk_chars), max(chunk_chars)
    sizes = f"{hi:,}" if lo == hi else f"{lo:,}-{hi:,}"
    return [f"{where}: arm {a.arm}'s fold budget {a.fold_budget_tokens} tokens is over half "
            f"a chunk (~{chunk_tokens:,} tokens: chunks of {sizes} characters); the fold "
            "barely needs to compress. Raise scale for a larger session"
            for a in arms.values() if 2 * a.fold_budget_tokens > chunk_tokens]


def required_context_tokens(chunk_chars: int, arms: list[Arm], chars_per_token: float) -> int:
    """What the largest fold needs: system prompt + carried text + chunk + output budget."""
    system = max(len(a.system_prompt) for a in arms) / chars_per_token
    carry = max(a.carry_cap_tokens for a in arms)
    budget = max(a.fold_budget_tokens for a in arms)
    schema = max(len(json.dumps(a.schema)) if a.schema else 0 for a in arms) / chars_per_token
    return int(chunk_chars / chars_per_token + system + schema + carry + budget + 256)



def context_problems(arms: dict[str, Arm], chunk_chars: list[int],
                     contexts: dict[str, int | None], where: str, chars_per_token: float,
                     refold: FoldTrial | None = None) -> list[str]:
    """Every model whose context cannot hold a fold of the largest chunk: the chunk, the
    fold prompt (system prompt and schema), the largest carry and the output budget
    (paper §3.1: "Each fold receives the previous running summary and one chunk").
    contexts: model -> its configured context in tokens (None: known only to its probe).
    refold: how the session would be cut at another `folds`; the `folds` the refusal
    advises is one this check passes, found by cutting it (never an estimate that would
    give the same refusal), or the refusal says no `folds` fits."""
    arm_list = list(arms.values())
    need = required_context_tokens(max(chunk_chars), arm_list, chars_per_token)
    fixed = required_context_tokens(0, arm_list, chars_per_token)
    chunk_tokens = int(max(chunk_chars) / chars_per_token)
    out = []
    for model, ctx in contexts.items():
        if ctx is None or need <= ctx:
            continue
        room = ctx - fixed
        if room <= 0:
            fit = (f"no number of folds fits: the fold prompt, carry and output budget alone "
                   f"need ~{fixed:,} tokens")
        else:
            estimate = math.ceil(sum(chunk_chars) / (room * chars_per_token))
            if refold is None:
                fit = (f"folds: {estimate} or more would fit (chunks of at most ~{room:,} "
                       "tokens)")
            else:
                def fits(folds: int, ctx: int = ctx) -> bool:
                    return required_context_tokens(max(refold.chunk_chars(folds)), arm_list,
                                                   chars_per_token) <= ctx
                folds = smallest_fitting(fits, max(estimate, refold.folds + 1),
                                         refold.most)
                fit = (f"folds: {folds} fits (chunks of at most ~{room:,} tokens)"
                       if folds is not None else
                       f"no `folds` fits: chunks of at most ~{room:,} tokens need folds: "
                       f"{max(estimate, refold.folds + 1)} or more, and the main thread has "
                       f"{refold.most} messages ({refold.longest})")
        out.append(f"{where}: the largest chunk (~{chunk_tokens:,} tokens, {max(chunk_chars):,} "
                   f"characters) with the fold prompt, the largest carry and the output "
                   f"budget needs ~{need:,} tokens, over model {model}'s context of {ctx:,} "
                   f"tokens; {fit}, or give {model} a larger context")
    return out


@dataclass(frozen=True)
class FoldTrial:
    """A session cut again at another `folds`: the one it is cut at now, the most it can
    be cut into (one message a chunk at least), the sizes of its chunks at a given
    `folds`, and its longest message named (for a refusal that no `folds` fits)."""

    folds: int
    most: int
    chunk_chars: Any  # Callable[[int], list[int]]
    longest: str = ""


def smallest_fitting(fits: Any, start: int, most: int) -> int | None:
    """The smallest `folds` from `start` to `most` that fits(folds), found in a few trials
    (each cuts the whole session once): doubling from `start` to a fit, then bisection
    between the last miss and that fit; None when not even `most` fits. The value
    returned was itself tried, so it fits."""
    if start > most:
        return None
    if fits(start):
        return start
    lo, step = start, 1
    while True:
        hi = min(most, start + step)
        if fits(hi):
            break
        if hi == most:
            return None
        lo, step = hi, step * 2
    while hi - lo > 1:  # lo misses, hi fits
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def auto_capacity_scale(resolve: Any, arm_ids: list[str], loads: list[FactLoad],
                        scale: float) -> float:
    """The smallest multiple of STEP, at least `scale`, at which every arm holds every
    load twice (or its paper room); 1.0, the paper's capacities, at most.

    resolve(arm_id, capacity_scale) -> Arm.
    """
    paper = {a: resolve(a, 1.0) for a in arm_ids}
    s = max(STEP, math.ceil(round(scale / STEP, 6)) * STEP)
    while s < 1.0:
        arms = {a: resolve(a, s) for a in arm_ids}
        if not any(capacity_problems(arms, paper, load, "") for load in loads):
            return round(s, 4)
        s += STEP
    return 1.0


# What the recall turn adds to the session it reads: its system prompt, template, the
# labels asked and the answer's budget are counted apart (recall_tokens); this is the
# margin required_context_tokens keeps too.
RECALL_MARGIN_TOKENS = 256


def ceiling_context_problems(arms: dict[str, Arm], session_chars: int, recall_tokens: int,
                             contexts: dict[str, int | None], where: str,
                             chars_per_token: float) -> list[str]:
    """Each arm whose recall turn reads the whole session (carriers/base.py
    `reads_whole_session`: `uncompacted`) against each model whose configured context
    cannot hold it: the session, the recall turn's prompt and its answer budget
    (recall_tokens), one line naming the tokens it needs and the model's context."""
    from ..carriers.registry import carrier_of

    readers = [a for a, arm in arms.items() if carrier_of(arm).reads_whole_session]
    if not readers:
        return []
    session = math.ceil(session_chars / chars_per_token)
    need = session + recall_tokens + RECALL_MARGIN_TOKENS
    return [f"{where}: arm {a} reads the whole session at its recall turn (~{session:,} "
            f"tokens, {session_chars:,} characters) and needs ~{need:,} tokens with the "
            f"recall prompt and answer, over model {model}'s context of {ctx:,} tokens; "
            f"give {model} a context of at least {need:,} tokens, or leave {a} out of the "
            "sweep"
            for a in readers for model, ctx in contexts.items()
            if ctx is not None and need > ctx]


# --- resolving a study's capacity (study/config.py load_study calls resolve_capacity) ---

def packaged_capacity_scale(evidence: str) -> float | None:
    """The capacity scale the study that made an evidence package chose (its manifest's
    config), or None where it says none.

    Evidence mode folds nothing, so capacity is never resolved there (resolving it needs
    the fixtures, and a session's fixture needs its transcript, which a package leaves
    out); a config that left capacity_scale to be chosen reads it from the package."""
    try:
        made = json.loads((Path(evidence) / "manifest.json").read_text(encoding="utf-8"))
        scale = made["config"]["capacity_scale"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # the package's own checks name what is wrong with it
    return float(scale) if isinstance(scale, int | float) and scale > 0 else None


# A chunk target under this many characters is measured on the generated fixture.
SMALL_CHUNK_CHARS = 4_000


def model_context(cfg: dict[str, Any], model: str) -> int | None:
    """A model's context in tokens as its config sets it (None: its backend knows it only
    once probed)."""
    from ..backends.registry import backend_class, resolve_model_config

    resolved = resolve_model_config(cfg["models"][model])
    return backend_class(resolved["backend"]).config_context_length(resolved)


@dataclass(frozen=True)
class Resolved:
    """What resolve_capacity decided: the scale (the config's, or the one chosen), the
    problems that refuse the config, and the warnings said at DAG time."""

    scale: float
    problems: list[str]
    warnings: list[str]


class _Sweeps:
    """What sizing a config's sweeps reads: each sweep's graded facts and its fixture, a
    generated fixture built at most once per (scenario, seed) and only when a check needs
    its chunks (a fixture at paper scale takes a moment)."""

    def __init__(self, cfg: dict[str, Any], resources: Path,
                 sessions: dict[str, Fixture]) -> None:
        self.cfg, self.resources, self.sessions = cfg, resources, sessions
        self.facts_spec = load_yaml(resources / "facts.yaml")
        self.stock = {int(p) for p in
                      load_yaml(resources / "grading.yaml")["stock_signature"]["ports"]}
        self._built: dict[tuple[str, int], Fixture] = {}

    def graded(self, sw: dict[str, Any]) -> list[Fact]:
        from .fixtures import graded_facts

        if (fx := self.sessions.get(sw["scenario"])) is not None:
            return fx.graded
        return graded_facts(sw["scenario"], sw["seed"], self.facts_spec, self.stock)

    def fixture(self, sw: dict[str, Any]) -> Fixture:
        """A session's own fixture, or the generated one (a session's chunks are the
        transcript's: `scale` does not apply to them)."""
        from .fixtures import build_fixture

        if (fx := self.sessions.get(sw["scenario"])) is not None:
            return fx
        key = (sw["scenario"], int(sw["seed"]))
        if key not in self._built:
            self._built[key] = build_fixture(
                sw["scenario"], sw["seed"], float(self.cfg["scale"]), self.facts_spec,
                load_yaml(self.resources / "scenario/filler.yaml"), self.stock)
        return self._built[key]

    def chunk_sizes(self, sw: dict[str, Any], arms: dict[str, Arm]) -> list[int]:
        """The chunk sizes a fold reads. Below a few planted turns' size the generator's
        target is not what a chunk holds (each chunk keeps its planted turn whole, so it
        only grows): the fixture is measured where the target would warn."""
        from .fixtures import synthetic_chunk_chars

        target = synthetic_chunk_chars(float(self.cfg["scale"]))
        if sw["scenario"] not in self.sessions and (
                target >= SMALL_CHUNK_CHARS or not chunk_problems(arms, [target], "")):
            return [target]
        return [len(c) for c in self.fixture(sw).chunks]

    def session_chunks(self, sw: dict[str, Any], arms: dict[str, Arm]) -> list[int]:
        """The sizes of every chunk, for an arm whose recall turn reads them all (none
        when no arm of the sweep does)."""
        from ..carriers.registry import carrier_of

        if not any(carrier_of(arm).reads_whole_session for arm in arms.values()):
            return []
        return [len(c) for c in self.fixture(sw).chunks]

    def recall_tokens(self, n_labels: int) -> int:
        """The recall turn's prompt (system prompt, template, a label a line) and answer."""
        prompt = sum(len((self.resources / "prompts" / f).read_text(encoding="utf-8"))
                     for f in ("recall_system.md", "recall_user.md.j2"))
        return math.ceil((prompt + 80 * n_labels) / TEXT_CHARS_PER_TOKEN) + int(
            self.cfg["recall_max_tokens"])


def _refold(fx: Fixture) -> FoldTrial | None:
    """A session's fixture can be cut again, so its advice is a `folds` tried."""
    from .sessions import SessionFixture

    if not isinstance(fx, SessionFixture):
        return None
    return FoldTrial(len(fx.chunks), len(fx.rendered), fx.chunk_chars_at, fx.longest_message())


def _chosen_scale(cfg: dict[str, Any], resolve: Any, used: list[str], loads: list[FactLoad],
                  unmoved: Any) -> tuple[float, list[str]]:
    """The config's capacity_scale, or the one auto_capacity_scale chooses; a chosen
    scale the arm overrides moved is a warning, since it resizes every arm, not only the
    overridden ones. unmoved(arm, scale) resolves an arm without the overrides (None:
    the caller has no such table)."""
    if cfg.get("capacity_scale") is not None:
        return float(cfg["capacity_scale"]), []
    chosen = auto_capacity_scale(resolve, used, loads, float(cfg["scale"]))
    if unmoved is None or not cfg["arm_overrides"]:
        return chosen, []
    without = auto_capacity_scale(unmoved, used, loads, float(cfg["scale"]))
    if without == chosen:
        return chosen, []
    return chosen, [
        f"capacity_scale {chosen:g} (chosen) is not the {without:g} it would be without "
        f"config.arm_overrides ({', '.join(sorted(cfg['arm_overrides']))}): every arm's "
        "ceiling, fold budget and carry cap moves with it; set capacity_scale to keep it"]


def _sweep_problems(name: str, sw: dict[str, Any], arms: dict[str, Arm],
                    paper: dict[str, Arm], load: FactLoad, sweeps: _Sweeps,
                    scale: float) -> tuple[list[str], list[str]]:
    """One sweep's (problems, warnings): its arms hold its fact load, its chunks need
    compressing, the ceiling's recall turn fits each model's context, and an own
    session's chunks fit it too."""
    where = f"config.sweeps.{name} (capacity_scale {scale:g})"
    contexts = {m: model_context(sweeps.cfg, m) for m in sw["models"]}
    problems = capacity_problems(arms, {a: paper[a] for a in arms}, load, where)
    warnings = chunk_problems(arms, sweeps.chunk_sizes(sw, arms), where)
    problems += ceiling_context_problems(
        arms, sum(sweeps.session_chunks(sw, arms)), sweeps.recall_tokens(load.n_facts),
        contexts, f"config.sweeps.{name}", TEXT_CHARS_PER_TOKEN)
    if (fx := sweeps.sessions.get(sw["scenario"])) is not None:
        problems += context_problems(
            arms, sweeps.chunk_sizes(sw, arms), contexts,
            f"config.sweeps.{name} (scenario {sw['scenario']}, folds: {len(fx.chunks)})",
            # the measured rate of this identifier-dense text, not the fixture
            # generator's 3.0 convention, which would undercount a chunk's tokens
            TEXT_CHARS_PER_TOKEN, _refold(fx))
    return problems, warnings


def resolve_capacity(cfg: dict[str, Any], table: dict[str, Any], resources: Path,
                     paper_table: dict[str, Any] | None = None,
                     sessions: dict[str, Fixture] | None = None) -> Resolved:
    """The capacity scale (the config's, or chosen when unset) and whether every sweep's
    arms hold its fact load at it; cfg is read, never changed.

    paper_table: the arm table before the config's overrides, to say when they moved an
    automatic scale. sessions: the fixtures of the config's own session scenarios, whose
    facts and chunks are the transcript's (`scale` does not apply to them)."""
    from .spec import resolve_arm

    sweeps = _Sweeps(cfg, resources, sessions or {})
    loads = {name: FactLoad.of(sw["scenario"], sweeps.graded(sw))
             for name, sw in cfg["sweeps"].items()}
    used = sorted({a for sw in cfg["sweeps"].values() for a in sw["arms"]})
    unmoved = None if paper_table is None else (
        lambda a, x: resolve_arm(a, paper_table, resources, x))
    scale, warnings = _chosen_scale(cfg, lambda a, x: resolve_arm(a, table, resources, x),
                                    used, list(loads.values()), unmoved)
    paper = {a: resolve_arm(a, table, resources, 1.0) for a in used}
    problems: list[str] = []
    for name, sw in cfg["sweeps"].items():
        arms = {a: resolve_arm(a, table, resources, scale) for a in sw["arms"]}
        p, w = _sweep_problems(name, sw, arms, paper, loads[name], sweeps, scale)
        problems += p
        warnings += w
    return Resolved(scale, problems, warnings)
