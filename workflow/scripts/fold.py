from foldstudy.io import logged
from foldstudy.run.fold import fold_stage

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    # budget_usd from the config, not a param: raising it must rerun no finished job
    fold_stage(sm.input, sm.output, sm.params, sm.threads, sm.config.get("budget_usd"))
