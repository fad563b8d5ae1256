"""What an evidence package says beside its rows and checks, read for the stages that
need it: the sweeps the cards and the gate read (the config's, or in evidence mode the
package's own: its manifest's config, else what its rows.csv holds), decide.gate checked
against them before any job runs, and the probe verdicts the tables print."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import StudyError
from ..io import read_json_object

SWEEP_KEYS = ("arms", "design", "models")
DEFAULT_DESIGN = "latin"  # config.schema.yaml's default: the paper's rotating Latin square


def decision_sweeps(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each sweep's arms, order design, models and `compare`, as the decision cards and
    the gate read them (the rotation a repeat plan rounds to, the models a gate holds
    on, the pairs a card reads): the
    config's, or in evidence mode (`evidence: DIR`) the package's (package_sweeps),
    whose cards decision.json holds; the config's sweeps are not the ones the package
    ran, and a gate checked on them found "no valid row" on every model."""
    if config.get("evidence"):
        return package_sweeps(config["evidence"])
    return {s: {**{k: sw[k] for k in SWEEP_KEYS}, "compare": sw.get("compare")}
            for s, sw in config["sweeps"].items()}


def package_sweeps(directory: str | Path) -> dict[str, dict[str, Any]]:
    """sweep -> arms, design, models of an evidence package: as the config in its
    manifest.json names them (the config that made it), else as its rows.csv holds them
    (arms and models in the order of their first row, the default design). A package
    the checks refuse yields what can be read; load_evidence names the problem."""
    d = Path(directory)
    made: Any = None
    if (d / "manifest.json").is_file():
        try:
            made = read_json_object(d / "manifest.json", "an evidence manifest",
                                    mappings=("config",)).get("config")
        except StudyError:
            made = None
    sweeps = made.get("sweeps") if isinstance(made, dict) else None
    if isinstance(sweeps, dict) and all(
            isinstance(sw, dict) and isinstance(sw.get("arms"), list)
            and isinstance(sw.get("models"), list) for sw in sweeps.values()):
        return {str(s): {"arms": list(sw["arms"]), "models": list(sw["models"]),
                         "design": sw.get("design") or DEFAULT_DESIGN,
                         "compare": sw.get("compare")}
                for s, sw in sweeps.items()}
    out: dict[str, dict[str, Any]] = {}
    try:
        with open(d / "rows.csv", newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                sw = out.setdefault(str(r.get("sweep")), {"arms": [], "models": [],
                                                          "design": DEFAULT_DESIGN})
                for key, value in (("arms", r.get("arm")), ("models", r.get("model"))):
                    if value not in sw[key]:
                        sw[key].append(str(value))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return out


def package_gate_problem(config: dict[str, Any]) -> str | None:
    """decide.gate in evidence mode, checked as the config check checks it outside
    (study/decide_checks.py: gate_problems), against the package's sweeps: the pair some sweep
    of the package ran, on models such a sweep ran."""
    gate = (config.get("decide") or {}).get("gate")
    if not config.get("evidence") or not gate:
        return None
    from ..study.decide_checks import gate_problems

    problems = gate_problems(gate, package_sweeps(config["evidence"]))
    return (f"{'; '.join(problems)} (in the evidence package {config['evidence']})"
            if problems else None)


def load_probes(path: str | Path) -> pd.DataFrame | None:
    """Probe verdicts: a package's probes.csv or this run's summary.tsv; None if absent."""
    p = Path(path)
    if not p.is_file():
        return None
    return pd.read_csv(p, dtype=str, keep_default_na=False,
                       sep="\t" if p.suffix == ".tsv" else ",")
