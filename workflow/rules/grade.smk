# Grading (paper §3.1, §3.3): the one grader and the one validity rule over every run of
# a sweep, in one job. Logic: foldstudy/grade/rows.py.


rule grade:
    input:
        fixture="results/fixtures/{sweep}/fixture.json",
        runs=sweep_run_paths,
        grading=GRADING_YAML,
        arms=ARMS_YAML,
    output:
        rows="results/graded/{sweep}/rows.csv",
        checks="results/graded/{sweep}/checks.csv",
        folds="results/graded/{sweep}/folds.csv",
        trace="results/graded/{sweep}/trace.csv",
    log:
        "results/logs/grade/{sweep}.log",
    localrule: True
    conda:
        ENV
    script:
        "../scripts/grade.py"
