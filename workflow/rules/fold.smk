# Folds (paper §3.1-3.3): one job per (sweep, model, arm, repeat), every fold then the
# recall turn. Logic: foldstudy/run/fold.py.


rule fold:
    input:
        **PROMPT_FILES,
        fixture="results/fixtures/{sweep}/fixture.json",
        # Orders a block's runs. Not ancient(): Snakemake skips its own rerun checks for
        # jobs downstream of a job it reruns, and ancient() then drops them too, so an
        # edited prompt reran only each block's first run (snakemake/snakemake#4166).
        # A retried run therefore reruns the rest of its block, from the store.
        previous=previous_run,
        probe="results/probe/{model}.json",
    output:
        record="results/runs/{sweep}/{model}/r{repeat}/{arm}.json",
    log:
        "results/logs/fold/{sweep}/{model}/r{repeat}/{arm}.log",
    conda:
        ENV
    threads: model_threads
    resources:
        **BACKEND_SLOTS,
    params:
        # A staged decision's run (decide:) also carries run["staged"]: the budget it is
        # made under, which reruns it only when the budget stopped it and budget_usd
        # changed (common.smk staged_run)
        run=run_params,
        temperature=STUDY.config["temperature"],
        recall_max_tokens=STUDY.config["recall_max_tokens"],
        store=STUDY.config["store"],
        replay=STUDY.config["replay"],
        # The lock whose store pins every entry read is checked against: a path, not an
        # input, so rewriting the lock reruns no fold (the job reads the pins at start).
        lock=LOCK,
        # The spend ledger every job shares (docs/design.md §6, Spend): a path, not an output, since
        # every job writes it. The budget is not a param: raising it would rerun every
        # finished job (params are a rerun trigger); the script reads it from the config.
        ledger=LEDGER,
        # > 1 only when --config retry_infrastructure=true finds this run's record
        # invalid for a retryable reason: the changed param reruns exactly that job
        # (from the wildcards, not `output`: Snakemake ignores params derived from files)
        attempt=run_attempt,
    script:
        "../scripts/fold.py"
