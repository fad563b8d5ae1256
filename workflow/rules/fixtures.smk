rule fixture:
    output:
        fixture="results/fixtures/{sweep}/fixture.json",
        manifest="results/fixtures/{sweep}/manifest.json",
    log:
        "results/logs/fixture/{sweep}.log",
    params:
        fx=fixture_params,
        resources=str(RESOURCES),
    conda:
        ENV
    script:
        "../scripts/fixture.py"
