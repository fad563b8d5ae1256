"""Secrets in text: found by line, never shown, and redacted where text is published.

Below `study` (the config-time scan of a user's own transcripts) and `release` (the scan
of every released file, and the redaction of a published session's text): both call
`find_secrets` and `redact_secrets`, so the two never disagree about what a secret is.

Two sources of shapes, side by side: the project's own key shapes (credentials.py, the
one place they are written) and detect-secrets' maintained regex plugins (private keys,
Slack, Stripe, a password inside a URL, ...), at the version pyproject.toml pins, with
the project's own plugin beside them (secret_plugins.py: a key block's body line). Its
entropy and keyword plugins are left out on purpose: the study plants high-entropy,
non-derivable values (paper §3.1: licence keys, signing-key ids, UUIDs) that they would
report as secrets, and a public IP address is no secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from .credentials import KEY_PATTERNS

# A PEM private key is redacted whole, header to footer (its base64 body lines carry no
# shape of their own); in a JSON or CSV cell its line breaks may be written as `\n`.
PEM_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?-----END \1-----", re.S)


# What a release puts where a private endpoint or a local path was (release/sanitize.py):
# here, below the config check, which accepts it in a reviewer's package (evidence=).
PLACEHOLDER = re.compile(r"<local server: [\w.-]+>|<private endpoint>|<local path: [^<>\n]*>")


def is_placeholder(value: object) -> bool:
    """A whole value that a release substituted for a private endpoint or a local path."""
    return isinstance(value, str) and PLACEHOLDER.fullmatch(value) is not None


@dataclass(frozen=True)
class SecretHit:
    """One secret: where (1-based line) and what kind. Never the value."""

    line: int
    kind: str


@cache
def _detectors() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, pattern) of every shape looked for: the project's, then detect-secrets'."""
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.ip_public import IPPublicDetector

    import_plugins()
    from . import secret_plugins  # noqa: F401 - the project's plugin, collected below

    plugins = sorted((c for c in _subclasses(RegexBasedDetector)
                      if c is not IPPublicDetector and isinstance(c.__dict__.get("denylist"),
                                                                  list | tuple)),
                     key=lambda c: c.secret_type)
    return (*KEY_PATTERNS.items(),
            *((c.secret_type, pat) for c in plugins for pat in c.denylist))


def import_plugins() -> None:
    """Import every plugin module of detect-secrets, so each detector class exists."""
    import importlib
    import pkgutil

    import detect_secrets.plugins as plugins

    for mod in pkgutil.iter_modules(plugins.__path__):
        importlib.import_module(f"{plugins.__name__}.{mod.name}")


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


# A line longer than WINDOW_LINE_CHARS is scanned in windows of that many characters,
# each overlapping the next by WINDOW_OVERLAP_CHARS. Some plugins' patterns backtrack over
# the rest of the line at every candidate start (detect-secrets' NPM token,
# `\/\/.+\/:_authToken=`, at each `//`, which a base64 image holds every few thousand
# characters): on a whole line that is quadratic (a pasted 8 MB screenshot took 13 s on
# that pattern alone, 50 MB would take minutes), in windows it is linear. A secret up to
# the overlap long is whole in some window, wherever the edges fall.
WINDOW_LINE_CHARS = 1 << 16
WINDOW_OVERLAP_CHARS = 1 << 12
# A run of more than DATA_RUN_CHARS base64 characters is data (a pasted image, an
# attachment, a minified bundle): a shape matched wholly inside it is its characters by
# chance, not a key someone wrote, and a key at its border (written against the data with
# no separator) lies within RUN_EDGE_CHARS of an end. So only its two edges are scanned,
# which makes a 50 MB screenshot a scan of a few hundred characters.
DATA_RUN_CHARS = 1 << 12
RUN_EDGE_CHARS = 1 << 8
DATA_RUN = re.compile(rf"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/=]{{{DATA_RUN_CHARS + 1},}}")


def _segments(line: str) -> list[tuple[int, int]]:
    """[start, end) of the parts of a line the scan reads: the whole line but the
    interior of each run of data (DATA_RUN). The lookbehind tries a run at its first
    character only, so finding them is linear too."""
    out, at = [], 0
    for m in DATA_RUN.finditer(line):
        out.append((at, m.start() + RUN_EDGE_CHARS))
        at = m.end() - RUN_EDGE_CHARS
    out.append((at, len(line)))
    return out


def _windows(line: str) -> Iterator[tuple[int, int, int]]:
    """(start, owned_end, end) of each window of a line: a window is scanned over
    [start, end) and keeps the matches starting before owned_end (the next window's
    start), so each match is found once and with its right context whole."""
    step = WINDOW_LINE_CHARS - WINDOW_OVERLAP_CHARS
    for first, last in _segments(line):
        for start in range(first, last, step):
            end = min(start + WINDOW_LINE_CHARS, last)
            yield start, (last if end == last else start + step), end
            if end == last:
                break


@cache
def _required(pattern: re.Pattern[str]) -> str | None:
    """The longest literal every match of a pattern holds (its top-level sequence's
    longest run of plain characters), or None: a window without it is not scanned with
    the pattern. The NPM token's `/:_authToken=` makes a line of URLs cheap, whose every
    `//` the pattern would otherwise follow to the window's end."""
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse as parser  # type: ignore[no-redef]
    from re import _constants as constants  # type: ignore[attr-defined]

    if pattern.flags & re.IGNORECASE:
        return None
    runs, run = [], ""
    for op, av in parser.parse(pattern.pattern, pattern.flags):
        if op is constants.LITERAL:
            run += chr(av)
        else:
            runs.append(run)
            run = ""
    longest = max([*runs, run], key=len)
    return longest if len(longest) >= 2 else None


def _spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each secret in one line, a key two shapes match once (the
    project's kind named first): the password of a URL's userinfo (a plugin's group),
    else the whole match. Linear in the line's length (_windows): the scan runs from
    `start` with the characters before it still seen as context (a lookbehind, `\b`)."""
    found = set()
    windows = list(_windows(line))
    for order, (kind, pat) in enumerate(_detectors()):
        literal = _required(pat) if len(windows) > 1 else None
        for start, owned_end, end in windows:
            if literal is not None and line.find(literal, start, end) < 0:
                continue
            for m in pat.finditer(line, start, end):
                if m.start() >= owned_end:
                    break
                g = next((i for i, v in enumerate(m.groups(), start=1) if v), 0)
                found.add((m.start(g), order, m.end(g), kind))
    return _merged([(s, e, k) for s, _, e, k in sorted(found)])


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret of `text`, one hit per (line, kind), in line order."""
    out: list[SecretHit] = []
    for i, line in enumerate(text.splitlines(), start=1):
        kinds = dict.fromkeys(kind for _, _, kind in _spans(line))  # one per kind
        out += [SecretHit(i, kind) for kind in kinds]
    return out


def marker(kind: str) -> str:
    """What stands where a secret was: its kind, never its value."""
    return f"<redacted: {kind}>"


def redact_secrets(text: str) -> tuple[str, int]:
    """`text` with each secret replaced by a marker naming its kind, and how many were."""
    text, n = PEM_BLOCK.subn(lambda m: marker("Private Key"), text)
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        spans = _spans(line)
        for start, end, kind in reversed(spans):
            line = line[:start] + marker(kind) + line[end:]
        n += len(spans)
        lines[i] = line
    return "".join(lines), n


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans (two shapes of one key) as one, the first-starting kind kept."""
    out: list[tuple[int, int, str]] = []
    for s, e, k in spans:
        if out and s < out[-1][1]:
            ps, pe, pk = out[-1]
            out[-1] = (ps, max(pe, e), pk)
        else:
            out.append((s, e, k))
    return out


# -- by value: the text of the secrets a scan found, wherever it appears ---------------------

# A secret's text shorter than this is redacted by shape only: a short piece (a six-letter
# password, a block's END line) occurs in unrelated text.
MIN_SECRET_CHARS = 8
# A secret's text is redacted wherever any stretch of this many of its characters appears
# in a token: a body line a carry's cap cut short, a key split over two cells.
WINDOW_CHARS = 16
# The characters a secret's token is made of (base64, hex, the separators of a key's
# shape): a stretch of them is what is compared.
TOKEN = re.compile(r"[A-Za-z0-9+/=_.~-]+")
LONG_TOKEN = re.compile(rf"(?<![A-Za-z0-9+/=_.~-])[A-Za-z0-9+/=_.~-]{{{WINDOW_CHARS},}}")
# A private key block's start, and a break between its lines: real, or escaped as `\n`
# inside a JSON string or a CSV cell.
KEY_BLOCK_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
LINE_BREAK = re.compile(r"\r?\n|(?:\\r)?\\n")
# A PEM header line inside a block (Proc-Type: 4,ENCRYPTED; DEK-Info: ...).
PEM_HEADER = re.compile(r"[A-Za-z-]+: ")


@dataclass(frozen=True)
class SecretText:
    """The text of one secret a scan found, and where: the 1-based line of the text
    scanned (a key block's: its BEGIN line) and its kind. Held in memory only, to find
    the same text elsewhere; never written or shown."""

    value: str
    kind: str
    line: int


def secret_texts(text: str) -> list[SecretText]:
    """The text of every secret in `text`: each span the detectors find, and each line of
    each private key block, its body lines included (BEGIN to END, or to the first line
    that is no base64 where the block was cut off). Texts shorter than MIN_SECRET_CHARS
    are left to the shapes."""
    out: list[SecretText] = []
    for m in KEY_BLOCK_BEGIN.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out += [SecretText(v, "Private Key", line) for v in _block_lines(text[m.end():])]
    for i, line in enumerate(text.splitlines(), start=1):
        out += [SecretText(line[a:b], kind, i) for a, b, kind in _spans(line)]
    out += [SecretText(t.value.replace("\\/", "/"), t.kind, t.line) for t in out
            if "\\/" in t.value]  # a JSON writer's escaped slash
    first = {t.value: t for t in reversed(out)}  # each text once, as first found
    return [t for t in out if first[t.value] is t and len(t.value) >= MIN_SECRET_CHARS]


def _block_lines(rest: str) -> list[str]:
    """The body lines of a key block, from just after its BEGIN line."""
    out = []
    for piece in LINE_BREAK.split(rest)[1:]:
        piece = piece.strip().replace("\\/", "/")  # a JSON writer's escaped slash
        if not piece or PEM_HEADER.match(piece):
            continue
        if piece.startswith("-----END"):
            break
        run = re.match(r"[A-Za-z0-9+/=]+", piece)
        if run is None:
            break
        out.append(run.group(0))
        if run.end() < len(piece):  # the block was cut off inside this piece
            break
    return out


class SecretIndex:
    """The texts of secrets found elsewhere (a transcript, the chunks a model read),
    to find and redact wherever any of their text appears: whole, or any WINDOW_CHARS
    stretch of a token of theirs inside a token of the text."""

    def __init__(self, texts: list[SecretText]) -> None:
        self.whole = {t.value: t.kind for t in sorted(texts, key=lambda t: -len(t.value))}
        self.windows: dict[str, str] = {}
        for t in texts:
            for run in TOKEN.findall(t.value):
                for i in range(len(run) - WINDOW_CHARS + 1):
                    self.windows.setdefault(run[i:i + WINDOW_CHARS], t.kind)

    def __bool__(self) -> bool:
        return bool(self.whole)

    def _kind(self, token: str) -> str | None:
        return next((self.windows[w] for i in range(len(token) - WINDOW_CHARS + 1)
                     if (w := token[i:i + WINDOW_CHARS]) in self.windows), None)

    def kinds_in(self, text: str) -> list[str]:
        """The kinds of the secrets any of whose text is in `text`, each once."""
        if not self:
            return []
        found = [k for v, k in self.whole.items() if v in text]
        found += [k for m in LONG_TOKEN.finditer(text) if (k := self._kind(m.group(0)))]
        return list(dict.fromkeys(found))

    def redact(self, text: str) -> tuple[str, int]:
        """`text` with each secret's text replaced by its kind's marker (a token holding
        a stretch of one, whole), and how many were."""
        if not self:
            return text, 0
        n = 0
        for value, kind in self.whole.items():
            if value in text:
                n += text.count(value)
                text = text.replace(value, marker(kind))

        def token(m: re.Match[str]) -> str:
            nonlocal n
            kind = self._kind(m.group(0))
            if kind is None:
                return m.group(0)
            n += 1
            return marker(kind)

        return LONG_TOKEN.sub(token, text), n
