from foldstudy.io import logged
from foldstudy.run.audit import audit_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    audit_stage(sm.input, sm.output, sm.params)
