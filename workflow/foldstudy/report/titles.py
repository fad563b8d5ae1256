"""What the workflow shows a reader: figure names, and the registry of tables.

Each table is declared once, here: its name, its title, its place (this list's order is
the reading order of results/tables/ and of the report), what its builder reads, and the
analyses (study/scopes.py) whose scopes it reads. Its builder, in the module of
report/tables/ for its section of the paper, is the function `t_<name>` (dashes as
underscores), bound by that name at import: a table with no builder, or a builder with no
entry, fails there.

Kept free of heavy imports so the Snakefile can read it at DAG time (the report's
captions name each table by its title) without loading pandas or matplotlib. A title
names what a table holds, never what it shows (STYLE: no sentence in a title that the
numbers may not support); a sentence stating a finding is a note generated from the
numbers, so a run showing the opposite reads the opposite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..io import load_yaml
from ..study.scopes import unknown_analyses

FIGURES = ("recall-heatmap", "ladder", "fill-vs-recall", "headings-vs-recall",
           "partition-gap", "retained-tokens")

Source = Literal["evidence", "probes", "token_classes"]


@dataclass(frozen=True)
class TableEntry:
    """One table. `title` may name `{ladder}`, the plan's rungs joined by arrows, so a
    title that depends on the analysis plan is still written once; `source` is what its
    builder takes (the evidence view, the probe verdicts, the measured token classes);
    `reads` the analyses whose scopes it reads (the first is the one its caption names)."""

    name: str
    title: str
    reads: tuple[str, ...] = ()
    source: Source = "evidence"

    def title_for(self, ladder: Sequence[str]) -> str:
        return self.title.format(ladder=" → ".join(ladder))

    @property
    def builder(self) -> str:
        """The name of its builder in report/tables/."""
        return "t_" + self.name.replace("-", "_")


TABLES: tuple[TableEntry, ...] = (  # in reading order
    TableEntry("recall-by-model-arm", "Recall by sweep, model and arm"),
    TableEntry("table1-recall-model-arm", "Recall by model and arm (Table 1 form), per scope",
               ("table1",)),
    TableEntry("ladder", "The {ladder} ladder", ("ladder",)),
    TableEntry("iteration",
               "Iteration: facts in one chunk against facts distributed over folds",
               ("iteration",)),
    TableEntry("capacity", "Capacity manipulated: ceiling halved, carry cap reduced",
               ("capacity",)),
    TableEntry("ceiling-replication", "Ceiling halved, model by model", ("ceiling",)),
    TableEntry("fill-by-model-arm",
               "Carried text and fill of the declared ceiling, by model and arm",
               ("fill_table",)),
    TableEntry("fill-and-failure-modes", "Fill and failure modes of the undivided carrier",
               ("partition", "fill")),
    TableEntry("partition", "The partition contrast across models", ("partition",)),
    TableEntry("rescue-by-failure-mode",
               "Failing models by failure mode, and how many five fields rescue",
               ("partition",)),
    TableEntry("borderline-separation",
               "Separation by fill, with and without the borderline models", ("partition",)),
    TableEntry("depth", "The depth scope, both arms in full", ("depth",)),
    TableEntry("headings-vs-recall", "Recall by fixed headings that arrived", ("headings",)),
    TableEntry("headings-single-field",
               "Recall by headings that arrived, single-field schema arms, pooled",
               ("headings",)),
    TableEntry("headings-within-model", "Recall by headings carried, within one model",
               ("headings",)),
    TableEntry("headings-by-arm", "Headings carried, arm by arm", ("headings",)),
    TableEntry("carrier-crosstab", "Carrier against answer", ("carrier",)),
    TableEntry("paired-arms", "Arm against arm within a block: graded facts kept by one, "
               "both or neither", ("compare",)),
    TableEntry("fact-survival", "Graded facts still carried k folds after planting, by arm",
               ("compare",)),
    TableEntry("retained-tokens", "Recall against retained tokens, every arm, with the "
               "frontier", ("retained",)),
    TableEntry("abstention-vs-fabrication", "Failing rows: abstention against fabrication",
               ("abstention",)),
    TableEntry("finish-reasons", "Fold finish reasons", ("finish",)),
    TableEntry("parse-failures", "Parse failures and the recall of rows carrying one",
               ("parse",)),
    TableEntry("json-envelope", "Raw JSON envelopes carried, arm by arm", ("envelope",)),
    TableEntry("prompt-token-deltas", "Prompt tokens between arms", ("tokens",)),
    TableEntry("invalid-rows", "Rows the validity rule kept out", ("invalid",)),
    TableEntry("inference", "Study-wide statistics",
               ("icc", "headings", "partition", "fill", "equivalence", "ladder")),
    TableEntry("probe-verdicts", "Probe verdicts", source="probes"),
    TableEntry("probe-reasoning-parameter",
               "Probe verdicts with and without the reasoning parameter", source="probes"),
    TableEntry("chars-per-token", "Characters per token by text class",
               source="token_classes"),
)



def _check(tables: Sequence[TableEntry]) -> None:
    """Each name once, each analysis read a known one: at import, so a slip fails first."""
    names = [t.name for t in tables]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"tables declared twice in report/titles.TABLES: {', '.join(twice)}")
    for t in tables:
        unknown_analyses(t.reads, f"table {t.name}")


_check(TABLES)


def table_titles(analysis_yaml: str | Path) -> dict[str, str]:
    """Table name -> its title under this analysis plan, in reading order (the report's
    captions read it at DAG time, so it reads the plan's YAML, not `Analysis`)."""
    ladder = load_yaml(analysis_yaml)["arms"]["ladder"]
    return {t.name: t.title_for(ladder) for t in TABLES}
