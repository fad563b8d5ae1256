"""Real Snakemake runs of the workflow: the DAG, config errors, and a tiny real study."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from foldstudy.backends.base import REPETITION
from foldstudy.evidence import columns
from foldstudy.study.spec import arm_ids, load_arm_table

from ..conftest import RESOURCES, ROOT
from ..support.procs import snakemake

pytestmark = pytest.mark.workflow
CONTRACT_ROWS = columns.ROWS[: columns.ROWS.index("system_prompt_sha256") + 1]


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_dry_run_lists_every_job_of_the_default_study(tmp_path):
    p = snakemake(tmp_path, "-n", "--quiet", "rules")
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    counts = dict(line.split()[:2] for line in out.splitlines()
                  if len(line.split()) == 2 and line.split()[1].isdigit())
    # two blocks of j, m and the ceiling (uncompacted): a run job each
    assert counts["fold"] == "6" and counts["fixture"] == "1" and counts["tables"] == "1"


def test_lint_is_clean(tmp_path):
    p = snakemake(tmp_path, "--lint")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Congratulations, your workflow is in a good condition" in p.stdout + p.stderr


@pytest.mark.parametrize("bad, expected", [
    ({"sweeps": {"s": {"scenario": "distributed", "models": ["smollm2-135m"],
                       "arms": ["j", "x"], "repeats": 1}}},
     "config.sweeps.s.arms[1]: 'x' is not an arm (known: "
     f"{' '.join(sorted(arm_ids(load_arm_table(RESOURCES))))})"),
    ({"sweeps": {"s": {"scenario": "distributed", "models": ["smollm2-135m"],
                       "arms": ["j"], "repeats": -1}}},
     "config.sweeps.s.repeats: -1 is less than the minimum of 1"),
    ({"sweeps": {"s": {"scenario": "distributed", "models": ["smollm2-135m"],
                       "arms": ["j", "q"], "repeats": 1}},
      "arm_overrides": {"q": {"ceiling_per_field_chars": 2000}}},
     "config.arm_overrides.q.ceiling_per_field_chars: 2000 breaks the capacity match"),
])
def test_bad_config_fails_before_any_job_naming_the_key(tmp_path, bad, expected):
    cfg = {"models": {"smollm2-135m": {"backend": "embedded"}}, **bad}
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(cfg))
    p = snakemake(tmp_path, "-c1", "--configfile", str(path))
    assert p.returncode != 0
    assert expected in p.stdout + p.stderr
    assert not (tmp_path / "results").exists()  # no job ran


TINY = str(ROOT / ".test/config.yaml")
# the graded facts of the tiny study's scenario (resources/facts.yaml)
GRADED = yaml.safe_load((RESOURCES / "facts.yaml").read_text())["scenarios"][
    yaml.safe_load(Path(TINY).read_text())["sweeps"]["tiny"]["scenario"]]["graded"]


@pytest.fixture(scope="module")
def tiny(tiny_study) -> Path:
    """One real run of the tiny study, shared by the tests that read it (and by the
    cluster tests, which replay it: conftest.py); read only here."""
    return tiny_study


def test_tiny_study_end_to_end_on_the_real_model(tiny):
    tmp_path = tiny
    ev = tmp_path / "results/evidence"
    rows = read(ev / "rows.csv")
    with open(ev / "rows.csv", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header[: len(CONTRACT_ROWS)] == CONTRACT_ROWS
    assert len(rows) == 2 and all(r["valid"] == "true" for r in rows)
    assert sorted((r["arm"], r["repeat"], r["position"]) for r in rows) == [
        ("j", "0", "0"), ("q", "0", "1")]
    for r in rows:
        assert r["folds"] == "5" and int(r["prompt_tokens"]) > 0
        assert float(r["recall"]) == int(r["n_correct"]) / int(r["n_graded"])
        assert sum(int(r[k]) for k in ("finish_stop", "finish_length", "finish_repeat")) == 5
    # j's and q's real-model rows (tests/workflow/test_model.py runs the other kinds of
    # fold): every fold counted by the model's own tokenizer, within its budget
    for f in read(ev / "folds.csv"):
        assert f["token_count_method"] == "exact" and int(f["prompt_tokens"]) > 100
        assert 0 < int(f["completion_tokens"]) <= int(f["max_tokens"])
        assert f["finish_reason"] in ("stop", "length", REPETITION)
    q = [r for r in rows if r["arm"] == "q"]
    # The schema guarantees the partition arrives, unless the carry cap clipped it.
    q_folds = [f for f in read(ev / "folds.csv") if f["row_id"].endswith("/q")]
    assert q_folds and all(f["headings_carried"] == "5" for f in q_folds
                           if f["clipped"] == "false" and f["parse_ok"] == "true")
    for r in q:
        fill = float(r["carried_chars"]) / float(r["declared_ceiling_chars"])
        assert float(r["fill"]) == pytest.approx(fill, rel=1e-5)
    assert len(read(ev / "checks.csv")) == 2 * GRADED
    assert len(read(ev / "folds.csv")) == 2 * 5
    # the fact trace: every (run, graded fact, fold), folds 1-based, in the manifest
    trace = read(ev / "trace.csv")
    assert len(trace) == 2 * GRADED * 5 and {t["fold"] for t in trace} == {"1", "2", "3", "4", "5"}
    assert "trace.csv" in json.loads((ev / "manifest.json").read_text())["artifacts"]
    table = read(tmp_path / "results/tables/recall-by-model-arm.csv")
    assert [(t["arm"], t["n_valid"]) for t in table] == [("j", "1"), ("q", "1")]
    assert (tmp_path / "results/tables/recall-by-model-arm.md").read_text().count("| tiny |") == 2
    # §6: characters per token by class, against the embedded model's own vocabulary
    per_class = {t["text_class"]: t for t in read(tmp_path / "results/tables/chars-per-token.csv")}
    assert {"port", "uuid", "prose"} <= set(per_class)
    assert float(per_class["uuid"]["chars_per_token"]) < 4  # the estimator undercounts a UUID
    # The DAG ran the block in design order: position 1 started after position 0 ended.
    recs = {a: json.loads((tmp_path / f"results/runs/tiny/smollm2-135m/r0/{a}.json")
                          .read_text()) for a in ("j", "q")}
    first, second = sorted(recs.values(), key=lambda r: r["position"])
    assert first["position"] == 0 and second["position"] == 1
    # Every rule wrote its log.
    assert (tmp_path / "results/logs/tables.log").exists()
    assert (tmp_path / "results/logs/fold/tiny/smollm2-135m/r0/q.log").read_text().count(
        "fold 5/5") == 1
    # A second invocation has nothing to do.
    p = snakemake(tmp_path, "-c2", "results/tables", "--configfile",
                  str(ROOT / ".test/config.yaml"), "-n")
    assert "Nothing to be done" in p.stdout + p.stderr


def test_lock_verify_release_and_regenerate_round_trip(tiny_copy, tmp_path):
    """Lock, verify (a tampered byte named), release and a reviewer's regeneration, on a
    copy of the tiny study: the cluster tests read the original meanwhile."""
    tiny = tiny_copy
    p = snakemake(tiny, "-c1", "verify", "--configfile", TINY)
    assert p.returncode != 0 and "no lock for this study" in p.stdout + p.stderr
    p = snakemake(tiny, "-c1", "lock", "--configfile", TINY)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tiny / "config/tiny.lock.json").is_file()
    p = snakemake(tiny, "-c1", "verify", "--configfile", TINY)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "**OK**" in (tiny / "results/verify/report.md").read_text()

    # a changed byte in a locked artifact is named
    rows = tiny / "results/evidence/rows.csv"
    original = rows.read_bytes()
    rows.write_bytes(original.replace(b"true", b"True", 1))
    p = snakemake(tiny, "-c1", "verify", "--configfile", TINY)
    report = (tiny / "results/verify/report.md").read_text()
    rows.write_bytes(original)
    assert p.returncode != 0 and "`rows.csv` vs manifest" in report

    p = snakemake(tiny, "-c1", "results/release/tiny.tar.gz", "--configfile", TINY)
    assert p.returncode == 0, p.stderr[-3000:]
    package = tiny / "results/release/tiny"
    assert {"evidence", "stats", "tables", "lock.json", "config.yaml", "README.md"} <= {
        x.name for x in package.iterdir()}
    assert {"rows.csv", "checks.csv", "folds.csv", "probes.csv", "trace.csv",
            "manifest.json"} == {
        x.name for x in (package / "evidence").iterdir()}
    manifest = json.loads((package / "evidence/manifest.json").read_text())
    assert manifest["artifacts"]["probes.csv"]["rows"] == 1  # one verdict, one model

    # a reviewer regenerates from the package alone: no run job, identical numbers
    reviewer = tmp_path / "reviewer"
    reviewer.mkdir()
    args = ("--configfile", str(package / "config.yaml"),
            "--config", f"evidence={package / 'evidence'}")
    plan = snakemake(reviewer, "-n", "results/tables", *args)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "rule fold" not in plan.stdout and "rule fixture" not in plan.stdout
    p = snakemake(reviewer, "-c2", "results/tables", *args)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (reviewer / "results/stats/numbers.json").read_bytes() == (
        package / "stats/numbers.json").read_bytes()
    p = snakemake(reviewer, "-c1", "verify", *args)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


def test_the_tiny_study_compares_its_arms_and_a_replay_rebuilds_it_byte_for_byte(tiny,
                                                                                  tmp_path):
    """The block pages, paired-arms and fact-survival from a real study, and a
    replay of its store writes every page and both tables again, byte for byte."""
    pages = sorted(p.relative_to(tiny / "results/compare")
                   for p in (tiny / "results/compare").rglob("*.html"))
    assert [str(p) for p in pages] == ["index.html", "tiny/smollm2-135m/r0.html"]
    page = (tiny / "results/compare/tiny/smollm2-135m/r0.html").read_text()
    assert page.index('data-column="j') < page.index('data-column="q')  # design order, r0
    paired = read(tiny / "results/tables/paired-arms.csv")
    assert [(p["pair"], p["blocks"], p["facts"]) for p in paired] == [("j–q", "1", str(GRADED))]
    p0 = paired[0]
    kept = sum(int(p0[k]) for k in ("both_kept", "a_only", "b_only", "neither"))
    assert kept == GRADED
    survival = read(tiny / "results/tables/fact-survival.csv")
    assert {s["arm"] for s in survival} == {"j", "q"}
    assert [s["k"] for s in survival if s["arm"] == "q"][0] == "0"
    summary = (tiny / "results/summary.md").read_text()
    assert summary.rstrip().endswith(
        "Arm against arm, fold by fold: results/compare/tiny/smollm2-135m/r0.html")
    assert "- tiny j: " in summary and "- tiny q: " in summary

    replay = tmp_path / "replay"
    (replay / "results").mkdir(parents=True)
    import shutil

    shutil.copytree(tiny / "results/store", replay / "results/store")
    p = snakemake(replay, "-c2", "results/tables", "--configfile", TINY,
                  "--config", "replay=True")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    for rel in [*(f"results/compare/{x}" for x in pages),
                "results/tables/paired-arms.csv", "results/tables/fact-survival.csv",
                "results/tables/paired-arms.md", "results/tables/fact-survival.md"]:
        assert (replay / rel).read_bytes() == (tiny / rel).read_bytes(), rel
