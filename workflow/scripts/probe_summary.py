from foldstudy.entry import logged
from foldstudy.probe import write_summary

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    write_summary(list(sm.input), sm.output[0])
