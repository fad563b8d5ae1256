from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from .support import system
from .support.procs import snakemake

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"
TINY_CONFIG = ROOT / ".test/config.yaml"


def pytest_report_collectionfinish(config, start_path, items) -> list[str]:
    """Issue 34: say once, before the run, which tests will skip for want of Chromium,
    graphviz or SLURM, and why."""
    return system.skip_notice(items)


def pytest_runtest_setup(item) -> None:
    """A test marked browser, graphviz or cluster skips (fails under CI=true) before its
    fixtures run when the machine lacks what the marker needs."""
    for marker in system.NEEDS:
        if item.get_closest_marker(marker):
            system.require(marker)


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory) -> Path:
    """One real run of the tiny study (.test/config.yaml) on the embedded model, once per
    session: the workflow tests read it, the cluster test replays its response store."""
    workdir = tmp_path_factory.mktemp("tiny")
    p = snakemake(workdir, "-c2", "results/tables", "--configfile", str(TINY_CONFIG))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return workdir


@pytest.fixture(scope="session")
def evidence_build(tmp_path_factory) -> Path:
    """A reviewer's package (620 synthetic rows, their checks and fact trace) rebuilt in
    evidence mode, then its report, once per session: the work directory, the package
    in its `package/`. Tests read it; one that changes something works on a copy."""
    from .support.synthetic import traced_package_dir

    work = tmp_path_factory.mktemp("evidence")
    package = traced_package_dir(work / "package", 620, seed=9)
    p = snakemake(work, "-c2", "results/tables", "--config", f"evidence={package}")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    p = snakemake(work, "--report", "results/report.html", "--config", f"evidence={package}",
                  "--", "results/tables")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return work


@pytest.fixture(scope="session")
def resources() -> Path:
    return RESOURCES


@pytest.fixture(scope="session")
def facts_spec() -> dict:
    return yaml.safe_load((RESOURCES / "facts.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def filler() -> dict:
    return yaml.safe_load((RESOURCES / "scenario" / "filler.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def grading() -> dict:
    return yaml.safe_load((RESOURCES / "grading.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def config_schema() -> dict:
    return yaml.safe_load((ROOT / "config/schema/config.schema.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def study_arms(config_schema, resources):
    """The arms a study config resolves, by config file and scale (None: the file's own)."""
    from foldstudy.study.config import load_study
    from foldstudy.study.spec import load_arm_table

    def arms(config: str = "config.yaml", scale: float | None = None) -> dict:
        cfg = yaml.safe_load((ROOT / "config" / config).read_text(encoding="utf-8"))
        if scale is not None:
            cfg["scale"] = scale
        return load_study(cfg, config_schema, load_arm_table(resources), resources).arms

    return arms


@pytest.fixture(scope="session")
def arms(study_arms) -> dict:
    """The default study's arms at paper scale (capacities as the paper declared them)."""
    return study_arms("config.yaml", 1.0)
