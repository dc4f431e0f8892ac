"""``nccldiag log`` reading several files in parallel, interrupted as a terminal's Ctrl-C does (SIGINT to the
whole process group) or by SIGTERM: it ends with one message and its exit code, no traceback from any of its
worker processes, and no worker left. One of the files is a FIFO the test holds open and never writes to, so
that a worker is at work (reading it) and the others idle when the signal comes: no sleep."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import real
from tests.signals import ctrl_c_reaches

ROOT = Path(__file__).resolve().parents[2]


def _children(pid: int):
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _all_waiting(pid: int, fifo: Path) -> bool:
    """Every worker of ``pid`` waits in a pipe read, one of them with ``fifo`` open: one is reading the FIFO,
    the others have read their files and wait for work."""
    kids, reading = _children(pid), False
    if len(kids) < 2:
        return False
    for c in kids:
        try:
            if "pipe" not in Path(f"/proc/{c}/wchan").read_text():
                return False
            reading = reading or any(os.readlink(f) == str(fifo) for f in Path(f"/proc/{c}/fd").iterdir())
        except OSError:
            return False
    return reading


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def _wait_for(cond, what: str, limit: float = 120.0) -> None:
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("sig, code, said", [(signal.SIGINT, 130, b"nccldiag: interrupted"),
                                             (signal.SIGTERM, 143, b"nccldiag: terminated")])
def test_a_signal_to_the_process_group_ends_a_parallel_read_once_and_quietly(tmp_path, sig, code, said):
    fifo = tmp_path / "stalled.log"
    os.mkfifo(fifo)
    hold = os.open(fifo, os.O_RDWR)  # a writer that never writes: its reader waits, never at end of file
    logs = [str(real.nccl_log(n)) for n in real.names(real.nccl_log(), "*.log")[:3]]
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "nccldiag", "log", *logs, str(fifo), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                            preexec_fn=ctrl_c_reaches, start_new_session=True)
    try:
        _wait_for(lambda: _all_waiting(proc.pid, fifo), "a worker reading the FIFO, the others idle")
        workers = _children(proc.pid)
        os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(hold)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert b"Traceback" not in err and b"Process " not in err, err
    assert err.strip().splitlines() == [said], err
    _wait_for(lambda: all(_gone(p) for p in workers), "the workers to end", limit=30)
