# Statistics (paper §4; DESIGN §6, §8): every reported number from rows.csv and
# checks.csv alone, keyed in results/stats/numbers.json, with a LaTeX macro per number.


rule stats:
    input:
        unpack(evidence_inputs),
        analysis=str(RESOURCES / "analysis.yaml"),
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
    params:
        evidence=lambda wildcards, input: str(Path(input.rows).parent),
    conda:
        ENV
    script:
        "../scripts/stats.py"
