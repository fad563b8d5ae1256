"""A session scenario and the user's own arms in the config: every bad input
refused by name when the config is checked, before any job; capacity chosen for the
session's own facts; `arms_file` arms checked by the paper's rules."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from foldstudy.study.capacity import TEXT_CHARS_PER_TOKEN, required_context_tokens
from foldstudy.study.config import ConfigError, load_study
from foldstudy.study.spec import load_arm_table

from ..conftest import ROOT

DATA = ROOT / "tests/data/sessions"
CC = DATA / "atlas.claude-code.jsonl"
FACTS = DATA / "atlas-facts.yaml"


def config(scenario: dict | None = None, **top) -> dict:
    entry = {"transcript": str(CC), "facts": str(FACTS), **(scenario or {})}
    return {"models": {"s": {"backend": "embedded"}}, "scenarios": {"atlas": entry},
            "sweeps": {"mine": {"scenario": "atlas", "models": ["s"], "arms": ["j", "m"],
                                "repeats": 1}}, **top}


def load(cfg: dict, config_schema, resources):
    return load_study(cfg, config_schema, load_arm_table(resources), resources)


def problems(cfg: dict, config_schema, resources) -> str:
    with pytest.raises(ConfigError) as e:
        load(cfg, config_schema, resources)
    return str(e.value)


def test_a_sweep_names_a_session_like_a_built_in_scenario(config_schema, resources):
    study = load(config(), config_schema, resources)
    fx = study.sessions["atlas"]
    assert len(fx.chunks) == 5 and len(fx.graded) == 6
    # no capacity key in the config: chosen so every arm holds the session's facts twice
    lines = "\n".join(f"{f.label}: {f.value}" for f in fx.graded)
    for a in ("j", "m"):
        arm = study.arms[a]
        assert arm.fold_budget_tokens >= 2 * len(lines) / 2.0
    assert study.config["scenarios"]["atlas"]["folds"] == 5
    assert study.config["scenarios"]["atlas"]["include_thinking"] is False


def test_an_unknown_scenario_is_refused_naming_the_known_ones(config_schema, resources):
    cfg = config()
    cfg["sweeps"]["mine"]["scenario"] = "atlass"
    msg = problems(cfg, config_schema, resources)
    assert "config.sweeps.mine.scenario: 'atlass' is not allowed" in msg and "atlas" in msg


def test_a_session_may_not_take_a_built_in_name(config_schema, resources):
    cfg = config()
    cfg["scenarios"]["distributed"] = cfg["scenarios"].pop("atlas")
    cfg["sweeps"]["mine"]["scenario"] = "distributed"
    assert "config.scenarios.distributed: 'distributed' is a built-in scenario" in problems(
        cfg, config_schema, resources)


@pytest.mark.parametrize(("change", "says"), [
    ({"folds": 40}, "fewer than folds: 40"),
    ({"format": "messages"}, "role None is not a chat role"),
    ({"facts": str(DATA / "missing.yaml")}, "does not exist"),
    ({"facts": None}, "needs a facts file"),
    ({"transcript": "/dev/zero"}, "/dev/zero is a character device"),
    ({"max_mb": 0.001}, "over the limit of 0.001 MB (max_mb)"),
    ({"format": "codex"}, "payload is a JSON null, not object"),
])
def test_each_bad_session_input_is_named_before_any_job(config_schema, resources, change,
                                                         says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    msg = problems(config(change), config_schema, resources)
    assert msg.count("config.scenarios.atlas") >= 1 and says in msg
    assert not any(tmp_path.iterdir())  # nothing written


def test_a_scenario_no_sweep_runs_needs_no_facts_but_a_readable_transcript(
        config_schema, resources, tmp_path):
    cfg = config({"facts": None})
    cfg["sweeps"] = {"main": {"scenario": "distributed", "models": ["s"], "arms": ["m"],
                              "repeats": 1}}
    assert load(cfg, config_schema, resources).sessions == {}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{"role": \n', encoding="utf-8")
    cfg["scenarios"]["atlas"]["transcript"] = str(bad)
    assert f"{bad}:2: not a JSON object" in problems(cfg, config_schema, resources)


def test_a_credential_in_the_transcript_is_a_warning_by_line(config_schema, resources,
                                                             tmp_path):
    key = "ghp_" + "A1b2C3d4E5" * 4
    lines = CC.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace("check the gateway config first", f"token {key} first")
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    study = load(config({"transcript": str(p)}), config_schema, resources)
    said = [w for w in study.warnings if "credential-shaped" in w]
    assert said == [f"config.scenarios.atlas.transcript: {p}:2: a credential-shaped string "
                    "(GitHub token; not shown); it would reach the model in a chunk"]
    assert key not in "\n".join(study.warnings)


def own_arms(tmp_path: Path, **mine) -> Path:
    (tmp_path / "prompt.md").write_text("Summarise the session. Keep every identifier.\n")
    arm = {"title": "my agent's compaction", "twin": "m", "system_prompt": "prompt.md",
           "fold_budget_tokens": 2400, "carry_cap_tokens": 2400, "carry": "text", **mine}
    import yaml

    p = tmp_path / "arms.yaml"
    p.write_text(yaml.safe_dump({"arms": {"mine": arm}}))
    return p


def test_own_arms_join_the_paper_arms(config_schema, resources, tmp_path):
    cfg = config(arms_file=str(own_arms(tmp_path)))
    cfg["sweeps"]["mine"]["arms"] = ["j", "m", "mine"]
    study = load(cfg, config_schema, resources)
    mine = study.arms["mine"]
    assert mine.system_prompt.startswith("Summarise the session")
    assert mine.fold_budget_tokens == study.arms["m"].fold_budget_tokens
    assert mine.system_prompt_sha256 != study.arms["m"].system_prompt_sha256
    assert {r.arm for r in study.runs} == {"j", "m", "mine"}


def test_an_own_arm_off_its_twins_capacity_is_refused(config_schema, resources, tmp_path):
    cfg = config(arms_file=str(own_arms(tmp_path, carry_cap_tokens=3000)))
    msg = problems(cfg, config_schema, resources)
    assert "arms.mine.carry_cap_tokens: 3000 breaks the capacity match with its twin m" in msg


def test_an_own_arm_with_a_schema_matches_its_twins_ceiling(config_schema, resources,
                                                           tmp_path):
    shutil.copy(resources / "schemas" / "single.json", tmp_path / "mine.json")
    ok = own_arms(tmp_path, twin="j", schema="mine.json", ceilings={"summary": 9600},
                  carry="rendered")
    cfg = config(arms_file=str(ok))
    cfg["sweeps"]["mine"]["arms"] = ["j", "mine"]
    assert load(cfg, config_schema, resources).arms["mine"].n_fields == 1
    bad = own_arms(tmp_path, twin="j", schema="mine.json", ceilings={"summary": 9000},
                   carry="rendered")
    assert "arms.mine.ceilings: 9000 breaks the capacity match with its twin j (9600)" in (
        problems(config(arms_file=str(bad)), config_schema, resources))


def test_an_own_arm_may_not_take_a_paper_arms_id_or_a_missing_prompt(config_schema,
                                                                     resources, tmp_path):
    import yaml

    p = tmp_path / "arms.yaml"
    p.write_text(yaml.safe_dump({"arms": {
        "m": {"title": "x"},
        "mine": {"title": "x", "twin": "m", "system_prompt": "nope.md",
                 "fold_budget_tokens": 2400, "carry_cap_tokens": 2400, "carry": "text"}}}))
    msg = problems(config(arms_file=str(p)), config_schema, resources)
    assert "arms.m: 'm' is one of the paper's arms" in msg
    assert "arms.mine.system_prompt:" in msg and "nope.md does not exist" in msg


def long_session(tmp_path: Path, turns: int = 40) -> Path:
    """A session of `turns` tool results of about a thousand characters each."""
    lines = [{"role": "user", "content": "Scan the shard logs; the ingress port is 47213."}]
    for i in range(turns):
        lines += [{"role": "assistant", "content": f"Reading shard log {i}."},
                  {"role": "tool", "content": "\n".join(
                      f"shard {i:02d} line {j:02d}: served {i * j} requests in {j} ms"
                      for j in range(24))}]
    p = tmp_path / "long.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    (tmp_path / "facts.yaml").write_text("facts:\n  - {label: the port, value: '47213'}\n",
                                         encoding="utf-8")
    return p


def test_a_chunk_that_cannot_fit_a_folding_models_context_is_refused_before_any_job(
        config_schema, resources, tmp_path):
    """A chunk of ~26,000 tokens was accepted for a model of n_ctx 4096, and
    only a fold would have found out. The refusal names the chunk's tokens, the model's
    context and the `folds` that would fit; those folds pass the check."""
    facts = str(tmp_path / "facts.yaml")
    cfg = config({"transcript": str(long_session(tmp_path)), "folds": 2, "facts": facts})
    cfg["models"]["s"]["n_ctx"] = 4096
    msg = problems(cfg, config_schema, resources)
    said = re.search(r"config\.sweeps\.mine \(scenario atlas, folds: 2\): the largest chunk "
                     r"\(~([\d,]+) tokens, ([\d,]+) characters\) .* over model s's context "
                     r"of 4,096 tokens; folds: (\d+) fits", msg)
    assert said, msg
    tokens, chars = (int(said.group(k).replace(",", "")) for k in (1, 2))
    assert tokens > 4096
    # counted at the measured rate of such text (2.4-2.6 characters a token), not at the
    # fixture generator's 3.0, which would undercount it (found in an audit)
    assert tokens == int(chars / TEXT_CHARS_PER_TOKEN) and TEXT_CHARS_PER_TOKEN < 3.0
    cfg = config({"transcript": str(long_session(tmp_path)), "folds": int(said.group(3)),
                  "facts": facts})
    cfg["models"]["s"]["n_ctx"] = 4096
    assert load(cfg, config_schema, resources).sessions["atlas"]


def test_a_chunk_that_fits_only_at_three_characters_a_token_is_refused(config_schema,
                                                                       resources, tmp_path):
    """Found in an audit: the context check counted 3.0 characters a token, the fixture
    generator's convention, where this text measures 2.4-2.6 (study/capacity.py); a chunk
    that fits only by that undercount is refused, one that fits at the measured rate
    passes."""
    cfg = config({"transcript": str(long_session(tmp_path)), "folds": 2,
                  "facts": str(tmp_path / "facts.yaml")})
    cfg["models"]["s"]["n_ctx"] = 65536
    study = load(cfg, config_schema, resources)
    chunk = max(len(c) for c in study.sessions["atlas"].chunks)
    arms = [study.arms[a] for a in ("j", "m")]
    undercount = required_context_tokens(chunk, arms, 3.0)
    measured = required_context_tokens(chunk, arms, TEXT_CHARS_PER_TOKEN)
    assert measured > undercount
    cfg["models"]["s"]["n_ctx"] = undercount
    assert f"over model s's context of {undercount:,} tokens" in problems(
        cfg, config_schema, resources)
    cfg["models"]["s"]["n_ctx"] = measured
    assert load(cfg, config_schema, resources).sessions["atlas"]


def _fork_with_secret_parent(tmp_path: Path) -> tuple[Path, Path, str]:
    """The harbor Codex fork and its parent rollout (decompressed) in one sessions tree,
    the parent holding a GitHub token on line 6, inside the 26 lines the fork inherits,
    and another on line 27, past the cut. The fork's base counts lines, so the edits
    move no byte offset."""
    import zstandard

    src = DATA / "codex/sessions/2026/11/29"
    day = tmp_path / "sessions/2026/11/29"
    day.mkdir(parents=True)
    fork_src = next(src.glob("rollout-*.jsonl"))
    recs = [json.loads(line) for line in fork_src.read_text(encoding="utf-8").splitlines()]
    base = recs[0]["payload"]["history_base"]
    recs[0]["payload"]["history_base"] = {"thread_id": base["thread_id"],
                                          "end_ordinal_exclusive": 26}
    fork = day / fork_src.name
    fork.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    zst = next(src.glob("rollout-*.jsonl.zst"))
    with zst.open("rb") as f:
        lines = zstandard.ZstdDecompressor().stream_reader(f).read().decode().splitlines()
    key = "ghp_" + "A1b2C3d4E5" * 4
    lines[5] = lines[5].replace("The harbor", f"Token {key}. The harbor", 1)
    lines[26] = lines[26].replace('"text":"', f'"text":"{key} ', 1)
    assert key in lines[5] and key in lines[26]
    parent = day / zst.name.removesuffix(".zst")
    parent.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fork, parent, key


def test_a_forks_inherited_lines_are_scanned_and_pinned_like_its_own(config_schema, resources,
                                                                     tmp_path):
    """A fork's history comes from its parent's rollout, so the lines it
    inherits reach the model as its own do: a secret there is said by the parent's file
    and line (a secret past the cut, never folded, is not), and the parent is pinned by
    sha256 in the fixture beside the transcript."""
    from foldstudy.io import sha256_file

    fork, parent, key = _fork_with_secret_parent(tmp_path)
    cfg = config({"transcript": str(fork), "facts": str(DATA / "harbor-facts.yaml")})
    study = load(cfg, config_schema, resources)
    said = [w for w in study.warnings if "credential-shaped" in w]
    assert said == [f"config.scenarios.atlas.transcript: {parent}:6: a credential-shaped "
                    "string (GitHub token; not shown); it would reach the model in a chunk "
                    "(a line the main thread reads from another file: a fork's parent, a "
                    "trajectory's continuation)"]
    assert key not in "\n".join(study.warnings)
    meta = study.sessions["atlas"].meta
    assert meta["session"]["inherited"] == [
        {"path": str(parent), "last_line": 26, "sha256": sha256_file(parent)}]
    assert meta["inherited_credential_lines"] == [
        {"file": str(parent), "line": 6, "kind": "GitHub token"}]


def test_a_kept_tail_as_long_as_the_session_is_refused_naming_both(config_schema, resources):
    """native_keep2 keeps its last two chunks verbatim: on a session cut into two folds no
    chunk is ever older than that tail, no fold compacts, and the arm would grade the
    whole session as the provider's compaction. Refused before any job; three folds run."""
    cfg = config({"folds": 2})
    cfg["sweeps"]["mine"]["arms"] = ["j", "m", "native_keep2"]
    said = problems(cfg, config_schema, resources)
    assert ("config.sweeps.mine.arms: 'native_keep2' keeps the last 2 chunks verbatim, and "
            "scenario 'atlas' has 2: no fold would compact anything") in said
    cfg["scenarios"]["atlas"]["folds"] = 3
    assert "keeps the last" not in problems_or_none(cfg, config_schema, resources)


def problems_or_none(cfg: dict, config_schema, resources) -> str:
    """The config's problems, or "" where it loads."""
    try:
        load(cfg, config_schema, resources)
    except ConfigError as e:
        return str(e)
    return ""
