"""A published session's secrets, redacted by value (paper §7, docs/design.md §3: a transcript
is "never in a release unless asked, and then with secrets redacted").

By shape alone a release missed what a model copied in part: a carry that kept a
private key's base64 body line without its BEGIN and END lines was released "scanned
clean". So the secrets are taken from where they came from: the transcript scan's
findings (each fixture's `credential_lines`, by line and kind), found again in the
transcript the lock pinned, and the chunks the model read. The text of each (each line
of a key block, its body lines too) is redacted wherever any of it appears in the
package's evidence (foldstudy/secrets.py's SecretIndex), beside the shapes; and the
package scan then looks for that text in every file, so "scanned clean" means that
nothing of it is left and every finding was found again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import StudyError
from ..io import read_json, sha256_file
from ..secrets import SecretIndex, SecretText, find_secrets, redact_secrets, secret_texts
from ..transcripts import SessionError, scan_text, session_file
from ..transcripts.base import DEFAULT_MAX_MB

log = logging.getLogger(__name__)


class SecretsUnaccounted(StudyError, RuntimeError):
    """A transcript finding the release cannot find again, so cannot redact by value."""


@dataclass
class SessionSecrets:
    """The secrets of the study's own sessions: their text to redact and look for, and
    the transcript scan's findings per sweep (each found again in its transcript)."""

    index: SecretIndex = field(default_factory=lambda: SecretIndex([]))
    findings: dict[str, int] = field(default_factory=dict)


def own_session_sweeps(config: dict[str, Any]) -> list[str]:
    """The sweeps that fold one of the user's own sessions (config `scenarios`)."""
    own = set(config.get("scenarios") or {})
    return [s for s, sw in config.get("sweeps", {}).items() if sw.get("scenario") in own]


def session_secrets(config: dict[str, Any], fixtures: str | Path | None) -> SessionSecrets:
    """Every secret of the sessions the study folded: for each own-session sweep with a
    fixture (none in evidence mode: the package was redacted when it was released), the
    texts of its chunks' secrets and of its transcript scan's findings. A finding that
    the transcript no longer holds is refused (SecretsUnaccounted), naming the file."""
    texts: list[SecretText] = []
    findings: dict[str, int] = {}
    for sweep in own_session_sweeps(config):
        path = Path(fixtures) / sweep / "fixture.json" if fixtures else None
        if path is None or not path.is_file():
            continue
        fx = read_json(path)
        texts += secret_texts("\n".join(fx.get("chunks") or []))
        meta = fx.get("meta") or {}
        session = meta.get("session") or {}
        own = config["scenarios"][config["sweeps"][sweep]["scenario"]]
        max_mb = float(own.get("max_mb") or DEFAULT_MAX_MB)
        # the transcript, then each file its main thread inherited (a Codex fork's parent
        # rollouts), each finding found again in the file its fixture pinned
        files = [(str(transcript_file(own)), session.get("transcript_sha256"),
                  meta.get("credential_lines") or [], own.get("session"))]
        files += [(f["path"], f.get("sha256"),
                   [c for c in meta.get("inherited_credential_lines") or []
                    if c.get("file") == f["path"]], None)
                  for f in session.get("inherited") or []]
        for path, sha, said, named in files:
            if said:
                texts += _found_again(path, max_mb, said, sha, sweep, named)
                findings[sweep] = findings.get(sweep, 0) + len(said)
    return SessionSecrets(SecretIndex(texts), findings)


def transcript_file(scenario: dict[str, Any]) -> Path:
    """The file a scenario's transcript names (a folder of session files names it by
    `session:`), or the path as written where the folder no longer holds that session:
    then it is missing, as a deleted file is."""
    try:
        return session_file(scenario["transcript"], scenario.get("session"))
    except SessionError:
        return Path(scenario["transcript"]).expanduser()


def _found_again(transcript: str, max_mb: float, said: list[dict[str, Any]],
                 sha256: str | None, sweep: str, session: str | None = None
                 ) -> list[SecretText]:
    """The texts of a session file's secrets, each finding of the fixture's scan found
    again in the file (the one its fixture was built from, by sha256), read as its
    reader reads it (a `.zst` rollout decompressed, a database's session one line a row
    read)."""
    p = Path(transcript).expanduser()
    why = ("is gone" if not p.is_file() else "is not the file its fixture was built from "
           "(sha256 differs)" if sha256_file(p) != sha256 else "")
    text = scan_text(p, max_mb, session) if not why else ""
    again = {(h.line, h.kind) for h in find_secrets(text)}
    lost = [c for c in said if (c.get("line"), c.get("kind")) not in again]
    if lost:
        raise SecretsUnaccounted(
            f"release refused: sweep {sweep}'s transcript {transcript} "
            f"{why or 'no longer holds what its scan found'}: {len(lost)} of its "
            f"{len(said)} secret finding(s) (first: line {lost[0].get('line')}, "
            f"{lost[0].get('kind')}) cannot be redacted by value; restore the file the lock "
            "pinned, or rebuild the study's fixtures from the file as it is")
    return secret_texts(text)


def redact_package(dest: Path, secrets: SessionSecrets) -> dict[str, int]:
    """A published session's text (release.publish_sessions): every secret in the
    package's evidence redacted, by shape and by the value the session's scan found, by
    file (how many in each)."""
    out = {}
    for p in sorted((dest / "evidence").glob("*.csv")):
        text, n = redact_secrets(p.read_text(encoding="utf-8"))
        text, m = secrets.index.redact(text)
        if n + m:
            p.write_text(text, encoding="utf-8")
            out[p.relative_to(dest).as_posix()] = n + m
            log.warning("%s: %d secret(s) of the published session redacted (%d by shape, "
                        "%d by the text the session's scan found; kind named, value gone)",
                        p.relative_to(dest), n + m, n, m)
    return out


def accounted(secrets: SessionSecrets, redacted: dict[str, int]) -> str:
    """What the release line says of the session's secrets: what was redacted, where,
    and that each finding of the transcript scan is accounted for."""
    where = ", ".join(f"{k} {n}" for k, n in sorted(redacted.items())) or "no file"
    line = f"{sum(redacted.values())} secret(s) redacted ({where})"
    if secrets.findings:
        line += (f"; the transcript scan's {sum(secrets.findings.values())} finding(s) "
                 f"({', '.join(f'{s} {n}' for s, n in sorted(secrets.findings.items()))}) "
                 "each found again and its text in no file of the package")
    return line
