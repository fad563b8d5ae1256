# The rule graph in docs/design.md, drawn from Snakemake's own --rulegraph.
# Logic: foldstudy/report/rulegraph.py. Rerun after a rule is added or removed:
#   snakemake -c1 docs/rulegraph.svg


rule rulegraph:
    input:
        rules=[
            os.path.relpath(p)
            for p in sorted(Path(workflow.basedir, "workflow/rules").glob("*.smk"))
        ],
    output:
        "docs/rulegraph.svg",
    log:
        "results/logs/rulegraph.log",
    localrule: True
    conda:
        ENV
    params:
        snakefile=workflow.main_snakefile,
    script:
        "../scripts/rulegraph.py"
