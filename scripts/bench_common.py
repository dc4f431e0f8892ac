"""Shared pieces of the benchmarks: a virtual cluster of their own, and timing."""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VCLUSTER = ROOT / "scripts" / "vcluster"


class Cluster:
    def __init__(self, n: int, prefix: str, names: str, subnet: str):
        self.n, self.prefix, self.names, self.subnet = n, prefix, names, subnet
        self.state = Path("/var/lib/nccldiag-vcluster") / prefix

    def _run(self, *args: str, timeout: float = 0) -> None:
        # bringing up or down takes about 0.1 to 0.3 s per node on 2 shared cores (32 at a time)
        timeout = timeout or 300 + self.n
        subprocess.run([str(VCLUSTER), *args, "--prefix", self.prefix, "--names", self.names,
                        "--subnet", self.subnet], check=True, timeout=timeout,
                       stdout=subprocess.DEVNULL)

    def __enter__(self) -> "Cluster":
        self._run("up", str(self.n))
        return self

    def __exit__(self, *exc) -> None:
        self._run("down")

    def fault(self, node: str, action: str) -> None:
        """``scripts/vcluster fault NODE ACTION`` (sshd-freeze, sshd-thaw, ...)."""
        self._run("fault", node, action, timeout=60)

    def login(self, mode: str, seconds: float = 0.0) -> None:
        """The nodes' logins: "plain", "shared-home" (each works ``seconds`` under one lock of the shared
        home, as pyenv's init does: logins started together queue on it), or "admin" (each runs the admin's
        own ~/.bashrc, a copy of the host's, on the shared home)."""
        args = ["login", mode] + ([f"{seconds:g}"] if mode == "shared-home" else [])
        self._run(*args)

    def count_logins(self) -> Path:
        """Makes every login of the nodes write the node's name to the file returned (after ``login``: the
        line goes at the end of the nodes' ~/.bashrc, which is rewritten in place)."""
        log = self.state / "logins.log"
        with open(self.state / "bashrc", "a") as f:  # in place: the file is bind-mounted on every node
            f.write(f"printf '%s\\n' \"$HOSTNAME\" >> {log}\n")
        return log

    @property
    def hostfile(self) -> str:
        return str(self.state / "hostfile")

    @property
    def ssh_config(self) -> str:
        return str(self.state / "ssh" / "config")

    @property
    def hosts(self):
        return Path(self.hostfile).read_text().split()

    def address(self, host: str) -> str:
        """The node's address, as scripts/vcluster wrote it (hosts.block: address, name)."""
        for line in (self.state / "hosts.block").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[1] == host:
                return fields[0]
        raise KeyError(host)


def cache_bytecode(tree: Path = ROOT) -> None:
    """Compiles nccldiag's modules once, as an installed nccldiag has them: where PYTHONDONTWRITEBYTECODE is set
    (as in the environment these benchmarks were written in) every run, and every worker process, would
    compile them again, about a second of CPU each."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "nccldiag")], check=True, timeout=600,
                   stdout=subprocess.DEVNULL,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})


def timed(argv, timeout: float = 600, stdin=None, env=None):
    """``(seconds, CompletedProcess)`` for one run of ``argv``."""
    t0 = time.monotonic()
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    return time.monotonic() - t0, r


def median(xs):
    return statistics.median(xs)


def nccldiag_argv(*args: str):
    return [sys.executable, "-m", "nccldiag", *args]


def run_measured(argv, timeout: float = 1800):
    """``(seconds, returncode, stdout, stderr, peak RSS in MiB)`` of one process (its own wait4 rusage)."""
    import tempfile

    t0 = time.monotonic()
    out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - t0
    out_f.seek(0)
    err_f.seek(0)
    return (elapsed, os.waitstatus_to_exitcode(status), out_f.read().decode(), err_f.read().decode(),
            usage.ru_maxrss / 1024)


def tree_usage(argv, stdin_path=None, timeout: float = 1800, interval: float = 0.5, env=None, cwd=None):
    """One run of ``argv`` with its whole process tree measured: a dict with ``wall``, ``rc``, ``out`` and
    ``err`` (file objects at their start), ``cpu`` (user + system seconds of the process and of every descendant
    it reaped: the wait4 rusage, so worker processes and ssh children are counted), ``maxrss`` (MiB: the
    largest resident set of any one process of the tree, from wait4) and ``tree_pss`` (MiB: the highest sum of
    proportional set sizes over the process and its live descendants, sampled every ``interval`` seconds;
    each page shared between them is counted once)."""
    import tempfile

    out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=stdin, stdout=out_f, stderr=err_f, env=env, cwd=cwd)
    if stdin_path:
        stdin.close()
    deadline, peak, next_sample = t0 + timeout, 0.0, t0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if now > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        if now >= next_sample:
            peak = max(peak, _tree_pss(proc.pid))
            next_sample = now + interval
        time.sleep(0.05)
    wall = time.monotonic() - t0
    out_f.seek(0)
    err_f.seek(0)
    return {"wall": wall, "rc": os.waitstatus_to_exitcode(status), "out": out_f, "err": err_f,
            "cpu": usage.ru_utime + usage.ru_stime, "maxrss": usage.ru_maxrss / 1024, "tree_pss": peak / 1024}


def _tree_pss(root: int) -> float:
    """KiB: the summed Pss of ``root`` and its descendants (/proc/PID/task/TID/children, smaps_rollup).

    A child that runs the root's own program and is younger than 2 s is left out (its children are not): a
    process between fork and exec (subprocess's, several at once from a threaded head) shares the root's
    pages, and a sample that reads the root before the fork and the child after it counts them twice. Worker
    processes, which live on, are counted."""
    total, todo, seen = 0.0, [root], set()
    try:
        exe = os.readlink(f"/proc/{root}/exe")
    except OSError:
        exe = None
    hz = os.sysconf("SC_CLK_TCK")
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            young = False
            if pid != root and exe is not None and os.readlink(f"/proc/{pid}/exe") == exe:
                with open(f"/proc/{pid}/stat") as f:
                    started = int(f.read().rsplit(")", 1)[1].split()[19]) / hz
                with open("/proc/uptime") as f:
                    young = float(f.read().split()[0]) - started < 2.0
            if not young:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1])
                            break
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total
