# The sanitized package (paper §7). Logic: foldstudy/release/package.py.


rule release:
    input:
        unpack(generate_inputs),
        lock=release_lock,
        tables="results/tables",
        analysis=ANALYSIS_YAML,
        readme=res("templates", "release-README.md"),
    output:
        package=directory("results/release/{name}"),
        tarball="results/release/{name}.tar.gz",
    log:
        "results/logs/release/{name}.log",
    conda:
        ENV
    params:
        name=lambda wildcards: wildcards.name,
        evidence=GEN_EVIDENCE,
        figures="results/figures",
        fixtures=None if EVIDENCE_MODE else "results/fixtures",
        config=STUDY.config,
        verify={
            "claims_path": CLAIMS,
            "report_out": "results/verify/report.md",
            "resources": RESOURCES_REL,
            **private_dirs(),
        },
    script:
        "../scripts/release.py"
