# Evidence (docs/design.md §6, Evidence, §8): the per-sweep tables merged, with a manifest a reviewer checks.
# Logic: foldstudy/evidence/publish.py.


rule evidence:
    input:
        rows=W.runs.graded_parts("rows"),
        checks=W.runs.graded_parts("checks"),
        folds=W.runs.graded_parts("folds"),
        trace=W.runs.graded_parts("trace"),
        probes="results/probe/summary.tsv",
    output:
        rows="results/evidence/rows.csv",
        checks="results/evidence/checks.csv",
        folds="results/evidence/folds.csv",
        trace="results/evidence/trace.csv",
        probes="results/evidence/probes.csv",
        manifest="results/evidence/manifest.json",
    log:
        "results/logs/evidence.log",
    localrule: True
    conda:
        ENV
    params:
        config=STUDY.config,
    script:
        "../scripts/evidence.py"
