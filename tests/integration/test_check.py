"""``nccldiag check`` end to end on the virtual cluster: healthy nodes and every SSH failure."""
import subprocess

import pytest

from tests.integration.helpers import load_json, timed
from tests.integration.vcluster import vcluster_fixture

HARDWARE_AREAS = ("iommu", "pcie", "ib", "gdr", "gpu", "topology")


def ssh_args(vc):
    return ["--ssh-config", str(vc.ssh_config)]


def test_healthy_cluster(vcluster, tmp_path):
    out = tmp_path / "r.json"
    r, elapsed = timed([
        "check", str(vcluster.hostfile), *ssh_args(vcluster), "--json", str(out), "--save", str(tmp_path / "b"),
    ])
    assert r.returncode == 0, r.stdout + r.stderr
    data = load_json(out)
    assert [n["host"] for n in data["nodes"]] == vcluster.hosts
    for node in data["nodes"]:
        assert node["reachable"] and node["areas"]["ssh"] == "ok"
        assert node["facts"]["system"]["hostname"] == node["host"]
        # no GPU and no HCA in a namespace: every hardware area says skip, with its reason
        for area in HARDWARE_AREAS:
            found = [f for f in node["findings"] if f["area"] == area]
            assert found, area
            assert all(f["status"] in ("skip", "ok") for f in found), (area, found)
            assert all(f["message"] for f in found)
        assert node["elapsed_s"] < 30
    first = data["nodes"][0]
    mesh = [f for f in first["findings"] if f["check"] == "ssh.node_to_node"]
    assert mesh and mesh[0]["status"] == "ok" and mesh[0]["actual"] == len(vcluster.hosts) - 1
    assert "node01" in r.stdout and "4 nodes" in r.stdout
    # the saved bundle gives the same verdicts offline
    off, _ = timed(["check", "--bundle", str(tmp_path / "b"), "--json", str(tmp_path / "o.json")])
    assert off.returncode == 0
    live = {(n["host"], f["check"], f["status"]) for n in data["nodes"] for f in n["findings"] if f["area"] != "ssh"}
    again = {(n["host"], f["check"], f["status"]) for n in load_json(tmp_path / "o.json")["nodes"]
             for f in n["findings"] if f["area"] != "ssh"}
    assert live == again


def test_two_workers_give_the_findings_of_one_process(vcluster, tmp_path):
    """--workers 2 spreads the hosts over two processes; the node-to-node test is planned over all of them
    (from node01 to every other, node01 in the first worker's share), the report is in hostfile order."""
    docs = {}
    for w in (1, 2):
        out = tmp_path / f"r{w}.json"
        r, _ = timed(["check", str(vcluster.hostfile), *ssh_args(vcluster), "--workers", str(w), "--json", str(out),
                      "--run-dir", str(tmp_path / f"run{w}")])
        assert r.returncode == 0, r.stdout + r.stderr
        docs[w] = load_json(out)
    assert [n["host"] for n in docs[2]["nodes"]] == vcluster.hosts

    def verdicts(doc):
        return [(n["host"], n["status"], sorted((f["check"], f["status"], f.get("actual") if f["area"] != "ssh"
                                                 else None) for f in n["findings"]),
                 n["facts"]["system"]["hostname"]) for n in doc["nodes"]]

    assert verdicts(docs[2]) == verdicts(docs[1])
    mesh = [f for f in docs[2]["nodes"][0]["findings"] if f["check"] == "ssh.node_to_node"]
    assert mesh and mesh[0]["status"] == "ok" and mesh[0]["actual"] == len(vcluster.hosts) - 1
    for host in vcluster.hosts:
        assert (tmp_path / "run2" / "raw" / host / "hostname.txt").read_text().splitlines()[0] == host


def test_collect_writes_one_directory_per_node(vcluster, tmp_path):
    r, _ = timed(["collect", str(vcluster.hostfile), *ssh_args(vcluster), "-o", str(tmp_path / "b"), "--only", "system"])
    assert r.returncode == 0, r.stderr
    for host in vcluster.hosts:
        assert (tmp_path / "b" / host / "hostname.txt").read_text().splitlines()[0] == host


# --- faults, on a cluster of their own -----------------------------------------------------

faulty = vcluster_fixture(n=4, prefix="ncdf", names="fnode", subnet="10.213.59", scope="module")


def check_faulty(vc, tmp_path, *extra, connect_timeout=3):
    out = tmp_path / "r.json"
    r, elapsed = timed(["check", str(vc.hostfile), *ssh_args(vc), "--only", "system", "--mesh", "none",
                        "--connect-timeout", str(connect_timeout), "--json", str(out), *extra], timeout=120)
    data = load_json(out)
    return r, elapsed, {n["host"]: n for n in data["nodes"]}


def ssh_finding(node):
    return next(f for f in node["findings"] if f["area"] == "ssh")


def test_sshd_stopped_is_refused(faulty, tmp_path):
    faulty.fault("fnode02", "sshd-stop")
    try:
        r, elapsed, nodes = check_faulty(faulty, tmp_path)
    finally:
        faulty.fault("fnode02", "sshd-start")
    f = ssh_finding(nodes["fnode02"])
    assert (f["status"], f["check"]) == ("error", "ssh.refused")
    assert f["host"] == "fnode02" and "refused" in f["message"] and f["fix"]
    assert all(ssh_finding(nodes[h])["status"] == "ok" for h in ("fnode01", "fnode03", "fnode04"))
    assert r.returncode == 3
    assert "fnode02" in r.stdout and "ssh.refused" in r.stdout


@pytest.mark.parametrize("fault, undo", [("link-down", "link-up"), ("blackhole", "unblackhole")])
def test_unreachable_node_is_bounded(faulty, tmp_path, fault, undo):
    faulty.fault("fnode03", fault)
    try:
        r, elapsed, nodes = check_faulty(faulty, tmp_path, connect_timeout=3)
    finally:
        faulty.fault("fnode03", undo)
    f = ssh_finding(nodes["fnode03"])
    assert (f["status"], f["check"]) == ("error", "ssh.unreachable"), f
    assert "timed out" in f["message"] or "unreachable" in f["message"]
    # the other nodes were checked, and the whole check ended soon after the connect timeout
    assert all(nodes[h]["reachable"] for h in ("fnode01", "fnode02", "fnode04"))
    assert elapsed < 3 + 20, elapsed
    assert r.returncode == 3


def test_a_stalled_sshd_is_named_a_banner_timeout_within_the_bound(faulty, tmp_path):
    """sshd stopped with SIGSTOP: the kernel accepts the connection and nothing answers it."""
    faulty.fault("fnode03", "sshd-freeze")
    try:
        r, elapsed, nodes = check_faulty(faulty, tmp_path, "--mesh", "first", connect_timeout=3)
    finally:
        faulty.fault("fnode03", "sshd-thaw")
    f = ssh_finding(nodes["fnode03"])
    assert (f["status"], f["check"]) == ("error", "ssh.banner"), f
    assert "within 3 s" in f["message"] and "stalled" in f["message"], f["message"]
    assert "hung or overloaded" in f["fix"] and "MaxStartups" not in f["fix"], f["fix"]
    # the node that tested it over SSH is not at fault for it
    [tested] = [g for g in nodes["fnode01"]["findings"] if g["check"] == "ssh.node_to_node"]
    assert tested["status"] == "ok" and "fnode03" in tested["message"], tested
    assert all(nodes[h]["reachable"] for h in ("fnode01", "fnode02", "fnode04"))
    assert elapsed < 3 + 20, elapsed
    assert r.returncode == 3


def test_unauthorized_key_is_auth_failure(faulty, tmp_path):
    key = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    cfg = tmp_path / "ssh_config"
    text = faulty.ssh_config.read_text()
    lines = [l for l in text.splitlines() if "identityfile" not in l.lower()]
    cfg.write_text("\n".join(lines) + f"\nHost *\n  IdentityFile {key}\n  IdentitiesOnly yes\n")
    out = tmp_path / "r.json"
    r, _ = timed(["check", "-w", "fnode01", "--ssh-config", str(cfg), "--only", "system", "--json", str(out)])
    node = load_json(out)["nodes"][0]
    f = ssh_finding(node)
    assert (f["status"], f["check"]) == ("error", "ssh.auth"), f
    assert "stranger" in f["message"]
    assert key.read_text().split("\n")[1] not in r.stdout + r.stderr  # never a secret
    assert r.returncode == 3


def test_node_to_node_ssh_broken_for_one_pair(faulty, tmp_path):
    a, b = faulty.address("fnode01"), "fnode03"
    rule = ["iptables", "-w", "10", "-I", "INPUT", "-s", a, "-p", "tcp", "--dport", "22", "-j", "REJECT"]
    faulty.exec(b, rule, check=True)
    try:
        out = tmp_path / "r.json"
        r, _ = timed(["check", str(faulty.hostfile), *ssh_args(faulty), "--only", "system", "--mesh", "all",
                      "--json", str(out)], timeout=120)
    finally:
        faulty.exec(b, [*rule[:3], "-D", *rule[4:]], check=True)
    nodes = {n["host"]: n for n in load_json(out)["nodes"]}
    mesh = {h: next(f for f in n["findings"] if f["check"] == "ssh.node_to_node") for h, n in nodes.items()}
    assert mesh["fnode01"]["status"] == "fail"
    assert len(mesh["fnode01"]["actual"]) == 1 and mesh["fnode01"]["actual"][0].startswith("fnode03:")
    assert all(mesh[h]["status"] == "ok" for h in ("fnode02", "fnode03", "fnode04"))
    assert r.returncode == 1


def test_node_to_node_ssh_timing_out_is_could_not_tell_never_a_fail(faulty, tmp_path):
    """fnode03 drops fnode01's SSH packets (a peer whose sshd never answers in time, as under heavy load): no
    evidence of a fault, so fnode01 is warned that it could not tell, never failed (nor drained)."""
    a, b = faulty.address("fnode01"), "fnode03"
    rule = ["iptables", "-w", "10", "-I", "INPUT", "-s", a, "-p", "tcp", "--dport", "22", "-j", "DROP"]
    faulty.exec(b, rule, check=True)
    try:
        out = tmp_path / "r.json"
        r, _ = timed(["check", str(faulty.hostfile), *ssh_args(faulty), "--only", "system", "--mesh", "first",
                      "--json", str(out)], timeout=180)
    finally:
        faulty.exec(b, [*rule[:3], "-D", *rule[4:]], check=True)
    nodes = {n["host"]: n for n in load_json(out)["nodes"]}
    mesh = next(f for f in nodes["fnode01"]["findings"] if f["check"] == "ssh.node_to_node")
    assert mesh["status"] == "warn" and "could not tell" in mesh["message"], mesh
    assert len(mesh["actual"]) == 1 and mesh["actual"][0].startswith("fnode03:") and "timed out" in mesh["actual"][0]
    assert r.returncode == 0 and "1 with warnings, 0 unhealthy" in r.stdout, r.stdout + r.stderr  # said, not failed


def test_changed_host_key_is_refused_and_not_trusted(faulty, tmp_path):
    before = faulty.known_hosts.read_text()
    faulty.hostkey_rotate("fnode04")
    for extra in ((), ("--accept-new-host-keys",)):
        r, _, nodes = check_faulty(faulty, tmp_path, *extra)
        f = ssh_finding(nodes["fnode04"])
        assert (f["status"], f["check"]) == ("error", "ssh.hostkey-changed"), f
        assert "CHANGED" in f["message"]
        assert r.returncode == 3
    assert faulty.known_hosts.read_text() == before


def test_fanout_of_one_still_checks_everyone(faulty, tmp_path):
    r, _, nodes = check_faulty(faulty, tmp_path, "--fanout", "1")
    assert sorted(nodes) == sorted(faulty.hosts)
