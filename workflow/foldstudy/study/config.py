"""The study's config: checked before any job runs, then resolved into a plan of runs.

Errors name the key and what would be right, e.g.
`config.sweeps.main.arms[3]: 'x' is not an arm (known: f g j ... u)`, the arms of
resources/arms.yaml.

Here: load_study, the checks across keys and against the arm table, and the plan it
resolves (Study, Run, run_path). The checks key by key and the defaults are in
study/schema.py, the sessions' checks in study/session_checks.py, and the reading of
`--config` flags in study/flags.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.http import key_problem
from ..backends.registry import resolve_model_config
from ..errors import StudyError
from ..io import load_yaml
from .carriers.registry import carrier_of
from .design import block_order, cycle_length
from .schema import (
    apply_overrides,
    fixed_field_problems,
    name_pattern,
    nonfinite_problems,
    schema_problems,
    secret_problems,
    url_problems,
    with_defaults,
)
from .scopes import ANALYSES
from .scopes import config_problems as scope_problems
from .session_checks import session_fixtures
from .spec import (
    Arm,
    Fact,
    Fixture,
    SpecError,
    aa_copy_id,
    arm_ids,
    arms_file_path,
    builtin_arm_problems,
    instruction_arms,
    is_matched,
    merge_own_arms,
    native_arms,
    resolve_arm,
    sweep_native_prompts,
    unmatched_own_arms,
    with_aa_copies,
    with_native_prompts,
)


class ConfigError(StudyError, ValueError):
    """A config that would fail or mislead the study; the message lists every problem.

    Each problem is said with any credential in it redacted to its kind: a check that
    names a key by its path (a sweep named like a key) never echoes that key."""

    def __init__(self, problems: list[str]):
        from ..secrets import redact_secrets

        problems = [redact_secrets(p)[0] for p in problems]
        self.problems = problems
        super().__init__("invalid config:\n  " + "\n  ".join(problems))


def _per_field_problems(table: dict[str, Any], overrides: dict[str, Any],
                        resources: Path) -> list[str]:
    """A hand-written per-field ceiling is accepted only where it equals the derived one."""
    problems = []
    for arm_id, ov in overrides.items():
        if "ceiling_per_field_chars" not in ov:
            continue
        where = f"config.arm_overrides.{arm_id}.ceiling_per_field_chars"
        a = table["arms"][arm_id]
        derived = [v for v in a["ceilings"].values()
                   if isinstance(v, dict) and v.get("per_section")]
        if not derived:
            problems.append(f"{where}: arm {arm_id} has no per-field ceilings")
            continue
        src = derived[0]["from_arm"]
        at_paper = resolve_arm(arm_id, table, resources, 1.0)
        expected = next(iter(at_paper.ceilings.values()))
        if ov["ceiling_per_field_chars"] != expected:
            src_ceiling = sum(resolve_arm(src, table, resources, 1.0).ceilings.values())
            problems.append(
                f"{where}: {ov['ceiling_per_field_chars']} breaks the capacity match with "
                f"{src}: {arm_id}'s per-field ceiling is {src}'s {src_ceiling} / "
                f"{len(a['ceilings'])} sections = {expected}; it is computed, remove the key"
            )
    return problems


def _match_problems(paper: dict[str, Any], table: dict[str, Any],
                   overrides: dict[str, Any]) -> list[str]:
    """Overrides that break a match the paper holds within one comparison (capacity.py:
    comparison_arms, matched_keys): refused naming both arms, the key and both values."""
    from .capacity import comparison_arms, matched_keys

    group = comparison_arms(paper)
    problems = []
    for key in matched_keys():
        moved = [a for a in group if key in overrides.get(a, {})]
        if not moved:
            continue
        still = [a for a in group if a not in moved]
        ref = (still or group)[0]
        for a in group:
            if a == ref:
                continue
            ratio = paper["arms"][a][key] / paper["arms"][ref][key]
            want = round(table["arms"][ref][key] * ratio)
            have = table["arms"][a][key]
            if have == want:
                continue
            owner = a if a in moved else ref
            share = "the same" if ratio == 1 else (
                f"{paper['arms'][a][key]}/{paper['arms'][ref][key]} of {ref}'s")
            problems.append(
                f"config.arm_overrides.{owner}.{key}: arm {a}'s {key} {have} breaks the "
                f"capacity match with arm {ref}'s {table['arms'][ref][key]}: the arms of one "
                f"comparison ({' '.join(group)}, paper §3.2: the output budget is held "
                f"fixed within a comparison) keep {a}'s {share} ({want}); override them "
                "together or not at all")
    return problems


@dataclass(frozen=True)
class Run:
    sweep: str
    model: str
    repeat: int
    arm: str
    position: int
    previous_arm: str | None

    @property
    def path(self) -> str:
        return run_path(self.sweep, self.model, self.repeat, self.arm)


def run_path(sweep: str, model: str, repeat: int | str, arm: str) -> str:
    return f"results/runs/{sweep}/{model}/r{repeat}/{arm}.json"


def run_of_path(path: str) -> dict[str, Any]:
    """The run a record path names (run_path's inverse): sweep, model, repeat, arm.

    Unambiguous because no name holds a slash (the schema's name rule); a path of another
    shape raises ValueError naming it."""
    parts = str(path).replace("\\", "/").split("/")
    if (len(parts) < 4 or not parts[-2].startswith("r") or not parts[-2][1:].isdigit()
            or not parts[-1].endswith(".json")):
        raise ValueError(f"{path}: not a run record path (<sweep>/<model>/r<repeat>/<arm>.json)")
    return {"sweep": parts[-4], "model": parts[-3], "repeat": int(parts[-2][1:]),
            "arm": parts[-1].removesuffix(".json")}


# A plan larger than this says its size first thing (Study.plan_size).
PLAN_SAID_ABOVE_JOBS = 2_000


class Study:
    """A validated config resolved into arms and the full list of runs."""

    def __init__(self, config: dict[str, Any], arm_table: dict[str, Any], resources: Path):
        self.config = config
        self.resources = resources
        self.arm_table = arm_table
        self.scale = float(config["scale"])  # the haystack: session and chunks
        # capacity: ceilings, budgets, caps (study/capacity.py; set by load_study)
        self.capacity_scale = float(config.get("capacity_scale") or self.scale)
        self.warnings: list[str] = []
        # the fixtures of the config's own session scenarios, built by load_study
        self.sessions: dict[str, Fixture] = {}
        self.arms: dict[str, Arm] = {
            a: resolve_arm(a, arm_table, resources, self.capacity_scale)
            for a in arm_ids(arm_table)
        }
        self.runs: list[Run] = []
        for sname, sw in config["sweeps"].items():
            for model in sw["models"]:
                for r in range(sw["repeats"]):
                    order = block_order(list(sw["arms"]), r, sw["design"])
                    for pos, arm in enumerate(order):
                        prev = order[pos - 1] if pos else None
                        self.runs.append(Run(sname, model, r, arm, pos, prev))
        self._index = {(x.sweep, x.model, x.repeat, x.arm): x for x in self.runs}
        self._backend_configs = {m: {k: v for k, v in c.items() if k != "probe_arms"}
                                 for m, c in config["models"].items()}

    def run(self, sweep: str, model: str, repeat: int | str, arm: str) -> Run:
        return self._index[(sweep, model, int(repeat), arm)]

    def plan_size(self) -> str | None:
        """The plan's size as the first line a large plan prints (jobs, model calls, and
        what they cost where a backend knows its price before any probe), or None for a
        plan under PLAN_SAID_ABOVE_JOBS jobs. A typo in `repeats` otherwise plans twenty
        thousand jobs in silence."""
        from ..backends.registry import backend_class
        from .fixtures import PAPER_CHUNK_TOKENS, PAPER_SESSION_TOKENS

        # one fold job per run; a fixture and a grade per sweep; a probe per model; and
        # the ten of results/tables (probe summary, token classes, evidence, compare,
        # stats, trace, viewer, figures, summary, tables): 2,013 for 1,000 repeats of j, m
        jobs = len(self.runs) + 2 * len(self.config["sweeps"]) + len(self.probed_models) + 10
        if jobs <= PLAN_SAID_ABOVE_JOBS:
            return None
        per_run = PAPER_SESSION_TOKENS // PAPER_CHUNK_TOKENS + 1  # a fold per chunk, a recall
        calls = len(self.runs) * per_run
        unpriced = sorted(m for m in self.folded_models if backend_class(
            self.model_config(m)["backend"]).audit_prices({})[0] is None)
        cost = ("$0 (local backends)" if not unpriced else
                f"unknown until the probe pins {', '.join(unpriced)}'s price (snakemake -c1 "
                "audit writes results/audit/plan.tsv)")
        return (f"plan: about {jobs:,} jobs ({len(self.runs):,} runs), {calls:,} model calls "
                f"at most, estimated cost {cost}")

    def sweep_runs(self, sweep: str) -> list[Run]:
        return [r for r in self.runs if r.sweep == sweep]

    def model_config(self, model: str) -> dict[str, Any]:
        """The model's backend config: what its backend, fold and token jobs read.

        `probe_arms` is the study's word about probing, not the backend's: left out, so
        naming one changes no fold job's params."""
        return self._backend_configs[model]

    def folded_arms(self, model: str) -> list[str]:
        """Every arm any sweep runs on this model (a probe-only model: every sweep's)."""
        sweeps = self.config["sweeps"]
        return sorted({a for s in self.sweeps_of(model) for a in sweeps[s]["arms"]})

    def probe_arms(self, model: str) -> list[str]:
        """The arms probed on this model and never folded (paper §4.2): its config's
        `probe_arms`, none of them an arm its sweeps run (load_study refuses that)."""
        return sorted(self.config["models"][model].get("probe_arms") or [])

    @property
    def folded_models(self) -> list[str]:
        """Every model some sweep runs."""
        return sorted({m for sw in self.config["sweeps"].values() for m in sw["models"]})

    @property
    def probed_models(self) -> list[str]:
        """Every model some sweep runs, and the probe-only ones: one verdict each."""
        return sorted(set(self.folded_models) | set(self.config["probe_only"]))

    def sweeps_of(self, model: str) -> list[str]:
        """The sweeps a model runs in; a probe-only model is probed for all of them."""
        return sweeps_of(self.config, model)


def sweeps_of(cfg: dict[str, Any], model: str) -> list[str]:
    """The sweeps a model runs in; a probe-only model is probed for all of them."""
    mine = [s for s, sw in cfg["sweeps"].items() if model in sw["models"]]
    return mine or list(cfg["sweeps"])


def meaningless_problems(cfg: dict[str, Any]) -> list[str]:
    """Keys that would be accepted and change nothing, while their reader believes they
    did: an empty `evidence=` (which would run the live study), a pair comparing an arm
    with itself."""
    out = []
    if isinstance(cfg.get("evidence"), str) and not cfg["evidence"].strip():
        out.append("config.evidence: empty; name a released package's evidence/ folder "
                   "(--config evidence=/path/to/package/evidence), or leave evidence unset "
                   "to run the study itself")
    for i, pair in enumerate(cfg.get("compare_pairs") or []):
        if len(pair) == 2 and pair[0] == pair[1]:
            out.append(f"config.compare_pairs[{i}]: [{pair[0]}, {pair[1]}] compares arm "
                       f"{pair[0]!r} with itself; a pair names two different arms")
    out += decide_problems(cfg)
    return out


def control_problems(cfg: dict[str, Any], facts_spec: dict[str, Any]) -> list[str]:
    """A sweep's `controls.tail` plants control facts from resources/facts.yaml
    (`controls`): at most as many as it lists, and on a built-in scenario only (an own
    session's facts are the user's, who marks control facts in the facts file)."""
    out = []
    known = len(facts_spec.get("controls") or [])
    for name, sw in cfg["sweeps"].items():
        tail = (sw.get("controls") or {}).get("tail")
        if not tail:
            continue
        where = f"config.sweeps.{name}.controls.tail"
        if sw["scenario"] in (cfg.get("scenarios") or {}):
            out.append(f"{where}: sweep {name} reads your own session "
                       f"{sw['scenario']!r}; mark its control facts `control: true` in its "
                       "facts file instead (tail plants facts in a generated session)")
        elif tail > known:
            out.append(f"{where}: {tail} control facts; resources/facts.yaml lists {known} "
                       f"(1 to {known})")
    return out


def aa_problems(cfg: dict[str, Any]) -> list[str]:
    """A sweep's `controls.aa` names one of the arms it runs: the copy runs beside it in
    every block (spec.with_aa_copies), so an arm the sweep does not run has no original."""
    out = []
    for name, sw in cfg["sweeps"].items():
        arm = (sw.get("controls") or {}).get("aa")
        if arm is not None and arm not in sw["arms"]:
            out.append(f"config.sweeps.{name}.controls.aa: {arm!r} is not an arm of sweep "
                       f"{name} (its arms: {' '.join(sw['arms'])})")
    return out


def compare_problems(cfg: dict[str, Any], arm_table: dict[str, Any]) -> list[str]:
    """A sweep's `compare` list names pairs its cards can read: two different arms the
    sweep runs, each inside the matched comparison (spec.is_matched); a pair outside it
    is in no card verdict, so the list would promise a contrast no card reads."""
    out = []
    arms = arm_table.get("arms", {})
    for name, sw in cfg["sweeps"].items():
        listed = sw.get("compare")
        if not isinstance(listed, list):
            continue
        for i, pair in enumerate(listed):
            where = f"config.sweeps.{name}.compare[{i}]"
            if pair[0] == pair[1]:
                out.append(f"{where}: [{pair[0]}, {pair[1]}] compares arm {pair[0]!r} with "
                           "itself; a pair names two different arms")
                continue
            for a in pair:
                spec = arms.get(a)
                if a not in sw["arms"]:
                    out.append(f"{where}: {a!r} is not an arm of sweep {name} (its arms: "
                               f"{' '.join(sw['arms'])})")
                elif isinstance(spec, dict) and not is_matched(spec):
                    why = (carrier_of(spec).outside(spec) or "an own arm at its own "
                           "capacity (match: false), in no matched contrast")
                    out.append(f"{where}: {a!r} is {why}; it is in no card verdict, so "
                               "name arms inside the matched comparison")
    return out


def native_backend_problems(cfg: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """A sweep's arm whose carrier asks for the provider's own compaction
    (carriers/base.py `needs_native_compaction`: the native arm) runs on models whose
    backend has one (backends/base.py `native_compaction`, a static property of the
    backend's kind): on any other its runs could only be `not_run` records. Evidence mode
    runs nothing, so nothing is refused there."""
    from ..backends.registry import backend_class, backend_classes

    if cfg.get("evidence"):
        return []
    arms = table.get("arms", {})
    having = [k for k, c in backend_classes().items() if c.native_compaction]
    out = []
    for name, sw in cfg["sweeps"].items():
        for arm in sw["arms"]:
            if not (isinstance(arms.get(arm), dict)
                    and carrier_of(arms[arm]).needs_native_compaction):
                continue
            for i, m in enumerate(sw["models"]):
                if m not in cfg["models"]:
                    continue  # named where the model is checked
                kind = cfg["models"][m]["backend"]
                if not backend_class(kind).native_compaction:
                    out.append(f"config.sweeps.{name}.models[{i}]: {m!r} runs on backend "
                               f"{kind}, which has no native compaction for arm {arm!r} "
                               f"(backends that have one: {', '.join(having)}); run "
                               f"{arm} on such a model, or leave it out of sweep {name}")
    return out


def native_with_problems(cfg: dict[str, Any], table: dict[str, Any],
                         resources: Path) -> list[str]:
    """A sweep's `native_with` adds `native@ARM` beside the native arm it runs, sending
    ARM's system prompt as the provider's compaction instructions
    (spec.with_native_prompts): so the sweep must run a native arm, each ARM must be an
    arm of the table whose folds send its prompt, and no prompt may pass a model's
    configured context_length. Neither provider documents a longest instructions text
    (docs/models.md), so the one bound the study knows is the model's context, and the
    prompt's tokens are estimated as the study estimates text it cannot tokenize
    (capacity.TEXT_CHARS_PER_TOKEN)."""
    from .capacity import TEXT_CHARS_PER_TOKEN

    out = []
    allowed = instruction_arms(table)
    natives = [a for a in table["arms"] if native_arms({"arms": [a]}, table)]
    for name, sw in cfg["sweeps"].items():
        wanted = sw.get("native_with") or []
        if not wanted:
            continue
        where = f"config.sweeps.{name}.native_with"
        if not native_arms(sw, table):
            out.append(f"{where}: sweep {name} runs no native arm (add one of "
                       f"{' '.join(natives) or 'none'} to its arms: each native_with arm "
                       "runs beside it)")
            continue
        for i, arm in enumerate(wanted):
            if arm not in allowed:
                out.append(f"{where}[{i}]: {arm!r} is not an arm whose folds send its "
                           f"prompt (allowed: {' '.join(allowed)})")
                continue
            try:
                prompt = resolve_arm(arm, table, resources, 1.0).system_prompt
            except (SpecError, OSError) as e:  # its own entry's problem, said there too
                out.append(f"{where}[{i}]: {e}")
                continue
            tokens = math.ceil(len(prompt) / TEXT_CHARS_PER_TOKEN)
            for m in sw["models"]:
                context = _context(cfg, m) if m in cfg["models"] else None
                if context and tokens > context:
                    out.append(f"{where}[{i}]: arm {arm}'s prompt is about {tokens} tokens, "
                               f"over model {m}'s context_length {context} (allowed: a "
                               f"prompt of at most {context} tokens)")
    return out


def decide_sweeps(cfg: dict[str, Any]) -> list[str]:
    """The sweeps a staged decision (config `decide:`) runs in stages: those running both
    arms of its pair. None without `decide:`, and none in evidence mode, which folds
    nothing (the cards read the package's rows of the pair as they are)."""
    d = cfg.get("decide")
    if not isinstance(d, dict) or cfg.get("evidence") or not d.get("pair"):
        return []
    pair = set(d["pair"])
    return [s for s, sw in cfg["sweeps"].items() if pair <= set(sw.get("arms", []))]


def staged_maximum(cfg: dict[str, Any]) -> None:
    """A decide sweep plans its maximum (decide.max_repeats) as its repeats, so the plan
    (-n, the audit) shows the most it may run; the checkpoint runs the stages."""
    for s in decide_sweeps(cfg):
        cfg["sweeps"][s]["repeats"] = int(cfg["decide"]["max_repeats"])


# The most runs a staged decision may plan over its sweeps' models and arms: the DAG holds
# every run of the maximum, so `snakemake -n` shows it, and a maximum of a billion planned
# for minutes while its memory grew past 4 GB. The paper's 24 models at 24 repeats of a
# pair plan 1,152.
DECIDE_RUN_CEILING = 10_000


def decide_problems(cfg: dict[str, Any]) -> list[str]:
    """`decide:` must name a pair some sweep runs, looks each stage can take (a stage adds
    at least one rotation of the sweep's design), and a maximum whose runs stay under
    DECIDE_RUN_CEILING."""
    d = cfg.get("decide")
    if not isinstance(d, dict):
        return []
    pair, out = d.get("pair") or [], []
    if len(pair) == 2 and pair[0] == pair[1]:
        out.append(f"config.decide.pair: [{pair[0]}, {pair[1]}] compares arm {pair[0]!r} "
                   "with itself; a pair names two different arms")
    elif len(pair) == 2 and not cfg.get("evidence") and not any(
            set(pair) <= set(sw.get("arms", [])) for sw in cfg.get("sweeps", {}).values()):
        out.append(f"config.decide.pair: no sweep runs both {pair[0]} and {pair[1]}; add "
                   "them to a sweep's arms or name a pair a sweep runs")
    if d.get("looks", 1) > d.get("max_repeats", 1):
        out.append(f"config.decide.looks: {d['looks']} looks cannot fit in max_repeats "
                   f"{d['max_repeats']} (at most one look per repeat)")
    elif "sweeps" in cfg and "max_repeats" in d:
        out += _rotation_looks(cfg, d) + _run_ceiling(cfg, d)
    # in evidence mode the gate holds on the package's sweeps, checked where the package
    # is read (evidence/load.py: package_gate_problem)
    return out + ([] if cfg.get("evidence") else gate_problems(d.get("gate"),
                                                               cfg.get("sweeps", {})))


def unmatched_verdict_problems(cfg: dict[str, Any], arm_table: dict[str, Any]) -> list[str]:
    """decide.pair and decide.gate name arms inside the matched comparison
    (spec.is_matched): an arm outside it is in no card verdict, so a staged
    decision on it would stop on nothing and a gate on it would fail every model. Each
    arm is named by its key, with what reads it instead."""
    d = cfg.get("decide")
    if not isinstance(d, dict):
        return []
    arms = arm_table.get("arms", {})
    named = [(f"config.decide.pair[{i}]", a) for i, a in enumerate(d.get("pair") or [])]
    gate = d.get("gate") if isinstance(d.get("gate"), dict) else {}
    named += [(f"config.decide.gate.{k}", gate[k]) for k in ("arm", "against") if k in gate]
    out = []
    for key, a in named:
        spec = arms.get(a)
        if not isinstance(spec, dict) or is_matched(spec):
            continue
        why = (carrier_of(spec).outside(spec) or
               "an own arm at its own capacity (match: false), in no matched contrast")
        out.append(f"{key}: {a!r} is {why}; it is in no "
                   "card verdict, so name an arm inside the matched comparison")
    return out


def gate_problems(gate: dict[str, Any] | None, sweeps: dict[str, Any]) -> list[str]:
    """decide.gate holds one arm against another that some sweep runs both of, on models
    such a sweep runs (report/gate.py checks it on the cards)."""
    if not isinstance(gate, dict) or not {"arm", "against"} <= set(gate):
        return []
    arm, against = gate["arm"], gate["against"]
    if arm == against:
        return [f"config.decide.gate: arm and against are both {arm!r}; a gate holds one "
                "arm against another"]
    both = [s for s, sw in sweeps.items() if {arm, against} <= set(sw.get("arms", []))]
    if not both:
        return [f"config.decide.gate: no sweep runs both {arm} and {against}; add them "
                "to a sweep's arms, or gate a pair a sweep runs"]
    ran = {m for s in both for m in sweeps[s].get("models", [])}
    return [f"config.decide.gate.models[{i}]: {m!r} is not a model of a sweep running "
            f"{arm} and {against} (those run: {', '.join(sorted(ran))})"
            for i, m in enumerate(gate.get("models") or []) if m not in ran]


def _rotation_looks(cfg: dict[str, Any], d: dict[str, Any]) -> list[str]:
    """Each stage adds whole rotations of the sweep's order design (study/design.py), so a
    sweep allows ceil(max_repeats / rotation) looks; alpha spread over more is alpha no
    look can spend."""
    out = []
    for s in decide_sweeps(cfg):
        sw = cfg["sweeps"][s]
        rotation = cycle_length(sw.get("design", "latin"), len(sw["arms"]))
        most = math.ceil(int(d["max_repeats"]) / rotation)
        if int(d.get("looks", 1)) > most:
            out.append(f"config.decide.looks: {d['looks']} looks cannot be taken in sweep "
                       f"{s}: each stage adds at least one rotation of its design "
                       f"({rotation} repeats for {len(sw['arms'])} arms), so max_repeats "
                       f"{d['max_repeats']} allows at most {most}")
    return out


def _run_ceiling(cfg: dict[str, Any], d: dict[str, Any]) -> list[str]:
    """The runs the maximum plans, against DECIDE_RUN_CEILING, said before the DAG."""
    sweeps = [cfg["sweeps"][s] for s in decide_sweeps(cfg)]
    per_repeat = sum(len(sw["models"]) * len(sw["arms"]) for sw in sweeps)
    runs = per_repeat * int(d["max_repeats"])
    if runs <= DECIDE_RUN_CEILING:
        return []
    budget = cfg.get("budget_usd")
    spend = (f"; budget_usd {budget:g} stops the spend, not the plan, which holds every "
             "run of the maximum" if isinstance(budget, int | float) else "")
    return [f"config.decide.max_repeats: {d['max_repeats']} plans {runs:,} runs "
            f"({per_repeat} a repeat over the decide sweeps' models and arms), above the "
            f"{DECIDE_RUN_CEILING:,} a staged decision may plan; at most "
            f"{DECIDE_RUN_CEILING // per_repeat} repeats fit{spend}"]


def decide_evidence_note(cfg: dict[str, Any], package_arms: dict[str, set[str]]
                         ) -> tuple[str | None, str | None]:
    """(refusal, note) for `decide:` in evidence mode, checked against the package's
    sweeps (sweep -> the arms its rows hold): nothing is staged there, so the note says
    once which sweeps' cards read the pair; a pair no package sweep holds is refused."""
    d = cfg.get("decide")
    if not isinstance(d, dict) or not cfg.get("evidence") or not d.get("pair"):
        return None, None
    a, b = d["pair"]
    have = sorted(s for s, arms in package_arms.items() if {a, b} <= arms)
    if not have:
        held = "; ".join(f"{s}: {' '.join(sorted(arms))}"
                         for s, arms in sorted(package_arms.items()))
        return (f"config.decide.pair: [{a}, {b}]: no sweep of the evidence package "
                f"{cfg['evidence']} holds both arms ({held}); name a pair it holds, or "
                "unset decide"), None
    return None, (f"decide: evidence mode stages nothing (a package folds no call); the "
                  f"cards read {a} against {b} from the package's rows of sweep"
                  f"{'s' if len(have) > 1 else ''} {', '.join(have)} as they are")


def unused_override_warnings(cfg: dict[str, Any]) -> list[str]:
    """An override of an arm no sweep runs and no model probes changes no run. Said, not
    refused: the capacity-match checks still read it (an override that breaks j's match
    with q is wrong whether or not q runs), and a study config may write out the paper's
    values for every arm it documents."""
    used = {a for sw in cfg["sweeps"].values() for a in sw["arms"]}
    used |= {a for m in cfg["models"].values() for a in m.get("probe_arms") or []}
    return [f"config.arm_overrides.{arm}: no sweep runs arm {arm!r} and no model probes "
            f"it, so this override changes no run (arms run: {' '.join(sorted(used))}); "
            "remove it, or add the arm to a sweep" for arm in cfg.get("arm_overrides") or {}
            if arm not in used]


def probe_arm_problems(cfg: dict[str, Any]) -> list[str]:
    """A model's `probe_arms` must be arms its sweeps do not run: a folded arm's verdict
    is its permission, and an arm named in both would be probed under two roles."""
    problems = []
    for name, m in cfg["models"].items():
        for i, a in enumerate(m.get("probe_arms") or []):
            runs = [s for s in sweeps_of(cfg, name) if a in cfg["sweeps"][s]["arms"]]
            if runs:
                problems.append(
                    f"config.models.{name}.probe_arms[{i}]: {a!r} is folded on this model "
                    f"already (sweep {runs[0]}); probe_arms are probed and never folded")
    return problems


def load_study(
    config: dict[str, Any], schema: dict[str, Any], arm_table: dict[str, Any], resources: Path,
    config_files: Sequence[str | Path] = (),
) -> Study:
    """Check the config (every problem at once), fill defaults, resolve the plan.

    config_files: the files the config was read from, so a credential in one is named by
    its line there as well as by its key."""
    problems = nonfinite_problems(config) + secret_problems(config, _texts(config_files))
    problems += fixed_field_problems(config) + builtin_arm_problems(arm_table)
    if (arms_file := arms_file_path(config)) is not None:  # the user's own arms join
        arm_table, own_arm_problems = merge_own_arms(arm_table, str(arms_file), resources,
                                                     name_pattern(schema))
        problems += own_arm_problems
    problems += schema_problems(config, schema, arm_ids(arm_table)) + url_problems(config)
    if problems:
        raise ConfigError(problems)
    cfg = with_defaults(config, schema)
    staged_maximum(cfg)
    cfg["models"] = {name: resolve_model_config(m) for name, m in cfg["models"].items()}
    problems += [f"config.models.{name}.api_key_env: {why}" for name, m in cfg["models"].items()
                 if (why := key_problem(m.get("api_key_env")))]
    for sname, sw in cfg["sweeps"].items():
        for i, m in enumerate(sw["models"]):
            if m not in cfg["models"]:
                problems.append(f"config.sweeps.{sname}.models[{i}]: {m!r} is not a configured "
                                f"model (configured: {', '.join(cfg['models'])})")
    in_sweeps = {m for sw in cfg["sweeps"].values() for m in sw["models"]}
    for i, m in enumerate(cfg["probe_only"]):
        if m not in cfg["models"]:
            problems.append(f"config.probe_only[{i}]: {m!r} is not a configured model "
                            f"(configured: {', '.join(cfg['models'])})")
        elif m in in_sweeps:
            problems.append(f"config.probe_only[{i}]: {m!r} also runs in a sweep; a probe-only "
                            "model gets a verdict and no rows")
    problems += probe_arm_problems(cfg) + meaningless_problems(cfg)
    problems += control_problems(cfg, load_yaml(resources / "facts.yaml"))
    problems += unmatched_verdict_problems(cfg, arm_table)
    problems += scope_problems(cfg.get("scopes"), cfg["sweeps"], ANALYSES)
    table, override_problems = apply_overrides(arm_table, cfg["arm_overrides"])
    problems += override_problems
    problems += aa_problems(cfg) + native_with_problems(cfg, table, resources)
    problems += compare_problems(cfg, arm_table) + native_backend_problems(cfg, arm_table)
    if not problems:  # each A/A copy joins its sweep and the arm table (spec.with_aa_copies)
        # and so does each native@ARM arm (spec.with_native_prompts)
        made = {name: list(sweep_native_prompts(sw, table))
                for name, sw in cfg["sweeps"].items()}
        table = with_native_prompts(with_aa_copies(table, cfg), cfg)
        for name, sw in cfg["sweeps"].items():
            if arm := (sw.get("controls") or {}).get("aa"):
                sw["arms"] = [*sw["arms"], aa_copy_id(arm)]
            sw["arms"] = [*sw["arms"], *made[name]]
    problems += _per_field_problems(table, cfg["arm_overrides"], resources)
    problems += _match_problems(arm_table, table, cfg["arm_overrides"])
    sessions, session_problems, session_warnings = session_fixtures(cfg, schema)
    problems += session_problems
    if problems:
        raise ConfigError(problems)
    try:
        warnings = session_warnings
        # Evidence mode resolves capacity as the study did, so the config it fills is the
        # one the package's manifest pins; but a session study's transcripts are not read
        # there (a package leaves them out): it takes the scale its package chose.
        if not (cfg.get("evidence") and cfg.get("scenarios")):
            warnings += resolve_capacity(cfg, table, resources, arm_table, sessions)
        elif cfg.get("capacity_scale") is None:
            cfg["capacity_scale"] = packaged_capacity_scale(cfg["evidence"])
        study = Study(cfg, table, resources)
    except SpecError as e:
        raise ConfigError([str(e)]) from e
    study.warnings = (warnings + unused_override_warnings(cfg)
                      + unmatched_arm_warnings(arms_file, cfg))
    study.sessions = sessions
    return study


def unmatched_arm_warnings(arms_file: Path | None, cfg: dict[str, Any]) -> list[str]:
    """The config check's one line per own arm with `match: false` that a sweep runs:
    it keeps its own capacity, so it stays outside every matched contrast (spec.is_matched)."""
    run = {a for sw in cfg["sweeps"].values() for a in sw["arms"]}
    return [f"arm {a} (config.arms_file): match: false keeps its own capacity; it appears "
            "on the retained-token axis and in the paired-arms and survival tables, never "
            "in a matched contrast, a decision card's verdict or a paper table"
            for a in unmatched_own_arms(arms_file) if a in run]


def _texts(paths: Sequence[str | Path]) -> dict[str, str]:
    """Each readable config file's text (one that is not was named when it was read)."""
    out = {}
    for p in paths:
        try:
            out[str(p)] = Path(p).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def packaged_capacity_scale(evidence: str) -> float | None:
    """The capacity scale the study that made an evidence package chose (its manifest's
    config), or None where it says none.

    Evidence mode folds nothing, so capacity is never resolved there (resolving it needs
    the fixtures, and a session's fixture needs its transcript, which a package leaves
    out); a config that left capacity_scale to be chosen reads it from the package."""
    import json

    try:
        made = json.loads((Path(evidence) / "manifest.json").read_text(encoding="utf-8"))
        scale = made["config"]["capacity_scale"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # the package's own checks name what is wrong with it
    return float(scale) if isinstance(scale, int | float) and scale > 0 else None


# A chunk target under this many characters is measured on the generated fixture.
SMALL_CHUNK_CHARS = 4_000


def _context(cfg: dict[str, Any], model: str) -> int | None:
    """A model's context in tokens as its config sets it (None: its backend knows it only
    once probed)."""
    from ..backends.registry import backend_class

    resolved = resolve_model_config(cfg["models"][model])
    return backend_class(resolved["backend"]).config_context_length(resolved)


def resolve_capacity(cfg: dict[str, Any], table: dict[str, Any], resources: Path,
                     paper_table: dict[str, Any] | None = None,
                     sessions: dict[str, Fixture] | None = None) -> list[str]:
    """Set cfg["capacity_scale"] (chosen when unset) and check every sweep's arms hold
    its fact load; raise ConfigError naming the numbers, return the warnings.

    paper_table: the arm table before the config's overrides; an automatic scale the
    overrides moved is a warning (said first thing at DAG time), since it resizes
    every arm, not only the overridden ones. sessions: the fixtures of the config's own
    session scenarios, whose facts and chunks are the transcript's (`scale` does not
    apply to them)."""
    from . import capacity as cap
    from .fixtures import build_fixture, graded_facts, synthetic_chunk_chars

    def read(name: str) -> Any:
        return load_yaml(resources / name)

    facts_spec = read("facts.yaml")
    stock = {int(p) for p in read("grading.yaml")["stock_signature"]["ports"]}
    sessions = sessions or {}

    def graded(sw: dict[str, Any]) -> list[Fact]:
        if sw["scenario"] in sessions:
            return sessions[sw["scenario"]].graded
        return graded_facts(sw["scenario"], sw["seed"], facts_spec, stock)

    loads = {name: cap.FactLoad.of(sw["scenario"], graded(sw))
             for name, sw in cfg["sweeps"].items()}
    used = sorted({a for sw in cfg["sweeps"].values() for a in sw["arms"]})

    def resolve(a: str, s: float) -> Arm:
        return resolve_arm(a, table, resources, s)

    target = synthetic_chunk_chars(float(cfg["scale"]))

    def chunk_sizes(sw: dict[str, Any], arms: dict[str, Arm]) -> list[int]:
        # Below a few planted turns' size the generator's target is not what a chunk
        # holds (each chunk keeps its planted turn whole, so it only grows): measure the
        # fixture, a few thousand characters made in milliseconds, where the target
        # would warn. A session's chunks are the transcript's own (scale does not apply).
        if (fx := sessions.get(sw["scenario"])) is not None:
            return [len(c) for c in fx.chunks]
        if target >= SMALL_CHUNK_CHARS or not cap.chunk_problems(arms, [target], ""):
            return [target]
        fx = build_fixture(sw["scenario"], sw["seed"], float(cfg["scale"]), facts_spec,
                           read("scenario/filler.yaml"), stock)
        return [len(c) for c in fx.chunks]

    def session_chunks(sw: dict[str, Any], arms: dict[str, Arm]) -> list[int]:
        # the sizes of every chunk, for an arm whose recall turn reads them all (made
        # only for a sweep that runs one: a fixture at paper scale takes a moment)
        if not any(carrier_of(arm).reads_whole_session for arm in arms.values()):
            return []
        if (fx := sessions.get(sw["scenario"])) is not None:
            return [len(c) for c in fx.chunks]
        fx = build_fixture(sw["scenario"], sw["seed"], float(cfg["scale"]), facts_spec,
                           read("scenario/filler.yaml"), stock)
        return [len(c) for c in fx.chunks]

    def recall_tokens(n_labels: int) -> int:
        # the recall turn's prompt (system prompt, template, a label a line) and answer
        prompt = sum(len((resources / "prompts" / f).read_text(encoding="utf-8"))
                     for f in ("recall_system.md", "recall_user.md.j2"))
        return math.ceil((prompt + 80 * n_labels) / cap.TEXT_CHARS_PER_TOKEN) + int(
            cfg["recall_max_tokens"])

    def refold(fx: Fixture) -> cap.FoldTrial | None:
        # a session's fixture can be cut again, so the advice is a `folds` tried
        from .sessions import SessionFixture

        if not isinstance(fx, SessionFixture):
            return None
        return cap.FoldTrial(len(fx.chunks), len(fx.rendered), fx.chunk_chars_at,
                             fx.longest_message())

    problems, warnings = [], []
    if cfg.get("capacity_scale") is None:
        cfg["capacity_scale"] = cap.auto_capacity_scale(resolve, used, list(loads.values()),
                                                        float(cfg["scale"]))
        if paper_table is not None and cfg["arm_overrides"]:
            unmoved = cap.auto_capacity_scale(
                lambda a, x: resolve_arm(a, paper_table, resources, x), used,
                list(loads.values()), float(cfg["scale"]))
            if unmoved != cfg["capacity_scale"]:
                warnings.append(
                    f"capacity_scale {cfg['capacity_scale']:g} (chosen) is not the "
                    f"{unmoved:g} it would be without config.arm_overrides "
                    f"({', '.join(sorted(cfg['arm_overrides']))}): every arm's ceiling, "
                    "fold budget and carry cap moves with it; set capacity_scale to keep it")
    s = float(cfg["capacity_scale"])
    paper = {a: resolve(a, 1.0) for a in used}
    for name, sw in cfg["sweeps"].items():
        arms = {a: resolve(a, s) for a in sw["arms"]}
        where = f"config.sweeps.{name} (capacity_scale {s:g})"
        problems += cap.capacity_problems(arms, {a: paper[a] for a in arms}, loads[name],
                                          where)
        warnings += cap.chunk_problems(arms, chunk_sizes(sw, arms), where)
        problems += cap.ceiling_context_problems(
            arms, sum(session_chunks(sw, arms)), recall_tokens(len(graded(sw))),
            {m: _context(cfg, m) for m in sw["models"]}, f"config.sweeps.{name}",
            cap.TEXT_CHARS_PER_TOKEN)
        if sw["scenario"] in sessions:
            problems += cap.context_problems(
                arms, chunk_sizes(sw, arms), {m: _context(cfg, m) for m in sw["models"]},
                f"config.sweeps.{name} (scenario {sw['scenario']}, "
                f"folds: {len(sessions[sw['scenario']].chunks)})",
                # the measured rate of this identifier-dense text, not the fixture
                # generator's 3.0 convention, which would undercount a chunk's tokens
                cap.TEXT_CHARS_PER_TOKEN, refold(sessions[sw["scenario"]]))
    if problems:
        raise ConfigError(problems)
    return warnings
