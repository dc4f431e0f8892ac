"""NCCL log variations real logs have: lost prefixes, NCCL 2.4's handled errors, unroutable socket
interfaces, ring orders, several runs in one file; and logs read line by line with bounded memory."""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nccldiag import diagnosis
from nccldiag.model.findings import Status
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl.parser import parse, parse_logs, parse_streams, read_lines
from tests import real

REPO = Path(__file__).resolve().parents[2]
PREFIX = re.compile(r"^(?:\[\d+,\d+\]<stdout>:)?\S+:\d+:\d+ \[\d+\] (?:NCCL INFO )?")


def by_check(findings):
    out = {}
    for f in findings:
        out.setdefault(f.check, f)
    return out


# --------------------------------------------------------------------------- lost prefixes


@pytest.mark.parametrize("name", ["net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log",
                                  "p2p-direct-pointer-and-shm-8gpu-single-process.log"])
def test_real_log_without_its_prefixes_keeps_its_transports(name):
    # The real excerpt as a log shipper re-emits it: the host:pid:tid [dev] prefix cut from every line.
    text = real.nccl_log(name).read_text()
    stripped = "\n".join(PREFIX.sub("", line) for line in text.splitlines())
    assert "NCCL INFO" not in stripped.replace("NCCL INFO ", "")
    full, cut = parse(text), parse(stripped)
    assert cut.nccl_lines > 0 and cut.unprefixed > 0
    assert cut.summary.transports == full.summary.transports
    assert len(cut.channels) == len(full.channels)
    assert all(c.at.host is None for c in cut.channels)  # read with an unknown process
    assert [p.key for p in cut.summary.pairs] == [p.key for p in full.summary.pairs]


@pytest.mark.parametrize("name", ["net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log",
                                  "p2p-direct-pointer-and-shm-8gpu-single-process.log"])
def test_real_healthy_log_without_its_prefixes_raises_no_alarm(name):
    # The same healthy excerpts with their prefixes cut (and 'NCCL INFO' kept, as pasted): no host is named, and a
    # run of two nodes that stops at nccl-tests' table header is not taken for a run of one host that stalled.
    text = real.nccl_log(name).read_text()
    stripped = "\n".join(re.sub(r"^\S+:\d+:\d+ \[\d+\] ", "", line) for line in text.splitlines()) + "\n"
    facts = parse(stripped)
    found = diagnosis.diagnose(diagnosis.Inputs(logs=facts, log_findings=nccl_checks.judge(facts)))
    assert [d.id for d in found if d.severity in ("fail", "warn")] == []


def test_reduced_and_cut_prefixes_are_read():
    # Written for this test; the cut form 'NFO Channel 07/0 : ...' is the one quoted in the issue.
    text = "\n".join([
        "NCCL INFO Bootstrap : Using ens5:10.1.0.5<0>",
        "NFO Channel 07/0 : 4[4] -> 5[5] via P2P/CUMEM/read",
        "INFO Channel 00/0 : 5[5] -> 6[6] via P2P/CUMEM/read",
        "Using network IB",
        "NCCL_IB_HCA set by environment to mlx5_0",
        "NVLS multicast support is not available on dev 4",
        "comm 0x5b0bc60 rank 4 nRanks 8 nNodes 1 localRanks 8 localRank 4 MNNVL 0",
        "comm 0x5b0bc60 rank 4 nranks 8 cudaDev 4 nvmlDev 4 busId 9b000 commId 0x1 - Init COMPLETE",
        "some application line that mentions a Channel but no NCCL message",
    ]) + "\n"
    f = parse(text)
    assert f.unprefixed == 8 and f.nccl_lines == 8
    assert [(c.src, c.dst, c.via) for c in f.channels] == [(4, 5, "P2P/CUMEM/read"), (5, 6, "P2P/CUMEM/read")]
    assert [n.name for n in f.networks] == ["IB"] and f.env_values() == {"NCCL_IB_HCA": ["mlx5_0"]}
    assert f.nvls[0].available is False and f.comms[0].nranks == 8 and f.inits[0].phase == "COMPLETE"
    assert f.bootstrap[0].interfaces[0].name == "ens5"


def test_cli_does_not_say_no_nccl_lines_for_a_prefixless_log(tmp_path):
    # Written for this test: a log made only of prefix-less NCCL lines.
    log = tmp_path / "shipped.log"
    log.write_text("NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\nNCCL INFO Using network Socket\n")
    r = subprocess.run([sys.executable, "-m", "nccldiag", "log", str(log), "--color", "never"], cwd=REPO,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert "no NCCL lines found" not in r.stdout + r.stderr and "P2P" in r.stdout
    assert "2 NCCL line(s) (2 without their NCCL prefix, process unknown)" in " ".join(r.stdout.split())


# --------------------------------------------------------------------------- NCCL 2.4 handled errors

# Written for this test, in NCCL 2.4's format: probing a container's veth for its PCI path returns
# ncclSystemError (include/net.h), which init handles; the thread then connects its rings.
BENIGN_24 = """\
node-a:4242:4242 [0] NCCL INFO NET/Socket : Using [0]ens5:10.1.0.5<0>
node-a:4242:4242 [0] NCCL INFO Could not find real path of /sys/class/net/veth3c1f2a0/device
node-a:4242:4242 [0] NCCL INFO include/net.h:19 -> 2
node-a:4242:4242 [0] NCCL INFO Using network Socket
node-a:4242:4242 [0] NCCL INFO comm 0x7f3c58002270 rank 0 nranks 2 cudaDev 0 nvmlDev 0
node-a:4242:4242 [0] NCCL INFO Ring 00 :    0   1
node-a:4242:4242 [0] NCCL INFO Ring 00 : 0 -> 1 via NET/Socket/0
node-a:4242:4242 [0] NCCL INFO Launch mode Parallel
"""


def test_24_era_chain_whose_thread_goes_on_is_not_a_failure():
    f = parse(BENIGN_24)
    (oc,) = f.orphan_chains
    assert oc.result == 2 and oc.benign and not oc.failed and "via NET/Socket/0" in oc.resumed
    assert f.summary.failures == 0 and f.summary.error_results == []
    fs = by_check(nccl_checks.judge(f))
    assert "nccl.error" not in fs
    assert all(x.status != Status.FAIL for x in fs.values())


def test_the_same_chain_without_progress_is_still_a_failure():
    # Written for this test: the chain is the thread's last word.
    text = "\n".join(BENIGN_24.splitlines()[:3]) + "\n"
    f = parse(text)
    assert f.orphan_chains[0].failed and f.summary.failures == 1
    assert by_check(nccl_checks.judge(f))["nccl.error"].status == Status.FAIL


def test_real_failing_chains_stay_failures():
    for name in ("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log",
                 "duplicate-gpu-detected-mpirun-tag-output.log",
                 "net-ib-gdr-disabled-not-supported-by-gpu-ibv-create-qp-failure.log"):
        f = parse(real.nccl_log(name).read_text(), name)
        assert f.summary.failures > 0, name
        assert not any(o.benign for o in f.orphan_chains), name


# --------------------------------------------------------------------------- unroutable socket interfaces


def test_veth_and_link_local_bootstrap_interfaces_are_named_with_the_fix():
    # Written for this test; the interface list is the one the issue quotes.
    text = ("node-a:7:7 [0] NCCL INFO Bootstrap : Using [0]ens5:10.1.0.5<0> "
            "[1]veth9a8b7c6:fe80::1%veth9a8b7c6<0>\n")
    f = parse(text)
    sock = by_check(nccl_checks.judge(f))["nccl.socket_if"]
    assert sock.status == Status.WARN  # one host in the log: not known to be a multi-node run
    assert "veth9a8b7c6" in sock.message and "ens5" not in sock.actual
    assert "NCCL_SOCKET_IFNAME=ens5" in sock.fix


def test_unroutable_interface_fails_a_multi_node_run_and_explains_a_socket_fallback():
    # Written for this test: two nodes whose NET/Socket took docker0 and a link-local-only interface.
    text = "\n".join([
        "node-a:1:1 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0> [1]eth1:169.254.3.4<0>",
        "node-b:2:2 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0> [1]eth1:169.254.3.9<0>",
        "node-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
        "node-a:1:9 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0",
    ]) + "\n"
    fs = by_check(nccl_checks.judge(parse(text)))
    sock = fs["nccl.socket_if"]
    assert sock.status == Status.FAIL and "docker0" in sock.message and "eth1 (its only address is link-local)" in \
        sock.message
    assert "NCCL_SOCKET_IFNAME=<the routable data interface" in sock.fix
    net = fs["nccl.network"]
    assert "cannot carry inter-node traffic" in net.message and "NCCL_SOCKET_IFNAME" in net.fix


def test_a_veth_listed_after_a_good_bootstrap_interface_is_a_warning_even_across_nodes():
    # Written for this test: NCCL's bootstrap connects over its first interface; the veth beside it is named.
    text = "\n".join([
        "node-a:1:1 [0] NCCL INFO Bootstrap : Using [0]ens5:10.1.0.5<0> [1]veth9a8b7c6:fe80::1%veth9a8b7c6<0>",
        "node-b:2:2 [0] NCCL INFO Bootstrap : Using [0]ens5:10.1.0.6<0> [1]veth0c1d2e3:fe80::1%veth0c1d2e3<0>",
        "node-a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
    ]) + "\n"
    sock = by_check(nccl_checks.judge(parse(text)))["nccl.socket_if"]
    assert sock.status == Status.WARN and "veth9a8b7c6" in sock.message and "veth0c1d2e3" in sock.message


def test_app_lines_quoting_nccl_words_stay_app_lines():
    # Written for this test: PyTorch's error line quotes NCCL's WARN text.
    f = parse("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.18.1\n"
              "ncclSystemError: Last error: NCCL WARN Call to ibv_create_qp failed\n")
    assert [a.kind for a in f.app_errors] == ["torch"] and f.unprefixed == 1


def test_nccl_shm_failure_quoted_without_its_prefix_is_read_as_its_warn():
    # Written for this test: NCCL's own words for a /dev/shm segment it could not create, quoted by a user without
    # the 'NCCL WARN' prefix, alone and after PyTorch's 'Last error:' (read once, not twice).
    alone = parse("Error while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 7340384)\n")
    assert [(w.kind, w.origin) for w in alone.warns] == [("shm", "last-error")]
    quoted = parse("ncclSystemError: System call (e.g. socket, malloc) or external library call failed.\n"
                   "Last error:\n"
                   "Error while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 7340384)\n")
    assert [w.kind for w in quoted.warns] == ["shm"]
    found = diagnosis.diagnose(diagnosis.Inputs(logs=alone, log_findings=nccl_checks.judge(alone)))
    assert found and found[0].category == "shm_too_small" and found[0].severity == "fail"


def test_the_words_of_a_healthy_run_are_not_taken_for_a_quoted_warn():
    # Written for this test: lines that mention /dev/shm or shared memory without NCCL's failure words.
    f = parse("Filesystem      Size  Used Avail Use% Mounted on\n"
              "shm              64M     0   64M   0% /dev/shm\n"
              "node-a:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n")
    assert f.warns == []


def test_no_real_log_names_an_unroutable_interface():
    for name in real.names(real.nccl_log(), "*.log"):
        f = parse(real.nccl_log(name).read_text(), name)
        assert "nccl.socket_if" not in by_check(nccl_checks.judge(f)), name


# --------------------------------------------------------------------------- ring orders and runs


def test_ring_order_gives_the_world_and_marks_rank_0():
    f = parse(real.nccl_log("net-ib-gdr-disabled-not-supported-by-gpu-ibv-create-qp-failure.log").read_text())
    (ring,) = f.rings
    assert ring.order == [0, 1] and ring.nranks == 2 and ring.at.host == "node-a"
    assert f.summary.nranks == [2]


def test_two_rank0_excerpts_of_separate_runs_are_not_a_version_mismatch():
    # Written for this test: two runs' rank-0 excerpts pasted into one file, as issue threads do.
    text = "\n".join([
        "NCCL version 2.18.3+cuda12.2",
        "node-a:10:10 [0] NCCL INFO Channel 00/02 :    0   1",
        "node-a:10:10 [0] NCCL INFO Channel 01/02 :    0   1",
        "[...]",
        "NCCL version 2.21.5+cuda12.4",
        "Channel 00/02 :    0   1   2   3",
        "node-b:20:20 [0] NCCL INFO Using network IB",
    ]) + "\n"
    f = parse(text)
    assert f.summary.versions == ["2.18.3", "2.21.5"] and f.summary.nranks == [2, 4]
    assert [(v.rank0, v.world) for v in f.versions] == [(True, 2), (True, 4)]
    v = by_check(nccl_checks.judge(f))["nccl.version"]
    assert v.status == Status.OK and "separate runs" in v.message


def test_separate_runs_and_the_versions_diagnosis_agree():
    # Written for this test: two runs pasted one after the other, each version printed by its own rank 0 (bare in
    # the first, behind its prefix in the second), each with its world; then one run whose ranks differ.
    two = ("NCCL version 2.18.3+cuda12.2\n"
           "node-a:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
           "node-b:20:20 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
           "node-b:20:20 [0] NCCL INFO comm 0x2 rank 0 nRanks 4 nNodes 2 localRanks 2 localRank 0 MNNVL 0\n")
    f = parse(two)
    assert [(v.rank0, v.world) for v in f.versions] == [(True, 2), (True, 4)]
    assert nccl_checks.separate_runs(f) and not nccl_checks.versions_differ(f)
    findings = nccl_checks.judge(f)
    assert by_check(findings)["nccl.version"].status == Status.OK
    diags, _ = diagnosis.conclude(logs=f, log_findings=list(findings))
    assert "versions-differ" not in {d.id for d in diags}
    one = ("node-a:10:10 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
           "node-a:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
           "node-b:20:20 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
           "node-b:20:20 [0] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n")
    f = parse(one)
    assert not nccl_checks.separate_runs(f) and nccl_checks.versions_differ(f)
    findings = nccl_checks.judge(f)
    assert by_check(findings)["nccl.version"].status == Status.FAIL
    diags, _ = diagnosis.conclude(logs=f, log_findings=list(findings))
    (d,) = [d for d in diags if d.id == "versions-differ"]
    assert d.severity == "fail" and d.nodes == ["node-a", "node-b"]


# --------------------------------------------------------------------------- plugin and driver lines, no prefix


def test_plugin_and_cuda_driver_lines_read_without_their_prefix():
    # The real excerpt's plugin and driver lines with the host:pid:tid [dev] prefix cut, and again with it cut
    # down to 'NCCL INFO ' (as log shippers and launchers re-emit them).
    name = "socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log"
    text = real.nccl_log(name).read_text()
    full = parse(text)
    wanted = [(p.kind, p.value) for p in full.plugins]
    assert ("path", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so") in wanted and ("p2p_plugin", "IBext") in wanted
    drivers = sum(1 for n in full.notes if n.kind == "cuda_driver")
    assert drivers > 0
    keep = [line for line in text.splitlines() if "lugin" in line or "cudaDriverVersion" in line]
    bare = "\n".join(PREFIX.sub("", line) for line in keep) + "\n"
    info = "\n".join("NCCL INFO " + PREFIX.sub("", line) for line in keep) + "\n"
    for cut in (parse(bare), parse(info)):
        assert [(p.kind, p.value) for p in cut.plugins] == wanted
        assert sum(1 for n in cut.notes if n.kind == "cuda_driver") == drivers
        assert cut.unprefixed == len(keep)


@pytest.mark.parametrize("line, kind, value", [
    # Written for this test, in the words of NCCL's net plugin loader (src/plugin/net.cc), prefix lost.
    ("NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)", "loaded_net", "NCCL RDMA Plugin v8 (v8)"),
    ("NET/Plugin: Loaded collnet plugin SHARP (v8)", "loaded_collnet", "SHARP (v8)"),
    ("NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)", "loaded_net", "NCCL RDMA Plugin v8 (v8)"),
    ("[1,0]<stdout>:P2P plugin IBext_v8", "p2p_plugin", "IBext_v8"),
    ("Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", "path",
     "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"),
])
def test_unprefixed_plugin_line(line, kind, value):
    f = parse(line + "\n")
    assert [(p.kind, p.value) for p in f.plugins] == [(kind, value)] and f.unprefixed == 1


# --------------------------------------------------------------------------- socket interfaces and nodes


def test_net_connection_lines_prove_an_inter_node_run():
    # Real: the veth carries NET/Socket connections between the hosts (both named 'worker'); read alone.
    from tests import realcases

    case = realcases.CASES / "net-oneflow3586-veth-linklocal-net-socket-connect-timeout"
    if not case.is_dir():
        pytest.skip(real.REASON)
    f = parse_streams([(str(p), open(p, "rb")) for p in sorted(case.glob("*.log"))])
    assert len({p.host for p in f.procs}) == 1
    assert by_check(nccl_checks.judge(f))["nccl.socket_if"].status == Status.FAIL


def test_two_single_host_runs_in_one_file_are_not_pooled_into_a_multi_node_one():
    # Written for this test: two separate single-host runs (each version printed by its own rank 0, each ring
    # order on its own host), each bootstrapping over a docker bridge; no line shows traffic between nodes.
    run = ("NCCL version 2.18.3+cuda12.2\n"
           "{h}:1:1 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>\n"
           "{h}:1:1 [0] NCCL INFO Channel 00/02 :    0   1\n"
           "{h}:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n")
    f = parse(run.format(h="node-a") + run.format(h="node-b"))
    assert nccl_checks.separate_runs(f)
    assert by_check(nccl_checks.judge(f))["nccl.socket_if"].status == Status.WARN
    one = parse(run.format(h="node-a"))
    assert by_check(nccl_checks.judge(one))["nccl.socket_if"].status == Status.WARN


# --------------------------------------------------------------------------- hosts of rank pairs


def test_the_peer_of_a_p2p_or_shm_connection_is_on_the_same_host():
    f = parse(real.nccl_log("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log").read_text())
    local = [p for p in f.summary.pairs if set(p.categories) <= {"P2P", "SHM"}]
    assert local and all(p.dst_hosts and p.dst_hosts == p.src_hosts for p in local)
    assert "12->11" in {p.key for p in local}  # rank 11 printed no line of its own


# --------------------------------------------------------------------------- bounded facts


def _repeated(n: int) -> str:
    # Written for this test: one healthy inter-node connection and one failing WARN, n times over.
    block = ("node-a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
             "node-b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n"
             "node-b:2:3 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer\n"
             "node-b:2:3 [0] NCCL INFO misc/socket.cc:752 -> 6\n")
    return block * n


def test_lists_keep_their_first_records_and_tallies_count_every_line():
    f = parse_logs([("job.log", _repeated(50))], keep=5)
    assert len(f.channels) == 5 and f.total("channels") == 100
    assert len(f.warns) == 5 and f.total("warns") == 50
    assert f.summary.failures == 50 and f.summary.error_results == ["ncclRemoteError"]
    (pair,) = f.summary.pairs
    assert pair.lines == 100 and pair.categories == ["NET/IB+GDRDMA", "NET/Socket"]
    fs = by_check(nccl_checks.judge(f))
    assert "50 connection(s) over NET/Socket next to 50 over NET/IB" in fs["nccl.network"].message.replace(
        " (pairs 0->1)", "")
    assert "(and 4 more)" in fs["nccl.remote_closed"].message  # the kept ones; every one is counted above


def test_overlong_lines_are_cut_without_being_held():
    data = b"node-a:1:1 [0] NCCL INFO Using network IB\n" + b"x" * 300_000 + b"\nNCCL INFO Using network Socket\n"
    lines = list(read_lines(io.BytesIO(data), max_line=1024))
    assert len(lines) == 3 and len(lines[1]) == 1024
    f = parse_streams([("big.log", io.BytesIO(data))])
    assert [n.name for n in f.networks] == ["IB", "Socket"] and f.lines == 3


def test_nccldiag_log_memory_stays_flat_on_a_large_log(tmp_path):
    """A 24 MiB log of real excerpts: the whole-text parser needed 10-35x the log's size."""
    real.require()
    parts = [p.read_bytes() for p in sorted(real.nccl_log().glob("*.log"))]
    blob = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)
    log = tmp_path / "job.log"
    with open(log, "wb") as fh:
        for _ in range(24 * 1024 * 1024 // len(blob) + 1):
            fh.write(blob)
    # The child reports its own high-water mark (VmHWM, reset at exec): ru_maxrss would count the pages of this
    # pytest process that the fork copied before the exec.
    report = ("import atexit, runpy, sys; "
              "atexit.register(lambda: sys.stderr.write([l for l in open('/proc/self/status') "
              "if l.startswith('VmHWM')][0])); "
              "sys.argv = ['nccldiag'] + sys.argv[1:]; runpy.run_module('nccldiag', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", report, "log", str(log), "--json", str(tmp_path / "r.json")],
                       cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 1, r.stderr  # the excerpts hold failures
    m = re.search(r"VmHWM:\s*(\d+) kB", r.stderr)
    assert m, r.stderr
    peak_mib = int(m.group(1)) / 1024
    assert peak_mib < 150, f"peak RSS {peak_mib:.0f} MiB for a 24 MiB log"


def test_per_thread_state_and_categories_stay_bounded(monkeypatch):
    from nccldiag.nccl import parser as nccllog

    monkeypatch.setattr(nccllog, "MAX_THREADS", 8)
    monkeypatch.setattr(nccllog, "MAX_CATEGORIES", 4)
    # Written for this test: a new thread id on every WARN, and a new NET plugin name on every channel line.
    lines = []
    for i in range(100):
        lines.append(f"node-a:1:{i} [0] misc/x.cc:1 NCCL WARN Connection closed by remote peer")
        lines.append(f"node-a:1:{i} [0] NCCL INFO misc/x.cc:2 -> 6")
        lines.append(f"node-a:1:{1000 + i} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Plug{i}/0")
    p = nccllog.Parser(keep=5)
    p.feed_lines(lines, "hostile.log")
    assert len(p.open_warn) <= 8 and len(p.f.channel_stats) <= 5
    f = p.finish()
    assert f.summary.failures == 100 and f.total("channels") == 100
    assert sum(st.lines for st in f.channel_stats.values()) == 100


def test_a_device_is_refused_before_anything_is_read():
    r = subprocess.run([sys.executable, "-m", "nccldiag", "log", "/dev/zero"], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and "/dev/zero: is a device or socket" in r.stderr and "Traceback" not in r.stderr


def test_gdr_disabled_for_a_gpu_with_its_device_in_brackets_is_read():
    # written for this test, in NCCL 2.1x's words: 'GPU <index>[<device>]'
    from nccldiag.nccl import parser as nccllog

    f = nccllog.parse("m:1:2 [2] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 "
                      "(distance 3 >= 2)\n", "job.log")
    (g,) = f.gdr
    assert (g.enabled, g.gpu, g.hca, g.net, g.reason) == (False, "2", "0", "IB", "distance 3 >= 2")
