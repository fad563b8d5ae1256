"""foldstudy: the logic of the compaction-carrier workflow (no Snakemake import).

One subpackage per stage of the evidence chain, named as the rules are:
study (specs, config, design, fixtures), backends, run (fold, probe, audit), grade,
evidence, analysis (stats), report (tables, figures), release (lock, verify, package).
"""
