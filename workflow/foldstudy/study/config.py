"""The study's config: checked before any job runs, then resolved into a plan of runs.

Errors name the key and what would be right, e.g.
`config.sweeps.main.arms[3]: 'x' is not an arm (known: f g j ... u)`, the arms of
resources/arms.yaml.

Here: `load_study`, the one entry point, in the order it checks: the config's own keys
(study/schema.py: key by key, defaults), the models, the checks across keys and against
the arm table (study/checks.py; a staged decision's in study/decide_checks.py), the
derived arms joining their sweeps (the A/A copy, native@ARM), the sessions'
fixtures (study/session_checks.py) and capacity (study/capacity.py). The plan it
resolves is study/plan.py's Study; the reading of `--config` flags is study/flags.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends.http import key_problem
from ..backends.registry import resolve_model_config
from ..errors import StudyError
from ..io import load_yaml
from .capacity import packaged_capacity_scale, resolve_capacity
from .checks import (
    aa_problems,
    compare_problems,
    control_problems,
    kept_tail_problems,
    match_problems,
    meaningless_problems,
    native_backend_problems,
    native_with_problems,
    per_field_problems,
    probe_arm_problems,
    unmatched_arm_warnings,
    unused_override_warnings,
)
from .decide_checks import staged_maximum, unmatched_verdict_problems
from .derived import aa_copy_id, sweep_native_prompts, with_aa_copies, with_native_prompts
from .own_arms import arms_file_path, merge_own_arms
from .plan import Study
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
from .spec import SpecError, arm_ids, builtin_arm_problems


class ConfigError(StudyError, ValueError):
    """A config that would fail or mislead the study; the message lists every problem.

    Each problem is said with any credential in it redacted to its kind: a check that
    names a key by its path (a sweep named like a key) never echoes that key."""

    def __init__(self, problems: list[str]):
        from ..secrets import redact_secrets

        problems = [redact_secrets(p)[0] for p in problems]
        self.problems = problems
        super().__init__("invalid config:\n  " + "\n  ".join(problems))

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
    problems += _model_problems(cfg) + probe_arm_problems(cfg) + meaningless_problems(cfg)
    problems += control_problems(cfg, load_yaml(resources / "facts.yaml"))
    problems += unmatched_verdict_problems(cfg, arm_table)
    problems += scope_problems(cfg.get("scopes"), cfg["sweeps"], ANALYSES)
    table, override_problems = apply_overrides(arm_table, cfg["arm_overrides"])
    problems += override_problems
    problems += aa_problems(cfg) + native_with_problems(cfg, table, resources)
    problems += compare_problems(cfg, arm_table) + native_backend_problems(cfg, arm_table)
    problems += kept_tail_problems(cfg, arm_table)
    if not problems:
        table = _with_derived_arms(cfg, table)
    problems += per_field_problems(table, cfg["arm_overrides"], resources)
    problems += match_problems(arm_table, table, cfg["arm_overrides"])
    sessions, session_problems, warnings = session_fixtures(cfg, schema)
    problems += session_problems
    if problems:
        raise ConfigError(problems)
    try:
        warnings += _resolve_capacity(cfg, table, resources, arm_table, sessions)
        study = Study(cfg, table, resources)
    except SpecError as e:
        raise ConfigError([str(e)]) from e
    study.warnings = (warnings + unused_override_warnings(cfg)
                      + unmatched_arm_warnings(arms_file, cfg))
    study.sessions = sessions
    return study


def _model_problems(cfg: dict[str, Any]) -> list[str]:
    """Each model's key is named by an environment variable; every model a sweep or
    probe_only names is configured, and a probe-only model runs in no sweep."""
    problems = [f"config.models.{name}.api_key_env: {why}"
                for name, m in cfg["models"].items()
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
    return problems


def _with_derived_arms(cfg: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """The arm table with each A/A copy (spec.with_aa_copies) and each native@ARM arm
    (spec.with_native_prompts), each also joining its sweep's arms after the arms the
    config names (cfg is the checked copy load_study fills)."""
    made = {name: list(sweep_native_prompts(sw, table)) for name, sw in cfg["sweeps"].items()}
    table = with_native_prompts(with_aa_copies(table, cfg), cfg)
    for name, sw in cfg["sweeps"].items():
        if arm := (sw.get("controls") or {}).get("aa"):
            sw["arms"] = [*sw["arms"], aa_copy_id(arm)]
        sw["arms"] = [*sw["arms"], *made[name]]
    return table


def _resolve_capacity(cfg: dict[str, Any], table: dict[str, Any], resources: Path,
                      arm_table: dict[str, Any], sessions: dict[str, Any]) -> list[str]:
    """Fill cfg's capacity_scale (study/capacity.py resolve_capacity) and return its
    warnings, raising its problems. Evidence mode resolves capacity as the study did, so
    the config it fills is the one the package's manifest pins; but a session study's
    transcripts are not read there (a package leaves them out): it takes the scale its
    package chose."""
    if cfg.get("evidence") and cfg.get("scenarios"):
        if cfg.get("capacity_scale") is None:
            cfg["capacity_scale"] = packaged_capacity_scale(cfg["evidence"])
        return []
    resolved = resolve_capacity(cfg, table, resources, arm_table, sessions)
    if resolved.problems:
        raise ConfigError(resolved.problems)
    if cfg.get("capacity_scale") is None:  # chosen; a scale the config sets stays as written
        cfg["capacity_scale"] = resolved.scale
    return resolved.warnings


def _texts(paths: Sequence[str | Path]) -> dict[str, str]:
    """Each readable config file's text (one that is not was named when it was read)."""
    out = {}
    for p in paths:
        try:
            out[str(p)] = Path(p).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out

