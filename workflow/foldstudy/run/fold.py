"""The fold protocol (paper §3.1, docs/design.md §3): one run = every fold, then the recall turn.

Each fold sends the arm's system prompt and (previous carry, next chunk) and keeps only
the replacement carry; nothing re-reads the transcript. After the last fold a recall
turn asks for the graded facts by label. The run record keeps everything a grader or a
reviewer needs: every reply, every carry, token counts, finish reasons, attempts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from ..backends import make_backend
from ..backends.base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextOverflow,
    ReplayMiss,
    Reply,
)
from ..backends.call import cached_complete
from ..backends.ledger import BudgetExhausted, job_ledger
from ..backends.store import ResponseStore
from ..carriers.registry import carrier_of
from ..carriers.render import Rendered
from ..carriers.types import FoldStep
from ..grade.validity import BUDGET, attempts_dir, retryable, validity
from ..io import read_json, write_json
from ..records.probe_record import read_probe
from ..records.run_record import Fold, RunRecord
from ..study.arm import Arm
from ..study.fixture_types import Fixture

if TYPE_CHECKING:
    import jsonschema

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prompts:
    """The turn templates shared by every arm (the system prompt is the arm's own)."""

    fold_user: str
    recall_system: str
    recall_user: str

    @classmethod
    def from_files(cls, fold_user: str | Path, recall_system: str | Path,
                   recall_user: str | Path) -> Prompts:
        def read(p: str | Path) -> str:
            return Path(p).read_text(encoding="utf-8")

        return cls(read(fold_user), read(recall_system), read(recall_user))

    def render_fold(self, carry: str, chunk: str, fold: int, n_folds: int) -> str:
        """The fold's user message: the same text for every arm (docs/design.md §4).

        Paper §3.2: "Prompt, input, fold protocol, and output budget are held fixed within
        a comparison"; the arm's schema travels in response_format only, so j and q
        requests differ in nothing else.
        """
        return _render(self.fold_user, carry=carry, chunk=chunk, fold_index=fold,
                       n_folds=n_folds)

    def render_recall(self, carry: str, labels: list[str]) -> str:
        return _render(self.recall_user, carry=carry, labels=labels)


def _render(template: str, **kw: Any) -> str:
    return _compiled(template).render(**kw)


@cache
def _compiled(template: str) -> jinja2.Template:
    """A prompt template compiled once per process, not once per fold."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(template)


@dataclass(frozen=True)
class Sample:
    """Which run this is: part of every cache key and of the row id."""

    sweep: str
    model: str
    arm: str
    repeat: int
    position: int
    seed: int

    @property
    def row_id(self) -> str:
        return f"{self.sweep}/{self.model}/r{self.repeat}/{self.arm}"

    def identity(self, turn: str) -> dict[str, Any]:
        return {"sweep": self.sweep, "model": self.model, "arm": self.arm,
                "repeat": self.repeat, "turn": turn}

    def call_seed(self, turn: str) -> int:
        """A seed per (sweep seed, repeat, turn), shared by the arms of a block (paired)."""
        h = hashlib.sha256(f"{self.seed}:{self.repeat}:{turn}".encode()).hexdigest()
        return int(h[:8], 16)


def _schema_error(e: jsonschema.ValidationError) -> str:
    where = "/".join(map(str, e.path)) or "(root)"
    if e.validator == "maxLength":
        return f"{where}: {len(e.instance)} chars, over its declared ceiling of {e.validator_value}"
    return f"{where}: fails {e.validator}={e.validator_value!r}"[:300]


def carry_of(arm: Arm, reply_text: str) -> tuple[str, bool, bool, list[str]]:
    """What this arm carries forward from a reply: (carry, parse_ok, schema_valid, errors)."""
    rendered, parse_ok, schema_valid, errors = carry_rendered(arm, reply_text)
    return rendered.text, parse_ok, schema_valid, errors


def carry_rendered(arm: Arm, reply_text: str) -> tuple[Rendered, bool, bool, list[str]]:
    """carry_of, the carry's pieces marked the model's or the harness's. Only a rendered
    carry (headings or labels around field values) holds harness pieces; a plain reply,
    a raw JSON envelope, a single carried field and an unparsed reply are all the
    model's."""
    if arm.schema is None:
        return Rendered(reply_text.strip(), True), True, True, []
    try:
        obj = json.loads(reply_text)
    except json.JSONDecodeError as e:
        # Non-conforming fold: the arm's own behaviour. The raw reply is what a lenient
        # harness would carry on; it is recorded, never repaired.
        return (Rendered(reply_text.strip(), True), False, False,
                [f"json: {e.msg} at char {e.pos}"])
    if not isinstance(obj, dict):
        return Rendered(reply_text.strip(), True), False, False, ["json: reply is not an object"]
    # here, not at the top: a fold job of a plain-text arm never validates a reply
    import jsonschema

    validator = jsonschema.Draft202012Validator(arm.schema)
    errors = [_schema_error(e) for e in validator.iter_errors(obj)]
    return carrier_of(arm).render(arm, obj, reply_text), True, not errors, errors


def fold_request(arm: Arm, user: str, temperature: float, seed: int) -> ChatRequest:
    """One fold's request: the arm's system prompt, budget and schema around a user
    message that is the same for every arm (paper §3.2; docs/design.md §4)."""
    return ChatRequest(
        messages=({"role": "system", "content": arm.system_prompt},
                  {"role": "user", "content": user}),
        max_tokens=arm.fold_budget_tokens,
        temperature=temperature,
        seed=seed,
        response_schema=arm.schema,
        # an index arm sends its base's, an A/A copy its original's (Arm.wire_arm)
        schema_name=f"arm_{arm.wire_arm}",
    )


@dataclass(frozen=True)
class Caller:
    """How every turn of one run is called: through the store, as this sample.

    recheck: this is a retry of an infrastructure-invalid row, so each stored reply is
    checked again before it is reused (call.cached_complete).
    """

    backend: Backend
    store: ResponseStore
    sample: Sample
    recheck: bool = False

    def call(self, request: ChatRequest, turn: str) -> tuple[Reply, bool, str]:
        """(reply, store hit, request key) of one turn; raises the backend's errors."""
        return cached_complete(self.backend, self.store, request, self.sample.identity(turn),
                               self.recheck)


def infra_error(e: BackendError, turn: str) -> dict[str, Any]:
    """The record's infra_error: the turn an infrastructure fault stopped the run at."""
    return {"kind": e.kind, "message": e.message, "turn": turn, "retryable": e.retryable}


@dataclass
class FoldChain:
    """What the folds of one run left: the carry the recall turn reads, every fold made,
    and whether a catch-up, a fault or the budget cost any of them."""

    carry: str = ""
    folds: list[Fold] = field(default_factory=list)
    # an index arm's identifier index so far, oldest entry first (carriers/identifier_index.py)
    index: list[str] = field(default_factory=list)
    catchup_fired: bool = False
    missing: int = 0
    infra_error: dict[str, Any] | None = None
    # the ledger's refusal of the next call (budget_usd reached), kept with the folds
    # made before it: run_row decides whether the run ends as a record or as the job
    budget_stop: BudgetExhausted | None = None
    # a native arm's chain: the last compaction item or block, which the next fold and
    # the recall turn send first, unchanged
    item: Any = None

    @property
    def ended(self) -> bool:
        """Did a fault or the budget end the chain (no recall turn follows)."""
        return self.infra_error is not None or self.budget_stop is not None


def fold_step(caller: Caller, arm: Arm, prompts: Prompts, fixture: Fixture, carry: str,
              pending: list[int], i: int, temperature: float) -> Fold:
    """Fold i: the carry so far and the pending chunks in, the record of the fold out.

    Raises ContextOverflow (the caller folds the chunk with the next) and BackendError.
    """
    n = len(fixture.chunks)
    chunk = "\n".join(fixture.chunks[c] for c in pending)
    turn = f"fold{i}"
    request = fold_request(arm, prompts.render_fold(carry, chunk, i, n), temperature,
                           caller.sample.call_seed(turn))
    reply, hit, key = caller.call(request, turn)
    rendered, parse_ok, schema_valid, errors = carry_rendered(arm, reply.text)
    new_carry = rendered.text
    clipped_carry = caller.backend.clip(new_carry, arm.carry_cap_tokens)
    # docs/design.md §3: the carried text is clipped to the cap, labels and all, and that carry
    # is what the next fold receives. Whether the model's own text exceeded the cap is
    # asked only of a carry that was clipped (its text is part of the carry's).
    model = rendered.model_text()
    model_clipped = (clipped_carry != new_carry
                     and caller.backend.clip(model, arm.carry_cap_tokens) != model)
    log.info(
        "%s fold %d/%d: %d prompt + %d completion tokens, %s, %s%s, %.1fs%s",
        caller.sample.row_id, i + 1, n, reply.prompt_tokens, reply.completion_tokens,
        reply.finish_reason, "parsed" if parse_ok else "PARSE FAILURE",
        "" if schema_valid else " (schema-invalid)", reply.latency_s,
        " [store hit]" if hit else "",
    )
    # The carry is recorded as carried; what it holds (headings, an envelope) is the
    # grader's to count from it (grade/rows.py), the same way for every fold.
    return Fold(
        fold=i,
        chunks=list(pending),
        request_key=key,
        store_hit=hit,
        seed=request.seed if caller.backend.seed_sent else None,
        max_tokens=request.max_tokens,
        reply=reply.to_dict(),
        parse_ok=parse_ok,
        schema_valid=schema_valid,
        schema_errors=errors,
        carry=clipped_carry,
        carried_chars=len(clipped_carry),
        clipped=clipped_carry != new_carry,
        # The model's text in the carry and whether it alone exceeded the cap: what fill
        # and folds_clipped measure (grade/rows.py; the carry's labels are not counted).
        model_chars=rendered.model_chars(len(clipped_carry)),
        model_clipped=model_clipped,
    )


def run_folds(caller: Caller, arm: Arm, prompts: Prompts, fixture: Fixture,
              temperature: float) -> FoldChain:
    """Every fold of the session; a chunk that overflows is folded with the next
    (catch-up), and an infrastructure fault or the budget ends the chain."""
    n = len(fixture.chunks)
    chain = FoldChain()
    carrier = carrier_of(arm)
    pending: list[int] = []
    for i in range(n):
        pending.append(i)
        step = FoldStep(i=i, pending=pending, temperature=temperature, arm=arm,
                        fixture=fixture, chain=chain, caller=caller,
                        model_fold=partial(fold_step, caller, arm, prompts, fixture,
                                           chain.carry, pending, i, temperature))
        try:
            made = carrier.fold(step)
        except ContextOverflow as e:
            # Catch-up: this chunk is folded together with the next one.
            chain.catchup_fired = True
            log.warning("%s fold %d/%d: %s; catch-up with the next chunk",
                        caller.sample.row_id, i + 1, n, e.message)
            if i == n - 1:
                chain.missing += len(pending)
            continue
        except BackendError as e:
            chain.infra_error = infra_error(e, f"fold{i}")
            log.error("%s fold %d/%d failed: %s", caller.sample.row_id, i + 1, n, e)
            chain.missing += n - i
            break
        except BudgetExhausted as e:
            chain.budget_stop = e  # no call was sent; the folds made so far are kept
            chain.missing += n - i
            break
        carrier.after_fold(step, made.fold)
        chain.folds.append(made.fold)
        chain.carry = made.fold.carry
        chain.item = made.item
        pending = []
    return chain


# What a native arm's recall turn puts where the summary goes (recall_user.md.j2's
# SUMMARY): the summary is the compaction item the request continues from.
NATIVE_RECALL_CARRY = "(the compacted conversation above)"


def recall_turn(caller: Caller, prompts: Prompts, carry: str, labels: list[str],
                temperature: float, max_tokens: int, item: Any = None,
                kept: Sequence[str] = ()) -> dict[str, Any]:
    """The recall turn: the final carry and the graded labels in, the record's recall out.

    item: a native arm's last compaction item: the recall request continues from it
    (sent first, unchanged, as the provider's docs say the next request does), and the
    summary slot of the recall message points at it.

    kept: the chunks a `native:keep_recent=N` arm kept verbatim, sent after the item and
    before the question, each a message of the role a chunk has on this backend's wire
    (Backend.chunk_role), as it stood in the history (carriers/native_keep.py).

    Raises BackendError.
    """
    text = prompts.render_recall(NATIVE_RECALL_CARRY if item is not None else carry, labels)
    tail = tuple({"role": caller.backend.chunk_role, "content": c} for c in kept)
    request = ChatRequest(
        messages=({"role": "system", "content": prompts.recall_system}, *tail,
                  {"role": "user", "content": text}),
        max_tokens=max_tokens,
        temperature=temperature,
        seed=caller.sample.call_seed("recall"),
        context=item,
    )
    reply, hit, key = caller.call(request, "recall")
    log.info("%s recall: %d completion tokens, %s%s", caller.sample.row_id,
             reply.completion_tokens, reply.finish_reason, " [store hit]" if hit else "")
    return {"request_key": key, "store_hit": hit, "seed": request.seed,
            "reply": reply.to_dict(), "answer": reply.text}


def run_record(caller: Caller, fixture: Fixture, arm: Arm, temperature: float,
               chain: FoldChain, recall: dict[str, Any] | None) -> RunRecord:
    """The record of a run that was made: what the folds and the recall turn left."""
    sample, backend = caller.sample, caller.backend
    return RunRecord(
        status="run", row_id=sample.row_id, sweep=sample.sweep, scenario=fixture.scenario,
        model=sample.model, arm=arm.arm, repeat=sample.repeat, position=sample.position,
        arm_spec=arm.to_dict(), endpoint=backend.identity,
        ceiling_delivery=backend.ceiling_delivery if arm.ceilings else "none",
        token_count_method=backend.token_count_method, temperature=temperature,
        n_chunks=len(fixture.chunks), folds=list(chain.folds),
        final_carry=chain.carry,
        recall=recall, catchup_fired=chain.catchup_fired, missing_folds=chain.missing,
        infra_error=chain.infra_error,
        store={"hits": caller.store.hits, "misses": caller.store.misses},
    )


def run_row(
    fixture: Fixture,
    arm: Arm,
    backend: Backend,
    store: ResponseStore,
    prompts: Prompts,
    sample: Sample,
    temperature: float,
    recall_max_tokens: int,
    recheck: bool = False,
    staged: bool = False,
) -> RunRecord:
    """Fold the whole session through one arm and ask the recall turn (none after a
    fault: the row is invalid either way, and the call would be paid for nothing).

    recheck: this is a retry of an infrastructure-invalid row, so each stored reply is
    checked again before it is reused (call.cached_complete).

    staged: the run belongs to a staged decision's sweep (config `decide:`), where a
    budget that runs out part-way ends the run as a not_run:budget record keeping the
    folds it paid (a look then says *undecided*, with the spend). Elsewhere
    BudgetExhausted ends the job as before, with no record.
    """
    caller = Caller(backend, store, sample, recheck)
    carrier = carrier_of(arm)
    chain = run_folds(caller, arm, prompts, fixture, temperature)
    recall = None
    if not chain.ended:
        try:
            recall = recall_turn(caller, prompts, carrier.recall_carry(arm, chain),
                                 [f.label for f in fixture.asked], temperature,
                                 recall_max_tokens, carrier.recall_context(chain),
                                 carrier.recall_kept(chain, fixture))
        except BackendError as e:
            chain.infra_error = infra_error(e, "recall")
            log.error("%s recall failed: %s", sample.row_id, e)
        except BudgetExhausted as e:
            chain.budget_stop = e
    if chain.budget_stop is not None and not staged:
        raise chain.budget_stop
    record = run_record(caller, fixture, arm, temperature, chain, recall)
    # what the kind adds: its retained tokens, an index, the provider's compaction
    carrier.finish(record, backend, chain)
    if chain.budget_stop is not None:
        budget_stopped_record(record, chain.budget_stop)
    return record


def budget_stopped_record(record: RunRecord, stop: BudgetExhausted) -> None:
    """Mark (in place) a staged run the budget stopped: not_run:budget, the ledger's
    words kept, the folds it made (and paid) kept for the look's spend."""
    record.status, record.not_run_reason, record.not_run_detail = "not_run", BUDGET, str(stop)
    log.warning("%s stopped after %d folds: %s; recorded not_run:budget (a staged "
                "decision's look reads it as undecided at the budget)", record.row_id,
                len(record.folds), stop)


def not_run_record(sample: Sample, scenario: str, arm: Arm, reason: str, detail: str = ""
                   ) -> RunRecord:
    """A run job whose call was never made (e.g. the probe forbids the arm), saying why."""
    return RunRecord(
        status="not_run", not_run_reason=reason, not_run_detail=detail, row_id=sample.row_id,
        sweep=sample.sweep, scenario=scenario, model=sample.model, arm=arm.arm,
        repeat=sample.repeat, position=sample.position, arm_spec=arm.to_dict(),
    )


# -- the fold job (I/O at the edge) ----------------------------------------------------


def run_fold(
    fixture_path: str,
    arm: dict[str, Any],
    model_name: str,
    model: dict[str, Any],
    sample: dict[str, Any],
    prompts: Prompts,
    temperature: float,
    recall_max_tokens: int,
    store_dir: str,
    out: str,
    probe_path: str | None = None,
    replay: bool = False,
    lock: str | None = None,
    ledger: str | None = None,
    budget_usd: float | None = None,
    staged: bool = False,
) -> RunRecord:
    """One run job: every fold of one (sweep, model, arm, repeat), then recall.

    The model's probe verdict decides first: an arm it forbids makes no call and writes
    a record saying why (docs/design.md §9: no checkpoints, so the job exists either way).

    ledger, budget_usd (docs/design.md §6, Spend): every paid call is held to the study's
    budget; past it BudgetExhausted ends the job before the call and no record is written, so
    a rerun with a higher budget runs it again from the store. In a staged decision's sweep
    (staged) the job ends with a not_run:budget record instead, so the look after the
    stage can still give a verdict; every record there keeps the budget in force
    (validity.fold_budget reruns a stopped one when it is raised).
    """
    fixture = Fixture.from_dict(read_json(fixture_path))
    staged_budget = budget_usd if staged else None  # what every record here keeps
    arm_spec = Arm.from_dict(arm)
    probe = read_probe(probe_path) if probe_path else None
    if probe:
        perm = probe["permissions"].get(arm_spec.arm) or {
            "allowed": False, "verdict": "not_probed", "reason": "the probe did not cover it"}
        if not perm["allowed"]:
            record = not_run_record(Sample(**sample), fixture.scenario, arm_spec,
                                    perm["verdict"], perm.get("reason", ""))
            record.budget_usd = staged_budget
            write_json(record.to_dict(), out)
            log.info("%s not run: probe verdict %s (%s); no call made", record.row_id,
                     perm["verdict"], perm.get("reason", ""))
            return record
    t0 = time.monotonic()
    backend = make_backend(model_name, model, pin=probe["pin"] if probe else None,
                           replay=replay)
    # Every entry read is checked against the study's lock, where one pins the store.
    store = ResponseStore.for_job(store_dir, lock, replay,
                                  job_ledger(ledger, budget_usd, replay, store_dir))
    # Earlier attempts were kept only for an infrastructure-invalid row: this is its retry.
    earlier = _earlier_attempts(out)
    try:
        record = run_row(
            fixture, arm_spec, backend, store, prompts, Sample(**sample),
            temperature=temperature, recall_max_tokens=recall_max_tokens,
            recheck=bool(earlier) and not replay, staged=staged,
        )
    finally:
        backend.close()
    err = record.infra_error or {}
    if replay and err.get("kind") == "replay_miss":
        # A replay that cannot answer a call must fail, not record a different study.
        raise ReplayMiss(f"{record.row_id}: {err['message']}")
    record.wall_s = round(time.monotonic() - t0, 2)
    # The attempt count is what was kept of earlier, infrastructure-invalid attempts: the
    # rule's `attempt` param only decides that the job runs again (Snakemake deletes the
    # old record before the job starts, so the job cannot read it).
    record.previous_attempts = earlier
    record.attempt = len(record.previous_attempts) + 1
    record.budget_usd = staged_budget
    _keep_attempt(record, out)
    write_json(record.to_dict(), out)
    log.info("%s attempt %d done in %.1fs; response store: %d hits, %d misses",
             record.row_id, record.attempt, record.wall_s, store.hits, store.misses)
    return record


# -- retrying a row infrastructure broke (paper §3.3) -----------------------------------


def _earlier_attempts(record_path: str | Path) -> list[dict[str, Any]]:
    d = attempts_dir(record_path)
    files = sorted(d.glob("attempt-*.json"), key=lambda f: int(f.stem.split("-")[1]))
    return [read_json(f) for f in files]


def _keep_attempt(record: RunRecord, record_path: str | Path) -> None:
    """Save an infrastructure-invalid attempt before a retry replaces the record: the
    job's output is deleted when the job runs again, this copy is not."""
    valid, reason = validity(record)
    if valid or not retryable(reason):
        return
    summary = {"attempt": record.attempt, "invalid_reason": reason,
               "infra_error": record.infra_error, "wall_s": record.wall_s,
               "folds": [{"fold": f.fold, "request_key": f.request_key,
                          "store_hit": f.store_hit} for f in record.folds]}
    write_json(summary, attempts_dir(record_path) / f"attempt-{record.attempt}.json")


def fold_stage(input: Any, output: Any, params: Any, threads: int,
               budget_usd: float | None = None) -> RunRecord:
    """Rule fold: one run record, on the threads Snakemake granted (`threads:`, capped by
    --cores). They come from the script, not a `params` lambda: a callable param costs
    Snakemake an inspection per job, a third of the paper study's dry run. budget_usd
    comes from the script's config too (checked when the workflow loaded): as a param,
    raising it would rerun every finished run. A staged decision's run carries
    run["staged"] (wiring.runs.Runs.run_params), which only its sweeps' runs have."""
    run = params.run
    return run_fold(
        input.fixture, arm=run["arm"], model_name=run["sample"]["model"],
        model={**run["model"], "threads": threads}, sample=run["sample"],
        prompts=Prompts.from_files(input.fold_user, input.recall_system, input.recall_user),
        temperature=params.temperature,
        recall_max_tokens=params.recall_max_tokens, store_dir=params.store,
        out=output.record, probe_path=input.probe, replay=params.replay, lock=params.lock,
        ledger=params.ledger, budget_usd=budget_usd, staged="staged" in run,
    )
