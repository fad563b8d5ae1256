"""verify: one changed byte in any locked artifact, or one changed claim, fails naming it."""

from __future__ import annotations

import atexit
import random
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from foldstudy.evidence import columns
from foldstudy.evidence.load import write_table
from foldstudy.evidence.publish import publish_evidence
from foldstudy.grade.rows import frame
from foldstudy.io import read_json, write_json
from foldstudy.release.lock import VerifyFailed, recompute_numbers, write_lock
from foldstudy.release.verify import verify_study

from ..conftest import RESOURCES

LABELS = [f"label {i}" for i in range(14)]


def synthetic_evidence(d: Path, seed: int = 3) -> None:
    """A small, valid evidence set: 3 models x 2 arms x 4 repeats, near-binary recall."""
    rng = random.Random(seed)
    rows, checks, folds = [], [], []
    for model in ("m1", "m2", "m3"):
        for arm in ("j", "q"):
            for rep in range(4):
                rid = f"s/{model}/r{rep}/{arm}"
                good = rng.random() < (0.8 if arm == "q" else 0.4)
                correct = [rng.random() < (0.9 if good else 0.1) for _ in LABELS]
                row = {c: 0 for c in columns.ROWS}
                row.update(row_id=rid, sweep="s", scenario="distributed", model=model, arm=arm,
                           repeat=rep, position=rep % 2, valid=True, invalid_reason="",
                           n_graded=14, n_correct=sum(correct), recall=sum(correct) / 14,
                           n_fields=1 if arm == "j" else 5, declared_ceiling_chars=9600,
                           carried_chars=rng.randint(500, 9600),
                           headings_carried=rng.randint(0, 5) if arm == "j" else 5,
                           json_envelope_carried=False, abstained=False, catchup_fired=False,
                           system_prompt_sha256="0" * 64, answer="1. x\n2. y", folds=5,
                           carrier_present=sum(correct))
                row["fill"] = row["carried_chars"] / 9600
                rows.append(row)
                for lab, ok in zip(LABELS, correct, strict=True):
                    checks.append({"row_id": rid, "label": lab, "fact_class": "port",
                                   "expected": "52677", "in_carrier": ok, "correct": ok,
                                   "correct_unit_lenient": ok, "abstained": False,
                                   "answered": True, "fabricated": not ok,
                                   "stock_signature": False, "answer_line": ""})
                folds.append({"row_id": rid, "fold": 0, "reply": "r", "carry": "c"})
    d.mkdir(parents=True, exist_ok=True)
    parts = d / "parts"
    for name, recs, cols in (("rows", rows, columns.ROWS), ("checks", checks, columns.CHECKS),
                             ("folds", folds, columns.FOLDS)):
        write_table(frame(recs, cols), parts / f"{name}.csv")


@pytest.fixture()
def study(tmp_path):
    return make_study(tmp_path)


_BUILT: list[Path] = []  # the study as built once in this process, copied for each test


def make_study(tmp_path: Path) -> dict:
    """The locked synthetic study under tmp_path (the `study` fixture's body): a copy of
    the one this process built (its files name no path of their own), since building it
    (its numbers computed twice, its lock written) took about 1 s, and five test files
    start from it 57 times."""
    if not _BUILT:
        built = Path(tempfile.mkdtemp(prefix="locked-study-"))
        atexit.register(shutil.rmtree, built, True)
        _build_study(built)
        _BUILT.append(built)
    shutil.copytree(_BUILT[0], tmp_path, dirs_exist_ok=True)
    return _study_paths(tmp_path)


def _build_study(tmp_path: Path) -> None:
    ev = tmp_path / "evidence"
    synthetic_evidence(tmp_path)
    names = ("rows", "checks", "folds")
    publish_evidence({k: [str(tmp_path / "parts" / f"{k}.csv")] for k in names},
                     {k: str(ev / f"{k}.csv") for k in names},
                     str(ev / "manifest.json"), {"study": "t"})
    numbers = tmp_path / "stats/numbers.json"
    write_json(recompute_numbers(ev, RESOURCES / "analysis.yaml"), numbers)
    res = tmp_path / "resources"
    shutil.copytree(RESOURCES, res)
    for d, f, text in (("store/ab", "abcd.json", "{}"), ("runs/s/m1/r0", "j.json", "{}"),
                       ("fixtures/s", "manifest.json", '{"facts": []}')):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / f).write_text(text)
    s = _study_paths(tmp_path)
    write_lock(str(ev), str(numbers), str(s["lock"]), "t", **s["args"])


def _study_paths(tmp_path: Path) -> dict:
    res = tmp_path / "resources"
    args = dict(store=str(tmp_path / "store"), runs=str(tmp_path / "runs"),
                fixtures=str(tmp_path / "fixtures"), resources=str(res),
                analysis=str(res / "analysis.yaml"),
                config={"study": "t", "scale": 0.03})
    return {"root": tmp_path, "ev": tmp_path / "evidence",
            "numbers": tmp_path / "stats/numbers.json", "lock": tmp_path / "t.lock.json",
            "args": args, "claims": tmp_path / "claims.yaml",
            "report": tmp_path / "verify/report.md"}


def verify(s, **override):
    args = {**s["args"], **override}
    return verify_study(str(s["ev"]), str(s["numbers"]), str(s["lock"]), str(s["claims"]),
                        str(s["report"]), **args)


def flip(path: Path) -> None:
    b = bytearray(path.read_bytes())
    i = len(b) // 2
    b[i] = ord("7") if b[i] != ord("7") else ord("8")
    path.write_bytes(bytes(b))


def test_untouched_study_verifies(study):
    assert verify(study) == []
    assert "**OK**" in study["report"].read_text()


@pytest.mark.parametrize("target, named", [
    ("evidence/rows.csv", "rows.csv"),
    ("evidence/checks.csv", "checks.csv"),
    ("evidence/folds.csv", "folds.csv"),
    ("evidence/manifest.json", "evidence/manifest.json"),
    ("stats/numbers.json", "stats/numbers.json"),
    ("store/ab/abcd.json", "`store`"),
    ("runs/s/m1/r0/j.json", "`runs`"),
    ("fixtures/s/manifest.json", "`fixtures`"),
    ("resources/prompts/fixed_headings.md", "`resources`"),
    ("resources/arms.yaml", "`resources`"),
])
def test_one_changed_byte_in_any_locked_artifact_fails_naming_it(study, target, named):
    flip(study["root"] / target)
    with pytest.raises(VerifyFailed):
        verify(study)
    assert named in study["report"].read_text()


def test_changed_config_fails_naming_it(study):
    with pytest.raises(VerifyFailed):
        verify(study, config={"study": "t", "scale": 0.05})
    assert "`config` vs lock (private input)" in study["report"].read_text()


def test_claims_file_checked_and_a_changed_number_named(study):
    numbers = read_json(study["numbers"])
    key = next(k for k, v in sorted(numbers.items()) if isinstance(v, float))
    # A design claim is checked on any run (an exact one only on the paper's package).
    claims = {"claims": [{"key": key, "value": numbers[key], "tolerance": 1e-9,
                          "where": "README", "kind": "design"}]}
    study["claims"].write_text(yaml.safe_dump(claims))
    assert verify(study) == []
    claims["claims"][0]["value"] = numbers[key] + 0.01
    study["claims"].write_text(yaml.safe_dump(claims))
    with pytest.raises(VerifyFailed):
        verify(study)
    assert f"`{key}` vs claims.yaml (README)" in study["report"].read_text()


def test_missing_lock_fails_with_the_command_that_makes_one(study):
    study["lock"].unlink()
    with pytest.raises(VerifyFailed):
        verify(study)
    assert "snakemake -c1 lock" in study["report"].read_text()


def test_a_malformed_evidence_row_is_a_named_mismatch_not_a_crash(study):
    rows = study["ev"] / "rows.csv"
    text = rows.read_text().splitlines()
    cells = text[1].split(",")
    i = text[0].split(",").index("n_correct")
    cells[i] = str(int(cells[i]) + 1)  # recall no longer equals n_correct / n_graded
    rows.write_text("\n".join([text[0], ",".join(cells), *text[2:]]) + "\n")
    with pytest.raises(VerifyFailed):
        verify(study)
    report = study["report"].read_text()
    assert "`rows.csv/checks.csv` vs recompute" in report and "`rows.csv` vs manifest" in report
