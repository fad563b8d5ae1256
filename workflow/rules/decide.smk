# The decision cards (issue 33; DESIGN §6, Decision): one card per (sweep, model) in
# results/decision.md and decision.json, which the summary opens with. Logic:
# foldstudy/analysis/decision.py (the verdicts), foldstudy/report/decision.py (the words).


rule decision:
    input:
        unpack(decision_inputs),
        analysis=ANALYSIS_YAML,
        arms_yaml=ARMS_YAML,
    output:
        md=report(
            "results/decision.md", caption="../report/decision.rst", category="Summary"
        ),
        json="results/decision.json",
    log:
        "results/logs/decision.log",
    conda:
        ENV
    params:
        decide=STUDY.config.get("decide"),
        power=STUDY.config["power"],
        compare_pairs=STUDY.config["compare_pairs"],
        own_arms=own_arm_twins(STUDY.config["arms_file"]),
        arms=audit_arms(),
        sweeps=decision_sweeps(),
        # the repeats to decide are priced at the audit's prices, before any call; a
        # reviewer's package (evidence mode) has no fixtures, so no price
        priced=not EVIDENCE_MODE,
        backends=audit_backends(),
        probe_dir="results/probe",
        recall_max_tokens=STUDY.config["recall_max_tokens"],
    script:
        "../scripts/decision.py"
