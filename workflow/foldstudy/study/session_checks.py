"""The config's own session scenarios, checked before any job: each
transcript read, and built into its fixture where a sweep runs it (the reader is
study/sessions.py; study/config.py's load_study calls this)."""

from __future__ import annotations

from typing import Any

from .fixture_types import Fixture
from .schema import builtin_scenarios


def session_fixtures(cfg: dict[str, Any], schema: dict[str, Any]
                     ) -> tuple[dict[str, Fixture], list[str], list[str]]:
    """Every session scenario read and, where a sweep runs it, built into its fixture,
    before any job (every bad input refused by name, nothing written).

    Returns (scenario -> fixture, problems, warnings); a credential-shaped string in a
    transcript is a warning by file and line, never its value. In evidence mode
    (config `evidence`) no transcript is read: nothing is folded.
    """
    from ..transcripts import SessionError
    from .sessions import (
        SessionSpec,
        build_session_fixture,
        credential_entries,
        credential_warnings,
        inherited_credential_lines,
    )

    builtin = builtin_scenarios(schema)
    used = {sw["scenario"]: sw["seed"] for sw in cfg["sweeps"].values()}
    out: dict[str, Fixture] = {}
    problems, warnings = [], []
    for name, entry in (cfg.get("scenarios") or {}).items():
        where = f"config.scenarios.{name}"
        if name in builtin:
            problems.append(f"{where}: {name!r} is a built-in scenario; name your session "
                            "otherwise (e.g. its project)")
            continue
        if cfg.get("evidence"):
            # evidence mode folds nothing: the package's rows suffice, and its transcript
            # was left out of it (`<local path: name>`) or lies on another machine
            continue
        spec = SessionSpec.of(name, entry)
        try:
            if name in used:
                fx = build_session_fixture(spec, used[name], where)
                out[name] = fx
                meta = fx.meta
            else:  # read, so a broken transcript is named before its candidates rule
                tr = spec.read(where)
                meta = {"credential_lines": credential_entries(tr),
                        "inherited_credential_lines": [
                            {"file": f, "line": n, "kind": k}
                            for f, n, k in inherited_credential_lines(tr, spec.max_mb)]}
        except SessionError as e:
            problems.append(f"{where}: {e}")
            continue
        warnings += credential_warnings(f"{where}.transcript: ", spec.transcript, meta)
    return out, problems, warnings


def session_content(fixture: Fixture | None) -> dict[str, Any] | None:
    """What a session fixture was made from, by content: the transcript's sha256 and each
    inherited file's (a Codex fork's parent rollouts), as the config check read them.
    The fixture rule takes it as a param, so an edit that keeps a file's size and mtime
    (`os.utime` back, a restore from a backup, a sync tool) still reruns the fixture:
    Snakemake reruns on a changed param, and the session cache keys by content, so the
    digest costs a hash, not a parse. None for a built-in scenario."""
    if fixture is None:
        return None
    session = fixture.meta["session"]
    return {"transcript_sha256": session["transcript_sha256"],
            "inherited": [f["sha256"] for f in session.get("inherited") or []],
            # a database's rows read, which its file's sha256 misses while they sit in
            # the write-ahead log (sessions.store_meta)
            **({"rows_sha256": session["rows_sha256"]} if "rows_sha256" in session else {})}
