"""Tables: every one renders three ways, empty cells say why, inference comes from numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from foldstudy.analysis.cells import valid_rows
from foldstudy.analysis.numbers import compute_numbers
from foldstudy.analysis.partition import partition
from foldstudy.analysis.plan import DEFAULT_ANALYSIS, AnalysisPlan
from foldstudy.analysis.scopes import Scopes
from foldstudy.evidence import columns
from foldstudy.report.table import DASH
from foldstudy.report.tables import build_tables, write_tables
from foldstudy.report.titles import table_titles

from ..support.evidence_rows import arm_rows, frames
from ..support.synthetic import SCOPES, synthetic_package

SC = Scopes.from_config(SCOPES)

ROOT_RESOURCES = DEFAULT_ANALYSIS.parent
TITLES = table_titles(DEFAULT_ANALYSIS)


@pytest.fixture(scope="module")
def built():
    rows, checks = synthetic_package(620, seed=5)
    plan = AnalysisPlan.load()
    numbers = compute_numbers(rows, checks, plan, SC)
    return rows, checks, numbers, {t.name: t for t in build_tables(rows, checks, numbers, plan,
                                                                   scopes=SC)}


def test_every_table_of_the_paper_is_built(built):
    *_, tables = built
    assert list(tables) == list(TITLES)
    for t in tables.values():
        assert t.rows and t.title == TITLES[t.name]
    assert tables["ladder"].title == "The j → q → m ladder"  # the plan's rungs


def test_recall_table_keeps_its_contract(built):
    rows, _, numbers, tables = built
    df = tables["recall-by-model-arm"].frame()
    assert list(df.columns) == columns.RECALL_TABLE
    valid = rows[rows["valid"]]
    for _, r in df.sample(10, random_state=1).iterrows():
        g = valid[(valid["sweep"] == r["sweep"]) & (valid["model"] == r["model"])
                  & (valid["arm"] == r["arm"])]
        assert r["n_valid"] == len(g)
        assert r["mean_recall"] == pytest.approx(g["recall"].mean(), abs=1e-6)
        assert r["rows_ge_half"] == (g["recall"] >= 0.5).sum()
        cell = f"{r['sweep']}/{r['model']}/{r['arm']}"
        assert numbers[f"recall.mean[{cell}]"] == pytest.approx(r["mean_recall"], abs=1e-6)


def test_an_empty_cell_says_why_and_is_never_zero():
    # Model b never ran f: Table 1 shows a dash and the reason; the CSV leaves it empty.
    rows = (arm_rows("s", "a", "f", [0.0, 0.0]) + arm_rows("s", "a", "m", [1.0])
            + arm_rows("s", "b", "m", [1.0, 1.0]))
    r, c = frames(rows)
    plan = AnalysisPlan.load()
    t = {t.name: t for t in build_tables(r, c, compute_numbers(r, c, plan), plan)}
    t1 = t["table1-recall-model-arm"]
    cells = dict(zip([row["model"] for row in t1.rows], t1.cells(), strict=True))
    f_col = [col.key for col in t1.columns].index("f")
    assert cells["a"][f_col] == "0.000 (2)"
    assert cells["b"][f_col] == f"{DASH} (not run)"
    assert pd.isna(t1.frame().set_index("model").loc["b", "f_mean"])
    # A table with nothing to show still renders one line that says why.
    depth = t["depth"].cells()
    assert len(depth) == 1 and depth[0][0].startswith(DASH)
    assert t["probe-verdicts"].cells()[0][0] == f"{DASH} (no probes.csv in the evidence)"


def test_inference_cells_are_read_from_numbers(built):
    rows, checks, numbers, tables = built
    lad = tables["ladder"]
    q = next(c for r, c in zip(lad.rows, lad.cells(), strict=True) if r["arm"] == "q")
    d, lo, hi = (numbers[f"ladder.effect.{k}[q/j]"] for k in ("diff", "ci_low", "ci_high"))
    assert f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" in q
    # Change a number: the table follows numbers.json, it does not recompute.
    moved = dict(numbers, **{"ladder.effect.diff[q/j]": 0.123})
    again = {t.name: t for t in build_tables(rows, checks, moved, AnalysisPlan.load(),
                                             scopes=SC)}["ladder"]
    assert any("+0.123 [" in cell for line in again.cells() for cell in line)


def test_partition_table_matches_the_analysis(built):
    rows, _, numbers, tables = built
    valid = valid_rows(rows)
    part = partition(valid[valid["sweep"] == "anchor"], AnalysisPlan.load())  # the partition scope
    t = tables["partition"].frame()
    assert list(t["model"]) == list(part["model"])
    for _, r in t.iterrows():
        assert numbers[f"partition.gap[{r['model']}]"] == pytest.approx(r["gap"])


def test_written_three_ways(tmp_path):
    rows, checks = synthetic_package(300, seed=2)
    from foldstudy.analysis.numbers import write_numbers
    from foldstudy.evidence.load import write_table

    write_table(rows, tmp_path / "rows.csv")
    write_table(checks, tmp_path / "checks.csv")
    plan = AnalysisPlan.load(ROOT_RESOURCES / "analysis.yaml", ROOT_RESOURCES / "arms.yaml")
    write_numbers(tmp_path, tmp_path / "n.json", tmp_path / "p.json", tmp_path / "n.tex", plan)
    out = tmp_path / "tables"
    names = write_tables(tmp_path / "rows.csv", tmp_path / "checks.csv", tmp_path / "n.json",
                         [], plan, ROOT_RESOURCES / "templates", out)
    for n in names:
        md = (out / f"{n}.md").read_text()
        tex = (out / f"{n}.tex").read_text()
        assert md.startswith(f"# {TITLES[n]}\n")
        header = [line for line in md.splitlines() if line.startswith("|")]
        assert len({line.count(" | ") for line in header[2:]} | {header[0].count(" | ")}) == 1
        assert "\\begin{tabular}" in tex and "\\label{tab:" + n + "}" in tex
        body = tex.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
        assert not re.search(r"(?<!\\)[%_#]", body), n  # cell text escaped for LaTeX
        assert all(line.count(" & ") == len(header[0].split(" | ")) - 1
                   for line in body.splitlines()), n
        pd.read_csv(out / f"{n}.csv")
    assert "(ladder.md)" in (out / "index.md").read_text()


def test_probe_verdicts_come_from_the_probe_summary(tmp_path):
    from foldstudy.evidence.package import load_probes

    (tmp_path / "summary.tsv").write_text(
        "model\tbackend\tverdict\tresponsible_parameter\tarms_allowed\n"
        "granite\topenrouter\tprobe_rejected_no_endpoint_for_parameters\treasoning\tmo\n"
        "smol\tembedded\tok\t\tjqmo\n")
    r, c = frames(arm_rows("s", "smol", "m", [1.0]))
    plan = AnalysisPlan.load()
    t = build_tables(r, c, compute_numbers(r, c, plan), plan, load_probes(tmp_path / "summary.tsv"))
    probe = next(x for x in t if x.name == "probe-verdicts")
    cells = probe.cells()
    assert cells[0][:3] == ["granite", "openrouter", "probe_rejected_no_endpoint_for_parameters"]
    assert cells[1][3] == f"{DASH} (not recorded)"  # no responsible parameter: says so


def test_probe_arms_verdicts_appear_only_where_a_study_names_them(tmp_path):
    """Paper §4.2: an arm probed and never folded shows its verdict in the probe table,
    beside (not inside) the arms allowed; a summary naming none keeps its columns."""
    from foldstudy.evidence.package import load_probes

    head = "model\tbackend\tverdict\tarms_allowed\tarms_forbidden\tprobe_arms\n"
    flash = ("flash\topenrouter\tschema_advertised_reply_nonconforming\tlm\t\t"
             "j=schema_advertised_reply_nonconforming\n")
    smol = "smol\tembedded\tok\tjm\t\t\n"
    r, c = frames(arm_rows("s", "smol", "m", [1.0]))
    plan = AnalysisPlan.load()
    for text, shown in ((head + flash + smol, True), (head + smol, False)):
        (tmp_path / "summary.tsv").write_text(text)
        t = build_tables(r, c, compute_numbers(r, c, plan), plan,
                         load_probes(tmp_path / "summary.tsv"))
        probe = next(x for x in t if x.name == "probe-verdicts")
        assert ("probe_arms" in [col.key for col in probe.columns]) is shown
    (tmp_path / "summary.tsv").write_text(head + flash + smol)
    probe = next(x for x in build_tables(r, c, compute_numbers(r, c, plan), plan,
                                         load_probes(tmp_path / "summary.tsv"))
                 if x.name == "probe-verdicts")
    assert probe.rows[0]["probe_arms"] == "j=schema_advertised_reply_nonconforming"
    assert probe.rows[0]["arms_allowed"] == "lm" and probe.rows[1]["probe_arms"] is None


def test_the_reasoning_parameter_table_shows_both_request_shapes(tmp_path):
    """Paper §4.2: one row per (model, request shape), marking the study's own."""
    from foldstudy.evidence.package import load_probes

    (tmp_path / "summary.tsv").write_text(
        "model\tbackend\tverdict\tsends_reasoning\tverdict_with_reasoning\t"
        "verdict_without_reasoning\tprobe_only\n"
        "granite\topenrouter\tok\tfalse\tprobe_rejected_no_endpoint_for_parameters\tok\t"
        "false\n"
        "smol\tembedded\tok\t\t\t\tfalse\n")
    r, c = frames(arm_rows("s", "smol", "m", [1.0]))
    plan = AnalysisPlan.load()
    t = build_tables(r, c, compute_numbers(r, c, plan), plan, load_probes(tmp_path / "summary.tsv"))
    table = next(x for x in t if x.name == "probe-reasoning-parameter")
    assert [(x["model"], x["shape"], x["verdict"], x["study"]) for x in table.rows] == [
        ("granite", "with reasoning parameter", "probe_rejected_no_endpoint_for_parameters",
         ""),
        ("granite", "without it", "ok", "yes")]


def test_an_unknown_cell_format_fails_by_name():
    from foldstudy.report.table import Col, fmt

    with pytest.raises(KeyError, match="'pct2' is not a cell format"):
        fmt(0.5, "pct2")
    with pytest.raises(KeyError, match="'pct2' is not a cell format"):
        Col("x", "x", "pct2")
    assert fmt(0.5, "pct") == "50%" and fmt(None, "pct") is None


def test_each_table_is_bound_to_its_builder_by_name():
    from foldstudy.report.tables import BOUND, BUILDERS, _bind
    from foldstudy.report.titles import TABLES, TableEntry

    assert [(e.name, make.__name__) for e, make in BOUND] == [
        (e.name, "t_" + e.name.replace("-", "_")) for e in TABLES]
    with pytest.raises(LookupError, match=r"table new-one \(no t_new_one\)"):
        _bind((*TABLES, TableEntry("new-one", "A new table")), BUILDERS)
    with pytest.raises(LookupError, match="builder t_ladder has no entry"):
        _bind(tuple(e for e in TABLES if e.name != "ladder"), BUILDERS)


def test_the_builders_live_in_their_sections_modules():
    """report/tables/ is a module per section of the paper; every builder
    sits in one (never in the package's __init__ or its shared helpers), every section
    module holds a builder, and none grows past about 300 lines."""
    import foldstudy.report.tables as tables_package
    from foldstudy.report.tables import BOUND

    package = Path(tables_package.__file__).parent
    homes = {make.__module__ for _, make in BOUND}
    sections = {f"{tables_package.__name__}.{p.stem}" for p in package.glob("*.py")
                if p.stem not in ("__init__", "common")}
    assert homes == sections
    for p in package.glob("*.py"):
        assert len(p.read_text(encoding="utf-8").splitlines()) <= 300, p


def test_a_table_declared_twice_or_reading_an_unknown_analysis_fails():
    from foldstudy.report.titles import TableEntry, _check

    with pytest.raises(ValueError, match="declared twice.*: ladder"):
        _check((TableEntry("ladder", "a"), TableEntry("ladder", "b")))
    with pytest.raises(KeyError, match="table x reads 'nope', not an analysis"):
        _check((TableEntry("x", "X", ("nope",)),))


def test_the_titles_load_without_pandas_at_dag_time():
    """common.smk reads the registry while Snakemake plans: no pandas, matplotlib, jinja2."""
    import subprocess
    import sys

    code = ("import sys, foldstudy.report.titles, foldstudy.study.config, "
            "foldstudy.study.flags, foldstudy.study.schema; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'jinja2', 'numpy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_arm_against_arm_tables_say_in_one_line_why_a_package_without_trace_has_none(
        built):
    """In evidence mode: rows and checks alone hold no carries, so paired-arms and
    fact-survival are one line saying so, never zeros."""
    from foldstudy.analysis.compare import NO_TRACE

    *_, tables = built
    for name in ("paired-arms", "fact-survival"):
        assert [r.get("_why_row") for r in tables[name].rows] == [NO_TRACE]
        assert tables[name].cells()[0][0] == f"{DASH} ({NO_TRACE})"


def test_the_arm_against_arm_tables_read_a_trace_and_the_configs_extra_pairs():
    """With a fact trace, a pair the study config names (j–m here) is counted within each
    block: 2 blocks x 2 graded facts, j kept the first fact in one block only."""
    from foldstudy.analysis.compare import pair_label

    rows, checks = frames([*arm_rows("s", "m1", "j", [1, 0], k=2, folds=2),
                           *arm_rows("s", "m1", "m", [1, 1], k=2, folds=2)])
    trace = pd.DataFrame([
        {"row_id": rid, "label": label, "fold": fold, "planted_fold": 1,
         "present": rid.endswith("/m") or (rid == "s/m1/r0/j" and label == labels[0])}
        for rid in rows["row_id"] for labels in [sorted(set(checks["label"]))]
        for label in labels for fold in (1, 2)])
    plan = AnalysisPlan.load()
    t = {t.name: t for t in build_tables(rows, checks, compute_numbers(rows, checks, plan), plan,
                                         trace=trace, extra_pairs=[["j", "m"]])}
    line = [r for r in t["paired-arms"].rows if r["pair"] == pair_label("j", "m")]
    assert [(r["blocks"], r["facts"], r["both_kept"], r["a_only"], r["b_only"], r["neither"])
            for r in line] == [(2, 4, 1, 0, 3, 0)]
    survival = {(r["arm"], r["k"]): (r["facts"], r["carried"]) for r in t["fact-survival"].rows}
    assert survival[("j", 0)] == (4, 1) and survival[("m", 1)] == (4, 4)
