"""Shared by the benchmarks: run Snakemake on this checkout, and a stand-in study."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ holds the gateway stand-in

KEY = "sk-or-v1-bench-standin"


def cli(doc: str | None) -> argparse.ArgumentParser:
    """Each bench's command line: `--help` prints what it measures (its docstring)."""
    return argparse.ArgumentParser(description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def snakemake(workdir: Path, *args: str, env: dict | None = None
              ) -> tuple[float, subprocess.CompletedProcess]:
    """(wall seconds, the process) of one Snakemake invocation on this checkout."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
           str(workdir), *args]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"snakemake failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return wall, p


def standin_study(workdir: Path, base_url: str, arms: list[str], repeats: int) -> Path:
    """A one-model gateway study against the stand-in; returns its config file."""
    cfg = {"study": "bench", "scale": 0.01, "recall_max_tokens": 32,
           "models": {"gw": {"backend": "openrouter", "model_id": "acme/bench",
                             "base_url": base_url, "api_key_env": "BENCH_KEY",
                             "timeout_s": 30, "max_attempts": 1}},
           "sweeps": {"s": {"scenario": "distributed", "seed": 3, "models": ["gw"],
                            "arms": arms, "repeats": repeats}}}
    path = workdir / "bench.yaml"
    workdir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg))
    return path


def median_wall(fn: Callable[[], object], runs: int = 3, warm: bool = False) -> float:
    """The median wall seconds of `runs` calls (after one untimed call if warm)."""
    if warm:
        fn()
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def paired_walls(a: Callable[[], object], b: Callable[[], object], runs: int = 5
                 ) -> tuple[float, float, float]:
    """(median wall of a, of b, median of the pairwise ratios a/b) over `runs` pairs run
    in turn, a b a b ..., after one untimed pair: pairing keeps the ratio meaningful while
    a shared machine's speed drifts."""
    a(), b()
    walls_a, walls_b = [], []
    for _ in range(runs):
        for fn, walls in ((a, walls_a), (b, walls_b)):
            t0 = time.perf_counter()
            fn()
            walls.append(time.perf_counter() - t0)
    ratios = [x / y for x, y in zip(walls_a, walls_b, strict=True)]
    return statistics.median(walls_a), statistics.median(walls_b), statistics.median(ratios)


@contextmanager
def standin_gateway() -> Iterator[object]:
    """The loopback gateway stand-in with one model whose endpoint takes every parameter."""
    from tests.support.gateway_standin import Endpoint, GatewayStandin, Model

    full = ("max_tokens", "temperature", "seed", "response_format", "structured_outputs",
            "reasoning")
    with GatewayStandin([Model("acme/bench", [Endpoint("B", "b", supported_parameters=full)])],
                        key=KEY) as gw:
        yield gw
