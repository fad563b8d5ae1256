from foldstudy.io import logged
from foldstudy.report.carrier import carriers_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    carriers_stage(sm.input, sm.output, sm.params)
