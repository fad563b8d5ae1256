"""Evidence input mode: a package's rows/checks rebuild every output, no run job in the DAG."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from foldstudy.report.titles import drawn_by, table_titles

from ..conftest import ROOT
from ..support import procs

TABLE_TITLES = table_titles(ROOT / "resources/analysis.yaml")

pytestmark = pytest.mark.workflow


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return procs.snakemake(workdir, *args, timeout=600)


@pytest.fixture(scope="module")
def package(evidence_build) -> Path:
    """The session's reviewer package (conftest.evidence_build): rows, checks, trace."""
    return evidence_build / "package"


def test_the_plan_holds_no_run_job(tmp_path, package):
    p = snakemake(tmp_path, "results/tables", "-n", "--quiet", "rules", "--config",
                  f"evidence={package}")
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    counts = {line.split()[0]: line.split()[1] for line in out.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    assert set(counts) - {"total"} == {"stats", "figures", "trace", "decision", "decision_page",
                                       "summary", "tables"}


def test_a_package_rebuilds_every_table_figure_and_number(evidence_build):
    res = evidence_build / "results"
    numbers = json.loads((res / "stats/numbers.json").read_text())
    # The default config names no scope: each of the package's sweeps on its own.
    assert {"icc.value[anchor]", "headings.r[anchor]", "fill.r[anchor]"} <= set(numbers)
    assert "icc.value" not in numbers
    assert (res / "stats/numbers.tex").read_text().count("\\newcommand") == len(numbers)
    for name in TABLE_TITLES:
        for ext in ("md", "tex", "csv"):
            assert (res / f"tables/{name}.{ext}").is_file()
    for name in (f.name for f in drawn_by()):
        for ext in ("png", "svg"):
            assert (res / f"figures/{name}.{ext}").stat().st_size > 1000
    assert not (res / "runs").exists() and not (res / "fixtures").exists()
    # The report shows every table and figure with its caption.
    html = (res / "report.html").read_text()
    for name in (f.name for f in drawn_by()):
        assert f"{name}.png" in html
    for name, title in TABLE_TITLES.items():
        assert f'"labels": {{"table": "{name}"}}' in html
        assert f'"caption": "<p><strong>{json.dumps(title)[1:-1]}</strong>' in html, title


def test_a_malformed_package_fails_naming_the_column(tmp_path, package):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "checks.csv").write_text((package / "checks.csv").read_text())
    lines = (package / "rows.csv").read_text().splitlines()
    header = lines[0].split(",")
    drop = header.index("headings_carried")
    (bad / "rows.csv").write_text("\n".join(
        ",".join(c for i, c in enumerate(line.split(",")) if i != drop) for line in lines))
    work = tmp_path / "work"
    work.mkdir()
    p = snakemake(work, "-c1", "results/tables", "--config", f"evidence={bad}")
    assert p.returncode != 0
    assert "rows.csv: missing column(s) headings_carried" in p.stdout + p.stderr


def test_evidence_of_another_study_is_refused_naming_both(tmp_path, package):
    """One study's evidence never feeds another study's tables, even where
    .snakemake metadata is missing and Snakemake would plan only the tables."""
    import yaml

    from foldstudy.evidence.provenance import build_manifest

    made_by = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for name in ("rows.csv", "checks.csv"):
        (pkg / name).write_bytes((package / name).read_bytes())
    manifest = build_manifest({n: pkg / n for n in ("rows.csv", "checks.csv")}, made_by)
    (pkg / "manifest.json").write_text(json.dumps(manifest))
    paper = str(ROOT / "config/study-paper.yaml")
    work = tmp_path / "w"
    work.mkdir()
    p = snakemake(work, "-c1", "results/stats/numbers.json", "--configfile", paper,
                  "--config", f"evidence={pkg}")
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "made by study 'default'" in out and "not by study 'paper'" in out
    assert not (work / "results/stats/numbers.json").exists()
