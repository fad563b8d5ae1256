# Folds (paper §3.1-3.3): one job per (sweep, model, arm, repeat), every fold then the
# recall turn. Logic: foldstudy/run/fold.py.


rule fold:
    input:
        **PROMPT_FILES,
        fixture="results/fixtures/{sweep}/fixture.json",
        previous=previous_run,
        probe="results/probe/{model}.json",
        arms=ARMS_YAML,
    output:
        record="results/runs/{sweep}/{model}/r{repeat}/{arm}.json",
    log:
        "results/logs/fold/{sweep}/{model}/r{repeat}/{arm}.log",
    conda:
        ENV
    threads: model_threads
    resources:
        embedded_model=embedded_slots,
        api_openrouter=openrouter_slots,
        api_openai=openai_slots,
    params:
        run=run_params,
        temperature=config["temperature"],
        recall_max_tokens=config["recall_max_tokens"],
        store=config["store"],
        replay=config["replay"],
        threads=lambda wildcards, threads: threads,
    script:
        "../scripts/fold.py"
