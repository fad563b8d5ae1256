"""The capability probe (docs/design.md §5, paper §3.4 and §4.2): which arms may run on which
(model, endpoint, request), and why not — before any fold spends money.

The paper's worst error was a probe that blamed models for the harness's own request:
the gateway enforces require_parameters against every parameter on the wire, and a
reasoning-suppression parameter the folds did not need excluded every endpoint, which
read as "cannot do structured output" on eight models. So this probe
  1. lists the endpoints and picks (or checks) the pin: quantization, context at least
     what a fold needs, structured-output support, then price;
  2. sends the exact request shape each group of arms will send (the plain arms share
     one shape: no response_format; each schema sends its own);
  3. when a shape is refused, sends it again with one wire parameter removed at a time
     and names the parameter whose removal lets it through.
A verdict is about model + endpoint + request, never the model alone, and it is given
per arm: plain arms need no structured-output support.

A backend whose provider compacts on its own side (Backend.native_compaction: Anthropic's
on-demand compaction, OpenAI's compact endpoint) gets one minimal compaction request
more, after every shape: the record's `native_compaction` says whether the endpoint
compacts, by which mechanism and beta, and, refused, the parameter responsible (a beta
header the account or model lacks). It decides no plain arm's permission.

A study may name arms to probe on a model and never fold (the model config's
`probe_arms`; paper §4.2: qwen3.6-flash's schema verdict, while its sweep ran plain arms
only). Their shapes are sent after the folded arms' on the same pin, and their verdicts
are recorded beside the permissions, never in them: the pin, the context floor, each
folded shape's budget and every permission are what they would be without them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from ..backends.base import (
    Backend,
    BackendError,
    ChatRequest,
    ContextOverflow,
    grammar_schema,
    served_by_other,
)
from ..backends.call import cached_complete
from ..backends.ledger import job_ledger
from ..backends.retry import read_with_retries
from ..backends.store import ResponseStore
from ..carriers.native import (  # noqa: F401 - the probe's verdicts, named here too
    NATIVE_UNSUPPORTED,
    native_permission,
)
from ..carriers.registry import carrier_of
from ..io import canonical_json, read_json, write_json
from ..study.arm import Arm
from ..study.capacity import required_context_tokens
from .pin import DEFAULT_PIN_RULE, PinRule, pick_endpoint
from .verdicts import (
    AUTH_FAILED,
    CONTEXT_TOO_SHORT,
    INSUFFICIENT_CREDITS,
    MODEL_NOT_FOUND,
    NATIVE_NOT_RETURNED,
    NATIVE_REFUSED,
    NO_ENDPOINT_FOR_PARAMETERS,
    OK,
    REASONING_NOT_DISABLEABLE,
    SCHEMA_NONCONFORMING,
    SERVED_BY_OTHER,
    TRANSIENT_KINDS,
    UNREACHABLE,
)

log = logging.getLogger(__name__)

PROBE_USER = ("This is a capability probe before a long run. Reply in one short line. "
              "If a JSON schema is enforced, fill every field with a short phrase.")
# The probe's compaction: a system prompt, a chunk with two identifiers, and an output
# budget a short summary fits in (what the ledger holds the call to).
PROBE_COMPACTION_SYSTEM = "You compact an operations session; keep every identifier."
PROBE_COMPACTION_CHUNK = ("Capability probe before a long run. The relay listens on port "
                          "48213 and its signing key is kx-7Q2M-93LD.")
PROBE_COMPACTION_MAX_TOKENS = 1024


@dataclass(frozen=True)
class Shape:
    """One request shape the folds send: the plain arms share one, each schema its own."""

    name: str
    arms: tuple[str, ...]
    system_prompt: str
    max_tokens: int
    schema: dict[str, Any] | None
    schema_name: str

    def request(self, temperature: float, seed: int) -> ChatRequest:
        return ChatRequest(
            messages=({"role": "system", "content": self.system_prompt},
                      {"role": "user", "content": PROBE_USER}),
            max_tokens=self.max_tokens, temperature=temperature, seed=seed,
            response_schema=self.schema, schema_name=self.schema_name)


PROBE_ARMS_SHAPE = "probe_arms:"  # the name prefix of a shape of probe_arms only


def shapes_for(arms: list[Arm], prefix: str = "") -> list[Shape]:
    """Group the arms by what they put on the wire; each group's largest fold budget.

    The budget matters: max_tokens alone can exclude an endpoint (docs/design.md §4, gateway
    A2).
    """
    groups: dict[str, list[Arm]] = {}
    for a in arms:
        groups.setdefault("plain" if a.schema is None else f"schema:{a.schema_name}",
                          []).append(a)
    out = []
    for name, members in sorted(groups.items()):
        first = max(members, key=lambda a: a.fold_budget_tokens)
        out.append(Shape(name=prefix + name, arms=tuple(sorted(a.arm for a in members)),
                         system_prompt=first.system_prompt,
                         max_tokens=first.fold_budget_tokens, schema=first.schema,
                         schema_name=f"arm_{first.arm}"))
    return out


def _conforms(text: str, schema: dict[str, Any]) -> str:
    """'' when the reply is JSON of the schema's structure, else what is wrong."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return f"reply is not JSON ({e.msg})"
    errs = list(jsonschema.Draft202012Validator(grammar_schema(schema)).iter_errors(obj))
    return "; ".join(e.message for e in errs[:3])


def _global_verdict(e: BackendError) -> tuple[str, str] | None:
    """A failure that is about the account or the route, not the request."""
    if e.kind == "auth":
        return AUTH_FAILED, e.message
    if e.kind == "insufficient_credits":
        return INSUFFICIENT_CREDITS, e.message
    if e.kind in TRANSIENT_KINDS:
        return UNREACHABLE, f"{e.kind}: {e.message}"
    if isinstance(e, ContextOverflow):
        return CONTEXT_TOO_SHORT, e.message
    return None


Bought = dict[str, dict[str, Any]]


def _attempt(backend: Backend, store: ResponseStore, request: ChatRequest,
             sample: dict[str, Any], bought: Bought | None = None) -> dict[str, Any]:
    """One probe call, through the store. bought: the replies this probe already got, by
    canonical wire body. The probe's variants differ in sample identity (the store's
    key), yet some put the very same body on the wire (the §4.2 re-probe without
    reasoning and a removal of `reasoning`, or a removal on that re-probe): such a body
    is served from its first reply, never bought twice."""
    body = backend.wire_body(request)
    wire = canonical_json(body) if body is not None and bought is not None else None
    if wire is not None and bought is not None and wire in bought:
        return bought[wire]
    try:
        reply, hit, key = cached_complete(backend, store, request, sample)
    except BackendError as e:
        if e.kind == "replay_miss":
            raise  # a replay that cannot answer must fail, not invent a verdict
        return {"ok": False, "kind": e.kind, "message": e.message, "error": e,
                "attempts": e.detail.get("attempts", [])}
    out = {"ok": True, "reply": reply, "store_hit": hit, "key": key,
           "attempts": reply.attempts}
    if wire is not None and bought is not None:
        bought[wire] = out
    return out


def _public(a: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in a.items() if k not in ("error", "reply")}
    if a.get("reply") is not None:
        r = a["reply"]
        out["reply"] = {"finish_reason": r.finish_reason, "served_by": r.served_by,
                        "prompt_tokens": r.prompt_tokens,
                        "completion_tokens": r.completion_tokens, "cost_usd": r.cost_usd,
                        "text": r.text[:300], "served": r.served}
    return out


def probe_shape(backend: Backend, store: ResponseStore, model: str, shape: Shape,
                temperature: float, seed: int, reasoning_mandatory: bool,
                bought: Bought | None = None) -> dict[str, Any]:
    """One shape: the exact request, then one parameter removed at a time if refused."""
    request = shape.request(temperature, seed)
    params = backend.wire_parameters(request)
    sample = {"probe": model, "shape": shape.name}
    first = _attempt(backend, store, request, sample, bought)
    result: dict[str, Any] = {"shape": shape.name, "arms": list(shape.arms),
                              "request_parameters": params, "max_tokens": shape.max_tokens,
                              "exact_request": _public(first), "removed": []}
    if first["ok"]:
        reply = first["reply"]
        # reported, never a verdict: a fallback answers one turn's refusal, and each
        # row that holds one is judged by the validity rule (served_by_other)
        result["served_by_other"] = served_by_other(reply.served)
        pin = backend.identity.get("pin")
        if pin and reply.served_by != pin:
            return {**result, "verdict": SERVED_BY_OTHER,
                    "reason": f"served by {reply.served_by!r}, pinned {pin!r}"}
        if reply.raw.get("reasoning_tokens") or reply.raw.get("reasoning_returned"):
            # The protocol measures folds without reasoning (paper §4.2): reasoning that
            # runs anyway, asked off or not, makes the endpoint unusable for it.
            return {**result, "verdict": REASONING_NOT_DISABLEABLE, "responsible_parameter":
                    "reasoning", "reason": "reasoning ran although the study runs without "
                    "it" + ("" if backend.identity.get("reasoning") else
                            " (no reasoning parameter was sent: the endpoint declares none, "
                            "or the server needs its own switch, e.g. chat_template_kwargs)")}
        if shape.schema is not None and reply.finish_reason != "length":
            wrong = _conforms(reply.text, shape.schema)
            if wrong:
                return {**result, "verdict": SCHEMA_NONCONFORMING, "reason": wrong}
        note = "" if reply.finish_reason != "length" or shape.schema is None else (
            "reply hit max_tokens; its structure was not judged")
        return {**result, "verdict": OK, "reason": note}
    err: BackendError = first["error"]
    g = _global_verdict(err)
    if g:
        return {**result, "verdict": g[0], "reason": g[1], "global": True}
    # Refused for this request: find the parameter responsible, one removal at a time.
    responsible = []
    for p in params:
        a = _attempt(backend.without({p}), store, request, {**sample, "omit": p}, bought)
        result["removed"].append({"parameter": p, **_public(a)})
        if a["ok"]:
            responsible.append(p)
    if err.kind == "reasoning_mandatory" or ("reasoning" in responsible and reasoning_mandatory):
        return {**result, "verdict": REASONING_NOT_DISABLEABLE,
                "responsible_parameter": "reasoning",
                "reason": f"{err.kind}: {err.message}; reasoning is mandatory on this endpoint"}
    if responsible:
        return {**result, "verdict": NO_ENDPOINT_FOR_PARAMETERS,
                "responsible_parameter": ",".join(responsible),
                "reason": f"{err.kind}: {err.message}; accepted once "
                          f"{' or '.join(responsible)} was removed"}
    return {**result, "verdict": NO_ENDPOINT_FOR_PARAMETERS, "responsible_parameter": "",
            "reason": f"{err.kind}: {err.message}; no single parameter's removal helped"}


def probe_model(model: str, backend: Backend, store: ResponseStore, arms: list[Arm],
                required_context: int, temperature: float, seed: int,
                model_cfg: dict[str, Any], rule: PinRule = DEFAULT_PIN_RULE,
                probe_arms: list[Arm] | None = None) -> dict[str, Any]:
    """Probe one model's endpoint with every request shape its arms send, then the
    shapes of its probe_arms (never folded: recorded, deciding nothing).

    An arm whose carrier sends no fold shape of its own (carriers/base.py
    `sends_fold_shape`: the native arm, whose folds are compaction requests) is given the
    permission its carrier says (the native arm's: the native_compaction verdict)."""
    shapeless = [a for a in arms if not carrier_of(a).sends_fold_shape]
    arms = [a for a in arms if carrier_of(a).sends_fold_shape]
    shapes = shapes_for(arms)
    extra = shapes_for(probe_arms or [], PROBE_ARMS_SHAPE)
    record: dict[str, Any] = {
        "model": model, "backend": model_cfg["backend"], "required_context_tokens":
        required_context, "pin": None, "shapes": [], "verdict": OK, "reason": "",
        "responsible_parameter": "", "price_prompt_usd_per_token": None,
        "price_completion_usd_per_token": None, "context_length": None,
    }
    bought: Bought = {}  # every body this probe bought, by wire text: none is bought twice
    backend, fail, reasoning_mandatory = _endpoint(backend, model_cfg, required_context,
                                                   shapes, record, rule)
    record["endpoint"] = backend.identity
    if fail is None:
        fail = _probe_shapes(backend, store, model, (shapes, extra), (temperature, seed),
                             reasoning_mandatory, bought, record)
    record["probe_arms"] = probe_arm_verdicts(extra, record["shapes"], fail)
    if backend.native_compaction:
        record["native_compaction"] = probe_compaction(backend, store, model, temperature,
                                                       fail, bought)
    record["permissions"] = _permissions(shapes, shapeless, record, fail, model_cfg["backend"])
    _overall_verdict(record, fail)
    if fail is None and backend.lists_endpoints and shapes:
        record["reasoning_parameter"] = reasoning_comparison(
            backend, store, model, shapes, record["shapes"], temperature, seed,
            reasoning_mandatory, bought)
    for r in record["shapes"]:
        r.pop("global", None)
    record["served_by_other"] = fell_back(record)
    return record


def _endpoint(backend: Backend, model_cfg: dict[str, Any], required_context: int,
              shapes: list[Shape], record: dict[str, Any], rule: PinRule
              ) -> tuple[Backend, tuple[str, str] | None, bool]:
    """(the backend to probe, the verdict that ends the probe before any shape or None,
    whether reasoning is mandatory): a gateway's endpoint listed and pinned (_pin), or a
    direct backend's context, prices and key read; both said in the record."""
    if backend.lists_endpoints:
        return _pin(backend, model_cfg, required_context, any(s.schema for s in shapes),
                    record, rule)
    n_ctx = backend.context_length
    record["context_length"] = n_ctx
    record["price_prompt_usd_per_token"], record["price_completion_usd_per_token"] = \
        backend.listed_prices() or (None, None)
    if problem := backend.missing_key():
        return backend, (AUTH_FAILED, f"{problem}; no call was made"), False
    if n_ctx and int(n_ctx) < required_context:
        return backend, (CONTEXT_TOO_SHORT,
                         f"n_ctx {n_ctx} < {required_context} tokens a fold needs"), False
    return backend, None, False


def _probe_shapes(backend: Backend, store: ResponseStore, model: str,
                  shapes: tuple[list[Shape], list[Shape]], sampling: tuple[float, int],
                  reasoning_mandatory: bool, bought: Bought, record: dict[str, Any]
                  ) -> tuple[str, str] | None:
    """Send each folded shape, then the probe_arms' shapes, into record["shapes"]; the
    verdict of a shape that speaks for the whole endpoint (auth, credits, the route)
    stops the probe and is returned."""
    folded, extra = shapes
    temperature, seed = sampling
    for shape in folded:
        res = probe_shape(backend, store, model, shape, temperature, seed,
                          reasoning_mandatory, bought)
        record["shapes"].append(res)
        log.info("%s %s (arms %s): %s %s", model, shape.name, "".join(shape.arms),
                 res["verdict"], res.get("reason", ""))
        if res.get("global"):
            return res["verdict"], res["reason"]
    # After the folded shapes, so none of their replies or verdicts depends on these;
    # a fault here (even one about the route) is this shape's verdict only.
    for shape in extra:
        res = probe_shape(backend, store, model, shape, temperature, seed,
                          reasoning_mandatory, bought)
        record["shapes"].append(res)
        log.info("%s %s (probe_arms %s, never folded): %s %s", model, shape.name,
                 "".join(shape.arms), res["verdict"], res.get("reason", ""))
    return None


def _permissions(shapes: list[Shape], shapeless: list[Arm], record: dict[str, Any],
                 fail: tuple[str, str] | None, backend_kind: str
                 ) -> dict[str, dict[str, Any]]:
    """Each folded arm's permission from its shape's verdict (or the probe's failure),
    then each shapeless arm's as its carrier gives it from the record."""
    permissions: dict[str, dict[str, Any]] = {}
    for shape in shapes:
        res = next((r for r in record["shapes"] if r["shape"] == shape.name), None)
        for a in shape.arms:
            if fail is not None:
                permissions[a] = {"allowed": False, "verdict": fail[0], "reason": fail[1]}
            else:
                assert res is not None
                permissions[a] = {"allowed": res["verdict"] == OK, "verdict": res["verdict"],
                                  "reason": res.get("reason", ""),
                                  "responsible_parameter": res.get("responsible_parameter", "")}
    if fail is not None:  # said before the shapeless arms' permissions, which read it
        record["verdict"], record["reason"] = fail
    for a in shapeless:
        perm = carrier_of(a).permission(record, backend_kind)
        if perm is not None:
            permissions[a.arm] = perm
    return dict(sorted(permissions.items()))


def _overall_verdict(record: dict[str, Any], fail: tuple[str, str] | None) -> None:
    """The record's own verdict: the failure that ended the probe, else the first refused
    shape's, the plain shape's first."""
    if fail is not None:
        record["verdict"], record["reason"] = fail
        return
    bad = [r for r in record["shapes"] if r["verdict"] != OK]
    plain_bad = [r for r in bad if r["shape"] == "plain"]
    worst = (plain_bad or bad or [None])[0]
    if worst is not None:
        record["verdict"] = worst["verdict"]
        record["reason"] = worst.get("reason", "")
        record["responsible_parameter"] = worst.get("responsible_parameter", "")


def fell_back(record: dict[str, Any]) -> dict[str, str]:
    """Each probe request another model served, by shape (`native_compaction` for the
    compaction): what the response said served it (a provider's fallback, a gateway's
    substitute). Empty where every reply was the model's own."""
    said = {r["shape"]: r.get("served_by_other", "") for r in record["shapes"]}
    said["native_compaction"] = (record.get("native_compaction") or {}).get(
        "served_by_other", "")
    return {shape: other for shape, other in sorted(said.items()) if other}


def probe_compaction(backend: Backend, store: ResponseStore, model: str, temperature: float,
                     fail: tuple[str, str] | None, bought: Bought | None = None
                     ) -> dict[str, Any]:
    """The native compaction verdict: one minimal compaction request (no previous item,
    one short chunk), or the failure that stopped the probe before it. `allowed` is what
    a native arm on this model may read."""
    out: dict[str, Any] = {"mechanism": backend.native_compaction,
                           "beta": backend.compaction_beta or "",
                           "chunk_presented_as": backend.chunk_presented_as,
                           "compacts": False, "opaque": None, "retained_tokens": None,
                           "responsible_parameter": ""}
    if fail is not None:
        return {**out, "verdict": fail[0], "reason": fail[1], "allowed": False}
    request = backend.compaction_request(None, PROBE_COMPACTION_CHUNK, PROBE_COMPACTION_SYSTEM,
                                         PROBE_COMPACTION_MAX_TOKENS, temperature)
    a = _attempt(backend, store, request, {"probe": model, "shape": "native_compaction"},
                 bought)
    out |= {"request_parameters": backend.wire_parameters(request),
            "exact_request": _public(a)}
    if a["ok"]:
        out["served_by_other"] = served_by_other(a["reply"].served)
        c = backend.compaction_of(a["reply"])
        if c.item is None:
            out |= {"verdict": NATIVE_NOT_RETURNED, "reason": c.failure}
        else:
            out |= {"verdict": OK, "reason": "", "compacts": True, "opaque": c.opaque,
                    "retained_tokens": c.retained_tokens, "answered_by": c.item_shape()}
    else:
        err: BackendError = a["error"]
        g = _global_verdict(err)
        responsible = "" if g else backend.refused_parameter(err)
        out |= {"verdict": g[0] if g else NATIVE_REFUSED,
                "reason": g[1] if g else f"{err.kind}: {err.message}",
                "responsible_parameter": responsible}
    log.info("%s native compaction (%s%s): %s %s", model, out["mechanism"],
             f", beta {out['beta']}" if out["beta"] else "", out["verdict"],
             out["responsible_parameter"] or out["reason"])
    return {**out, "allowed": out["verdict"] == OK}


def probe_arm_verdicts(extra: list[Shape], results: list[dict[str, Any]],
                       fail: tuple[str, str] | None) -> dict[str, dict[str, Any]]:
    """Each probe arm's verdict, by arm: what its shape got, or the failure that stopped
    the probe before it was sent. Not a permission: no fold reads it."""
    out: dict[str, dict[str, Any]] = {}
    for shape in extra:
        res = next((r for r in results if r["shape"] == shape.name), None)
        for a in shape.arms:
            if res is None:
                assert fail is not None
                out[a] = {"verdict": fail[0], "reason": fail[1], "responsible_parameter": ""}
            else:
                out[a] = {"verdict": res["verdict"], "reason": res.get("reason", ""),
                          "responsible_parameter": res.get("responsible_parameter", "")}
    return dict(sorted(out.items()))


def reasoning_comparison(backend: Backend, store: ResponseStore, model: str,
                         shapes: list[Shape], results: list[dict[str, Any]],
                         temperature: float, seed: int, reasoning_mandatory: bool,
                         bought: Bought | None = None) -> dict[str, Any]:
    """The §4.2 re-probe: one request shape with and without the reasoning parameter.

    Paper §4.2: "Re-probed with that parameter relaxed, eight models return JSON
    conforming to a strict schema." The study's own request is one of the two (the
    parameter is sent only where the endpoint declares reasoning); the other is sent
    once here, so the verdict table shows both for every gateway model.
    """
    shape = next((s for s in shapes if s.schema is not None), shapes[0])
    own = next(r for r in results if r["shape"] == shape.name)
    sent = bool(backend.identity.get("reasoning"))
    other_backend = backend.without({"reasoning"}) if sent else backend.with_reasoning_forced()
    other = probe_shape(other_backend, store, model, shape, temperature, seed,
                        reasoning_mandatory, bought)
    with_r, without_r = (own, other) if sent else (other, own)
    return {"shape": shape.name,
            "with": {"verdict": with_r["verdict"], "reason": with_r.get("reason", ""),
                     "responsible_parameter": with_r.get("responsible_parameter", "")},
            "without": {"verdict": without_r["verdict"],
                        "reason": without_r.get("reason", ""),
                        "responsible_parameter": without_r.get("responsible_parameter", "")},
            "study_sends_reasoning": sent}


def _pin(backend: Backend, cfg: dict[str, Any], required_context: int, needs_schema: bool,
         record: dict[str, Any], rule: PinRule) -> tuple[Backend, tuple[str, str] | None, bool]:
    """List the gateway's endpoints, pick or check the pin, pin the backend to it."""
    problem = backend.missing_key()
    if problem:
        return backend, (AUTH_FAILED, f"{problem}; no call was made"), False
    try:  # free reads: a transient fault is retried, never a verdict
        endpoints = read_with_retries(backend.list_endpoints, backend.retry_policy)
        info = read_with_retries(backend.model_info, backend.retry_policy) or {}
    except BackendError as e:
        g = _global_verdict(e)
        if e.kind == "not_found":
            return backend, (MODEL_NOT_FOUND, e.message), False
        return backend, g or (UNREACHABLE, f"{e.kind}: {e.message}"), False
    mandatory = bool((info.get("reasoning") or {}).get("mandatory"))
    record["endpoints_listed"] = [
        {k: e.get(k) for k in ("tag", "provider_name", "quantization", "context_length",
                               "supported_parameters", "pricing", "status")} for e in endpoints]
    record["reasoning_mandatory"] = mandatory
    ep, verdict, reason = pick_endpoint(endpoints, cfg.get("provider"), cfg.get("quantization"),
                                        required_context, needs_schema, rule)
    if ep is None:
        return backend, (verdict, reason), mandatory
    pin = backend.endpoint_pin(ep)
    record["pin"] = pin
    record["context_length"] = pin["context_length"]
    record["price_prompt_usd_per_token"] = pin["price_prompt_usd_per_token"]
    record["price_completion_usd_per_token"] = pin["price_completion_usd_per_token"]
    return backend.pinned(pin), None, mandatory


# -- entry points (I/O at the edge; the rules' scripts call these) ------------------


def pins_path(store_dir: str | Path, model: str) -> Path:
    """Where a live probe leaves its pin, so a replay pins the same endpoint offline."""
    return Path(store_dir) / "pins" / f"{model}.json"


def run_probe(fixture_paths: list[str], model: str, model_cfg: dict[str, Any],
              arm_dicts: list[dict[str, Any]], temperature: float, store_dir: str,
              replay: bool, out: str, rule: PinRule = DEFAULT_PIN_RULE,
              probe_only: bool = False, lock: str | None = None,
              probe_arm_dicts: list[dict[str, Any]] | None = None,
              ledger: str | None = None, budget_usd: float | None = None
              ) -> dict[str, Any]:
    """One probe job: results/probe/{model}.json.

    ledger, budget_usd: the probe's calls are paid like the folds' and held to the same
    budget (docs/design.md §6, Spend); past it the job stops before the call and writes no verdict.

    probe_only: the model is in no sweep (paper §4.2's re-probe): a verdict and no row.
    probe_arm_dicts: the model's probe_arms, probed and never folded; the context a fold
    needs is sized by the folded arms alone.
    """
    from ..backends import make_backend
    from ..study.fixtures import CHARS_PER_TOKEN

    arms = [Arm.from_dict(d) for d in arm_dicts]
    extra = [Arm.from_dict(d) for d in probe_arm_dicts or []]
    chunk_chars = max(len(c) for p in fixture_paths for c in read_json(p)["chunks"])
    required = required_context_tokens(chunk_chars, arms, CHARS_PER_TOKEN)
    store = ResponseStore.for_job(store_dir, lock, replay,
                                  job_ledger(ledger, budget_usd, replay, store_dir))
    pin = None
    if replay and pins_path(store_dir, model).is_file():
        pin = read_json(pins_path(store_dir, model))
    try:
        backend = make_backend(model, model_cfg, pin=pin, replay=replay)
    except BackendError as e:
        record = {"model": model, "backend": model_cfg["backend"], "verdict": UNREACHABLE,
                  "reason": f"{e.kind}: {e.message}", "responsible_parameter": "",
                  "required_context_tokens": required, "pin": None, "shapes": [],
                  "permissions": {a.arm: {"allowed": False, "verdict": UNREACHABLE,
                                          "reason": e.message} for a in arms},
                  "probe_arms": {a.arm: {"verdict": UNREACHABLE, "reason": e.message,
                                         "responsible_parameter": ""} for a in extra},
                  "probe_only": probe_only}
        write_json(record, out)
        log.error("%s: %s", model, record["reason"])
        return record
    try:
        record = probe_model(model, backend, store, arms, required, temperature, seed=1,
                             model_cfg=model_cfg, rule=rule, probe_arms=extra)
    finally:
        backend.close()
    record["probe_only"] = probe_only
    if replay and pin:
        record["pin"] = pin
    if record.get("pin") and not replay:
        write_json(record["pin"], pins_path(store_dir, model))
    write_json(record, out)
    allowed = [a for a, p in record["permissions"].items() if p["allowed"]]
    log.info("%s: %s%s; arms allowed: %s; response store: %d hits, %d misses", model,
             record["verdict"], f" ({record['reason']})" if record["reason"] else "",
             "".join(allowed) or "none", store.hits, store.misses)
    return record


def probe_model_stage(input: Any, output: Any, params: Any, threads: int,
                      budget_usd: float | None = None) -> dict[str, Any]:
    """Rule probe_model: one model's verdicts, on the threads Snakemake granted; every
    call held to budget_usd (from the script's config, as in rule fold)."""
    return run_probe(list(input.fixtures), params.name,
                     {**params.model, "threads": threads}, params.arms,
                     temperature=params.temperature, store_dir=params.store,
                     replay=params.replay, out=output.verdicts,
                     rule=PinRule.from_config(params.pin_rule), probe_only=params.probe_only,
                     lock=params.lock, probe_arm_dicts=params.probe_arms,
                     ledger=params.ledger, budget_usd=budget_usd)
