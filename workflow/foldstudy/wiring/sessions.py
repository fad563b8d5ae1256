"""What the fixture jobs are made from: each sweep's scenario or session of the config's own.

The inputs and params of rules/fixtures.smk, as `W.sessions.<method>`: a sweep's fixture
params, a session's transcript and the files it inherited, declared as inputs so editing
one reruns its fixture and everything after it.
"""

from __future__ import annotations

import os
from typing import Any

from ..study.session_checks import session_content
from ..transcripts import session_file
from .core import Core


class Sessions:
    """Fixtures and sessions (rules/fixtures.smk), read from the core alone."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def own_session(self, sweep: str) -> dict[str, Any] | None:
        """The config's own session scenario this sweep runs, or None."""
        config = self.core.config
        return config["scenarios"].get(config["sweeps"][sweep]["scenario"])

    def fixture_params(self, sweep: str) -> dict[str, Any]:
        sw = self.core.config["sweeps"][sweep]
        own = self.own_session(sweep)
        if own is not None:  # scale does not apply: the session's size is the transcript's
            return {"seed": sw["seed"], "session": {"name": sw["scenario"], **own}}
        fx = {"scenario": sw["scenario"], "seed": sw["seed"], "scale": self.core.study.scale}
        # control facts only where configured: a sweep without them keeps its params, so
        # nothing of it reruns
        tail = (sw.get("controls") or {}).get("tail")
        return {**fx, "controls": tail} if tail else fx

    def fixture_content(self, sweep: str) -> str | None:
        """A session sweep's transcript by content (study/session_checks.py); None else."""
        scenario = self.core.config["sweeps"][sweep]["scenario"]
        return session_content(self.core.study.sessions.get(scenario))

    def fixture_session_inputs(self, sweep: str) -> dict[str, Any]:
        """A session sweep's transcript and facts file, declared so editing either reruns
        its fixture and everything after it."""
        own = self.own_session(sweep)
        if own is None:
            return {}
        scenario = self.core.config["sweeps"][sweep]["scenario"]
        return {"transcript": str(session_file(own["transcript"], own.get("session"))),
                "own_facts": os.path.expanduser(own["facts"]),
                "inherited": self.session_inherited(scenario)}

    def session_inherited(self, scenario: str) -> list[str]:
        """The files a session's main thread inherited (a Codex fork's parent rollouts), as
        the config check read them: inputs like the transcript, so editing one reruns."""
        fx = self.core.study.sessions.get(scenario)
        return [f["path"] for f in fx.meta["session"]["inherited"]] if fx is not None else []

    def session_transcript(self, scenario: str) -> str:
        """The session's file (a folder of session files names it by `session:`)."""
        own = self.core.config["scenarios"][scenario]
        return str(session_file(own["transcript"], own.get("session")))

    def session_manifests(self) -> list[str]:
        """The manifests of the sweeps that fold a session of the config's own: the
        summary reports each fact's fate and the session's own compaction as a baseline."""
        if self.core.evidence_mode:
            return []
        return [f"results/fixtures/{s}/manifest.json" for s in self.core.config["sweeps"]
                if self.own_session(s) is not None]
