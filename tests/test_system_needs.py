"""Where the test command could not install Chromium, graphviz or SLURM (no root,
no apt-get), pytest says so once, before the run, naming the tests that will skip."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import ROOT
from .support import system

BROWSER = "tests/report/test_viewer.py::test_the_viewer_in_chromium_shows_a_planted_script_as_text"
GRAPHVIZ = "tests/test_docs.py::test_the_rulegraph_rule_draws_the_picture"
UNMARKED = "tests/test_docs.py::test_the_pages_show_commands_and_every_one_is_checked"


def pytest_on_a_bare_machine(*tests: str, **env: str) -> subprocess.CompletedProcess[str]:
    """These tests run by pytest where PATH finds neither chromium, dot nor SLURM, on one
    xdist worker (the notice is the controller's, said before any worker runs; three
    would start two more interpreters for three tests)."""
    bare = {k: v for k, v in os.environ.items() if k != "CI"} | {"PATH": "/nonexistent", **env}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs",
                           "-n", "1", *tests], cwd=ROOT, env=bare, capture_output=True, text=True,
                          timeout=300)


def test_the_notice_comes_once_before_the_run_naming_each_test_that_skips():
    p = pytest_on_a_bare_machine(BROWSER, GRAPHVIZ, UNMARKED)
    out = p.stdout
    assert p.returncode == 0, out[-3000:] + p.stderr[-3000:]
    assert out.count("These tests will skip") == 1, out
    notice = out[out.index("These tests will skip"):out.index("slowest")]
    assert "./setup.sh --tests" in notice
    assert "Chromium (chromium is not installed): 1 tests" in notice and BROWSER in notice
    assert "graphviz (graphviz's dot is not installed): 1 tests" in notice and GRAPHVIZ in notice
    assert UNMARKED not in notice  # it needs nothing and runs
    assert "1 passed, 2 skipped" in out
    # before the run: above the line where xdist's workers report what they collected
    assert out.index("These tests will skip") < out.index("worker [3 items]")


def test_under_ci_the_same_tests_fail_and_the_notice_says_so():
    p = pytest_on_a_bare_machine(BROWSER, CI="true")
    assert p.returncode != 0
    assert "These tests will fail (CI=true)" in p.stdout
    assert "Chromium: chromium is not installed" in p.stdout and "1 error" in p.stdout


def test_no_notice_when_nothing_is_missing(monkeypatch):
    here = system.SystemNeed("browser", "Chromium", lambda: [])
    monkeypatch.setattr(system, "NEEDS", {"browser": here})

    class Item:
        nodeid = BROWSER

        def get_closest_marker(self, name: str) -> object:
            return name == "browser" or None

    assert system.skip_notice([Item()]) == []
