"""Each run as an ATIF trajectory (rule atif): its chunks, each fold a compaction, recall graded.

ATIF (Agent Trajectory Interchange Format, written here as ATIF-v1.7) is the Harbor
project's `trajectory.json`. Its rules were learned from the same public sources
transcripts/atif.py reads it by: Harbor's specification
(harbor-framework/harbor `rfcs/0001-trajectory-format.md`, v1.7: the context_management
convention for a system step that replaces the agent's context, the normative
`is_copied_context`) and its pydantic models (`src/harbor/models/trajectories/`: every
object closed to unknown keys, `step_id` counting from 1 in each file, `source` one of
system, user and agent, `metrics` and `model_name` on agent steps only, an observation
result's `source_call_id` naming a call of its own step). tests/report/test_atif.py
states each rule this writer relies on and checks it, then reads every export back
through the project's own reader.

How a run becomes steps (one file per fold, chained by `continued_trajectory_ref`, as
Harbor's terminus-2 agent writes a run that summarised its context):

- `trajectory.json` holds the chunks the first fold read, then that fold;
  `trajectory.cont-<k>.json` opens with what fold k left, marked `is_copied_context`,
  then the chunks the next fold read and that fold; the last file ends with the recall
  turn. Paper §3.1: "Each fold receives the previous running summary and one chunk,
  and returns a replacement": after a fold the agent has the carry and nothing else.
- A chunk's turns (`[turn N] role: text`, transcripts/turns.py) are steps: a user turn a
  `user` step, an assistant turn an `agent` step, a tool turn a result in the
  observation of the agent step before it in the chunk (or of an agent step with an
  empty message where none is), a system turn a `system` step, another role a `user`
  step naming its role in extra. A turn's text is the step's message as the chunk holds
  it, tool-call lines (`  -> tool call NAME ARGS`) included: the chunk keeps a call as
  text with no id, and an id made up here would pair each result with a call by guess,
  so results carry no `source_call_id` (ATIF: a result from an action outside the
  standard tool calling). Text before a chunk's first turn (the rest of a turn cut at
  the chunk's boundary, or a chunk of no turns) is one step of the role it continues,
  else `user`. The chunk's header line (`=== session chunk k of n ===`) is no step;
  each step names its chunk (0-based, as the record's `chunks`) and turn in
  `extra.foldstudy`. The agent steps of a chunk are the session's agent, not the model
  that folded it: the root `agent` names no model, so none is implied for them.
- A fold is a `system` step with `extra.context_management = {type: compaction,
  boundary: replace}` and, in `extra.foldstudy.fold`, what the record says of it (its
  chunks, tokens, finish reason, parse and schema checks, clip; the reply's text only
  where it is not the carry; the provider's raw reply left out). Its tokens are extra,
  not `metrics`: ATIF allows metrics on agent steps only.
- The carry is a `system` step of copied context (the harness's context, nobody's
  turn); an index arm's identifier index is a second one.
- The recall turn: a `user` step asking the labels the fixture asks for, numbered as
  the recall prompt lists them (the prompt's wording around them,
  resources/prompts/recall_user.md.j2, is in no record and is not repeated), then an
  `agent` step with the answer, the folding model's name, its metrics, and in
  `extra.foldstudy` the grade as the evidence holds it: the run's row of rows.csv and
  each graded fact's check of checks.csv.
- A run the probe forbade (not_run, no fold) is one system step saying why.

The same record, fixture and evidence give the same bytes: keys sorted, one-space indent
(io.write_json), no timestamps (a record keeps none per turn, and the field is optional).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evidence.load import read_table
from ..evidence.provenance import check_same_study
from ..grade.rows import RunRecordError, check_record_identity, read_record
from ..grade.trace import fold_number
from ..io import read_json, write_json
from ..records.run_record import Fold, RunRecord
from ..study.fixture_types import Fixture
from ..transcripts.turns import parse_turns
from .viewer import records_by

log = logging.getLogger(__name__)

SCHEMA_VERSION = "ATIF-v1.7"
# the harness that made the run; its version is the run record's (records/run_record.py)
AGENT_NAME = "foldstudy"
MAIN = "trajectory.json"
# what fold k's carry goes on in, named as Harbor's terminus-2 names its continuations
CONTINUATION = "trajectory.cont-{k}.json"
COMPACTION = {"type": "compaction", "boundary": "replace"}
# The header both chunk writers put first (study/fixtures.py, study/sessions.py)
CHUNK_HEADER = re.compile(r"\A=== session chunk \d+ of \d+ ===\n")
SOURCES = {"user": "user", "assistant": "agent", "system": "system"}
TOOL = "tool"


def run_dir(run: dict[str, Any]) -> str:
    """A run's folder relative to results/atif/: <sweep>/<model>/r<repeat>/<arm>, placed
    by the study config's identity of the run, never the record's fields."""
    return f"{run['sweep']}/{run['model']}/r{int(run['repeat'])}/{run['arm']}"


@dataclass
class _File:
    """One trajectory file as its steps are made, numbered from 1."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    chunk_start: int = 0  # where the chunk being written began

    def add(self, source: str, message: str, **more: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message,
                **{k: v for k, v in more.items() if v is not None}}
        self.steps.append(step)
        return step

    def tool_result(self, text: str, where: dict[str, Any]) -> None:
        """A tool turn: a result of the agent step before it in this chunk, or of an
        agent step of its own."""
        last = self.steps[-1] if len(self.steps) > self.chunk_start else None
        if last is None or last["source"] != "agent":
            last = self.add("agent", "", extra={"foldstudy": {"chunk": where["chunk"]}})
        last.setdefault("observation", {"results": []})["results"].append(
            {"content": text, "extra": {"foldstudy": where}})


def chunk_turns(chunk: str, role_before: str | None) -> list[tuple[str, str, int | None]]:
    """(role, text, turn number) of a chunk's turns, in order; the text before its first
    turn, past the header, is the turn it continues (`role_before`, else user)."""
    turns = parse_turns(chunk)
    head = chunk[:turns[0].start] if turns else chunk
    rest = CHUNK_HEADER.sub("", head).rstrip("\n")
    out = [(role_before or "user", rest, None)] if rest.strip() else []
    return out + [(t.role, t.text.rstrip("\n"), t.number) for t in turns]


def add_chunk(file: _File, chunk: str, c: int, role_before: str | None) -> str | None:
    """The chunk's turns as steps of `file`; returns the role of its last turn."""
    file.chunk_start = len(file.steps)
    role = role_before
    for role, text, number in chunk_turns(chunk, role_before):
        where = {"chunk": c, **({"turn": number} if number is not None else
                                {"before_first_turn": True})}
        if role == TOOL:
            file.tool_result(text, where)
        else:
            named = {} if role in SOURCES else {"role": role}
            file.add(SOURCES.get(role, "user"), text, extra={"foldstudy": {**where, **named}})
    return role


def fold_extra(f: Fold) -> dict[str, Any]:
    """What the record says of a fold, for its step's extra: the carry and index are the
    copied context after it, the provider's raw reply stays in the record."""
    d = f.to_dict()
    d.pop("carry")
    d.pop("index", None)
    reply = {k: v for k, v in d.pop("reply").items() if k != "raw"}
    if (reply.get("text") or "").strip() == f.carry:  # as the viewer shows it
        reply.pop("text", None)
    return {**d, "number": fold_number(f), "reply": reply}


def copied_context(file: _File, f: Fold) -> None:
    """What fold `f` left, which the agent went on with: the carry, then an index arm's
    identifier index."""
    n = fold_number(f)
    file.add("system", f.carry, is_copied_context=True,
             extra={"foldstudy": {"carry_of_fold": n}})
    if f.index is not None:
        file.add("system", f.index, is_copied_context=True,
                 extra={"foldstudy": {"index_of_fold": n}})


def recall_steps(file: _File, record: RunRecord, fixture: Fixture,
                 row: dict[str, Any] | None, checks: list[dict[str, Any]]) -> None:
    """The recall question (the labels asked, numbered), then the answer with its model,
    metrics and grade."""
    recall = record.recall or {}
    file.add("user", "\n".join(f"{i}. {f.label}" for i, f in enumerate(fixture.asked, 1)),
             extra={"foldstudy": {"recall_question": True}})
    reply = recall.get("reply") or {}
    metrics = {k: reply[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd")
               if reply.get(k) is not None}
    turn = {k: recall.get(k) for k in ("request_key", "store_hit", "seed")}
    turn["finish_reason"] = reply.get("finish_reason")
    own: dict[str, Any] = {"recall": turn}
    if row is not None:  # graded: the evidence's row (its answer is the message) and checks
        own["grade"] = {
            "row": {k: v for k, v in row.items() if k not in ("answer", "row_id")},
            "checks": [{k: v for k, v in c.items() if k != "row_id"} for c in checks]}
    file.add("agent", record.answer, model_name=record.model, metrics=metrics or None,
             extra={"foldstudy": own})


def _document(record: RunRecord, part: int, parts: int, steps: list[dict[str, Any]]
              ) -> dict[str, Any]:
    own = {"row_id": record.row_id, "sweep": record.sweep, "scenario": record.scenario,
           "model": record.model, "arm": record.arm, "repeat": int(record.repeat),
           "status": record.status, "part": part, "parts": parts}
    if part == 0:
        own["arm_spec"] = record.arm_spec
        own.update({k: v for k, v in (("not_run_reason", record.not_run_reason),
                                      ("not_run_detail", record.not_run_detail),
                                      ("infra_error", record.infra_error)) if v is not None})
    doc = {"schema_version": SCHEMA_VERSION, "session_id": record.row_id,
           "trajectory_id": record.row_id if part == 0 else f"{record.row_id}/cont-{part}",
           "agent": {"name": AGENT_NAME, "version": f"run-record-v{record.record_version}"},
           "steps": steps, "extra": {"foldstudy": own}}
    if part + 1 < parts:
        doc["continued_trajectory_ref"] = CONTINUATION.format(k=part + 1)
    return doc


def trajectory_files(record: RunRecord, fixture: Fixture, row: dict[str, Any] | None = None,
                     checks: Sequence[dict[str, Any]] = ()) -> dict[str, dict[str, Any]]:
    """One run as ATIF documents, file name -> document (pure: record, fixture and its
    graded row and checks in). `trajectory.json` first; one continuation per fold."""
    files = [_File()]
    role: str | None = None
    for f in record.folds:
        here = files[-1]
        for c in f.chunks:
            if not 0 <= c < len(fixture.chunks):
                raise RunRecordError(
                    f"{record.row_id}: fold {fold_number(f)} took in chunk {c}, and the "
                    f"fixture of sweep {record.sweep} has chunks 0 to "
                    f"{len(fixture.chunks) - 1}; the record was made from another "
                    "fixture: rerun its fold job")
            role = add_chunk(here, fixture.chunks[c], c, role)
        here.add("system", f"Fold {fold_number(f)}: the running summary it wrote replaces "
                           "the context.",
                 extra={"context_management": dict(COMPACTION),
                        "foldstudy": {"fold": fold_extra(f)}})
        files.append(_File())
        copied_context(files[-1], f)
    if record.recall is not None:
        recall_steps(files[-1], record, fixture, row, list(checks))
    if not files[-1].steps:  # a run no fold or recall was made of
        reason = ": ".join(x for x in (record.not_run_reason, record.not_run_detail) if x)
        files[-1].add("system", f"Not run ({record.status}{': ' + reason if reason else ''})"
                      "; no chunk was folded.")
    names = [MAIN, *(CONTINUATION.format(k=k) for k in range(1, len(files)))]
    return {name: _document(record, k, len(files), file.steps)
            for k, (name, file) in enumerate(zip(names, files, strict=True))}


def build_atif(runs: Sequence[dict[str, Any]], fixture_paths: dict[str, str],
               rows_csv: str | None, checks_csv: str | None, out_dir: str | Path
               ) -> list[Path]:
    """Every run's trajectory files under out_dir/<sweep>/<model>/r<repeat>/<arm>/;
    returns the files written. `runs`: the study config's runs (sweep, model, repeat,
    arm, path); each record must agree with its run (grade.rows.check_record_identity)
    before the first file is written."""
    fixtures = {s: Fixture.from_dict(read_json(p)) for s, p in fixture_paths.items()}
    rows = records_by(read_table(rows_csv) if rows_csv else None, "row_id")
    checks = records_by(read_table(checks_csv) if checks_csv else None, "row_id")
    records = []
    for run in sorted(runs, key=lambda r: str(r["path"])):
        record = read_record(str(run["path"]))
        check_record_identity(record, str(run["path"]), run)
        records.append((run, record))
    written = []
    for run, record in records:
        docs = trajectory_files(record, fixtures[run["sweep"]],
                                (rows.get(record.row_id) or [None])[0],
                                checks.get(record.row_id, []))
        for name, doc in docs.items():
            dest = Path(out_dir) / run_dir(run) / name
            write_json(doc, dest)
            written.append(dest)
    log.info("atif: %d runs, %d trajectory files under %s", len(records), len(written),
             out_dir)
    return written


def atif_stage(input: Any, output: Any, params: Any) -> list[Path]:
    """Rule atif: results/atif/<sweep>/<model>/r<repeat>/<arm>/trajectory.json and its
    continuations, for every run. params.runs: the study config's runs as dicts."""
    # Identity first: evidence of another study is refused before anything is written.
    check_same_study(Path(input.rows).parent / "manifest.json", params.config)
    fixtures = {Path(p).parent.name: p for p in input.fixtures}
    Path(output.atif).mkdir(parents=True, exist_ok=True)
    return build_atif(list(params.runs), fixtures, input.rows, input.checks, output.atif)
