# The audit (docs/design.md §1): runs, calls, tokens and dollars per model before any call.
# It reads results/probe/*.json for prices when they exist but never depends on them,
# so asking for the plan never probes (never calls) a model. Logic: foldstudy/run/audit.py.


rule audit:
    input:
        **W.fixtures(),
        **PROMPT_FILES,
    output:
        plan=report(
            "results/audit/plan.tsv",
            caption="../report/audit.rst",
            category="Audit",
        ),
    log:
        "results/logs/audit.log",
    localrule: True
    conda:
        ENV
    params:
        **PRICING,
        # the plan against the budget, and what the ledger has spent so far (docs/design.md §6, Spend)
        runs=W.decision.runs_planned(),
        budget_usd=STUDY.config["budget_usd"],
        ledger=LEDGER,
        # a staged decision (decide:): its first stage and its maximum, both priced
        staged=W.decision.audit_staged(),
    script:
        "../scripts/audit.py"


# The repeat plan (docs/design.md §6, Power): per contrast, the repeats it needs at the
# pilot's ICC (power.pilot) or the paper's 0.750, and what they cost at the audit's
# prices. Before any call, like the audit. Logic: foldstudy/analysis/power.py.


rule power:
    input:
        **W.fixtures(),
        **PROMPT_FILES,
        **W.decision.power_pilot(),
        analysis=ANALYSIS_YAML,
        arms_yaml=ARMS_YAML,
    output:
        tsv=report(
            "results/audit/power.tsv",
            caption="../report/power.rst",
            category="Audit",
        ),
        md="results/audit/power.md",
    log:
        "results/logs/power.log",
    localrule: True
    conda:
        ENV
    params:
        **PRICING,
        sweeps=W.decision.power_sweeps(),
        power=STUDY.config["power"],
        compare_pairs=STUDY.config["compare_pairs"],
    script:
        "../scripts/power.py"
