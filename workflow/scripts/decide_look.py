from foldstudy.analysis.staging import look_stage
from foldstudy.io import logged

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    look_stage(sm.input, sm.output, sm.params)
