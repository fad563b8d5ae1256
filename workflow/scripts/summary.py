from foldstudy.io import logged
from foldstudy.report.summary import summary_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    summary_stage(sm.input, sm.output, sm.params)
