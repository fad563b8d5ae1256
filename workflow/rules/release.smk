rule release:
    input:
        unpack(generate_inputs),
        lock=release_lock,
        tables="results/tables",
    output:
        package=directory("results/release/{name}"),
        tarball="results/release/{name}.tar.gz",
    log:
        "results/logs/release/{name}.log",
    params:
        evidence=GEN_EVIDENCE,
        figures="results/figures",
        fixtures=None if config.get("evidence") else "results/fixtures",
        root=str(ROOT),
        readme=str(RESOURCES / "templates" / "release-README.md"),
        config=STUDY.config,
        verify={
            "claims_path": CLAIMS,
            "report_out": "results/verify/report.md",
            "resources": str(RESOURCES),
            **private_dirs(),
        },
    conda:
        ENV
    script:
        "../scripts/release.py"
