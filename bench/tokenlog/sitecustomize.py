"""Loaded by every Python process that bench/suite_tokens.py starts (it puts this folder
first on PYTHONPATH): once llama_cpp.llama is imported, Llama.create_completion appends
one line per call to the file FOLDSTUDY_TOKEN_LOG names: prompt and completion tokens,
whether a grammar constrained the reply, and the test whose work it was. So does each
Llama.eval a caller makes itself, outside a completion (a test reading a prompt to compare
the model's state): the tokens it read, as `"eval": true`. Nothing else is imported at
start-up, so a process that never loads the model pays only this module's own import."""

from __future__ import annotations

import importlib.abc
import json
import os
import sys
import threading

TARGET = "llama_cpp.llama"


def _log(line: dict) -> None:
    # pytest sets this in its worker and every process a test starts inherits it: the
    # test (or the fixture's first test) the call's work belongs to
    line |= {"pid": os.getpid(),
             "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]}
    with open(os.environ["FOLDSTUDY_TOKEN_LOG"], "a") as f:
        f.write(json.dumps(line) + "\n")


_inside = threading.local()  # in a completion, whose own reading its usage counts


def _patch(module) -> None:
    original = module.Llama.create_completion
    original_eval = module.Llama.eval

    def create_completion(self, *args, **kwargs):
        depth = getattr(_inside, "depth", 0)
        _inside.depth = depth + 1
        try:
            out = original(self, *args, **kwargs)
        finally:
            _inside.depth = depth
        usage = out.get("usage", {}) if isinstance(out, dict) else {}
        _log({"prompt": int(usage.get("prompt_tokens", 0)),
              "completion": int(usage.get("completion_tokens", 0)),
              "grammar": kwargs.get("grammar") is not None})
        return out

    def eval(self, tokens):
        if getattr(_inside, "depth", 0):
            return original_eval(self, tokens)
        _inside.depth = 1  # the outermost eval counts what it read, once
        try:
            return original_eval(self, tokens)
        finally:
            _inside.depth = 0
            _log({"prompt": len(tokens), "completion": 0, "grammar": False, "eval": True})

    module.Llama.create_completion = create_completion
    module.Llama.eval = eval


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
