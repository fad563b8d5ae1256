"""The A/A control's flip rate: how often an arm is declared different from an exact copy
of itself (config sweeps.X.controls.aa), measured through a real endpoint and simulated.

    nice -n 10 .venv/bin/python bench/aa_flip.py [--sweeps 40] [--repeats 4 12]
        [--simulations 4000] [--embedded 0]
    nice -n 10 .venv/bin/python bench/aa_flip.py --sweeps 0 --embedded 2   # embedded only

Measured: one study on the loopback gateway stand-in with --sweeps sweeps (seeds 1..N),
each running arm m and its copy m~aa for the given repeats, through the whole workflow
(snakemake, -c2) to results/decision.json. The stand-in's model
(tests/support/reply_shapes.py) keeps each identifier a fold reads with a seeded chance
(plain text: 0.8), drawn per call, so two byte-identical requests get different replies,
as from an endpoint that samples and does not honour the seed: the null holds (arm and
copy are one distribution) and what differs is noise. Each sweep's card reads the A/A
line at the family's level (alone in its family here: the sweep has no other contrast).

Simulated: the same test (analysis/verdict.judge, the card's exact sign-flip test and
TOST) on blocks drawn with replacement from the measured rows' recalls, both arms from
the one pooled distribution, --simulations times: the flip rate the test gives on rows
like these, with its Monte Carlo standard error.

--embedded N: also N sweeps on the embedded model (SmolLM2-135M at one thread; about 3
min a run, one run at a time: 2 sweeps took 22 min on 2026-12-04). It honours the seed,
so the copy's replies are its original's, byte for byte, and its A/A cannot flip. It
also prints in how many blocks that held, and how many cards read every arm lost every
fact: such a card holds no contrast, so no A/A line either.
--sweeps 0 skips the stand-in part (and its simulation), for the embedded run alone.

The flip rate is the share of A/A lines declared anything but undecided or equivalent.
"""

from __future__ import annotations

import csv
import json
import platform
import random
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from common import KEY, ROOT, cli, snakemake, standin_gateway

sys.path.insert(0, str(ROOT))
from foldstudy.analysis.card import AA_SOURCE  # noqa: E402
from foldstudy.analysis.plan import AnalysisPlan  # noqa: E402
from foldstudy.analysis.verdict import judge  # noqa: E402
from tests.support.reply_shapes import ONE_FIELD, OTHER, PLAIN, ShapedModel  # noqa: E402

SHAPES = {ONE_FIELD: 0.5, PLAIN: 0.2, OTHER: 0.2}


def config(base_url: str | None, sweeps: int, repeats: int) -> dict:
    """The A/A study: per sweep, arm m and its copy; the gateway stand-in or embedded."""
    model = ({"backend": "openrouter", "model_id": "acme/bench", "base_url": base_url,
              "api_key_env": "BENCH_KEY", "timeout_s": 30, "max_attempts": 2}
             if base_url else {"backend": "embedded", "n_ctx": 4096, "threads": 1})
    return {"study": "aa", "scale": 0.01 if base_url else 0.035, "temperature": 0.2,
            "recall_max_tokens": 200, "models": {"x": model},
            "sweeps": {f"s{i}": {"scenario": "distributed", "seed": i, "models": ["x"],
                                 "arms": ["m"], "repeats": repeats,
                                 "controls": {"aa": "m"}} for i in range(1, sweeps + 1)}}


def flips(decision: Path) -> tuple[dict[str, int], list[dict]]:
    """The A/A lines' words, counted (better, equivalent, undecided), and the lines."""
    doc = json.loads(decision.read_text())
    lines = [v for c in doc["cards"] for v in c["contrasts"] if v["source"] == AA_SOURCE]
    count = {"better": 0, "equivalent": 0, "undecided": 0}
    for v in lines:
        count["better" if v["word"].endswith("better") else
              "equivalent" if v["word"].startswith("equivalent") else "undecided"] += 1
    return count, lines


def copies_and_cards(work: Path) -> str:
    """What an embedded A/A study showed besides its A/A words: in how many blocks the
    copy's carries and recall answer were its original's byte for byte, and how many cards
    read every arm lost every fact (such a card holds no contrast, so no A/A line)."""
    same = blocks = 0
    for original in sorted(work.glob("results/runs/*/*/*/m.json")):
        a = json.loads(original.read_text())
        b = json.loads(original.with_name("m~aa.json").read_text())
        blocks += 1
        same += ([f["carry"] for f in a["folds"]] == [f["carry"] for f in b["folds"]]
                 and a["recall"]["answer"] == b["recall"]["answer"])
    cards = json.loads((work / "results/decision.json").read_text())["cards"]
    lost = sum(bool(c.get("all_lost")) for c in cards)
    return (f"the copy's carries and answer were the original's in {same}/{blocks} blocks; "
            f"{lost}/{len(cards)} cards read every arm lost every fact")


def measured(work: Path, sweeps: int, repeats: int, embedded: bool = False
             ) -> tuple[dict[str, int], list[float]]:
    """Run the study; the A/A words and every valid row's recall."""
    work.mkdir(parents=True)
    cfgfile = work / "aa.yaml"
    if embedded:
        cfgfile.write_text(json.dumps(config(None, sweeps, repeats)))
        snakemake(work, "--configfile", str(cfgfile), "-c2", "results/decision.json")
    else:
        with standin_gateway() as gw:
            cfgfile.write_text(json.dumps(config(gw.base_url, sweeps, repeats)))
            env = {"BENCH_KEY": KEY}
            snakemake(work, "--configfile", str(cfgfile), "-c2",
                      *[f"results/fixtures/s{i}/fixture.json" for i in range(1, sweeps + 1)],
                      env=env)
            facts: dict[str, str] = {}
            for i in range(1, sweeps + 1):
                doc = json.loads((work / f"results/fixtures/s{i}/fixture.json").read_text())
                facts |= {f["label"]: str(f["value"]) for f in doc["facts"] if f["graded"]}
            # the labels are the same in every sweep and the values differ: the stand-in's
            # model answers a label with the value its summary holds
            gw.state.reply = ShapedModelMany(work, sweeps, SHAPES)
            snakemake(work, "--configfile", str(cfgfile), "-c2", "results/decision.json",
                      env=env)
    count, _ = flips(work / "results/decision.json")
    with (work / "results/evidence/rows.csv").open(encoding="utf-8") as f:
        recalls = [float(r["recall"]) for r in csv.DictReader(f) if r["valid"] == "true"]
    return count, recalls


class ShapedModelMany:
    """reply_shapes.ShapedModel over several sweeps' fixtures: the one whose values the
    request holds answers it (each sweep's values are its own)."""

    def __init__(self, work: Path, sweeps: int, shapes: dict[str, float]) -> None:
        self.models = []
        for i in range(1, sweeps + 1):
            doc = json.loads((work / f"results/fixtures/s{i}/fixture.json").read_text())
            facts = {f["label"]: str(f["value"]) for f in doc["facts"] if f["graded"]}
            self.models.append(ShapedModel(facts, shapes, seed=i))

    def __call__(self, body: dict, default: str) -> str:
        text = json.dumps(body)
        for m in self.models:
            if any(v in text for v in m.facts.values()):
                return m(body, default)
        return self.models[0](body, default)


def simulated(recalls: list[float], repeats: int, n: int, seed: int) -> tuple[float, float]:
    """(flip rate, its standard error) of the card's test on A/A blocks drawn from these
    recalls, both arms from the one distribution."""
    plan, rng = AnalysisPlan.load(), random.Random(seed)
    flipped = 0
    for _ in range(n):
        a = np.array([rng.choice(recalls) for _ in range(repeats)])
        b = np.array([rng.choice(recalls) for _ in range(repeats)])
        v = judge("m", "m~aa", AA_SOURCE, a, b, None, 14.0, plan, 0.10, plan.alpha)
        flipped += v.word.endswith("better")
    rate = flipped / n
    return rate, (rate * (1 - rate) / n) ** 0.5


def main() -> None:
    ap = cli(__doc__)
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--repeats", type=int, nargs="+", default=[4, 12])
    ap.add_argument("--simulations", type=int, default=4000)
    ap.add_argument("--embedded", type=int, default=0)
    a = ap.parse_args()
    print(f"# A/A flip rate, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
          f"{a.sweeps} sweeps per setting (gateway stand-in), alpha 0.05, margin 0.10")
    with tempfile.TemporaryDirectory() as tmp:
        for r in a.repeats if a.sweeps else []:
            count, recalls = measured(Path(tmp, f"gw{r}"), a.sweeps, r)
            n = sum(count.values())
            rate = count["better"] / n if n else float("nan")
            sim, se = simulated(recalls, r, a.simulations, seed=r)
            print(f"repeats {r:>2}: measured {count['better']}/{n} = {rate:.3f} declared "
                  f"better ({count['equivalent']} equivalent, {count['undecided']} "
                  f"undecided); simulated on its rows {sim:.3f} +/- {se:.3f} "
                  f"({a.simulations} draws); mean recall {np.mean(recalls):.3f}")
        if a.embedded:
            count, _ = measured(Path(tmp, "emb"), a.embedded, 2, embedded=True)
            n = sum(count.values())
            print(f"embedded (SmolLM2-135M, seed honoured), {a.embedded} sweeps x 2 repeats: "
                  f"{count['better']}/{n} declared better ({count['equivalent']} equivalent, "
                  f"{count['undecided']} undecided); {copies_and_cards(Path(tmp, 'emb'))}")


if __name__ == "__main__":
    main()
