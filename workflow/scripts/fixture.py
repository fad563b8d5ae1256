from foldstudy.entry import logged, make_fixture

sm = snakemake  # noqa: F821 - provided by Snakemake's script directive
with logged(sm.log[0]):
    make_fixture(sm.params.resources, **sm.params.fx, fixture_out=sm.output.fixture,
                 manifest_out=sm.output.manifest)
