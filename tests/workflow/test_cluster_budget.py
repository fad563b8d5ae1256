"""The budget under a real SLURM cluster (docs/cluster.md, docs/design.md §6, Spend): fold jobs
submitted through profiles/slurm share one ledger. Its own module, apart from
tests/workflow/test_cluster.py, because it needs no local run of the tiny study: it runs
while that study is still being built on another worker (the cluster lock,
tests/support/slurm_cluster.py, keeps the two modules' clusters one at a time)."""

from __future__ import annotations

import json
import shlex

import pytest

from ..conftest import ROOT
from ..support.gateway_study import KEY_ENV, budget_config, budget_standin
from ..support.procs import run_group
from .test_cluster import COMMAND, POLL, submitted


@pytest.mark.cluster
@pytest.mark.workflow
def test_the_budget_holds_under_slurm_through_the_gateway_standin(slurm_available, cluster,
                                                                   tmp_path):
    """Required: "The ledger was never run under the SLURM profile." Every fold job is an
    sbatch job sharing results/spend/ledger.json through its fcntl lock; the stand-in
    bills 5x its listing and reports 3x the estimated prompt tokens, and a third of the
    study's cost is the budget: the stand-in never bills past it."""
    key = "sk-or-v1-cluster-budget"
    with budget_standin(key, cost_factor=5, prompt_factor=3) as gw:
        full = tmp_path / "full"
        full.mkdir()
        (full / "c.yaml").write_text(json.dumps(budget_config(gw.base_url, repeats=4)))
        env = {**cluster.env, KEY_ENV: key}
        target = "results/evidence/rows.csv"
        p = run_group([".venv/bin/snakemake", "-c2", target, "--directory", str(full),
                       "--configfile", str(full / "c.yaml")], cwd=ROOT, env=env, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        third = sum(gw.state.billed_usd) / 3
        gw.state.billed_usd.clear()
        work = tmp_path / "slurm"
        work.mkdir()
        (work / "c.yaml").write_text(json.dumps(budget_config(gw.base_url, third, repeats=4)))
        argv = [*shlex.split(COMMAND.replace("results/tables", target)), "--keep-going", *POLL,
                "--configfile", str(work / "c.yaml"), "--directory", str(work)]
        p = run_group(argv, cwd=ROOT, env=env, timeout=900)
        out = p.stdout + p.stderr
        assert p.returncode != 0, out[-4000:]  # stopped at the budget
        assert submitted(out), out[-4000:] + cluster.logs()  # ...through sbatch
        assert 0 < sum(gw.state.billed_usd) <= third
        ledger = json.loads((work / "results/spend/ledger.json").read_text())
        assert ledger["spent_usd"] <= third and ledger["reserved"] == {}
        assert ledger["spent_usd"] == pytest.approx(sum(gw.state.billed_usd))
