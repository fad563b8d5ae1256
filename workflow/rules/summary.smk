# The one screen a newcomer reads first (results/summary.md), printed when a run that
# wrote it ends. Logic: foldstudy/report/summary.py.


rule summary:
    input:
        # rows, checks and (where the evidence has one) the fact trace
        **W.outputs.trace_inputs(),
        losses="results/trace/fact-losses.csv",
        decision="results/decision.md",  # the summary opens with the cards
        decision_page="results/decision.html",  # which they link, with the forest plot
        sessions=W.sessions.session_manifests(),  # own-session sweeps: facts' fate and the baseline
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
    output:
        summary=report(
            "results/summary.md", caption="../report/summary.rst", category="Summary"
        ),
    log:
        "results/logs/summary.log",
    localrule: True
    conda:
        ENV
    params:
        study=STUDY.config["study"],
        viewer=not EVIDENCE_MODE,
        first_block=W.outputs.first_block_page(),
        # what the paid calls cost (docs/design.md §6, Spend): the ledger is read, not an input, so a
        # call settled later reruns no summary
        ledger=None if EVIDENCE_MODE else LEDGER,
        budget_usd=STUDY.config["budget_usd"],
        config=STUDY.config,  # evidence of another study is refused before any write
    script:
        "../scripts/summary.py"
