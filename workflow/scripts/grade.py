from foldstudy.entry import grade_sweep, logged

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    grade_sweep(sm.params.resources, sm.input.fixture, list(sm.input.runs), sm.output.rows,
                sm.output.checks, sm.output.folds)
