# Generate: pin the study (lock) and check that nothing drifted from it (verify).
# Neither rule has an output file, so each runs whenever it is asked for by name and
# never as a side effect of another target. Their artifacts are params, not inputs: a
# drift check reads what is there; as inputs, a changed rows.csv would first make
# Snakemake rebuild numbers.json from it and hide the drift.


rule lock:
    log:
        "results/logs/lock.log",
    params:
        numbers=NUMBERS,
        evidence=GEN_EVIDENCE,
        lock=LOCK,
        study=config["study"],
        dirs=private_dirs(),
        resources=str(RESOURCES),
        config=STUDY.config,
    conda:
        ENV
    script:
        "../scripts/lock.py"


rule verify:
    log:
        "results/logs/verify.log",
    params:
        numbers=NUMBERS,
        evidence=GEN_EVIDENCE,
        lock=LOCK,
        claims=CLAIMS,
        report="results/verify/report.md",
        dirs=private_dirs(),
        resources=str(RESOURCES),
        config=STUDY.config,
    conda:
        ENV
    script:
        "../scripts/verify.py"
