"""The one identifier classifier: which tokens of a text are identifiers a user would plant
as facts (a UUID, a path, a port, an on-call handle ...), and which tokens of the same
shape are not and why (a markup closing tag, a code attribute, a number under a timeout
key).

Its callers: the candidates list of a session (study/candidates.py, which aggregates the
tokens of every turn) and anything else that needs the identifier-shaped tokens of a
chunk. `classify(text)` is the whole interface: every token an identifier shape matched,
in order of position, each with its class and, where its context says it is none, the
reason it was set aside (SET_ASIDE names every reason).

Shapes are tried most specific first; a token is given the first class it matches, and a
less specific class never takes a token inside one already taken.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

# Identifier shapes, most specific first; a token is given the first class it matches.
# A path may start right after an escaped newline or tab inside a JSON string (an Edit or
# Write tool call's input: `\n/srv/app/x.ex`), where a plain `\w` lookbehind would miss it.
_PATH_START = r"(?:(?<=\\[nt])|(?<![\w:/\\.@~-]))"
CANDIDATE_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("uuid", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                        r"[0-9a-fA-F]{12}\b")),
    ("url", re.compile(r"\bhttps?://[^\s\"'<>()\]]+[^\s\"'<>()\].,;:]")),
    ("timestamp", re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                             r"(?:Z|[+-]\d{2}:?\d{2})?|\b\d{2}:\d{2} UTC\b")),
    ("key_id", re.compile(r"\b(?:kid|key|akid)[-_][A-Za-z0-9-]{4,}\b")),
    ("hash", re.compile(r"\b(?:sha256:)?[0-9a-f]{12,64}\b")),
    ("release_tag", re.compile(r"(?<![\w.])v\d+\.\d+(?:\.\d+)?(?:-[\w.]+)?\b")),
    # absolute or home-, dot- or source-root-relative (`/srv/x`, `~/.zshrc`, `./run.sh`,
    # a bundler's `@/components/ui/button`), or relative
    # with a directory part (`lib/app_web/live/pane_live.ex`); _path_problem says which
    # of these is no path a user would plant
    ("path", re.compile(_PATH_START + r"(?:(?:~|\.{1,2}|@)?/(?:[\w.@-]+/)*[\w.@-]+"
                        r"|[A-Za-z_][\w.-]*(?:/[\w.@-]+)+)")),
    ("handle", re.compile(r"(?<![\w.])@[A-Za-z][\w.-]*\w")),
    ("hostname", re.compile(r"\b(?:[a-z0-9-]+\.)+(?:internal|local|lan|corp|zone|com|net|"
                            r"org|io|dev|cloud)\b")),
    # an issue tracker's key (`WEB-4127`, `OPS-88`), never a standard's or a model's name
    ("ticket", re.compile(r"\b(?!(?:UTF|ISO|SHA|AES|RSA|HTTP|TLS|SSL|ES|MD|CRC|IEEE|ECMA|PEP"
                          r"|GPT|IPV|RFC|X|P|H)-)[A-Z][A-Z0-9]{1,9}-\d{1,6}\b(?![-.]\w)")),
    ("port", re.compile(r"(?:(?<=[a-z]:)|(?<=[:=] )|(?<=port )|(?<=port: ))\d{4,5}(?![\w.])")),
)

# Why a token of an identifier's shape is no candidate, each with an example; the list
# counts the tokens it set aside by these reasons.
SET_ASIDE = {
    "markup_tag": "a markup closing tag, never a path (`</div>`, `</.button>`)",
    "no_directory": "a slash and one name, with no directory part and no file extension "
                    "(`/compact`, `/settings`)",
    "words_with_slash": "two names joined by a slash, with no file extension (`and/or`, "
                        "`text/html`, `render/1`)",
    "code_attribute": "an `@name` in code, markup or a tool's file content (`@moduledoc`, "
                      "`{@pane_id}`, `<%= @session_id %>`), anywhere in the session",
    "not_a_port": "a number under a key that is no port's (`\"timeout\": 30000`)",
}


@dataclass(frozen=True)
class Token:
    """One token an identifier shape matched: its text, the class the shape proposes,
    where it sits in the text, and why it was set aside ("" when it is a candidate)."""

    text: str
    cls: str
    start: int
    end: int
    set_aside: str = ""


def classify(text: str) -> list[Token]:
    """Every identifier-shaped token of `text`, in order of position, each classed and,
    where its context says it is none, set aside with a reason of SET_ASIDE.

    A token set aside still takes its span: `/div` of `</div>` is not then read as a
    shorter token of a less specific class."""
    starts: list[int] = []  # the spans taken, disjoint, in order: starts[i], ends[i]
    ends: list[int] = []
    out: list[Token] = []
    for cls, pat in CANDIDATE_CLASSES:
        for m in pat.finditer(text):
            a, b = m.span()
            i = bisect_right(starts, a)
            if (i and ends[i - 1] > a) or (i < len(starts) and starts[i] < b):
                continue  # inside a token a more specific class already took
            starts.insert(i, a)
            ends.insert(i, b)
            out.append(Token(m.group(0), cls, a, b, _set_aside(cls, text, m)))
    return sorted(out, key=lambda t: t.start)


def _set_aside(cls: str, text: str, m: re.Match[str]) -> str:
    """Why the token's context says it is not what its shape proposes ("" : it is)."""
    if cls == "port":
        return "" if _port_fits(text, m) else "not_a_port"
    if cls == "handle":
        return "code_attribute" if _code_attribute(text, m) else ""
    if cls == "path":
        return _path_problem(text, m)
    return ""


# -- paths --------------------------------------------------------------------------------

# The extensions of files a session names: source, templates, config, data, docs, keys,
# archives. A slash and a name with one of these is a path (`/logo.png`, `lib/app.ex`).
FILE_EXTENSIONS = frozenset("""
    ex exs heex eex leex sface erl hrl py pyi pyx ipynb js jsx mjs cjs ts tsx vue svelte
    astro css scss sass less html htm xml svg json jsonl yaml yml toml ini cfg conf env
    properties md mdx rst txt adoc csv tsv parquet sql db sqlite sqlite3 lock log sh bash
    zsh fish ps1 bat rb rake go mod sum rs java kt kts scala groovy gradle swift m mm c h
    cc cpp cxx hpp hh cs fs php pl pm lua r jl dart zig nim hs ml elm clj cljs tf tfvars
    hcl nix proto graphql gql dockerfile service timer socket plist pem key crt cer csr
    pub gpg asc gz tgz tar zip zst bz2 xz 7z jar war whl png jpg jpeg gif webp ico bmp
    tiff pdf mp3 mp4 wav mov woff woff2 ttf otf eot map wasm so dylib dll exe bin img iso
    ckpt pt onnx bak tmp pid sock patch diff
""".split())


def _has_extension(name: str) -> bool:
    stem, dot, ext = name.rpartition(".")
    return bool(dot) and ext.lower() in FILE_EXTENSIONS and (bool(stem) or name[0] == ".")


def _path_problem(text: str, m: re.Match[str]) -> str:
    """Why a path-shaped token is no path ("" : it is one). A path needs a directory part
    and a name, or a name with a known file extension: `/srv/app/x`, `~/.zshrc`,
    `/logo.png`, `lib/app_web/live/pane_live.ex`; never a markup closing tag (`</div>`),
    a slash command or a route's one segment (`/compact`, `/settings`), two words with a
    slash (`and/or`) or a function's arity (`render/1`)."""
    token = m.group(0)
    if token.startswith("/") and m.start() > 0 and text[m.start() - 1] == "<":
        return "markup_tag"
    parts = token.split("/")
    if _has_extension(parts[-1]):
        return ""
    if token.startswith(("/", "~", ".", "@")):
        # `/srv/x` has a directory part; `~/x`, `./x` and `@/x` name theirs
        return "" if len(parts) > 2 or parts[0] else "no_directory"
    return "" if len(parts) > 2 else "words_with_slash"


# -- ports --------------------------------------------------------------------------------

# A number after `key: ` or `key = ` is a port only when the key's last part says so (a
# JSON "server.timeout": 30000 is not one), or when it follows a host (gw.internal:47213).
PORT_KEY = re.compile(r"port|listen|bind", re.IGNORECASE)
_KEY_BEFORE = re.compile(r"([\w.-]+)([\"']?)(\s*)([:=])(\s?)$")


def _port_fits(text: str, m: re.Match[str]) -> bool:
    """Whether a port-shaped number's key says it is a port."""
    key = _KEY_BEFORE.search(text[max(0, m.start() - 60):m.start()])
    if key is None:
        return True  # "port 47213": the pattern itself read the word port
    name, quote, sep = key.group(1), key.group(2), key.group(4)
    if PORT_KEY.search(name.rsplit(".", 1)[-1]):
        return True
    # host:port is written tight (gw.internal:47213); a JSON or YAML key's value
    # follows a quote or a space ("server.timeout": 30000, db.pool_size: 20000),
    # and then only the key's last part may say port
    tight = not (quote or key.group(3) or key.group(5))
    return tight and sep == ":" and ("." in name or name == "localhost")


# -- handles and code attributes ----------------------------------------------------------

# `@name` in a code attribute's, decorator's, annotation's or doc tag's place is no handle.
# Where a line of code opens: the text's own line start, a line the Read tool numbered
# (`     4→`, cat -n style, or `4<tab>`), or an escaped newline inside a JSON string (an
# Edit or Write tool call's input), then indentation and a doc comment's marker
# (` * @param`, `/// @see`, `// @ts-ignore`).
_READ_LINE_NUMBER = re.compile(r"\s*\d+(?:→|\t)")
_CODE_INDENT = re.compile(r"(?:\s|\\t)*(?:(?:\*|//+)\s*)?")
# What follows an attribute definition or use rather than a name in prose: a call, a
# string or heredoc (`@moduledoc """`, escaped inside JSON), a literal, a typespec, an
# assignment, a comparison or boolean operator, a pipe, a template's `do` or `%>`, an
# index or the end of an expression (`{@pane_id}`, `(@open)`), or a package scope's slash
# (`@tanstack/react-query`).
_ATTRIBUTE_TAIL = re.compile(r"\(|\[|[}\]]|/(?=\w)|\s+(?:\\?\"|'''|(?:true|false|nil)\b|::)"
                             r"|\s+do\s*(?:$|%>|\\n)"
                             r"|\s*(?:[-+*/|&]?=(?!=)|[=!]==?|&&|\|\||\|>|<>|->|%>)", re.M)
# What code writes right before an attribute it uses: an opening brace, bracket or
# a call's parenthesis (HEEx `{@pane_id}`, `#{@id}`, `assign(@x)`), an assignment, a
# boolean operator, a pipe or an Elixir arrow (`item <- @items`), a template tag's
# opening (`<%= @title`); or, written tight with no space (where prose puts one: "Thanks!
# @ana", "(primary), @ana"), another operator or separator (`[@a,@b]`, `!@open`). Not
# `*`: Markdown bolds a handle (`**@ana**`).
_CODE_BEFORE = re.compile(r"(?:(?:\w\(|[{\[=]|&&|\|\||\|>|<-|->|<%[=#]?)\s?|[!&|+%^;,])$")
# The names code gives such attributes, which no handle is taken for: Elixir module
# attributes, Python decorators, Java/Kotlin/TypeScript annotations, JSDoc and Javadoc
# tags, CSS and Sass at-rules, Swift attributes.
CODE_ATTRIBUTES = frozenset("""
    moduledoc doc typedoc spec type typep opaque impl behaviour behavior callback
    macrocallback derive enforce_keys optional_callbacks compile deprecated since
    external_resource on_load before_compile after_compile dialyzer vsn moduletag
    describetag dataclass property staticmethod classmethod abstractmethod cached_property
    override overload wraps contextmanager asynccontextmanager total_ordering lru_cache
    cache fixture Override Deprecated SuppressWarnings FunctionalInterface SafeVarargs Test
    BeforeEach AfterEach BeforeAll AfterAll Autowired Component Service Repository
    Controller RestController Bean Configuration Entity Injectable Input Output NgModule
    Directive HostListener ViewChild JvmStatic Nullable NonNull Nonnull param returns
    return throws throw see author example todo typedef link inheritDoc ts-ignore
    ts-expect-error ts-nocheck media import keyframes font-face supports layer container
    tailwind apply mixin include extend charset namespace objc available escaping MainActor
    Published State Binding discardableResult
""".split())
# Modules whose decorators are written dotted (`@pytest.fixture`, `@mock.patch`).
CODE_MODULES = frozenset({"pytest", "functools", "unittest", "mock", "typing", "abc",
                          "contextlib", "dataclasses", "app", "router", "click"})
# Inside a markup tag (`<div id={@pane_id} :if={@open}>`) or a template tag (`<%= ... %>`)
# on the same line: the `<` of a tag name not closed before the `@`.
_OPEN_TAG = re.compile(r"<(?:[.:]?[A-Za-z][\w.:-]*|%=?)(?:(?!<|>).)*$")


# A Python decorator, whatever opens its line (a grep match's `views.py:42:`, a JSON
# string's opening quote in an Edit's input, a diff's marker): nothing after the name on
# its line, then, past any more decorator lines, a `def`, `async def` or `class` on the
# next. Each line may open with a Read tool's number, grep's `path:N:` or `path-N-`, a
# diff's marker and indentation. Lines break for real or JSON-escaped.
_LINE_BREAK = re.compile(r"\r?\n|(?:\\r)?\\n")
_LINE_PREFIX = r"(?:\s*\d+(?:→|\t)|[^\s:]*[:-]\d+[:-])?[+\- ]?(?:\s|\\t)*"
_DEFINES = re.compile(_LINE_PREFIX + r"(?:async\s+def|def|class)\s+\w")
_DECORATOR_LINE = re.compile(_LINE_PREFIX + r"@[\w.]+")
# How many lines below a decorator its definition may sit (stacked decorators between).
DECORATOR_REACH = 6


def _decorates(text: str, end: int) -> bool:
    """Whether the `@name` ending at `end` decorates a definition below it."""
    lines = _LINE_BREAK.split(text[end:end + 2000], maxsplit=DECORATOR_REACH)
    if len(lines) < 2 or lines[0].strip():
        return False
    for line in lines[1:DECORATOR_REACH]:
        if _DEFINES.match(line):
            return True
        if line.strip() and not _DECORATOR_LINE.match(line):
            return False
    return False


def _code_attribute(text: str, m: re.Match[str]) -> bool:
    """Whether an `@name` sits where code or markup puts an attribute, not where prose
    names a person: its name is one code gives attributes (in prose too: "the module
    lacks a @moduledoc"), it opens a line of code (a line of the Read tool's numbered
    output or one inside a JSON-escaped tool input included), it sits in inline code,
    inside a markup or template tag, right after what code writes before a value, what
    follows it is an attribute's value, a call or an operator, or it decorates a `def`
    or `class` on a line below (_decorates)."""
    name = m.group(0)[1:]
    if name in CODE_ATTRIBUTES or name.split(".")[0] in CODE_MODULES:
        return True
    if m.start() > 0 and text[m.start() - 1] == "`":
        return True
    line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
    escaped = line.rsplit("\\n", 1)
    numbered = _READ_LINE_NUMBER.match(line)
    opening = escaped[-1] if len(escaped) == 2 else line[numbered.end() if numbered else 0:]
    if _CODE_INDENT.fullmatch(opening):
        return True
    if _CODE_BEFORE.search(opening) or _OPEN_TAG.search(opening):
        return True
    return bool(_ATTRIBUTE_TAIL.match(text, m.end())) or _decorates(text, m.end())
