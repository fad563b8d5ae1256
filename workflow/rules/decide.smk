# The decision cards (docs/design.md §6, Decision): one card per (sweep, model) in
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
        **VERDICT_ARMS,
        **PRICING,
        # dollars priced as the ledger reserves (listed prices times learned ratios)
        decide=STUDY.config.get("decide"),
        power=STUDY.config["power"],
        # which arms a verdict reads how: own arms' twins, unmatched own arms (outside
        # every verdict), A/A copies and native@ARM arms (each against its own only)
        sweeps=decision_sweeps(STUDY.config),
        # what a native arm is called on a model whose compaction is a proxy's
        native_words=W.decision.native_words(),
        # the repeats to decide are priced as the ledger reserves (the audit's estimate
        # before any call); a reviewer's package (evidence mode) has no fixtures, so no
        # price
        priced=not EVIDENCE_MODE,
        ledger=LEDGER,
    script:
        "../scripts/decision.py"


# A staged decision (config decide:): after each stage of a sweep that runs the pair, a
# look tests it on every model and says which models go on and how far (docs/design.md §6, Decision).
# Only a study with `decide:` asks for these files. Logic: foldstudy/analysis/staging.py.


checkpoint decide_look:
    input:
        unpack(look_inputs),
        grading=GRADING_YAML,
        arms_yaml=ARMS_YAML,
        analysis=ANALYSIS_YAML,
    output:
        state="results/decide/{sweep}/look{look}.json",
    log:
        "results/logs/decide/{sweep}/look{look}.log",
    localrule: True
    conda:
        ENV
    params:
        **VERDICT_ARMS,
        # the next stage is priced as the ledger reserves, against what is left
        **PRICING,
        sweep=lambda w: w.sweep,
        look=lambda w: int(w.look),
        # without the gate, which decides nothing here beyond the family's size: a
        # changed gate reruns the cards and the gate, never the looks
        decide=W.decision.look_decide(),
        gate_pair=W.decision.gate_pair(),
        models=lambda w: STUDY.config["sweeps"][w.sweep]["models"],
        sweep_arms=lambda w: STUDY.config["sweeps"][w.sweep]["arms"],
        # the pairs its cards read (sweeps.X.compare; analysis/power.py sweep_contrasts)
        compare=lambda w: STUDY.config["sweeps"][w.sweep].get("compare"),
        rotation=lambda w: W.decision.decide_rotation(w.sweep),
        seed=lambda w: STUDY.config["sweeps"][w.sweep]["seed"],
        alpha=STUDY.config["power"]["alpha"],
        power=STUDY.config["power"]["power"],
        # the family whose size alpha is split by (decision.planned_family_size): own
        # arms' twins, A/A copies and native@ARM arms' lines join it
        budget_usd=STUDY.config["budget_usd"],
        ledger=LEDGER,
    script:
        "../scripts/decide_look.py"


# The gate (config decide.gate): results/gate.json says per model whether the cards hold
# what the gate states, and `snakemake -c1 gate` fails with one line per failing model
# (docs/design.md §6, Decision). Two rules, so the verdicts file is kept when the gate fails.
# Logic: foldstudy/report/gate.py.


rule gate_verdicts:
    input:
        decision="results/decision.json",
    output:
        gate="results/gate.json",
    log:
        "results/logs/gate_verdicts.log",
    localrule: True
    conda:
        ENV
    params:
        gate=(STUDY.config["decide"] or {}).get("gate"),
        sweeps=decision_sweeps(STUDY.config),
    script:
        "../scripts/gate_verdicts.py"


rule gate:
    input:
        gate="results/gate.json",
        # the carrier a passing gate names, as files (nobody needs a separate target)
        carriers=W.outputs.carrier_folders(),
    log:
        "results/logs/gate.log",
    localrule: True
    conda:
        ENV
    script:
        "../scripts/gate.py"


# The decision's page (docs/design.md §6, Decision): the forest plot and the cards, which the summary and
# the comparison index link. Logic: foldstudy/report/decision.py, figures.py.


rule decision_page:
    input:
        decision="results/decision.json",
        # each decided card links its carrier folder, so the page builds the folders
        carriers=W.outputs.carrier_folders(),
        analysis=ANALYSIS_YAML,
        arms_yaml=ARMS_YAML,
        template=res("templates", "decision.html.j2"),
        style=res("templates", "viewer-style.css.j2"),
    output:
        html="results/decision.html",
        png=report(figure("decision").png, **figure("decision").report_args),
        svg=figure("decision").svg,
    log:
        "results/logs/decision_page.log",
    localrule: True
    conda:
        ENV
    params:
        links=not EVIDENCE_MODE,
    script:
        "../scripts/decision_page.py"


# The chosen carrier as files (docs/design.md §6, Decision): per decided card, its arm's prompt, schema,
# capacity and the exact request a fold sent, with a README (`snakemake -c1 carriers`).
# Reads the run records and the response store, so not in evidence mode. Logic:
# foldstudy/report/carrier.py.


rule carriers:
    input:
        decision="results/decision.json",
        # the records the requests come from exist once rows.csv does (rule compare's way);
        # a staged sweep's are known once its looks ran
        staged_runs=staged_run_paths,
        rows="results/evidence/rows.csv",
        own=W.outputs.own_arm_files(),
    output:
        carriers=directory("results/decision"),
    log:
        "results/logs/carriers.log",
    localrule: True
    conda:
        ENV
    params:
        runs=page_runs,
        arms=PRICING["arms"],
        own_files=W.outputs.own_arm_sources(),
        store=STUDY.config["store"],
        temperature=STUDY.config["temperature"],
    script:
        "../scripts/carriers.py"
