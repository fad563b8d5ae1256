rule tables:
    input:
        rows="results/evidence/rows.csv",
    output:
        directory("results/tables"),
    log:
        "results/logs/tables.log",
    params:
        resources=str(RESOURCES),
    conda:
        ENV
    script:
        "../scripts/tables.py"
