rule fold:
    input:
        fixture="results/fixtures/{sweep}/fixture.json",
        previous=previous_run,
        probe="results/probe/{model}.json",
    output:
        "results/runs/{sweep}/{model}/r{repeat}/{arm}.json",
    log:
        "results/logs/fold/{sweep}/{model}/r{repeat}/{arm}.log",
    params:
        run=run_params,
        temperature=config["temperature"],
        recall_max_tokens=config["recall_max_tokens"],
        store=config["store"],
        resources=str(RESOURCES),
        replay=config["replay"],
    threads: model_threads
    resources:
        embedded_model=embedded_slots,
        api_openrouter=openrouter_slots,
        api_openai=openai_slots,
    conda:
        ENV
    script:
        "../scripts/fold.py"
