from foldstudy.io import logged
from foldstudy.release.lock import lock_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    lock_stage(sm.input, sm.output, sm.params)
