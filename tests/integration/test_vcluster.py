"""The virtual cluster itself: isolation, SSH, faults, idempotence, clean teardown.

These tests change the cluster (faults, restarts, teardown), so they use a
cluster of their own (prefix ``ncdt``, nodes tnode01..tnode03) and never the
session-wide ``vcluster`` fixture. They run in file order: the last ones
bring the cluster up again and take it down.
"""
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.vcluster import SCRIPT, VCluster, vcluster_fixture

PREFIX, NAMES, SUBNET = "ncdt", "tnode", "10.213.58"
cluster = vcluster_fixture(n=3, prefix=PREFIX, names=NAMES, subnet=SUBNET, scope="module")

FAST = ["-o", "ConnectTimeout=2"]


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for its parent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _hostname(vc: VCluster, node: str) -> str:
    return vc.exec(node, ["hostname"], timeout=10, check=True).stdout.strip()


def test_layout(cluster):
    assert cluster.hosts == ["tnode01", "tnode02", "tnode03"]
    assert cluster.address("tnode01") == "10.213.58.2"
    assert cluster.bridge_address() == "10.213.58.1"
    assert oct(cluster.key.stat().st_mode & 0o777) == "0o600"
    known = cluster.known_hosts.read_text().splitlines()
    assert [l.split()[0] for l in known] == [f"{h},{cluster.address(h)}" for h in cluster.hosts]
    assert all(l.split()[1] == "ssh-ed25519" for l in known)
    assert len({l.split()[2] for l in known}) == 3, "every node has its own host key"


def test_each_node_has_its_own_hostname(cluster):
    names = [_hostname(cluster, h) for h in cluster.hosts]
    assert names == cluster.hosts
    assert socket.gethostname() not in names


def test_tmp_is_private_to_each_node(cluster):
    name = f"vcluster-{uuid.uuid4().hex}"
    cluster.exec("tnode01", ["sh", "-c", f"echo here > /tmp/{name}"], timeout=10, check=True)
    assert cluster.exec("tnode01", ["cat", f"/tmp/{name}"], timeout=10).stdout == "here\n"
    assert cluster.exec("tnode02", ["test", "-e", f"/tmp/{name}"], timeout=10).returncode == 1
    assert not os.path.exists(f"/tmp/{name}")


def test_names_resolve_on_host_and_nodes(cluster):
    assert socket.gethostbyname("tnode02") == cluster.address("tnode02")
    out = cluster.exec("tnode01", ["getent", "hosts", "tnode03"], timeout=10, check=True).stdout.split()
    assert out[:2] == [cluster.address("tnode03"), "tnode03"]


def test_ssh_from_host_verifies_host_key(cluster):
    ok = cluster.ssh("tnode02", "hostname", FAST, timeout=20)
    assert (ok.returncode, ok.stdout.strip()) == (0, "tnode02"), ok.stderr
    # The same connection with an empty known_hosts is refused: checking is on.
    refused = cluster.ssh("tnode02", "hostname", FAST + ["-o", "UserKnownHostsFile=/dev/null"], timeout=20)
    assert refused.returncode == 255
    assert "Host key verification failed" in refused.stderr


def test_node_to_node_ssh(cluster):
    # Inside a node, plain `ssh NAME` uses the node's /root/.ssh (config, key, known_hosts).
    r = cluster.exec("tnode01", ["ssh", "tnode02", "hostname"], timeout=20)
    assert (r.returncode, r.stdout.strip()) == (0, "tnode02"), r.stderr
    r = cluster.exec("tnode03", ["ssh", "-o", "BatchMode=yes", cluster.address("tnode01"), "hostname"], timeout=20)
    assert (r.returncode, r.stdout.strip()) == (0, "tnode01"), r.stderr


def test_link_down_makes_node_unreachable(cluster):
    cluster.fault("tnode02", "link-down")
    try:
        t0 = time.monotonic()
        r = cluster.ssh("tnode02", "true", FAST, timeout=20)
        elapsed = time.monotonic() - t0
        assert r.returncode == 255
        assert "timed out" in r.stderr
        assert elapsed < 8
        # the other nodes are not affected
        assert cluster.ssh("tnode03", "true", FAST, timeout=20).returncode == 0
    finally:
        cluster.fault("tnode02", "link-up")
    r = cluster.ssh("tnode02", "hostname", ["-o", "ConnectTimeout=10"], timeout=30)
    assert (r.returncode, r.stdout.strip()) == (0, "tnode02"), r.stderr


def test_blackhole_drops_host_and_node_traffic(cluster):
    cluster.fault("tnode03", "blackhole")
    try:
        r = cluster.ssh("tnode03", "true", FAST, timeout=20)
        assert r.returncode == 255 and "timed out" in r.stderr, r.stderr
        if Path("/proc/sys/net/bridge/bridge-nf-call-iptables").read_text().strip() == "1":
            r = cluster.exec("tnode01", ["ssh", "-o", "ConnectTimeout=2", "tnode03", "true"], timeout=20)
            assert r.returncode == 255 and "timed out" in r.stderr, r.stderr
    finally:
        cluster.fault("tnode03", "unblackhole")
    assert not [r for r in cluster.leftovers()["iptables"] if f":{PREFIX}:tnode03" in r]
    assert cluster.ssh("tnode03", "true", ["-o", "ConnectTimeout=10"], timeout=30).returncode == 0


def test_sshd_stop_refuses_then_start_serves(cluster):
    cluster.fault("tnode01", "sshd-stop")
    try:
        r = cluster.ssh("tnode01", "true", FAST, timeout=20)
        assert r.returncode == 255 and "Connection refused" in r.stderr, r.stderr
        assert cluster.sshd_pid("tnode01") is None
    finally:
        cluster.fault("tnode01", "sshd-start")
    r = cluster.ssh("tnode01", "hostname", FAST, timeout=20)
    assert (r.returncode, r.stdout.strip()) == (0, "tnode01"), r.stderr


def test_sshd_freeze_accepts_without_a_banner_then_thaw_serves(cluster):
    cluster.fault("tnode02", "sshd-freeze")
    try:
        r = cluster.ssh("tnode02", "true", FAST, timeout=20)
        assert r.returncode == 255, r.stderr
        assert "refused" not in r.stderr and "banner" in r.stderr.lower(), r.stderr
    finally:
        cluster.fault("tnode02", "sshd-thaw")
    r = cluster.ssh("tnode02", "hostname", ["-o", "ConnectTimeout=10"], timeout=30)
    assert (r.returncode, r.stdout.strip()) == (0, "tnode02"), r.stderr


def test_hostkey_rotate_is_detected(cluster):
    before = cluster.known_hosts.read_text()
    cluster.hostkey_rotate("tnode03")
    assert cluster.known_hosts.read_text() == before
    r = cluster.ssh("tnode03", "true", FAST, timeout=20)
    assert r.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in r.stderr


def test_up_twice_is_idempotent(cluster):
    cluster.fault("tnode02", "blackhole")
    cluster.up(3)
    left = cluster.leftovers()
    assert sorted(left["namespaces"]) == ["ncdt-tnode01", "ncdt-tnode02", "ncdt-tnode03"]
    assert sorted(left["links"]) == ["ncdtbr0", "ncdtv1", "ncdtv2", "ncdtv3"]
    assert len([p for p in left["processes"] if "sshd" in p]) == 3
    assert len([p for p in left["processes"] if "-holder:" in p]) == 3
    assert not [r for r in left["iptables"] if "tnode" in r], "the old blackhole is gone"
    hosts = Path("/etc/hosts").read_text()
    assert hosts.count(f"# BEGIN nccldiag-vcluster {PREFIX}\n") == 1
    assert hosts.count("\ttnode02\n") == 1
    for h in cluster.hosts:  # new host keys, new known_hosts: every node answers
        r = cluster.ssh(h, "hostname", FAST, timeout=20)
        assert (r.returncode, r.stdout.strip()) == (0, h), r.stderr


def test_down_leaves_nothing_behind(cluster):
    cluster.fault("tnode01", "blackhole")
    started = cluster.ssh("tnode02", "nohup sleep 1000 >/dev/null 2>&1 & echo $!", FAST, timeout=20)
    assert started.returncode == 0, started.stderr
    sleeper = int(started.stdout.strip())
    assert _running(sleeper)

    cluster.down()
    left = cluster.leftovers()
    assert left == {k: [] for k in left}, left
    assert not _running(sleeper), "processes started on a node are ended"
    assert "tnode0" not in Path("/etc/hosts").read_text()
    cluster.down()  # nothing up: still succeeds


@pytest.mark.skipif(os.geteuid() != 0 if hasattr(os, "geteuid") else True, reason="needs root")
def test_missing_command_names_its_package(tmp_path):
    # A PATH with everything scripts/vcluster needs except sshd.
    wanted = ["bash", "id", "getent", "cut", "ip", "unshare", "nsenter", "setsid", "flock", "mount",
              "ssh", "ssh-keygen", "iptables", "hostname", "sleep", "timeout"]
    for cmd in wanted:
        path = shutil.which(cmd)
        if path is None:
            pytest.skip(f"{cmd} is not installed here")
        (tmp_path / cmd).symlink_to(path)
    r = subprocess.run([str(tmp_path / "bash"), str(SCRIPT), "check"], capture_output=True, text=True,
                       timeout=30, env={"PATH": str(tmp_path)}, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    assert "sshd (package openssh-server)" in r.stderr
