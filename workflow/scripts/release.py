from foldstudy.entry import logged
from foldstudy.generate import make_release

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    make_release(sm.wildcards.name, sm.params.evidence, sm.input.numbers, sm.input.lock,
                 sm.params.config, sm.input.tables, sm.params.figures, sm.params.fixtures,
                 sm.params.root, sm.output.package, sm.output.tarball, sm.params.readme,
                 verify=sm.params.verify)
