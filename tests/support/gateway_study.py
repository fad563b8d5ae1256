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
