# Evidence (docs/design.md §6, §8): the per-sweep tables merged, with a manifest a reviewer checks.
# Logic: foldstudy/evidence/publish.py.


rule evidence:
    input:
        rows=W.graded_parts("rows"),
        checks=W.graded_parts("checks"),
        folds=W.graded_parts("folds"),
        trace=W.graded_parts("trace"),
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
