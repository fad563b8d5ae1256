# Figures (DESIGN §6): matplotlib, PNG and SVG, from the evidence and numbers.json.
# Logic: foldstudy/report/figures.py.


rule figures:
    input:
        rows=lambda wildcards: evidence_inputs(wildcards)["rows"],
        numbers="results/stats/numbers.json",
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
    output:
        heatmap=report(
            "results/figures/recall-heatmap.png",
            caption="../report/figure-recall-heatmap.rst",
            category="Figures",
        ),
        ladder=report(
            "results/figures/ladder.png",
            caption="../report/figure-ladder.rst",
            category="Figures",
        ),
        fill=report(
            "results/figures/fill-vs-recall.png",
            caption="../report/figure-fill-vs-recall.rst",
            category="Figures",
        ),
        headings=report(
            "results/figures/headings-vs-recall.png",
            caption="../report/figure-headings-vs-recall.rst",
            category="Figures",
        ),
        gap=report(
            "results/figures/partition-gap.png",
            caption="../report/figure-partition-gap.rst",
            category="Figures",
        ),
        retained=report(
            "results/figures/retained-tokens.png",
            caption="../report/figure-retained-tokens.rst",
            category="Figures",
        ),
        svg=expand("results/figures/{name}.svg", name=FIGURES),
    log:
        "results/logs/figures.log",
    localrule: True
    conda:
        ENV
    params:
        # evidence made by another study or config is refused, naming both
        config=STUDY.config,
        # which sweeps (and models) each analysis reads: the study config's scopes
        scopes=STUDY.config["scopes"],
    script:
        "../scripts/figures.py"
