from foldstudy.entry import logged
from foldstudy.generate import verify_study

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    verify_study(sm.params.evidence, sm.params.numbers, sm.params.lock, sm.params.claims,
                 sm.params.report, resources=sm.params.resources, config=sm.params.config,
                 **sm.params.dirs)
