"""The paper study's dry run against a minimal Snakefile with the same job count.

    .venv/bin/python bench/dry_run.py

Both in one run, each timed three times (the median printed). The ratio is the cost of
this workflow's config check, input functions and DAG over Snakemake's own minimum for
that many jobs. Prints the ratio last. Goal: <= 1.3.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from common import ROOT, median_wall, snakemake

MINIMAL = """
rule all:
    input: expand("out/{{i}}.txt", i=range({n}))

rule one:
    output: "out/{{i}}.txt"
    shell: "touch {{output}}"
"""


def main() -> None:
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp:
        work = Path(tmp) / "paper"
        work.mkdir()
        _, p = snakemake(work, "-n", "--quiet", "rules", "--configfile",
                         str(ROOT / "config/study-paper.yaml"))
        jobs = int(re.search(r"^total\s+(\d+)", p.stdout + p.stderr, re.M).group(1))
        paper = median_wall(lambda: snakemake(work, "-n", "--configfile",
                                           str(ROOT / "config/study-paper.yaml")))
        mini = Path(tmp) / "mini"
        mini.mkdir()
        (mini / "Snakefile").write_text(MINIMAL.format(n=jobs - 1))

        def minimal() -> None:
            subprocess.run([sys.executable, "-m", "snakemake", "-s", str(mini / "Snakefile"),
                            "--directory", str(mini), "-n"], capture_output=True, check=True)

        base = median_wall(minimal)
    print(f"{jobs} jobs: paper study dry run {paper:.2f} s, minimal Snakefile {base:.2f} s")
    print(f"dry-run ratio (paper / minimal): {paper / base:.2f}")


if __name__ == "__main__":
    main()
