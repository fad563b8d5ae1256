from foldstudy.io import logged
from foldstudy.report.figures import figures_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    figures_stage(sm.input, sm.output, sm.params)
