"""A refusal is one line, never a traceback.

Every error the package raises on purpose subclasses StudyError; a job (io.logged, the
one wrapper every workflow/scripts entry point runs in) prints such an error as one
line, to its log and to stderr, and exits 1. Only an unexpected exception prints a
traceback, and only once. Checked with real Snakemake: each named error class, raised
inside a job, leaves no "Traceback" in Snakemake's output.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import logging
import pkgutil
import sys
from pathlib import Path

import pytest

import foldstudy
from foldstudy.errors import StudyError
from foldstudy.io import JOB_FAILED, logged

from .conftest import ROOT
from .support.procs import run_group

MESSAGE = "results/x/y.json, key k: 'bad' is not allowed here (allowed: good)"


def study_error_classes() -> dict[str, type]:
    """Every StudyError subclass the package defines, found by importing every module (a
    class added later is covered without editing this test), by qualified name."""
    for m in pkgutil.walk_packages(foldstudy.__path__, "foldstudy."):
        importlib.import_module(m.name)
    found, todo = {}, [StudyError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("foldstudy."):
                found[f"{sub.__module__}:{sub.__qualname__}"] = sub
            todo.append(sub)
    return found


def make(cls: type) -> BaseException:
    """An instance of cls carrying MESSAGE, whatever its constructor's shape."""
    special = {"problems": [MESSAGE], "kind": "transport", "retryable": False}
    args = [special.get(name, MESSAGE) for name, p in
            list(inspect.signature(cls.__init__).parameters.items())[1:]
            if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
    return cls(*args) if args else cls(MESSAGE)


def test_every_named_error_is_a_study_error_and_keeps_its_builtin_base():
    classes = study_error_classes()
    names = {c.__name__ for c in classes.values()}
    # the list, each found as a StudyError
    for name in ("StoreUnpinned", "StoreCorrupt", "VerifyFailed", "ReleaseRefused",
                 "DuplicateKey", "OtherStudy", "NothingRan", "RowIdCollision", "ModelUnusable",
                 "ScopeError", "SpecError", "RunRecordError", "ConfigError", "EvidenceError",
                 "BackendError", "ReplayMiss"):
        assert name in names, name
    from foldstudy.evidence.load import EvidenceError
    from foldstudy.release.lock import VerifyFailed
    assert issubclass(EvidenceError, ValueError) and issubclass(VerifyFailed, RuntimeError)


def test_no_error_class_of_the_package_stands_outside_study_error():
    """A class named *Error, *Refused, ... defined in the package is a StudyError (or a
    bug class on purpose: none today)."""
    for m in pkgutil.walk_packages(foldstudy.__path__, "foldstudy."):
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == mod.__name__):
                assert issubclass(obj, StudyError), f"{mod.__name__}.{name}"


def test_every_script_runs_inside_logged():
    for script in sorted((ROOT / "workflow/scripts").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        assert "with logged(sm.log[0]):" in text, script.name


def test_logged_prints_a_refusal_as_one_line_and_exits_1(tmp_path, capsys):
    from foldstudy.evidence.load import EvidenceError

    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as e, logged(str(log)):
        raise EvidenceError(MESSAGE)
    assert e.value.code == 1
    err = capsys.readouterr().err
    for text in (err, log.read_text()):
        lines = [x for x in text.splitlines() if x.strip()]
        assert len(lines) == 1 and "Traceback" not in text, text
        assert f"{JOB_FAILED}EvidenceError: {MESSAGE}" in lines[0]
    logging.getLogger().handlers.clear()


def test_logged_names_a_full_disk_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit), logged(str(tmp_path / "job.log")):
        raise OSError(errno.ENOSPC, "No space left on device", "results/figures/f.png")
    err = capsys.readouterr().err
    assert "Traceback" not in err and "DiskFull: no space left writing results/figures/f.png" \
        in err, err
    logging.getLogger().handlers.clear()


def test_logged_prints_a_bug_with_one_traceback(tmp_path, capsys):
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit), logged(str(log)):
        raise ZeroDivisionError("a bug")
    err = capsys.readouterr().err
    assert err.count("Traceback") == 1 and log.read_text().count("Traceback") == 1, err
    logging.getLogger().handlers.clear()


SNAKEFILE = '''
CLASSES = {classes!r}


rule all:
    input:
        expand("out/{{c}}", c=CLASSES),


rule refuse:
    output:
        "out/{{c}}",
    log:
        "logs/{{c}}.log",
    params:
        where=lambda wildcards: CLASSES[wildcards.c],
    script:
        "raise_one.py"
'''

SCRIPT = '''
import importlib
import inspect

from foldstudy.io import logged

sm = snakemake  # noqa: F821
module, _, name = sm.params.where.partition(":")
helpers = importlib.import_module("test_refusals_make")
with logged(sm.log[0]):
    if sm.params.where == "bug":
        1 / 0
    cls = getattr(importlib.import_module(module), name)
    raise helpers.make(cls)
'''


@pytest.mark.workflow
def test_each_named_error_raised_in_a_job_prints_no_traceback(tmp_path):
    classes = study_error_classes()
    wanted = {cls.__name__: where for where, cls in classes.items()}
    wanted["bug"] = "bug"
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(classes=wanted))
    (tmp_path / "raise_one.py").write_text(SCRIPT)
    helper = inspect.getsource(make)
    (tmp_path / "test_refusals_make.py").write_text(
        "import inspect\n\nMESSAGE = " + repr(MESSAGE) + "\n\n\n" + helper)
    env_path = f"{ROOT / 'workflow'}:{tmp_path}"
    p = run_group(
        [sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"), "-d",
         str(tmp_path), "-c1", "-k", "--nocolor"],
        timeout=600, cwd=tmp_path, env={**_env(), "PYTHONPATH": env_path})
    out = p.stdout + p.stderr
    assert p.returncode != 0
    # the one unexpected exception prints its traceback once; no refusal prints any
    assert out.count("Traceback") == 1, out[-4000:]
    assert "ZeroDivisionError" in out
    for name in wanted:
        if name == "bug":
            continue
        log = (tmp_path / "logs" / f"{name}.log").read_text()
        lines = [x for x in log.splitlines() if x.strip()]
        assert len(lines) == 1 and f"{JOB_FAILED}{name}: " in lines[0], (name, log)
        assert f"{name}: " in out, name
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_study_error_is_imported_by_no_higher_layer_than_its_own():
    """errors.py sits below every stage (tests/test_layout.py's first layer)."""
    text = (Path(foldstudy.__file__).parent / "errors.py").read_text(encoding="utf-8")
    assert "import" not in text.replace("from __future__ import annotations", "")
