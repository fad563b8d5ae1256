"""The chosen carrier as files (docs/design.md §6, Decision): for each card whose verdict names a
better or equivalent arm, results/decision/<sweep>/<model>/carrier/ holds what a user
needs to run that arm as their agent's compaction prompt, with nothing to dig out of
resources/ or the run records:

- prompt.md: the arm's fold system prompt, as every fold sent it;
- schema.json: its response schema with the declared ceilings as sent (maxLength), where
  the arm has one;
- capacity.json: the declared ceilings, the fold's output budget (max_tokens), the carry
  cap and how a reply is carried forward;
- request.json: the exact request the arm's first fold sent on this model (the response
  store's entry of the request key a run record names: messages, max_tokens,
  temperature, seed, schema);
- own arms: the files the user wrote (arms_file's system_prompt and schema), copied as
  they are, beside the resolved ones;
- README.md: how to use it.

The chosen arm of a card: its first contrast (decide pair, own arms, analysis pairs,
gate: the card's order) whose word names a better arm, that arm; or, where it says
equivalent, the contrast's second arm (the own arm against its twin, the decide pair's
b): what the user was asking whether they could switch to.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path
from typing import Any

from ..analysis.card import AA_SOURCE, Card, ContrastVerdict, Decision, read_decision
from ..backends.store import ResponseStore
from ..carriers.registry import carrier_of, says_against_best, says_read_against
from ..grade.rows import read_record
from ..io import write_text
from ..records.run_record import RunRecord
from ..study.arm import Arm
from ..study.derived import native_with_of

log = logging.getLogger(__name__)

README = """# The carrier `{arm}` for `{model}` (sweep `{sweep}`)

The decision card (results/decision.md) reads: **{word}** ({contrast}, {blocks} blocks,
b − a {difference:+.3f}, adjusted p {p}). This folder holds that arm as a compaction
prompt you can use in your own agent.

- `prompt.md`: the system prompt of every fold.
- {schema_line}
- `capacity.json`: the declared ceilings (characters per field), the fold's output budget
  (`fold_budget_tokens`, sent as max_tokens), the carry cap (`carry_cap_tokens`: the
  carried text is clipped to it) and how the reply is carried (`carry`).
- `request.json`: the exact request the arm's first fold sent to this model in the study
  (its messages hold a chunk of the study's session: a private input; do not publish it).
{own_line}
## Using it as an agent's compaction prompt

When your agent's context must be compacted, send one request per chunk of the history,
oldest first, as `request.json` shows:

1. system: `prompt.md`;
2. user: the previous carry (empty the first time) and the next chunk of history, in the
   shape of the user message in `request.json` (the study's template:
   `PREVIOUS SUMMARY: ... NEXT CHUNK (i of n): ... Reply with the replacement summary.`);
3. {format_line}
4. max_tokens: {budget}, temperature {temperature}.

Carry the reply forward as the next request's previous summary: {carry_words}, clipped to
{cap} tokens. After the last chunk the carry is what your agent keeps.

Paper §5: "{rule}". {slot_words}
"""

def chosen(card: Card) -> tuple[str, ContrastVerdict] | None:
    """(arm, contrast) the card's verdict names, or None (undecided, all lost)."""
    for v in card.contrasts:
        if says_against_best(v.source) or says_read_against(v.source):
            continue  # the provider's or an endpoint's carry: no prompt of the study's
        if v.source == AA_SOURCE:  # a control: it names no carrier
            continue
        if native_with_of(v.b):  # a native@ARM line: the provider's, no folder
            continue
        word = v.word
        if word.endswith(" better"):
            return word[: -len(" better")], v
        if word.startswith("equivalent"):
            return v.b, v
    return None


def first_request(records: list[RunRecord], store: ResponseStore) -> dict[str, Any] | None:
    """The first fold's request of the first of these runs whose entry the store holds."""
    for rec in sorted(records, key=lambda r: int(r.repeat)):
        if rec.status != "run":
            continue
        for fold in rec.folds:
            p = store.path(str(fold.request_key))
            if p.is_file():
                return json.loads(p.read_text(encoding="utf-8")).get("request")
    return None


def capacity_json(arm: Arm) -> dict[str, Any]:
    """capacity.json of an arm's carrier folder: what it may carry and how."""
    return {"arm": arm.arm, "title": arm.title, "ceilings_chars": arm.ceilings,
            "declared_ceiling_chars": arm.declared_ceiling_chars,
            "fold_budget_tokens": arm.fold_budget_tokens,
            "carry_cap_tokens": arm.carry_cap_tokens, "carry": arm.carry,
            "sections": arm.sections, "system_prompt_sha256": arm.system_prompt_sha256}


def write_carrier(out: Path, card: Card, arm: Arm, v: ContrastVerdict,
                  request: dict[str, Any] | None, own_files: dict[str, str],
                  temperature: float, slot: tuple[bool, str]) -> list[Path]:
    """One card's carrier folder."""
    from ..analysis.card_lines import SECTION5_RULE

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "prompt.md", out / "capacity.json", out / "request.json"]
    write_text(arm.system_prompt, written[0])
    write_text(json.dumps(capacity_json(arm), indent=1, ensure_ascii=False) + "\n", written[1])
    write_text(json.dumps(request, indent=1, ensure_ascii=False) + "\n", written[2])
    if arm.schema:
        written.append(out / "schema.json")
        write_text(json.dumps(arm.schema, indent=1, ensure_ascii=False) + "\n", written[-1])
    for key, src in own_files.items():
        dest = out / "as-written" / f"{key}{Path(src).suffix}"
        dest.parent.mkdir(exist_ok=True)
        shutil.copyfile(src, dest)
        written.append(dest)
    p = v.p_adjusted
    text = README.format(
        arm=arm.arm, model=card.model, sweep=card.sweep, word=v.word,
        contrast=f"{v.a}–{v.b}", blocks=v.blocks, difference=v.difference,
        p="—" if p is None or math.isnan(p) else f"{p:.4f}",
        schema_line=("`schema.json`: the response schema, each field's declared ceiling as "
                     "its maxLength, sent as a json_schema response_format"
                     if arm.schema else "no schema: the arm replies in plain text"),
        own_line=("- `as-written/`: your own arm's files as you wrote them (the arms_file's "
                  "system_prompt and schema); the files above are what the study sent.\n"
                  if own_files else ""),
        format_line=("response_format: `schema.json` as a json_schema (strict where your "
                     "provider has it);" if arm.schema else "no response_format;"),
        budget=arm.fold_budget_tokens, temperature=temperature,
        carry_words=carrier_of(arm).describe(arm),
        cap=arm.carry_cap_tokens, rule=SECTION5_RULE,
        slot_words=("This arm holds an undivided free-text slot: " + slot[1] + "."
                    if slot[0] else "This arm holds no undivided free-text slot (" +
                    slot[1] + ")."))
    written.append(out / "README.md")
    write_text(text, written[-1])
    return written


def build_carriers(doc: Decision, runs: list[dict[str, Any]],
                   arms: dict[str, dict[str, Any]], own_files: dict[str, dict[str, str]],
                   store_root: str, out_dir: str | Path, temperature: float) -> list[Path]:
    """Every decided card's carrier folder under out_dir (results/decision/)."""
    from ..analysis.card_lines import undivided_slot

    out, written = Path(out_dir), []
    out.mkdir(parents=True, exist_ok=True)
    store = ResponseStore(store_root)
    for card in doc.cards:
        pick = chosen(card)
        if pick is None or pick[0] not in arms:
            continue
        name, v = pick
        arm = Arm.from_dict(arms[name])
        paths = [r["path"] for r in runs if (r["sweep"], r["model"], r["arm"]) ==
                 (card.sweep, card.model, name) and Path(r["path"]).is_file()]
        request = first_request([read_record(p) for p in paths], store)
        written += write_carrier(out / card.sweep / card.model / "carrier", card, arm,
                                 v, request, own_files.get(name, {}), temperature,
                                 undivided_slot(arm))
    log.info("carriers: %d files under %s", len(written), out)
    return written


def carriers_stage(input: Any, output: Any, params: Any) -> list[Path]:
    """Rule carriers: results/decision/<sweep>/<model>/carrier/ per decided card."""
    return build_carriers(read_decision(input.decision), list(params.runs), dict(params.arms),
                          dict(params.own_files), params.store, output.carriers,
                          float(params.temperature))
