"""What some tests need from the machine rather than from .venv: Chromium, graphviz's dot
and a single-node SLURM, each behind a pytest marker.

`./setup.sh --tests` installs them on Debian as root (.ci/install-debian,
tests/cluster/install.sh). Where it could not, conftest names the tests that will skip,
once, before the run (`skip_notice`), and skips each through `require` before its
fixtures are set up; under CI=true they fail instead, since a skip there would hide that
the thing was never tested.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from .slurm_cluster import missing_binaries

ROOT = Path(__file__).resolve().parents[2]
INSTALL = "as root on Debian, `./setup.sh --tests` installs what is missing"


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@functools.cache
def _chromium() -> list[str]:
    return [] if chromium_binary() else ["chromium is not installed"]


@functools.cache
def _dot() -> list[str]:
    return [] if shutil.which("dot") else ["graphviz's dot is not installed"]


@functools.cache
def _slurm() -> list[str]:
    problems = []
    if missing := missing_binaries():
        problems.append(f"SLURM binaries not found: {' '.join(missing)}")
    if os.geteuid() != 0:
        problems.append("the single-node cluster's daemons need root")
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        problems.append("snakemake-executor-plugin-slurm is not installed (./setup.sh)")
    if not (ROOT / ".venv/bin/snakemake").exists():
        problems.append("no .venv/bin/snakemake (./setup.sh)")
    return problems


@dataclass(frozen=True)
class SystemNeed:
    """A marker's system requirement, and what stands in its way here (empty: met)."""

    marker: str
    what: str
    problems: Callable[[], list[str]]


NEEDS = {n.marker: n for n in (SystemNeed("browser", "Chromium", _chromium),
                               SystemNeed("graphviz", "graphviz", _dot),
                               SystemNeed("cluster", "SLURM", _slurm))}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(marker: str) -> None:
    """Skip the calling test (fail it under CI=true) unless the machine has what the
    marker needs."""
    need = NEEDS[marker]
    if problems := need.problems():
        reason = f"{need.what}: {'; '.join(problems)} ({INSTALL})"
        if in_ci():
            pytest.fail(f"{reason}; in CI this must run")
        pytest.skip(reason)


def skip_notice(items: Sequence[pytest.Item]) -> list[str]:
    """One notice before the run: per unmet need, why, and every collected test of its
    marker that will therefore skip (or fail, under CI=true). Empty when all is here."""
    return notice({m: [i.nodeid for i in items if i.get_closest_marker(m)] for m in NEEDS})


def skip_notice_before_workers(args: Sequence[str]) -> list[str]:
    """The same notice where pytest-xdist's workers collect and the controller that prints
    has no items: a collection of its own, run only for a need that is unmet (a few
    seconds), of the tests of that marker among args."""
    import subprocess
    import sys

    tests = {}
    for marker, need in NEEDS.items():
        if not need.problems():
            continue
        p = subprocess.run([sys.executable, "-m", "pytest", "-n0", "-p",
                            "no:cacheprovider", "--collect-only", "-q", "-m", marker, *args],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        tests[marker] = list(dict.fromkeys(  # each node id once, in order
            line.strip() for line in p.stdout.splitlines() if "::" in line))
    return notice(tests)


def notice(tests: dict[str, list[str]]) -> list[str]:
    """The notice's lines from the node ids of each marker's tests."""
    lines = []
    for need in NEEDS.values():
        ids = tests.get(need.marker, [])
        if ids and (problems := need.problems()):
            lines.append(f"  {need.what} ({'; '.join(problems)}): {len(ids)} tests")
            lines.extend(f"    {t}" for t in ids)
    if not lines:
        return []
    verb = "fail (CI=true)" if in_ci() else "skip"
    return [f"These tests will {verb}: the machine lacks what they need "
            f"({INSTALL}; without root or apt-get, install it by hand):", *lines]
