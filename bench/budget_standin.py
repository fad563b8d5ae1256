"""The budget under load: a study through the gateway stand-in billing k x its listing
and reporting m x the estimated prompt tokens, at -c4, under a budget of a fraction of
the study's measured cost (the hard case: k = 5, m = 3, a third).

    .venv/bin/python bench/budget_standin.py [--k 5] [--m 3] [--share 0.333] [--repeats 4]

Prints the study's cost, the budget, what the stand-in billed under it (and its ratio to
the budget: at most 1 is the guarantee), the calls made, the first-call overruns the
ledger named, and how many of the budget's dollars were left unused.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from common import KEY, ROOT, cli

sys.path.insert(0, str(ROOT))
from tests.support.gateway_study import (  # noqa: E402
    GatewayStudy,
    budget_config,
    budget_standin,
)

TARGET = "results/evidence/rows.csv"


def main() -> None:
    ap = cli(__doc__)
    ap.add_argument("--k", type=float, default=5.0)
    ap.add_argument("--m", type=float, default=3.0)
    ap.add_argument("--share", type=float, default=1 / 3)
    ap.add_argument("--repeats", type=int, default=4)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, budget_standin(KEY, a.k, a.m) as gw:
        full = Path(tmp, "full")
        full.mkdir()
        GatewayStudy(full, budget_config(gw.base_url, repeats=a.repeats), KEY).snakemake(
            TARGET, cores=4)
        cost, calls = sum(gw.state.billed_usd), len(gw.state.billed_usd)
        budget = cost * a.share
        gw.state.billed_usd.clear()
        work = Path(tmp, "budget")
        work.mkdir()
        GatewayStudy(work, budget_config(gw.base_url, budget, a.repeats), KEY).snakemake(
            "--keep-going", TARGET, cores=4)
        billed = sum(gw.state.billed_usd)
        ledger = json.loads((work / "results/spend/ledger.json").read_text())
        print(f"k={a.k:g} m={a.m:g}: study ${cost:.6f} over {calls} calls; budget "
              f"${budget:.6f} ({a.share:.3f} of it)")
        print(f"billed ${billed:.6f} over {len(gw.state.billed_usd)} calls = "
              f"{billed / budget:.3f} x the budget; ledger ${ledger['spent_usd']:.6f}, "
              f"{len(ledger['reserved'])} held, {len(ledger['overruns'])} overrun(s) "
              f"({sum(o['first_call'] for o in ledger['overruns'])} first calls); unused "
              f"${budget - billed:.6f}")


if __name__ == "__main__":
    main()
