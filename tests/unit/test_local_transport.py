"""Local commands end at their deadline with everything they started."""
import shutil
import threading
import time

import psutil
import pytest

from nccldiag.transport.base import COMMAND_TIMEOUT
from nccldiag.transport.local import LocalTransport
from nccldiag.transport.stream import run_streaming

# GNU timeout puts its child in a process group of its own, out of reach of a group kill
ESCAPING = 'timeout -k 2 8 sh -c "sleep 8"'

pytestmark = pytest.mark.skipif(shutil.which("timeout") is None, reason="needs GNU timeout")


def sleepers(before):
    """``sleep 8`` processes started since ``before`` (a set of pids)."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.info["pid"] not in before and p.info["cmdline"] == ["sleep", "8"]:
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p.info["pid"])
            except psutil.NoSuchProcess:
                pass
    return out


def existing_sleepers():
    return {p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"]) if p.info["cmdline"] == ["sleep", "8"]}


def test_run_kills_grandchildren_in_other_groups_at_the_deadline():
    before = existing_sleepers()
    t0 = time.monotonic()
    r = LocalTransport().run(ESCAPING, timeout=1)
    elapsed = time.monotonic() - t0
    assert r.error is not None and r.error.kind == COMMAND_TIMEOUT, r
    assert r.rc is None
    assert elapsed < 3, elapsed
    time.sleep(0.2)
    assert sleepers(before) == []


def test_run_keeps_output_written_before_the_deadline():
    r = LocalTransport().run('echo early; echo err >&2; timeout -k 2 8 sh -c "sleep 8"', timeout=1)
    assert r.error is not None and r.error.kind == COMMAND_TIMEOUT
    assert r.stdout == "early\n" and r.stderr == "err\n"


def test_run_streaming_kills_grandchildren_in_other_groups_at_the_deadline():
    before = existing_sleepers()
    lines = []
    t0 = time.monotonic()
    r = run_streaming(["sh", "-c", "echo started; " + ESCAPING], timeout=1, on_line=lines.append)
    elapsed = time.monotonic() - t0
    assert r.error is not None and r.error.kind == COMMAND_TIMEOUT, r
    assert elapsed < 3, elapsed
    assert lines == ["started"]
    time.sleep(0.2)
    assert sleepers(before) == []


def test_run_streaming_cancel_kills_the_tree():
    before = existing_sleepers()
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    t0 = time.monotonic()
    r = run_streaming(["sh", "-c", ESCAPING], timeout=30, cancel=cancel)
    assert r.error is not None and "cancelled" in r.error.message
    assert time.monotonic() - t0 < 3
    time.sleep(0.2)
    assert sleepers(before) == []


def test_quick_command_unchanged():
    r = LocalTransport().run("echo hi; exit 3", timeout=5)
    assert (r.rc, r.stdout, r.error) == (3, "hi\n", None)
