"""The audit (docs/design.md §1): what a study would send, per model, before any call is made.

Counts are exact (runs, folds, calls: they follow from the config and the fixtures);
tokens and dollars are estimates and say so. Prompt tokens are sized from the real
fixture chunks, the arm's real system prompt and schema, and the largest carry a fold
can bring in (its carry cap, or its output budget when that is smaller), with the
fixtures' chars-per-token ratio; completion tokens are the ceiling each call may spend
(its max_tokens), so the dollar column is an upper bound. Prices come from the probe's
pinned endpoint when a probe record exists; the audit itself never calls a model, and
runs a probe has forbidden are counted as making no call. With `budget_usd` set, a
BUDGET line says how many runs, in the study's order, the budget covers at their worst
case (docs/design.md §6, Spend), and the log says what the ledger has spent so far.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends.ledger import (
    PROMPT_CHARS_PER_TOKEN,
    RATIO_MARGIN,
    empty_ledger,
    endpoint_key,
    held_usd,
    read_ledger,
    reservation_factors,
    spent_line,
)
from ..backends.registry import backend_class
from ..carriers.registry import carrier_of
from ..io import read_json, write_tsv
from ..records.probe_record import read_probe
from ..study.arm import Arm

log = logging.getLogger(__name__)

# sweep and repeats: filled on a staged decision's DECIDE_FIRST and DECIDE_MAX lines only
PLAN_COLUMNS = ["model", "sweep", "repeats", "backend", "pin", "runs", "runs_forbidden",
                "folds", "calls", "est_prompt_tokens", "max_completion_tokens",
                "usd_per_mtok_prompt", "usd_per_mtok_completion", "est_usd_max",
                "price_source"]
COUNTS = ("runs", "runs_forbidden", "folds", "calls", "est_prompt_tokens",
          "max_completion_tokens")


# Verdicts that say nothing about whether the arm can run (no key yet, server down):
# the audit still counts those runs' calls, since they will be made once it is fixed.
NOT_ABOUT_THE_REQUEST = ("auth_failed", "unreachable", "insufficient_credits")


@dataclass(frozen=True)
class PlannedRun:
    sweep: str
    model: str
    arm: str
    repeat: int = 0


@dataclass(frozen=True)
class StagedSweep:
    """A sweep a staged decision (config `decide:`) runs in stages: the pair, the first
    stage's repeats per model (sequential.first_stage) and the most it may run."""

    sweep: str
    pair: tuple[str, str]
    first: int
    most: int
    looks: int


@dataclass(frozen=True)
class Sizes:
    """What the estimate needs from the fixtures and the turn templates."""

    chunk_chars: dict[str, list[int]]  # sweep -> chars of each chunk
    fold_template_chars: int
    recall_chars: int  # recall system prompt + template + labels
    chars_per_token: float


def run_tokens(arm: Arm, chunks: list[int], sizes: Sizes, recall_max_tokens: int
               ) -> tuple[int, int, int]:
    """(calls, prompt tokens, max completion tokens) of one run of this arm. A native
    arm's run is counted the same way: a compaction per fold, its previous
    item bounded by the fold budget (its max_tokens), then the recall turn; its fold
    prompt holds no fold template, so this is an upper bound. Every chunk is sent once,
    to a fold or to the recall turn: the folds that send no request (a keep_recent arm's
    first N, `folds_without_call`) cost no call, no overhead and no reply, and their
    chunks are counted where they are sent. An arm whose folds call no model
    (carriers/session.py) is one call: the recall turn, its carry at most `recall_bound`
    tokens of the session."""
    cpt = sizes.chars_per_token
    carrier = carrier_of(arm)
    if not carrier.calls_model:  # only the recall turn is a call (carriers/session.py)
        session = sum(chunks) / cpt
        return 1, round(sizes.recall_chars / cpt + carrier.recall_bound(arm, session)), \
            recall_max_tokens
    schema_chars = len(json.dumps(arm.schema, ensure_ascii=False)) if arm.schema else 0
    carry = carrier.recall_bound(arm, 0.0)
    silent = carrier.folds_without_call()
    prompt = 0.0
    for i, c in enumerate(chunks):
        if i < silent:  # sent later, in a compaction or the recall turn
            prompt += c / cpt
            continue
        prompt += (len(arm.system_prompt) + len(arm.instructions or "")
                   + sizes.fold_template_chars + schema_chars + c) / cpt
        prompt += carry if i > silent else 0
    prompt += sizes.recall_chars / cpt + carry
    calls = max(0, len(chunks) - silent)
    completion = arm.fold_budget_tokens * calls + recall_max_tokens
    return calls + 1, round(prompt), completion


def forbidden(probe: dict[str, Any], arm: str) -> bool:
    """Does the model's probe forbid this arm for a reason about the request (such a run
    makes no call)?"""
    perm = (probe or {}).get("permissions", {}).get(arm)
    return perm is not None and not perm.get("allowed") and \
        perm.get("verdict") not in NOT_ABOUT_THE_REQUEST


def model_prices(backend: str, probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
    """The audit's prices of one model: its backend says where they come from."""
    return backend_class(backend).audit_prices(probe or {})


def run_usd(arm: Arm, chunks: list[int], sizes: Sizes, recall_max_tokens: int,
            prices: tuple[float | None, float | None, str]) -> tuple[int, float | None]:
    """(calls, worst-case dollars) of one run of this arm; dollars None where a price is
    unknown."""
    calls, prompt, completion = run_tokens(arm, chunks, sizes, recall_max_tokens)
    pp, pc, _ = prices
    return calls, None if pp is None or pc is None else prompt * pp + completion * pc


def run_sums(runs: list[PlannedRun], arms: dict[str, Arm], probes: dict[str, dict[str, Any]],
             sizes: Sizes, recall_max_tokens: int) -> dict[str, dict[str, int]]:
    """Per model, the COUNTS of these runs (a run its probe forbids makes no call)."""
    acc: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COUNTS, 0))
    for r in runs:
        a = acc[r.model]
        a["runs"] += 1
        if forbidden(probes.get(r.model) or {}, r.arm):
            a["runs_forbidden"] += 1
            continue
        chunks = sizes.chunk_chars[r.sweep]
        calls, prompt, completion = run_tokens(arms[r.arm], chunks, sizes, recall_max_tokens)
        a["folds"] += len(chunks)
        a["calls"] += calls
        a["est_prompt_tokens"] += prompt
        a["max_completion_tokens"] += completion
    return acc


def sums_usd(sums: dict[str, int], prices: tuple[float | None, float | None, str]
             ) -> float | None:
    """Worst-case dollars of one model's sums at its prices (None: a price unknown)."""
    pp, pc, _ = prices
    if pp is None or pc is None:
        return None
    return sums["est_prompt_tokens"] * pp + sums["max_completion_tokens"] * pc


@dataclass(frozen=True)
class Reserve:
    """How the ledger would price a call on one model's endpoint now (ledger.worst_case):
    the prompt at PROMPT_CHARS_PER_TOKEN characters a token times the largest prompt-token
    ratio learned there, plus max_tokens, at the listed prices times the largest price
    ratio learned there (each ratio times RATIO_MARGIN, never below 1)."""

    tokens: float
    price: float
    basis: str  # the words a card and plan.tsv say it in


def reserve_for(probe: dict[str, Any], prices: tuple[float | None, float | None, str],
                state: dict[str, Any]) -> Reserve:
    """The ledger's pricing of a model's calls now, from its probe's endpoint."""
    pp, pc, source = prices
    if pp == 0 and pc == 0:
        return Reserve(1.0, 1.0, source)
    ep = endpoint_key(probe.get("endpoint") or {})
    f = reservation_factors(state, ep)
    if f is None:
        return Reserve(1.0, 1.0, f"priced as the ledger reserves: listed prices, nothing "
                                 f"settled on {ep} yet (its first call may bill above them)")
    return Reserve(f[0], f[1], f"priced as the ledger reserves: listed prices x {f[1]:.3g} "
                               f"and prompt tokens x {f[0]:.3g}, the largest ratios learned "
                               f"on {ep} (x {RATIO_MARGIN:g})")


def reserved_usd(prompt_tokens: float, completion_tokens: float,
                 prices: tuple[float | None, float | None, str], reserve: Reserve,
                 chars_per_token: float) -> float | None:
    """Dollars of these tokens (the audit's prompt estimate at chars_per_token) as the
    ledger reserves them (None: a price unknown)."""
    pp, pc, _ = prices
    if pp is None or pc is None:
        return None
    prompt = prompt_tokens * chars_per_token / PROMPT_CHARS_PER_TOKEN
    return (prompt * reserve.tokens * pp + completion_tokens * pc) * reserve.price


def plan_rows(runs: list[PlannedRun], arms: dict[str, Arm], backends: dict[str, str],
              probes: dict[str, dict[str, Any]], sizes: Sizes, recall_max_tokens: int,
              budget_usd: float | None = None, staged: Sequence[StagedSweep] = (),
              ledger_state: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per model, then a TOTAL row; per staged sweep its DECIDE_FIRST and
    DECIDE_MAX lines; with a budget a BUDGET row: how many of the runs, in the study's
    order, its worst case covers (docs/design.md §6, Spend)."""
    acc = run_sums(runs, arms, probes, sizes, recall_max_tokens)
    rows = []
    total: dict[str, Any] = dict.fromkeys(COUNTS, 0)
    total_usd, unknown_price = 0.0, False
    for model in sorted(acc):
        a = acc[model]
        backend = backends[model]
        probe = probes.get(model) or {}
        prices = backend_class(backend).audit_prices(probe)
        pp, pc, source = prices
        usd = sums_usd(a, prices)
        unknown_price |= usd is None and a["calls"] > 0
        row = {**dict.fromkeys(PLAN_COLUMNS, ""), "model": model, "backend": backend,
               "pin": (probe.get("pin") or {}).get("provider_name") or "", **a,
               "usd_per_mtok_prompt": "" if pp is None else f"{pp * 1e6:.4g}",
               "usd_per_mtok_completion": "" if pc is None else f"{pc * 1e6:.4g}",
               "est_usd_max": "" if usd is None else f"{usd:.2f}", "price_source": source}
        rows.append(row)
        for k in COUNTS:
            total[k] += a[k]
        total_usd += usd or 0.0
    rows.append({**dict.fromkeys(PLAN_COLUMNS, ""), "model": "TOTAL", **total,
                 "est_usd_max": f"{total_usd:.2f}" + ("+" if unknown_price else ""),
                 "price_source": "lower bound: some prices unknown" if unknown_price else ""})
    for st in staged:
        rows += staged_rows(st, runs, arms, backends, probes, sizes, recall_max_tokens,
                            ledger_state)
    if budget_usd is not None:
        rows.append(budget_row(runs, arms, backends, probes, sizes, recall_max_tokens,
                               budget_usd))
    return rows


def staged_rows(st: StagedSweep, runs: list[PlannedRun], arms: dict[str, Arm],
                backends: dict[str, str], probes: dict[str, dict[str, Any]], sizes: Sizes,
                recall_max_tokens: int, ledger_state: dict[str, Any] | None = None
                ) -> list[dict[str, Any]]:
    """A staged sweep's two lines ("The DAG stays plannable: -n and the audit
    show the first stage and the maximum"): the runs, calls and worst-case dollars of
    its first stage, which every model runs, and of its maximum, which the per-model
    lines count; a look may stop a model anywhere between. Their dollars are priced as
    the ledger reserves (reserve_for), the figures the looks and the cards use too."""
    state = ledger_state or empty_ledger()
    out = []
    for label, repeats, what in (("DECIDE_FIRST", st.first, "the first stage"),
                                 ("DECIDE_MAX", st.most, "the most it may run")):
        part = [r for r in runs if r.sweep == st.sweep and r.repeat < repeats]
        acc = run_sums(part, arms, probes, sizes, recall_max_tokens)
        usd = []
        for m, a in acc.items():
            prices = model_prices(backends[m], probes.get(m) or {})
            usd.append(reserved_usd(a["est_prompt_tokens"], a["max_completion_tokens"],
                                    prices, reserve_for(probes.get(m) or {}, prices, state),
                                    sizes.chars_per_token))
        learned = sum(reservation_factors(state, endpoint_key(
            (probes.get(m) or {}).get("endpoint") or {})) is not None for m in acc)
        unknown = any(u is None and acc[m]["calls"] > 0 for m, u in zip(acc, usd,
                                                                         strict=True))
        out.append({**dict.fromkeys(PLAN_COLUMNS, ""), "model": label, "sweep": st.sweep,
                    "repeats": repeats,
                    **{k: sum(a[k] for a in acc.values()) for k in COUNTS},
                    "est_usd_max": f"{sum(u or 0.0 for u in usd):.2f}"
                                   + ("+" if unknown else ""),
                    "price_source": f"decide {st.pair[0]} vs {st.pair[1]}: {what}, "
                                    f"{repeats} repeats per model over {len(acc)} "
                                    f"models ({st.looks} looks at most); priced as the "
                                    f"ledger reserves (listed prices times the ratios "
                                    f"learned on {learned} of {len(acc)} endpoints)"
                                    + ("; lower bound: some prices unknown"
                                       if unknown else "")})
    return out


def runs_covered(runs: list[PlannedRun], arms: dict[str, Arm], backends: dict[str, str],
                 probes: dict[str, dict[str, Any]], sizes: Sizes, recall_max_tokens: int,
                 budget_usd: float) -> tuple[int, bool]:
    """(how many runs, in the study's order, fit the budget at their worst case; whether
    a run of unknown price was counted as free)."""
    spent, covered, unknown = 0.0, 0, False
    for r in runs:
        if not forbidden(probes.get(r.model) or {}, r.arm):
            _, usd = run_usd(arms[r.arm], sizes.chunk_chars[r.sweep], sizes,
                             recall_max_tokens,
                             model_prices(backends[r.model], probes.get(r.model) or {}))
            unknown |= usd is None
            if spent + (usd or 0.0) > budget_usd:
                break
            spent += usd or 0.0
        covered += 1
    return covered, unknown


def budget_row(runs: list[PlannedRun], arms: dict[str, Arm], backends: dict[str, str],
               probes: dict[str, dict[str, Any]], sizes: Sizes, recall_max_tokens: int,
               budget_usd: float) -> dict[str, Any]:
    """The plan's BUDGET line: runs = the runs the budget covers at their worst case."""
    covered, unknown = runs_covered(runs, arms, backends, probes, sizes, recall_max_tokens,
                                    budget_usd)
    return {**dict.fromkeys(PLAN_COLUMNS, ""), "model": "BUDGET", "runs": covered,
            "est_usd_max": f"{budget_usd:.2f}",
            "price_source": f"budget_usd {budget_usd:g} covers {covered} of {len(runs)} runs at "
                            "their "
                            "worst case" + ("; runs of unknown price counted as free"
                                            if unknown else "")}


def plan_sizes(prompts: dict[str, str], fixture_paths: dict[str, str]) -> Sizes:
    """What the estimate needs, from the fixtures and the turn templates.

    prompts: the fold_user, recall_system and recall_user template files.
    """
    from ..study.fixtures import CHARS_PER_TOKEN

    def chars(name: str) -> int:
        return len(Path(prompts[name]).read_text(encoding="utf-8"))

    chunk_chars = {s: [len(c) for c in read_json(p)["chunks"]] for s, p in fixture_paths.items()}
    labels = max((sum(len(f["label"]) + 6 for f in read_json(p)["facts"] if f["graded"])
                  for p in fixture_paths.values()), default=0)
    return Sizes(
        chunk_chars=chunk_chars,
        fold_template_chars=chars("fold_user"),
        recall_chars=chars("recall_system") + chars("recall_user") + labels,
        chars_per_token=CHARS_PER_TOKEN,
    )


def probe_records(probe_dir: str, models: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The probe records that exist (read when present; the audit never runs a probe)."""
    probes = {}
    for model in models:
        p = Path(probe_dir) / f"{model}.json"
        if p.is_file():
            probes[model] = read_probe(p)
    return probes


def write_plan(prompts: dict[str, str], fixture_paths: dict[str, str],
               runs: list[dict[str, str]], arms: dict[str, dict[str, Any]],
               backends: dict[str, str], probe_dir: str, recall_max_tokens: int, out: str,
               budget_usd: float | None = None, ledger: str | None = None,
               staged: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """results/audit/plan.tsv from the config's runs, the fixtures and any probe records;
    with a budget, its BUDGET line and the spend the ledger holds so far; with a staged
    decision (staged: sweep -> pair, first, most, looks), its first stage and maximum."""
    sizes = plan_sizes(prompts, fixture_paths)
    probes = probe_records(probe_dir, backends)
    stages = [StagedSweep(s, (d["pair"][0], d["pair"][1]), int(d["first"]), int(d["most"]),
                          int(d["looks"])) for s, d in (staged or {}).items()]
    rows = plan_rows([PlannedRun(**r) for r in runs],
                     {a: Arm.from_dict(d) for a, d in arms.items()}, backends, probes, sizes,
                     recall_max_tokens, budget_usd, stages,
                     read_ledger(ledger) if ledger and stages else None)
    write_tsv(rows, PLAN_COLUMNS, out)
    t = next(r for r in rows if r["model"] == "TOTAL")
    log.info("%d runs, %d calls, ~%d prompt and <= %d completion tokens, <= $%s; probe "
             "records used for %d of %d models", t["runs"], t["calls"], t["est_prompt_tokens"],
             t["max_completion_tokens"], t["est_usd_max"], len(probes), len(backends))
    if budget_usd is not None:
        state = read_ledger(ledger) if ledger else empty_ledger()
        log.info("projected <= $%s against budget_usd %g: %s; %s so far",
                 t["est_usd_max"], budget_usd, rows[-1]["price_source"],
                 spent_line(state, budget_usd))
    return rows


def plan_inputs(input: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(prompts, sweep -> fixture) from the inputs of a rule that plans before any call
    (audit, power): the prompts a call is priced from, and each sweep's fixture."""
    prompts = {k: input[k] for k in ("fold_user", "recall_system", "recall_user")}
    fixtures = {k[len("fixture_"):]: v for k, v in input.items() if k.startswith("fixture_")}
    return prompts, fixtures


def audit_stage(input: Any, output: Any, params: Any) -> list[dict[str, Any]]:
    """Rule audit: results/audit/plan.tsv."""
    prompts, fixtures = plan_inputs(input)
    return write_plan(prompts, fixtures, params.runs, params.arms, params.backends,
                      params.probe_dir, params.recall_max_tokens, output.plan,
                      params.budget_usd, params.ledger, params.staged)


def budget_note(budget_usd: float | None, ledger: str, plan: str) -> str | None:
    """The line `snakemake -n` prints under a budget (docs/design.md §6, Spend): what the ledger has
    spent, and what the last audit projected against the budget (None: no budget)."""
    if budget_usd is None:
        return None
    state = read_ledger(ledger)
    note = f"budget_usd {budget_usd:g}: spent ${state['spent_usd']:.4f} so far ({ledger})"
    if state["reserved"]:
        note += (f", ${held_usd(state):.4f} held by {len(state['reserved'])} calls that "
                 "never settled (the next run settles them)")
    if not Path(plan).is_file():
        return note + f"; `snakemake -c1 {plan}` projects the cost and the runs it covers"
    import csv

    with open(plan, newline="", encoding="utf-8") as f:
        rows = {r["model"]: r for r in csv.DictReader(f, delimiter="\t")}
    total, cover = rows.get("TOTAL") or {}, rows.get("BUDGET") or {}
    same = cover.get("est_usd_max") == f"{budget_usd:.2f}"
    return (note + f"; the audit ({plan}) projects <= ${total.get('est_usd_max', '?')}"
            + (f"; {cover['price_source']}" if same else
               f" (rerun it for the runs budget_usd {budget_usd:g} covers)"))


class RunPrices:
    """price(sweep, model, arm) -> (calls, worst-case dollars | None) of one run (a run
    the probe forbids makes no call). For the plans made before or between calls: the
    repeat plan's, the looks' and the decision cards' repeats to decide. With a ledger,
    priced as the ledger reserves now (reserve_for; basis(model) says how), else at the
    audit's listed prices."""

    def __init__(self, prompts: dict[str, str], fixture_paths: dict[str, str],
                 arms: dict[str, dict[str, Any]], backends: dict[str, str], probe_dir: str,
                 recall_max_tokens: int, ledger: str | None = None) -> None:
        self.sizes = plan_sizes(prompts, fixture_paths)
        self.probes = probe_records(probe_dir, backends)
        self.specs = {a: Arm.from_dict(d) for a, d in arms.items()}
        self.backends, self.recall_max_tokens = backends, recall_max_tokens
        self.state = read_ledger(ledger) if ledger else None

    def __call__(self, sweep: str, model: str, arm: str) -> tuple[int, float | None]:
        probe = self.probes.get(model) or {}
        if forbidden(probe, arm):
            return 0, 0.0
        chunks = self.sizes.chunk_chars[sweep]
        prices = model_prices(self.backends[model], probe)
        if self.state is None:
            return run_usd(self.specs[arm], chunks, self.sizes, self.recall_max_tokens,
                           prices)
        calls, prompt, completion = run_tokens(self.specs[arm], chunks, self.sizes,
                                               self.recall_max_tokens)
        return calls, reserved_usd(prompt, completion, prices, self.reserve(model),
                                   self.sizes.chars_per_token)

    def reserve(self, model: str) -> Reserve:
        probe = self.probes.get(model) or {}
        prices = model_prices(self.backends[model], probe)
        return reserve_for(probe, prices, self.state or empty_ledger())

    def overruns(self, model: str) -> list[dict[str, Any]]:
        """The calls on this model's endpoint the ledger logged as costing more than they
        reserved."""
        ep = endpoint_key((self.probes.get(model) or {}).get("endpoint") or {})
        return [o for o in (self.state or empty_ledger())["overruns"]
                if o.get("endpoint") == ep]

    def basis(self, model: str) -> str:
        """How this model's dollars are priced, in the words a card says."""
        if self.state is None:
            return model_prices(self.backends[model], self.probes.get(model) or {})[2] \
                or "the audit's listed prices"
        return self.reserve(model).basis


def run_prices(prompts: dict[str, str], fixture_paths: dict[str, str],
               arms: dict[str, dict[str, Any]], backends: dict[str, str], probe_dir: str,
               recall_max_tokens: int, ledger: str | None = None) -> RunPrices:
    """The run prices (RunPrices) of these fixtures, arms and probe records."""
    return RunPrices(prompts, fixture_paths, arms, backends, probe_dir, recall_max_tokens,
                     ledger)
