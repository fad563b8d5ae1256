from foldstudy.io import logged
from foldstudy.report.gate import gate_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    gate_stage(sm.input)
