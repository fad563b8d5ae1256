from foldstudy.io import logged
from foldstudy.release.verify import verify_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    verify_stage(sm.input, sm.output, sm.params)
