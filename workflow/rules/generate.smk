# Generate: pin the study (lock) and check that nothing drifted from it (verify).
# Neither rule has an output file, so each runs whenever it is asked for by name and
# never as a side effect of another target.


rule lock:
    input:
        unpack(generate_inputs),
    log:
        "results/logs/lock.log",
    params:
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
    input:
        unpack(generate_inputs),
    log:
        "results/logs/verify.log",
    params:
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
