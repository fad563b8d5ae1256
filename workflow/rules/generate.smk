# Generate: pin the study (lock) and check that nothing drifted from it (verify).
# Neither rule has an output file, so each runs whenever it is asked for by name and
# never as a side effect of another target. Their artifacts are params, not inputs: a
# drift check reads what is there; as inputs, a changed rows.csv would first make
# Snakemake rebuild numbers.json from it and hide the drift. (The analysis plan is a
# source file no rule makes, so it is an input: the same one rule stats read.)
# Logic: foldstudy/release/lock.py (lock) and foldstudy/release/verify.py (verify).


rule lock:
    input:
        analysis=ANALYSIS_YAML,
    log:
        "results/logs/lock.log",
    localrule: True
    conda:
        ENV
    params:
        numbers=NUMBERS,
        evidence=GEN_EVIDENCE,
        lock=LOCK,
        study=STUDY.config["study"],
        dirs=W.outputs.private_dirs(),
        # the folder whose every file the lock pins (one digest over the tree)
        resources=lambda wildcards, input: str(Path(input.analysis).parent),
        config=STUDY.config,
        # what a lock refuses to pin beside: failed jobs' logs, symlinks, a running build
        results="results",
        build_locks=".snakemake/locks",
    script:
        "../scripts/lock.py"


rule verify:
    input:
        analysis=ANALYSIS_YAML,
    log:
        "results/logs/verify.log",
    localrule: True
    conda:
        ENV
    params:
        numbers=NUMBERS,
        evidence=GEN_EVIDENCE,
        lock=LOCK,
        claims=CLAIMS,
        report="results/verify/report.md",
        dirs=W.outputs.private_dirs(),
        # the folder whose every file the lock pins (one digest over the tree)
        resources=lambda wildcards, input: str(Path(input.analysis).parent),
        config=STUDY.config,
    script:
        "../scripts/verify.py"
