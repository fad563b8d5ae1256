from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .support import system
from .support.procs import snakemake
from .support.slurm_cluster import SlurmCluster
from .support.system import require

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"
TINY_CONFIG = ROOT / ".test/config.yaml"


def pytest_report_collectionfinish(config, start_path, items) -> list[str]:
    """Say once, before the run, which tests will skip for want of Chromium,
    graphviz or SLURM, and why (in one process: -n0; under xdist, the header says it)."""
    return system.skip_notice(items)


def pytest_report_header(config, start_path) -> list[str]:
    """The same notice under pytest-xdist, whose controller collects nothing itself."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return system.skip_notice_before_workers(config.args)
    return []


# Three workers (pytest-xdist, `--dist loadgroup`, pyproject's addopts). A session fixture
# is built once per worker, so the tests that read one of the builds below share a group,
# and one worker builds it. The tiny study is the exception: it is built once for all the
# workers (tiny_study), since its build and the replays through SLURM after it are the
# suite's longest chain; the cluster tests that replay it are its builder's group, and the
# other tests that read it come last, by when the build is done, each to whichever worker
# is free (they only read it, so any worker may: on one worker they were the run's last
# 26 s, the other two done). Every other file is a group of its own (its module fixtures
# built once; test_model's rows are made once and reread), but for SPREAD, whose tests
# each go to whichever worker is free. The groups that take longest come first, one on
# each worker, and the rest follow; the cluster test that needs no tiny study is among
# them, on another worker while the build goes on (SLURM is one per machine:
# tests/support/slurm_cluster.py holds a lock from a cluster's start to its stop).
SHARED_BUILDS = {"tiny_study": "tiny", "evidence_build": "evidence"}
FIRST = ("tiny", "test_cluster_budget.py", "test_model.py", "evidence",
         "test_sessions_workflow.py")
LAST = ("tiny-readers",)
SPREAD: set[str] = set()
SPREAD_GROUPS = {"tiny-readers"}  # ordered as one group, run as single tests


def xdist_group(item: pytest.Item) -> str | None:
    """The group an item runs in (None: spread over the workers)."""
    if "tiny_study" in item.fixturenames and not item.get_closest_marker("cluster"):
        return "tiny-readers"
    for fixture, group in SHARED_BUILDS.items():
        if fixture in item.fixturenames:
            return group
    return None if item.path.name in SPREAD else item.path.name


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if (group := xdist_group(item)) and group not in SPREAD_GROUPS:
            item.add_marker(pytest.mark.xdist_group(group))
    rank = {g: i for i, g in enumerate(FIRST)} | {g: len(FIRST) + 1 + i
                                                   for i, g in enumerate(LAST)}
    items.sort(key=lambda item: rank.get(xdist_group(item), len(FIRST)))


def pytest_runtest_setup(item) -> None:
    """A test marked browser, graphviz or cluster skips (fails under CI=true) before its
    fixtures run when the machine lacks what the marker needs."""
    for marker in system.NEEDS:
        if item.get_closest_marker(marker):
            system.require(marker)


@pytest.fixture(scope="session", autouse=True)
def session_cache_key(tmp_path_factory) -> Path:
    """The caches' signing key (io.cache_signing_key) for the whole run, every
    worker and every Snakemake the tests start: beside the run's temporary directories,
    never the user's own cache home, and one file, so a build one worker made is read by
    another as the cache's own."""
    from foldstudy.io import CACHE_KEY_FILE_ENV

    key = tmp_path_factory.getbasetemp().parent / "foldstudy-session-cache.key"
    os.environ[CACHE_KEY_FILE_ENV] = str(key)
    return key


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory, request) -> Path:
    """One real run of the tiny study (.test/config.yaml) on the embedded model, once per
    session and shared by every worker: the workflow tests read it, the cluster tests
    replay its response store. The first worker to ask builds it under a lock in the
    session's own temporary root (pytest-xdist's workers share its parent); the others
    wait, then read the same directory. Readers never write there: a test that changes
    something works on a copy (tiny_copy)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if hasattr(request.config, "workerinput") else base
    workdir, built, failed = (root / f"tiny-study{x}" for x in ("", ".built", ".failed"))
    with open(root / "tiny-study.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if failed.exists():
            pytest.fail(f"the tiny study failed on another worker:\n{failed.read_text()}")
        if not built.exists():
            workdir.mkdir(exist_ok=True)
            # its jobs start afresh, as outside the tests (procs.py: the one build where
            # every job script imports what it needs itself)
            p = snakemake(workdir, "-c2", "results/tables", "--configfile", str(TINY_CONFIG),
                          env={**os.environ, "FOLDSTUDY_FRESH_JOBS": "1"})
            if p.returncode != 0:
                failed.write_text(p.stdout[-3000:] + p.stderr[-3000:])
                pytest.fail(failed.read_text())
            built.touch()
    return workdir


@pytest.fixture
def tiny_copy(tiny_study) -> Iterator[Path]:
    """A copy of the tiny study that a test may change (its lock, a tampered artifact,
    a release), times kept and beside the original, so Snakemake finds it as complete:
    its records name each input by its path relative to the work directory."""
    work = tiny_study.with_name(f"{tiny_study.name}-copy-{uuid.uuid4().hex[:8]}")
    shutil.copytree(tiny_study, work, symlinks=True)
    yield work
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def evidence_build(tmp_path_factory) -> Path:
    """A reviewer's package (240 synthetic rows of 8 models, their checks and fact trace)
    rebuilt in evidence mode, then its report, once per session: the work directory, the
    package in its `package/`. Tests read it; one that changes something works on a copy.
    The paper's size (620 rows, 15 models) is test_tables', test_figures' and
    test_numbers' in process; here it took 33.6 s of CPU against 20.5 s at 240 rows."""
    from .support.synthetic import traced_package_dir

    work = tmp_path_factory.mktemp("evidence")
    package = traced_package_dir(work / "package", 240, seed=9)
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
def fold_prompts(resources):
    """The turn templates every arm's fold and recall turn share (run/fold.py Prompts)."""
    from foldstudy.run.fold import Prompts

    d = resources / "prompts"
    return Prompts.from_files(d / "fold_user.md.j2", d / "recall_system.md",
                              d / "recall_user.md.j2")


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
            # a session at another scale is another size: an arm whose recall turn reads
            # it whole (the default study's ceiling) is held to the config's context only
            # at the config's own scale
            for sw in cfg["sweeps"].values():
                sw["arms"] = [a for a in sw["arms"] if a != "uncompacted"]
        return load_study(cfg, config_schema, load_arm_table(resources), resources).arms

    return arms


@pytest.fixture(scope="session")
def arms(study_arms) -> dict:
    """The default study's arms at paper scale (capacities as the paper declared them)."""
    return study_arms("config.yaml", 1.0)


# The SLURM cluster of the cluster tests (tests/workflow/test_cluster*.py), one per module.
@pytest.fixture(scope="session")
def slurm_available() -> None:
    """Skip (fail under CI=true) when SLURM cannot run here (tests/support/system.py; the
    cluster marker already did, before any fixture: this names it for the tests)."""
    require("cluster")


@pytest.fixture(scope="module")
def cluster(slurm_available):
    c = SlurmCluster()
    try:
        c.start()
        yield c
    finally:
        c.stop()
