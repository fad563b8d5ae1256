"""The Arm (study/arm.py): what a record keeps of it, the name it sends on the wire, and
the one predicate of the matched comparison, for the paper's arms and those derived or
added beside them."""

from __future__ import annotations

import dataclasses

from foldstudy.study.arm import INDEX_KEYS, INSTRUCTION_KEYS, Arm, is_index_arm, is_matched
from foldstudy.study.derived import with_aa_copies, with_native_prompts
from foldstudy.study.spec import load_arm_table, resolve_arm


def _table(resources):
    cfg = {"sweeps": {"s": {"arms": ["native", "j"], "controls": {"aa": "j"},
                            "native_with": ["m"]}}}
    table = load_arm_table(resources)
    return with_native_prompts(with_aa_copies(table, cfg), cfg)


def test_a_plain_arms_record_writes_no_key_of_another_kind(resources):
    """An arm without an index, a copy or instructions keeps the keys records always had."""
    m = resolve_arm("m", _table(resources), resources, 0.25)
    d = m.to_dict()
    assert not set(INDEX_KEYS) & set(d) and not set(INSTRUCTION_KEYS) & set(d)
    assert "copy_of" not in d and Arm.from_dict(dataclasses.asdict(m)) == m
    assert m.wire_arm == "m" and not m.has_index


def test_each_kind_keeps_its_own_keys_and_sends_its_sources_name(resources):
    table = _table(resources)
    copy, index, made = (resolve_arm(a, table, resources, 0.25)
                         for a in ("j~aa", "jx", "native@m"))
    assert copy.to_dict()["copy_of"] == "j" and copy.wire_arm == "j"
    assert set(INDEX_KEYS) <= set(index.to_dict()) and index.wire_arm == "j"
    assert index.has_index and "copy_of" not in index.to_dict()
    assert made.to_dict()["instructions_from"] == "m" and made.wire_arm == "native@m"
    assert set(INSTRUCTION_KEYS) <= set(made.to_dict())
    for arm in (copy, index, made):
        assert Arm.from_dict(dataclasses.asdict(arm)) == arm


def test_the_matched_comparison_holds_the_model_written_arms_only(resources):
    table = _table(resources)
    assert is_matched(table["arms"]["m"]) and is_matched(resolve_arm("m", table, resources, 1))
    assert is_index_arm(table["arms"]["jx"]) and not is_index_arm(table["arms"]["j"])
    for outside in ("jx", "native", "j~aa", "native@m"):
        assert not is_matched(table["arms"][outside]), outside
    assert not is_matched({**table["arms"]["m"], "match": False})  # an own arm's key
    assert not is_matched(resolve_arm("j~aa", table, resources, 1))
