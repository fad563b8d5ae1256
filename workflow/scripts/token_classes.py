from foldstudy.io import logged
from foldstudy.run.tokens import token_classes_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    token_classes_stage(sm.input, sm.output, sm.params)
