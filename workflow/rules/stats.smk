# Statistics (paper §4; docs/design.md §6, Statistics, §8): every reported number from rows.csv and
# checks.csv alone, keyed in results/stats/numbers.json, with a LaTeX macro per number.
# Logic: foldstudy/analysis/numbers.py.


rule stats:
    input:
        **W.outputs.evidence_inputs(),
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
        schemas=SCHEMA_FILES,
    output:
        numbers=report(
            "results/stats/numbers.json",
            caption="../report/numbers.rst",
            category="Numbers",
        ),
        provenance="results/stats/provenance.json",
        macros=report(
            "results/stats/numbers.tex",
            caption="../report/macros.rst",
            category="Numbers",
        ),
    log:
        "results/logs/stats.log",
    localrule: True
    conda:
        ENV
    params:
        # evidence made by another study or config is refused, naming both
        config=STUDY.config,
        # which sweeps (and models) each analysis reads: the study config's scopes
        scopes=STUDY.config["scopes"],
    script:
        "../scripts/stats.py"
