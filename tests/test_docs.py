"""The docs cannot rot: every command a page shows runs, every page is linked, and the
rule graph in docs/design.md is the workflow's own.

A command is a line of a fenced ```sh block in README.md, docs/*.md or config/README.md.
Snakemake commands run with `-n` (they plan, call nothing); other commands run with
`--help`. They run as a user would type them from the checkout, in a scratch working
directory that holds what the pages name beside the checkout's own files: a reviewer's
`package/` (built by tests/support from the paper's tables) and the example session.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .support.paper_package import paper_package_dir
from .support.procs import run_group, snakemake

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "config/README.md"]
FENCE = re.compile(r"^[ \t]*```(?:sh|bash)\n(.*?)^[ \t]*```", re.S | re.M)
README_LIMIT = 12 * 1024 + 512  # "at most about 12 KB"


def shown_commands() -> list[tuple[str, int, str, dict[str, str]]]:
    """(page, block number, command, the environment its block's exports set)."""
    out = []
    for page in PAGES:
        for n, block in enumerate(FENCE.findall(page.read_text(encoding="utf-8")), 1):
            env: dict[str, str] = {}
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("export "):
                    name, _, value = line[len("export "):].partition("=")
                    env[name] = value
                    continue
                for command in line.split("&&"):
                    out.append((page.relative_to(ROOT).as_posix(), n, command.strip(),
                                dict(env)))
    return out


COMMANDS = shown_commands()


def distinct_commands() -> list[tuple[str, str, dict[str, str]]]:
    """Each command once, with its environment, and where it is shown ("page#block",
    joined): a command two pages show is one run of Snakemake, not two."""
    where: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for page, block, command, env in COMMANDS:
        where.setdefault((command, tuple(sorted(env.items()))), []).append(f"{page}#{block}")
    return [(", ".join(shown), command, dict(env)) for (command, env), shown in where.items()]


DISTINCT = distinct_commands()


def _argv(command: str) -> list[str]:
    """How the test runs a shown command: plan it, or ask for its help."""
    words = shlex.split(command)
    head, rest = words[0], words[1:]
    if head == ".venv/bin/snakemake":
        return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *rest, "-n"]
    if head == "./setup.sh":
        return ["bash", str(ROOT / "setup.sh"), "--help"]
    if head == ".venv/bin/python":
        if rest[:2] == ["-m", "pytest"]:
            return [sys.executable, "-m", "pytest", "--help"]
        if rest and rest[0].endswith(".py"):
            return [sys.executable, str(ROOT / rest[0]), "--help"]
    if head.startswith(".venv/bin/") and "/" not in head[len(".venv/bin/"):]:
        return [str(Path(sys.executable).parent / head[len(".venv/bin/"):]), "--help"]
    raise AssertionError(f"a command this test does not know how to check: {command!r}; "
                         "teach _argv its dry form, or show it outside a ```sh block")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A working directory laid out like the checkout, plus what the pages name in it."""
    work = tmp_path_factory.mktemp("docs")
    for name in ("config", "profiles", "resources", "workflow", "bench", "tests"):
        (work / name).symlink_to(ROOT / name)
    (work / "results/store").mkdir(parents=True)  # a reviewer's replay: the store copied in
    package = work / "package"
    paper_package_dir(package / "evidence")
    shutil.copy(ROOT / "config/study-paper.yaml", package / "config.yaml")
    return work


def test_the_readme_is_a_five_minute_page_that_links_every_doc():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= README_LIMIT, f"README.md is {len(readme.encode())} bytes"
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", readme))
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A relative path written as code (`../paper/`) is followed by a reader like a link,
# from the checkout, where the pages' commands run.
PATH_IN_CODE = re.compile(r"`(\.{1,2}/[^`\s]*)`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_of_a_page_resolves(page):
    text = page.read_text(encoding="utf-8")
    missing = [t for t in LINK.findall(text) if "://" not in t and not (page.parent / t).exists()]
    assert not missing, f"{page.name} links what is not there: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_link_of_a_page_leaves_the_repository(page):
    """A clone holds only the repository, so a page may not send its reader
    beside the checkout (the README once pointed at a folder beside it)."""
    text = page.read_text(encoding="utf-8")
    targets = [(t, page.parent / t) for t in LINK.findall(text) if "://" not in t]
    targets += [(t, ROOT / t) for t in PATH_IN_CODE.findall(text)]
    outside = [t for t, path in targets if not path.resolve().is_relative_to(ROOT)]
    assert not outside, f"{page.name} points outside the repository: {outside}"


def test_the_pages_show_commands_and_every_one_is_checked():
    """The check below covers what the pages show, not a hand-picked list."""
    assert len(COMMANDS) >= 10
    pages = {page for page, *_ in COMMANDS}
    assert "README.md" in pages and any(p.startswith("docs/") for p in pages)
    key = lambda command, env: (command, sorted(env.items()))  # noqa: E731
    assert sorted(key(c, e) for _, c, e in DISTINCT) == sorted(
        {(c, tuple(sorted(e.items()))): key(c, e) for *_, c, e in COMMANDS}.values())
    assert sum(len(s.split(", ")) for s, _, _ in DISTINCT) == len(COMMANDS)


@pytest.mark.workflow
@pytest.mark.parametrize("shown,command,env", DISTINCT,
                         ids=[f"{s.split(', ')[0]}:{c[:60]}" for s, c, _ in DISTINCT])
def test_a_shown_command_runs(scratch, shown, command, env):
    argv = _argv(command)
    p = run_group(argv, cwd=scratch, timeout=300, env={**os.environ, **env})
    assert p.returncode == 0, (f"{shown}: `{command}` fails as "
                               f"`{shlex.join(argv[2:])}`:\n{p.stdout[-2000:]}{p.stderr[-3000:]}")


def _rules_of(svg: str) -> set[str]:
    """The rule names graphviz wrote as node labels."""
    return set(re.findall(r"<text[^>]*>([a-z_]+)</text>", svg))


def test_the_rule_graph_in_the_docs_is_the_workflows_own():
    """docs/rulegraph.svg holds every rule the chain runs: a rule added without
    regenerating the picture (`snakemake -c1 docs/rulegraph.svg`) fails here."""
    from foldstudy.report.rulegraph import rulegraph_dot

    drawn = _rules_of((ROOT / "docs/rulegraph.svg").read_text(encoding="utf-8"))
    planned = set(re.findall(r'label = "([a-z_]+)"', rulegraph_dot(ROOT / "Snakefile")))
    assert planned and drawn == planned, (
        f"regenerate docs/rulegraph.svg: missing {sorted(planned - drawn)}, "
        f"stale {sorted(drawn - planned)}")


@pytest.mark.workflow
@pytest.mark.graphviz
def test_the_rulegraph_rule_draws_the_picture(tmp_path):
    p = snakemake(tmp_path, "-c1", "docs/rulegraph.svg", timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    svg = (tmp_path / "docs/rulegraph.svg").read_text(encoding="utf-8")
    assert {"fixture", "fold", "grade", "evidence", "stats", "tables", "release"} <= _rules_of(svg)


def test_ci_runs_the_readmes_test_command_word_for_word():
    """CI proves what a newcomer types: .ci/run's last command is the README's test command
    (the test command installs what its tests need)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = [b.strip() for b in FENCE.findall(readme) if "-m pytest" in b]
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert shown == [ci], f"README's test command {shown} is not .ci/run's {ci!r}"
