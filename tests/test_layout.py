"""The tree's conventions, checked: formatting, the generated config reference, one home
for arm identity, for derived arms' ids and for every backend capability, and stages that
import only downward."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from string import Formatter

import pytest
import yaml

from foldstudy.backends.base import Backend
from foldstudy.study import configdoc
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.derived import DERIVATIONS
from foldstudy.study.spec import arm_ids, load_arm_table

from .conftest import ROOT

BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_python_is_ruff_clean():
    p = run(str(BIN / "ruff"), "check", ".")
    assert p.returncode == 0, p.stdout + p.stderr


def test_rules_are_snakefmt_clean():
    p = run(str(BIN / "snakefmt"), "--check", "Snakefile", "workflow/rules")
    assert p.returncode == 0, p.stdout + p.stderr


def test_config_readme_is_generated_from_the_schema():
    schema = yaml.safe_load(configdoc.SCHEMA.read_text(encoding="utf-8"))
    assert configdoc.README.read_text(encoding="utf-8") == configdoc.config_readme(schema), (
        "config/README.md is stale: run .venv/bin/python -m foldstudy.study.configdoc")
    # every key of every section is described there
    for section in ("models", "sweeps", "arm_overrides"):
        for key in schema["properties"][section]["additionalProperties"]["properties"]:
            assert f"`{key}`" in configdoc.README.read_text(encoding="utf-8")


def test_no_arm_id_is_written_outside_arms_yaml():
    """An arm is named in resources/arms.yaml only: no enum, regex or tuple repeats them."""
    ids = arm_ids(load_arm_table(ROOT / "resources"))
    listing = re.compile(r"\[\s*" + r"\s*,\s*".join(ids[:4]))  # a YAML list of the first four
    literal = re.compile(r"[(\[]\s*" + r",\s*".join(f'"{a}"' for a in ids[:4]))
    for path in [ROOT / "config/schema/config.schema.yaml", ROOT / "resources/analysis.yaml",
                 *ROOT.glob("workflow/**/*.py"), *ROOT.glob("workflow/rules/*.smk"),
                 *ROOT.glob("tests/*.py"), *ROOT.glob("tests/*/test_*.py"),
                 *ROOT.glob("tests/support/*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not listing.search(text) and not literal.search(text), path
        assert "".join(ids) not in text, path
        assert " ".join(sorted(ids)) not in text, path  # a message's "known: f g j ..."


# A derived arm's id (study/derived.py: `ARM~aa`, `native@ARM`) is split and built there
# only. The marks come from its id rules: those between two fields (`@`), those ending a
# rule (`~aa`) or opening one; a separator is a mark or the start of one (`~`).
_STR_OPS = {"partition", "rpartition", "split", "rsplit", "startswith", "endswith",
            "removeprefix", "removesuffix", "find", "rfind", "index", "rindex", "count",
            "replace"}


def _rule_marks() -> tuple[set[str], set[str], set[str]]:
    """(marks between two fields, marks ending a rule, marks opening one) of every
    derivation's id rule."""
    infix, suffix, prefix = set(), set(), set()
    for d in DERIVATIONS:
        parsed = list(Formatter().parse(d.id_rule))  # (text before a field, field), ...
        prefix |= {parsed[0][0]} - {""}
        for text, name, _, _ in parsed[1:]:
            (infix if name is not None else suffix).update({text} - {""})
    return infix, suffix, prefix


def _is_str(node: ast.AST, test) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and test(node.value)


def arm_id_splits(path: Path) -> list[str]:
    """Where a module splits or builds a derived arm's id by hand, one line each: a string
    method on a separator (`.partition("@")`, `.endswith("~aa")`), `SEP.join`, `SEP in x`,
    an f-string or `+` that writes an id rule (`f"{a}~aa"`, `f"{n}@{a}"`, `a + "~aa"`,
    `n + "@" + a`), or a name given a separator (`MARK = "@"`). Other uses of the
    characters (`"@id" in entity`, `f"{user}@"`, a regex) are no id's."""
    infix, suffix, prefix = _rule_marks()
    seps = infix | suffix | prefix | {m[:i] for m in infix | suffix | prefix
                                      for i in range(1, len(m))}
    is_sep = lambda v: v in seps or v.endswith(tuple(suffix))  # noqa: E731
    out = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        what = ""
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in _STR_OPS and any(_is_str(a, is_sep) for a in n.args):
                what = f".{n.func.attr}() on a separator"
            elif n.func.attr == "join" and _is_str(n.func.value, lambda v: v in seps):
                what = "a separator's join()"
        elif isinstance(n, ast.Compare) and _is_str(n.left, lambda v: v in seps):
            what = "a separator tested with in"
        elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and _is_str(
                n.value, lambda v: v in seps):
            what = "a separator named"  # a mark of its own (`AA_MARK = "~aa"`)
        elif isinstance(n, ast.JoinedStr):
            v = n.values
            field = [isinstance(x, ast.FormattedValue) for x in v]
            if any(field[i] and field[i + 2] and _is_str(v[i + 1], lambda t: t in infix)
                   for i in range(len(v) - 2)) or any(
                    field[i] and _is_str(v[i + 1], lambda t: t.startswith(tuple(suffix)))
                    for i in range(len(v) - 1)) or any(
                    field[i + 1] and _is_str(v[i], lambda t: t.endswith(tuple(prefix)))
                    for i in range(len(v) - 1)):
                what = "an f-string writing an id rule"
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            if _is_str(n.right, lambda t: t.startswith(tuple(suffix))) or (
                    _is_str(n.left, lambda t: t.endswith(tuple(prefix)))) or (
                    isinstance(n.left, ast.BinOp) and isinstance(n.left.op, ast.Add)
                    and _is_str(n.left.right, lambda t: t in infix)
                    and not isinstance(n.right, ast.Constant)):
                what = "+ writing an id rule"
        if what:
            out.append((n.lineno, f"{path.name}:{n.lineno}: {what}"))
    return [line for _, line in sorted(out)]


def test_no_module_but_derived_splits_or_builds_a_derived_arm_id():
    """A derived arm's id rule is declared once (study/derived.py parse and make): a
    module that partitions an id on `@` or appends `~aa` itself reads a rule the table
    may change."""
    found = [x for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "study/derived.py"
             for x in arm_id_splits(p)]
    assert not found, "split or build derived arm ids with study/derived.py:\n" + "\n".join(
        found)


def test_the_derived_id_check_sees_a_module_splitting_an_id(tmp_path):
    """The check itself: each way of splitting or building an id by hand is named by its
    line, and the package's other uses of `@` (JSON-LD keys, user@ markers, a regex
    after a prefix) are not."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f(a, n, x):\n"
                   "    native, _, arm = a.partition('@')\n"
                   "    copy = a.endswith('~aa')\n"
                   "    made = f'{n}@{a}'\n"
                   "    aa = f'{a}~aa'\n"
                   "    aa2 = a + '~aa'\n"
                   "    made2 = n + '@' + a\n"
                   "    return '@' in x, '@'.join([n, a]), a.split('~')\n"
                   "MARK = '~aa'\n")
    assert [line.split(": ")[0] for line in arm_id_splits(bad)] == [
        f"bad.py:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 8, 8, 9)]
    ok = tmp_path / "ok.py"
    ok.write_text("def g(e, user, p, prefix):\n"
                  "    return ('@id' in e, f'{user}@', '@' + p, prefix + r'@[\\w.]+',\n"
                  "            p.startswith(('/', '~', '@')), f'{p} (A/A copy)')\n")
    assert arm_id_splits(ok) == []


def test_the_config_check_follows_the_arm_table(config_schema, resources):
    table = load_arm_table(resources)
    table["arms"]["z"] = dict(table["arms"]["m"], title="a thirteenth arm")
    cfg = {"models": {"s": {"backend": "embedded"}},
           "sweeps": {"x": {"scenario": "distributed", "models": ["s"], "arms": ["z", "y"],
                            "repeats": 1}}}
    with pytest.raises(ConfigError) as e:
        load_study(cfg, config_schema, table, resources)
    known = " ".join(sorted(arm_ids(table)))  # z among them
    assert f"config.sweeps.x.arms[1]: 'y' is not an arm (known: {known})" in str(e.value)
    assert "arms[0]" not in str(e.value)  # the new arm is known everywhere at once


def test_backend_capabilities_are_declared_not_probed():
    """Every capability a caller asks about has a default on the base class, and nothing
    in the package asks a backend what it is with getattr or hasattr."""
    for name in ("replay", "retry_policy", "context_length", "lists_endpoints",
                 "wire_parameters", "without", "list_endpoints", "model_info", "pinned",
                 "missing_key", "describe", "config_context_length", "replay_tokenizer",
                 "audit_prices", "endpoint_pin"):
        assert hasattr(Backend, name), name
    for path in ROOT.glob("workflow/**/*.py"):
        code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines())
        assert not re.search(r"\b(getattr|hasattr)\(\s*(backend|self\.backend|b)\b", code), path


def test_the_fast_yaml_loader_reads_every_project_file_as_the_safe_loader_does(tmp_path):
    """io.load_yaml takes libyaml's loader where PyYAML has it; it must be a speed-up
    only: every YAML file the workflow reads comes out identical to yaml.safe_load."""
    from foldstudy.io import _SAFE_LOADER, load_yaml

    assert _SAFE_LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = sorted([*ROOT.glob("resources/**/*.yaml"), *ROOT.glob("config/**/*.yaml"),
                    *ROOT.glob("profiles/**/*.yaml")])
    assert len(files) >= 10
    for f in files:
        assert load_yaml(f) == yaml.safe_load(f.read_text(encoding="utf-8")), f
    # safe: a Python object tag is refused, as yaml.safe_load refuses it
    bad = tmp_path / "tag.yaml"
    bad.write_text("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.YAMLError):
        load_yaml(bad)


# The package's layers, lowest first: a module may import its own layer and the layers
# below it, never one above. Each stage package of workflow/foldstudy and each top module
# has one place here. Not the rules' order where the two differ: `study` reads the
# backends' model defaults; `evidence` is the contract (columns, loading) that `grade`
# writes to; `run` asks `grade`'s one validity rule whether a row may be retried, while
# `grade` reads run records as data, never run's code.
LAYERS = ("errors", "kinds", "io", "credentials", "secret_plugins", "secrets", "backends",
          "records", "transcripts", "carriers", "study",
          "evidence", "grade", "run", "analysis", "report", "release", "wiring")
# Where a layer may reach a lower one only through named modules: run asks grade's
# validity rule, and nothing else of grade; what the grader counts in a carry (headings,
# an envelope) grade counts from the recorded carry, so no run record freezes a count.
NARROW = {("run", "grade"): {"foldstudy.grade.validity"}}
# Known upward imports, each to be removed (module, the module it imports): none left.
ALLOWED_UPWARD: set[tuple[str, str]] = set()
PACKAGE = ROOT / "workflow/foldstudy"


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every foldstudy module a file imports, with its line: function-level imports too
    (the lazy ones), relative ones resolved."""
    here = list(path.relative_to(PACKAGE.parent).parts[:-1])  # where `.` starts
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (here[:len(here) - node.level + 1] if node.level else [])
            mod = ".".join(base + ([node.module] if node.module else []))
            # `from ..grade import validity` imports the module grade.validity
            out += [(f"{mod}.{a.name}" if _is_module(f"{mod}.{a.name}") else mod, node.lineno)
                    for a in node.names]
    return sorted({(m, line) for m, line in out if m.startswith("foldstudy.")})


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _layer(module: str) -> str:
    return module.split(".")[1]


def package_imports() -> list[tuple[str, str, int]]:
    """(importer, imported, line) of every import from one layer into another."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = _module(path)
        if me == "foldstudy":
            continue
        out += [(me, m, line) for m, line in _imports(path) if _layer(m) != _layer(me)]
    return out


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one layer (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def module_imports() -> set[tuple[str, str]]:
    """(importer, imported) of every import from one module of the package into another,
    function-level ones included."""
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        me = _module(path)
        out |= {(me, m) for m, _ in _imports(path) if m != me and m != "foldstudy"}
    return out


def package_modules() -> list[str]:
    return sorted(_module(p) for p in PACKAGE.rglob("*.py"))


def test_every_stage_package_and_top_module_has_a_layer():
    found = {p.name if p.is_dir() else p.stem for p in PACKAGE.iterdir()
             if (p.is_dir() and (p / "__init__.py").is_file())
             or (p.suffix == ".py" and p.stem != "__init__")}
    assert found == set(LAYERS), f"give each a place in LAYERS: {sorted(found ^ set(LAYERS))}"


# The folders of tests/ that mirror no package: whole-workflow runs (snakemake on tiny
# configs), the SLURM cluster's, the stand-ins and builders the tests share, and samples.
TESTS_BEYOND_THE_PACKAGE = {"workflow": "real snakemake runs", "cluster": "a real SLURM",
                            "support": "shared stand-ins", "data": "sample files"}


def _tested_packages(test: Path, seen: frozenset[Path] = frozenset()) -> set[str]:
    """The package's subpackages a test file imports, directly or through a sibling test
    module of its folder (`from .test_x import ...`)."""
    out = set()
    for node in ast.walk(ast.parse(test.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.level == 0 and node.module.startswith("foldstudy."):
            out.add(node.module.split(".")[1])
        elif node.level == 1 and (sibling := test.parent / f"{node.module}.py").is_file() \
                and sibling not in seen:
            out |= _tested_packages(sibling, seen | {test})
    return out


def mirror_problems(tests: Path, package: Path) -> list[str]:
    """Where tests/ stops mirroring the package: a subpackage with no tests/<name>/, a
    folder of tests/ that is neither a subpackage nor one of TESTS_BEYOND_THE_PACKAGE,
    and a test file in tests/<name>/ that imports nothing of foldstudy.<name>."""
    subpackages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    out = [f"foldstudy/{s}/ has no tests/{s}/" for s in sorted(subpackages - folders)]
    out += [f"tests/{f}/ mirrors no package folder" for f in
            sorted(folders - subpackages - set(TESTS_BEYOND_THE_PACKAGE))]
    for s in sorted(subpackages & folders):
        out += [f"tests/{s}/{t.name} tests nothing of foldstudy/{s}/ (it belongs beside "
                "what it imports)" for t in sorted((tests / s).glob("test_*.py"))
                if s not in _tested_packages(t)]
    return out


def test_tests_mirror_the_package():
    """A contributor finds a module's tests in the folder named like the module's own:
    tests/study/ for foldstudy/study/, and so on."""
    assert mirror_problems(ROOT / "tests", PACKAGE) == []


def test_the_mirror_check_sees_a_misplaced_test(tmp_path):
    package, tests = tmp_path / "foldstudy", tmp_path / "tests"
    for d in (package / "a", package / "b", tests / "a", tests / "stray"):
        d.mkdir(parents=True)
    for d in (package / "a", package / "b"):
        (d / "__init__.py").write_text("")
    (tests / "a" / "test_ok.py").write_text("from foldstudy.a.x import y\n")
    (tests / "a" / "test_via.py").write_text("from .test_ok import y\n")
    (tests / "a" / "test_wrong.py").write_text("from foldstudy.b.x import y\n")
    assert mirror_problems(tests, package) == [
        "foldstudy/b/ has no tests/b/", "tests/stray/ mirrors no package folder",
        "tests/a/test_wrong.py tests nothing of foldstudy/a/ (it belongs beside what it "
        "imports)"]


def test_no_import_cycle_among_the_stage_packages():
    edges = {(_layer(a), _layer(b)) for a, b, _ in package_imports()
             if (a, b) not in ALLOWED_UPWARD}
    assert not _cycles(edges), f"import cycles among the layers: {_cycles(edges)}"


def test_no_import_cycle_among_the_modules():
    """study/fixtures.py and study/sessions.py imported each other (one import
    hidden in a function, so nothing failed until the wrong one was imported first). A
    cycle between two modules of one layer is one too: what both need goes below both."""
    cycles = _cycles(module_imports())
    assert not cycles, f"import cycles among the modules: {cycles}"


# Each module imported first, with no foldstudy module loaded before it: a cycle that
# only some import orders survive fails here, whichever module a rule's script names.
FRESH_IMPORTS = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "foldstudy" or m.startswith("foldstudy.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_first_in_a_fresh_interpreter():
    p = subprocess.run([sys.executable, "-c", FRESH_IMPORTS, *package_modules()], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"modules that fail imported first:\n{p.stdout}{p.stderr}"


def test_every_import_goes_down_the_layers():
    """(b) no import against the layering, lazy ones included (the upward imports the
    package has had were lazy: analysis inside evidence.load, the release scanner inside
    the config check)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = [f"{a} imports {b} (line {line}): {_layer(a)} is below {_layer(b)}"
              for a, b, line in package_imports()
              if rank[_layer(b)] > rank[_layer(a)] and (a, b) not in ALLOWED_UPWARD]
    upward += [f"{a} imports {b} (line {line}): {_layer(a)} uses {_layer(b)} only through "
               f"{', '.join(sorted(NARROW[_layer(a), _layer(b)]))}"
               for a, b, line in package_imports()
               if b not in NARROW.get((_layer(a), _layer(b)), {b})]
    assert not upward, "\n".join(upward)
    imported = {(a, b) for a, b, _ in package_imports()}
    assert ALLOWED_UPWARD <= imported, (
        f"no longer imported, delete from ALLOWED_UPWARD: {sorted(ALLOWED_UPWARD - imported)}")


def test_the_layer_check_sees_a_lazy_upward_import(tmp_path, monkeypatch):
    """The check itself: a function-level import of a higher layer is found, and a cycle
    between two layers is named."""
    src = tmp_path / "foldstudy"
    (src / "evidence").mkdir(parents=True)
    (src / "analysis").mkdir()
    (src / "evidence/load.py").write_text("def f():\n    from ..analysis.analysis import A\n")
    (src / "analysis/analysis.py").write_text("from ..evidence import load\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", src)
    found = package_imports()
    assert ("foldstudy.evidence.load", "foldstudy.analysis.analysis", 2) in found
    assert _cycles({(_layer(a), _layer(b)) for a, b, _ in found}) == [["analysis", "evidence"]]


def test_the_module_check_sees_a_lazy_cycle_inside_one_layer(tmp_path, monkeypatch):
    """The check itself: two modules of one layer importing each other, one of them in a
    function, as study/fixtures.py and study/sessions.py did, are named."""
    src = tmp_path / "foldstudy"
    (src / "study").mkdir(parents=True)
    (src / "study/fixtures.py").write_text("def stage():\n    from .sessions import make\n")
    (src / "study/sessions.py").write_text("from .fixtures import manifest\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", src)
    assert _cycles(module_imports()) == [["foldstudy.study.fixtures",
                                          "foldstudy.study.sessions"]]


# A function a reader holds in one screen, a module a reader holds in one sitting: past
# these the next contributor edits what they have not read. docs/design.md names any
# module that is one piece on purpose; none is today.
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 80, 600


def size_problems(package: Path) -> list[str]:
    """Each function over MAX_FUNCTION_LINES and each module over MAX_MODULE_LINES."""
    out = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(package.parent).as_posix()
        if (n := text.count("\n")) > MAX_MODULE_LINES:
            out.append(f"{rel}: {n} lines")
        out += [f"{rel}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
                for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    return out


def test_no_function_or_module_past_its_size():
    assert size_problems(PACKAGE) == []


def test_the_size_check_sees_a_long_function_and_a_long_module(tmp_path):
    package = tmp_path / "foldstudy"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (package / "long.py").write_text("def f():\n" + body)
    (package / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert size_problems(package) == [f"foldstudy/big.py: {MAX_MODULE_LINES + 1} lines",
                                      f"foldstudy/long.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
