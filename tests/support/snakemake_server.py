"""A Python that has imported Snakemake once and forks a run of it for each request.

Started by procs.py (`python snakemake_server.py SOCKET`), one per test process. Why and
what it keeps equal to `python -m snakemake`: procs.py's module docstring.

The protocol, one connection per run: the client sends one JSON line
{"args": [...], "cwd": ..., "env": {...}} with three file descriptors (stdin, stdout,
stderr); the server answers {"pid": N} once the run has started, in its own session
(N leads its process group), then {"code": C}, C being what Popen.returncode would be.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import snakemake
import snakemake.cli

MAIN = str(Path(snakemake.__file__).with_name("__main__.py"))
ROOT = Path(__file__).resolve().parents[2]


def _warm() -> None:
    """Import here what a dry run of the default study imports once it has started (the
    rest of Snakemake, its plugins, the package, requests, the secret scanner): each
    forked run then finds them imported. The dry run itself runs in a child, so none of
    its state is kept, only the modules' names."""
    work = tempfile.mkdtemp(prefix="smk-warm-")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        before = set(sys.modules)
        with contextlib.suppress(BaseException):
            # the target before the flags: --quiet takes values, and would read it as one
            snakemake.cli.main(["-s", str(ROOT / "Snakefile"), "--directory", work,
                                "results/tables", "-n", "--quiet"])
        os.write(write, "\n".join(m for m in sys.modules if m not in before).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        names = f.read().decode().split("\n")
    os.waitpid(pid, 0)
    shutil.rmtree(work, ignore_errors=True)
    for name in filter(None, names):
        with contextlib.suppress(Exception):  # a module only a run's own state can import
            importlib.import_module(name)
    _collect_plugins()


def _collect_plugins() -> None:
    """Make each of Snakemake's plugin registries here. Each is a singleton that, when
    first made, walks every module on sys.path for its plugins (about 50 ms a run); the
    forked runs find them made, with what a fresh run would find on the same path."""
    from snakemake_interface_common.plugin_registry import PluginRegistryBase

    todo = list(PluginRegistryBase.__subclasses__())
    while todo:
        registry = todo.pop()
        todo += registry.__subclasses__()
        registry()


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _become_the_run(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: the process state `python -m snakemake ARGS` would start with
    (session, standard streams, directory, environment, sys.path[0], sys.argv), then
    Snakemake's own entry point. Its SystemExit is not caught here: it ends this process
    the way it ends an interpreter (non-daemon threads joined, atexit run, streams
    flushed)."""
    os.setsid()
    for fd, standard in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, standard)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # what -m puts first
    sys.argv = [MAIN, *request["args"]]
    snakemake.cli.main(request["args"])


def _handle(conn: socket.socket) -> None:
    """In a child of the server: start the run, report its pid, wait, report its code."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    if len(fds) != 3:  # not a client of procs.py, or one that gave up: nothing to run
        os._exit(1)
    request = json.loads(message)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become_the_run(request, fds)
        return
    for fd in fds:
        os.close(fd)
    try:
        _send(conn, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _send(conn, {"code": os.waitstatus_to_exitcode(status)})
    except OSError:
        pass  # the client has gone (a timeout, an interrupted test): nobody to tell
    finally:
        os._exit(0)


def serve(path: str) -> None:
    """Accept runs until the socket's file is removed or the process that started this
    one is gone."""
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    listener.settimeout(1.0)
    _warm()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while os.path.exists(path) and os.getppid() == parent:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            conn = None
        while True:  # reap handlers that have finished
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break
        if conn is None:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            listener.close()
            _handle(conn)  # returns only in the run's process
            return
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
