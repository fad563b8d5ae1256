# Folds (paper §3.1-3.3): one job per (sweep, model, arm, repeat), every fold then the
# recall turn. Logic: foldstudy/run/fold.py.


rule fold:
    input:
        **PROMPT_FILES,
        fixture="results/fixtures/{sweep}/fixture.json",
        # ancient: orders a block's runs, but a retried run does not rerun the rest
        previous=ancient(previous_run),
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
        # > 1 only when --config retry_infrastructure=true finds this run's record
        # invalid for a retryable reason: the changed param reruns exactly that job
        # (from the wildcards, not `output`: Snakemake ignores params derived from files)
        attempt=run_attempt,
    script:
        "../scripts/fold.py"
