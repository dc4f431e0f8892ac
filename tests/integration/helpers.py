"""Running the real nccldiag command against a virtual cluster, and waiting on conditions."""
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence


def nccldiag(args: Sequence[str], timeout: float = 300, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would (a fresh process), bounded by ``timeout``."""
    return subprocess.run(
        [sys.executable, "-m", "nccldiag", *args], capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL, cwd=cwd, env={**__import__("os").environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


def timed(args: Sequence[str], timeout: float = 300, cwd: Optional[str] = None):
    t0 = time.monotonic()
    r = nccldiag(args, timeout, cwd)
    return r, time.monotonic() - t0


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started it dies, however it dies (a pytest
    stopped by SIGTERM or SIGKILL runs no ``finally``)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


@contextlib.contextmanager
def busy_cpus(per_core: int = 2) -> Iterator[List[int]]:
    """The machine's cores kept busy while the block runs: ``per_core`` CPU-bound loops per core, in their own
    process group, killed on the way out, and killed by the kernel if this process dies first. Yields their
    PIDs."""
    n = max(1, (os.cpu_count() or 1) * per_core)
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                              preexec_fn=_die_with_parent)
             for _ in range(n)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in procs:
            p.wait(timeout=30)


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail the test if it does not within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def records(path: Path) -> List[dict]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def probe_processes(vc, node: str, run_id: str) -> List[str]:
    """Processes of probe run ``run_id`` still alive on ``node`` (checked over SSH).

    Only this run's, and only those in the node's own network namespace: the
    virtual nodes share one PID namespace with the host and with each other,
    and other probes may run on the same machine at the same time.
    """
    assert run_id and "'" not in run_id
    cmd = (
        "me=$(readlink /proc/self/ns/net); for p in /proc/[0-9]*; do "
        "[ \"$(readlink $p/ns/net 2>/dev/null)\" = \"$me\" ] || continue; "
        f"if grep -qsaz '^NCCLDIAG_RUN={run_id}$' \"$p/environ\" 2>/dev/null; then "
        "printf '%s %s\\n' \"${p#/proc/}\" \"$(tr '\\0' ' ' < \"$p/cmdline\" 2>/dev/null | cut -c1-200)\"; fi; done; true"
    )
    r = vc.ssh(node, cmd, ["-o", "ConnectTimeout=10"], timeout=60)
    assert r.returncode == 0, r.stderr
    return [l for l in r.stdout.splitlines() if l.strip()]
