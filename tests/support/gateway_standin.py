"""A loopback stand-in for the hosted gateway, speaking its documented wire format.

Allowed only because the gateway itself cannot be reached from here. It implements, per
the gateway's public API reference as docs/design.md §4 lists it (A1-A6):
  GET  /api/v1/models                                 (A5)
  GET  /api/v1/models/{author}/{slug}/endpoints       (A5)
  POST /api/v1/chat/completions                       (A1, A2 routing, A4, A6 errors)
  GET  /api/v1/generation?id=                         (A4)
Routing follows A2: `only`/`order` by tag or base slug, `allow_fallbacks`,
`quantizations`, `max_tokens` <= max_completion_tokens, and `require_parameters`, which
keeps only endpoints whose supported_parameters hold every parameter on the wire; none
left -> 404 "No endpoints found that can handle the requested parameters.". Errors use
the envelope {"error": {"code", "message", "metadata"}}. Tests script faults per call
(429 with Retry-After, 5xx, HTTP 200 with finish_reason "error", malformed or truncated
bodies, delays past the client's timeout) with `queue_faults`, or draw them at random
with `inject_faults(rate, seed, stall_s)`: a seeded Random, under the lock, decides per
chat call with no queued fault pending whether it faults, and the class comes from a
shuffled cycle of FAULT_CLASSES, so every class turns up once per len(FAULT_CLASSES)
faults however the dice fall. `injected` counts what was served, by class.

What is billed. The stand-in bills a call when it generated a completion: `complete()`
created a generation id and answered 200. `billed` keeps the body of every such call,
whatever the client did with the reply afterwards, and `billed_usd` what each cost: the
listed price times the endpoint's `cost_factor` (1 unless a test misprices it), reported
as usage.cost. The reference (A4, A6) is silent on
whether a provider failure inside HTTP 200 (finish_reason "error") or a body cut off in
transit costs credits, so the stand-in takes the reading its code path gives: those
faults, like the 429/5xx statuses and the malformed body, answer before `complete()`
runs and are not billed, except a finish_error fault queued with a `cost`: that error
reply reports usage.cost and is billed it (a gateway that charges for a failed call).
An endpoint's `prompt_factor` reports (and bills) that many times the prompt tokens of
the 4-characters-a-token count, as identifier-dense text would. (A live body cut off
in transit was likely generated, and then billed like the late completion below; the
stand-in's truncated body stands for a drop before anything was generated.) Two delays
differ on purpose:
  {"stall": s}  the upstream produces nothing for s seconds, then the connection closes:
                nothing was generated, nothing is billed. This is the random mode's
                "delay past the client's timeout".
  {"sleep": s}  a slow generation: after s seconds it is completed and billed even if
                the client gave up. A client that timed out cannot know that, so its
                retry pays for the same body twice (docs/design.md §4, gateway A4:
                aborting stops billing "only for supported providers"). No client can
                avoid that cost, so the random mode never draws it: a test of "never
                billed twice" would measure the gateway, not the client.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# Parameters require_parameters checks (A2: every OpenAI-style sampling/format parameter).
CHECKED_PARAMETERS = ("temperature", "seed", "max_tokens", "top_p", "stop", "tools",
                      "tool_choice", "frequency_penalty", "presence_penalty", "reasoning")
NO_ENDPOINTS = "No endpoints found that can handle the requested parameters."
# Every parameter a fold or probe may send: an endpoint declaring these refuses nothing.
ALL_PARAMETERS = ("max_tokens", "temperature", "seed", "response_format",
                  "structured_outputs", "reasoning")
# Every infrastructure fault class the random mode draws, by name (A6 statuses, A4's
# error inside HTTP 200, two broken bodies, a stall). "stall" gets its seconds from
# inject_faults: past the client's timeout, which only the test knows.
FAULT_CLASSES: dict[str, dict[str, Any]] = {
    "rate_limited": {"status": 429, "retry_after": 1},
    "server_500": {"status": 500},
    "server_502": {"status": 502},
    "server_503": {"status": 503},
    "finish_error": {"finish_error": True},
    "malformed": {"malformed": True},
    "truncated": {"truncated": True},
    "stall": {"stall": None},
}


def fault_class(fault: dict[str, Any]) -> str:
    """The name a fault dict is counted under in `Standin.injected` ("" for no fault)."""
    for name in ("stall", "sleep", "truncated", "malformed", "finish_error", "served_by",
                 "served_model"):
        if fault.get(name):
            return name
    if "status" in fault:
        return {429: "rate_limited"}.get(fault["status"], f"server_{fault['status']}")
    return ""


def canonical(body: dict[str, Any]) -> str:
    """One text per request body, whatever the key order: what "identical" means."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def rows_by_id(path: Any) -> dict[str, dict[str, str]]:
    """rows.csv of a stand-in study, by row_id."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return {r["row_id"]: r for r in csv.DictReader(f)}


@dataclass
class Endpoint:
    provider_name: str
    tag: str
    quantization: str = "fp8"
    context_length: int = 131072
    max_completion_tokens: int = 16384
    supported_parameters: tuple[str, ...] = ("max_tokens", "temperature", "seed",
                                             "response_format", "structured_outputs")
    price_prompt: str = "0.0000002"
    price_completion: str = "0.0000008"
    status: int = 0
    reasoning_mandatory: bool = False
    # The one real schema failure of the paper: JSON that omits a required property.
    omits_required: bool = False
    # Reasoning that runs whatever the request says (the message carries `reasoning`).
    returns_reasoning: bool = False
    # What a call really costs against its listed price (usage.cost = listed x this):
    # a mispriced endpoint, whose ledger must learn the ratio (docs/design.md §6, Spend).
    cost_factor: float = 1.0
    # How many times the 4-characters-a-token count it reports as prompt_tokens (and
    # bills): identifier-dense text runs well past that estimate (paper §6).
    prompt_factor: float = 1.0

    def listing(self, model_id: str) -> dict[str, Any]:
        return {
            "name": f"{self.provider_name} | {model_id}",
            "model_name": model_id,
            "provider_name": self.provider_name,
            "tag": self.tag,
            "context_length": self.context_length,
            "max_completion_tokens": self.max_completion_tokens,
            "max_prompt_tokens": None,
            "quantization": self.quantization,
            "supported_parameters": list(self.supported_parameters),
            "pricing": {"prompt": self.price_prompt, "completion": self.price_completion},
            "status": self.status,
            "uptime_last_30m": 99.5,
            "supports_implicit_caching": False,
        }


@dataclass
class Model:
    id: str
    endpoints: list[Endpoint]
    reasoning_mandatory: bool = False


@dataclass
class Standin:
    models: dict[str, Model]
    key: str = "sk-or-v1-standin"
    credits: bool = True
    faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # GET faults by path prefix ("models", "generation"): {"status": 502} and the like
    get_faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    gets: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    generations: dict[str, dict[str, Any]] = field(default_factory=dict)
    omit_provider_field: bool = False
    # What a completion says, when a test gives it (body -> content); None: the
    # stand-in's own conforming reply (tests/support/reply_shapes.py writes one).
    reply: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # When each chat call arrived (time.monotonic), parallel to `calls`.
    call_times: list[float] = field(default_factory=list)
    # The body of every call a completion was generated for (see the module docstring).
    billed: list[dict[str, Any]] = field(default_factory=list)
    # ... and what each cost (usage.cost), parallel to `billed`
    billed_usd: list[float] = field(default_factory=list)
    # Faults served, queued or drawn, by fault_class name; and (time, class, body) each.
    injected: Counter[str] = field(default_factory=Counter)
    fault_log: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    fault_rate: float = 0.0
    stall_s: float = 0.0
    _rng: random.Random = field(default_factory=lambda: random.Random(0))
    # GETs (listings, generation stats) fault at get_fault_rate, from their own draws so
    # the chat calls' sequence is the same with or without them; counted by status
    get_fault_rate: float = 0.0
    injected_get: Counter[int] = field(default_factory=Counter)
    # ... and by the GET's first path segment ("models", "generation")
    injected_get_paths: Counter[str] = field(default_factory=Counter)
    _get_rng: random.Random = field(default_factory=lambda: random.Random(0))
    _cycle: list[str] = field(default_factory=list)

    def lookups(self, since: int = 0) -> int:
        """GET /generation requests (generation-stats lookups) from the `since`-th GET on."""
        return sum(g.startswith("generation") for g in self.gets[since:])

    def queue_faults(self, model_id: str, faults: list[dict[str, Any]]) -> None:
        with self.lock:
            self.faults.setdefault(model_id, []).extend(faults)

    def queue_get_faults(self, prefix: str, faults: list[dict[str, Any]]) -> None:
        """Faults for the next GETs whose path (after /api/v1/) starts with `prefix` (the
        longest queued prefix that matches wins): listings and generation stats fail
        like chat calls do (A6 envelope)."""
        with self.lock:
            self.get_faults.setdefault(prefix, []).extend(faults)

    def inject_faults(self, rate: float, seed: int, stall_s: float, get_rate: float = 0.0
                      ) -> None:
        """Fault a fraction `rate` of chat calls, drawn from `seed`, over every class, and
        a fraction `get_rate` of GETs with a 429 (Retry-After 1 s) or a 5xx.

        stall_s should exceed the client's timeout, so a stall is a client timeout.
        """
        with self.lock:
            self.fault_rate, self.stall_s = rate, stall_s
            self._rng, self._cycle = random.Random(seed), []
            self.get_fault_rate, self._get_rng = get_rate, random.Random(seed + 1)

    def next_get_fault(self, rel: str = "") -> dict[str, Any] | None:
        """A GET fault drawn at get_fault_rate for the path `rel` (after /api/v1/; the
        caller holds the lock)."""
        if not self.get_fault_rate or self._get_rng.random() >= self.get_fault_rate:
            return None
        status = self._get_rng.choice([429, 500, 502, 503])
        self.injected_get[status] += 1
        self.injected_get_paths[rel.split("/")[0]] += 1
        return {"status": status, **({"retry_after": 1} if status == 429 else {})}

    def next_fault(self, model_id: str) -> dict[str, Any] | None:
        """The queued fault for this call, or else one drawn at fault_rate (under the lock,
        so concurrent calls never share a draw)."""
        with self.lock:
            queue = self.faults.get(model_id, [])
            if queue:
                return queue.pop(0)
            if not self.fault_rate or self._rng.random() >= self.fault_rate:
                return None
            if not self._cycle:
                self._cycle = list(FAULT_CLASSES)
                self._rng.shuffle(self._cycle)
            fault = dict(FAULT_CLASSES[self._cycle.pop()])
            if "stall" in fault:
                fault["stall"] = self.stall_s
            return fault

    def chat_calls(self, model_id: str | None = None) -> list[dict[str, Any]]:
        return [c for c in self.calls if model_id is None or c.get("model") == model_id]


def _error(code: int, message: str, **metadata: Any) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if metadata:
        err["metadata"] = metadata
    return {"error": err}


def _matches(ep: Endpoint, slug: str) -> bool:
    """A2: a base slug matches every variant; a full slug pins one."""
    s = slug.lower()
    return ep.tag.lower() == s or ep.tag.lower().split("/")[0] == s


def _needed_parameters(body: dict[str, Any]) -> set[str]:
    need = {p for p in CHECKED_PARAMETERS if p in body}
    rf = body.get("response_format")
    if isinstance(rf, dict):
        need.add("response_format")
        if rf.get("type") == "json_schema":
            need.add("structured_outputs")
    return need


def _conforming(schema: dict[str, Any], omit_required: bool) -> dict[str, Any]:
    props = schema.get("properties", {})
    obj: dict[str, Any] = {}
    for name, p in props.items():
        obj[name] = [] if p.get("type") == "array" else f"{name} noted"
    if omit_required and schema.get("required"):
        obj.pop(schema["required"][0], None)
    return obj


def route(state: Standin, body: dict[str, Any]) -> tuple[int, dict[str, Any], Endpoint | None]:
    model = state.models.get(str(body.get("model", "")).split(":")[0])
    if model is None:
        return 404, _error(404, f"No endpoints found for {body.get('model')}."), None
    prov = body.get("provider") or {}
    cands = list(model.endpoints)
    if prov.get("only"):
        cands = [e for e in cands if any(_matches(e, s) for s in prov["only"])]
    if prov.get("order") and prov.get("allow_fallbacks") is False:
        cands = [e for e in cands if any(_matches(e, s) for s in prov["order"])]
    if prov.get("quantizations"):
        cands = [e for e in cands if e.quantization in prov["quantizations"]]
    if "max_tokens" in body:
        cands = [e for e in cands if int(body["max_tokens"]) <= e.max_completion_tokens]
    if not cands:
        return 404, _error(404, "No allowed providers are available for the selected model"), None
    if prov.get("require_parameters"):
        need = _needed_parameters(body)
        cands = [e for e in cands if need <= set(e.supported_parameters)]
        if not cands:
            return 404, _error(404, NO_ENDPOINTS), None
    return 200, {}, cands[0]


def complete(state: Standin, body: dict[str, Any], ep: Endpoint) -> tuple[int, dict[str, Any]]:
    reasoning = body.get("reasoning") or {}
    if ep.reasoning_mandatory and reasoning.get("effort") == "none":
        return 400, _error(400, "Reasoning is mandatory for this endpoint and cannot be "
                           "disabled.", error_type="invalid_request",
                           provider_name=ep.provider_name)
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt_tokens = round((prompt_chars // 4 + 4 * len(body.get("messages", [])))
                          * ep.prompt_factor)
    if prompt_tokens + int(body.get("max_tokens", 0)) > ep.context_length:
        return 400, _error(400, f"This endpoint's maximum context length is "
                           f"{ep.context_length} tokens. However, you requested about "
                           f"{prompt_tokens + int(body.get('max_tokens', 0))} tokens.",
                           error_type="context_length_exceeded")
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema" and "structured_outputs" in ep.supported_parameters:
        schema = rf["json_schema"]["schema"]
        content = json.dumps(_conforming(schema, ep.omits_required))
    else:
        last = str(body.get("messages", [{}])[-1].get("content", ""))
        content = "Constraints\nnone\n\nIdentifiers\n" + last[:60]
    if state.reply is not None:
        content = state.reply(body, content)
    completion_tokens = min(len(content) // 4 + 1, int(body.get("max_tokens", 10**6)))
    finish = "stop" if completion_tokens < int(body.get("max_tokens", 10**6)) else "length"
    cost = (prompt_tokens * float(ep.price_prompt)
            + completion_tokens * float(ep.price_completion)) * ep.cost_factor
    with state.lock:
        gen_id = f"gen-{len(state.generations) + 1:06d}"
        state.generations[gen_id] = {"id": gen_id, "provider_name": ep.provider_name,
                                     "model": body["model"], "total_cost": cost}
        state.billed.append(body)
        state.billed_usd.append(cost)
    out: dict[str, Any] = {
        "id": gen_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish, "native_finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens, "cost": cost,
                  "completion_tokens_details": {
                      "reasoning_tokens": 12 if ep.returns_reasoning else 0}},
    }
    if ep.returns_reasoning:
        out["choices"][0]["message"]["reasoning"] = "Let me think about the summary first."
    if not state.omit_provider_field:
        out["provider"] = ep.provider_name
    return 200, out


class Handler(BaseHTTPRequestHandler):
    state: Standin

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, obj: Any = None, raw: bytes | None = None,
              headers: dict[str, str] | None = None) -> None:
        data = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {self.state.key}":
            self._send(401, _error(401, "No auth credentials found" if not auth
                                   else "User not found."))
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        u = urlsplit(self.path)
        parts = u.path.strip("/").split("/")
        st = self.state
        rel = u.path.removeprefix("/api/v1/")
        with st.lock:
            st.gets.append(rel)
            # the most specific prefix that matches: "models" is the model list alone
            # when "models/acme/x/endpoints" has its own queue
            keys = [p for p in st.get_faults if rel.startswith(p)]
            queue = st.get_faults[max(keys, key=len)] if keys else None
            fault = queue.pop(0) if queue else st.next_get_fault(rel)
        if fault and "status" in fault:
            headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault \
                else {}
            return self._send(fault["status"], _error(fault["status"], "Provider returned error"),
                              headers=headers)
        if u.path == "/api/v1/models":
            data = []
            for m in st.models.values():
                sup = sorted({p for e in m.endpoints for p in e.supported_parameters})
                top = m.endpoints[0] if m.endpoints else Endpoint("none", "none")
                data.append({
                    "id": m.id, "canonical_slug": m.id, "name": m.id,
                    "context_length": top.context_length,
                    "pricing": {"prompt": top.price_prompt, "completion": top.price_completion},
                    "top_provider": {"context_length": top.context_length,
                                     "max_completion_tokens": top.max_completion_tokens,
                                     "is_moderated": False},
                    "supported_parameters": sup,
                    "reasoning": {"mandatory": m.reasoning_mandatory,
                                  "supported_efforts": ["none", "low", "medium", "high"]},
                })
            return self._send(200, {"data": data, "total_count": len(data)})
        if len(parts) == 6 and parts[:3] == ["api", "v1", "models"] and parts[5] == "endpoints":
            mid = f"{parts[3]}/{parts[4]}"
            m = st.models.get(mid)
            if m is None:
                return self._send(404, _error(404, f"Model {mid} not found"))
            return self._send(200, {"data": {"id": mid, "name": mid, "architecture": {},
                                             "endpoints": [e.listing(mid) for e in m.endpoints]}})
        if u.path == "/api/v1/generation":
            if not self._authorized():
                return None
            gid = parse_qs(u.query).get("id", [""])[0]
            g = st.generations.get(gid)
            if g is None:
                return self._send(404, _error(404, f"Generation {gid} not found"))
            return self._send(200, {"data": g})
        return self._send(404, _error(404, "Not Found"))

    def do_POST(self) -> None:  # noqa: N802
        if urlsplit(self.path).path != "/api/v1/chat/completions":
            return self._send(404, _error(404, "Not Found"))
        n = int(self.headers.get("Content-Length", 0))
        try:
            body = json.loads(self.rfile.read(n))
        except ValueError:
            return self._send(400, _error(400, "Invalid JSON body"))
        st = self.state
        with st.lock:
            st.calls.append(body)
            st.call_times.append(time.monotonic())
        if not self._authorized():
            return None
        if not st.credits:
            return self._send(402, _error(
                402, f"This request requires more credits, or fewer max_tokens. You requested "
                f"up to {body.get('max_tokens')} tokens, but can only afford 0."))
        fault = st.next_fault(str(body.get("model")))
        if fault:
            name = fault_class(fault)
            if name:
                with st.lock:
                    st.injected[name] += 1
                    st.fault_log.append((time.monotonic(), name, body))
            if "stall" in fault:  # nothing is generated; the client has given up by now
                time.sleep(fault["stall"])
                self.close_connection = True
                return None
            if "sleep" in fault:
                time.sleep(fault["sleep"])
            if fault.get("truncated"):  # the connection drops mid-body
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "4096")
                self.end_headers()
                self.wfile.write(b'{"id": "gen-cut", "choices": [{')
                self.wfile.flush()
                self.close_connection = True
                return None
            if fault.get("malformed"):
                return self._send(200, raw=b'{"id": "gen-x", "choices": [')
            if fault.get("finish_error"):
                usage = {}
                if "cost" in fault:  # an error reply that reports (and was billed) a cost
                    usage = {"usage": {"prompt_tokens": 0, "completion_tokens": 0,
                                       "cost": fault["cost"]}}
                    if isinstance(fault["cost"], int | float) and fault["cost"] >= 0:
                        with st.lock:
                            st.billed.append(body)
                            st.billed_usd.append(float(fault["cost"]))
                return self._send(200, {**usage,
                    "id": "gen-err", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": ""},
                                 "finish_reason": "error", "native_finish_reason": "error",
                                 "error": {"code": 502, "message": "Upstream error",
                                           "metadata": {"error_type": "provider_unavailable"}}}]})
            if "status" in fault:
                headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault \
                    else {}
                msg = fault.get("message") or {429: "Rate limit exceeded", 500: "Internal Server "
                                               "Error", 502: "Provider returned error",
                                               503: "Provider overloaded"}.get(fault["status"],
                                                                                "error")
                # A6: metadata.error_type is the stable typed code of each status.
                kind = {429: "rate_limit_exceeded", 500: "server", 502: "provider_unavailable",
                        503: "provider_overloaded"}.get(fault["status"])
                meta = {"error_type": kind} if kind else {}
                return self._send(fault["status"], _error(fault["status"], msg, **meta),
                                  headers=headers)
        status, err, ep = route(st, body)
        if ep is None:
            return self._send(status, err)
        status, out = complete(st, body, ep)
        if fault and fault.get("served_by") and status == 200:
            out["provider"] = fault["served_by"]
        if fault and fault.get("served_model") and status == 200:
            # A4's `model` names what served the call: another model under the slug asked
            out["model"] = fault["served_model"]
        return self._send(status, out)


class GatewayStandin:
    """The stand-in on a free loopback port, served from a daemon thread."""

    def __init__(self, models: list[Model], key: str = "sk-or-v1-standin") -> None:
        self.state = Standin({m.id: m for m in models}, key=key)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        # a short poll: shutdown() waits for the next one (0.5 s by default, which 44 unit
        # tests each paid at their end)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.02})

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/api/v1"

    def __enter__(self) -> GatewayStandin:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
