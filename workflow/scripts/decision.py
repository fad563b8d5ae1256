from foldstudy.io import logged
from foldstudy.report.decision import decision_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    decision_stage(sm.input, sm.output, sm.params)
