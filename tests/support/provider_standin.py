"""What the two provider stand-ins share (anthropic_standin.py, openai_responses_standin.py):
a loopback JSON server on a free port, a fault queue, the log of every call, and the
compaction both play.

The compaction is deterministic so a test can say what a native arm keeps: the summary
holds every identifier-shaped token of what it was sent (a token with a digit, four
characters or more, stripped of punctuation), in order of first occurrence, except those
a seeded loss drops. Whether a token is dropped depends on (seed, token) alone, never on
the call order, so a token lost once is lost at every fold, as a real summary that does
not care for it would lose it.
"""

from __future__ import annotations

import json
import random
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

PUNCTUATION = ".,;:()[]{}\"'`!?"


def identifiers(text: str) -> list[str]:
    """The identifier-shaped tokens of a text, once each, in order of first occurrence."""
    out: dict[str, None] = {}
    for word in text.split():
        token = word.strip(PUNCTUATION)
        if len(token) >= 4 and any(c.isdigit() for c in token):
            out.setdefault(token)
    return list(out)


def dropped(token: str, seed: int, loss: float) -> bool:
    """Whether the seeded loss drops this token (the same answer at every call)."""
    return random.Random(f"{seed}:{token}").random() < loss


def compact(text: str, seed: int, loss: float) -> list[str]:
    """The identifiers a compaction of `text` keeps."""
    return [t for t in identifiers(text) if not dropped(t, seed, loss)]


def summary_text(kept: list[str]) -> str:
    return "Summary of the session so far.\nIdentifiers kept:\n" + "\n".join(kept)


RECALL_ASK = "Give the value of each item below"


def recall_answer(text: str) -> str | None:
    """The reply to the study's recall turn (resources/prompts/recall_user.md.j2), or
    None for any other text: each numbered item answered with every identifier the call
    was sent before the question, so an item is right exactly when its value survived
    to the recall turn (a value that is no identifier is never right)."""
    head, ask, items = text.partition(RECALL_ASK)
    if not ask:
        return None
    asked = re.findall(r"^(\d+)\. (.+)$", items, flags=re.MULTILINE)
    ids = " ".join(identifiers(head)) or "unknown"
    return "\n".join(f"{n}. {label}: {ids}" for n, label in asked)


def answer(text: str, schema: dict[str, Any] | None) -> str:
    """A plain call's reply: the identifiers it was sent, under a heading (plain), or in
    the schema's first string field (the others a short phrase, arrays empty); the
    recall turn's reply (recall_answer)."""
    recall = recall_answer(text) if schema is None else None
    if recall is not None:
        return recall
    ids = identifiers(text)
    if schema is None:
        return "Constraints\nnone\n\nIdentifiers\n" + "\n".join(ids)
    obj: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if prop.get("type") == "array":
            obj[name] = []
        else:
            obj[name] = " ".join(ids) if not any(isinstance(v, str) for v in obj.values()) \
                else f"{name} noted"
    return json.dumps(obj)


def tokens(text: str) -> int:
    """The stand-ins' token count: four characters a token."""
    return len(text) // 4 + 1


@dataclass
class Call:
    """One request as it arrived: path, headers (names lowercased) and JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class LoopbackStandin:
    """A provider stand-in on a free loopback port, served from a daemon thread.

    A subclass speaks its provider's wire format in `handle(call)`, which returns
    (status, JSON body, extra headers). `queue_faults` scripts the next calls' faults
    ({"status": 529}, {"status": 429, "retry_after": 1}, ...): the subclass renders each
    in its provider's error envelope. `billed` holds the body of every call answered 200.
    """

    def __init__(self, seed: int = 0, loss: float = 0.0) -> None:
        self.seed, self.loss = seed, loss
        self.lock = threading.Lock()
        self.calls: list[Call] = []
        self.faults: list[dict[str, Any]] = []
        self.billed: list[dict[str, Any]] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                n = int(self.headers.get("Content-Length", 0))
                try:
                    body = json.loads(self.rfile.read(n))
                except ValueError:
                    body = None
                call = Call(urlsplit(self.path).path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body if isinstance(body, dict) else {})
                with standin.lock:
                    standin.calls.append(call)
                status, out, headers = standin.handle(call)
                if status == 200:
                    with standin.lock:
                        standin.billed.append(call.body)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # a short poll: shutdown() waits for the next one, and a test stops its server
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       kwargs={"poll_interval": 0.02})

    def handle(self, call: Call) -> tuple[int, dict[str, Any], dict[str, str]]:
        raise NotImplementedError

    def queue_faults(self, faults: list[dict[str, Any]]) -> None:
        with self.lock:
            self.faults.extend(faults)

    def next_fault(self) -> dict[str, Any] | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
