from foldstudy.grade.rows import grade_stage
from foldstudy.io import logged

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    grade_stage(sm.input, sm.output, sm.params)
