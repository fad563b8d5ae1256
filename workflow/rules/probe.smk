# The capability probe (docs/design.md §5): one verdict per (model, endpoint, request shape)
# before any fold. `snakemake --until probe` stops here: no fold job runs.
# Logic: foldstudy/run/probe.py.


rule probe_model:
    input:
        fixtures=probe_fixtures,
    output:
        verdicts="results/probe/{model}.json",
    log:
        "results/logs/probe/{model}.log",
    conda:
        ENV
    # One thread: a probe is a few short requests, and two threads contending with
    # another model job cost more than they bring.
    threads: 1
    resources:
        **BACKEND_SLOTS,
    params:
        name=lambda wc: wc.model,
        model=lambda wc: STUDY.model_config(wc.model),
        arms=folded_arm_params,
        probe_arms=probe_arm_params,
        temperature=STUDY.config["temperature"],
        store=STUDY.config["store"],
        replay=STUDY.config["replay"],
        lock=LOCK,  # a path, not an input: see rule fold
        # The spend ledger every job shares (docs/design.md §6, Spend): a path, not an output, since
        # every job writes it. The budget is not a param: raising it would rerun every
        # finished job (params are a rerun trigger); the script reads it from the config.
        ledger=LEDGER,
        pin_rule=STUDY.config["probe"],
        probe_only=lambda wc: wc.model in STUDY.config["probe_only"],
    script:
        "../scripts/probe.py"


rule probe:
    input:
        verdicts=expand("results/probe/{model}.json", model=PROBED_MODELS),
    output:
        summary=report(
            "results/probe/summary.tsv",
            caption="../report/probe.rst",
            category="Probe",
        ),
    log:
        "results/logs/probe/summary.log",
    localrule: True
    conda:
        ENV
    script:
        "../scripts/probe_summary.py"
