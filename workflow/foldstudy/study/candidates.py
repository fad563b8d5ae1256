"""Candidate facts of a user's session: the identifier-shaped tokens a facts file may name.

Help writing a facts file (docs/own-sessions.md), with no model: the main thread's tokens
of an identifier's shape (the one classifier, transcripts/identifiers.py), each with its
proposed class, first turn, count and context, and what was set aside and why. Rule
candidates writes them as results/sessions/<scenario>/candidates.tsv and .md.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from typing import Any

from ..transcripts import Transcript
from ..transcripts.identifiers import SET_ASIDE, classify
from .boundary import whole_token_count
from .sessions import NEW_ROOT_NOTE, SessionSpec, turns

log = logging.getLogger(__name__)

CANDIDATE_COLUMNS = ("token", "class", "first_turn", "count", "context")
SET_ASIDE_COLUMNS = ("reason", "tokens", "examples", "says")


def candidates(transcript: Transcript, context_chars: int = 60) -> list[dict[str, Any]]:
    """The identifier-shaped tokens of the main thread a user would pick (the one
    classifier, transcripts/identifiers.py): for each its proposed class, the turn it first
    occurs in, how often it occurs, and a snippet around its first occurrence; in order
    of first occurrence."""
    return candidates_and_set_aside(transcript, context_chars)[0]


def candidates_and_set_aside(transcript: Transcript, context_chars: int = 60
                             ) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """(the candidates, reason -> the distinct tokens of an identifier's shape set aside
    for it, in order of first occurrence).

    A token is a candidate where any occurrence of it is one, except an `@name` that code
    or markup uses anywhere in the session: `@pane_id` of a HEEx template is an attribute
    in the assistant's prose about it too ("the @pane_id assign is nil")."""
    found: dict[str, dict[str, Any]] = {}
    aside: dict[str, str] = {}
    rendered = turns(transcript)
    for turn, text in enumerate(rendered):
        for t in classify(text):
            if t.set_aside:
                aside.setdefault(t.text, t.set_aside)
                if t.set_aside == "code_attribute":
                    aside[t.text] = "code_attribute"
                continue
            if t.text not in found:
                a, b = max(0, t.start - context_chars), t.end + context_chars
                found[t.text] = {"token": t.text, "class": t.cls, "first_turn": turn,
                                 "count": 0, "context": " ".join(text[a:b].split())}
    for token, why in aside.items():
        if why == "code_attribute":
            found.pop(token, None)
    in_turns = _turns_by_word(rendered)
    for row in found.values():
        row["count"] = sum(whole_token_count(row["token"], rendered[i])
                           for i in _turns_holding(row["token"], in_turns))
    by_reason: dict[str, list[str]] = {r: [] for r in SET_ASIDE}
    for token, why in aside.items():
        if token not in found:
            by_reason[why].append(token)
    return [r for r in found.values() if r["count"]], by_reason


_WORD = re.compile(r"\w+")


def _turns_by_word(rendered: list[str]) -> dict[str, list[int]]:
    """word -> the turns it occurs in as a whole run of word characters."""
    index: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(rendered):
        for word in set(_WORD.findall(text)):
            index[word].append(i)
    return index


def _turns_holding(token: str, in_turns: dict[str, list[int]]) -> list[int]:
    """The turns a whole-token occurrence of `token` can be in: those holding its rarest
    word. A whole token has no word character on either side, so each of its runs of
    word characters is a whole run in the text too; a token occurs within one turn (no
    candidate holds a newline), so its count over the session is the sum over these."""
    return min((in_turns.get(w, []) for w in _WORD.findall(token)), key=len, default=[])


def set_aside_rows(by_reason: dict[str, list[str]], examples: int = 5
                   ) -> list[dict[str, Any]]:
    """One row a reason: how many distinct tokens it set aside, the first few, and what
    the reason means (SET_ASIDE)."""
    return [{"reason": r, "tokens": len(ts), "examples": " ".join(ts[:examples]),
             "says": SET_ASIDE[r]} for r, ts in by_reason.items()]


def set_aside_note(rows: list[dict[str, Any]]) -> str:
    """The candidates list's line on what it set aside, by reason."""
    total = sum(r["tokens"] for r in rows)
    if not total:
        return "Set aside: no token of an identifier's shape."
    parts = [f"{r['tokens']} {r['reason'].replace('_', ' ')} ({r['says']}"
             + (f"; e.g. {', '.join(f'`{t}`' for t in r['examples'].split()[:3])})"
                if r["examples"] else ")")
             for r in rows if r["tokens"]]
    return (f"Set aside {total} token(s) of an identifier's shape that are none a user "
            f"would plant (counted in set_aside.tsv): {'; '.join(parts)}.")


def read_note(tr: Transcript) -> list[str]:
    """What the list was read from: messages, tool results, what was left out, and where
    the history before a compaction is unknown."""
    left = ", ".join(f"{n} {kind}" for kind, n in tr.left_out) or "nothing"
    out = [f"Read from {len(tr.messages)} messages of the main thread ({tr.format}"
           + (f", {tr.vocabulary}" if tr.vocabulary else "") + f"), {tr.tool_results} of "
           f"them tool results; left out: {left}."]
    if tr.read_in:
        out.append("Read where the model received them: " + ", ".join(
            f"{n} {kind}" for kind, n in tr.read_in) + ".")
    if tr.repaired:
        out.append("Repaired as read: " + ", ".join(f"{n} {kind}" for kind, n in tr.repaired)
                   + " (docs/own-sessions.md says what each is).")
    out += [f"**Line {n}: {NEW_ROOT_NOTE}.** Identifiers stated only before it are not "
            "listed." for n in tr.new_roots]
    out += [f"Line {n}: a tool output whose call is not in the file, kept where the agent "
            "saw it." for n in tr.orphan_outputs]
    return out


def candidates_markdown(rows: list[dict[str, Any]], name: str, transcript: str,
                        note: tuple[str, ...] | list[str] = ()) -> str:
    lines = [f"# Candidate facts in session `{name}`", "", *[x for n in note for x in (n, "")],
             f"Identifier-shaped tokens of the main thread of `{transcript}`, in order of "
             "first occurrence. Pick the ones your agent must not lose and write them into "
             "the facts file (`label`: what the recall turn asks for; `value`: the token as "
             "written; `class`: optional). No model was used.", "",
             "| token | class | first turn | count | context |", "|---|---|---|---|---|"]
    for r in rows:
        ctx = r["context"].replace("|", "\\|")
        lines.append(f"| `{r['token']}` | {r['class']} | {r['first_turn']} | {r['count']} | "
                     f"{ctx} |")
    return "\n".join(lines) + "\n"


def candidates_stage(input: Any, output: Any, params: Any) -> list[dict[str, Any]]:
    """Rule candidates: results/sessions/<scenario>/candidates.tsv and .md, and
    set_aside.tsv, what the list left out by reason."""
    from ..io import write_text, write_tsv

    spec = SessionSpec.of(params.name, {**params.scenario, "transcript": input.transcript})
    tr = spec.read(f"config.scenarios.{params.name}")
    rows, by_reason = candidates_and_set_aside(tr)
    aside = set_aside_rows(by_reason)
    write_tsv(rows, CANDIDATE_COLUMNS, output.tsv)
    write_tsv(aside, SET_ASIDE_COLUMNS, output.set_aside)
    write_text(candidates_markdown(rows, params.name, input.transcript,
                                   [*read_note(tr), set_aside_note(aside)]), output.md)
    log.info("%s: %d candidate tokens, %d set aside", params.name, len(rows),
             sum(r["tokens"] for r in aside))
    return rows
