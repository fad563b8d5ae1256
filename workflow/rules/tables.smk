# Tables (docs/design.md §6, Tables and figures): every table of the paper in Markdown, LaTeX and CSV. The target
# results/tables also brings the figures, so one command rebuilds everything a reader sees.
# Logic: foldstudy/report/tables/ (one module per section of the paper).


rule tables:
    input:
        **W.outputs.evidence_inputs(),
        numbers="results/stats/numbers.json",
        figures=rules.figures.output,
        readers=W.outputs.reader_outputs(),
        probes=W.outputs.probe_table(),
        token_classes=W.outputs.token_class_table(),
        trace=W.outputs.trace_table(),
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
        templates=[
            res("templates", f"{t}.j2") for t in ("table.md", "table.tex", "index.md")
        ],
    output:
        tables=report(
            directory("results/tables"),
            patterns=["{name}.csv"],
            caption="../report/tables.rst",
            category="Tables",
            labels={"table": "{name}"},
        ),
    log:
        "results/logs/tables.log",
    localrule: True
    conda:
        ENV
    params:
        # the report's caption names each table by its title under this plan
        titles=lambda wildcards, input: table_titles(input.analysis),
        # evidence made by another study or config is refused, naming both
        config=STUDY.config,
        scopes=STUDY.config["scopes"],
        compare_pairs=STUDY.config["compare_pairs"],
    script:
        "../scripts/tables.py"
