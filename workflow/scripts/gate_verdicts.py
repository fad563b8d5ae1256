from foldstudy.io import logged
from foldstudy.report.gate import gate_verdicts_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    gate_verdicts_stage(sm.input, sm.output, sm.params)
