"""The config's checks across keys and against the arm table: each returns the problems
it finds, one line per problem naming the key and what would be right, and
study/config.py `load_study` raises them all at once.

The checks key by key are in study/schema.py, the sessions' in study/session_checks.py,
the staged decision's and the gate's in study/decide_checks.py, and capacity's (the
arms hold the fact load, a chunk fits a model's context) in study/capacity.py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..carriers.registry import carrier_of
from .arm import is_matched
from .capacity import TEXT_CHARS_PER_TOKEN, comparison_arms, matched_keys, model_context
from .decide_checks import decide_problems
from .derived import instruction_arms, native_arms
from .own_arms import unmatched_own_arms
from .plan import sweeps_of
from .spec import SpecError, resolve_arm


def per_field_problems(table: dict[str, Any], overrides: dict[str, Any],
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


def match_problems(paper: dict[str, Any], table: dict[str, Any],
                   overrides: dict[str, Any]) -> list[str]:
    """Overrides that break a match the paper holds within one comparison (capacity.py:
    comparison_arms, matched_keys): refused naming both arms, the key and both values."""
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
    every block (derived.with_aa_copies), so an arm the sweep does not run has no original."""
    out = []
    for name, sw in cfg["sweeps"].items():
        arm = (sw.get("controls") or {}).get("aa")
        if arm is not None and arm not in sw["arms"]:
            out.append(f"config.sweeps.{name}.controls.aa: {arm!r} is not an arm of sweep "
                       f"{name} (its arms: {' '.join(sw['arms'])})")
    return out


def compare_problems(cfg: dict[str, Any], arm_table: dict[str, Any]) -> list[str]:
    """A sweep's `compare` list names pairs its cards can read: two different arms the
    sweep runs, each inside the matched comparison (arm.is_matched); a pair outside it
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
    out: list[str] = []
    via_said: set[str] = set()
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
                elif m not in via_said and (
                        why := native_via_problem(m, cfg["models"][m], arm)) is not None:
                    via_said.add(m)  # once a model, however many sweeps and arms
                    out.append(why)
    return out


def kept_tail_problems(cfg: dict[str, Any], table: dict[str, Any]) -> list[str]:
    """A sweep's arm that keeps its last N chunks verbatim (`native:keep_recent=N`,
    carriers/native_keep.py) on a session of N chunks or fewer: no chunk is ever older than
    its kept tail, so no fold asks the provider to compact and the arm is the whole
    session, not the provider's compaction. A generated scenario has the paper's five
    chunks; an own session the `folds` it is cut into."""
    from .fixtures import PAPER_CHUNK_TOKENS, PAPER_SESSION_TOKENS

    arms = table.get("arms", {})
    out: list[str] = []
    for name, sw in cfg["sweeps"].items():
        own = (cfg.get("scenarios") or {}).get(sw.get("scenario"))
        chunks = int(own.get("folds", 5)) if isinstance(own, dict) else \
            PAPER_SESSION_TOKENS // PAPER_CHUNK_TOKENS
        for arm in sw["arms"]:
            # an index arm's entry names its base, not a kind: its base is checked as itself
            if not isinstance(arms.get(arm), dict) or not isinstance(arms[arm].get("carry"), str):
                continue
            kept = carrier_of(arms[arm]).folds_without_call()
            if kept >= chunks:
                out.append(f"config.sweeps.{name}.arms: {arm!r} keeps the last {kept} chunks "
                           f"verbatim, and scenario {sw.get('scenario')!r} has {chunks}: no "
                           "fold would compact anything; cut the session into more folds, "
                           f"or leave {arm} out of sweep {name}")
    return out


def native_via_problem(name: str, model: dict[str, Any], arm: str) -> str | None:
    """A native arm grades the provider's own compaction, so its model's base_url must be
    the provider's API (backends/base.py provider_hosts): a gateway, LiteLLM or a
    self-hosted server may answer a compaction request with a summary of its own, which
    would be graded as the provider's. The model config's `native_via` says whose it is
    where the address cannot (`proxy`: another's; `provider`: the provider's, e.g. a
    stand-in of its API)."""
    from urllib.parse import urlsplit

    from ..backends.registry import backend_class

    cls = backend_class(model["backend"])
    url = str(model.get("base_url") or "")
    host = urlsplit(url).hostname or ""
    if model.get("native_via") or not url.startswith(("http://", "https://")) or (
            host in cls.provider_hosts):
        return None
    return (f"config.models.{name}.native_via: arm {arm!r} grades {cls.provider_name}'s own "
            f"compaction, but base_url {url} is not its API ({', '.join(cls.provider_hosts)}); "
            "a gateway or proxy may compact with a summary of its own. Say native_via: proxy "
            "to run it there, or native_via: provider if this endpoint is the provider's "
            "(allowed: provider, proxy)")


def native_with_problems(cfg: dict[str, Any], table: dict[str, Any],
                         resources: Path) -> list[str]:
    """A sweep's `native_with` adds `native@ARM` beside the native arm it runs, sending
    ARM's system prompt as the provider's compaction instructions
    (derived.with_native_prompts): so the sweep must run a native arm, each ARM must be an
    arm of the table whose folds send its prompt, and no prompt may pass a model's
    configured context_length. Neither provider documents a longest instructions text
    (docs/models.md), so the one bound the study knows is the model's context, and the
    prompt's tokens are estimated as the study estimates text it cannot tokenize
    (capacity.TEXT_CHARS_PER_TOKEN)."""
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
                context = model_context(cfg, m) if m in cfg["models"] else None
                if context and tokens > context:
                    out.append(f"{where}[{i}]: arm {arm}'s prompt is about {tokens} tokens, "
                               f"over model {m}'s context_length {context} (allowed: a "
                               f"prompt of at most {context} tokens)")
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

def unmatched_arm_warnings(arms_file: Path | None, cfg: dict[str, Any]) -> list[str]:
    """The config check's one line per own arm with `match: false` that a sweep runs:
    it keeps its own capacity, so it stays outside every matched contrast (arm.is_matched)."""
    run = {a for sw in cfg["sweeps"].values() for a in sw["arms"]}
    return [f"arm {a} (config.arms_file): match: false keeps its own capacity; it appears "
            "on the retained-token axis and in the paired-arms and survival tables, never "
            "in a matched contrast, a decision card's verdict or a paper table"
            for a in unmatched_own_arms(arms_file) if a in run]

