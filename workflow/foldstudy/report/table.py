"""The table model: columns, cells and their formats, and the rendering of a table.

A builder (report/tables/, report/trace.py) says what a table holds as a `Body`: its
caption, columns, rows and notes. A `Table` is a body with its name and title, and is
written three ways by jinja2 templates (resources/templates/table.{md,tex}.j2) and pandas
(CSV). An empty cell says why it is empty ("— (not run)"), never 0; in the CSV it is an
empty field.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

DASH = "—"


def render_template(template_dir: Path, name: str, **context: object) -> str:
    return _environment(Path(template_dir)).get_template(name).render(**context)


@functools.cache
def _environment(template_dir: Path) -> jinja2.Environment:
    """One environment per template folder, which keeps each template compiled once
    per process: the tables job renders some sixty tables from three templates."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tex"] = tex_escape
    env.filters["md"] = md_escape
    return env


# ------------------------------------------------------------------------ cells

def _pval(x: Any) -> str:
    return f"{float(x):.2g}" if float(x) < 0.001 else f"{float(x):.4f}"


# Format name (a column's `kind`) -> the text of one cell that has data.
FORMATS: dict[str, Callable[[Any], str]] = {
    "str": str,
    "int": lambda x: f"{int(x):,}",
    "p3": lambda x: f"{float(x):.3f}",
    "signed3": lambda x: f"{float(x):+.3f}",
    "pct": lambda x: f"{100 * float(x):.0f}%",
    "pct1": lambda x: f"{100 * float(x):.1f}%",  # the paper's "31 (35.2%)"
    "signed_pct": lambda x: f"{100 * float(x):+.0f}%",
    "pts": lambda x: f"{100 * float(x):.0f} pts",
    "pval": _pval,
    "chars": lambda x: f"{float(x):,.0f}",
    "bool": lambda x: "yes" if x else "no",
}


def _format(kind: str) -> Callable[[Any], str]:
    if kind not in FORMATS:
        raise KeyError(f"{kind!r} is not a cell format (known: {', '.join(FORMATS)})")
    return FORMATS[kind]


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(x: Any, kind: str) -> str | None:
    """Text of one cell, or None when it has no data (the renderer says why)."""
    text = _format(kind)
    if isinstance(x, list):
        return ", ".join(filter(None, (fmt(v, kind) for v in x))) if x else None
    if _missing(x):
        return None
    return text(x)


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    kind: str = "str"
    missing: str = "no data"  # why a cell of this column can be empty

    def __post_init__(self) -> None:
        _format(self.kind)  # an unknown format fails where the column is declared

    @property
    def numeric(self) -> bool:
        return self.kind not in ("str", "bool")


@dataclass
class Body:
    """What a builder computes: the caption, the columns and rows, notes under it."""

    caption: str
    columns: list[Col]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    csv: pd.DataFrame | None = None  # when the CSV has a contract of its own

    def cells(self) -> list[list[str]]:
        out = []
        for r in self.rows:
            if r.get("_why_row"):  # a placeholder row: the table has nothing to show
                out.append([f"{DASH} ({r['_why_row']})"] + [DASH] * (len(self.columns) - 1))
                continue
            line = []
            for c in self.columns:
                text = fmt(r.get(c.key), c.kind)
                why = r.get("_why_" + c.key) or c.missing
                line.append(text if text is not None else f"{DASH} ({why})")
            out.append(line)
        return out

    def frame(self) -> pd.DataFrame:
        if self.csv is not None:
            return self.csv
        data = [{c.key: (";".join(f"{v:.6g}" if isinstance(v, float) else str(v)
                                  for v in r.get(c.key))
                         if isinstance(r.get(c.key), list) else r.get(c.key))
                 for c in self.columns} for r in self.rows]
        return pd.DataFrame(data, columns=[c.key for c in self.columns])

    def named(self, name: str, title: str) -> Table:
        """This body as the table `name`, under `title`."""
        return Table(**{f.name: getattr(self, f.name) for f in fields(Body)},
                     name=name, title=title)


@dataclass(kw_only=True)
class Table(Body):
    """One table: what it is (name, title), and its body."""

    name: str
    title: str


def md_escape(s: object) -> str:
    """A cell or a name from the data (a fact's label, a model's answer) as Markdown text:
    a Markdown renderer passes raw HTML through (CommonMark; GitHub then strips what it
    distrusts, an editor's preview may not), so `<`, `>` and `&` are written as entities,
    which every renderer shows as the characters. A `|` would end a table cell (escaped) and
    a line break its row (written as a space)."""
    text = str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def tex_escape(s: object) -> str:
    text = str(s)
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"),
                 ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"),
                 ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}"),
                 (DASH, "---"), ("≥", r"$\geq$"), ("→", r"$\rightarrow$"),
                 ("±", r"$\pm$"), ("×", r"$\times$")):
        text = text.replace(a, b).replace(r"\textbackslash\{\}", r"\textbackslash{}")
    return text
