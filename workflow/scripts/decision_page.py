from foldstudy.io import logged
from foldstudy.report.decision import decision_page_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    decision_page_stage(sm.input, sm.output, sm.params)
