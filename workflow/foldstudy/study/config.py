"""The study's config: checked before any job runs, then resolved into a plan of runs.

Errors name the key and what would be right, e.g.
`config.sweeps.main.arms[3]: 'x' is not an arm (known: f g j ... u)`, the arms of
resources/arms.yaml.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from ..backends.base import STUDY_FIXED_FIELDS
from ..backends.registry import resolve_model_config
from ..credentials import SECRET_KEYS, credential_name, looks_like_a_key
from ..errors import StudyError
from ..io import load_yaml
from .backend_schema import with_backends
from .design import block_order
from .scopes import ANALYSES
from .scopes import config_problems as scope_problems
from .spec import Arm, Fact, Fixture, SpecError, arm_ids, merge_own_arms, resolve_arm


class ConfigError(StudyError, ValueError):
    """A config that would fail or mislead the study; the message lists every problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid config:\n  " + "\n  ".join(problems))


def _path(parts: Any) -> str:
    out = "config"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _message(err: jsonschema.ValidationError, arms: tuple[str, ...]) -> str:
    where = _path(err.absolute_path)
    v = err.validator
    if looks_like_a_key(err.instance):
        return f"{where}: {_shown(err.instance)} is not allowed here ({v})"
    if v == "enum":
        allowed = err.validator_value
        if set(allowed) == set(arms):
            return f"{where}: {err.instance!r} is not an arm (known: {' '.join(sorted(arms))})"
        return f"{where}: {err.instance!r} is not allowed (allowed: {', '.join(map(str, allowed))})"
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        return f"{where}: unknown key {', '.join(map(repr, extra))} (allowed: {', '.join(allowed)})"
    if v == "required":
        return f"{where}: {err.message.replace(' is a required property', '')} is required"
    if v in ("minimum", "exclusiveMinimum", "maximum", "minItems", "minProperties"):
        return f"{where}: {err.message}"
    if v == "propertyNames":
        return f"{where}: key {err.instance!r} must match {err.schema.get('pattern', '')}"
    if v == "type":
        return f"{where}: {err.instance!r} is not of type {err.validator_value}"
    return f"{where}: {err.message}"


def with_arm_enums(schema: dict[str, Any], arms: tuple[str, ...]) -> dict[str, Any]:
    """The config schema with the arm lists it checks filled in from resources/arms.yaml.

    The schema file names no arm (arms.yaml is the one place an arm is written down);
    this is where the two meet, before any job runs.
    """
    out = copy.deepcopy(schema)
    sweep = out["properties"]["sweeps"]["additionalProperties"]["properties"]
    sweep["arms"]["items"] = {"enum": list(arms)}
    model = out["properties"]["models"]["additionalProperties"]["properties"]
    model["probe_arms"]["items"] = {"enum": list(arms)}
    out["properties"]["arm_overrides"]["propertyNames"] = {"enum": list(arms)}
    out["properties"]["compare_pairs"]["items"]["items"] = {"enum": list(arms)}
    out["properties"]["decide"]["properties"]["pair"]["items"] = {"enum": list(arms)}
    return out


def builtin_scenarios(schema: dict[str, Any]) -> list[str]:
    """The generated scenarios (paper §3.1), as the schema lists them."""
    return list(schema["properties"]["sweeps"]["additionalProperties"]["properties"]
                ["scenario"]["enum"])


def with_scenarios(schema: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The schema with the config's own session scenarios added to what a sweep may name
    (issue 25: "the sweep names it like a built-in one")."""
    own = config.get("scenarios")
    if not isinstance(own, dict) or not own:
        return schema
    out = copy.deepcopy(schema)
    sweep = out["properties"]["sweeps"]["additionalProperties"]["properties"]
    sweep["scenario"]["enum"] = builtin_scenarios(schema) + [
        n for n in own if n not in builtin_scenarios(schema)]
    return out


def schema_problems(config: dict[str, Any], schema: dict[str, Any],
                    arms: tuple[str, ...] = ()) -> list[str]:
    schema = with_scenarios(with_backends(schema), config)
    if arms:
        schema = with_arm_enums(schema, arms)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    rule = name_pattern(schema)
    out = []
    for e in errors:
        if e.validator == "pattern" and e.validator_value == rule:
            out.append(_name_message(e))
        # propertyNames errors carry the offending name as the instance
        elif e.validator == "propertyNames" or (e.parent and e.parent.validator == "propertyNames"):
            out.append(f"{_path(e.absolute_path)}: key {e.instance!r} is not allowed ({e.message})")
        else:
            out.append(_message(e, arms))
    return out


NAME_RULE = ("letters, digits and ._-, starting with a letter, digit or _, at most 100 "
             "characters")


def name_pattern(schema: dict[str, Any]) -> str:
    """The one rule for a name that becomes a path (study, model key, sweep name): the
    schema's, written once there (config.schema.yaml's `study` pattern)."""
    return schema["properties"]["study"]["pattern"]


def name_wildcard(schema: dict[str, Any]) -> str:
    """The name rule as a Snakemake wildcard constraint (no anchors: Snakemake adds them)."""
    return name_pattern(schema).removeprefix("^").removesuffix("$")


def _name_message(e: jsonschema.ValidationError) -> str:
    """A name that would become a path outside its folder, or a hidden one."""
    if "propertyNames" in e.schema_path:
        where, what = _path(e.absolute_path), f"key {_shown(e.instance)}"
    else:
        where, what = _path(e.absolute_path), _shown(e.instance)
    return (f"{where}: {what} cannot name a path (results/.../<name>/); a name is "
            f"{NAME_RULE}, e.g. 'qwen3.6-local'")


def nonfinite_problems(config: Any, where: str = "config") -> list[str]:
    """NaN and infinity pass every min/max check (each comparison with NaN is false) and
    then fail deep inside a job ("cannot convert float NaN to integer"): refused first,
    by key. `--config scale=nan` arrives as a float."""
    if isinstance(config, dict):
        return [p for k, v in config.items() for p in nonfinite_problems(v, f"{where}.{k}")]
    if isinstance(config, list):
        return [p for i, v in enumerate(config) for p in nonfinite_problems(v, f"{where}[{i}]")]
    if isinstance(config, float) and not math.isfinite(config):
        return [f"{where}: {config!r} is not a number this study can use (NaN and infinity "
                "never are); write a finite number"]
    return []


def url_problems(config: dict[str, Any]) -> list[str]:
    """A base_url the schema's ^https?:// lets through with no host ("http://") would be
    reported later as http://None, and a model_id with a `..` part would walk the
    gateway's paths (it cannot be percent-encoded away): refused here, naming the key."""
    from urllib.parse import urlsplit

    from ..backends.http import dot_segment

    out = []
    for name, m in (config.get("models") or {}).items():
        mid = m.get("model_id") if isinstance(m, dict) else None
        if isinstance(mid, str) and dot_segment(mid) is not None:
            out.append(f"config.models.{name}.model_id: {_shown(mid)} has a "
                       f"{dot_segment(mid)!r} part between slashes; it would change the "
                       "gateway path requested (an id like author/slug)")
        url = m.get("base_url") if isinstance(m, dict) else None
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            continue  # a missing or non-http base_url is the schema's to name
        try:
            host = urlsplit(url).hostname
        except ValueError as e:  # e.g. an unclosed [ in an IPv6 literal
            out.append(f"config.models.{name}.base_url: {url!r} is not a URL ({e}); "
                       "a URL like http://127.0.0.1:8000/v1")
            continue
        if not host:
            out.append(f"config.models.{name}.base_url: {url!r} has no host (a URL like "
                       "http://127.0.0.1:8000/v1)")
    return out


def _shown(value: Any) -> str:
    """A value for an error message: never a credential echoed to the terminal."""
    return "<a value shaped like a key, not shown>" if looks_like_a_key(value) else repr(value)


def secret_problems(config: dict[str, Any]) -> list[str]:
    """A key written into the config would travel into logs, records and releases.

    Refused wherever it sits (a model's own keys, extra_body at any depth) by its name or
    by its shape, and never echoed back. Under `extra_body` and `headers`, which travel
    to the server and into the manifest as written, any name that says credential
    (credentials.credential_name: auth, key, token, secret, password) is refused.
    """
    out = []

    def walk(obj: Any, where: str, sent: bool = False) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                here = f"{where}.{k}"
                inside = sent or str(k) in SENT_AS_WRITTEN
                if str(k).lower().replace("-", "_") in SECRET_KEYS or (
                        sent and credential_name(str(k))):
                    out.append(f"{here}: keys come from the environment only; name the "
                               "variable instead, e.g. api_key_env: OPENROUTER_API_KEY "
                               "(the value is not shown and is never written)")
                else:
                    walk(v, here, inside)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{where}[{i}]", sent)
        elif looks_like_a_key(obj):
            out.append(f"{where}: a value shaped like an API key (not shown); keys come from "
                       "the environment only: name the variable in api_key_env")

    for name, m in (config.get("models") or {}).items():
        walk(m, f"config.models.{name}")
    return out


# A model's keys whose contents go to the server as written (and into the manifest).
SENT_AS_WRITTEN = ("extra_body", "headers")


def fixed_field_problems(config: dict[str, Any]) -> list[str]:
    """An extra_body naming a field the study fixes (temperature, seed, the model, the
    output budget, the schema, the routing) would send a request other than the one its
    store entry and run record describe, and the probe would judge an arm on it."""
    out = []
    for name, m in (config.get("models") or {}).items():
        for where in SENT_AS_WRITTEN:
            sent = m.get(where) if isinstance(m, dict) else None
            for key in sent if isinstance(sent, dict) else ():
                if str(key).lower() in STUDY_FIXED_FIELDS:
                    out.append(f"config.models.{name}.{where}.{key}: the study sets {key} "
                               f"itself (fixed: {', '.join(STUDY_FIXED_FIELDS)}); {where} "
                               "adds only a server's own parameters, so remove it (set "
                               "temperature and the like in the config's own keys)")
    return out


def with_defaults(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Fill schema defaults (top level, power, models, sweeps) into a copy of the config."""
    cfg = copy.deepcopy(config)
    props = schema["properties"]
    for k, p in props.items():
        if k not in cfg and "default" in p:
            cfg[k] = copy.deepcopy(p["default"])
    for k, p in props["power"]["properties"].items():  # the repeat plan's (issue 26)
        if k not in cfg["power"] and "default" in p:
            cfg["power"][k] = copy.deepcopy(p["default"])
    if isinstance(cfg.get("decide"), dict):  # the staged decision's (issue 33)
        for k, p in props["decide"]["properties"].items():
            cfg["decide"].setdefault(k, copy.deepcopy(p["default"]))
    for section in ("models", "sweeps", "scenarios"):
        item = props[section]["additionalProperties"]["properties"]
        for entry in cfg.get(section, {}).values():
            for k, p in item.items():
                if k not in entry and "default" in p:
                    entry[k] = copy.deepcopy(p["default"])
    return cfg


def apply_overrides(table: dict[str, Any], overrides: dict[str, Any]) -> tuple[dict, list[str]]:
    """The arm table with config overrides applied, and problems with them."""
    t = copy.deepcopy(table)
    problems = []
    for arm_id, ov in overrides.items():
        a = t["arms"][arm_id]
        where = f"config.arm_overrides.{arm_id}"
        for key in ("fold_budget_tokens", "carry_cap_tokens"):
            if key in ov:
                a[key] = ov[key]
        literal = [k for k, v in a["ceilings"].items() if isinstance(v, int)]
        derived = {k: v for k, v in a["ceilings"].items() if isinstance(v, dict)}
        if "ceiling_chars" in ov:
            if len(a["ceilings"]) == 1 and literal:
                a["ceilings"][literal[0]] = ov["ceiling_chars"]
            elif derived:
                src = next(iter(derived.values()))["from_arm"]
                problems.append(f"{where}.ceiling_chars: {arm_id}'s ceiling is derived from "
                                f"{src}'s; override {src} instead")
            else:
                problems.append(f"{where}.ceiling_chars: arm {arm_id} declares no "
                                "single-field ceiling")
    return t, problems


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


def decide_sweeps(cfg: dict[str, Any]) -> list[str]:
    """The sweeps a staged decision (config `decide:`) runs in stages: those running both
    arms of its pair. None without `decide:`."""
    d = cfg.get("decide")
    if not isinstance(d, dict):
        return []
    pair = set(d.get("pair") or [])
    return [s for s, sw in cfg["sweeps"].items() if pair <= set(sw.get("arms", []))]


def staged_maximum(cfg: dict[str, Any]) -> None:
    """A decide sweep plans its maximum (decide.max_repeats) as its repeats, so the plan
    (-n, the audit) shows the most it may run; the checkpoint runs the stages."""
    for s in decide_sweeps(cfg):
        cfg["sweeps"][s]["repeats"] = int(cfg["decide"]["max_repeats"])


def decide_problems(cfg: dict[str, Any]) -> list[str]:
    """`decide:` must name a pair some sweep runs, and looks that fit its maximum."""
    d = cfg.get("decide")
    if not isinstance(d, dict):
        return []
    pair, out = d.get("pair") or [], []
    if len(pair) == 2 and pair[0] == pair[1]:
        out.append(f"config.decide.pair: [{pair[0]}, {pair[1]}] compares arm {pair[0]!r} "
                   "with itself; a pair names two different arms")
    elif len(pair) == 2 and not any(set(pair) <= set(sw.get("arms", []))
                                    for sw in cfg.get("sweeps", {}).values()):
        out.append(f"config.decide.pair: no sweep runs both {pair[0]} and {pair[1]}; add "
                   "them to a sweep's arms or name a pair a sweep runs")
    if d.get("looks", 1) > d.get("max_repeats", 1):
        out.append(f"config.decide.looks: {d['looks']} looks cannot fit in max_repeats "
                   f"{d['max_repeats']} (at most one look per repeat)")
    return out


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


def empty_flag_problems(flags: Any) -> list[str]:
    """`--config evidence=` arrives as no value at all (Snakemake reads an empty value as
    null), so the study would silently run as if the flag were absent: live, for
    evidence=. A key given empty on the command line is refused by name."""
    why = {"evidence": " (so this would run the live study, not rebuild from a package)"}
    return [f"config.{k}: `--config {k}=` is empty, which Snakemake reads as unset"
            f"{why.get(k, '')}; give it a value (evidence=/path/to/package/evidence), or "
            "drop the flag" for k, v in dict(flags or {}).items() if v is None]


def command_line_flags(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """`--config replay=true` arrives as the string 'true': read it as the boolean the
    schema declares (in place, before any check), as a user typing it means."""
    for key, prop in schema["properties"].items():
        value = config.get(key)
        if key in ("power", "decide") and isinstance(value, dict):
            # `--config "power={target_difference: 0.3}"` arrives with string values
            _numbers_from_strings(value, prop.get("properties", {}))
        if prop.get("type") == "boolean" and isinstance(value, str):
            if value.lower() in ("true", "yes", "1"):
                config[key] = True
            elif value.lower() in ("false", "no", "0"):
                config[key] = False


def _numbers_from_strings(section: dict[str, Any], props: dict[str, Any]) -> None:
    """A number typed on the command line inside an object, read as the number it is
    (a value that is not one stays a string, and the schema names it)."""
    for k, p in props.items():
        kind = {"number": float, "integer": int}.get(p.get("type"))
        if kind and isinstance(section.get(k), str):
            try:
                section[k] = kind(section[k])
            except ValueError:
                pass


def load_study(
    config: dict[str, Any], schema: dict[str, Any], arm_table: dict[str, Any], resources: Path
) -> Study:
    """Check the config (every problem at once), fill defaults, resolve the plan."""
    problems = nonfinite_problems(config) + secret_problems(config)
    problems += fixed_field_problems(config)
    if isinstance(config.get("arms_file"), str):  # the user's own arms join the table
        arm_table, own_arm_problems = merge_own_arms(arm_table, config["arms_file"], resources)
        problems += own_arm_problems
    problems += schema_problems(config, schema, arm_ids(arm_table)) + url_problems(config)
    if problems:
        raise ConfigError(problems)
    cfg = with_defaults(config, schema)
    staged_maximum(cfg)
    cfg["models"] = {name: resolve_model_config(m) for name, m in cfg["models"].items()}
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
    problems += scope_problems(cfg.get("scopes"), cfg["sweeps"], ANALYSES)
    table, override_problems = apply_overrides(arm_table, cfg["arm_overrides"])
    problems += override_problems
    problems += _per_field_problems(table, cfg["arm_overrides"], resources)
    problems += _match_problems(arm_table, table, cfg["arm_overrides"])
    sessions, session_problems, session_warnings = session_fixtures(cfg, schema)
    problems += session_problems
    if problems:
        raise ConfigError(problems)
    try:
        warnings = session_warnings + resolve_capacity(cfg, table, resources, arm_table,
                                                       sessions)
        study = Study(cfg, table, resources)
    except SpecError as e:
        raise ConfigError([str(e)]) from e
    study.warnings = warnings + unused_override_warnings(cfg)
    study.sessions = sessions
    return study


# A chunk target under this many characters is measured on the generated fixture.
SMALL_CHUNK_CHARS = 4_000


def session_fixtures(cfg: dict[str, Any], schema: dict[str, Any]
                     ) -> tuple[dict[str, Fixture], list[str], list[str]]:
    """Every session scenario read and, where a sweep runs it, built into its fixture,
    before any job (issue 25: every bad input refused by name, nothing written).

    Returns (scenario -> fixture, problems, warnings); a credential-shaped string in a
    transcript is a warning by file and line, never its value.
    """
    from .sessions import SessionSpec, build_session_fixture, check_path, credential_lines
    from .transcripts import SessionError, read_transcript

    builtin = builtin_scenarios(schema)
    used = {sw["scenario"]: sw["seed"] for sw in cfg["sweeps"].values()}
    out: dict[str, Fixture] = {}
    problems, warnings = [], []
    for name, entry in (cfg.get("scenarios") or {}).items():
        where = f"config.scenarios.{name}"
        if name in builtin:
            problems.append(f"{where}: {name!r} is a built-in scenario; name your session "
                            "otherwise (e.g. its project)")
            continue
        spec = SessionSpec.of(name, entry)
        try:
            if name in used:
                fx = build_session_fixture(spec, used[name], where)
                out[name] = fx
                lines = [(c["line"], c["kind"]) for c in fx.meta["credential_lines"]]
            else:  # read, so a broken transcript is named before its candidates rule
                tr = read_transcript(check_path(spec.transcript, f"{where}.transcript"),
                                     spec.format, spec.include_thinking)
                lines = credential_lines(tr)
        except SessionError as e:
            problems.append(f"{where}: {e}")
            continue
        warnings += [f"{where}.transcript: {spec.transcript}:{n}: a credential-shaped string "
                     f"({kind}; not shown); it would reach the model in a chunk"
                     for n, kind in lines]
    return out, problems, warnings


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
    from .fixtures import build_fixture, chunk_chars_at, graded_facts

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

    target = chunk_chars_at(float(cfg["scale"]))

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
    if problems:
        raise ConfigError(problems)
    return warnings
