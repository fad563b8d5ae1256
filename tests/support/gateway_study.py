"""A study driven through the real workflow against the gateway stand-in.

The workflow tests on the stand-in (test_retry, test_faults) do the same three things:
build gateway model configs that read the key from the environment, write the study
config into the test's directory, and run real `snakemake` subprocesses there with the
key set. Written once here so that each test says only what it is about.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from .procs import ROOT, snakemake

__all__ = ["ROOT", "KEY_ENV", "GatewayStudy", "gateway_model"]
KEY_ENV = "FOLDSTUDY_TEST_KEY"


def gateway_model(model_id: str, base_url: str, **policy: Any) -> dict[str, Any]:
    """One `models:` entry on the stand-in: its key from KEY_ENV, never from the file.

    policy: timeout_s, max_attempts, retry_initial_wait_s, retry_max_wait_s, ...
    """
    return {"backend": "openrouter", "api_key_env": KEY_ENV, "model_id": model_id,
            "base_url": base_url, **policy}


class GatewayStudy:
    """One study config in `workdir`, run with `snakemake(...)` as often as a test needs."""

    def __init__(self, workdir: Path, config: dict[str, Any], key: str) -> None:
        self.workdir = workdir
        self.configfile = workdir / "c.yaml"
        self.configfile.write_text(json.dumps(config))
        self.env = {**os.environ, KEY_ENV: key}

    def snakemake(self, *args: str, cores: int = 1) -> subprocess.CompletedProcess[str]:
        """One real snakemake run in workdir: targets and flags in args."""
        return snakemake(self.workdir, "--configfile", str(self.configfile), f"-c{cores}",
                         *args, timeout=600, env=self.env)


def budget_config(base_url: str, budget: float | None = None, repeats: int = 2
                  ) -> dict[str, Any]:
    """The budget tests' study (test_budget_workflow, test_cluster): one gateway model,
    arms j and m, `repeats` blocks, budget_usd where given."""
    cfg = {"study": "budget", "scale": 0.01, "temperature": 0.2, "recall_max_tokens": 64,
           "models": {"dear": gateway_model("acme/dear", base_url, timeout_s=10,
                                            max_attempts=2, retry_initial_wait_s=0.05)},
           "sweeps": {"s": {"scenario": "distributed", "seed": 3, "arms": ["j", "m"],
                            "models": ["dear"], "repeats": repeats}}}
    return cfg if budget is None else {**cfg, "budget_usd": budget}


def budget_standin(key: str, cost_factor: float = 1.5, prompt_factor: float = 1.0) -> Any:
    """The stand-in the budget tests bill through: one endpoint billing `cost_factor`
    times its listing and reporting `prompt_factor` times the estimated prompt tokens."""
    from .gateway_standin import ALL_PARAMETERS, Endpoint, GatewayStandin, Model

    return GatewayStandin([Model("acme/dear", [Endpoint(
        "Dear", "dear", "fp8", supported_parameters=ALL_PARAMETERS, price_prompt="2e-6",
        price_completion="8e-6", cost_factor=cost_factor, prompt_factor=prompt_factor)])],
        key=key)
