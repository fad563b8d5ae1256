# Arm against arm (paper §4.9: "Under one opaque field the model writes about
# the session ... Under five named headings the same model writes the decisions
# themselves"): one page per block with its arms side by side, fold by fold, and one per
# (sweep, arm) with its models side by side. Needs the run records' carries, so not in
# evidence mode. Logic: foldstudy/report/compare.py.


rule compare:
    input:
        staged_runs=staged_run_paths,
        fixtures=expand(
            "results/fixtures/{sweep}/fixture.json", sweep=STUDY.config["sweeps"]
        ),
        rows="results/evidence/rows.csv",
        checks="results/evidence/checks.csv",
        trace="results/evidence/trace.csv",
        decision_page="results/decision.html",  # the index links the decision's page
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
        templates=[
            res("templates", t)
            for t in (
                "compare-page.html.j2",
                "compare-index.html.j2",
                "compare-style.css.j2",
                "viewer-style.css.j2",
            )
        ],
    output:
        compare=report(
            directory("results/compare"),
            patterns=["{page}.html"],
            caption="../report/compare.rst",
            category="Arm against arm",
            labels={"page": "{page}"},
        ),
    log:
        "results/logs/compare.log",
    localrule: True
    conda:
        ENV
    params:
        # page paths from the validated config, never from a record's own fields
        runs=page_runs,
        config=STUDY.config,  # evidence of another study is refused before any write
    script:
        "../scripts/compare.py"
