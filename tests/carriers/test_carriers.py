"""The carrier kinds, registered once (workflow/foldstudy/carriers/): every kind arms.yaml
names resolves to its one class, an unknown one is refused naming the kinds known, a kind
added under `@register_carrier` is taken by resolve_arm and the own-arm schema with no
other change, no module outside the package tests a kind's name, and a run record whose
carry claims disagree with its arm's kind is refused naming the file."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from foldstudy.carriers import registry
from foldstudy.carriers.base import Carrier
from foldstudy.carriers.registry import carrier_for, carrier_of, register_carrier
from foldstudy.grade.rows import RunRecordError, read_record
from foldstudy.study.arm import is_index_arm, is_matched
from foldstudy.study.own_arms import own_arms_schema
from foldstudy.study.spec import SpecError, load_arm_table, resolve_arm

from ..conftest import ROOT

PACKAGE = ROOT / "workflow" / "foldstudy"


def test_every_arm_of_arms_yaml_has_its_kind(resources):
    table = load_arm_table(resources)
    kinds = {a: carrier_of(resolve_arm(a, table, resources, 1.0)).kind for a in table["arms"]}
    assert kinds["f"] == "raw_json" and kinds["n"] == "field" and kinds["k"] == "under_headings"
    assert kinds["m"] == "text" and kinds["j"] == "rendered" and kinds["native"] == "native"
    assert kinds["native_keep2"] == "native:keep_recent"
    # the index arms are their base's kind, wrapped
    assert kinds["jx"] == kinds["mx"] == "index"
    jx = carrier_of(resolve_arm("jx", table, resources, 1.0))
    assert jx.index_base == "j" and jx.inner is not None and jx.inner.kind == "rendered"
    assert is_index_arm(table["arms"]["jx"]) and not is_index_arm(table["arms"]["j"])
    # what the if-chains decided, now each kind's
    # the paper's twelve are matched; every arm beyond them (index arms, the provider's
    # compaction, the carriers that keep the session) is outside
    matched = [a for a in table["arms"] if is_matched(table["arms"][a])]
    assert matched == list("fnjpqkomtulg")
    assert {"jx", "mx", "native", "uncompacted", "clear"} <= {
        a for a in table["arms"] if not is_matched(table["arms"][a])}
    assert [a for a in table["arms"] if carrier_of(table["arms"][a]).may_be_opaque] == \
        ["native", "native_keep2"]


def test_an_unknown_kind_is_refused_naming_the_known_ones(resources):
    table = load_arm_table(resources)
    table["arms"]["m"]["carry"] = "verbatim"
    with pytest.raises(SpecError) as e:
        resolve_arm("m", table, resources, 1.0)
    assert str(e.value) == f"arms.m.carry: 'verbatim' (known: {registry.known_kinds()})"
    assert {"field:NAME", "native", "raw_json", "rendered", "text", "under_headings",
            "uncompacted", "clear_tool_output:K"} <= set(registry.known_kinds().split())


def test_a_kind_is_registered_once():
    class Twice(Carrier):
        kind, pattern = "text", "text"

    with pytest.raises(TypeError, match="registered twice"):
        register_carrier(Twice)


@pytest.fixture()
def verbatim():
    """A kind added as a plugin would add it: one class under @register_carrier."""
    registry.carrier_classes()

    @register_carrier
    class Verbatim(Carrier):
        kind, pattern, words = "verbatim", "verbatim", "the reply, verbatim"

    yield Verbatim
    del registry._TABLE.classes["verbatim"]


def test_a_registered_kind_needs_no_other_change(resources, verbatim):
    table = load_arm_table(resources)
    table["arms"]["m"]["carry"] = "verbatim"
    arm = resolve_arm("m", table, resources, 1.0)
    assert isinstance(carrier_of(arm), verbatim) and is_matched(arm)
    assert carrier_for("verbatim").describe(arm) == "the reply, verbatim"
    pattern = own_arms_schema(list(table["arms"]), "^x$")["properties"]["arms"][
        "additionalProperties"]["properties"]["carry"]["pattern"]
    assert pattern == ("^(field:[A-Za-z0-9_]+|raw_json|rendered|text|under_headings|verbatim)"
                       "$(?!\\n)")


def _kind_names() -> set[str]:
    return set(registry.carrier_classes())


def test_no_module_outside_the_carriers_package_tests_a_kinds_name():
    """Each kind's name is said in its own module only: a comparison with a kind's name,
    or a `carry` tested by its prefix, elsewhere is an if-chain the registry replaced."""
    names = _kind_names() | {"field:"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("carriers/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            consts: list[ast.expr] = []
            if isinstance(node, ast.Compare):
                consts = [node.left, *node.comparators]
                consts += [e for c in node.comparators if isinstance(c, (ast.Tuple, ast.List,
                                                                          ast.Set))
                           for e in c.elts]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "startswith"
                  and "carry" in ast.unparse(node.func.value)):
                consts = list(node.args)
            hits = [c.value for c in consts if isinstance(c, ast.Constant)
                    and isinstance(c.value, str) and c.value in names]
            if hits and "carry" in ast.unparse(node):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def _record(resources, tmp_path: Path, arm: str, **extra) -> Path:
    table = load_arm_table(resources)
    spec = resolve_arm(arm, table, resources, 0.25).to_dict()
    record = {"status": "run", "row_id": f"s/m/r0/{arm}", "sweep": "s", "model": "m",
              "arm": arm, "repeat": 0, "arm_spec": spec, "folds": [], **extra}
    path = tmp_path / f"{arm}.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def test_an_opaque_carry_claimed_by_an_arm_that_is_never_opaque_is_refused(resources, tmp_path):
    """Issue: a forged record of arm m claiming `native: {opaque: true}` was graded as
    opaque without a word (its facts neither kept nor lost in every survival count)."""
    path = _record(resources, tmp_path, "m", native={"opaque": True})
    with pytest.raises(RunRecordError) as e:
        read_record(str(path))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}: run record of arm 'm' claims an "
                                              "opaque carry (native.opaque)")
    assert "(text) never has" in msg and "only on native" in msg
    fold = _record(resources, tmp_path, "jx", folds=[{"carry_opaque": True}])
    with pytest.raises(RunRecordError, match=r"jx.json: .*folds\[\]\.carry_opaque"):
        read_record(str(fold))


def test_the_provider_compaction_may_claim_an_opaque_carry(resources, tmp_path):
    path = _record(resources, tmp_path, "native", native={"opaque": True},
                   folds=[{"carry_opaque": True}])
    assert read_record(str(path)).native["opaque"] is True
    assert read_record(str(_record(resources, tmp_path, "m"))).arm == "m"


def test_an_arm_spec_naming_no_kind_is_refused_naming_the_file(resources, tmp_path):
    path = _record(resources, tmp_path, "m")
    doc = json.loads(path.read_text())
    doc["arm_spec"]["carry"] = "verbatim"
    path.write_text(json.dumps(doc))
    with pytest.raises(RunRecordError, match=r"m.json: run record whose arm_spec names no "
                                             r"carrier \('verbatim' \(known:"):
        read_record(str(path))
