# Fixtures (paper §3.1): one synthetic session per sweep, cut into chunks, with a manifest
# of where every planted fact sits. Logic: foldstudy/study/fixtures.py.


rule fixture:
    input:
        # a session sweep's transcript and facts file (docs/own-sessions.md)
        unpack(fixture_session_inputs),
        facts=res("facts.yaml"),
        filler=res("scenario", "filler.yaml"),
        grading=GRADING_YAML,
    output:
        fixture="results/fixtures/{sweep}/fixture.json",
        manifest="results/fixtures/{sweep}/manifest.json",
    log:
        "results/logs/fixture/{sweep}.log",
    localrule: True
    conda:
        ENV
    params:
        fx=fixture_params,
        # the transcript by content: an edit that keeps its size and mtime reruns too
        content=fixture_content,
    script:
        "../scripts/fixture.py"


# Help writing a session's facts file: the identifier-shaped tokens of its main
# thread, with class, first turn, count and context. No model. Logic:
# foldstudy/study/candidates.py.
rule candidates:
    input:
        transcript=session_transcript,
        inherited=lambda w: W.sessions.session_inherited(w.scenario),
    output:
        tsv="results/sessions/{scenario}/candidates.tsv",
        md="results/sessions/{scenario}/candidates.md",
        set_aside="results/sessions/{scenario}/set_aside.tsv",
    log:
        "results/logs/candidates/{scenario}.log",
    localrule: True
    conda:
        ENV
    params:
        name=lambda wildcards: wildcards.scenario,
        scenario=lambda wildcards: STUDY.config["scenarios"][wildcards.scenario],
    script:
        "../scripts/candidates.py"
