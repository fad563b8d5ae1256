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
    localrule: True
    conda:
        ENV
    params:
        decide=STUDY.config.get("decide"),
        power=STUDY.config["power"],
        compare_pairs=STUDY.config["compare_pairs"],
        own_arms=own_arm_twins(arms_file_path(STUDY.config)),
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


# A staged decision (config decide:): after each stage of a sweep that runs the pair, a
# look tests it on every model and says which models go on and how far (DESIGN §6).
# Only a study with `decide:` asks for these files. Logic: foldstudy/analysis/staging.py.


checkpoint decide_look:
    input:
        unpack(look_inputs),
        grading=GRADING_YAML,
        arms_yaml=ARMS_YAML,
    output:
        state="results/decide/{sweep}/look{look}.json",
    log:
        "results/logs/decide/{sweep}/look{look}.log",
    localrule: True
    conda:
        ENV
    params:
        sweep=lambda w: w.sweep,
        look=lambda w: int(w.look),
        decide=DECIDE,
        models=lambda w: STUDY.config["sweeps"][w.sweep]["models"],
        sweep_arms=lambda w: STUDY.config["sweeps"][w.sweep]["arms"],
        rotation=lambda w: decide_rotation(w.sweep),
        seed=lambda w: STUDY.config["sweeps"][w.sweep]["seed"],
        alpha=STUDY.config["power"]["alpha"],
        power=STUDY.config["power"]["power"],
        # the next stage is priced at the audit's worst case against what is left
        arms=audit_arms(),
        backends=audit_backends(),
        probe_dir="results/probe",
        recall_max_tokens=STUDY.config["recall_max_tokens"],
        budget_usd=STUDY.config["budget_usd"],
        ledger=LEDGER,
    script:
        "../scripts/decide_look.py"
