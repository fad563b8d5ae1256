from foldstudy.entry import logged
from foldstudy.tables import write_tables

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    write_tables(sm.input.rows, sm.input.checks, sm.input.numbers, list(sm.input.probes),
                 sm.params.resources, sm.output[0])
