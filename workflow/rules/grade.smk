rule grade:
    input:
        fixture="results/fixtures/{sweep}/fixture.json",
        runs=sweep_runs,
    output:
        rows="results/graded/{sweep}/rows.csv",
        checks="results/graded/{sweep}/checks.csv",
        folds="results/graded/{sweep}/folds.csv",
    log:
        "results/logs/grade/{sweep}.log",
    params:
        resources=str(RESOURCES),
    conda:
        ENV
    script:
        "../scripts/grade.py"
