"""A dry run on a ~30 MB own session, cold and warm, against the default study's.

    .venv/bin/python bench/session_dry_run.py [--mb 30]

Every Snakemake command checks the config before it plans a job, and that check reads each
session scenario's transcript; a parsed session is cached by the file's content under
.snakemake/foldstudy/sessions/ (study/session_cache.py). This bench writes a Claude Code
2.1 session of about `--mb` megabytes (user prompts, assistant text, Read and Bash tool
calls and their results, chained by parentUuid), and a study that is the default one
(config/config.yaml: one model, arms j and m, two repeats) folding that session instead
of the built-in scenario. It times `snakemake -n` of that study cold (the cache emptied
before each run: the file is parsed and scanned for secrets) and warm (the cache kept),
and the default study's `snakemake -n`, warm and default in turn (common.paired_walls).
Prints the warm ratio last. Goal: the warm ratio within 1.3.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from common import ROOT, cli, paired_walls, snakemake

GOAL = 1.3
SESSION_ID = "0d6c1f4e-8a2b-4c3d-9e5f-7a1b2c3d4e5f"
FACTS = {"the listener port": "47213", "the pane module": "lib/app_web/live/pane_live.ex",
         "the on-call reviewer": "@dana.okafor"}


def log_lines(i: int) -> str:
    """A tool result's text: a Read of a source file, numbered as the Read tool does."""
    body = [f"defmodule AppWeb.Pane{i}Live do", "  use AppWeb, :live_view",
            *(f"  def handle_event(\"step_{j}\", params, socket), do: {{:noreply, "
              f"assign(socket, :step, {i * j})}}" for j in range(40)), "end"]
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(body, start=1))


def write_session(path: Path, mb: float) -> int:
    """A Claude Code session file of about `mb` megabytes; its record count."""
    target, size, n, parent = mb * 1_000_000, 0, 0, None
    with path.open("w", encoding="utf-8") as f:
        while size < target:
            k = n // 4
            if n % 4 == 0:
                kind, content = "user", (
                    f"Step {k}: the pane view stalls again; the listener is on port 47213 "
                    "and @dana.okafor reviews lib/app_web/live/pane_live.ex." if k == 0
                    else f"Step {k}: check pane {k} and its handlers.")
            elif n % 4 == 1:
                kind, content = "assistant", [{"type": "tool_use", "id": f"toolu_{n:08d}",
                                               "name": "Read", "input": {
                                                   "file_path": f"/home/dev/app/lib/p{k}.ex"}}]
            elif n % 4 == 2:
                kind, content = "user", [{"tool_use_id": f"toolu_{n - 1:08d}",
                                          "type": "tool_result", "content": log_lines(k)}]
            else:
                kind, content = "assistant", [{"type": "text", "text": (
                    f"Pane {k} assigns its step in handle_event/3; nothing blocks there.")}]
            uid = str(uuid.UUID(int=n + 1))
            rec = {"parentUuid": parent, "isSidechain": False, "userType": "external",
                   "cwd": "/home/dev/app", "sessionId": SESSION_ID, "version": "2.1.42",
                   "type": kind, "uuid": uid, "timestamp": "2026-11-30T09:00:00.000Z",
                   "message": {"role": kind, "content": content}}
            line = json.dumps(rec, ensure_ascii=False) + "\n"
            f.write(line)
            size += len(line.encode())
            n, parent = n + 1, uid
    return n


def session_config(tmp: Path, mb: float) -> tuple[Path, int]:
    """The default study folding a generated session instead of its built-in scenario."""
    import yaml

    session, facts = tmp / f"{SESSION_ID}.jsonl", tmp / "facts.yaml"
    records = write_session(session, mb)
    facts.write_text(yaml.safe_dump({"facts": [{"label": k, "value": v}
                                               for k, v in FACTS.items()]}), encoding="utf-8")
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))
    for model in cfg["models"].values():
        model["n_ctx"] = 4_000_000  # a context that holds a fifth of the session
    cfg["scenarios"] = {"big": {"transcript": str(session), "facts": str(facts), "folds": 5}}
    for sweep in cfg["sweeps"].values():
        sweep["scenario"] = "big"
    path = tmp / "session.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path, records


def main(mb: float) -> None:
    with tempfile.TemporaryDirectory(prefix="foldstudy-bench-") as tmp_:
        tmp = Path(tmp_)
        config, records = session_config(tmp, mb)
        size = (tmp / f"{SESSION_ID}.jsonl").stat().st_size / 1e6
        work, default = tmp / "session-work", tmp / "default-work"
        work.mkdir()
        default.mkdir()
        cache = work / ".snakemake" / "foldstudy" / "sessions"

        def session_run() -> None:
            snakemake(work, "-n", "--configfile", str(config))

        def default_run() -> None:
            snakemake(default, "-n", "--configfile", str(ROOT / "config/config.yaml"))

        colds = []
        for _ in range(3):
            shutil.rmtree(cache, ignore_errors=True)
            t0 = time.perf_counter()
            session_run()
            colds.append(time.perf_counter() - t0)
        cold = statistics.median(colds)
        warm, base, ratio = paired_walls(session_run, default_run)
    print(f"session: {size:.1f} MB, {records} Claude Code records")
    print(f"session study dry run, cold (parsed and scanned): {cold:.2f} s "
          f"({cold / base:.2f} x the default study's)")
    print(f"session study dry run, warm (cache): {warm:.2f} s; default study {base:.2f} s")
    print(f"warm ratio (session / default, the median of 5 pairs run in turn): {ratio:.2f} "
          f"against the {GOAL} goal: {'met' if ratio <= GOAL else 'MISSED'}")


if __name__ == "__main__":
    parser = cli(__doc__)
    parser.add_argument("--mb", type=float, default=30.0, help="the session's size (MB)")
    main(parser.parse_args().mb)
