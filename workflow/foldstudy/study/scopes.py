"""The analyses a study config's `scopes:` may name, and the config-time check of that key.

Each analysis (a key under `scopes:`) is declared once, here, with what it covers and the
paper's section. Here and not beside the tables or the numbers because the config is
checked at DAG time, and study/ sits below analysis/ and report/: the tables
(report/titles.py) and the numbers sections (analysis/numbers.py) each declare the
analyses they read, by these names, and fail at import on a name that is not here; a
test fails on a name here that nothing reads. The schema's `scopes:` description points
here instead of listing them, and config/README.md lists them from this table.

What a scope selects from the evidence (groups, pooling) is analysis/scopes.py's.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

# Analysis name (the key under `scopes:`) -> what it covers, with the paper's section.
ANALYSES: dict[str, str] = {
    "table1": "recall by model and arm, Table 1 form (§4.1)",
    "ladder": "the j -> q -> m ladder, paired within each sweep's blocks (§4.3)",
    "equivalence": "k against m, paired, TOST (§4.1)",
    "iteration": "facts in one chunk against facts distributed (§4.4)",
    "capacity": "ceiling halved and carry cap reduced (§4.5)",
    "ceiling": "the ceiling replication per model and the j -> t Fisher test (§4.5, §4.6)",
    "partition": "the partition contrast, fill and failure modes, rescue, borderline "
                 "separation, carried text q vs j (§4.7, §8)",
    "fill": "fill against recall of the undivided arm, one point per measured model "
            "(§4.6; the paper's 25 models are more than the partition's 20)",
    "fill_table": "carried chars, fill and recall per model and arm, pooled over the "
                  "model's sweeps (§4.6's fill table)",
    "depth": "the depth re-run, both arms in full (§4.7)",
    "headings": "headings that arrived vs recall, and the within-model split (§4.7, §4.8)",
    "carrier": "carrier against answer (§4.10)",
    "grader": "label-bound against presence grading of the answer (§4.4)",
    "abstention": "abstention against fabrication among failing rows (§4.11)",
    "tokens": "prompt-token deltas between arms (§1, §4.3)",
    "finish": "fold finish reasons and rows at their ceiling (§4.9)",
    "parse": "parse failures and the recall of rows carrying one (§6)",
    "envelope": "raw JSON envelopes carried, per arm (§5)",
    "icc": "ICC(1) of the binary checks and the design effect (§4 opening)",
    "invalid": "the rows the validity rule kept out, with their recalls (§6)",
    "compare": "arm against arm within a block, fact by fact, and fact survival per arm "
               "(§4.4, §4.9)",
    "retained": "recall against the tokens each arm retains, with the frontier (beyond "
                "the paper: every arm, index and own arms included)",
}
# Analyses that read every arm, those outside the matched comparison included
# (arm.is_matched: index arms, own arms with `match: false`); every other analysis is
# a matched one and never sees them (analysis/view.Evidence.reading).
EVERY_ARM_ANALYSES = frozenset({"compare", "retained"})

# Analyses that read the primary (distributed-facts) scenario only unless the config
# names another: the pooled, study-wide ones (docs/design.md §6, Scopes, "Pooled
# analyses"; §4 opening, "all 620 valid rows of this scenario"). The filter comes before
# the grouping, so a single-chunk sweep is never a group of these, and one group left
# keeps plain keys.
PRIMARY_SCENARIO_ANALYSES = frozenset({
    "icc", "headings", "carrier", "grader", "abstention", "finish", "parse", "envelope",
    "tokens", "fill", "fill_table"})

SCOPE_KEYS = ("sweeps", "models", "pool", "scenario", "prefer", "arms", "sources")
# Keys whose value is a list of sweep names, and of model or arm names.
_SWEEP_LISTS = ("sweeps", "prefer")


def unknown_analyses(names: Collection[str], where: str) -> None:
    """Fail naming each of `names` that is not an analysis: for the registries that
    declare which analyses a table or a numbers section reads."""
    bad = [n for n in names if n not in ANALYSES]
    if bad:
        raise KeyError(f"{where} reads {', '.join(map(repr, bad))}, not an analysis of "
                       f"study/scopes.ANALYSES (known: {', '.join(ANALYSES)})")


def problems_in(scopes: dict[str, Any] | None, known: Collection[str]) -> list[str]:
    """Names and shapes of a config's `scopes:`, each problem naming its key; `known` are
    the analysis names (ANALYSES)."""
    out = []
    for name, s in (scopes or {}).items():
        if name not in known:
            out.append(f"config.scopes.{name}: not an analysis (known: {', '.join(known)})")
            continue
        for k in (s or {}):
            if k not in SCOPE_KEYS:
                out.append(f"config.scopes.{name}.{k}: not a scope key (known: "
                           f"{', '.join(SCOPE_KEYS)})")
        out += _shape_problems(name, s or {})
    return out


def _names(x: Any) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(v, str) for v in x)


def _shape_problems(name: str, s: dict[str, Any]) -> list[str]:
    """The new keys' shapes (the schema says them too; this names the key when the
    config did not come through the schema): prefer and arms lists of names, sources a
    mapping model -> arm -> sweeps, scenario a name; prefer and sources choose sweeps
    per model, so neither goes with `sweeps`, nor with each other."""
    out, at = [], f"config.scopes.{name}"
    for k in ("prefer", "arms"):
        if k in s and not _names(s[k]):
            out.append(f"{at}.{k}: a list of names")
    if "scenario" in s and not isinstance(s["scenario"], str):
        out.append(f"{at}.scenario: a scenario name")
    src = s.get("sources")
    if src is not None:
        if not isinstance(src, dict) or not src:
            out.append(f"{at}.sources: a mapping model -> arm -> sweeps")
        else:
            for m, arms in src.items():
                if not isinstance(arms, dict) or not arms:
                    out.append(f"{at}.sources.{m}: a mapping arm -> sweeps")
                    continue
                for a, sw in arms.items():
                    if not _names(sw):
                        out.append(f"{at}.sources.{m}.{a}: a list of sweeps")
    chosen = [k for k in ("sweeps", "prefer", "sources") if s.get(k) is not None]
    if len(chosen) > 1:
        out.append(f"{at}: {' and '.join(chosen)} each choose the sweeps; name one")
    return out


def source_triples(src: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """(model, arm, sweep) of a scope's `sources`, in the order written."""
    return [(m, a, sw) for m, arms in (src or {}).items() for a, sws in arms.items()
            for sw in sws]


def config_problems(scopes: dict[str, Any] | None, sweeps: dict[str, Any],
                    known: Collection[str]) -> list[str]:
    """Scope sweeps and models the study config itself does not run (checked at load)."""
    out = problems_in(scopes, known)
    for name, s in (scopes or {}).items():
        s = s or {}
        if name not in known or _shape_problems(name, s):
            keys = ("sweeps",)  # said above; the old keys are still checked
        else:
            keys = _SWEEP_LISTS
        for key in keys:
            for sw in s.get(key) or []:
                if sw not in sweeps:
                    out.append(f"config.scopes.{name}.{key}: {sw!r} is not a sweep of this "
                               f"study (sweeps: {', '.join(sweeps)})")
        listed = s.get("sweeps") or (s.get("prefer") if "prefer" in keys else None) or sweeps
        named = [sw for sw in listed if sw in sweeps]
        have = {m for sw in named for m in sweeps[sw].get("models", [])}
        for m in s.get("models") or []:
            if m not in have:
                out.append(f"config.scopes.{name}.models: {m!r} is not run by "
                           f"{', '.join(named) or 'any sweep'}")
        if "prefer" in keys:
            ran = {a for sw in named for a in sweeps[sw].get("arms", [])}
            for a in s.get("arms") or []:
                if a not in ran:
                    out.append(f"config.scopes.{name}.arms: {a!r} is not run by "
                               f"{', '.join(named) or 'any sweep'}")
        for m, a, sw in source_triples(s.get("sources") if "prefer" in keys else None):
            spec = sweeps.get(sw)
            if spec is None:
                out.append(f"config.scopes.{name}.sources.{m}.{a}: {sw!r} is not a sweep "
                           f"of this study (sweeps: {', '.join(sweeps)})")
            elif m not in spec.get("models", []) or a not in spec.get("arms", []):
                out.append(f"config.scopes.{name}.sources.{m}.{a}: sweep {sw!r} does not "
                           f"run {m} on arm {a}")
    return out
