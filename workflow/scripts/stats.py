from foldstudy.entry import logged
from foldstudy.numbers import write_numbers

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    write_numbers(sm.params.evidence, sm.output.numbers, sm.output.provenance,
                  sm.output.macros, sm.input.analysis)
