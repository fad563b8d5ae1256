"""One backend interface: a chat request in, a recorded reply out.

Retry, caching and recording wrap this interface once (see store.py and call.py), never
inside a provider, so every provider is a small class that only speaks its wire format.

Every capability a caller may ask about is declared here with a default (inspect_ai's
ModelAPI shape), and a provider overrides what it can do: nothing downstream asks an
object what it is with getattr or hasattr.
"""

from __future__ import annotations

import copy
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

from ..errors import StudyError

CHARS_PER_TOKEN_ESTIMATE = 4.0

# Retry keys every HTTP backend's defaults carry (RetryPolicy.from_model reads them).
RETRY_DEFAULTS = {"max_attempts": 4, "retry_initial_wait_s": 1.0, "retry_max_wait_s": 30.0}
# A null written for these means "the default", not "none" (a null reasoning object,
# by contrast, means: send no reasoning parameter).
_NULL_IS_DEFAULT = ("base_url", "api_key_env")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one call before it is recorded as an infrastructure fault."""

    max_attempts: int = 4
    initial_wait_s: float = 1.0
    max_wait_s: float = 30.0

    @classmethod
    def from_model(cls, model: dict[str, Any]) -> RetryPolicy:
        return cls(max_attempts=int(model["max_attempts"]),
                   initial_wait_s=float(model["retry_initial_wait_s"]),
                   max_wait_s=float(model["retry_max_wait_s"]))


@dataclass(frozen=True)
class ChatRequest:
    """The request shape a fold or recall turn sends; fixed per comparison."""

    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float
    seed: int | None = None
    # The full response schema (ceilings included); a provider decides how to enforce it.
    response_schema: dict[str, Any] | None = None
    schema_name: str = "carrier"
    # A native compaction request (Backend.compaction_request): {"mechanism": the
    # backend's, "previous": the item or block the last compaction returned, or None,
    # and "instructions" where the arm sends a prompt as the provider's compaction
    # instructions (a native@ARM arm; absent otherwise)}.
    # The messages then hold the system prompt and the chunk; the backend puts the chunk
    # on the wire as the kind of item its endpoint compacts.
    native: dict[str, Any] | None = None
    # A plain request that continues from a native compaction (a native arm's recall
    # turn): the item or block the last compaction returned, which the backend sends
    # first, unchanged, as its provider's docs say the next request does.
    context: Any = None

    def canonical(self) -> dict[str, Any]:
        """The request as the store keys it. `native` and `context` are in only where
        they are set, so every plain request keys exactly as it did before the fields
        existed (a study's store replays unchanged)."""
        d = asdict(self)
        d["messages"] = [dict(m) for m in self.messages]
        for key in ("native", "context"):
            if d[key] is None:
                del d[key]
        return d


def grammar_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema the embedded backend's grammar enforces: structure only, no ceilings.

    llama-cpp-python 0.3.36 expands maxLength into nested grammar rules, and at
    maxLength 1,100 the process dies (segmentation fault; 1,000 worked), so that one
    backend's grammar enforces fields, types and required keys. Every reply, on every
    backend, is validated against the full schema afterwards (run/fold.carry_of).
    """
    out = copy.deepcopy(schema)
    for prop in out.get("properties", {}).values():
        prop.pop("maxLength", None)
    return out


def response_format(request: ChatRequest, style: str, strict: bool,
                    ceilings_on_wire: bool = True) -> dict[str, Any] | None:
    """The response_format a schema request sends in this style (None for plain arms).

    Styles (reference B): `json_schema`, OpenAI's nested form (the gateway, vLLM,
    Ollama); `json_object_schema`, `{"type": "json_object", "schema": ...}` (llama.cpp's
    server, llama-cpp-python in and out of process); `json_object`, no schema at all.
    The schema goes as the arm declared it, maxLength included (docs/design.md §4: the paper
    sent the schema in response_format and nothing else), unless ceilings_on_wire is
    off (the embedded backend's grammar limitation, base.grammar_schema).
    """
    if request.response_schema is None:
        return None
    schema = (request.response_schema if ceilings_on_wire
              else grammar_schema(request.response_schema))
    if style == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": request.schema_name, "strict": strict, "schema": schema}}
    if style == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_object"}


# The request fields the study fixes (chat_body's and the providers' routing): a model's
# extra_body may add a server's own parameters, never one of these, or what is sent
# would differ from what the store entry and the run record say was sent.
STUDY_FIXED_FIELDS = ("model", "messages", "temperature", "seed", "max_tokens",
                      "max_completion_tokens", "response_format", "provider", "reasoning",
                      "tools", "tool_choice", "plugins", "stream", "n")


def chat_body(request: ChatRequest, style: str, strict: bool = True,
              ceilings_on_wire: bool = True) -> dict[str, Any]:
    """The one builder of a chat-completion body: messages, budget, sampling, schema.

    Every backend sends this (the embedded one as keyword arguments); providers only
    add their own routing keys around it.
    """
    body: dict[str, Any] = {
        "messages": [dict(m) for m in request.messages],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.seed is not None:
        body["seed"] = request.seed
    rf = response_format(request, style, strict, ceilings_on_wire)
    if rf is not None:
        body["response_format"] = rf
    return body


# The finish_reason of a reply the embedded backend ended because it repeated one block
# of tokens (backends/embedded.py, stop_on_repeat): neither "stop" nor "length", the two
# every backend maps its provider's reasons to and the rows count (paper §4.9).
REPETITION = "repetition"


@dataclass
class Reply:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    token_count_method: str  # "exact" (the model's tokenizer or server) or "estimate"
    latency_s: float
    served_by: str
    cost_usd: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    # What the response says served the call, beside what was asked (served_record):
    # {} on a reply stored before it was kept, which the validity rule does not judge.
    served: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        return cls(**d)


@dataclass(frozen=True)
class Compaction:
    """What one native compaction returned (Backend.compaction_of).

    item: what the next request sends first, unchanged (the provider's docs require it
    byte for byte): Anthropic's signed `compaction` block, or OpenAI's compacted window
    (the kept user messages, then the encrypted `compaction` item). None: the provider
    answered without compacting (its reason is in `failure`).
    text: the summary a reader can grade (Anthropic's block `content`); None where the
    item is opaque (OpenAI's `encrypted_content`), and then only the recall is graded.
    retained_tokens: the compaction's own token count where the provider reports one,
    else None (unknown, never an estimate).
    """

    item: Any
    text: str | None
    opaque: bool
    mechanism: str
    beta: str | None
    retained_tokens: int | None
    reply: Reply
    failure: str = ""

    def item_shape(self) -> dict[str, Any] | None:
        """Which compaction answered, as its item shows it: the compaction item's `type`
        and the names of the fields it carries, never their contents (a summary or a
        ciphertext is not the probe's to copy). Anthropic's block and a proxy's polyfill
        of it (LiteLLM's synthesized block holds `type` and `content`) are both
        `compaction` blocks; what tells them apart, where anything does, is a field one
        carries and the other lacks, so the names are recorded as they came. OpenAI's
        window: its `compaction` item. None: no item, or none of type `compaction`."""
        items = self.item if isinstance(self.item, list) else [self.item]
        found = next((i for i in items if isinstance(i, dict)
                      and i.get("type") == "compaction"), None)
        return None if found is None else {"type": "compaction", "fields": sorted(found)}


def served_elsewhere(served_by: str | None, pin: str | None) -> bool:
    """Did an endpoint other than the pinned one serve this reply ("unknown" included)?
    The validity rule's endpoint test, and a retry's test of a stored reply."""
    return bool(pin) and bool(served_by) and served_by != pin


# A release date a provider appends to the id it was asked for: Anthropic's
# `-20250929`, OpenAI's `-2024-08-06`, a gateway slug's `-04-28` or `-0528`.
_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|\d{2}-\d{2}|\d{4})")
# The usage.iterations type of the hop a fallback model served (Anthropic's server-side
# fallback; anthropic-sdk-python BetaFallbackMessageIterationUsage: "Whether a fallback
# model served the response is signalled by the presence of this entry").
FALLBACK_ITERATION = "fallback_message"


def same_model(asked: str, served: str) -> bool:
    """Is `served` the model id `asked` names, as the provider normalizes it?

    Equal ignoring case; or `served` is `asked` with one release date appended (an
    alias answered by its dated id: `claude-x` asked, `claude-x-20260101` served); or
    `asked` is a gateway slug with a `:variant` tag (`:free`, `:nitro`) the response
    leaves off. Nothing else: `claude-x` is not `claude-x-mini`, nor `gpt-4o` `gpt-4o-mini`,
    and a dated id asked is not answered by another date.
    """
    a, s = asked.strip().lower(), served.strip().lower()
    for candidate in {a, a.split(":", 1)[0]}:
        if s == candidate:
            return True
        if s.startswith(candidate) and _DATE_SUFFIX.fullmatch(s[len(candidate):]):
            return True
    return False


def served_record(asked: str, model: Any, judged: bool = True, provider: str | None = None,
                  fallbacks: list[dict[str, Any]] | None = None,
                  iterations: list[str] | None = None) -> dict[str, Any]:
    """What one call's response says served it (Reply.served), beside what was asked.

    asked: the model id sent; model: the response's `model` (None: it names none);
    judged: whether the validity rule compares the two (False where the server names
    itself, not the model asked: llama.cpp's server answers with its file name);
    provider: the gateway's serving provider; fallbacks: Anthropic's `fallback` blocks
    as {"from", "to"} model ids; iterations: the `usage.iterations` types, in order.
    """
    out: dict[str, Any] = {"asked": asked, "model": model if isinstance(model, str) else None,
                           "judged": judged}
    if provider is not None:
        out["provider"] = provider
    if fallbacks is not None:
        out["fallbacks"] = fallbacks
    if iterations is not None:
        out["iterations"] = iterations
    return out


def served_by_other(served: dict[str, Any] | None) -> str:
    """What served a call other than the model asked ('' where nothing says so): a
    fallback the response reports (a `fallback` block or a `fallback_message`
    iteration: the model the fallback went to), or a `model` that is not the one asked
    (same_model). A reply with no `served` record, or one not judged, says nothing."""
    if not served or not served.get("judged"):
        return ""
    if fallbacks := served.get("fallbacks"):
        return str(fallbacks[-1].get("to") or "a fallback model")
    if FALLBACK_ITERATION in (served.get("iterations") or []):
        return str(served.get("model") or "a fallback model")
    model = served.get("model")
    if model and not same_model(str(served.get("asked") or ""), model):
        return model
    return ""


def pinned_prices(probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
    """The audit's prices from a probe record's pinned endpoint, where it has both."""
    pp = probe.get("price_prompt_usd_per_token")
    pc = probe.get("price_completion_usd_per_token")
    if pp is not None and pc is not None:
        return pp, pc, "probe pin"
    return pp, pc, "unknown: run the probe"


class BackendError(StudyError):
    """A call that produced no usable reply.

    kind names the class of failure (transport, rate_limited, server, auth, ...);
    retryable says whether sending the same request again may succeed.
    """

    def __init__(self, kind: str, message: str, retryable: bool, detail: dict | None = None):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.detail = detail or {}


class ContextOverflow(BackendError):
    """The prompt plus the output budget does not fit the endpoint's context window.

    The fold protocol answers this with catch-up (fold the pending chunk with the next),
    and the row becomes invalid; it is never retried.
    """

    def __init__(self, message: str, detail: dict | None = None):
        super().__init__("context_overflow", message, retryable=False, detail=detail)


class ReplayMiss(BackendError):
    """A replay asked for a call the response store never saw."""

    def __init__(self, message: str, detail: dict | None = None):
        super().__init__("replay_miss", message, retryable=False, detail=detail)


class Tokenizer(Protocol):
    """What counts and clips tokens exactly as a model does (its vocabulary)."""

    def count_tokens(self, text: str) -> int: ...

    def clip(self, text: str, max_tokens: int) -> str: ...

    def close(self) -> None: ...


class Backend(ABC):
    """A model behind one endpoint, and what it can do.

    A provider declares what the workflow needs to know about it before any job runs
    (kind, defaults, required keys, slot resource) as class attributes, and registers
    itself with registry.register_backend: everything per backend follows from those.
    """

    #: the `backend:` value a model config names this backend by
    kind: ClassVar[str] = ""
    #: what the config schema says it is ("kind = summary")
    summary: ClassVar[str] = ""
    #: a model config's defaults on this backend (docs/design.md §4): the one place they are
    #: written; the study config resolves every model through resolve_config, and the
    #: backend reads the resolved dict without defaults of its own
    defaults: ClassVar[dict[str, Any]] = {}
    #: keys a model config of this backend must name (the config check requires them)
    required_keys: ClassVar[tuple[str, ...]] = ()
    #: the Snakemake resource each of its probe and fold jobs takes one of, so that a
    #: profile, --resources or the config's `limits` caps its concurrency; None: none
    slot_resource: ClassVar[str | None] = None
    #: what answered: recorded on every row, part of every cache key
    identity: dict[str, Any]
    #: answers only from the response store; a miss raises ReplayMiss, never a call
    replay: bool = False
    #: how hard call.py tries one call before it is an infrastructure fault
    retry_policy: RetryPolicy = RetryPolicy()
    #: the context window (tokens) a fold must fit; None = the endpoint listing says
    context_length: int | None = None
    #: the probe lists this backend's endpoints and pins one (the gateway)
    lists_endpoints: bool = False
    #: how a declared ceiling reaches the model (rows.csv ceiling_delivery):
    #: "response_format" = in the schema on the wire, maxLength included;
    #: "validated_after" = the decoder gets the structure only, the reply is checked
    ceiling_delivery: str = "response_format"
    #: the request's seed goes on the wire (recorded per fold; docs/design.md §3: send a seed
    #: where the endpoint supports one and record it)
    seed_sent: bool = True
    #: every call is billed (docs/design.md §6, Spend): each one is reserved in the study's
    #: ledger before it is sent and settled after (backends/ledger.py)
    paid: bool = False

    @classmethod
    def resolve_config(cls, cfg: dict[str, Any]) -> dict[str, Any]:
        """A model's config of this backend with its defaults filled in (config already
        validated)."""
        out = copy.deepcopy(cls.defaults)
        for k, v in {**cfg, "backend": cls.kind}.items():
            if v is None and k in _NULL_IS_DEFAULT and k in out:
                continue
            out[k] = copy.deepcopy(v)
        return out

    @classmethod
    def audit_prices(cls, probe: dict[str, Any]) -> tuple[float | None, float | None, str]:
        """(USD per prompt token, per completion token, where they come from) for the
        audit's estimate; probe is the model's probe record ({} before any probe).
        By default the probe's pinned endpoint says, or nobody knows yet."""
        return pinned_prices(probe)

    @classmethod
    @abstractmethod
    def describe(cls, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        """The identity a live backend of this config would have, without connecting or
        loading anything: what a replay records so its cache keys are the live run's."""

    @classmethod
    def config_context_length(cls, cfg: dict[str, Any]) -> int | None:
        """The context window the config declares for this backend (None: not declared)."""
        return None

    @classmethod
    def wire_facts(cls, cfg: dict[str, Any], pin: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
        """What a live backend of this config would declare about its calls, for a
        replay to record the same: context length, ceiling delivery, seed sent."""
        return {"context_length": cls.config_context_length(cfg),
                "ceiling_delivery": cls.ceiling_delivery, "seed_sent": cls.seed_sent}

    @classmethod
    def replay_tokenizer(cls, cfg: dict[str, Any]) -> Tokenizer | None:
        """What counts and clips tokens in a replay as the live backend did (None: the
        character estimate, which is what the live backend used too)."""
        return None

    @abstractmethod
    def complete(self, request: ChatRequest) -> Reply: ...

    def count_tokens(self, text: str) -> int:
        return max(1, round(len(text) / CHARS_PER_TOKEN_ESTIMATE)) if text else 0

    @property
    def token_count_method(self) -> str:
        return "estimate"

    def clip(self, text: str, max_tokens: int) -> str:
        """The longest prefix of text that fits max_tokens."""
        if self.count_tokens(text) <= max_tokens:
            return text
        return text[: int(max_tokens * CHARS_PER_TOKEN_ESTIMATE)]

    def listed_prices(self) -> tuple[float, float] | None:
        """(USD per prompt token, per completion token) the endpoint lists, which a paid
        call's reservation is priced at; None: not listed (a paid backend's ledger then
        refuses the call, naming the model)."""
        return None

    def missing_key(self) -> str | None:
        """Why no call can be authorised (no key in the environment), or None."""
        return None

    # -- what the probe uses (docs/design.md §5) ----------------------------------------------

    def wire_parameters(self, request: ChatRequest) -> list[str]:
        """The parameters this request puts on the wire that the probe may remove one at
        a time to name the one an endpoint refuses. None for an in-process model."""
        return []

    def wire_body(self, request: ChatRequest) -> dict[str, Any] | None:
        """The exact body this request puts on the wire (an HTTP backend's), or None for
        an in-process model: two calls with one body are one purchase (the probe sends
        each body once, whichever of its variants asks for it)."""
        return None

    def without(self, params: frozenset[str] | set[str]) -> Backend:
        """A copy that leaves `params` off the wire (only for wire_parameters' names)."""
        raise BackendError("config", f"{type(self).__name__} sends no removable wire "
                           "parameters", retryable=False)

    def with_reasoning_forced(self) -> Backend:
        """A copy that sends reasoning suppression whatever the endpoint declares (the
        paper's original request, §4.2; only where lists_endpoints is true)."""
        raise BackendError("config", f"{type(self).__name__} sends no reasoning parameter",
                           retryable=False)

    def list_endpoints(self) -> list[dict[str, Any]]:
        """The endpoints serving this model (only where lists_endpoints is true)."""
        raise BackendError("config", f"{type(self).__name__} lists no endpoints",
                           retryable=False)

    @classmethod
    def endpoint_pin(cls, endpoint: dict[str, Any]) -> dict[str, Any]:
        """What a run records about the listed endpoint it is pinned to (only where
        lists_endpoints is true)."""
        raise BackendError("config", f"{cls.__name__} lists no endpoints", retryable=False)

    def model_info(self) -> dict[str, Any] | None:
        """The listing's entry for this model (reasoning, context), where there is one."""
        return None

    def pinned(self, pin: dict[str, Any]) -> Backend:
        """This backend pinned to one listed endpoint."""
        return self

    def generation_cost(self, generation_id: str) -> float | None:
        """What the backend's server records a generation cost, asked after the fact
        (the ledger settles a killed job's call with it); None: this backend cannot ask."""
        return None

    def recheck(self, reply: Reply) -> Reply | None:
        """A stored reply, checked again when its row is retried (paper §3.3): the reply
        to serve, completed by free reads where one can (its endpoint looked up), or
        None when it must be bought again (a reply the validity rule rejects for where
        it came from). Backends without endpoints have nothing to check."""
        return reply

    # -- the provider's own compaction (native arms) ----------------------------------
    # What follows depends on the backend's kind alone (classmethods), so a replay
    # builds and reads every compaction exactly as the live backend did.

    #: the compaction mechanism this backend asks its provider for (None: it has none);
    #: the probe sends one minimal compaction request where it is set
    native_compaction: str | None = None
    #: the hosts that are the provider's own API, where a `native` arm's compaction is
    #: the provider's; on any other base_url (a gateway, LiteLLM, a self-hosted server)
    #: the model config must say `native_via` (study/checks.py native_via_problems)
    provider_hosts: tuple[str, ...] = ()
    #: the beta the mechanism is under, sent on every request that carries its item
    compaction_beta: str | None = None
    #: how the chunk goes on the wire in a compaction request (the docs say what each
    #: endpoint compacts and what it keeps whole)
    chunk_presented_as: str = ""
    #: the role of that message: a chunk a `native:keep_recent=N` arm keeps verbatim goes
    #: after the item in this same form, as it stood in the history (carriers/native_keep.py)
    chunk_role: str = "user"

    @classmethod
    def compaction_request(cls, previous: Any, chunk: str, system_prompt: str,
                           max_tokens: int, temperature: float,
                           instructions: str | None = None) -> ChatRequest:
        """The request asking the provider to compact (previous item or block, then the
        chunk) now: a ChatRequest, so the store, the ledger and the replay take it like
        any call (call.cached_complete). instructions: a prompt sent as the provider's
        compaction instructions (None: the provider's default summarization)."""
        raise BackendError("config", f"{cls.__name__} has no native compaction",
                           retryable=False)

    @classmethod
    def compaction_of(cls, reply: Reply) -> Compaction:
        """The compaction a reply to compaction_request carries."""
        raise BackendError("config", f"{cls.__name__} has no native compaction",
                           retryable=False)

    @classmethod
    def refused_parameter(cls, error: BackendError) -> str:
        """The parameter a refused compaction request's error names (a beta header the
        account or model lacks, the compaction endpoint), or "" where it names none."""
        return ""

    def compact(self, previous: Any, chunk: str, system_prompt: str = "",
                max_tokens: int = 4096, temperature: float = 0.0,
                instructions: str | None = None) -> Compaction:
        """One native compaction sent directly (no store, no ledger): what a fold asks
        through cached_complete, in one call."""
        return self.compaction_of(self.complete(self.compaction_request(
            previous, chunk, system_prompt, max_tokens, temperature, instructions)))

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
