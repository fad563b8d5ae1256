"""docs/design.md is the page every pointer of the code and the docs lands on: its code map
and contract columns are the code's own, its sections keep their numbers, and every
pointer into it, and every other pointer, resolves inside the repository.

docs/design.md §2 ("The code map"): "The list is generated; tests/test_design_doc.py fails
when it is stale, and when a module has no docstring."
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from foldstudy.report import codemap

from .conftest import ROOT

PAGE_TEXT = codemap.PAGE.read_text(encoding="utf-8")
# The numbered sections, and the anchors links use: pointers across the code name these
# numbers, so a section is never renumbered (a new one goes at the end).
SECTIONS = {
    1: "1-what-the-product-is",
    2: "2-layout",
    3: "3-the-study-model",
    4: "4-backends",
    5: "5-probe",
    6: "6-evidence-statistics-and-outputs",
    7: "7-generate-lock-release",
    8: "8-contracts-other-tools-rely-on",
    9: "9-scale-and-speed",
}


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "foldstudy"
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    return package


def test_the_code_map_and_the_contracts_are_the_codes_own():
    assert PAGE_TEXT == codemap.fill(PAGE_TEXT), (
        f"docs/design.md is stale: run {codemap.COMMAND}")


def test_every_module_of_the_package_is_on_the_map():
    listed = set(re.findall(r"^\| `([^`]+)` \|", PAGE_TEXT, re.M))
    shown = {codemap._shown(p, codemap.PACKAGE) for p in codemap.modules()}
    assert len(shown) > 100 and shown <= listed, sorted(shown - listed)
    for sub in ("analysis/decision.py", "backends/ledger.py", "release/crate.py",
                "transcripts/codex.py", "study/session_cache.py"):
        assert sub in listed


def test_a_module_is_described_by_its_first_sentence(tmp_path):
    package = _package(tmp_path, {
        "__init__.py": '"""The package."""\n',
        "a.py": '"""Grading, written once (paper §3.1:\na value is a whole token, e.g. 8443). '
                'More follows.\n\nA second paragraph."""\n',
        "b/__init__.py": '"""Stage b."""\n',
        "b/c.py": '"""The files, each:\n- one\n- two\n"""\n',
        "b/d.py": '"""Pages under results/<sweep>/ (`<sweep>.html`), a | b."""\n',
    })
    table = codemap.render_code_map(package)
    assert table.splitlines()[2:] == [
        "| `foldstudy/` | The package. |",
        "| `a.py` | Grading, written once (paper §3.1: a value is a whole token, e.g. 8443). |",
        "| `b/` | Stage b. |",
        "| `b/c.py` | The files, each. |",
        # a tag-shaped word shows as written, in a code span or out of one
        "| `b/d.py` | Pages under results/&lt;sweep&gt;/ (`<sweep>.html`), a \\| b. |",
    ]


def test_a_module_without_a_docstring_fails_the_map_naming_it(tmp_path):
    package = _package(tmp_path, {
        "__init__.py": '"""The package."""\n',
        "stage/__init__.py": '"""A stage."""\n',
        "stage/new.py": "X = 1\n",
        "stage/empty.py": '"""   """\n',
    })
    with pytest.raises(codemap.MissingDocstring) as e:
        codemap.render_code_map(package)
    assert "foldstudy/stage/new.py: no module docstring" in str(e.value)
    assert "foldstudy/stage/empty.py" in str(e.value)


def test_a_module_added_makes_the_page_stale(tmp_path):
    package = _package(tmp_path, {"__init__.py": '"""The package."""\n'})
    page = codemap.fill(PAGE_TEXT, {"code map": lambda: codemap.render_code_map(package)})
    (package / "carriers.py").write_text('"""One module per carrier kind."""\n')
    again = codemap.fill(page, {"code map": lambda: codemap.render_code_map(package)})
    assert again != page and "| `carriers.py` | One module per carrier kind. |" in again


def test_a_page_without_the_region_is_refused():
    with pytest.raises(codemap.PageRegionMissing, match="code map"):
        codemap.fill("# a page\n")


def test_the_contracts_are_the_column_lists_of_columns_py():
    from foldstudy.evidence import columns

    rows = next(line for line in PAGE_TEXT.splitlines()
                if line.startswith("**`results/evidence/rows.csv`**"))
    assert "required " + ", ".join(f"`{c}`" for c in columns.ROWS_REQUIRED) + ";" in rows
    assert "`retained_tokens`" in rows.split("read when present")[1]


@pytest.mark.parametrize("heading,anchor", [
    ("6. Evidence, statistics and outputs", "6-evidence-statistics-and-outputs"),
    ("7. Generate, lock, release", "7-generate-lock-release"),
    ("Small-sample inference", "small-sample-inference"),
    ("The `decide:` key", "the-decide-key"),
])
def test_an_anchor_is_the_one_github_gives_the_heading(heading, anchor):
    assert codemap.slug(heading) == anchor


def test_the_page_has_its_nine_numbered_sections_with_stable_anchors():
    assert codemap.sections(PAGE_TEXT) == SECTIONS


def _tracked_files() -> list[Path]:
    """The repository's files as git holds them: an untracked scratch file is not in it."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: the files of the repository are git's")
    return [ROOT / name for name in out.decode().split("\0") if name]


def _texts() -> list[tuple[str, str]]:
    out = []
    for path in _tracked_files():
        if path.name == "CHANGELOG.md" or not path.is_file():
            continue
        try:
            out.append((path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue  # a picture, a compressed sample
    return out


# docs/design.md §6, §6-7, "docs/design.md §3, §8": each number a section of the page.
POINTER = re.compile(r"docs/design\.md §(\d+)((?:(?:-|, §)\d+)*)")
LINK = re.compile(r"\]\([^)\s]*design\.md#([^)\s]+)\)")


def test_every_pointer_into_the_design_page_names_a_section_it_has():
    anchors = set(codemap.anchors(PAGE_TEXT))
    wrong = []
    for name, text in _texts():
        for m in POINTER.finditer(text):
            numbers = [int(m.group(1)), *map(int, re.findall(r"\d+", m.group(2)))]
            wrong += [f"{name}: {m.group(0)}" for n in numbers if n not in SECTIONS]
        wrong += [f"{name}: #{a}" for a in LINK.findall(text) if a not in anchors]
    assert not wrong, f"pointers to no section of docs/design.md: {wrong}"


def _subsections(number: int) -> list[str]:
    """The ### titles of the page's section `number`."""
    part = re.search(rf"^## {number}\..*?(?=^## |\Z)", PAGE_TEXT, re.M | re.S)
    return re.findall(r"^### (.+)$", part.group(0), re.M) if part else []


# A section this long is read by its subsections: a pointer into it names one.
NAMED_BY_SUBSECTION = (6,)
# The files that say what a pointer looks like, with a bare one as the example.
SAY_WHAT_A_POINTER_IS = ("docs/design.md", "tests/test_design_doc.py",
                         "workflow/foldstudy/report/codemap.py")


def test_a_pointer_into_a_long_section_names_its_subsection():
    """§6 holds evidence, scopes, statistics, spend, decisions and outputs: a pointer to
    "§6" alone sends the reader through all of them."""
    wrong = []
    for number in NAMED_BY_SUBSECTION:
        titles = _subsections(number)
        assert len(titles) > 3, titles
        bare = re.compile(rf"docs/design\.md §{number}(?!\d)(.{{0,60}})", re.S)
        for name, text in _texts():
            if name in SAY_WHAT_A_POINTER_IS:
                continue
            wrong += [f"{name}: {m.group(0)[:50]!r}" for m in bare.finditer(text)
                      if not any(t in re.sub(r"[\s#]+", " ", m.group(1)) for t in titles)]
    assert not wrong, f"pointers naming no subsection: {wrong}"


def test_the_pointer_check_sees_a_section_the_page_lacks():
    # spelled in two parts, so the check of the repository does not find them here
    page = "docs/design.md "
    assert [m.group(1) for m in POINTER.finditer(f"see {page}§12, and §3")] == ["12"]
    assert POINTER.search(f"({page}§4-5)").group(2) == "-5"


# What points outside the repository: the design brief the code was first written from,
# and the folder beside the checkout it sat in. Spelled in two parts so this file does
# not match itself.
OUTSIDE = ("DESIGN" + " §", "shared/" + "DESIGN", "../" + "shared/", "shared/" + "reference",
           "/work/" + "shared")
# A tracker's issue number means nothing to a reader of the code; CHANGELOG.md keeps it.
ISSUE = re.compile(r"\b[Ii]ssues? " + r"\d+")


def test_no_file_points_outside_the_repository():
    found = [f"{name}:{n}: {line.strip()[:100]}"
             for name, text in _texts()
             for n, line in enumerate(text.splitlines(), 1)
             if any(o in line for o in OUTSIDE)]
    assert not found, f"{len(found)} lines point outside the repository:\n" + "\n".join(found)


def test_no_file_names_an_issue_number():
    found = [f"{name}:{n}: {line.strip()[:100]}"
             for name, text in _texts()
             for n, line in enumerate(text.splitlines(), 1) if ISSUE.search(line)]
    assert not found, f"{len(found)} lines name an issue:\n" + "\n".join(found)
