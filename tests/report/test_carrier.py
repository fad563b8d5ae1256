"""The chosen carrier as files: a decided card's folder holds the arm's
prompt, schema and capacity, the exact request its first fold sent (the store's entry of
the key a run record names) and a README; an own arm's files as the user wrote them; an
undecided card gets none."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from foldstudy.analysis.card import Card, ContrastVerdict, Decision
from foldstudy.report.carrier import build_carriers, chosen
from foldstudy.study.spec import load_arm_table, resolve_arm

from ..support.cards import verdict

REQUEST = {"messages": [{"role": "system", "content": "SYSTEM"},
                        {"role": "user", "content": "PREVIOUS SUMMARY:\n(none yet)\n\n"
                                                    "NEXT CHUNK (1 of 3):\nport 52677"}],
           "max_tokens": 600, "temperature": 0.2, "seed": 7, "schema": None}


def _contrast(word: str, a: str = "j", b: str = "m") -> ContrastVerdict:
    return verdict(a, b, word=word, difference=0.4, p_adjusted=0.01, source="decide")


def _card(model: str, *contrasts: ContrastVerdict) -> Card:
    return Card(sweep="s", model=model, valid_rows=16, all_lost=False,
                contrasts=list(contrasts))


def _setup(tmp_path: Path, resources: Path, arm: str = "m"
           ) -> tuple[Decision, list, dict, Path]:
    table = load_arm_table(resources)
    arms = {a: resolve_arm(a, table, resources, 0.25).to_dict() for a in ("j", "m")}
    store = tmp_path / "store"
    key = "ab" + "0" * 62
    (store / "ab").mkdir(parents=True)
    (store / "ab" / f"{key}.json").write_text(json.dumps({"key": key, "request": REQUEST}))
    runs = []
    for a in ("j", "m"):
        path = tmp_path / f"runs/s/dear/r0/{a}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"status": "run", "sweep": "s", "model": "dear",
                                    "arm": a, "repeat": 0, "row_id": f"s/dear/r0/{a}",
                                    "arm_spec": arms[a],
                                    "folds": [{"fold": 0, "request_key": key}]}))
        runs.append({"sweep": "s", "model": "dear", "arm": a, "repeat": 0,
                     "path": str(path)})
    doc = Decision(margin=0.1, family="sweep", alpha=0.05, cards=[
        _card("dear", _contrast("m better")), _card("open", _contrast("undecided")),
        _card("lost")])
    return doc, runs, arms, store


def test_a_decided_card_gets_its_carriers_files_and_request(tmp_path, resources):
    doc, runs, arms, store = _setup(tmp_path, resources)
    out = tmp_path / "results/decision"
    build_carriers(doc, runs, arms, {}, str(store), out, 0.2)
    folder = out / "s/dear/carrier"
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "capacity.json", "prompt.md", "request.json"]  # m has no schema
    assert not (out / "s/open").exists() and not (out / "s/lost").exists()
    m = arms["m"]
    assert (folder / "prompt.md").read_text() == m["system_prompt"]
    assert json.loads((folder / "request.json").read_text()) == REQUEST
    cap = json.loads((folder / "capacity.json").read_text())
    assert (cap["fold_budget_tokens"], cap["carry_cap_tokens"], cap["carry"]) == (
        m["fold_budget_tokens"], m["carry_cap_tokens"], m["carry"])
    readme = (folder / "README.md").read_text()
    assert "**m better**" in readme and f"max_tokens: {m['fold_budget_tokens']}" in readme
    assert "no response_format" in readme and "private input" in readme


def test_equivalence_picks_the_second_arm_and_a_schema_arm_brings_its_schema(tmp_path,
                                                                              resources):
    doc, runs, arms, store = _setup(tmp_path, resources)
    doc = dataclasses.replace(doc, cards=[
        _card("dear", _contrast("equivalent within ±0.1", "m", "j"))])
    assert chosen(doc.cards[0])[0] == "j"
    own = tmp_path / "mine.md"
    own.write_text("my prompt, as I wrote it\n")
    out = tmp_path / "results/decision"
    build_carriers(doc, runs, arms, {"j": {"system_prompt": str(own)}}, str(store), out,
                     0.2)
    folder = out / "s/dear/carrier"
    schema = json.loads((folder / "schema.json").read_text())
    assert schema == arms["j"]["schema"]
    assert all("maxLength" in f for f in schema["properties"].values())
    assert (folder / "as-written/system_prompt.md").read_text() == own.read_text()
    readme = (folder / "README.md").read_text()
    assert "schema.json` as a json_schema" in readme
    assert "holds an undivided free-text slot" in readme  # j: paper §5's warning


def test_a_native_line_names_no_carrier_in_the_providers_words_or_a_proxys():
    """The native arm's line against your best arm names no prompt of the study's, so no
    folder: on a proxy model its source is the endpoint's compaction, and it is skipped
    as the provider's is; the next line decides."""
    from foldstudy.carriers.native import NATIVE_SOURCE, native_words

    proxy = native_words({"native_via": "proxy",
                          "base_url": "https://user:secret@gw.example:8443/v1?key=abc"})
    for source in (NATIVE_SOURCE, proxy.against_best):
        native = verdict("m", "native", word="native better", source=source)
        assert chosen(_card("x", native)) is None
        assert chosen(_card("x", native, _contrast("m better")))[0] == "m"
