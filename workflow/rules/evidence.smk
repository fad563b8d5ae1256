rule evidence:
    input:
        rows=graded_parts("rows"),
        checks=graded_parts("checks"),
        folds=graded_parts("folds"),
    output:
        rows="results/evidence/rows.csv",
        checks="results/evidence/checks.csv",
        folds="results/evidence/folds.csv",
        manifest="results/evidence/manifest.json",
    log:
        "results/logs/evidence.log",
    params:
        config=STUDY.config,
    conda:
        ENV
    script:
        "../scripts/evidence.py"
