"""Nodes sharing one home directory whose ~/.bashrc works under a lock on every login (pyenv's and
conda's init do), as NFS homes do on many clusters: logins that start together queue on the lock.

The cluster is its own (prefix ``ncdw``), its logins in the harness's shared-home mode
(``scripts/vcluster login shared-home SECONDS``), with a silence bound (``--command-timeout``) scaled
down so that the queue of logins is several times longer than it.
"""
import contextlib
import os
import re
import subprocess
import sys

import pytest

from tests.integration.helpers import load_json, timed
from tests.integration.vcluster import vcluster_fixture

N = 24
# seconds each login works under the shared lock: N of them queue for N * LOCKED = 9.6 s, and each of the
# logins the check keeps in progress while they queue (runner.LOGINS_QUEUED, 8) waits up to 3.2 s for it
LOCKED = 0.4
SILENCE = 2  # --command-timeout: under the wait of a login queued behind the others in progress

cluster = vcluster_fixture(n=N, prefix="ncdw", names="lnode", subnet="10.213.80", scope="module")


@contextlib.contextmanager
def shared_home(vc, stalled=None):
    """Logins queued on the shared home's lock; on ``stalled`` the collection script stalls once it has
    started: its first source (``hostname``) reads a FIFO nobody writes (a test-controlled stall, ended by
    the source's own timeout)."""
    vc.login("shared-home", LOCKED)
    stall = vc.state / "stall"
    try:
        if stalled:
            stall.mkdir(exist_ok=True)
            os.mkfifo(stall / "never")
            (stall / "hostname").write_text(f"#!/bin/sh\nexec cat {stall / 'never'}\n")
            (stall / "hostname").chmod(0o755)
            with open(vc.state / "bashrc", "a") as f:  # in place: the file is bind-mounted on every node
                f.write(f'[ "$(cat /proc/sys/kernel/hostname)" = {stalled} ] && export PATH={stall}:"$PATH"\n')
        yield
    finally:
        vc.login("plain")
        _release(stall / "never")
        for p in (stall / "hostname", stall / "never"):
            if p.exists():
                p.unlink()
        if stall.exists():
            stall.rmdir()


def _release(fifo):
    """End the stalled source's read: a writer that opens and closes the FIFO gives its reader end of file
    (without it, the reader waits out the source's own timeout on the node after the test)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no FIFO, or no reader left
        return
    os.close(fd)


def check(vc, tmp_path, *args, silence=SILENCE):
    out = tmp_path / "r.json"
    r, elapsed = timed(["check", str(vc.hostfile), "--ssh-config", str(vc.ssh_config), "--only", "system",
                        "--mesh", "none", "--fanout", str(N), "--command-timeout", str(silence),
                        "--json", str(out), *args], timeout=300)
    nodes = load_json(out)["nodes"]
    assert len(nodes) == N, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return r, elapsed, {n["host"]: next(f for f in n["findings"] if f["area"] == "ssh") for n in nodes}


def login_s(finding):
    m = re.search(r"login (\d+\.\d+) s", finding["message"])
    return float(m.group(1)) if m else None


@pytest.fixture
def cpu_load():
    """Two CPU-bound loops beside the test, as on a busy head node."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for p in loops:
        p.kill()
        p.wait()


def test_logins_queued_on_a_shared_home_are_not_the_script_silence(cluster, tmp_path, cpu_load):
    with shared_home(cluster):
        r, elapsed, ssh = check(cluster, tmp_path, "--login-timeout", "60")
    assert r.returncode == 0, r.stdout[-3000:]
    assert {h: f["status"] for h, f in ssh.items() if f["status"] != "ok"} == {}
    # the premise: logins queued past the silence bound, which counted them as silence before
    assert max(login_s(f) for f in ssh.values()) > SILENCE, [f["message"] for f in ssh.values()]
    assert ", 0 not checked" in r.stdout, r.stdout[-500:]


def test_with_the_default_login_bound_every_node_is_checked(cluster, tmp_path):
    """The login bound is twice the silence bound (6 s here): a node whose login is cut off there is tried
    once more when the others are done, and is checked then."""
    with shared_home(cluster):
        r, elapsed, ssh = check(cluster, tmp_path, silence=3)
    assert r.returncode == 0, r.stdout[-3000:]
    assert {h: f["message"] for h, f in ssh.items() if f["status"] != "ok"} == {}
    for f in ssh.values():
        if "second try" in f["message"]:
            assert "first try: no answer: the login sent nothing and did not start the script within 6 s" in \
                f["message"], f


def test_a_node_whose_script_stalls_is_named_stalled_and_the_others_checked(cluster, tmp_path):
    with shared_home(cluster, stalled="lnode05"):
        r, elapsed, ssh = check(cluster, tmp_path, "--login-timeout", "60")
    bad = ssh.pop("lnode05")
    assert (bad["status"], bad["check"]) == ("error", "ssh.command-timeout"), bad
    stalled = f"script stalled: nothing sent for {SILENCE} s after it started"
    assert stalled in bad["message"] and "tried twice" in bad["message"], bad
    assert {h: f["status"] for h, f in ssh.items() if f["status"] != "ok"} == {}
    assert r.returncode != 0
    assert elapsed < 120, elapsed


def test_each_node_logs_in_once_with_the_node_to_node_test(cluster, tmp_path):
    """The node-to-node test runs within the collection script's login on the first node, and reaches the
    others without a shell (authentication only): one login per node, on a shared home where each queues."""
    log = cluster.state / "logins.log"
    with shared_home(cluster):
        with open(cluster.state / "bashrc", "a") as f:  # in place: the file is bind-mounted on every node
            f.write(f"printf '%s\\n' \"$HOSTNAME\" >> {log}\n")
        log.write_text("")
        out = tmp_path / "r.json"
        r, _ = timed(["check", str(cluster.hostfile), "--ssh-config", str(cluster.ssh_config), "--only", "system",
                      "--mesh", "first", "--fanout", str(N), "--login-timeout", "60", "--json", str(out)],
                     timeout=300)
        logins = log.read_text().split()
    nodes = load_json(out)["nodes"]
    assert len(nodes) == N, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert sorted(logins) == sorted(cluster.hosts), logins
    ssh = [f for n in nodes for f in n["findings"] if f["area"] == "ssh"]
    assert {(f["check"], f["status"]) for f in ssh} == {("ssh.collect", "ok"), ("ssh.node_to_node", "ok")}, \
        [f["message"] for f in ssh if f["status"] != "ok"]
    (mesh,) = [f for f in ssh if f["check"] == "ssh.node_to_node"]
    assert mesh["actual"] == N - 1
