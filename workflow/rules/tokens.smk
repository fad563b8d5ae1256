# Token accounting (paper §6): characters per token by text class (each fact class, and
# the session's prose), against every study model that counts tokens exactly.
# Logic: foldstudy/run/tokens.py.


rule token_classes:
    input:
        fixtures=expand(
            "results/fixtures/{sweep}/fixture.json", sweep=list(STUDY.config["sweeps"])
        ),
        # The verdicts first: a model the probe could not load is refused by name here,
        # before its GGUF is opened.
        probes=expand(
            "results/probe/{model}.json", model=list(W.runs.folded_model_configs)
        ),
    output:
        table="results/stats/chars-per-token.csv",
    log:
        "results/logs/token_classes.log",
    localrule: True
    conda:
        ENV
    params:
        models=W.runs.folded_model_configs,
    script:
        "../scripts/token_classes.py"
