"""A real single-node SLURM cluster on loopback for the cluster test
(tests/workflow/test_cluster.py).

munged, slurmctld and slurmd from Debian's packages (tests/cluster/install.sh installs
them), started in the foreground as children of the test, with every key, socket, state
file and log in one temporary directory, and stopped by their pids. Nothing but 127.0.0.1
is contacted.

One file goes outside that directory: a copy of its slurm.conf at /etc/slurm/slurm.conf,
where every real cluster keeps it. Snakemake's job-step executor starts each job with
`srun` after dropping the job's SLURM_* variables (SLURM_CONF among them), so srun inside
a job finds the cluster only there. It is written only where no slurm.conf exists (or one
this helper wrote), and removed again by stop().

Without slurmdbd there is no `sacct` history, so the controller writes a job-completion
log instead (jobcomp/filetxt): one line per finished job with its id, name, state and
node, which is what the test reads to show the jobs went through SLURM.

Run by hand (as root) to get a cluster to play with until Enter is pressed:

    .venv/bin/python -m tests.support.slurm_cluster
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

# The binaries the cluster needs (tests/cluster/install.sh names their packages).
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo")
# The default partition, and a second one on the same node standing in for the partition
# that hosts a local model server (the profile pins such a model's jobs there).
PARTITION = "debug"
SERVER_PARTITION = "server"
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
# One cluster at a time on this machine (the system config above, the node, the ports):
# every SlurmCluster holds this lock from start to stop.
LOCK = Path(tempfile.gettempdir()) / "foldstudy-slurm-cluster.lock"
MARKER = "# foldstudy test cluster (tests/support/slurm_cluster.py); removed when the test ends"


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _real_memory_mb() -> int:
    """A little under this machine's memory: slurmd drains a node that has less than
    its configured RealMemory."""
    with open("/proc/meminfo") as f:
        total_kb = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
    return int(total_kb / 1024 * 0.9)


class SlurmCluster:
    """One controller and one compute node (this machine, as 127.0.0.1)."""

    def __init__(self, root: Path | None = None) -> None:
        # munged wants its socket's directory and every parent searchable by all, so the
        # cluster lives in its own directory rather than under pytest's 0700 tmp tree.
        self.root = Path(root or tempfile.mkdtemp(prefix="foldstudy-slurm-"))
        self.root.chmod(0o755)
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.jobcomp = self.root / "jobcomp.log"
        self.ctld_log = self.root / "slurmctld.log"
        self.slurmd_log = self.root / "slurmd.log"
        self.munge_socket = self.root / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen] = {}
        self._system_conf_written = False

    @property
    def env(self) -> dict[str, str]:
        """The environment under which sbatch, squeue, scancel talk to this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # -- setup --------------------------------------------------------------------

    def _write_munge_key(self) -> Path:
        mdir = self.root / "munge"
        mdir.mkdir(mode=0o755, exist_ok=True)
        mdir.chmod(0o755)  # munged refuses a socket directory others cannot search
        key = mdir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        return key

    def _write_conf(self) -> None:
        cpus = os.cpu_count() or 1
        state = self.root / "state"
        spool = self.root / "spool"
        for d in (state, spool):
            d.mkdir(exist_ok=True)
        empty_plugstack = self.root / "plugstack.conf"
        empty_plugstack.write_text("")
        # The facts that worked on this kind of machine (docs/cluster.md): linuxproc process
        # tracking, no task plugin, cons_tres over cores and memory, no accounting daemon.
        # MinJobAge keeps a finished job visible to squeue/scontrol far longer than the
        # executor's status checks.
        self.conf.write_text(f"""\
{MARKER}
ClusterName=foldstudy-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={self.root / "slurmctld.pid"}
SlurmdPidFile={self.root / "slurmd.pid"}
SlurmctldLogFile={self.ctld_log}
SlurmdLogFile={self.slurmd_log}
PlugStackConfig={empty_plugstack}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
SchedulerType=sched/backfill
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_real_memory_mb()} State=UNKNOWN
PartitionName={PARTITION} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
PartitionName={SERVER_PARTITION} Nodes={self.node} Default=NO MaxTime=INFINITE State=UP
""")

    def _install_system_conf(self) -> None:
        if SYSTEM_CONF.exists() and not SYSTEM_CONF.read_text().startswith(MARKER):
            raise RuntimeError(f"{SYSTEM_CONF} exists and is not this test's: this machine "
                               "has a SLURM of its own; run the cluster test elsewhere")
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_CONF.write_text(self.conf.read_text())
        self._system_conf_written = True

    def _remove_system_conf(self) -> None:
        if self._system_conf_written and SYSTEM_CONF.exists() and (
                SYSTEM_CONF.read_text() == self.conf.read_text()):
            SYSTEM_CONF.unlink()

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = open(self.root / f"{name}.out", "wb")  # the child keeps its own copy
        self.procs[name] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=self.root,
                                            env=self.env, start_new_session=True)
        out.close()

    def start(self, timeout: float = 60) -> SlurmCluster:
        """Start the daemons, once this process holds the machine's cluster lock: SLURM's
        system config and its node are one per machine, so a second test process (another
        pytest-xdist worker) waits here until the first one's cluster has stopped."""
        self._lock = open(LOCK, "a+")  # noqa: SIM115 (held until stop)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        key = self._write_munge_key()
        self._write_conf()
        self._install_system_conf()
        m = self.root / "munge"
        self._spawn("munged", ["munged", "--foreground", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--log-file={m / 'munged.log'}",
                               f"--pid-file={m / 'munged.pid'}",
                               f"--seed-file={m / 'munged.seed'}"])
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged to create its socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self._run("scontrol", "ping").returncode == 0, timeout,
                   "slurmctld to answer scontrol ping")
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(self._node_idle, timeout, f"node {self.node} to become idle")
        return self

    # -- queries ------------------------------------------------------------------

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=30)

    def _node_idle(self) -> bool:
        p = self._run("sinfo", "-h", "-N", "-o", "%t", "-n", self.node)  # one line a partition
        return p.returncode == 0 and set(p.stdout.split()) == {"idle"}

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}) while waiting "
                                       f"for {what}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}:\n"
                           f"{self.logs()}")

    def squeue(self) -> list[dict[str, str]]:
        """Jobs the controller holds now: id, name, state, comment (Snakemake's executor
        writes `rule_<rule>_wildcards_<values>` there)."""
        p = self._run("squeue", "-h", "-a", "-t", "all", "-o", "%i|%j|%T|%k")
        p.check_returncode()
        return [dict(zip(("id", "name", "state", "comment"), line.split("|", 3), strict=True))
                for line in p.stdout.splitlines() if line.strip()]

    def scancel(self, job_id: str) -> None:
        self._run("scancel", job_id).check_returncode()

    def completed_jobs(self) -> dict[str, dict[str, str]]:
        """Every job the controller has finished, by job id, from its completion log
        (the history sacct would give with slurmdbd): JobState, JobName, NodeList, ..."""
        if not self.jobcomp.exists():
            return {}
        jobs = {}
        for line in self.jobcomp.read_text().splitlines():
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            if "JobId" in fields:
                jobs[fields["JobId"]] = fields
        return jobs

    def logs(self, tail: int = 3000) -> str:
        """The end of each daemon's output (its log, in the foreground)."""
        parts = []
        for p in sorted(self.root.glob("*.out")):
            if p.exists():
                parts.append(f"--- {p.name}\n{p.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    # -- teardown -----------------------------------------------------------------

    def stop(self, remove: bool = True) -> None:
        """Cancel the jobs still queued or running, then stop the daemons this object
        started, by pid: slurmd, slurmctld, munged."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            try:
                live = [j["id"] for j in self.squeue()
                        if j["state"] in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")]
                for job_id in live:
                    self._run("scancel", job_id)
                deadline = time.monotonic() + 30
                while live and time.monotonic() < deadline and any(
                        j["state"] in ("RUNNING", "COMPLETING") for j in self.squeue()):
                    time.sleep(0.5)
            except (subprocess.SubprocessError, OSError):
                pass  # the daemons go down below all the same
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._remove_system_conf()
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)
        if lock := getattr(self, "_lock", None):
            lock.close()  # releases the machine's cluster lock
            self._lock = None

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    cluster = SlurmCluster().start()
    try:
        print(f"SLURM up in {cluster.root}; use it with\n  export SLURM_CONF={cluster.conf}")
        input("Enter stops it. ")
    finally:
        cluster.stop()
