"""A user's own session as a scenario (docs/design.md §3 "Own sessions"): the main
thread cut into `folds` chunks at message boundaries, each fact planted in the chunk
holding its value's first whole-token occurrence, in a fixture of the same shape as a
synthetic one, so folds, grader, trace, viewer, comparison pages and tables read it
unchanged.

Paper §3.1: "A synthetic session ... is divided into chunks and folded run by run ...
After the final fold, a recall turn asks for ... planted facts by label, and the answer
is graded against the recorded values." Here the session is the user's and the facts are
theirs: the facts file names each value and the label the recall turn asks for it by.

Every refusal is a SessionError raised while the config is checked
(study/session_checks.py, from load_study), before any job, naming the file, line, fact
or key and what would be right.
"""

from __future__ import annotations

import hashlib
import logging
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import yaml

from ..io import load_yaml
from ..secrets import SecretIndex, find_secrets, secret_texts
from ..transcripts import (
    DEFAULT_MAX_MB,
    SessionError,
    Transcript,
    check_file,
    is_sqlite,
    read_text,
    render_message,
    session_file,
)
from .boundary import has_whole_token, whole_token_pattern
from .fixture_files import size_meta, write_fixture
from .fixture_types import Fact, Fixture
from .own_arms import secret_lines
from .session_cache import file_sha256, read_cached, secrets_cached

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OwnFact:
    """One line of a user's facts file."""

    label: str
    value: str
    fact_class: str = "own"
    # `control: true`: a control fact (fixture_types.Fact.control), asked and graded apart, never
    # in recall; the user puts it where every working carrier must keep it
    control: bool = False


@dataclass(frozen=True)
class SessionSpec:
    """A `scenarios:` entry of the config, resolved (paths as written there)."""

    name: str
    transcript: str
    facts: str | None
    format: str | None = None
    folds: int = 5
    include_thinking: bool = False
    max_mb: float = DEFAULT_MAX_MB
    # the session to read when the transcript is a database holding several (OpenCode's
    # opencode.db, goose's sessions.db, Kiro CLI's data.sqlite3)
    session: str | None = None

    @classmethod
    def of(cls, name: str, entry: dict[str, Any]) -> SessionSpec:
        return cls(name, entry["transcript"], entry.get("facts"), entry.get("format"),
                   int(entry.get("folds", 5)), bool(entry.get("include_thinking", False)),
                   float(entry.get("max_mb") or DEFAULT_MAX_MB), entry.get("session"))

    def file(self) -> Path:
        """The file the transcript names: itself, or the session's file in a folder of
        session files (OpenCode's JSON storage, the session by `session:`)."""
        return session_file(self.transcript, self.session)

    def read(self, where: str) -> Transcript:
        """The transcript, checked at the edge and read in its format."""
        try:
            named = self.file()
        except SessionError as e:
            raise SessionError(f"{where}.transcript: {e}") from e
        path = check_file(named, f"{where}.transcript", self.max_mb)
        return read_cached(path, self.format, self.include_thinking, self.max_mb,
                           session=self.session)


def _value_nodes(path: Path) -> dict[int, yaml.Node]:
    """facts[i] -> the YAML node of its value, for what the file says as written (only
    called on a file whose `facts:` was read as a list)."""
    doc = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)

    def pairs(node: yaml.Node | None) -> list[tuple[yaml.Node, yaml.Node]]:
        return node.value if isinstance(node, yaml.MappingNode) else []

    facts = next((v for k, v in pairs(doc) if k.value == "facts"), None)
    items = facts.value if isinstance(facts, yaml.SequenceNode) else []
    return {i: v for i, item in enumerate(items) for k, v in pairs(item) if k.value == "value"}


def _value_problem(value: Any, at: str, node: yaml.Node | None) -> str | None:
    """Why a fact's value cannot be planted as written, or None. Values are strings:
    YAML 1.1 reads an unquoted 13:42 as the number 822, yes as true, 2026-11-28 as a
    date; a `|` block ends in a newline; a one-character value matches "Step 7"."""
    if not isinstance(value, str):
        written = node.value if isinstance(node, yaml.ScalarNode) else str(value)
        line = f" (line {node.start_mark.line + 1})" if node is not None else ""
        return (f"{at}.value{line}: YAML reads {written} unquoted as the "
                f"{_json_kind(value)} {value!r}; quote it to keep it as written: "
                f"value: \"{written}\"")
    if value != value.strip():
        return (f"{at}.value: {value!r} has whitespace around it, which no answer repeats "
                "(a `value: |` block ends in a newline); write it quoted, or with `|-`")
    if len(value) < 2:
        return (f"{at}.value: {value!r} is one character, which occurs as a token in "
                "unrelated text (\"Step 7\"); give the whole identifier")
    return None


def _json_kind(value: Any) -> str:
    if isinstance(value, (bool, int, float)):
        return "boolean" if isinstance(value, bool) else "number"
    return "date" if hasattr(value, "isoformat") else type(value).__name__


def read_facts(path: str, where: str, max_mb: float = DEFAULT_MAX_MB) -> list[OwnFact]:
    """The facts file: `facts:` a list of {label, value, class}; labels and values unique,
    each value a string as the session writes it, each label one line."""
    p = check_file(path, where, max_mb)
    doc = load_yaml(p)
    if leaks := secret_lines(p, "a label is sent to the model in the recall turn, a value "
                             "is what its answer is graded by, and a release carries both"):
        raise SessionError("; ".join(leaks))
    items = doc.get("facts") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not items:
        raise SessionError(f"{path}: needs `facts:`, a list of {{label, value, class}} "
                           "(at least one)")
    nodes = _value_nodes(p) if any(isinstance(f, dict) and not isinstance(f.get("value"), str)
                                   for f in items) else {}
    out, problems = [], []
    for i, f in enumerate(items):
        at = f"{path}: facts[{i}]"
        if not isinstance(f, dict) or not str(f.get("label") or "").strip() or (
                f.get("value") is None or not str(f.get("value")).strip()):
            problems.append(f"{at}: needs a label and a value (label: what the recall turn "
                            "asks for; value: the identifier as the session writes it)")
            continue
        extra = sorted(set(f) - {"label", "value", "class", "control"})
        if extra:
            problems.append(f"{at}: unknown key {', '.join(extra)} (allowed: label, value, "
                            "class, control)")
        if not isinstance(f.get("control", False), bool):
            problems.append(f"{at}.control: {f['control']!r}; true (a control fact, graded "
                            "apart and never in recall) or false")
            continue
        label = str(f["label"]).strip()
        if "\n" in label:
            problems.append(f"{at}.label: {label!r} holds a newline, which would make it two "
                            "lines of the recall turn; write it on one line")
        if why := _value_problem(f["value"], at, nodes.get(i)):
            problems.append(why)
            continue
        out.append(OwnFact(label, f["value"], str(f.get("class") or "own"),
                           bool(f.get("control", False))))
    for key in ("label", "value"):
        seen: dict[str, int] = {}
        for i, f in enumerate(out):
            v = getattr(f, key)
            norm = v.casefold() if key == "label" else v
            if norm in seen:
                problems.append(f"{path}: facts[{i}] has the same {key} as facts[{seen[norm]}] "
                                f"({v!r}); each fact needs its own {key}")
            seen.setdefault(norm, i)
    if out and all(f.control for f in out):
        problems.append(f"{path}: every fact is `control: true`; at least one must be graded "
                        "(recall is the share of the graded facts the answer gets right)")
    if problems:
        raise SessionError("; ".join(problems))
    return out


# -- chunking -----------------------------------------------------------------------------


def turns(transcript: Transcript) -> list[str]:
    """The main thread rendered as the synthetic fixtures' turns."""
    return [render_message(m, i) for i, m in enumerate(transcript.messages)]


# Where a line longer than a chunk is cut, in order of preference: the last whitespace
# within the limit, else (a run of text with no whitespace as long as a chunk: minified
# JSON, a base64 blob) exactly at the limit. Each cut is counted in the manifest.
CUT_KINDS = ("whitespace", "hard")


def _cut_line(line: str, limit: int, cuts: dict[str, int]) -> list[str]:
    """A line cut into pieces of at most `limit` characters: at the last space or tab
    within each piece's limit (the whitespace becomes the piece's end), else at the limit.
    One pass: each search looks back over one piece at most, so the work is linear in
    the line's length."""
    pieces, start, n = [], 0, len(line)
    while n - start > limit:
        end = start + limit
        ws = max(line.rfind(" ", start + 1, end + 1), line.rfind("\t", start + 1, end + 1))
        if ws > start:
            pieces.append(line[start:ws])
            start = ws + 1
            cuts["whitespace"] += 1
        else:
            pieces.append(line[start:end])
            start = end
            cuts["hard"] += 1
    pieces.append(line[start:])
    return pieces


def _split_lines(text: str, limit: int, cuts: dict[str, int] | None = None) -> list[str]:
    """A turn longer than a chunk, cut at line boundaries into pieces of at most `limit`
    characters; a single line longer than that is cut itself (_cut_line), and the cuts
    counted in `cuts` by kind."""
    cuts = cuts if cuts is not None else dict.fromkeys(CUT_KINDS, 0)
    pieces: list[str] = []
    cur: list[str] = []
    size = -1  # the length of "\n".join(cur)
    for line in text.split("\n"):
        parts = _cut_line(line, limit, cuts) if len(line) > limit else [line]
        for part in parts:
            if cur and size + 1 + len(part) > limit:
                pieces.append("\n".join(cur))
                cur, size = [], -1
            cur.append(part)
            size += 1 + len(part)
    pieces.append("\n".join(cur))
    return pieces


def chunk_turns(units: list[str], folds: int) -> list[list[str]]:
    """`folds` groups of consecutive turns of about equal size: each cut at the turn
    boundary nearest its share of the whole, every group holding at least one turn.

    Each cut is found by bisection in the turns' running ends (they only grow, so the
    nearest end is beside the target's place), so a session of many turns cut into many
    folds takes (turns + folds) x log(turns), not turns x folds."""
    ends = list(accumulate(len(u) + 1 for u in units))
    total = ends[-1] if ends else 0
    cuts, lo = [], 0
    for k in range(1, folds):
        target = total * k / folds
        hi = len(units) - (folds - k)  # leave a turn for every later group
        j = bisect_left(ends, target, lo, hi)  # ends[lo:hi] holds ends[i - 1], i in lo+1..hi
        near = sorted({min(max(x, lo), hi - 1) for x in (j - 1, j)})
        best = 1 + min(near, key=lambda x: abs(ends[x] - target))
        cuts.append(best)
        lo = best
    bounds = [0, *cuts, len(units)]
    return [units[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def session_units(rendered: list[str], folds: int) -> tuple[list[str], dict[str, int]]:
    """The turns to group into `folds` chunks: each turn whole, a turn longer than a
    chunk's share cut into pieces (_split_lines); and the cuts by kind, with how many
    messages were cut (`messages`)."""
    limit = max(1, sum(len(t) + 1 for t in rendered) // folds)
    cuts = {"messages": 0, **dict.fromkeys(CUT_KINDS, 0)}
    units: list[str] = []
    for t in rendered:
        if len(t) > limit:
            cuts["messages"] += 1
            units += _split_lines(t, limit, cuts)
        else:
            units.append(t)
    return units, cuts


def chunk_texts(units: list[str], folds: int) -> list[str]:
    """The units grouped into `folds` chunk texts, each with the synthetic chunks' header."""
    return [f"=== session chunk {c + 1} of {folds} ===\n" + "\n".join(g) + "\n"
            for c, g in enumerate(chunk_turns(units, folds))]


def session_chunks(transcript: Transcript, folds: int) -> list[str]:
    """The main thread as `folds` chunk texts, each with the synthetic chunks' header.

    Paper §3.1: "A synthetic session ... is divided into chunks": here at message
    boundaries, a message longer than a chunk split at line boundaries, and a line longer
    than a chunk at its last whitespace within the chunk's share (else at that share), so
    every chunk stays near its share and a smaller share (more `folds`) always shrinks it.
    """
    return chunk_texts(session_units(turns(transcript), folds)[0], folds)


def chunk_chars_at(rendered: list[str], folds: int) -> list[int]:
    """The characters of each chunk `folds` would cut the rendered turns into (the
    context check's trial of a `folds` before it advises it)."""
    return [len(c) for c in chunk_texts(session_units(rendered, folds)[0], folds)]


# -- planting and its checks -----------------------------------------------------------------


def _where_else(fact: OwnFact, transcript: Transcript) -> str:
    """Which kind of place a value that is not on the main thread does occur in."""
    places = ((transcript.off_thread, "only on a side branch (an abandoned fork), which is "
               "left out of the folds"),
              (transcript.before_root, "only before a new root (a compaction whose "
               "logical parent is not in the file: the history before it is unknown), "
               "which is left out of the folds"),
              (transcript.subagent, "only in a subagent's own thread; the main thread sees "
               "only the Task tool's result"),
              (transcript.compaction_summaries, "only in the compaction summary, the "
               "tool's own carry, which is not folded"))
    for texts, says in places:
        if any(has_whole_token(fact.value, t) for t in texts):
            return f" ({says})"
    rendered = "\n".join(turns(transcript))
    if has_whole_token(fact.value, rendered):
        return (" (a line longer than a chunk was cut through it, at a space of the value "
                "or where the line has no whitespace; another `folds` moves the cut)")
    if fact.value in rendered:
        return " (only inside a longer token; the grader needs it whole)"
    return ""


def plant(facts: list[OwnFact], chunks: list[str], transcript: Transcript, path: str
          ) -> list[Fact]:
    """Each fact planted in the chunk holding its value's first whole-token occurrence
    (the grader's boundary rule, study/boundary.py)."""
    out, problems = [], []
    for i, f in enumerate(facts):
        at = next(((c, m.start()) for c, text in enumerate(chunks)
                   if (m := whole_token_pattern(f.value).search(text))), None)
        if at is None:
            problems.append(f"{path}: fact {f.label!r}: its value {f.value!r} never occurs "
                            f"in the main thread as a whole token{_where_else(f, transcript)}")
            continue
        out.append(Fact(fact_id=f"own_{i:02d}", fact_class=f.fact_class, value=f.value,
                        graded=not f.control, label=f.label, segment=at[0], chunk=at[0],
                        offset=at[1], control=f.control))
    if problems:
        raise SessionError("; ".join(problems))
    return out


def credential_lines(transcript: Transcript) -> list[tuple[int, str]]:
    """(line, kind) of every secret in the transcript's raw file lines (foldstudy/secrets.py:
    the project's key shapes and detect-secrets' plugins): reported by file and line,
    never the value (a transcript is private; its chunks reach a model)."""
    return secrets_cached(transcript.path, lambda: [
        (h.line, h.kind) for h in find_secrets("\n".join(transcript.lines))])


def credential_entries(transcript: Transcript) -> list[dict[str, Any]]:
    """The manifest's `credential_lines` (credential_lines), each finding on a line no
    chunk holds marked `off_chunk` (chunk_free_lines), so the warning says where it
    sits rather than that it would reach the model."""
    found = credential_lines(transcript)
    free = chunk_free_lines(transcript, {n for n, _ in found})
    return [{"line": n, "kind": k, **({"off_chunk": True} if n in free else {})}
            for n, k in found]


def chunk_free_lines(transcript: Transcript, lines: set[int]) -> set[int]:
    """Of these file lines, those no chunk holds: no message of the main thread came
    from the line, and none of the secret text the line holds is in the rendered thread
    (a side branch, a subagent's thread, a message a later checkpoint, rewind or rewrite
    replaced). A line whose secret has no text to look for (a shape too short to hold
    one) is taken as held, so a warning is never withheld on a guess."""
    free = lines - {m.line for m in transcript.messages}
    if not free:
        return set()
    thread = "\n".join(turns(transcript))
    out = set()
    for n in free:
        texts = secret_texts(transcript.lines[n - 1]) if 0 < n <= len(transcript.lines) \
            else []
        if texts and not SecretIndex(texts).kinds_in(thread):
            out.add(n)
    return out


def inherited_credential_lines(transcript: Transcript, max_mb: float = DEFAULT_MAX_MB
                               ) -> list[tuple[str, int, str]]:
    """(file, line, kind) of every secret in the lines the main thread inherited from
    other files (a Codex fork's parent rollouts, Transcript.inherited), each file scanned
    once a content (secrets_cached) and its findings kept up to the last inherited line:
    those lines reach a model in a chunk as the transcript's own do."""
    out = []
    for path, last in transcript.inherited:
        found = secrets_cached(path, lambda p=path: [
            (h.line, h.kind) for h in find_secrets(read_text(Path(p), max_mb))])
        out += [(path, n, kind) for n, kind in found if n <= last]
    return out


def credential_warnings(where: str, transcript: str, meta: dict[str, Any]) -> list[str]:
    """The config check's and the fixture rule's words for a fixture's secret findings,
    by file and line, never the value."""
    said = [(transcript, c["line"], c["kind"], bool(c.get("off_chunk")))
            for c in meta.get("credential_lines") or []]
    said += [(c["file"], c["line"], c["kind"], False)
             for c in meta.get("inherited_credential_lines") or []]
    return [f"{where}{path}:{n}: a credential-shaped string ({kind}; not shown); "
            + (OFF_CHUNK if off else "it would reach the model in a chunk"
               + ("" if path == transcript else (" (a line the main thread reads from another "
                                                  "file: a fork's parent, a trajectory's "
                                                  "continuation)")))
            for path, n, kind, off in said]


# Where a credential no chunk holds sits (credential_entries `off_chunk`).
OFF_CHUNK = ("no chunk holds it: the line is off the main thread (a side branch, a "
             "subagent's thread, or a message a later checkpoint, rewind or rewrite "
             "replaced), so no model reads it; it stays in the transcript file, which "
             "is never released")


OPAQUE_NOTE = "opaque: the CLI stored its summary encrypted"
ABSENT_NOTE = ("absent: the CLI recorded a compaction but no summary of it can be found "
               "in the file")


def baseline(facts: list[Fact], transcript: Transcript) -> dict[str, Any]:
    """The session's own compaction as a baseline beside the arms: which facts its
    summaries held, by the presence grader's rule (paper §4.10: "how many graded values
    are present in the carrier"). A summary the CLI stored encrypted grades nothing: the
    baseline says it is opaque, and no other text stands in for it; a compaction whose
    summary cannot be found in the file is said absent, and grades nothing either."""
    text = "\n".join(transcript.compaction_summaries)
    if transcript.opaque_compactions:
        return {"summaries": len(transcript.compaction_summaries)
                + transcript.opaque_compactions, "summary_chars": 0, "held": [],
                "opaque": OPAQUE_NOTE}
    if transcript.absent_summaries and not transcript.compaction_summaries:
        # a compaction with no summary to be found: no summary to grade, and nothing is
        # graded in its place (the summary reads it as no compaction's text in the file)
        return {"summaries": 0, "summary_chars": 0, "held": [],
                "absent": f"{transcript.absent_summaries} {ABSENT_NOTE}"}
    out = {"summaries": len(transcript.compaction_summaries),
           "summary_chars": len(text),
           "held": [f.label for f in facts if has_whole_token(f.value, text)]}
    if transcript.absent_summaries:
        out["absent"] = f"{transcript.absent_summaries} more {ABSENT_NOTE}"
    return out


def session_meta(spec: SessionSpec, tr: Transcript, sha256: str) -> dict[str, Any]:
    """What the manifest says of the session: its format, what was read, what was left
    out by kind, and where the history before a compaction is unknown."""
    return {"format": tr.format, "vocabulary": tr.vocabulary,
            "transcript_sha256": sha256, "messages": len(tr.messages),
            "tool_results": tr.tool_results, "compactions": tr.compactions,
            "off_thread_records": len(tr.off_thread) + len(tr.subagent)
            + len(tr.before_root),
            "left_out": dict(tr.left_out), "subagent_files": len(tr.subagent_files),
            # what the CLI added to the model's context beside the messages, read where
            # the model received it (attachments, meta messages, other agents' messages)
            "read_in": dict(tr.read_in),
            "repaired": dict(tr.repaired), "orphan_outputs": list(tr.orphan_outputs),
            "new_roots": [{"line": n, "note": NEW_ROOT_NOTE} for n in tr.new_roots],
            "include_thinking": spec.include_thinking,
            # a fork's parent rollouts, pinned as the transcript is (the lock pins the
            # fixture that holds them; the release refuses a file that changed)
            "inherited": [{"path": p, "last_line": n, "sha256": file_sha256(p)}
                          for p, n in tr.inherited]}


def store_meta(tr: Transcript, path: Path) -> dict[str, Any]:
    """For a session read from a database: the sha256 of the rows read (the lines the
    scan reads). The file's own sha256 misses rows the CLI committed to its write-ahead
    log and has not checkpointed, so the fixture is rerun by this one. Nothing for a file
    of one session."""
    if not is_sqlite(path):
        return {}
    return {"rows_sha256": hashlib.sha256("\n".join(tr.lines).encode()).hexdigest()}


NEW_ROOT_NOTE = ("a compact_boundary whose logical parent is not in the file: the thread "
                 "starts again here and what came before it is unknown")


def build_session_fixture(spec: SessionSpec, seed: int, where: str) -> Fixture:
    """The fixture of a session scenario; every refusal named (SessionError)."""
    tr = spec.read(where)
    if spec.facts is None:
        raise SessionError(f"{where}.facts: a sweep runs this scenario, so it needs a facts "
                           f"file (results/sessions/{spec.name}/candidates.md lists the "
                           "identifiers to pick from)")
    facts_in = read_facts(spec.facts, f"{where}.facts", spec.max_mb)
    if len(tr.messages) < spec.folds:
        raise SessionError(f"{spec.transcript}: {len(tr.messages)} messages on the main "
                           f"thread, fewer than folds: {spec.folds}; lower `folds` or use a "
                           "longer session")
    rendered = turns(tr)
    units, cut = session_units(rendered, spec.folds)
    chunks = chunk_texts(units, spec.folds)
    facts = plant(facts_in, chunks, tr, spec.facts)
    meta = {
        "n_chunks": spec.folds,
        "chunk_chars_target": sum(len(c) for c in chunks) // spec.folds,
        **size_meta(chunks),
        # `cut`: messages longer than a chunk's share, and their cuts by kind
        "session": {**session_meta(spec, tr, file_sha256(spec.file())),
                    **store_meta(tr, spec.file()), "cut": cut},
        "own_compaction": baseline(facts, tr),
        "credential_lines": credential_entries(tr),
        "inherited_credential_lines": [{"file": f, "line": n, "kind": k}
                                       for f, n, k in inherited_credential_lines(tr,
                                                                                 spec.max_mb)],
    }
    # scale does not apply: the session's size is the transcript's
    return SessionFixture(spec.name, seed, 0.0, tuple(chunks), tuple(facts), meta,
                          rendered=tuple(rendered),
                          message_lines=tuple(m.line for m in tr.messages))


@dataclass(frozen=True)
class SessionFixture(Fixture):
    """A session's fixture, with the rendered turns it was cut from, so the context check
    can try another `folds` before it advises one (never written: the fixture JSON and
    manifest are the Fixture's)."""

    rendered: tuple[str, ...] = field(default=(), repr=False, compare=False)
    message_lines: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def chunk_chars_at(self, folds: int) -> list[int]:
        """The characters of each chunk at `folds` (chunk_chars_at)."""
        return chunk_chars_at(list(self.rendered), folds)

    def longest_message(self) -> str:
        """The longest message of the main thread, named by turn and transcript line."""
        i = max(range(len(self.rendered)), key=lambda k: len(self.rendered[k]))
        return (f"the longest, message {i} at transcript line {self.message_lines[i]}, is "
                f"{len(self.rendered[i]):,} characters")


def make_session_fixture(spec: dict[str, Any], seed: int, fixture_out: str,
                         manifest_out: str) -> Fixture:
    """Rule fixture, for a session sweep: build, report credentials by line, write."""
    s = SessionSpec.of(spec["name"], spec)
    fx = build_session_fixture(s, seed, f"config.scenarios.{s.name}")
    for line in credential_warnings("", s.transcript, fx.meta):
        log.warning("%s; remove it from the transcript", line)
    for n in fx.meta["session"]["new_roots"]:
        log.warning("%s:%d: %s", s.transcript, n["line"], NEW_ROOT_NOTE)
    m = write_fixture(fx, fixture_out, manifest_out)
    log.info("%s: %s, %d messages, %d chunks (%s chars), %d facts in chunks %s",
             s.name, fx.meta["session"]["format"], fx.meta["session"]["messages"],
             len(fx.chunks), m["chunk_chars"], m["n_graded"], m["graded_chunks"])
    return fx
