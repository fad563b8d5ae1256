from foldstudy.analysis.numbers import stats_stage
from foldstudy.io import logged

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    stats_stage(sm.input, sm.output, sm.params)
