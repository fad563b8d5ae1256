"""Headless Chromium for tests: a page served from a loopback http.server, its DOM after
the page's own scripts ran (--dump-dom), or a screenshot. No network beyond loopback."""

from __future__ import annotations

import contextlib
import functools
import http.server
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from . import system
from .procs import run_group

# Chromium as root in a container: no sandbox, no GPU, and none of the background
# connections (without these it tries the network and its connections are refused).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars")


def chromium() -> str:
    """The chromium binary; a test without it skips (fails in CI: support/system.py)."""
    system.require("browser")
    return system.chromium_binary()


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """http://127.0.0.1:<port>/ serving directory, for the duration of the block."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True,
                         kwargs={"poll_interval": 0.02})  # shutdown() waits for a poll
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _run(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
        # Its own group: a renderer a timed-out Chromium leaves behind goes with it.
        return run_group(cmd, timeout=timeout)


def dump_dom(url: str, budget_ms: int = 5000) -> str:
    """The page's DOM after its scripts ran for budget_ms of virtual time."""
    p = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url])
    assert p.returncode == 0 and p.stdout.strip(), p.stderr[-2000:]
    return p.stdout


def screenshot(url: str, out: Path, size: str = "1200,1600") -> Path:
    p = _run([f"--window-size={size}", f"--screenshot={out}", url])
    assert p.returncode == 0 and out.is_file(), p.stderr[-2000:]
    return out
