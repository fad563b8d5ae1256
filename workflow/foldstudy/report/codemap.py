"""docs/design.md's code map and contract columns, generated from the code they describe.

The page says in prose how the project is built; two parts of it are lists that the code
already holds, and a list copied by hand falls behind the code (the hand-written map had
left out a third of the package). So they are rendered here, the way
study/configdoc.py renders config/README.md, into marked regions of the page:

- the code map (docs/design.md §2): every module of workflow/foldstudy/ with the first
  sentence of its docstring, read with `ast` (a module is never imported to be
  described, so one that fails to import is still listed);
- the contracts (docs/design.md §8): the column lists of every file other tools read, from
  evidence/columns.py and the two modules that write the audit's and a session's files.

A test fails when the page and the code disagree, or when a module has no docstring.
Regenerate with

    .venv/bin/python -m foldstudy.report.codemap
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..analysis.power import POWER_COLUMNS
from ..errors import StudyError
from ..evidence import columns
from ..io import write_text
from ..study.candidates import CANDIDATE_COLUMNS

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "workflow" / "foldstudy"
PAGE = ROOT / "docs" / "design.md"
COMMAND = ".venv/bin/python -m foldstudy.report.codemap"


class MissingDocstring(StudyError, ValueError):
    """A module of the package whose docstring is missing or empty: the code map has no
    line to show for it."""


class PageRegionMissing(StudyError, ValueError):
    """The page lacks the markers of a region this module fills."""


# A period that ends an abbreviation, not a sentence.
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf)\.$")


def summary(path: Path, package: Path = PACKAGE) -> str:
    """The first sentence of a module's docstring, as one line.

    The first sentence and not the first physical line: the package's summaries often
    wrap over two or three lines, and a line cut mid-sentence describes nothing. A list
    that follows the opening words (`... holds:` then `- prompt.md`) is left out."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    lines: list[str] = []
    for line in (doc or "").strip().split("\n\n")[0].splitlines():
        if line.lstrip().startswith("- ") and lines:
            break
        lines.append(line)
    text = " ".join(" ".join(lines).split())
    if not text:
        raise MissingDocstring(f"{path.relative_to(package.parent).as_posix()}: no module "
                               "docstring; its first line is what docs/design.md's code "
                               "map says of it")
    ends = (m.end() for m in re.finditer(r"\.(?=\s)", text)
            if not _ABBREVIATION.search(text[:m.end()]))
    text = text[:next(ends, len(text))]
    return text[:-1] + "." if text.endswith(":") else text


def modules(package: Path = PACKAGE) -> list[Path]:
    """Every module of the package, a package's `__init__.py` before its modules and a
    folder's modules before its subpackages."""
    def key(p: Path) -> tuple[tuple[str, ...], bool, str]:
        return p.parent.relative_to(package).parts, p.name != "__init__.py", p.name
    return sorted(package.rglob("*.py"), key=key)


def _shown(path: Path, package: Path) -> str:
    rel = path.relative_to(package)
    if rel.name != "__init__.py":
        return rel.as_posix()
    return (rel.parent.as_posix() + "/") if rel.parent.parts else f"{package.name}/"


def _cell(text: str) -> str:
    """Text as a table cell shows it: `|` would end the cell, and `<sweep>` outside a code
    span would be read as an HTML tag and vanish (inside one it shows as written)."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1
                   else part.replace("<", "&lt;").replace(">", "&gt;")
                   for part in parts).replace("|", "\\|")


def render_code_map(package: Path = PACKAGE) -> str:
    """The code map as a Markdown table; every module without a docstring is named at
    once, so one run of the test lists them all."""
    rows, missing = [], []
    for path in modules(package):
        try:
            rows.append(f"| `{_shown(path, package)}` | {_cell(summary(path, package))} |")
        except MissingDocstring as e:
            missing.append(str(e))
    if missing:
        raise MissingDocstring("; ".join(missing))
    return "\n".join(["| module | what it is |", "|---|---|", *rows])


@dataclass(frozen=True)
class Contract:
    """A file other tools read: where it lands, what one line is, its columns, the ones a
    package must hold (the rest are read when present) and where the list is written."""

    path: str
    line: str
    columns: list[str]
    required: list[str] | None
    source: str


def _of_columns(path: str, line: str, name: str, required: str | None = None) -> Contract:
    """A contract whose lists are evidence/columns.py's, named as they are there."""
    return Contract(path, line, getattr(columns, name),
                    getattr(columns, required) if required else None,
                    f"evidence/columns.py {name}")


CONTRACTS = (
    _of_columns("results/evidence/rows.csv", "one per run", "ROWS", "ROWS_REQUIRED"),
    _of_columns("results/evidence/checks.csv", "one per graded fact per run", "CHECKS",
                "CHECKS_REQUIRED"),
    _of_columns("results/evidence/folds.csv", "one per fold", "FOLDS", "FOLDS_REQUIRED"),
    _of_columns("results/evidence/trace.csv", "one per (run, graded fact, fold made)",
                "TRACE", "TRACE_REQUIRED"),
    _of_columns("results/evidence/probes.csv", "one per probed model", "PROBES_REQUIRED",
                "PROBES_REQUIRED"),
    _of_columns("results/tables/recall-by-model-arm.csv",
                "one per (sweep, model, arm), never pooled across sweeps", "RECALL_TABLE"),
    _of_columns("results/tables/partition.csv", "one per model of the partition scope, "
                "from the one sweep its pair comes from", "PARTITION_TABLE"),
    _of_columns("results/tables/paired-arms.csv", "one per (scope, pair of arms), over the "
                "blocks where both have a valid row", "PAIRED_ARMS_TABLE"),
    _of_columns("results/tables/fact-survival.csv",
                "one per (scope, arm, folds after planting)", "FACT_SURVIVAL_TABLE"),
    Contract("results/audit/power.tsv", "one per (sweep, contrast, model)", POWER_COLUMNS,
             None, "analysis/power.py POWER_COLUMNS"),
    Contract("results/sessions/<scenario>/candidates.tsv", "one per identifier-shaped token "
             "of a user's session", list(CANDIDATE_COLUMNS), None,
             "study/candidates.py CANDIDATE_COLUMNS"),
)


def _names(cols: list[str]) -> str:
    return ", ".join(f"`{c}`" for c in cols)


def render_contracts(contracts: tuple[Contract, ...] = CONTRACTS) -> str:
    """One paragraph per file: its line, its required columns and those read when present."""
    out = []
    for c in contracts:
        head = f"**`{c.path}`**, {c.line} (`{c.source}`):"
        if c.required is None:
            out.append(f"{head} {_names(c.columns)}.")
            continue
        rest = [col for col in c.columns if col not in c.required]
        out.append(f"{head} required {_names(c.required)}"
                   + (f"; read when present {_names(rest)}." if rest else "."))
    return "\n\n".join(out)


# The regions of the page this module fills: marker name -> renderer.
REGIONS: dict[str, Callable[[], str]] = {
    "code map": render_code_map,
    "contracts": render_contracts,
}


def _markers(name: str) -> tuple[str, str]:
    return (f"<!-- {name}: generated by `{COMMAND}`; do not edit by hand -->",
            f"<!-- end of {name} -->")


def fill(page: str, regions: dict[str, Callable[[], str]] = REGIONS) -> str:
    """The page with each region's text between its markers replaced by a fresh render."""
    for name, render in regions.items():
        begin, end = _markers(name)
        start, stop = page.find(begin), page.find(end)
        if start < 0 or stop < start:
            raise PageRegionMissing(f"{PAGE.relative_to(ROOT)}: no `{begin}` ... `{end}` "
                                    f"region for the {name}")
        page = page[:start + len(begin)] + "\n" + render() + "\n" + page[stop:]
    return page


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped (letters,
    digits, `-` and `_` kept), each space a hyphen (`6. Evidence, statistics and outputs`
    -> `6-evidence-statistics-and-outputs`)."""
    text = heading.strip().lower()
    kept = "".join(ch for ch in text
                   if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.S | re.M)
SECTION = re.compile(r"(\d+)\.[ \t]")


def anchors(page: str) -> list[str]:
    """Every heading's anchor, in order; a repeated one gets `-1`, `-2` as GitHub does."""
    seen: dict[str, int] = {}
    out = []
    for _, text in HEADING.findall(FENCE.sub("", page)):
        base = slug(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}-{n}")
    return out


def sections(page: str) -> dict[int, str]:
    """The page's numbered sections (`## 6. Evidence ...`): number -> anchor, the targets of
    a pointer `docs/design.md §6`."""
    out = {}
    for level, text in HEADING.findall(FENCE.sub("", page)):
        m = SECTION.match(text)
        if level == "##" and m:
            out[int(m.group(1))] = slug(text)
    return out


def main() -> None:
    write_text(fill(PAGE.read_text(encoding="utf-8")), PAGE)
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
