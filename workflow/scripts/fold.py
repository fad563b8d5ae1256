from foldstudy.entry import logged, run_fold

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    run = sm.params.run
    run_fold(sm.params.resources, sm.input.fixture, arm=run["arm"],
             model_name=run["sample"]["model"], model={**run["model"], "threads": sm.threads},
             sample=run["sample"], temperature=sm.params.temperature,
             recall_max_tokens=sm.params.recall_max_tokens, store_dir=sm.params.store,
             out=sm.output[0], probe_path=sm.input.probe, replay=sm.params.replay)
