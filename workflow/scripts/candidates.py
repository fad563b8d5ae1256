from foldstudy.io import logged
from foldstudy.study.candidates import candidates_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    candidates_stage(sm.input, sm.output, sm.params)
