from foldstudy.entry import logged
from foldstudy.generate import write_lock

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    write_lock(sm.params.evidence, sm.params.numbers, sm.params.lock, sm.params.study,
               resources=sm.params.resources, config=sm.params.config, **sm.params.dirs)
