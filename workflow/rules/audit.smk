# The audit (DESIGN §1): runs, calls, tokens and dollars per model before any call.
# It reads results/probe/*.json for prices when they exist but never depends on them,
# so asking for the plan never probes (never calls) a model.


rule audit:
    input:
        **audit_fixtures(),
    output:
        report(
            "results/audit/plan.tsv",
            caption="../report/audit.rst",
            category="Audit",
        ),
    log:
        "results/logs/audit.log",
    params:
        resources=str(RESOURCES),
        runs=audit_runs(),
        arms=audit_arms(),
        backends=audit_backends(),
        probe_dir="results/probe",
        recall_max_tokens=config["recall_max_tokens"],
    conda:
        ENV
    script:
        "../scripts/audit.py"
