from foldstudy.io import logged
from foldstudy.report.compare import compare_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    compare_stage(sm.input, sm.output, sm.params)
