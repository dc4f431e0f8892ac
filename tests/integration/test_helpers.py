"""The helpers the integration tests lean on hold when a test run is stopped from outside."""
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.integration.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]

_HOLDER = """
import json, sys
from tests.integration.helpers import busy_cpus
with busy_cpus(per_core=1) as pids:
    print(json.dumps(pids), flush=True)
    sys.stdin.read()
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def test_busy_loops_die_with_a_test_process_killed_outright():
    """A pytest stopped by SIGKILL (or SIGTERM) runs no ``finally``: the CPU-bound loops it started must not
    outlive it and load the machine for every run after it."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    pids = []
    try:
        pids = json.loads(holder.stdout.readline())
        assert pids and all(_running(p) for p in pids)
        holder.kill()
        holder.wait(timeout=30)
        wait_for(lambda: not any(_running(p) for p in pids), 30, f"the loops {pids} to end with their parent")
    finally:
        holder.kill()
        for p in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p, signal.SIGKILL)
