from foldstudy.io import logged
from foldstudy.run.probe_summary import probe_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    probe_stage(sm.input, sm.output, sm.params)
