"""``nccldiag probe`` end to end on the virtual cluster (gloo): torchrun, mpirun, clush, and faults.

Every fault test asserts the time bound, that the culprit is named, and that
no probe process is left on any node afterwards (checked over SSH).
"""
import threading

import pytest

from tests.integration.helpers import load_json, probe_processes, records, timed, wait_for
from tests.integration.vcluster import vcluster_fixture

ALL = {"broadcast", "reduce", "all_reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
       "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "sendrecv", "barrier"}


def two_nodes(vc):
    return ["-w", "node01,node02", "--ssh-config", str(vc.ssh_config), "--nproc-per-node", "2"]


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun", "clush"])
def test_every_collective_verified_on_every_rank(vcluster, tmp_path, launcher):
    out = tmp_path / "p.json"
    r, elapsed = timed(["probe", *two_nodes(vcluster), "--launcher", launcher, "--timeout", "90",
                        "-o", str(tmp_path / "run"), "--json", str(out)], timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    data = load_json(out)
    assert data["backend"] == "gloo" and data["launcher"] == launcher
    assert "do not apply to the gloo backend" in data["note"]
    (setting,) = data["settings"]
    assert setting["status"] == "ok" and setting["world_size"] == 4
    hosts = {v["host"] for v in setting["ranks"].values()}
    assert hosts == {"node01", "node02"}
    assert ALL <= set(setting["collectives"])
    for name, c in setting["collectives"].items():
        assert c["status"] == "ok", (name, c)
        assert sorted(c["ranks_ok"]) == [0, 1, 2, 3], name
    sweep = setting["collectives"]["all_reduce"]["sweep"]
    assert len(sweep) >= 2 and all(p["algbw"] > 0 and p["busbw"] > 0 for p in sweep)
    # nccl-tests' all_reduce factor: busbw = algbw * 2(n-1)/n
    assert all(abs(p["busbw"] - p["algbw"] * 1.5) <= 0.02 * p["busbw"] + 1e-6 for p in sweep)
    if launcher == "mpirun":
        assert setting["collectives"]["mpi_allreduce"]["status"] == "ok"
    # the ranks' records were written as they came
    recs = records(tmp_path / "run" / "records.jsonl")
    assert sum(1 for x in recs if x["type"] == "end") == 4
    for node in vcluster.hosts:
        assert probe_processes(vcluster, node, data["run_id"]) == []
    assert "all_reduce" in r.stdout and "1 worked" in r.stdout
    # the nodes' counters were read around the run, and a healthy run counts no error
    assert not [f for f in setting["findings"] if f["check"] == "probe.counters"]
    ended = [l for l in records(tmp_path / "run" / "settings.jsonl")]
    assert set(ended[0]["counters"]) >= {"node01"}
    # gloo keeps no log: the interface and address each node's ranks used are shown instead
    for rank, host in ((0, "node01"), (2, "node02")):
        info = setting["ranks"][str(rank)]
        assert info["interface"] and info["address"]
        assert f"gloo socket {host}: {info['interface']} {info['address']}" in r.stdout


def test_dry_run_prints_commands_and_runs_nothing(vcluster, tmp_path):
    r, _ = timed(["probe", *two_nodes(vcluster), "--dry-run", "-o", str(tmp_path / "run")])
    assert r.returncode == 0, r.stderr
    assert "# default on node01" in r.stdout and "# default on node02" in r.stdout
    assert "nccldiag.node.torchrun" in r.stdout and "--rdzv-backend=static" in r.stdout and "--node-rank=1" in r.stdout
    assert not (tmp_path / "run" / "records.jsonl").exists() or records(tmp_path / "run" / "records.jsonl") == []


# --- faults, on a cluster of their own -----------------------------------------------------

faulty = vcluster_fixture(n=2, prefix="ncdq", names="qnode", subnet="10.213.60", scope="module")
TIMEOUT = 40


def probe_faulty(vc, tmp_path, *extra, timeout=TIMEOUT):
    out = tmp_path / "p.json"
    args = ["probe", str(vc.hostfile), "--ssh-config", str(vc.ssh_config), "--nproc-per-node", "2",
            "--timeout", str(timeout), "--connect-timeout", "5", "-o", str(tmp_path / "run"), "--json", str(out),
            "--max-bytes", "256K", *extra]
    return args, out


def assert_clean(vc, data):
    for node in vc.hosts:
        assert probe_processes(vc, node, data["run_id"]) == [], node


def started(tmp_path):
    return lambda: any(x.get("type") == "result" for x in records(tmp_path / "run" / "records.jsonl"))


def run_with_fault(args, timeout, trigger, fault):
    """Start the probe, wait until ``trigger`` holds, apply ``fault``; return (result, elapsed)."""
    box = {}
    th = threading.Thread(target=lambda: box.update(zip(("r", "elapsed"), timed(args, timeout=timeout))))
    th.start()
    try:
        wait_for(trigger, 120, "the probe to report its first result")
        fault()
    finally:
        th.join(timeout + 30)
    assert not th.is_alive()
    return box["r"], box["elapsed"]


def test_link_cut_mid_run(faulty, tmp_path):
    args, out = probe_faulty(faulty, tmp_path, "--iters", "200")
    try:
        r, elapsed = run_with_fault(args, 200, started(tmp_path), lambda: faulty.fault("qnode02", "link-down"))
    finally:
        faulty.fault("qnode02", "link-up")
    data = load_json(out)
    assert r.returncode in (1, 3)
    # bounded: the setting's timeout, the kill and the reconnect timeouts
    assert elapsed < TIMEOUT + 60, elapsed
    text = r.stdout
    assert "qnode02" in text
    checks = {(f["check"], f.get("host")) for s in data["settings"] for f in s["findings"]} | \
             {(f["check"], f.get("host")) for f in data["findings"]}
    assert ("probe.unreachable", "qnode02") in checks or ("probe.timeout", "qnode02") in checks, checks
    assert_clean(faulty, data)


def test_kill_9_of_nccldiag_leaves_nothing_on_the_nodes(faulty, tmp_path):
    """nccldiag itself killed with SIGKILL mid-run: each node's watchdog sees its SSH session gone,
    kills the run's processes and removes the run directory, within a few seconds."""
    import signal
    import subprocess
    import sys

    args, _ = probe_faulty(faulty, tmp_path, "--iters", "2000", timeout=120)
    proc = subprocess.Popen([sys.executable, "-m", "nccldiag", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_for(started(tmp_path), 120, "the probe to report its first result")
        # the run directory on the first node is named after the run (each node has its own /tmp)
        dirs = faulty.ssh(faulty.hosts[0], "ls -d /tmp/nccldiag-*", timeout=30).stdout.split()
        assert len(dirs) == 1, dirs
        run_id = dirs[0].rsplit("/", 1)[1]
        assert all(probe_processes(faulty, n, run_id) for n in faulty.hosts), "ranks run on every node"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def gone():
        return all(probe_processes(faulty, n, run_id) == [] and
                   faulty.ssh(n, f"test -e /tmp/{run_id} && echo left; true", timeout=30).stdout.strip() == ""
                   for n in faulty.hosts)

    # the watchdog polls once a second; the bound allows for SSH round trips on a loaded machine
    wait_for(gone, 30, "the nodes' watchdogs to remove the killed run")


def test_rendezvous_port_blocked(faulty, tmp_path):
    rule = ["iptables", "-w", "10", "-I", "INPUT", "-p", "tcp", "!", "--dport", "22", "-m", "conntrack",
            "--ctstate", "NEW", "-j", "DROP"]
    faulty.exec("qnode01", rule, check=True)
    try:
        args, out = probe_faulty(faulty, tmp_path, timeout=30)
        r, elapsed = timed(args, timeout=200)
    finally:
        faulty.exec("qnode01", [*rule[:3], "-D", *rule[4:]], check=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert elapsed < 30 + 40, elapsed
    data = load_json(out)
    (setting,) = data["settings"]
    assert setting["status"] != "ok"
    culprits = {f.get("host") for f in setting["findings"] if f["status"] == "fail"}
    assert "qnode02" in culprits or "qnode01" in culprits, setting["findings"]
    assert_clean(faulty, data)


@pytest.mark.parametrize("launcher", ["torchrun", "clush"])
def test_one_rank_killed(faulty, tmp_path, launcher):
    args, out = probe_faulty(faulty, tmp_path, "--iters", "100", "--launcher", launcher)

    def kill_a_rank():
        # the virtual nodes share one PID namespace: pick the rank in qnode02's network namespace
        cmd = ("me=$(readlink /proc/self/ns/net); for p in /proc/[0-9]*; do "
               "if [ \"$(readlink $p/ns/net 2>/dev/null)\" = \"$me\" ] && grep -qsaz '^NCCLDIAG_RUN=' $p/environ && "
               "grep -qsa 'nccldiag.node.worker' $p/cmdline && grep -qsaz '^LOCAL_RANK=1$' $p/environ; then "
               "kill -9 ${p#/proc/}; echo killed ${p#/proc/}; fi; done")
        r = faulty.ssh("qnode02", cmd, ["-o", "ConnectTimeout=10"], timeout=30)
        assert "killed" in r.stdout, r.stdout + r.stderr

    r, elapsed = run_with_fault(args, 200, started(tmp_path), kill_a_rank)
    assert r.returncode == 1, r.stdout + r.stderr
    assert elapsed < TIMEOUT + 40, elapsed
    data = load_json(out)
    (setting,) = data["settings"]
    assert setting["status"] != "ok"
    bad_hosts = {f.get("host") for f in setting["findings"] if f["status"] in ("fail", "error")}
    assert "qnode02" in bad_hosts, setting["findings"]
    assert_clean(faulty, data)


def test_hostname_resolving_to_loopback_is_detected(faulty, tmp_path):
    hosts_file = faulty.state / "hosts"
    before = hosts_file.read_text()
    hosts_file.write_text("127.0.1.1 qnode02\n" + before)  # Debian's default form, inside the nodes only
    try:
        args, out = probe_faulty(faulty, tmp_path, timeout=60)
        r, elapsed = timed(args, timeout=200)
    finally:
        hosts_file.write_text(before)
    data = load_json(out)
    loop = [f for f in data["findings"] if f["check"] == "probe.hostname_loopback"]
    assert loop and loop[0]["host"] == "qnode02" and "127.0.1.1" in loop[0]["message"]
    # nccldiag chose the interface itself, so the run works despite it
    assert r.returncode == 0, r.stdout
    assert elapsed < 60 + 30
    assert_clean(faulty, data)


# --- nodes whose own host names do not resolve, hostfile of addresses ------------------------

unnamed = vcluster_fixture(n=2, prefix="ncdu", names="unode", subnet="10.213.66", scope="module", no_hosts=True)


def test_default_launcher_works_where_host_names_do_not_resolve(unnamed, tmp_path):
    for node in unnamed.hosts:
        r = unnamed.exec(node, ["getent", "ahosts", node], timeout=20)
        assert r.returncode != 0 and not r.stdout.strip(), (node, r.stdout)  # the condition under test
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text("".join(unnamed.address(h) + "\n" for h in unnamed.hosts))
    out = tmp_path / "p.json"
    r, elapsed = timed(["probe", str(hostfile), "--ssh-config", str(unnamed.ssh_config), "--nproc-per-node", "2",
                        "--timeout", "90", "-o", str(tmp_path / "run"), "--json", str(out)], timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    assert elapsed < 60, elapsed
    data = load_json(out)
    assert data["launcher"] == "torchrun"
    (setting,) = data["settings"]
    assert setting["status"] == "ok" and setting["world_size"] == 4
    assert ALL <= set(setting["collectives"])
    for name, c in setting["collectives"].items():
        assert c["status"] == "ok", (name, c)
        assert sorted(c["ranks_ok"]) == [0, 1, 2, 3], name
    assert_clean(unnamed, data)

    # and check says why other launchers would fail there
    cj = tmp_path / "c.json"
    r, _ = timed(["check", str(hostfile), "--ssh-config", str(unnamed.ssh_config), "--only", "system",
                  "--json", str(cj)], timeout=120)
    nodes = load_json(cj)["nodes"]
    assert len(nodes) == 2
    for node in nodes:
        (f,) = [f for f in node["findings"] if f["check"] == "system.hostname_unresolved"]
        assert f["status"] == "warn" and "c10d" in f["fix"] and "/etc/hosts" in f["fix"]
    assert "system.hostname_unresolved" in r.stdout
