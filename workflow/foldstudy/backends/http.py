"""What the HTTP backends share: keys from the environment, one POST, error classes.

Every failure becomes a BackendError whose kind names its class and whose `retryable`
says whether the same request may succeed later (a transport fault, 429, 5xx, a
provider error inside an HTTP 200, a malformed body) or not (401, 402, 403, a 404 "no
endpoints", a bad request): the retry wrapper retries the first and records the second
as a final verdict. Keys never enter a message: every text that leaves here is redacted.
"""

from __future__ import annotations

import email.utils
import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .base import Backend, BackendError, ContextOverflow, RetryPolicy

if TYPE_CHECKING:  # requests is imported by the jobs that call a server, not by the DAG
    import requests

# 404 messages that mean "routing found no endpoint for this request" rather than "no
# such model" (docs/design.md §4, gateway A6: classify 404 by message, never by status
# alone).
NO_ENDPOINT_MARKERS = (
    "no endpoints found",
    "no allowed providers",
    "no endpoints available",
    "meets your routing requirements",
)
CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "exceed_context_size",
                   "exceeds the available context size",
                   # Anthropic's 400 invalid_request_error: "prompt is too long: N tokens >
                   # M maximum" (platform.claude.com/docs/en/api/errors)
                   "prompt is too long")


class HTTPBackend(Backend):
    """What every backend that calls a server over HTTP sets up and shares: a timeout, a
    key from the environment, the retry policy, the context it declares, one session, and
    the parameters it leaves off the wire (the probe's removals)."""

    name: str
    base_url: str
    model_id: str
    timeout_s: float
    key_env: str | None
    _key: str | None
    session: requests.Session
    omit: frozenset[str] = frozenset()

    def open(self, name: str, cfg: dict[str, Any], pin: dict[str, Any] | None) -> None:
        """Set the above, the server's root, the model and the identity from a resolved
        config (the key is read from the environment, never written anywhere)."""
        self.name = name
        self.base_url = str(cfg["base_url"]).rstrip("/")
        self.model_id = cfg["model_id"] or name
        self.identity = self.describe(name, cfg, pin)
        self.timeout_s = float(cfg["timeout_s"])
        self.key_env = cfg["api_key_env"]
        self._key = read_key(self.key_env)
        self.retry_policy = RetryPolicy.from_model(cfg)
        self.context_length = self.config_context_length(cfg)
        import requests  # the jobs that call a server only; the DAG reads the class

        self.session = requests.Session()
        self.omit = frozenset()

    @classmethod
    def config_context_length(cls, cfg: dict[str, Any]) -> int | None:
        return cfg.get("context_length")

    @property
    def token_count_method(self) -> str:
        return "exact"  # the server's own usage counts every reply

    def without(self, params: frozenset[str] | set[str]) -> Backend:
        """A copy that leaves `params` off the wire; its identity (and cache key) says so."""
        import copy

        other = copy.copy(self)
        other.omit = frozenset(params)
        other.identity = {**self.identity, "omit": sorted(other.omit)}
        return other

    def close(self) -> None:
        self.session.close()


def read_key(env_var: str | None) -> str | None:
    """The API key from the environment variable the config names; None when unset."""
    if not env_var:
        return None
    return os.environ.get(env_var) or None


def control_character(value: str) -> str | None:
    """The first control character of a value (a line break pasted with a key, a date
    or an id), named as the escape that writes it; None where there is none. A header or
    request line holding one is refused by requests as InvalidHeader, or splits it."""
    c = next((c for c in value if ord(c) < 0x20 or ord(c) == 0x7F), None)
    return None if c is None else repr(c)


def key_problem(env_var: str | None) -> str | None:
    """Why the key the environment holds cannot be sent in a header (never its value);
    None when it can, or when the variable is unset (the backend says so when it calls)."""
    key = read_key(env_var)
    if key and (c := control_character(key)):
        return (f"the key in ${env_var} holds a control character ({c}; a key read from a "
                "file with its final line break?); set it without: export "
                f"{env_var}=\"$(tr -d '\\r\\n' < keyfile)\"")
    return None


def header_problem(headers: dict[str, str]) -> str | None:
    """The header whose value holds a control character, named, its value never shown:
    checked on every request (_send), so none is ever sent, whichever backend built it."""
    for name, value in headers.items():
        if isinstance(value, str) and (c := control_character(value)):
            return (f"the {name} header holds a control character ({c}); it was not "
                    "sent (the config check names the key it came from)")
    return None


def redact(text: str, secret: str | None) -> str:
    if secret and text:
        return text.replace(secret, "[redacted]")
    return text


def retry_after_s(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_fields(body: Any) -> tuple[str, dict[str, Any]]:
    """(message, error object) of an OpenAI/OpenRouter-style error envelope."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("message", "")), err
        if isinstance(err, str):
            return err, {}
        if "detail" in body:
            return str(body["detail"]), {}
    return "", {}


def classify_http_error(status: int, body: Any, text: str, headers: dict[str, str],
                        secret: str | None) -> BackendError:
    """One HTTP error status (with its body) -> the BackendError it stands for."""
    message, err = _error_fields(body)
    message = redact(message or text[:300] or f"HTTP {status}", secret)
    meta = err.get("metadata") if isinstance(err.get("metadata"), dict) else {}
    detail: dict[str, Any] = {"status": status}
    if (cost := error_cost(body)) is not None:
        detail["cost_usd"] = cost
    if meta.get("error_type"):
        detail["error_type"] = meta["error_type"]
    elif isinstance(err.get("type"), str) and err["type"]:
        # Anthropic's and OpenAI's envelopes type the error in error.type
        # (overloaded_error, rate_limit_error, invalid_request_error, ...)
        detail["error_type"] = err["type"]
    lowered = f"{message} {err.get('type', '')} {err.get('code', '')}".lower()
    ra = retry_after_s(header(headers, "retry-after"))
    if ra is None and (ms := header(headers, "retry-after-ms")):
        # OpenAI's own, finer header (openai-python reads it before Retry-After)
        ra = retry_after_s(ms)
        ra = None if ra is None else ra / 1000
    if ra is not None:
        detail["retry_after_s"] = ra
    if any(m in lowered for m in CONTEXT_MARKERS):
        return ContextOverflow(message, detail=detail)
    kind, retryable = _kind(status, lowered)
    return BackendError(kind, message, retryable=retryable, detail=detail)


def header(headers: dict[str, str], name: str) -> str | None:
    """A response header by its name in any case (a plain dict of them keeps the case
    the server wrote)."""
    return next((v for k, v in headers.items() if k.lower() == name), None)


def error_cost(body: Any) -> Any:
    """The cost an error reply's body reports (usage.cost), as given: the ledger charges
    it, and refuses by name one that is not a finite number >= 0. None: none reported."""
    usage = body.get("usage") if isinstance(body, dict) else None
    cost = usage.get("cost") if isinstance(usage, dict) else None
    if isinstance(cost, str):
        try:
            return float(cost)
        except ValueError:
            return cost
    return cost


# Statuses whose meaning does not depend on the body: (kind, retryable).
_STATUS_KINDS = {401: ("auth", False), 402: ("insufficient_credits", False),
                 403: ("moderation", False), 408: ("timeout", True),
                 429: ("rate_limited", True)}


def _kind(status: int, lowered: str) -> tuple[str, bool]:
    """The failure class of an HTTP error and whether sending it again may succeed."""
    if status == 429 and "insufficient_quota" in lowered:
        # OpenAI answers an exhausted quota with 429 too: sending it again proves nothing
        return "insufficient_credits", False
    if status in _STATUS_KINDS:
        return _STATUS_KINDS[status]
    if status in (404, 503) and any(m in lowered for m in NO_ENDPOINT_MARKERS):
        return "no_endpoint", False
    if status == 404:
        return "not_found", False
    if status >= 500 and "validation error" in lowered:
        # llama-cpp-python's server answers a request it cannot parse with HTTP 500:
        # the request is wrong, so sending it again proves nothing.
        return "bad_request", False
    if status >= 500:
        return "server", True
    if "reasoning" in lowered and ("mandatory" in lowered or "cannot be disabled" in lowered):
        return "reasoning_mandatory", False
    return "bad_request", False

def _send(session: requests.Session, method: str, url: str, timeout_s: float,
          **kwargs: Any) -> requests.Response:
    """One HTTP request, its transport failures classified (all retryable)."""
    import requests

    if problem := header_problem(kwargs.get("headers") or {}):
        raise BackendError("bad_request", problem, retryable=False, detail={"sent": False})
    try:
        return session.request(method, url, timeout=timeout_s, **kwargs)
    except requests.ConnectTimeout as e:  # no connection: the request never left
        raise BackendError("unreachable", f"cannot connect to {_host(url)} within "
                           f"{timeout_s:g}s", retryable=True, detail={"sent": False}) from e
    except requests.Timeout as e:
        raise BackendError("timeout", f"no reply from {_host(url)} within {timeout_s:g}s",
                           retryable=True) from e
    except requests.ConnectionError as e:
        # refused or unresolved (urllib3's NewConnectionError): nothing was sent, so the
        # ledger charges nothing; a connection dropped after the request went may have
        # been generated and billed, so it is not marked
        detail = {"sent": False} if _never_connected(e) else {}
        raise BackendError("unreachable", f"cannot connect to {_host(url)}: "
                           f"{type(e).__name__}", retryable=True, detail=detail) from e
    except requests.RequestException as e:  # a broken chunked body, a reset mid-read
        raise BackendError("malformed", f"transport failed reading {_host(url)}: "
                           f"{type(e).__name__}", retryable=True) from e


def _never_connected(e: BaseException) -> bool:
    """Whether a requests ConnectionError failed before a connection existed (refused,
    unresolved): urllib3's NewConnectionError somewhere in its chain of reasons."""
    from urllib3.exceptions import NewConnectionError

    seen: set[int] = set()
    todo: list[BaseException] = [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, NewConnectionError):
            return True
        todo += [a for a in (*getattr(x, "args", ()), getattr(x, "reason", None),
                             x.__cause__, x.__context__) if isinstance(a, BaseException)]
    return False


def post_json(session: requests.Session, url: str, body: dict[str, Any],
              headers: dict[str, str], timeout_s: float, secret: str | None
              ) -> tuple[dict[str, Any], dict[str, str], float]:
    """POST a JSON body; (parsed body, response headers, latency) or a classified error."""
    t0 = time.monotonic()
    r = _send(session, "POST", url, timeout_s, json=body, headers=headers)
    latency = time.monotonic() - t0
    return _parse(r, secret), dict(r.headers), latency


def get_json(session: requests.Session, url: str, headers: dict[str, str], timeout_s: float,
             secret: str | None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return _parse(_send(session, "GET", url, timeout_s, headers=headers, params=params), secret)


def _parse(r: requests.Response, secret: str | None) -> dict[str, Any]:
    try:
        body = r.json()
    except ValueError:
        body = None
    if r.status_code >= 400:
        raise classify_http_error(r.status_code, body, r.text, dict(r.headers), secret)
    if not isinstance(body, dict):
        raise BackendError("malformed", f"HTTP {r.status_code} with a body that is not a JSON "
                           f"object: {redact(r.text[:200], secret)!r}", retryable=True,
                           detail={"status": r.status_code})
    return body


def _host(url: str) -> str:
    """Scheme and host only: a private endpoint's path or query never reaches a log."""
    from urllib.parse import urlsplit

    try:
        u = urlsplit(url)
        host = u.hostname
    except ValueError:  # an unclosed [ of an IPv6 literal
        return "(a URL that does not parse)"
    return f"{u.scheme}://{host}" if host else f"{u.scheme}:// (no host)"


def url_path(value: str) -> str:
    """A model id as the path part of a URL: each /-separated part percent-encoded, so
    `?`, `#`, `%` and spaces stay inside the part and a model id can never change which
    path is requested. A `.`, `..` or empty part cannot be encoded (requests decodes %2E
    back to a dot): refused (config.dot_segment says so before any job)."""
    from urllib.parse import quote

    parts = value.split("/")
    if bad := dot_segment(value):
        raise BackendError("bad_request", f"model id {value!r} has a {bad!r} path part; it "
                           "would change the gateway path requested", retryable=False)
    return "/".join(quote(p, safe="") for p in parts)


def dot_segment(value: str) -> str | None:
    """The first `.`, `..` or empty /-separated part of a model id (None: there is none)."""
    return next((p for p in value.split("/") if p in ("", ".", "..")), None)


def parse_choice(body: dict[str, Any], secret: str | None) -> tuple[dict[str, Any], str]:
    """The first choice and its finish_reason, or a classified error.

    A provider failure can arrive as HTTP 200 with finish_reason "error" and an error
    object (docs/design.md §4, gateway A4); that is an infrastructure fault, retried, never a
    reply.
    """
    if "error" in body and not body.get("choices"):
        message, err = _error_fields(body)
        code = err.get("code")
        status = code if isinstance(code, int) else 502
        raise classify_http_error(status, body, message, {}, secret)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError("malformed", "reply has no choices", retryable=True)
    choice = choices[0]
    finish = choice.get("finish_reason") or "unknown"
    if finish == "error" or choice.get("error"):
        message, err = _error_fields(choice)
        meta = err.get("metadata") if isinstance(err.get("metadata"), dict) else {}
        detail = {"status": 200, "error_type": meta.get("error_type", "")}
        if (cost := error_cost(body)) is not None:
            detail["cost_usd"] = cost
        raise BackendError("provider_error", redact(message or "finish_reason error", secret),
                           retryable=True, detail=detail)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise BackendError("malformed", "choice has no message", retryable=True)
    return choice, finish
