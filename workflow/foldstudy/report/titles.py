"""What the workflow shows a reader: figure names and table titles.

Kept free of heavy imports so the Snakefile can read it at DAG time (the report's
captions name each table by its title) without loading pandas or matplotlib. A title
names what a table holds, never what it shows (STYLE: no sentence in a title that the
numbers may not support); a sentence stating a finding is a note generated from the
numbers, so a run showing the opposite reads the opposite.
"""

from __future__ import annotations

FIGURES = ("recall-heatmap", "ladder", "fill-vs-recall", "headings-vs-recall",
           "partition-gap")

TABLE_TITLES = {  # table name -> title, in reading order
    "recall-by-model-arm": "Recall by sweep, model and arm",
    "table1-recall-model-arm": "Recall by model and arm (Table 1 form), per scope",
    "ladder": "The ladder (the analysis plan's rungs, j → q → m in the paper)",
    "iteration": "Iteration: facts in one chunk against facts distributed over folds",
    "capacity": "Capacity manipulated: ceiling halved, carry cap reduced",
    "ceiling-replication": "Ceiling halved, model by model",
    "fill-and-failure-modes": "Fill and failure modes of the undivided carrier",
    "partition": "The partition contrast across models",
    "rescue-by-failure-mode": "Failing models by failure mode, and how many five fields rescue",
    "borderline-separation": "Separation by fill, with and without the borderline models",
    "depth": "The depth scope, both arms in full",
    "headings-vs-recall": "Recall by fixed headings that arrived",
    "headings-within-model": "Recall by headings carried, within one model",
    "headings-by-arm": "Headings carried, arm by arm",
    "carrier-crosstab": "Carrier against answer",
    "abstention-vs-fabrication": "Failing rows: abstention against fabrication",
    "finish-reasons": "Fold finish reasons",
    "parse-failures": "Parse failures and the recall of rows carrying one",
    "prompt-token-deltas": "Prompt tokens between arms",
    "invalid-rows": "Rows the validity rule kept out",
    "inference": "Study-wide statistics",
    "probe-verdicts": "Probe verdicts",
    "probe-reasoning-parameter": "Probe verdicts with and without the reasoning parameter",
    "chars-per-token": "Characters per token by text class",
}
