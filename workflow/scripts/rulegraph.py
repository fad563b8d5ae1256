from foldstudy.io import logged
from foldstudy.report.rulegraph import draw_rulegraph

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    draw_rulegraph(sm.params.snakefile, sm.output[0])
