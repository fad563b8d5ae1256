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
    "depth": "the depth re-run, both arms in full (§4.7)",
    "headings": "headings that arrived vs recall, and the within-model split (§4.7, §4.8)",
    "carrier": "carrier against answer (§4.10)",
    "grader": "label-bound against presence grading of the answer (§4.4)",
    "abstention": "abstention against fabrication among failing rows (§4.11)",
    "tokens": "prompt-token deltas between arms (§1, §4.3)",
    "finish": "fold finish reasons and rows at their ceiling (§4.9)",
    "parse": "parse failures and the recall of rows carrying one (§6)",
    "icc": "ICC(1) of the binary checks and the design effect (§4 opening)",
    "compare": "arm against arm within a block, fact by fact, and fact survival per arm "
               "(§4.4, §4.9)",
}

SCOPE_KEYS = ("sweeps", "models", "pool")


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
    return out


def config_problems(scopes: dict[str, Any] | None, sweeps: dict[str, Any],
                    known: Collection[str]) -> list[str]:
    """Scope sweeps and models the study config itself does not run (checked at load)."""
    out = problems_in(scopes, known)
    for name, s in (scopes or {}).items():
        s = s or {}
        for sw in s.get("sweeps") or []:
            if sw not in sweeps:
                out.append(f"config.scopes.{name}.sweeps: {sw!r} is not a sweep of this "
                           f"study (sweeps: {', '.join(sweeps)})")
        named = [sw for sw in (s.get("sweeps") or sweeps) if sw in sweeps]
        have = {m for sw in named for m in sweeps[sw].get("models", [])}
        for m in s.get("models") or []:
            if m not in have:
                out.append(f"config.scopes.{name}.models: {m!r} is not run by "
                           f"{', '.join(named) or 'any sweep'}")
    return out
