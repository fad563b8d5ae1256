from foldstudy.io import logged
from foldstudy.release.package import release_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    release_stage(sm.input, sm.output, sm.params)
