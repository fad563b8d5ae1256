# The sanitized package (paper §7), a Workflow Run RO-Crate (ro-crate-metadata.json).
# Logic: foldstudy/release/package.py and foldstudy/release/crate.py.

from foldstudy.release.crate import workflow_sources


# `snakemake -c1 release`: the study's own package (results/release/<study>.tar.gz).
rule release:
    input:
        f"results/release/{STUDY.config['study']}.tar.gz",
    localrule: True


rule release_package:
    input:
        **W.outputs.generate_inputs(),
        lock=release_lock,
        tables="results/tables",
        analysis=ANALYSIS_YAML,
        readme=res("templates", "release-README.md"),
        # the crate describes each config key by the schema's words
        schema=os.path.relpath(ROOT / "config/schema/config.schema.yaml"),
        # the workflow definition the package carries: an edit to it is a new release
        workflow=[os.path.relpath(p) for p in workflow_sources(ROOT).values()],
        # its root is where the package's workflow files are read from
        snakefile=os.path.relpath(ROOT / "Snakefile"),
    output:
        package=directory("results/release/{name}"),
        tarball="results/release/{name}.tar.gz",
    log:
        "results/logs/release/{name}.log",
    localrule: True
    conda:
        ENV
    params:
        name=lambda wildcards: wildcards.name,
        # the evidence folder the rows come from: this run's, or a package's
        evidence=lambda wildcards, input: str(Path(input.rows).parent),
        figures="results/figures",
        fixtures=None if EVIDENCE_MODE else "results/fixtures",
        config=STUDY.config,
        verify={
            "claims_path": CLAIMS,
            "report_out": "results/verify/report.md",
            "resources": RESOURCES_REL,
            **W.outputs.private_dirs(),
        },
    script:
        "../scripts/release.py"
