# The audit (DESIGN §1): runs, calls, tokens and dollars per model before any call.
# It reads results/probe/*.json for prices when they exist but never depends on them,
# so asking for the plan never probes (never calls) a model. Logic: foldstudy/run/audit.py.


rule audit:
    input:
        **audit_fixtures(),
        **PROMPT_FILES,
    output:
        plan=report(
            "results/audit/plan.tsv",
            caption="../report/audit.rst",
            category="Audit",
        ),
    log:
        "results/logs/audit.log",
    conda:
        ENV
    params:
        runs=audit_runs(),
        arms=audit_arms(),
        backends=audit_backends(),
        probe_dir="results/probe",
        recall_max_tokens=STUDY.config["recall_max_tokens"],
    script:
        "../scripts/audit.py"
