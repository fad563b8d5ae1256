# Tables (DESIGN §6): every table of the paper in Markdown, LaTeX and CSV. The target
# results/tables also brings the figures, so one command rebuilds everything a reader sees.


rule tables:
    input:
        unpack(evidence_inputs),
        numbers="results/stats/numbers.json",
        figures=rules.figures.output,
        probes=probe_table,
        analysis=str(RESOURCES / "analysis.yaml"),
        templates=expand(
            str(RESOURCES / "templates" / "{t}.j2"), t=["table.md", "table.tex", "index.md"]
        ),
    output:
        report(
            directory("results/tables"),
            patterns=["{name}.csv"],
            caption="../report/tables.rst",
            category="Tables",
            labels={"table": "{name}"},
        ),
    log:
        "results/logs/tables.log",
    params:
        resources=lambda wildcards, input: str(Path(input.analysis).parent),
        titles=TABLE_TITLES,
    conda:
        ENV
    script:
        "../scripts/tables.py"
