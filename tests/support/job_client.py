"""What a forked Snakemake run of the tests starts in place of `python SCRIPT` for a job.

snakemake_server.py writes a small executable that imports this module (its interpreter
started with -IS, so it imports nothing but the standard library) and makes it the
forked run's sys.executable, the interpreter Snakemake's `script:` directive starts a job
with (`{sys.executable} {script}`). Given one argument, a script Snakemake wrote (its first
line is Snakemake's preamble marker), it asks the server to fork the job from a Python
that has already imported what jobs import, and stands in for it until it ends: the
signals it is sent go to the job, its exit code (or the signal that ended it) is the
job's. Given anything else, or when the server answers that the job's environment is not
its own, it becomes the real interpreter with the same arguments (os.execv), so the job
or command runs exactly as it would have. Why: procs.py's module docstring.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

PREAMBLE = b"######## snakemake preamble start"
# What a job may be sent that it would act on itself (Snakemake terminates a job it
# cancels; a terminal's Ctrl-C reaches the whole group).
RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
           signal.SIGUSR2)


def _is_job(args: list[str]) -> bool:
    if len(args) != 1:
        return False
    try:
        with open(args[0], "rb") as f:
            return f.read(len(PREAMBLE)) == PREAMBLE
    except OSError:
        return False


def main(python: str, path: str) -> None:
    args = sys.argv[1:]
    if not _is_job(args):
        os.execv(python, [python, *args])
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:  # the server has gone: the job starts afresh
        os.execv(python, [python, *args])
    request = {"script": os.path.abspath(args[0]), "cwd": os.getcwd(),
               "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    replies = conn.makefile("rb")
    reply = json.loads(replies.readline() or b'{"fresh": "no answer"}')
    if "fresh" in reply:
        conn.close()
        os.execv(python, [python, *args])
    pid = reply["pid"]
    for sig in RELAYED:
        signal.signal(sig, lambda sig, _frame: os.kill(pid, sig))
    line = replies.readline()
    # no answer: the server's handler was killed, and took the job with it
    code = json.loads(line)["code"] if line else -signal.SIGKILL
    if code < 0:  # ended by a signal: so does this process, as the job's shell expects
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)
