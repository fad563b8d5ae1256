"""Loaded by every Python process that bench/suite_tokens.py starts (it puts this folder
first on PYTHONPATH): once llama_cpp.llama is imported, Llama.create_completion appends
one line per call to the file FOLDSTUDY_TOKEN_LOG names: prompt and completion tokens,
whether a grammar constrained the reply, and the test whose work it was. Nothing else is
imported at start-up, so a process that never loads the model pays only this module's own
import."""

from __future__ import annotations

import importlib.abc
import json
import os
import sys

TARGET = "llama_cpp.llama"


def _patch(module) -> None:
    original = module.Llama.create_completion

    def create_completion(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        usage = out.get("usage", {}) if isinstance(out, dict) else {}
        line = {"prompt": int(usage.get("prompt_tokens", 0)),
                "completion": int(usage.get("completion_tokens", 0)),
                "grammar": kwargs.get("grammar") is not None,
                "pid": os.getpid(),
                # pytest sets this in its worker and every process a test starts inherits it:
                # the test (or the fixture's first test) the call's work belongs to
                "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]}
        with open(os.environ["FOLDSTUDY_TOKEN_LOG"], "a") as f:
            f.write(json.dumps(line) + "\n")
        return out

    module.Llama.create_completion = create_completion


class _Finder(importlib.abc.MetaPathFinder):
    """Patches llama_cpp.llama right after its own code has run."""

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


if os.environ.get("FOLDSTUDY_TOKEN_LOG"):
    sys.meta_path.insert(0, _Finder())
