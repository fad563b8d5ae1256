"""The derived arms' one table (study/derived.py): each kind's id made and read back by its
rule alone, as the string conventions it replaced read them; titles and table entries
word for word what tables, cards and pages print; and a kind whose rule could collide
with an arm's id refused where it is declared."""

from __future__ import annotations

import json

import pytest

from foldstudy.carriers.native import native_words
from foldstudy.study.derived import (
    AA,
    DERIVATIONS,
    NATIVE_WITH,
    Derivation,
    aa_copies,
    aa_copy_id,
    aa_original,
    derived_from,
    make,
    native_prompts,
    native_with_id,
    native_with_of,
    native_with_title,
    parse,
    spec_title,
    with_aa_copies,
    with_native_prompts,
)
from foldstudy.study.spec import load_arm_table


def test_each_kind_is_made_and_parsed_back_by_its_rule():
    assert make(AA, "m") == aa_copy_id("m") == "m~aa"
    assert make(NATIVE_WITH, "native", "m") == native_with_id("native", "m") == "native@m"
    assert parse("m~aa") == (AA, ("m",)) and parse("native@m") == (NATIVE_WITH,
                                                                  ("native", "m"))
    for d in DERIVATIONS:
        named = tuple(f"a{i}" for i in range(len(d.parts)))
        assert parse(d.make(*named)) == (d, named)
    assert parse("m") is None and parse("native") is None
    assert AA.marks == ("~aa",) and NATIVE_WITH.marks == ("@",)
    with pytest.raises(ValueError, match="names 2 arm"):
        NATIVE_WITH.make("m")


@pytest.mark.parametrize("arm_id, copied, made", [
    ("m~aa", "m", None),
    ("~aa", None, None),  # no arm before the mark: no copy
    ("x~aa~aa", "x~aa", None),  # the mark ends the id, once
    ("native@m", None, ("native", "m")),
    ("@m", None, None), ("native@", None, None), ("native", None, None),
    ("a@b@c", None, ("a", "b@c")),  # the native arm runs up to the first mark
    ("native@m~aa", "native@m", ("native", "m~aa")),
])
def test_an_id_reads_as_the_string_conventions_read_it(arm_id, copied, made):
    """aa_original read `endswith("~aa")` and native_with_of `partition("@")`: the table's
    rules read every id as they did."""
    assert aa_original(arm_id) == copied
    assert native_with_of(arm_id) == made


def test_titles_and_descriptions_are_word_for_word_what_pages_print(resources):
    table = load_arm_table(resources)
    cfg = {"sweeps": {"s": {"arms": ["j", "m", "native"], "controls": {"aa": "m"},
                            "native_with": ["m"]}}}
    arms = with_native_prompts(with_aa_copies(table, cfg), cfg)["arms"]
    assert arms["m~aa"] == {**table["arms"]["m"], "copy_of": "m",
                            "title": f"{table['arms']['m']['title']} (A/A copy)",
                            "description": "an exact copy of arm m (A/A control)"}
    assert arms["native@m"] == {
        **table["arms"]["native"], "instructions_from": "m",
        "title": "the provider's compaction with m's prompt",
        "description": "arm native sending arm m's system prompt as the provider's "
                       "compaction instructions"}
    assert native_with_title("m") == NATIVE_WITH.title(arm="m") == arms["native@m"]["title"]
    assert AA.title(arm="m", arm_title="plain") == "plain (A/A copy)"
    # each derived arm right after the table's own, copies first, in the config's order
    assert list(arms)[-2:] == ["m~aa", "native@m"]
    # the source's keys in its order, then the key naming what it derives from: the
    # table's JSON (a fold job's params) is what it was
    assert list(arms["m~aa"]) == list({**table["arms"]["m"], "copy_of": 1, "title": 1,
                                       "description": 1})
    assert json.dumps(with_aa_copies(table, {})) == json.dumps(table)  # nothing derived


def test_the_config_and_a_package_name_the_same_derived_arms(tmp_path, resources):
    """A reviewer's package (config `evidence`) knows a derived arm by its id alone."""
    table = load_arm_table(resources)
    cfg = {"sweeps": {"s": {"arms": ["native", "m"], "controls": {"aa": "m"},
                            "native_with": ["m"]}}}
    (tmp_path / "rows.csv").write_text("sweep,arm\ns,m\ns,m~aa\ns,native@m\ns,native\n")
    packaged = {"evidence": str(tmp_path)}
    assert aa_copies(cfg) == aa_copies(packaged) == {"m~aa": "m"}
    assert native_prompts(cfg, table) == native_prompts(packaged, table) == {
        "native@m": ("native", "m")}


def test_an_id_is_derived_from_arms_only_where_it_names_only_them():
    arms = {"native", "m"}
    assert derived_from("m~aa", arms) and derived_from("native@m", arms)
    assert not derived_from("j~aa", arms) and not derived_from("nope@m", arms)
    assert not derived_from("m", arms)  # an arm's own id is no derived one


def test_a_later_kind_is_one_declaration():
    """Room for a later kind: its id, parse and entry come from its declaration alone."""
    half = Derivation(name="half", id_rule="{arm}+half", source="arm",
                      names=("halved_from", "arm"), title_rule="{arm_title}, halved",
                      description_rule="arm {arm} at half its capacity")
    assert half.make("m") == "m+half" and half.read("m+half") == ("m",)
    assert half.read("m~aa") is None
    entry = half.entry(("m",), {"m": {"title": "plain", "carry": "text"}})
    assert entry == {"title": "plain, halved", "carry": "text", "halved_from": "m",
                     "description": "arm m at half its capacity"}


@pytest.mark.parametrize("rule, why", [
    ("{arm}-copy", "no mark an arm id cannot hold"),  # `-` is an arm id's character
    ("{a}{b}~x", "two fields with no mark"),
    ("~x", "no field"),
])
def test_a_kind_whose_ids_could_collide_is_refused_where_declared(rule, why):
    with pytest.raises(ValueError, match=why):
        Derivation(name="bad", id_rule=rule, source="arm", names=("copy_of", "arm"),
                   title_rule="", description_rule="")


def test_a_native_arms_title_on_a_proxy_model_names_the_endpoint_never_the_provider(resources):
    """A model whose config says native_via: proxy: its native arm, native@ARM and an A/A
    copy of native are titled by the endpoint's compaction (its host and port, never the
    URL's path, userinfo or query); on the provider's API each title is the table's."""
    table = load_arm_table(resources)
    cfg = {"sweeps": {"s": {"arms": ["j", "m", "native"], "controls": {"aa": "native"},
                            "native_with": ["m"]}}}
    arms = with_native_prompts(with_aa_copies(table, cfg), cfg)["arms"]
    proxy = native_words({"native_via": "proxy",
                          "base_url": "https://user:secret@gw.example:8443/v1?key=abc"})
    assert native_with_title("m", proxy) == "compaction by gw.example:8443 with m's prompt"
    said = {a: spec_title(arms[a], proxy) for a in ("native", "native@m", "native~aa", "m")}
    assert said == {"native": "compaction by gw.example:8443",
                    "native@m": "compaction by gw.example:8443 with m's prompt",
                    "native~aa": "compaction by gw.example:8443 (A/A copy)",
                    "m": table["arms"]["m"]["title"]}
    for title in said.values():
        assert not [w for w in ("provider", "secret", "user", "/v1", "key", "abc") if w in title]
    for a in ("native", "native@m", "native~aa", "m"):  # the provider's: unchanged
        assert spec_title(arms[a]) == spec_title(arms[a], native_words({})) == arms[a]["title"]
