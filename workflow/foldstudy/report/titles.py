"""What the workflow shows a reader: figure names and table titles.

Kept free of heavy imports so the Snakefile can read it at DAG time (the report's
captions name each table by its title) without loading pandas or matplotlib.
"""

from __future__ import annotations

FIGURES = ("recall-heatmap", "ladder", "fill-vs-recall", "headings-vs-recall",
           "partition-gap")

TABLE_TITLES = {  # table name -> title, in reading order
    "recall-by-model-arm": "Recall by sweep, model and arm",
    "table1-recall-model-arm": "Recall by model and arm (Table 1 form)",
    "ladder": "The ladder (the analysis plan's rungs, j → q → m in the paper)",
    "iteration": "Iteration: facts in one chunk against facts distributed over folds",
    "capacity": "Capacity does not account for it",
    "ceiling-replication": "The ceiling result, model by model",
    "fill-and-failure-modes": "Fill and failure modes of the undivided carrier",
    "partition": "The partition contrast across models",
    "rescue-by-failure-mode": "Partitioning rescues one failure mode and not the other",
    "borderline-separation": "Separation by fill, with and without the borderline models",
    "depth": "The non-rescued models in full",
    "headings-vs-recall": "The partition that arrives, not the one requested",
    "headings-by-arm": "Headings carried, arm by arm",
    "carrier-crosstab": "The carrier bounds recall, and reading it is lossy too",
    "abstention-vs-fabrication": "Sometimes the loss is silent",
    "finish-reasons": "Fold finish reasons",
    "parse-failures": "Parse failures stay in the means",
    "prompt-token-deltas": "Prompt tokens between arms",
    "invalid-rows": "Rows the validity rule kept out",
    "inference": "Study-wide statistics",
    "probe-verdicts": "Probe verdicts",
    "probe-reasoning-parameter": "Probe verdicts with and without the reasoning parameter",
}
