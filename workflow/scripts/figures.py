from foldstudy.entry import logged
from foldstudy.figures import write_figures

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    write_figures(sm.input.rows, sm.input.numbers, sm.input.analysis, sm.params.out)
