"""A Python that has imported Snakemake, and what the workflow's jobs import, once, and
forks a run of Snakemake, or a job of such a run, for each request.

Started by procs.py (`python snakemake_server.py SOCKET`), one per test process. Why and
what it keeps equal to `python -m snakemake` and to `python SCRIPT`: procs.py's module
docstring.

The protocol, one connection per request: the client sends one JSON line with three file
descriptors (stdin, stdout, stderr). A run's line is {"args": [...], "cwd": ..., "env":
{...}} (procs.py); a job's is {"script": ..., "cwd": ..., "env": {...}} (job_client.py).
The server answers {"pid": N} once the run or job has started, in its own session (N
leads its process group), then {"code": C}, C being what Popen.returncode would be; or,
to a job whose environment differs from the server's where imports read it,
{"fresh": WHY}, and the client starts the job afresh.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import gc
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import snakemake
import snakemake.cli

MAIN = str(Path(snakemake.__file__).with_name("__main__.py"))
ROOT = Path(__file__).resolve().parents[2]
# What the interpreter, and the libraries jobs import, read from the environment once, as
# they start or are imported (numpy's BLAS its threads, matplotlib its config and cache
# folders): a job whose values differ from the server's is started afresh.
IMPORT_TIME = ("PYTHON", "LANG", "LC_", "OMP_", "OPENBLAS_", "GOTO_", "MKL_", "NUMEXPR_",
               "VECLIB_", "MPL", "HOME", "XDG_")
# Snakemake's shell gives each job these, set to the job's threads (snakemake/shell.py).
# The tests' runs grant every job one thread (procs.py MODEL_THREADS), so the server
# imports with the same.
THREAD_VARS = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
# The executable a forked run starts its jobs with (job_client.py): its interpreter
# imports nothing but the standard library.
CLIENT = """#!{python} -IS
import sys
sys.path.insert(0, {support!r})
from job_client import main
main({python!r}, {socket!r})
"""
# Set in a run's environment (to anything), its jobs are started afresh: to compare the
# two (bench/), or to rule the server out when a job misbehaves only in the tests.
FRESH_JOBS = "FOLDSTUDY_FRESH_JOBS"
_client = ""  # that executable's path, once serve() has written it
_env_at_import: dict[str, str] = {}


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


def _job_modules() -> set[str]:
    """Every module of the package, what the job scripts' preamble imports, and every
    module that the package or a job script names in an import statement, at the top or
    inside a function (pandas, scipy.stats, matplotlib.pyplot, llama_cpp: most of a job's
    start is importing them). A name that is not a module (`from x import f` gives x.f)
    simply fails to import."""
    names = {"pickle", "snakemake.logging", "snakemake.iocontainers", "snakemake.shell"}
    code = ROOT / "workflow"
    for path in [*(code / "foldstudy").rglob("*.py"), *(code / "scripts").glob("*.py")]:
        if path.parent.name != "scripts":
            parts = path.relative_to(code).with_suffix("").parts
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _warm_jobs() -> None:
    """Import what the jobs import."""
    for name in sorted(_job_modules()):
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _unlike_here(env: dict[str, str]) -> str:
    """The variables, read at start or import, in which env differs from the server's."""
    keys = {k for k in {*env, *_env_at_import} if k.startswith(IMPORT_TIME)}
    return ", ".join(sorted(k for k in keys if env.get(k) != _env_at_import.get(k)))


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _take_over(request: dict[str, Any], fds: list[int]) -> None:
    """In a forked child: what a new process started by the client would have, in its own
    session: the client's standard streams, directory and environment, and the temporary
    folder read from TMPDIR at first use."""
    os.setsid()
    for fd, standard in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, standard)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None


def _become_the_run(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: the process state `python -m snakemake ARGS` would start with
    (_take_over, sys.path[0], sys.argv), then Snakemake's own entry point, whose
    SystemExit ends this process as the interpreter would end it (_leave)."""
    _take_over(request, fds)
    sys.path[0] = os.getcwd()  # what -m puts first
    sys.argv = [MAIN, *request["args"]]
    if _client and not request["env"].get(FRESH_JOBS):
        sys.executable = _client  # its script jobs are forked from the server too
    try:
        snakemake.cli.main(request["args"])
    except SystemExit as e:
        _leave(e.code)
    _leave(0)


def _become_the_job(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: the process state `python SCRIPT` would start with
    (_take_over, sys.path[0], sys.argv), then the script as __main__. An exception that
    escapes it is printed as the interpreter would print it, from the script's own
    frames, and ends this process with status 1; SystemExit and Ctrl-C end it as they end
    an interpreter."""
    _take_over(request, fds)
    script = request["script"]
    sys.argv = [script]
    sys.path[0] = os.path.dirname(script)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        _leave(e.code)
    except KeyboardInterrupt:
        raise  # the interpreter ends by the signal itself
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        if tb is not None:
            e.__traceback__ = tb  # what is printed, whatever the hook is given
        sys.excepthook(type(e), e, e.__traceback__)
        _leave(1)
    _leave(0)


def _leave(code: object) -> None:
    """End a forked run or job as the interpreter ends (its non-daemon threads joined, the
    atexit functions run, what is left unreachable collected, the standard streams
    flushed, SystemExit's code turned into a status), without tearing down every object
    the server imported: that touched each of their pages, and copied them, 0.13 s a
    process, most of it the system's."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_Finalize calls first
    atexit._run_exitfuncs()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status & 0xFF)


def _wait_job(conn: socket.socket, pid: int) -> int:
    """The job's wait status. Should its client go first (killed with its Snakemake run's
    group, or by Snakemake), the job's session goes too, as the job would have gone with
    the group; so does whatever the job left running once it ends."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(conn, select.POLLIN | select.POLLHUP)
    while True:
        ready = {fd for fd, _ in poller.poll()}
        if pidfd in ready or (conn.fileno() in ready and not conn.recv(1)):
            break
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def _handle(conn: socket.socket) -> None:
    """In a child of the server: start the run or job, report its pid, wait, report its
    code."""
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    if len(fds) != 3:  # not a client of procs.py, or one that gave up: nothing to run
        os._exit(1)
    request = json.loads(message)
    job = "script" in request
    if job and (unlike := _unlike_here(request["env"])):
        with contextlib.suppress(OSError):
            _send(conn, {"fresh": unlike})
        os._exit(0)
    pid = os.fork()
    if pid == 0:
        conn.close()
        (_become_the_job if job else _become_the_run)(request, fds)
        return
    for fd in fds:
        os.close(fd)
    try:
        _send(conn, {"pid": pid})
        status = _wait_job(conn, pid) if job else os.waitpid(pid, 0)[1]
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
    # import with the thread counts the tests' jobs are given
    os.environ.update(dict.fromkeys(THREAD_VARS, "1"))
    _env_at_import.update((k, v) for k, v in os.environ.items() if k.startswith(IMPORT_TIME))
    _warm()
    _warm_jobs()
    home = os.path.dirname(path)
    if not os.statvfs(home).f_flag & os.ST_NOEXEC:  # else every job starts afresh
        global _client
        _client = os.path.join(home, "python")
        with open(_client, "w", encoding="utf-8") as f:
            f.write(CLIENT.format(python=sys.executable, socket=path,
                                  support=str(Path(__file__).parent)))
        os.chmod(_client, 0o755)
    gc.freeze()  # what the server imported stays where it is: each fork copies less
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
