# Where the facts were lost (paper §4.10): the per-fold fact trace read per arm, as a
# figure and a table of losses by kind. Logic: foldstudy/report/trace.py.


rule trace:
    input:
        **W.outputs.trace_inputs(),
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
        template=res("templates", "fact-losses.md.j2"),
    output:
        png=report(figure("fact-trace").png, **figure("fact-trace").report_args),
        svg=figure("fact-trace").svg,
        table_md="results/trace/fact-losses.md",
        table_csv=report(
            "results/trace/fact-losses.csv",
            caption="../report/fact-losses.rst",
            category="Tables",
            labels={"table": "fact-losses"},
        ),
        facts="results/trace/fact-losses-by-fact.csv",
    log:
        "results/logs/trace.log",
    localrule: True
    conda:
        ENV
    params:
        config=STUDY.config,  # evidence of another study is refused before any write
    script:
        "../scripts/trace.py"
