"""The repeat plan (issue 26; DESIGN §6, Power): how many repeats each contrast needs,
before any call is paid for.

Rows are near-binary: paper §4 opens "a one-way random-effects decomposition of the
fourteen binary checks gives ICC = 0.750 and a design effect of 10.745", so "a
fourteen-check row is worth about 1.30 independent observations". The plan therefore
counts rows, not checks: a row's recall over k checks has variance
p(1 - p) * DE / k with DE = 1 + (k - 1) ICC (the beta-binomial row model).

The test the plan assumes is the study's own for a contrast of two arms (the ladder's
rungs and every compare pair): the paired bootstrap of row recalls within each block
(stats.paired_bootstrap, resampling pairs within model), which detects a difference
when its two-sided (1 - alpha) interval excludes zero. Its normal approximation, with
rows as clusters, gives the power of n pairs at difference d:
    SE = sqrt((pa(1-pa) + pb(1-pb)) * DE / k / n),  power ~ Phi(d / SE - z_{1-alpha/2})
where pa, pb = 0.5 -/+ d/2: centred on one half, the row variance is at its largest, so
the plan is conservative when the arms' recall is not known yet. tests/test_power.py
checks it against statsmodels (ICC 0) and a Monte Carlo of beta-binomial rows analysed
by stats.paired_bootstrap (ICC 0.75).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from scipy import optimize
from scipy import stats as sps

from ..errors import StudyError
from ..evidence.load import load_evidence
from ..io import read_json, write_text, write_tsv
from ..run.audit import (
    forbidden,
    model_prices,
    plan_inputs,
    plan_sizes,
    probe_records,
    run_usd,
)
from ..study.spec import Arm
from . import stats
from .analysis import Analysis
from .compare import compare_pairs, pair_label

log = logging.getLogger(__name__)

# Paper §4 opening: the ICC of the fourteen-check scenario, used without a pilot.
PAPER_ICC = 0.750
POWER_COLUMNS = ["sweep", "contrast", "model", "icc", "icc_source", "k", "design_effect",
                 "repeats", "mde", "target_difference", "repeats_needed", "calls", "cost_usd"]
POOLED = "pooled"


def diff_variance(d: float, icc: float, k: float, baseline: float = 0.5) -> float:
    """Variance of one pair's recall difference, rows as clusters of k checks."""
    pa, pb = baseline - d / 2, baseline + d / 2
    return (pa * (1 - pa) + pb * (1 - pb)) * stats.design_effect(icc, k) / k


def power_at(n: float, d: float, icc: float, k: float, alpha: float = 0.05) -> float:
    """Power of n pairs to detect difference d with the study's paired test (two-sided:
    an interval wholly on either side of zero)."""
    if n <= 0:
        return 0.0
    se, z = math.sqrt(diff_variance(d, icc, k) / n), sps.norm.ppf(1 - alpha / 2)
    return float(sps.norm.cdf(d / se - z) + sps.norm.cdf(-d / se - z))


def repeats_needed(d: float, icc: float, k: float, alpha: float = 0.05, power: float = 0.8
                   ) -> int:
    """The fewest pairs that detect difference d with the given power."""
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    return max(1, math.ceil(z * z * diff_variance(d, icc, k) / (d * d) - 1e-9))


def mde(n: float, icc: float, k: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference n pairs (n > 0) detect with the given power. It always
    exists below 1: at a difference of 1 the rows' variance is 0."""
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)

    def gap(d: float) -> float:
        return d - z * math.sqrt(diff_variance(d, icc, k) / n)

    return float(optimize.brentq(gap, 1e-9, 1.0))


# -- where the ICC comes from ------------------------------------------------------


class PilotError(StudyError):
    """A pilot evidence package that gives no ICC."""


@dataclass(frozen=True)
class IccSource:
    value: float
    source: str


def pilot_icc(pilot: str, an: Analysis) -> IccSource:
    """ICC(1) of a pilot's binary checks grouped by row, over its valid rows of the
    distributed scenario: the number the paper's 0.750 is (numbers.py, `icc.value`)."""
    rows, checks = load_evidence(pilot, an.arm_order, an.scenarios)
    prim = rows[(rows["scenario"] == an.primary_scenario) & rows["valid"].astype(bool)]
    c = checks[checks["row_id"].isin(prim["row_id"])]
    icc = stats.icc1(c["row_id"], c["correct"].astype(float), an.confidence)
    if icc is None:
        raise PilotError(f"config.power.pilot: {pilot} has {len(prim)} valid rows of the "
                         f"{an.primary_scenario} scenario; an ICC needs at least two rows "
                         "with more than one check between them")
    return IccSource(icc.value, f"pilot {pilot} ({icc.n_rows} rows)")


# -- the plan ---------------------------------------------------------------------


def contrasts(an: Analysis, extra: list[list[str]]) -> list[tuple[str, str]]:
    """Every contrast the study tests: the ladder's consecutive rungs, then the compare
    pairs (resources/analysis.yaml, then the study config's), each once."""
    out = [(a, b) for a, b in zip(an.ladder, an.ladder[1:], strict=False)]
    return out + [p for p in compare_pairs(an, extra) if p not in out]


def plan_line(sweep: str, pair: tuple[str, str], model: str, n_models: int, icc: IccSource,
              k: int, repeats: int, target: dict[str, float], run_cost: tuple[int, float | None]
              ) -> dict[str, Any]:
    """One contrast's line: pairs = repeats x models (a pooled line pools the sweep's)."""
    alpha, power, d = target["alpha"], target["power"], target["target_difference"]
    found = mde(repeats * n_models, icc.value, k, alpha, power)
    need_pairs = repeats_needed(d, icc.value, k, alpha, power)
    need = math.ceil(need_pairs / n_models)
    calls, usd = run_cost
    return {"sweep": sweep, "contrast": pair_label(*pair), "model": model,
            "icc": f"{icc.value:.3f}", "icc_source": icc.source, "k": k,
            "design_effect": f"{stats.design_effect(icc.value, k):.2f}", "repeats": repeats,
            "mde": f"{found:.3f}", "target_difference": d,
            "repeats_needed": need, "calls": calls * need,
            "cost_usd": "" if usd is None else f"{usd * need:.2f}"}


def power_rows(sweeps: dict[str, dict[str, Any]], pairs: list[tuple[str, str]],
               graded: dict[str, int], icc: IccSource, target: dict[str, float],
               cost: Any) -> list[dict[str, Any]]:
    """One line per (sweep, contrast, model) where the sweep runs both arms, and one
    pooled over the sweep's models. cost(sweep, model, arm) -> (calls, usd | None) of one
    run (None: no call, or unknown price)."""
    out = []
    for sname, sw in sweeps.items():
        for pair in pairs:
            if not set(pair) <= set(sw["arms"]):
                continue
            per = {m: [cost(sname, m, a) for a in pair] for m in sw["models"]}
            for m in sw["models"]:
                out.append(plan_line(sname, pair, m, 1, icc, graded[sname], sw["repeats"],
                                     target, _sum(per[m])))
            if len(sw["models"]) > 1:
                pooled = _sum([c for m in sw["models"] for c in per[m]])
                out.append(plan_line(sname, pair, POOLED, len(sw["models"]), icc,
                                     graded[sname], sw["repeats"], target, pooled))
    return out


def _sum(costs: list[tuple[int, float | None]]) -> tuple[int, float | None]:
    usd = [u for _, u in costs]
    return sum(c for c, _ in costs), None if None in usd else sum(u for u in usd if u)


def power_markdown(rows: list[dict[str, Any]], icc: IccSource, target: dict[str, float]
                   ) -> str:
    """The Markdown view of power.tsv, with the assumption it rests on."""
    head = ["sweep", "contrast", "model", "repeats", "mde", "repeats_needed", "calls",
            "cost_usd"]
    lines = ["# Repeat plan", "",
             f"ICC {icc.value:.3f} ({icc.source}); target difference "
             f"{target['target_difference']:g} in mean recall at alpha {target['alpha']:g} "
             f"and power {target['power']:g}. The test assumed is the study's paired "
             "bootstrap of row recalls (rows as clusters, variance at recall 0.5: "
             "conservative). mde: the smallest difference the configured repeats detect; "
             "repeats_needed: per model (pooled: per model of the sweep); calls and "
             "cost_usd: both arms at that many repeats, at the audit's worst-case prices.",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(r[c]) for c in head) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_power(prompts: dict[str, str], fixture_paths: dict[str, str],
                sweeps: dict[str, dict[str, Any]], arms: dict[str, dict[str, Any]],
                backends: dict[str, str], probe_dir: str, recall_max_tokens: int,
                power_cfg: dict[str, Any], extra_pairs: list[list[str]], an: Analysis,
                out_tsv: str, out_md: str) -> list[dict[str, Any]]:
    """results/audit/power.tsv and power.md, before any call (the audit's prices)."""
    sizes = plan_sizes(prompts, fixture_paths)
    probes = probe_records(probe_dir, backends)
    arm_specs = {a: Arm.from_dict(d) for a, d in arms.items()}
    graded = {s: sum(1 for f in read_json(p)["facts"] if f["graded"])
              for s, p in fixture_paths.items()}

    def cost(sweep: str, model: str, arm: str) -> tuple[int, float | None]:
        probe = probes.get(model) or {}
        if forbidden(probe, arm):
            return 0, 0.0
        return run_usd(arm_specs[arm], sizes.chunk_chars[sweep], sizes, recall_max_tokens,
                       model_prices(backends[model], probe))

    icc = (pilot_icc(power_cfg["pilot"], an) if power_cfg["pilot"]
           else IccSource(PAPER_ICC, "paper §4"))
    target = {k: float(power_cfg[k]) for k in ("target_difference", "alpha", "power")}
    rows = power_rows(sweeps, contrasts(an, extra_pairs), graded, icc, target, cost)
    write_tsv(rows, POWER_COLUMNS, out_tsv)
    write_text(power_markdown(rows, icc, target), out_md)
    log.info("%d contrasts planned at ICC %.3f (%s)", len(rows), icc.value, icc.source)
    return rows


def power_stage(input: Any, output: Any, params: Any) -> list[dict[str, Any]]:
    """Rule power: results/audit/power.tsv and power.md."""
    prompts, fixtures = plan_inputs(input)
    return write_power(prompts, fixtures, params.sweeps, params.arms, params.backends,
                       params.probe_dir, params.recall_max_tokens, params.power,
                       params.compare_pairs, Analysis.load(input.analysis, input.arms_yaml),
                       output.tsv, output.md)
