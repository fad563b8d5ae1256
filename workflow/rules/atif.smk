# Every run as an ATIF trajectory (Harbor's trajectory.json, v1.7): the chunks each fold
# read, each fold a compaction with its carry after it, the recall turn and its grade.
# Logic: foldstudy/report/atif.py.


rule atif:
    input:
        staged_runs=staged_run_paths,
        fixtures=expand(
            "results/fixtures/{sweep}/fixture.json", sweep=STUDY.config["sweeps"]
        ),
        rows="results/evidence/rows.csv",
        checks="results/evidence/checks.csv",
    output:
        atif=directory("results/atif"),
    log:
        "results/logs/atif.log",
    localrule: True
    conda:
        ENV
    params:
        config=STUDY.config,  # evidence of another study is refused before any write
        runs=page_runs,
    script:
        "../scripts/atif.py"
