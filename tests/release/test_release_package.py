"""A release that is whole: private endpoints and local paths left out, not
refused (paper §7); every file of the package pinned and verified where it lies; a
published session's secrets redacted, and counted.

The package is the locked synthetic study of test_verify.py, released by make_release as
the release rule does (verified against its lock first), then verified as a reviewer does:
its own config.yaml, evidence/ and lock.json.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from foldstudy.io import canonical_sha256, sha256_file
from foldstudy.release.crate import CRATE_FILE, SNAKEMAKE_MARK, CrateError
from foldstudy.release.lock import VerifyFailed, write_lock
from foldstudy.release.package import make_release
from foldstudy.release.sanitize import sanitize_config
from foldstudy.release.verify import verify_study

from ..conftest import RESOURCES
from .test_verify import flip, make_study, study  # noqa: F401 - the locked study fixture

BASE = {"study": "t", "scale": 0.03}


def release(s, config: dict | None = None) -> Path:
    """Lock the study under `config` and release it, verified first, as the rules do."""
    root = s["root"]
    (root / "tables").mkdir(exist_ok=True)
    cfg = {**BASE, **(config or {})}
    verify_args = {k: v for k, v in s["args"].items() if k != "config"}
    write_lock(str(s["ev"]), str(s["numbers"]), str(s["lock"]), "t", config=cfg, **verify_args)
    out = root / "release/pkg"
    make_release("pkg", str(s["ev"]), str(s["numbers"]), str(s["lock"]), cfg,
                 str(root / "tables"), None, str(root / "fixtures"), root / "checkout",
                 str(out), str(root / "release/pkg.tar.gz"),
                 str(RESOURCES / "templates/release-README.md"),
                 verify={**verify_args, "claims_path": None, "report_out": str(s["report"])})
    return out


def verify_package(s, package: Path) -> list:
    """verify where the package lies, with its own config (as its README says)."""
    config = {**yaml.safe_load((package / "config.yaml").read_text()),
              "evidence": str(package / "evidence")}
    return verify_study(str(package / "evidence"), str(package / "stats/numbers.json"),
                        str(package / "lock.json"), None, str(s["root"] / "verify/pkg.md"),
                        store=None, runs=None, fixtures=None, resources=s["args"]["resources"],
                        analysis=s["args"]["analysis"], config=config)


def refusal(s, package: Path) -> str:
    with pytest.raises(VerifyFailed):
        verify_package(s, package)
    return (s["root"] / "verify/pkg.md").read_text()


def every_text(package: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in package.rglob("*") if p.is_file() and p.suffix != ".png")


def nothing_outside(root: Path, before: set[Path]) -> None:
    """Nothing written outside the study's folder (the tests' results/)."""
    assert {p for p in root.parent.iterdir()} == before


# ---------------------------------------------------- exclude, don't refuse (paper §7)

LOCAL_SERVER = {"backend": "openai", "server": "vllm", "model_id": "qwen3.6",
                "base_url": "http://127.0.0.1:8000/v1"}
GATEWAY = {"backend": "openrouter", "model_id": "acme/m1",
           "base_url": "https://openrouter.ai/api/v1"}

EXCLUDED = [
    ("local vLLM beside the gateway (config/study-paper.yaml's shape)",
     {"models": {"vllm": LOCAL_SERVER, "gw": GATEWAY}}, "models.vllm.base_url",
     "<local server: vllm>", "http://127.0.0.1:8000/v1"),
    ("private endpoint without a server", {"models": {"m": {
        "backend": "openai", "base_url": "http://10.0.0.5:8000/v1"}}},
     "models.m.base_url", "<private endpoint>", "10.0.0.5"),
    ("short form 10.1", {"models": {"m": {"backend": "openai", "base_url": "http://10.1:8000"}}},
     "models.m.base_url", "<private endpoint>", "http://10.1:8000"),
    ("short form 127.1", {"models": {"m": {"backend": "openai",
                                           "base_url": "http://127.1:8080/v1"}}},
     "models.m.base_url", "<private endpoint>", "127.1:8080"),
    ("integer form 2130706433", {"models": {"m": {"backend": "openai",
                                                  "base_url": "http://2130706433/v1"}}},
     "models.m.base_url", "<private endpoint>", "2130706433"),
    ("model under /scratch", {"models": {"m": {"backend": "embedded",
                                               "gguf": "/scratch/u/m.gguf"}}},
     "models.m.gguf", "<local path: m.gguf>", "/scratch/u"),
    ("store on /data", {"store": "/data/study/store"}, "store", "<local path: store>",
     "/data/study"),
    ("transcript under ~/ (docs/own-sessions.md)", {"notes": "~/.claude/projects/x/s.jsonl"},
     "notes", "<local path: s.jsonl>", "~/.claude"),
    ("Windows drive path", {"models": {"m": {"backend": "embedded",
                                             "gguf": "D:/models/m.gguf"}}},
     "models.m.gguf", "<local path: m.gguf>", "D:/models"),
]


@pytest.mark.parametrize("config, key, placeholder, gone", [c[1:] for c in EXCLUDED],
                         ids=[c[0] for c in EXCLUDED])
def test_a_private_endpoint_or_local_path_is_left_out_of_the_released_config(
        config, key, placeholder, gone):
    """Paper §7: "private endpoints and local paths are excluded from the release"."""
    from foldstudy.release.scan import scan_text

    released, changed = sanitize_config({**BASE, **config})
    assert changed == {key: placeholder}
    text = yaml.safe_dump(released)
    assert gone not in text and scan_text("config.yaml", text, {}, set()) == []


@pytest.mark.parametrize("case", [EXCLUDED[0], EXCLUDED[7]], ids=lambda c: c[0])
def test_a_package_with_its_endpoint_or_path_left_out_is_released_and_verifies(
        study, case):  # noqa: F811
    _, config, key, placeholder, gone = case
    before = set(study["root"].parent.iterdir())
    package = release(study, config)
    released = yaml.safe_load((package / "config.yaml").read_text())
    node = released
    for part in key.split("."):
        node = node[part]
    assert node == placeholder
    assert gone not in every_text(package)
    lock = json.loads((package / "lock.json").read_text())
    assert lock["package"]["substituted"] == {key: placeholder}
    # the digest of the config as it ran, kept
    assert lock["private"]["config"]["keys"][key] == canonical_sha256(
        _at({**BASE, **config}, key))
    assert f"`{key}`" in (package / "README.md").read_text()
    assert verify_package(study, package) == []
    nothing_outside(study["root"], before)


def _at(config: dict, key: str):
    for part in key.split("."):
        config = config[part]
    return config


def test_the_gateway_beside_a_local_server_keeps_its_url(study):  # noqa: F811
    released, changed = sanitize_config({**BASE, "models": {"vllm": LOCAL_SERVER,
                                                            "gw": GATEWAY}})
    assert released["models"]["gw"] == GATEWAY and list(changed) == ["models.vllm.base_url"]


def test_verify_accepts_the_substitution_and_nothing_else(study):  # noqa: F811
    package = release(study, {"models": {"vllm": LOCAL_SERVER}})
    cfg = package / "config.yaml"
    for edit in ("<local server: vllm>", "<private endpoint>"):
        text = yaml.safe_load(cfg.read_text())
        text["models"]["vllm"]["base_url"] = edit.replace("vllm", "sglang")
        text["scale"] = 0.03
        cfg.write_text(yaml.safe_dump(text))
        report = refusal(study, package)
        assert "config key models.vllm.base_url: changed since the lock" in report


# ------------------------------------------------------------ a package verifies whole

def _crate(package: Path) -> dict:
    return json.loads((package / CRATE_FILE).read_text())


def _write_crate(package: Path, crate: dict) -> None:
    (package / CRATE_FILE).write_text(json.dumps(crate, indent=2))


def tamper_crate_deleted(package: Path) -> None:
    (package / CRATE_FILE).unlink()
    flip(next((package / "tables").glob("*.csv")))


def tamper_table_sha_rewritten(package: Path) -> None:
    table = next((package / "tables").glob("*.csv"))
    flip(table)
    crate = _crate(package)
    rel = table.relative_to(package).as_posix()
    for e in crate["@graph"]:
        if e.get("@id") == rel:
            e["sha256"] = sha256_file(table)
    _write_crate(package, crate)


def tamper_property_value(package: Path) -> None:
    crate = _crate(package)
    for e in crate["@graph"]:
        if e.get("@id") == "#pv-scale":
            e["value"] = 0.5
    _write_crate(package, crate)


def tamper_end_time(package: Path) -> None:
    crate = _crate(package)
    for e in crate["@graph"]:
        if "endTime" in e:
            e["endTime"] = "2020-01-01T00:00:00+00:00"
    _write_crate(package, crate)


def tamper_entry_without_id(package: Path) -> None:
    crate = _crate(package)
    crate["@graph"].append({"@type": "File", "sha256": "0" * 64})
    _write_crate(package, crate)


def tamper_file_unpinned(package: Path) -> None:
    (package / "tables/extra.csv").write_text("a\n1\n")


def tamper_snakemake_mark_with_content(package: Path) -> None:
    """Snakemake's mark where it writes it (the package's root), holding text."""
    (package / SNAKEMAKE_MARK).write_text("sk-or-v1-" + "ab12" * 16 + "\n")


def tamper_snakemake_mark_elsewhere(package: Path) -> None:
    """An empty file of the mark's name where Snakemake never writes one."""
    (package / "evidence" / SNAKEMAKE_MARK).write_text("")


TAMPERS = [
    ("crate deleted", tamper_crate_deleted,
     [f"`{CRATE_FILE}` vs package: missing", "pinned by the lock, missing from the package",
      "differs from the table rebuilt from the evidence"]),
    ("table sha rewritten in the crate", tamper_table_sha_rewritten,
     [f"`{CRATE_FILE}` vs lock (package): sha256", "differs from the table rebuilt"]),
    ("PropertyValue scale changed", tamper_property_value,
     [f"`{CRATE_FILE}` vs lock (package): sha256",
      f"`{CRATE_FILE} #pv-scale` vs config: the crate says 0.5, the config 0.03"]),
    ("endTime changed", tamper_end_time, [f"`{CRATE_FILE}` vs lock (package): sha256"]),
    ("crate entry without @id", tamper_entry_without_id,
     [f"`{CRATE_FILE}` vs JSON-LD: @graph entry"]),
    ("a file no pin names", tamper_file_unpinned,
     ["`tables/extra.csv` vs lock (package): in the package, pinned by no lock entry",
      "`tables/extra.csv` vs rebuild: in the package, not a table the evidence makes"]),
    ("a Snakemake mark holding text", tamper_snakemake_mark_with_content,
     [f"`{SNAKEMAKE_MARK}` vs lock (package): in the package, pinned by no lock entry"]),
    ("a Snakemake mark where Snakemake writes none", tamper_snakemake_mark_elsewhere,
     [f"`evidence/{SNAKEMAKE_MARK}` vs lock (package): in the package, pinned by no lock "
      "entry"]),
]


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[dict, Path]:
    """One locked study released once, verified untouched; each tamper edits a copy."""
    s = make_study(tmp_path_factory.mktemp("released"))
    package = release(s)
    assert verify_package(s, package) == []
    return s, package


def copy_of(released, tmp_path: Path) -> tuple[dict, Path]:
    s, package = released
    import shutil

    dest = tmp_path / "pkg"
    shutil.copytree(package, dest)
    return {**s, "root": tmp_path}, dest


@pytest.mark.parametrize("tamper, said", [t[1:] for t in TAMPERS], ids=[t[0] for t in TAMPERS])
def test_verify_names_each_tamper_of_a_released_package(released, tmp_path, tamper, said):
    s, package = copy_of(released, tmp_path)
    tamper(package)
    report = refusal(s, package)
    for line in said:
        assert line in report, report


def test_snakemakes_empty_mark_on_the_package_is_no_file_of_it(released, tmp_path):
    """Where Snakemake writes it (the package's root, a directory output), empty: not
    pinned, not in the crate, and the package verifies."""
    s, package = copy_of(released, tmp_path)
    (package / SNAKEMAKE_MARK).write_text("")
    assert verify_package(s, package) == []


def test_a_crate_entry_without_an_id_is_one_line_not_a_key_error(released, tmp_path):
    from foldstudy.release.crate import crate_mismatches

    _, package = copy_of(released, tmp_path)
    tamper_entry_without_id(package)
    lines = [m.line() for m in crate_mismatches(package)]
    assert len(lines) == 1 and "has no @id" in lines[0] and "\n" not in lines[0]


def test_the_lock_pins_every_file_of_the_package(released):
    _, package = released
    pins = json.loads((package / "lock.json").read_text())["package"]["files"]
    files = {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()}
    assert set(pins) == files - {"lock.json"}
    assert CRATE_FILE in pins and any(f.startswith("tables/") for f in pins)
    assert all(pins[f] == sha256_file(package / f) for f in pins)


def test_a_file_differing_from_its_lock_pin_is_never_released(study):  # noqa: F811
    root = study["root"]
    release(study)  # locked and released once
    folds = study["ev"] / "folds.csv"
    folds.write_text(folds.read_text().replace(",r,c", ",r,changed", 1))
    with pytest.raises(CrateError, match="evidence/folds.csv: sha256 .* differs from the "
                                         "lock's pin"):
        make_release("pkg", str(study["ev"]), str(study["numbers"]), str(study["lock"]), BASE,
                     str(root / "tables"), None, None, root / "checkout",
                     str(root / "release/again"), str(root / "release/again.tar.gz"),
                     str(RESOURCES / "templates/release-README.md"))
    assert not (root / "release/again.tar.gz").exists()


# ------------------------------------------------------- a published session's secrets

SECRETS = [
    ("OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA"
                            "BG5vbmUAAAAEbm9uZQ\\n-----END OPENSSH PRIVATE KEY-----",
     "Private Key", "b3BlbnNzaC1rZXktdjEAAAAA"),
    ("Slack bot token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "Slack Token", "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("password in a postgres URL", "postgres://admin:Sup3rS3cretPw@db.example.org:5432/app",
     "Basic Auth Credentials", "Sup3rS3cretPw"),
    ("Stripe live key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "Stripe Access Key",
     "4eC39HqLyjWDarjtT1zdp7dc"),
    ("Google API key", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key",
     "SyA1234567890abcdefghij"),
]


def _plant_session_text(study, text: str) -> None:  # noqa: F811
    """The session's text in a fold's carry, as the evidence rule would have published it
    (its manifest's sha256 with it)."""
    folds = study["ev"] / "folds.csv"
    folds.write_text(folds.read_text().replace(",r,c", f",r,\"kept {text} here\"", 1))
    manifest = json.loads((study["ev"] / "manifest.json").read_text())
    manifest["artifacts"]["folds.csv"]["sha256"] = sha256_file(folds)
    (study["ev"] / "manifest.json").write_text(json.dumps(manifest))


def test_a_published_sessions_secrets_are_redacted_and_counted(study, caplog):  # noqa: F811
    """Five (an OpenSSH key, a Slack token, a postgres password, a Stripe and a
    Google key) in a published session's carries: gone from every file and the tarball,
    each replaced by its kind, counted, and the package verifies. beside them a
    carry kept part of a key's body line, without its BEGIN and END lines and too short
    for any shape (the release said "scanned clean"): the text the transcript scan found
    is redacted wherever any of it appears, and the release line says what it redacted,
    where, and that each finding of the scan is accounted for."""
    import logging

    from ..test_redact import gone

    config, body = _session_with_key(study["root"])
    _plant_session_text(study, " ".join(text for _, text, _, _ in SECRETS) + " "
                        + body[2][:50])
    with caplog.at_level(logging.INFO, logger="foldstudy.release.package"):
        package = release(study, config)
    tar = gzip.decompress((study["root"] / "release/pkg.tar.gz").read_bytes())
    folds = (package / "evidence/folds.csv").read_text()
    for _, _, kind, value in SECRETS:
        assert value not in every_text(package) and value.encode() not in tar
        assert f"<redacted: {kind}>" in folds
    assert gone(every_text(package), body) and gone(tar.decode("utf-8", "replace"), body)
    n = len(SECRETS) + 1
    lock = json.loads((package / "lock.json").read_text())
    assert lock["package"]["redacted"] == {"evidence/folds.csv": n}
    assert (f"{n} secret(s) in the published session's text"
            in (package / "README.md").read_text())
    line = next(r.getMessage() for r in caplog.records if "scanned clean" in r.getMessage())
    assert f"{n} secret(s) redacted (evidence/folds.csv {n})" in line
    assert "the transcript scan's 2 finding(s) (mine 2) each found again" in line
    assert str(study["root"]) not in every_text(package)  # the transcript's path left out
    assert verify_package(study, package) == []


def _session_with_key(root: Path) -> tuple[dict, list[str]]:
    """A session whose tool result holds a (fake) OpenSSH key, folded by sweep `mine`: its
    transcript, and its fixture as the fixture rule writes it (the chunk the model read,
    the transcript scan's findings by line and kind, the transcript's sha256)."""
    from foldstudy.secrets import find_secrets

    from ..test_redact import openssh_key, transcript_line

    block, body = openssh_key()
    t = root / "atlas.jsonl"
    t.write_text(transcript_line(block) + "\n")
    fx = root / "fixtures/mine"
    fx.mkdir(parents=True, exist_ok=True)
    said = [{"line": h.line, "kind": h.kind} for h in find_secrets(t.read_text())]
    (fx / "fixture.json").write_text(json.dumps({
        "scenario": "atlas", "seed": 1, "scale": 0.0, "facts": [],
        "chunks": [f"[turn 0] user: $ cat ~/.ssh/id_ed25519\n{block}"],
        "meta": {"credential_lines": said, "session": {"transcript_sha256": sha256_file(t)}}}))
    return {"scenarios": {"atlas": {"transcript": str(t)}},
            "sweeps": {"mine": {"scenario": "atlas"}},
            "release": {"publish_sessions": True}}, body


def test_a_session_secret_the_transcript_no_longer_holds_is_refused(tmp_path):
    """A finding of the fixture's scan that its transcript no longer holds cannot be
    redacted by value: refused in one line, naming the sweep, the file and the line."""
    from foldstudy.release.redact import SecretsUnaccounted, session_secrets

    config, body = _session_with_key(tmp_path)
    t = Path(config["scenarios"]["atlas"]["transcript"])
    t.write_text('{"type": "user", "message": "nothing here"}\n')
    with pytest.raises(SecretsUnaccounted) as e:
        session_secrets(config, tmp_path / "fixtures")
    msg = str(e.value)
    assert f"sweep mine's transcript {t} is not the file its fixture was built from" in msg
    assert "2 of its 2 secret finding(s) (first: line 1, " in msg and "\n" not in msg
    assert not any(line[:16] in msg for line in body)


def test_a_compressed_rollouts_secrets_are_found_again_as_its_reader_reads_it(tmp_path):
    """A Codex rollout compressed in place (`.jsonl.zst`) is scanned decompressed, so
    its findings are found again the same way, never as the compressed bytes."""
    import zstandard

    from foldstudy.release.redact import session_secrets

    config, body = _session_with_key(tmp_path)
    t = Path(config["scenarios"]["atlas"]["transcript"])
    z = t.with_name(t.name + ".zst")
    z.write_bytes(zstandard.ZstdCompressor().compress(t.read_bytes()))
    fixture = tmp_path / "fixtures/mine/fixture.json"
    fx = json.loads(fixture.read_text())
    fx["meta"]["session"]["transcript_sha256"] = sha256_file(z)
    fixture.write_text(json.dumps(fx))
    config["scenarios"]["atlas"]["transcript"] = str(z)
    found = session_secrets(config, tmp_path / "fixtures")
    assert found.findings == {"mine": 2} and found.index.kinds_in(body[3]) == ["Private Key"]


def test_a_secret_in_an_unpublished_release_is_refused_by_kind_never_shown(
        study):  # noqa: F811
    """Outside a published session a secret is no redaction but a refusal, each by file,
    line and kind (those five on one line, so one release names them all)."""
    from foldstudy.release.scan import ReleaseRefused

    _plant_session_text(study, " ".join(text for _, text, _, _ in SECRETS))
    with pytest.raises(ReleaseRefused) as e:
        release(study)
    for _, _, kind, value in SECRETS:
        assert f"evidence/folds.csv:2: {kind}: not shown" in str(e.value)
        assert value not in str(e.value)
    assert not (study["root"] / "release/pkg.tar.gz").exists()


def test_an_own_arms_file_of_any_name_in_the_package_is_scanned(tmp_path):
    """The package's arms/ (an own-arms study's arms and prompt files) is read by the
    release scanner whatever a prompt file's suffix, as every released file is."""
    from foldstudy.release.scan import scan_tree

    (tmp_path / "arms/prompts").mkdir(parents=True)
    key = "sk-or-v1-" + "ab12" * 16
    (tmp_path / "arms/prompts/compact.prompt").write_text(f"Summarise.\nUse {key}.\n")
    found = scan_tree(tmp_path, {}, set(), [])
    assert [(f.path, f.line) for f in found] == [("arms/prompts/compact.prompt", 2)]
    assert key not in str(found[0])


def test_the_released_config_names_the_own_arms_inside_the_package():
    released, changed = sanitize_config({**BASE, "arms_file": "/home/me/mine/arms.yaml"})
    assert released["arms_file"] == "arms/arms.yaml" and changed == {
        "arms_file": "arms/arms.yaml"}


def test_a_forks_inherited_secret_is_redacted_by_value_and_a_changed_parent_refused(
        tmp_path, config_schema, resources):
    """The lines a Codex fork inherits from its parent's rollout reach the model
    as the fork's own do. The release finds the parent's secret again in the parent file
    its fixture pinned and redacts it by value; a parent that changed since is refused,
    naming the file, as a changed transcript is."""
    from foldstudy.release.redact import SecretsUnaccounted, session_secrets

    from ..study.test_sessions_config import DATA, _fork_with_secret_parent, config, load

    fork, parent, key = _fork_with_secret_parent(tmp_path)
    cfg = config({"transcript": str(fork), "facts": str(DATA / "harbor-facts.yaml")})
    fx = load(cfg, config_schema, resources).sessions["atlas"]
    out = tmp_path / "fixtures/mine"
    out.mkdir(parents=True)
    (out / "fixture.json").write_text(json.dumps({"chunks": list(fx.chunks), "meta": fx.meta}))
    assert any(key in c for c in fx.chunks)  # the inherited line is folded
    found = session_secrets(cfg, tmp_path / "fixtures")
    assert found.findings == {"mine": 1} and found.index.kinds_in(key) == ["GitHub token"]
    parent.write_text(parent.read_text(encoding="utf-8").replace(key, "ghp_gone"),
                      encoding="utf-8")
    with pytest.raises(SecretsUnaccounted) as e:
        session_secrets(cfg, tmp_path / "fixtures")
    assert f"transcript {parent} is not the file its fixture was built from" in str(e.value)


def test_a_database_sessions_secret_is_found_again_in_the_rows_its_session_reads(
        tmp_path, config_schema, resources):
    """A database has no lines: the scan reads one line a row of the session, and the
    release finds each finding again there, so it redacts it by value."""
    from foldstudy.release.redact import session_secrets

    from ..study.test_sessions_config import config, load
    from ..transcripts.test_sessions_stores import FACTS, FERRY, _db_with_key

    db, key, _ = _db_with_key(tmp_path)
    cfg = config({"transcript": str(db), "facts": str(FACTS), "session": FERRY})
    fx = load(cfg, config_schema, resources).sessions["atlas"]
    out = tmp_path / "fixtures/mine"
    out.mkdir(parents=True)
    (out / "fixture.json").write_text(json.dumps({"chunks": list(fx.chunks), "meta": fx.meta}))
    found = session_secrets(cfg, tmp_path / "fixtures")
    assert found.findings == {"mine": 1} and found.index.kinds_in(key) == ["GitHub token"]
