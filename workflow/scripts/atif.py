from foldstudy.io import logged
from foldstudy.report.atif import atif_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    atif_stage(sm.input, sm.output, sm.params)
