from foldstudy.entry import logged
from foldstudy.generate import publish_evidence

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    publish_evidence(
        {k: list(sm.input[k]) for k in ("rows", "checks", "folds")},
        {k: sm.output[k] for k in ("rows", "checks", "folds")},
        sm.output.manifest,
        sm.params.config,
        probes=(sm.input.probes, sm.output.probes),
    )
