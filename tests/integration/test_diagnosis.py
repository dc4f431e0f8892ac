"""Diagnoses on the virtual cluster: a healthy 2-node gloo probe and one whose ranks were given loopback.

The cluster is this module's own (prefix ncdg, subnet 10.213.71). The socket
interface's speed comes from each node's /sys/class/net (the veth end inside
the node's namespace), read by the probe itself.
"""
import pytest

from tests.integration.helpers import load_json, probe_processes, timed
from tests.integration.vcluster import vcluster_fixture

cluster = vcluster_fixture(n=2, prefix="ncdg", names="dnode", subnet="10.213.71", scope="module")


def args(vc, tmp_path, *extra):
    return ["probe", str(vc.hostfile), "--ssh-config", str(vc.ssh_config), "--nproc-per-node", "2",
            "--connect-timeout", "5", "--collectives", "all_reduce,all_gather", "--max-bytes", "256K",
            "-o", str(tmp_path / "run"), "--json", str(tmp_path / "p.json"), "--color", "never", *extra]


def test_healthy_probe_has_no_diagnosis_and_shows_busbw_against_the_interface_speed(cluster, tmp_path):
    r, elapsed = timed(args(cluster, tmp_path, "--timeout", "60"), timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    data = load_json(tmp_path / "p.json")
    assert data["diagnoses"] == []
    s = data["diagnosis_summary"]
    assert sorted(s["healthy_nodes"]) == sorted(cluster.hosts) and s["failing_nodes"] == []
    bw = s["bandwidth"]["default"]
    exp = bw["expected"]
    # the speed each node's kernel reports for the interface its ranks used, in Mb/s; / 8000 = GB/s
    ranks = data["settings"][0]["ranks"].values()
    used = {v["host"]: v["interface"] for v in ranks}
    speeds = {h: int(cluster.exec(h, ["cat", f"/sys/class/net/{i}/speed"], check=True).stdout) for h, i in used.items()}
    assert exp["gbps"] == pytest.approx(min(speeds.values()) / 8000) and exp["bottleneck"]["segment"] == "socket"
    assert f"{used[exp['bottleneck']['host']]} at {min(speeds.values())} Mb/s" == exp["bottleneck"]["basis"]
    assert bw["percent"] == pytest.approx(100 * bw["measured_gbps"] / exp["gbps"], abs=0.1)
    assert not bw["comparable"] and "latency-bound" in bw["why_not"]
    out = r.stdout
    assert out.index("Diagnoses") < out.index("setting default")
    assert "no diagnosis: the evidence shows nothing broken" in out
    assert "% of expected" in out and "bottleneck socket" in out


def test_loopback_interface_across_nodes_is_diagnosed_with_the_interface_to_use(cluster, tmp_path):
    r, elapsed = timed(args(cluster, tmp_path, "--timeout", "30", "--ifname", "lo"), timeout=150)
    assert elapsed < 120, elapsed
    assert r.returncode == 1, r.stdout + r.stderr
    data = load_json(tmp_path / "p.json")
    d = next(x for x in data["diagnoses"] if x["id"] == "wrong-interface")
    assert d["severity"] == "fail" and d["confidence"]["level"] == "high"
    assert sorted(d["nodes"]) == sorted(cluster.hosts)
    assert any("SOCKET_IFNAME=lo (loopback)" in e["text"] for e in d["evidence"])
    # the interface that routes to the first node, as the probe found it on each node
    assert "ncdgp1 on dnode01, ncdgp2 on dnode02" in d["fix"] and "NCCL_SOCKET_IFNAME=ncdgp " in d["fix"]
    assert "/etc/hosts" not in d["fix"]  # the host names resolve: only the interface is wrong
    # the cause comes first, before its symptom where there is one: gloo over 'lo' either hangs in initialisation
    # or, where the peer's loopback refuses at once (torch 2.13's gloo gives up on a refused connect), fails there
    ids = [x["id"] for x in data["diagnoses"]]
    assert ids[0] == "wrong-interface", ids
    assert "hang" not in ids or ids.index("hang") > ids.index("wrong-interface"), ids
    for node in cluster.hosts:
        assert probe_processes(cluster, node, data["run_id"]) == []
