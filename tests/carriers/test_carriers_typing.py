"""The carriers' hooks, typed (workflow/foldstudy/carriers/): mypy passes in strict
mode on the package ([tool.mypy] in pyproject.toml), no hook of the interface takes or
gives `Any`, and a wrapped carrier (an index arm's) is its inner carrier in every hook it
does not override, with no hook forwarded by hand."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from foldstudy.carriers.base import Carrier
from foldstudy.carriers.index import IndexCarrier
from foldstudy.carriers.registry import carrier_for
from foldstudy.carriers.wrapped import WrappedCarrier, hook_names

from ..conftest import ROOT

BASE = ROOT / "workflow/foldstudy/carriers/base.py"


def test_the_carriers_pass_mypy_strict(tmp_path):
    p = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                        "--cache-dir", str(tmp_path), "--strict",
                        "workflow/foldstudy/carriers",
                        "workflow/foldstudy/records/probe_record.py",
                        "workflow/foldstudy/analysis/card.py"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def test_no_hook_of_the_interface_is_typed_any():
    (cls,) = [n for n in ast.parse(BASE.read_text(encoding="utf-8")).body
              if isinstance(n, ast.ClassDef) and n.name == "Carrier"]
    hooks = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert {h.name for h in hooks} >= set(hook_names())
    untyped = [f"{h.name}: {ast.unparse(a)}" for h in hooks
               for a in [*(x.annotation for x in h.args.args[1:]), h.returns]
               if a is None or "Any" in ast.unparse(a)]
    assert untyped == []


def test_every_hook_of_the_interface_is_forwarded_by_a_wrapped_carrier():
    names = hook_names()
    assert {"fold", "after_fold", "render", "recall_carry", "finish", "permission",
            "index_base"} <= set(names)
    assert [n for n in names if vars(WrappedCarrier).get(n) is None] == []


class _Inner(Carrier):
    """A kind whose every answer is its own, to tell the wrapped carrier's from the
    interface's default."""

    kind, pattern = "inner_for_test", "inner_for_test"
    may_be_opaque = True
    sends_fold_shape = False

    def describe(self, arm):
        return "inner words"

    def carried_fields(self, arm):
        return ["inner_field"]

    def recall_bound(self, arm, session_tokens):
        return 7.0

    def permission(self, probe, backend):
        return {"allowed": True, "verdict": "inner", "reason": "", "responsible_parameter": ""}


def test_an_index_carrier_is_its_inner_carrier_in_every_hook_it_does_not_override():
    inner = _Inner("inner_for_test")
    index = IndexCarrier("j", inner)
    assert index.describe(None) == "inner words"
    assert index.carried_fields(None) == ["inner_field"]
    assert index.recall_bound(None, 0.0) == 7.0
    assert index.permission({}, "echo") == inner.permission({}, "echo")
    assert index.may_be_opaque and not index.sends_fold_shape
    # what the index changes is its own
    assert index.kind == "index" and not index.matched and index.index_base == "j"
    assert index.outside({}) == "an index arm, read on its card line against its base arm j"
    plain = IndexCarrier("m", carrier_for("text"))
    assert not plain.may_be_opaque and plain.sends_fold_shape
    assert plain.describe(None) == carrier_for("text").describe(None)


def test_an_index_carrier_of_no_resolved_kind_refuses_its_hooks_naming_its_base():
    entry = IndexCarrier("j", None)
    assert not entry.may_be_opaque and entry.index_base == "j"
    with pytest.raises(TypeError, match="the index arm on j was not resolved"):
        entry.describe(None)
