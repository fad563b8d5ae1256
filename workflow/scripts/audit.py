from foldstudy.audit import write_plan
from foldstudy.entry import logged

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    write_plan(sm.params.resources, dict(sm.input), sm.params.runs, sm.params.arms,
               sm.params.backends, sm.params.probe_dir, sm.params.recall_max_tokens,
               sm.output[0])
