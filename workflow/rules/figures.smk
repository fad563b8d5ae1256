# Figures (docs/design.md §6, Tables and figures): matplotlib, PNG and SVG, from the evidence and numbers.json.
# Each figure is one entry of foldstudy/report/titles.py FIGURES (its caption file
# workflow/report/figure-<name>.rst is generated from it) and one drawer in
# foldstudy/report/figures.py. Logic: foldstudy/report/figures.py.

# (rules trace and decision_page take their figure's report() from `figure` too)
from foldstudy.report.titles import drawn_by, figure


rule figures:
    input:
        rows=W.outputs.evidence_inputs()["rows"],
        numbers="results/stats/numbers.json",
        analysis=ANALYSIS_YAML,
        arms=ARMS_YAML,
    output:
        # one PNG in the report, and one SVG, per figure this rule draws
        **{f.drawer: report(f.png, **f.report_args) for f in drawn_by("figures")},
        svg=[f.svg for f in drawn_by("figures")],
    log:
        "results/logs/figures.log",
    localrule: True
    conda:
        ENV
    params:
        # evidence made by another study or config is refused, naming both
        config=STUDY.config,
        # which sweeps (and models) each analysis reads: the study config's scopes
        scopes=STUDY.config["scopes"],
    script:
        "../scripts/figures.py"
