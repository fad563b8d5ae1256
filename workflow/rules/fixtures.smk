# Fixtures (paper §3.1): one synthetic session per sweep, cut into chunks, with a manifest
# of where every planted fact sits. Logic: foldstudy/study/fixtures.py.


rule fixture:
    input:
        facts=res("facts.yaml"),
        filler=res("scenario", "filler.yaml"),
        grading=GRADING_YAML,
    output:
        fixture="results/fixtures/{sweep}/fixture.json",
        manifest="results/fixtures/{sweep}/manifest.json",
    log:
        "results/logs/fixture/{sweep}.log",
    conda:
        ENV
    params:
        fx=fixture_params,
    script:
        "../scripts/fixture.py"
