# The fold viewer (paper §3.1): one HTML page per run showing the fold chain and the
# graded answer, and an index. Logic: foldstudy/report/viewer.py.


rule viewer:
    input:
        staged_runs=staged_run_paths,
        fixtures=expand(
            "results/fixtures/{sweep}/fixture.json", sweep=STUDY.config["sweeps"]
        ),
        rows="results/evidence/rows.csv",
        checks="results/evidence/checks.csv",
        arms=ARMS_YAML,
        templates=[
            res("templates", t)
            for t in (
                "viewer-run.html.j2",
                "viewer-index.html.j2",
                "viewer-style.css.j2",
            )
        ],
    output:
        viewer=report(
            directory("results/viewer"),
            patterns=["{page}.html"],
            caption="../report/viewer.rst",
            category="Fold viewer",
            labels={"page": "{page}"},
        ),
    log:
        "results/logs/viewer.log",
    localrule: True
    conda:
        ENV
    params:
        config=STUDY.config,  # evidence of another study is refused before any write
        runs=page_runs,
    script:
        "../scripts/viewer.py"
