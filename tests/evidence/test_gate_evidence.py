"""The gate and the decision in evidence mode (config `evidence: DIR`) read the package's
sweeps and models, not the config's: `snakemake gate` on a reviewer's package failed "no
valid row on this model" on every model of the config while decision.json held the
package's cards (docs/budget-and-power.md, "The gate: a decision CI can act on")."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from foldstudy.evidence.package import decision_sweeps, package_gate_problem, package_sweeps
from foldstudy.io import write_json

from ..support import procs
from ..support.synthetic import aa_package_dir, synthetic_package_dir

GATE = {"arm": "m", "against": "j", "at_least": "equivalent"}


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    """A reviewer's package without a manifest: rows.csv and checks.csv only."""
    return synthetic_package_dir(tmp_path_factory.mktemp("package"), 60, seed=1)


def held(package: Path) -> dict[str, tuple[set, set]]:
    rows = pd.read_csv(package / "rows.csv", dtype=str, keep_default_na=False)
    return {s: (set(g["arm"]), set(g["model"])) for s, g in rows.groupby("sweep")}


def test_a_package_without_a_manifest_gives_the_sweeps_its_rows_hold(package):
    sweeps = package_sweeps(package)
    assert {s: (set(sw["arms"]), set(sw["models"])) for s, sw in sweeps.items()} == \
        held(package)
    assert {sw["design"] for sw in sweeps.values()} == {"latin"}


def test_a_packages_manifest_config_names_its_sweeps(tmp_path, package):
    """A release's package carries the config that made it: its sweeps as written there
    (the order design included, and which pairs its cards read)."""
    made = {"anchor": {"arms": ["j", "m"], "models": ["a"], "design": "williams",
                       "scenario": "distributed", "repeats": 2, "seed": 1,
                       "compare": "ladder"}}
    write_json({"config": {"sweeps": made}, "artifacts": {}}, tmp_path / "manifest.json")
    assert package_sweeps(tmp_path) == {
        "anchor": {"arms": ["j", "m"], "models": ["a"], "design": "williams",
                   "compare": "ladder"}}


def test_evidence_mode_decides_on_the_packages_sweeps_not_the_configs(package):
    config = {"evidence": str(package),
              "sweeps": {"main": {"arms": ["j", "m"], "models": ["smollm2-135m"],
                                  "design": "latin"}}}
    assert set(decision_sweeps(config)) == set(held(package))
    # the config's own, `compare` unset where it sets none (its cards read by its size)
    assert decision_sweeps({**config, "evidence": None}) == {
        "main": {**config["sweeps"]["main"], "compare": None}}


def test_a_gate_on_a_pair_the_package_never_ran_is_refused_naming_it(package):
    config = {"evidence": str(package), "decide": {"gate": {**GATE, "models": ["nobody"]}}}
    said = package_gate_problem(config)
    assert said is not None and "config.decide.gate.models[0]: 'nobody'" in said
    assert str(package) in said
    assert package_gate_problem({**config, "decide": {"gate": GATE}}) is None


@pytest.mark.workflow
def test_snakemake_gate_in_evidence_mode_reads_the_packages_cards(tmp_path, package):
    """The real run: results/gate.json holds a verdict from a card for every model of the
    package's sweeps that ran the pair, none "no valid row"."""
    decide = json.dumps({"pair": None, "gate": GATE})
    p = procs.snakemake(tmp_path, "-c1", "results/gate.json", "--config",
                        f"evidence={package}", f"decide={decide}", timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    gate = json.loads((tmp_path / "results/gate.json").read_text())
    cards = json.loads((tmp_path / "results/decision.json").read_text())["cards"]
    expected = {(s, m) for s, (arms, models) in held(package).items()
                if {"j", "m"} <= arms for m in models}
    assert {(v["sweep"], v["model"]) for v in gate["models"]} == expected
    assert {(c["sweep"], c["model"]) for c in cards} >= expected
    assert not [v for v in gate["models"] if "no valid row" in v["why"]]
    assert "Traceback" not in p.stderr


def test_a_packages_aa_copies_are_read_from_its_rows(tmp_path):
    """A copy is known by its id (derived.aa_original): in evidence mode the package's rows
    say which arm it copies, so the cards read the A/A line the study that made it read,
    and the evidence check takes the copy of a known arm and refuses one of an unknown."""
    from foldstudy.analysis.plan import AnalysisPlan
    from foldstudy.evidence.load import EvidenceError, load_evidence
    from foldstudy.study.derived import aa_copies, aa_original

    pkg = aa_package_dir(tmp_path / "pkg")
    assert aa_copies({"evidence": str(pkg), "sweeps": {}}) == {"m~aa": "m"}
    assert aa_copies({"evidence": None, "sweeps": {}}) == {}
    assert (aa_original("m~aa"), aa_original("m"), aa_original("~aa")) == ("m", None, None)
    plan = AnalysisPlan.load(config={"evidence": str(pkg), "sweeps": {}})
    assert plan.aa == {"m~aa": "m"}
    assert plan.arm_order[plan.arm_order.index("m") + 1] == "m~aa"  # beside its original
    rows, _ = load_evidence(pkg, plan.arm_order, plan.scenarios)
    assert set(rows["arm"]) == {"j", "m", "m~aa"}
    text = (pkg / "rows.csv").read_text().replace("/m~aa,", "/zz~aa,").replace(",m~aa,",
                                                                                 ",zz~aa,")
    (pkg / "rows.csv").write_text(text)
    with pytest.raises(EvidenceError, match="'zz~aa' on line .* is not an arm"):
        load_evidence(pkg, plan.arm_order, plan.scenarios)


@pytest.mark.workflow
def test_snakemake_gate_fails_in_one_line_on_a_package_whose_aa_is_declared_different(
        tmp_path):
    """The real run: a package whose A/A copy reads better than its original is the
    instrument failing, and `snakemake gate` fails saying so, one line per model."""
    pkg = aa_package_dir(tmp_path / "pkg")
    work = tmp_path / "work"
    work.mkdir()
    decide = json.dumps({"pair": None, "gate": GATE})
    p = procs.snakemake(work, "-c1", "gate", "--config", f"evidence={pkg}",
                        f"decide={decide}", timeout=600)
    assert p.returncode != 0
    said = [line.split(" ERROR ", 1)[1] for line in (p.stdout + p.stderr).splitlines()
            if " ERROR gate fails on " in line and "A/A" in line]
    models = sorted(set(pd.read_csv(pkg / "rows.csv")["model"]))
    assert sorted(said) == [f"gate fails on {m} in sweep anchor: the instrument fails its "
                            "A/A control, m against its exact copy m~aa reads m~aa better"
                            for m in models]
    assert "Traceback" not in p.stdout + p.stderr
    gate = json.loads((work / "results/gate.json").read_text())
    assert not gate["passed"] and {x["copy"] for x in gate["instrument"]} == {"m~aa"}
