"""The paper study's dry run against a minimal Snakefile with the same job count.

    .venv/bin/python bench/dry_run.py

Both in one run, in turn (paper, minimal, paper, ...: five pairs after one untimed pair;
the medians printed, and the median of the five pairs' ratios). The ratio is the cost of
this workflow's config check, input functions and DAG over Snakemake's own minimum for
that many jobs. It also splits the difference: reading the Snakefile and checking the
config (both with --list-rules, which stops before the DAG), and planning the jobs (the
rest: each job's input functions, params, resources, log and conda env, which the
minimal rule does not have). Prints the ratio last. Goals: the paper study's dry run
(its 685 jobs) under 15 s wall, once a timed test (tests/run/test_probe.py), and a ratio <= 1.3.

The floor: the same Snakefile, config check and jobs with the fold rule (622 of the jobs)
cut to one output and nothing else (no input, param, log, conda env or script), timed
the same way. What the full study costs above that is Snakemake's own work for what the
fold rule declares, job by job: each input file looked up and each input function and
param called, and the script read through its source cache (a `script:` rule costs that
at every job). The declarations are the study's: the prompt files, fixture, probe and the
run before it as inputs, so an edit reruns exactly the jobs that read it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from common import ROOT, cli, paired_walls, snakemake

DRY_RUN_GOAL_S = 15  # the paper study's plan, once asserted in tests/run/test_probe.py

MINIMAL = """
rule all:
    input: expand("out/{{i}}.txt", i=range({n}))

rule one:
    output: "out/{{i}}.txt"
    shell: "touch {{output}}"
"""


# What the floor keeps of the fold rule: its output, so every job that reads a run record
# is planned as before.
BARE_FOLD = """rule fold:
    output:
        record="results/runs/{sweep}/{model}/r{repeat}/{arm}.json",
    localrule: True
    shell:
        "true"
"""


def bare_fold_checkout(tmp: Path) -> Path:
    """The workflow's files (the package stays the installed one) with a bare fold rule."""
    copy = tmp / "floor"
    for name in ("Snakefile", "config", "resources", "envs", "profiles", "workflow/rules",
                 "workflow/scripts"):
        src, dst = ROOT / name, copy / name
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (copy / "workflow/rules/fold.smk").write_text(BARE_FOLD)
    return copy


def snakefile_run(snakefile: Path, workdir: Path, *args: str) -> str:
    """One Snakemake run of another Snakefile than this checkout's (common.snakemake runs
    that one); its standard output."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(snakefile),
                           "--directory", str(workdir), *args],
                          capture_output=True, check=True, text=True).stdout


def job_count(output: str) -> int:
    """The `total` line of a `-n --quiet rules` summary."""
    return int(re.search(r"^total\s+(\d+)", output, re.M).group(1))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp:
        work = Path(tmp) / "paper"
        work.mkdir()
        _, p = snakemake(work, "-n", "--quiet", "rules", "--configfile",
                         str(ROOT / "config/study-paper.yaml"))
        jobs = job_count(p.stdout + p.stderr)
        def paper_study(*args: str) -> None:
            snakemake(work, *args, "--configfile", str(ROOT / "config/study-paper.yaml"))

        mini = Path(tmp) / "mini"
        mini.mkdir()
        (mini / "Snakefile").write_text(MINIMAL.format(n=jobs - 1))

        def minimal(*args: str) -> None:
            snakefile_run(mini / "Snakefile", mini, *args)

        floor = bare_fold_checkout(Path(tmp))
        floor_work = Path(tmp) / "floor-work"
        floor_work.mkdir()

        def floor_study(*args: str) -> str:
            return snakefile_run(floor / "Snakefile", floor_work, *args, "--configfile",
                                 str(floor / "config/study-paper.yaml"))

        floor_jobs = job_count(floor_study("-n", "--quiet", "rules"))

        paper, base, ratio = paired_walls(lambda: paper_study("-n"), lambda: minimal("-n"))
        bare, base_again, floor_ratio = paired_walls(lambda: floor_study("-n"),
                                                     lambda: minimal("-n"))
        paper_parse, base_parse, _ = paired_walls(lambda: paper_study("--list-rules"),
                                                  lambda: minimal("--list-rules"))
    parse, plan = paper_parse - base_parse, (paper - base) - (paper_parse - base_parse)
    print(f"{jobs} jobs: paper study dry run {paper:.2f} s, minimal Snakefile {base:.2f} s")
    print(f"of the {paper - base:.2f} s more: {parse:.2f} s reading the Snakefile and checking "
          f"the config, {plan:.2f} s planning the jobs ({plan / jobs * 1000:.1f} ms a job)")
    print(f"the floor: the same study ({floor_jobs} jobs) with a bare fold rule {bare:.2f} s "
          f"against the minimal {base_again:.2f} s, ratio {floor_ratio:.2f}; the fold rule's "
          f"inputs, params, log and script cost the other {paper - bare:.2f} s")
    print(f"paper study dry run {paper:.2f} s against the 15 s goal: "
          f"{'met' if paper < DRY_RUN_GOAL_S else 'MISSED'}")
    print(f"dry-run ratio (paper / minimal, the median of 5 pairs run in turn): {ratio:.2f}")


if __name__ == "__main__":
    cli(__doc__).parse_args()
    main()
