from foldstudy.io import logged
from foldstudy.study.fixtures import fixture_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    fixture_stage(sm.input, sm.output, sm.params)
