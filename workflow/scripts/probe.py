from foldstudy.entry import logged
from foldstudy.probe import run_probe

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    run_probe(list(sm.input.fixtures), sm.wildcards.model,
              {**sm.params.model, "threads": sm.threads}, sm.params.arms,
              temperature=sm.params.temperature, store_dir=sm.params.store,
              replay=sm.params.replay, out=sm.output[0])
