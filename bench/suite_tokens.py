"""The model work of a test run, counted in tokens, whatever the machine.

    .venv/bin/python bench/suite_tokens.py [--checkout DIR] [-- PYTEST ARGS]

Runs the README's test command (`.venv/bin/python -m pytest`, with any PYTEST ARGS) in
DIR (default: this checkout, which must have its .venv) with bench/tokenlog/ first on
PYTHONPATH: every process the run starts, pytest's workers, Snakemake's jobs and a
llama-cpp server alike, then logs each call of the embedded model (Llama.create_completion)
as it returns. Prints the tests that cost most tokens (a shared build counts under the test
whose setup built it), then the calls, prompt and completion tokens, those decoded under a
grammar (the JSON-schema arms) apart, the tokens a test reads through Llama.eval itself
(outside any completion) apart, and the run's exit code. A call answered from the
response store never reaches the model and is not counted.

Seconds depend on the machine (up to about three times across this project's machines);
tokens do not, so two commits' model work compares by this count, each run once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, cli

TOKENLOG = ROOT / "bench" / "tokenlog"


def count(log: Path) -> dict[str, int]:
    """Calls and tokens of a log that tokenlog/sitecustomize.py wrote."""
    out = {"calls": 0, "prompt": 0, "completion": 0, "grammar_calls": 0,
           "grammar_prompt": 0, "grammar_completion": 0, "evals": 0, "eval_tokens": 0}
    for line in log.read_text().splitlines() if log.exists() else []:
        call = json.loads(line)
        if call.get("eval"):
            out["evals"] += 1
            out["eval_tokens"] += call["prompt"]
            continue
        out["calls"] += 1
        out["prompt"] += call["prompt"]
        out["completion"] += call["completion"]
        if call["grammar"]:
            out["grammar_calls"] += 1
            out["grammar_prompt"] += call["prompt"]
            out["grammar_completion"] += call["completion"]
    return out


def by_test(log: Path, top: int = 15) -> list[tuple[str, int, int]]:
    """The tests whose model work was largest: (test, calls, tokens), most tokens first."""
    calls: dict[str, list[int]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        call = json.loads(line)
        c = calls.setdefault(call.get("test") or "(no test)", [0, 0])
        c[0] += 1
        c[1] += call["prompt"] + call["completion"]
    return sorted(((t, n, k) for t, (n, k) in calls.items()), key=lambda x: -x[2])[:top]


def main(checkout: Path, pytest_args: list[str]) -> None:
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        sys.exit(f"{checkout}: no .venv (run ./setup.sh --tests there first)")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "calls.jsonl"
        env = {**os.environ, "FOLDSTUDY_TOKEN_LOG": str(log),
               "PYTHONPATH": os.pathsep.join(
                   p for p in (str(TOKENLOG), os.environ.get("PYTHONPATH", "")) if p)}
        p = subprocess.run([str(python), "-m", "pytest", *pytest_args], cwd=checkout,
                           env=env)
        c = count(log)
        tests = by_test(log)
    print("tokens  calls  test")
    for test, n, k in tests:
        print(f"{k:6,}  {n:5}  {test}")
    print(f"checkout {checkout}, pytest exit {p.returncode}")
    print(f"grammar-constrained: {c['grammar_calls']} calls, {c['grammar_prompt']:,} prompt "
          f"+ {c['grammar_completion']:,} completion tokens")
    print(f"read outside a completion (a test's own Llama.eval): {c['evals']} evals, "
          f"{c['eval_tokens']:,} tokens")
    print(f"model work: {c['calls']} calls, {c['prompt']:,} prompt + {c['completion']:,} "
          f"completion tokens; with the evals "
          f"{c['prompt'] + c['completion'] + c['eval_tokens']:,} tokens")


if __name__ == "__main__":
    parser = cli(__doc__)
    parser.add_argument("--checkout", type=Path, default=ROOT,
                        help="the checkout whose test suite runs (default: this one)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    main(args.checkout.resolve(), args.pytest_args)
