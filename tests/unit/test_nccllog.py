"""NCCL log parser and transport findings, on real log excerpts (../shared/fixtures/nccl-logs) and constructed lines."""
import json

import pytest

from nccldiag import diagnosis
from nccldiag.model.findings import Status, to_jsonable
from nccldiag.nccl.grammar import parse_via
from nccldiag.nccl.parser import parse, parse_logs
from nccldiag.nccl import checks as nccl_checks
from nccldiag.report import log_report as report
from tests import real

ALL = real.names(real.NCCL_LOGS, "*.log")


def load(name):
    return parse(real.nccl_log(name).read_text(), name)


def by_check(findings):
    out = {}
    for f in findings:
        out.setdefault(f.check, f)
    return out


def code(facts, findings):
    """The log report's exit code, its diagnoses computed as ``nccldiag log`` computes them."""
    return report.exit_code(findings, diagnosis.conclude(logs=facts, log_findings=list(findings)))


def statuses(findings):
    return {f.check: f.status for f in findings}


# --------------------------------------------------------------------------- every fixture


def test_every_fixture_is_covered():
    real.require()
    assert len(ALL) == 9
    listed = real.nccl_log("SOURCES.md").read_text()
    for name in ALL:
        assert f"`{name}`" in listed


@pytest.mark.parametrize("name", ALL)
def test_fixture_parses_and_serialises(name):
    facts = load(name)
    assert facts.nccl_lines > 0 or facts.watchdogs
    findings = nccl_checks.judge(facts)
    diagnosed = diagnosis.conclude(logs=facts, log_findings=list(findings))
    data = report.to_json(facts, findings, diagnosed)
    json.dumps(data)
    assert data["schema"] == "nccldiag.log/1"
    assert data["exit_code"] == report.exit_code(findings, diagnosed)


# --------------------------------------------------------------------------- per fixture


def test_socket_fallback_ibext_16rank():
    f = load("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log")
    s = f.summary
    assert s.transports == ["NET/Socket", "P2P"]
    assert not s.net_ib_used and not s.gdrdma_used
    assert [b.interfaces[0].name for b in f.bootstrap] == ["ibp12s0"] * 8
    assert f.bootstrap[0].interfaces[0].address == "192.0.2.32<0>"
    assert [(p.kind, p.value) for p in f.plugins] == [
        ("path", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"), ("p2p_plugin", "IBext")]
    pairs = {p.key: p for p in s.pairs}
    assert pairs["8->15"].categories == ["P2P"] and pairs["8->15"].vias == ["P2P/IPC/read"]
    assert pairs["8->15"].channels == [1, 2, 3, 4, 5, 6, 7]
    assert pairs["15->6"].categories == ["NET/Socket"] and pairs["15->6"].vias == ["NET/Socket/3"]
    assert pairs["0->8"].categories == ["NET/Socket"]
    p2p = [c for c in f.channels if c.transport == "P2P"]
    assert all(c.mode == "IPC" and c.read and not c.ce for c in p2p)
    recv = next(c for c in f.channels if c.direction == "receive")
    assert (recv.src, recv.dst, recv.net, recv.net_dev, recv.gdrdma) == (0, 8, "Socket", 0, False)
    # The cut excerpt starts with a call chain whose WARN is missing, then three WARNs.
    assert len(f.orphan_chains) == 1 and f.orphan_chains[0].result == 2
    assert [s.file for s in f.orphan_chains[0].steps] == [
        "misc/socket.cc", "misc/socket.cc", "transport/net_socket.cc", "transport/net.cc", "proxy.cc"]
    assert [(w.file, w.line, w.kind) for w in f.warns] == [
        ("proxy.cc", 1485, "proxy"), ("proxy.cc", 1519, "proxy"), ("misc/socket.cc", 49, "remote_closed")]
    assert all(w.failure for w in f.warns)
    assert f.warns[2].at.host == "<cluster_name>" and f.warns[2].at.pid == 922 and f.warns[2].at.dev == 3
    assert s.error_results == ["ncclSystemError"]
    proc = {p.name: p for p in f.procs}
    assert proc["<cluster_name>:919"].ranks == [8] and proc["<cluster_name>:919"].devs == [0]

    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.network"].status == Status.WARN
    assert "fell back to NET/Socket" in fs["nccl.network"].message
    assert any("P2P plugin IBext" in e for e in fs["nccl.network"].evidence)
    assert fs["nccl.remote_closed"].status == Status.FAIL
    assert fs["nccl.proxy"].status == Status.FAIL
    assert "nccl.gdrdma" not in fs
    required = by_check(nccl_checks.judge(f, require_ib=True))
    assert required["nccl.network"].status == Status.FAIL
    assert required["nccl.network"].expected == "NET/IB"


def test_p2p_direct_pointer_and_shm_single_process():
    f = load("p2p-direct-pointer-and-shm-8gpu-single-process.log")
    s = f.summary
    assert s.transports == ["P2P", "SHM"]
    assert [p.name for p in f.procs] == ["node-a:3884652", "node-a:3884994"]
    assert f.procs[0].ranks == list(range(8)) and f.procs[0].devs == list(range(8))
    pairs = {p.key: p for p in s.pairs}
    assert pairs["7->6"].vias == ["P2P/direct pointer"]
    assert pairs["2->1"].vias == ["SHM/direct/direct"] and pairs["2->1"].categories == ["SHM"]
    # Two runs in one file: 0->4 went over SHM in one and P2P (connIndex 1) in the other.
    assert pairs["0->4"].categories == ["P2P", "SHM"]
    shm = next(c for c in f.channels if c.transport == "SHM")
    assert (shm.conn_index, shm.mode) == (None, "direct/direct")
    p2p1 = next(c for c in f.channels if c.conn_index == 1)
    assert p2p1.mode == "direct pointer" and p2p1.channel == 1 and (p2p1.src, p2p1.dst) == (0, 3)
    assert [c.what for c in f.connected] == ["all rings"] * 4
    assert not f.warns and s.failures == 0
    fs = nccl_checks.judge(f)
    assert statuses(fs) == {"nccl.transports": Status.OK}
    assert code(f, fs) == 0


def test_net_ib_gdrdma_p2p_cumem_nccltests():
    f = load("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log")
    s = f.summary
    assert s.transports == ["NET/IB+GDRDMA", "P2P"]
    assert s.net_ib_used and s.gdrdma_used
    assert s.ranks == [0, 1, 2, 3] and s.hosts == ["node-a", "node-b"]
    (comm,) = f.comms
    assert (comm.rank, comm.nranks, comm.nnodes, comm.local_ranks, comm.local_rank, comm.mnnvl) == (3, 4, 2, 2, 1, 0)
    assert [(e.phase, e.rank, e.cuda_dev, e.bus_id) for e in f.inits] == [
        ("COMPLETE", 1, 1, "38000"), ("COMPLETE", 0, 0, "18000"), ("COMPLETE", 2, 0, "18000"), ("COMPLETE", 3, 1, "38000")]
    assert f.inits[0].comm_id == "0xf021d9037f9243d8"
    pairs = {p.key: p for p in s.pairs}
    assert pairs["1->3"].vias == ["NET/IB/2/GDRDMA"]
    assert (pairs["1->3"].src_hosts, pairs["1->3"].dst_hosts) == (["node-a"], ["node-b"])
    assert pairs["3->2"].vias == ["P2P/CUMEM"] and pairs["3->2"].src_hosts == ["node-b"]
    send = next(c for c in f.channels if c.direction == "send")
    assert (send.net, send.net_dev, send.gdrdma, send.proxy_rank, send.pci, send.shared) == ("IB", 2, True, None, False, False)
    counts = f.channel_counts[0]
    assert (counts.coll, counts.collnet, counts.nvls, counts.p2p, counts.p2p_per_peer) == (8, 0, 0, 8, 2)
    assert not s.nvls_used and not s.collnet_used
    # The nccl-tests table header interleaved with NCCL lines did not disturb them.
    assert not f.warns and not f.app_errors
    fs = by_check(nccl_checks.judge(f, require_ib=True))
    assert fs["nccl.network"].status == Status.OK and "NET/IB" in fs["nccl.network"].message
    assert fs["nccl.gdrdma"].status == Status.OK
    assert fs["nccl.init"].status == Status.OK and "4 rank" in fs["nccl.init"].message
    assert code(f, list(fs.values())) == 0


def test_old_format_gdr_disabled_and_ibv_create_qp():
    f = load("net-ib-gdr-disabled-not-supported-by-gpu-ibv-create-qp-failure.log")
    (w,) = f.warns
    assert (w.file, w.line, w.func, w.kind) == ("misc/ibvwrap.cu", 280, None, "ibv")
    assert w.detail["fn"] == "ibv_create_qp"
    assert [(s.file, s.line, s.code) for s in w.chain] == [
        ("transport/net_ib.cu", 371, 2), ("transport/net_ib.cu", 449, 2), ("include/net.h", 25, 2),
        ("transport/net.cu", 290, 2), ("init.cu", 519, 2), ("init.cu", 593, 2)]
    assert w.result == 2 and w.result_name == "ncclSystemError"
    # The GDR line was wrapped in the post; the parser joins the two halves.
    assert [(g.enabled, g.gpu, g.hca, g.reason) for g in f.gdr] == [(False, "0", "mlx4_0", "not supported by GPU")] * 2
    assert f.gdr[0].text.endswith("(not supported by GPU)")
    assert [c.label for c in f.channels] == ["Ring", "Ring"]
    assert [(c.src, c.dst, c.category, c.gdrdma) for c in f.channels] == [(0, 1, "NET/IB", False), (1, 0, "NET/IB", False)]
    assert [n.devices[0].name for n in f.nets] == ["mlx4_0", "mlx4_0"] and f.nets[0].devices[0].port == 2
    assert [(c.rank, c.nranks) for c in f.comms] == [(0, 2), (1, 2), (0, 2), (1, 2)]
    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.gdrdma"].status == Status.WARN
    assert "not supported by GPU" in fs["nccl.gdrdma"].message
    assert fs["nccl.ib_verbs"].status == Status.FAIL
    assert "memlock" in fs["nccl.ib_verbs"].message and "limits.conf" in fs["nccl.ib_verbs"].fix
    assert fs["nccl.ib_verbs"].host == "node-b"


def test_nvls_channels_then_watchdog_timeout():
    f = load("nvls-16-channels-then-watchdog-timeout-allgather.log")
    s = f.summary
    assert s.nvls_used and s.transports == ["NVLS"]
    assert sorted(n.head_rank for n in f.nvls if n.kind == "comm") == [0, 1, 2, 3]
    assert {n.n_heads for n in f.nvls} == {4}
    assert [(c.coll, c.nvls, c.collnet) for c in f.channel_counts] == [(16, 16, 0)] * 3
    (wd,) = f.watchdogs
    assert (wd.rank, wd.seq, wd.op_type, wd.numel_in, wd.numel_out, wd.timeout_ms, wd.ran_for_ms) == (
        0, 34397, "_ALLGATHER_BASE", 376320, 1505280, 1800000, 1800006)
    assert wd.at.lineno == 13
    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.watchdog"].status == Status.FAIL
    assert fs["nccl.watchdog"].message.startswith("Watchdog timeout in _ALLGATHER_BASE on rank 0")
    assert "NVLS" in fs["nccl.transports"].message
    assert code(f, list(fs.values())) == 1


def test_nvls_cuda_failure_timestamped_warn():
    f = load("nvls-multicast-cuda-failure-401-timestamped-warn.log")
    (w,) = f.warns
    assert w.timestamp == "2025-07-21 19:05:29"
    assert (w.at.host, w.at.pid, w.at.tid, w.at.dev) == ("node-a", 27907, 27907, 1)
    assert (w.file, w.line) == ("transport/nvls.cc", 254)
    assert w.kind == "nvls" and w.failure
    assert w.detail == {"code": "401", "err": "the operation cannot be performed in the present state"}
    assert [(s.file, s.line, s.code) for s in w.chain] == [("transport/nvls.cc", 409, 1)]
    assert w.result_name == "ncclUnhandledCudaError"
    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.nvls"].status == Status.FAIL and "NCCL_NVLS_ENABLE=0" in fs["nccl.nvls"].fix


def test_duplicate_gpu_mpirun_tag_output():
    f = load("duplicate-gpu-detected-mpirun-tag-output.log")
    assert [w.kind for w in f.warns] == ["duplicate_gpu"] * 4
    assert [w.at.pid for w in f.warns] == [29880, 29882, 29878, 29883]
    assert [len(w.chain) for w in f.warns] == [3, 3, 3, 0]
    assert [s.line for s in f.warns[0].chain] == [867, 903, 916]
    assert f.warns[0].result_name == "ncclInvalidUsage"
    # mpirun --tag-output ranks are kept per process.
    proc = {p.pid: p for p in f.procs}
    assert proc[29880].launcher_ranks == [2] and proc[29878].launcher_ranks == [0]
    assert len(f.orphan_chains) == 1 and f.orphan_chains[0].at.pid == 29881
    fs = by_check(nccl_checks.judge(f))
    dup = fs["nccl.duplicate_gpu"]
    assert dup.status == Status.FAIL and dup.host == "node-a"
    assert "rank 2 and rank 0" in dup.message and "(and 3 more)" in dup.message
    assert "set_device" in dup.fix
    assert "nccl.error" not in fs  # the orphan chain belongs to the same failure


def test_watchdog_interleaved_with_ibext_gdrdma():
    f = load("watchdog-timeout-interleaved-with-p2p-ipc-and-ibext-gdrdma.log")
    s = f.summary
    assert s.transports == ["NET/IB+GDRDMA", "P2P"]
    ch = next(c for c in f.channels if c.transport == "NET")
    assert (ch.net, ch.net_dev, ch.gdrdma, ch.direction, ch.src, ch.dst) == ("IBext_v8", 7, True, "receive", 15, 7)
    assert {c.via for c in f.channels if c.transport == "P2P"} == {"P2P/IPC"}
    assert len([c for c in f.channels if c.transport == "P2P"]) == 11
    (wd,) = f.watchdogs
    assert (wd.rank, wd.seq, wd.op_type, wd.timeout_ms, wd.ran_for_ms) == (7, 5653, "ALLREDUCE", 600000, 600077)
    assert wd.text.startswith("[rank7]:[E226")
    fs = by_check(nccl_checks.judge(f, require_ib=True))
    assert fs["nccl.network"].status == Status.OK and "IBext_v8" in fs["nccl.network"].message
    assert fs["nccl.gdrdma"].status == Status.OK
    assert fs["nccl.watchdog"].status == Status.FAIL and "ALLREDUCE on rank 7" in fs["nccl.watchdog"].message


def test_watchdog_timeout_quoted_without_its_tail():
    """PyTorch's watchdog message quoted without 'ran for N milliseconds' (a forum answer or blog shortens it, and may
    break it after 'timeout:'): still a watchdog timeout of that collective, the time it ran unknown; a wrap before
    the tail brings the tail from the next line; a break inside WorkNCCL(...) or text after it is read once joined
    or not at all."""
    (wd,) = parse("Watchdog caught collective operation timeout:\nWorkNCCL(SeqNum=1, OpType=ALLREDUCE)\n\n"
                  "c10::DistBackendError: watchdog thread terminated with exception\n").watchdogs
    assert (wd.rank, wd.seq, wd.op_type, wd.timeout_ms, wd.ran_for_ms) == (None, 1, "ALLREDUCE", None, None)
    assert wd.at.lineno == 1
    (wd,) = parse("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, "
                  "NumelIn=1, NumelOut=1, Timeout(ms)=600000)\nran for 600013 milliseconds before timing out.\n").watchdogs
    assert (wd.rank, wd.seq, wd.op_type, wd.timeout_ms, wd.ran_for_ms) == (3, 7, "BROADCAST", 600000, 600013)
    assert wd.text.endswith("ran for 600013 milliseconds before timing out.")
    (wd,) = parse("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
                  "NumelOut=1, Timeout(ms)=600\n000) ran for 600013 milliseconds before timing out.\n").watchdogs
    assert (wd.seq, wd.ran_for_ms) == (7, 600013)  # read once joined (with a blank, so the timeout reads '600')
    (wd,) = parse("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLGATHER, "
                  "Timeout(ms)=1800000) ran for 18000\n").watchdogs
    assert (wd.rank, wd.seq, wd.op_type, wd.timeout_ms, wd.ran_for_ms) == (0, 2, "ALLGATHER", 1800000, None)
    assert not parse("the watchdog said: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2) and more\n"
                     ).watchdogs


def test_socket_2node_shm_extend_and_connect_abort():
    f = load("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log")
    s = f.summary
    (v,) = f.versions
    assert (v.version, v.cuda, v.inferred) == ("2.18.3", "12.2", True)
    assert v.at.proc == "ubuntu:39964"  # a bare line, attributed to the process logging just before it
    assert s.versions == ["2.18.3"] and s.versions_by_proc == {"ubuntu:39964": ["2.18.3"]}
    assert s.networks == ["Socket"]
    assert [(n.net, n.devices[0].name, n.devices[0].address) for n in f.nets] == [
        ("Socket", "ens4", "192.0.2.1<0>"), ("Socket", "ens4", "192.0.2.2<0>")]
    assert f.env_values() == {"NCCL_COMM_BLOCKING": ["1"], "NCCL_CHECK_POINTERS": ["1"], "NCCL_DMABUF_ENABLE": ["0"]}
    assert [p.kind for p in f.plugins] == ["load_failed", "none_found"]
    assert sum(1 for n in f.notes if n.kind == "ibverbs_missing") == 2
    kinds = [w.kind for w in f.warns]
    assert kinds == ["cuda_library", "shm", "shm", "shm", "shm", "shm", "socket_connect", "proxy", "remote_closed", "proxy"]
    assert not f.warns[0].failure and all(w.failure for w in f.warns[1:])
    assert f.warns[1].chain[-1].thread == "Async thread"
    assert f.warns[8].result_name == "ncclRemoteError" and f.warns[9].result_name == "ncclInternalError"
    assert s.error_results == ["ncclInternalError", "ncclRemoteError", "ncclSystemError"]
    assert [c.via for c in f.channels] == ["SHM/direct/direct", "SHM/direct/direct"]

    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.shm"].status == Status.FAIL
    assert "5967876 bytes" in fs["nccl.shm"].message and "--shm-size" in fs["nccl.shm"].fix
    assert fs["nccl.socket_connect"].status == Status.FAIL
    assert fs["nccl.remote_closed"].status == Status.FAIL
    assert fs["nccl.warn"].status == Status.WARN and "libcuda.so" in fs["nccl.warn"].message
    assert fs["nccl.version"].status == Status.OK
    # No inter-node channel line in the excerpt: picking Socket is only a failure when IB is required.
    assert fs["nccl.network"].status == Status.OK
    assert by_check(nccl_checks.judge(f, require_ib=True))["nccl.network"].status == Status.FAIL
    env = by_check(nccl_checks.judge(f, expected_env={"NCCL_DMABUF_ENABLE": "1"}))["nccl.env"]
    assert env.status == Status.FAIL and "NCCL_DMABUF_ENABLE=0 (expected 1)" in env.message
    env_ok = by_check(nccl_checks.judge(f, expected_env={"NCCL_COMM_BLOCKING": "1", "NCCL_P2P_DISABLE": "1"}))
    assert env_ok["nccl.env"].status == Status.OK and "not echoed: NCCL_P2P_DISABLE" in env_ok["nccl.env"].message


# --------------------------------------------------------------------------- across files


def test_version_mismatch_across_files():
    # Constructed, not captured: two per-process logs with different NCCL versions.
    a = "node-a:11:11 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    b = "node-b:22:22 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
    f = parse_logs({"a.log": a, "b.log": b})
    assert f.summary.versions == ["2.21.5", "2.18.3"]
    assert f.summary.versions_by_proc == {"node-a:11": ["2.21.5"], "node-b:22": ["2.18.3"]}
    v = by_check(nccl_checks.judge(f))["nccl.version"]
    assert v.status == Status.FAIL and "2.21.5 on node-a:11" in v.message and "2.18.3 on node-b:22" in v.message


def test_mismatched_version_warn():
    # Constructed, not captured: the WARN of NCCL >= 2.23.4 (format from init.cc).
    text = ("node-a:1:1 [0] init.cc:300 NCCL WARN Mismatched NCCL version detected : rank 0 version 22106 rank 1 "
            "version 21805\nnode-a:1:1 [0] NCCL INFO init.cc:1400 -> 5\n")
    f = parse(text)
    assert f.warns[0].kind == "version_mismatch" and f.warns[0].result == 5
    assert by_check(nccl_checks.judge(f))["nccl.version"].status == Status.FAIL


def test_bare_version_in_single_process_file_is_attributed():
    # Constructed, not captured: NCCL_DEBUG_FILE output, version line printed without a prefix.
    text = "NCCL version 2.19.3+cuda12.3\nnode-a:5:6 [2] NCCL INFO Using network IB\n"
    f = parse(text, "nccl.node-a.5.log")
    assert f.versions[0].at.proc == "node-a:5" and f.procs[0].versions == ["2.19.3"]
    assert f.procs[0].networks == ["IB"]


# --------------------------------------------------------------------------- tolerance (constructed lines)


def test_launcher_prefixes_timestamps_and_ansi():
    # Constructed, not captured: the same NCCL line behind the prefixes launchers and terminals add.
    core = "node-a:100:200 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read"
    lines = [
        "[1,3]<stdout>:" + core,
        "[rank3]:" + core,
        "10.0.0.1: " + core,
        "[0] " + core,
        "3: " + core,
        "2025-07-21T19:05:29.123Z " + core,
        "\x1b[32m" + core + "\x1b[0m",
        "[0m" + core + "[0m",
    ]
    f = parse("\n".join(lines) + "\n")
    assert len(f.channels) == len(lines)
    for c in f.channels:
        assert (c.at.host, c.at.pid, c.at.tid, c.at.dev) == ("node-a", 100, 200, 3)
        assert (c.src, c.dst, c.mode, c.read, c.via) == (3, 4, "CUMEM", True, "P2P/CUMEM/read")
    assert f.procs[0].launcher_ranks == [3]


def test_a_colour_code_residue_is_removed_and_the_kernel_s_mem_range_kept():
    from nccldiag.nccl import grammar

    # real: harvester/harvester#6228 (tests/cases/node-harvester6228-*): the kernel's '[mem ...]' range
    line = "vfio-pci 0000:01:00.0: BAR 1: can't reserve [mem 0x6000000000-0x63ffffffff 64bit pref]"
    assert grammar.clean(line) == line
    # constructed: reset codes whose ESC was lost, with and without digits, before a word and at the end
    assert grammar.clean("[1;31mNCCL WARN x[m") == "NCCL WARN x"
    assert grammar.clean("[mNCCL WARN x") == "NCCL WARN x"
    assert grammar.clean("[mlx5_0] port 1") == "[mlx5_0] port 1"


def test_two_records_glued_on_one_line_and_gloo_interleaving():
    # Constructed, not captured: two processes writing to one stream without a newline between them,
    # and a [Gloo] line glued to the end of a channel line.
    text = (
        "node-a:1:2 [0] NCCL INFO Connected all rings, use ring PXN 1 GDR 1 node-b:3:4 [1] NCCL INFO Using network IB\n"
        "node-a:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] [send] via NET/IB/0(5)/GDRDMA(PCI)/Shared"
        "[Gloo] Rank 0 is connected to 1 peer ranks.\n"
    )
    f = parse(text)
    assert [(c.what, c.pxn, c.gdr) for c in f.connected] == [("all rings", 1, 1)]
    assert [(n.name, n.at.host) for n in f.networks] == [("IB", "node-b")]
    (ch,) = f.channels
    assert (ch.net_dev, ch.proxy_rank, ch.gdrdma, ch.pci, ch.shared) == (0, 5, True, True, True)
    assert ch.category == "NET/IB+GDRDMA"


def test_warn_with_function_and_chain_interleaved_with_other_threads():
    # Constructed, not captured: the 2.30 WARN form '(func)', another thread's line between chain frames.
    text = (
        "\n"
        "[2026-01-02 03:04:05] h:1:10 [0] misc/ibvwrap.cc:200 (wrap_ibv_reg_mr) NCCL WARN Call to ibv_reg_mr failed "
        "with error Cannot allocate memory\n"
        "h:1:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
        "h:1:10 [0] NCCL INFO transport/net_ib.cc:900 -> 2\n"
        "h:1:10 [0] NCCL INFO init.cc:100 -> 2\n"
        "h:1:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
        "h:1:10 [0] NCCL INFO init.cc:200 -> 3\n"
    )
    f = parse(text)
    (w,) = f.warns
    assert (w.func, w.timestamp, w.kind, w.detail["fn"], w.detail["err"]) == (
        "wrap_ibv_reg_mr", "2026-01-02 03:04:05", "ibv", "ibv_reg_mr", "Cannot allocate memory")
    assert [s.line for s in w.chain] == [900, 100]
    # A non-chain line of the same thread closes the chain; the next frame starts an orphan chain.
    assert [o.result for o in f.orphan_chains] == [3]
    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.ib_verbs"].status == Status.FAIL and "memlock" in fs["nccl.ib_verbs"].message


@pytest.mark.parametrize("via,expected", [
    ("P2P/CUMEM/read", {"transport": "P2P", "mode": "CUMEM", "read": True, "ce": False}),
    ("P2P/CUMEM/CE", {"transport": "P2P", "mode": "CUMEM", "ce": True}),
    ("P2P/MNNVL", {"transport": "P2P", "mode": "MNNVL"}),
    ("P2P/indirect/2[2]/read", {"transport": "P2P", "mode": "indirect", "relay": 2, "read": True}),
    ("P2P/direct pointer/read", {"transport": "P2P", "mode": "direct pointer", "read": True}),
    ("SHM/direct", {"transport": "SHM", "mode": "direct"}),
    ("SHM/CE/direct", {"transport": "SHM", "mode": "CE/direct"}),
    ("direct shared memory", {"transport": "SHM"}),
    ("NET/IB/1", {"transport": "NET", "net": "IB", "net_dev": 1, "gdrdma": False}),
    ("NET/IB/3(11)/GDRDMA", {"transport": "NET", "net_dev": 3, "proxy_rank": 11, "gdrdma": True}),
    ("NET/AWS Libfabric/0/GDRDMA", {"transport": "NET", "net": "AWS Libfabric", "gdrdma": True}),
    ("COLLNET/IBext/0/GDRDMA", {"transport": "COLLNET", "net": "IBext", "gdrdma": True}),
])
def test_parse_via(via, expected):
    # Constructed from the format strings of transport/p2p.cc, shm.cc, net.cc and coll_net.cc.
    got = parse_via(via)
    for k, v in expected.items():
        assert got[k] == v, (via, k, got)


def test_init_lines_nic_lines_gdr_and_env_formats():
    # Constructed from NCCL's format strings (init.cc, net_ib, net_socket.cc, graph/topo.cc, misc/param.cc).
    text = "\n".join([
        "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eno1:10.0.0.1<0>",
        "h:1:1 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} ; OOB eth0:10.0.0.2<0>",
        "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
        "h:1:1 [0] NCCL INFO NET/IB : No device found.",
        "h:1:1 [0] NCCL INFO Bootstrap: Using [0]eth0:10.0.0.1<0> [1]eth1:fe80::1%eth1<0>",
        "h:1:1 [0] NCCL INFO ncclCommInitRankConfig comm 0xabc rank 2 nranks 8 cudaDev 0 nvmlDev 4 busId 1b000 "
        "commId 0x1234 - Init START",
        "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
        "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
        "h:1:1 [0] NCCL INFO 2 coll channels, 2 p2p channels, 1 p2p channels per peer",
        "h:1:1 [0] NCCL INFO NET/Plugin: Loaded collnet plugin SHARP (v8)",
        "h:1:1 [0] NCCL INFO CollNet 00/0 : 2 [send] via COLLNET/SHARP/0/GDRDMA",
    ])
    f = parse(text)
    ib = f.nets[0]
    assert [(d.index, d.name, d.port, d.link) for d in ib.devices] == [(0, "mlx5_0", 1, "IB"), (1, "mlx5_1", 1, "RoCE")]
    assert ib.relaxed_ordering and (ib.oob.name, ib.oob.address) == ("eno1", "10.0.0.1<0>")
    assert [(d.name, d.merged) for d in f.nets[1].devices] == [("mlx5_2", True), ("mlx5_3", True)]
    assert [(g.enabled, g.hca, g.hca_name, g.net) for g in f.gdr] == [(True, "0", "mlx5_0", "IB")]
    assert [n.kind for n in f.notes] == ["ib_no_device"]
    assert [(i.name, i.address) for i in f.bootstrap[0].interfaces] == [("eth0", "10.0.0.1<0>"), ("eth1", "fe80::1%eth1<0>")]
    (ev,) = f.inits
    assert (ev.phase, ev.rank, ev.nranks, ev.nvml_dev, ev.bus_id, ev.comm_id) == ("START", 2, 8, 4, "1b000", "0x1234")
    assert f.env_values() == {"NCCL_SOCKET_IFNAME": ["eth0"], "NCCL_IB_DISABLE": ["1"]}
    assert [(c.coll, c.collnet, c.nvls) for c in f.channel_counts] == [(2, None, None)]
    assert [(p.kind, p.value) for p in f.plugins] == [("loaded_collnet", "SHARP (v8)")]
    (cn,) = f.channels
    assert (cn.transport, cn.dst, cn.direction, cn.category) == ("COLLNET", None, "send", "CollNet")
    assert f.summary.collnet_used
    init = by_check(nccl_checks.judge(f))["nccl.init"]
    assert init.status == Status.WARN and "rank 2 (h:1)" in init.message


def test_external_plugin_ignores_ib_disable():
    # Constructed, not captured: the nccl#676 situation (IBext used although NCCL_IB_DISABLE=1).
    text = ("h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
            "h:1:1 [0] NCCL INFO Using network IBext_v8\n"
            "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext_v8/0/GDRDMA\n")
    fs = by_check(nccl_checks.judge(parse(text)))
    assert fs["nccl.net_plugin"].status == Status.WARN
    assert "NCCL_NET=Socket" in fs["nccl.net_plugin"].fix
    same = by_check(nccl_checks.judge(parse(text.split("\n", 1)[1]), expected_env={"NCCL_IB_DISABLE": "1"}))
    assert same["nccl.net_plugin"].status == Status.WARN
    assert "nccl.net_plugin" not in by_check(nccl_checks.judge(parse(text.split("\n", 1)[1])))


def test_partial_gdrdma_and_nccl_net_mismatch():
    # Constructed, not captured: the asymmetric case of nccl#897 (one node without nvidia-peermem).
    text = ("a:1:1 [0] NCCL INFO Using network IB\n"
            "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
            "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/1\n")
    f = parse(text)
    g = by_check(nccl_checks.judge(f))["nccl.gdrdma"]
    assert g.status == Status.WARN and "only 1 of 2" in g.message and g.host == "b"
    assert "nvidia-peermem" in g.fix
    n = by_check(nccl_checks.judge(f, expected_env={"NCCL_NET": "Socket"}))["nccl.network"]
    assert n.status == Status.FAIL and "NCCL_NET asked for Socket" in n.message


def test_failure_kinds_from_warn_text():
    # Constructed from the WARN strings in NCCL's sources (see docs/nccl-log.md).
    cases = {
        "Call to ibv_modify_qp failed with error Invalid argument": ("ibv", "nccl.ib_verbs", "GID"),
        "NET/IB : Got completion from peer 10.0.0.2<1234> with status=12 opcode=0 len=0 vendor err 129":
            ("ib_completion", "nccl.ib_completion", "retry counter exceeded"),
        "NET/Socket : no interface found": ("no_interface", "nccl.socket_ifname", "No usable socket interface"),
        "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.":
            ("duplicate_gpu", "nccl.duplicate_gpu", "Duplicate GPU"),
        "Cuda failure 'out of memory'": ("cuda", "nccl.cuda", "CUDA call failed"),
        "P2P is disabled between NVLINK connected GPUs 0 and 1. This should not be the case":
            ("p2p_nvlink_disabled", "nccl.p2p_nvlink", "NVLink"),
    }
    for msg, (kind, check, words) in cases.items():
        f = parse(f"h:1:1 [0] x.cc:1 NCCL WARN {msg}\n")
        assert f.warns[0].kind == kind, msg
        fs = by_check(nccl_checks.judge(f))
        assert fs[check].status == Status.FAIL and words in fs[check].message, (msg, fs[check].message)


def test_torch_and_nccl_tests_errors():
    # Constructed from the PyTorch and nccl-tests message formats.
    text = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "node-a: Test NCCL failure common.cu:1005 'unhandled system error / '\n")
    f = parse(text)
    assert [(a.kind, a.message) for a in f.app_errors] == [
        ("torch", "unhandled system error (run with NCCL_DEBUG=INFO for details)"),
        ("nccl-tests", "unhandled system error")]
    assert [(v.version, v.origin) for v in f.versions] == [("2.21.5", "torch")]
    fs = by_check(nccl_checks.judge(f))
    assert fs["nccl.app_error"].status == Status.FAIL



def test_the_first_nccl_tests_failure_lines_without_test_are_errors_and_nccl_warns_are_not():
    # written for this test, in the words of nccl-tests' first releases (2017-2018) and of NCCL's own WARN
    text = ("NCCL failure all_reduce.cu:95 'unhandled cuda error'\n"
            "node03: Cuda failure common.cu:891 'CUDA driver version is insufficient for CUDA runtime version'\n"
            "h:1:2 [0] include/alloc.h:125 NCCL WARN Cuda failure 700 'an illegal memory access was encountered'\n"
            "h:1:2 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'\n")
    f = parse(text)
    assert [(a.kind, a.message, a.where) for a in f.app_errors] == [
        ("nccl-tests", "unhandled cuda error", "all_reduce.cu:95"),
        ("nccl-tests-cuda", "CUDA driver version is insufficient for CUDA runtime version", "common.cu:891")]
    assert [w.kind for w in f.warns] == ["cuda", "cuda"]
    for name in ("nvls-multicast-cuda-failure-401-timestamped-warn.log",
                 "net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log",
                 "p2p-direct-pointer-and-shm-8gpu-single-process.log"):
        assert not [a for a in load(name).app_errors if a.kind.startswith("nccl-tests")], name


def test_a_topology_file_nccl_loads_is_a_note():
    # written for this test, in NCCL 2.18's words
    f = parse("a100-vm:648288:648307 [1] NCCL INFO Loading topology file /opt/microsoft/ncv4/topo.xml\n"
              "a100-vm:648288:648307 [1] NCCL INFO Loading unnamed topology\n")
    assert [(n.kind, n.at.host) for n in f.notes] == [("topo_file", "a100-vm")]
    assert not [n for n in load("p2p-direct-pointer-and-shm-8gpu-single-process.log").notes if n.kind == "topo_file"]

def test_never_raises_on_garbage():
    junk = "\x00\x1b[31m:::: [x] NCCL INFO\nNCCL WARN\n-> 2\nChannel 00 : via\n" + "é" * 50 + "\r\n\r"
    f = parse(junk)
    nccl_checks.judge(f, require_ib=True, expected_env={"NCCL_NET": "IB"})
    json.dumps(to_jsonable(f))
    assert f.warns == [] and f.channels == []


# NVIDIA/TensorRT-LLM#9263: the prefill worker's two ranks, each with its Init START on the pod's one GPU; the
# 'Duplicate GPU detected' WARN NCCL printed after them is not in the pasted text.
TRTLLM_9263_STARTS = (
    "test-trt-prefill-worker-0-0:42:982 [0] NCCL INFO ncclCommInitRank comm 0x7a12257c8780 rank 0 nranks 2 cudaDev 0 "
    "nvmlDev 0 busId 100000 commId 0xaa9becea043c4e6c - Init START\n"
    "test-trt-prefill-worker-0-0:43:43 [0] NCCL INFO ncclCommInitRank comm 0x397e3800 rank 1 nranks 2 cudaDev 0 "
    "nvmlDev 0 busId 100000 commId 0xaa9becea043c4e6c - Init START\n")


def test_two_ranks_of_one_comm_starting_on_one_bus_id_are_two_ranks_on_one_gpu():
    fs = by_check(nccl_checks.judge(parse(TRTLLM_9263_STARTS)))
    dup = fs["nccl.duplicate_gpu"]
    assert dup.status == Status.FAIL and dup.host == "test-trt-prefill-worker-0-0"
    assert "rank 0 and rank 1" in dup.message and "busId 100000" in dup.message


@pytest.mark.parametrize("text", [
    # one busId per rank: the normal start of a communicator
    TRTLLM_9263_STARTS.replace("cudaDev 0 nvmlDev 0 busId 100000 commId 0xaa9becea043c4e6c - Init START\n", "X", 1)
    .replace("X", "cudaDev 0 nvmlDev 0 busId 1a000 commId 0xaa9becea043c4e6c - Init START\n"),
    # two communicators (another commId) on one GPU: a rank's sub-groups, not two ranks of one
    TRTLLM_9263_STARTS.replace("rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 100000 commId 0xaa9becea043c4e6c",
                               "rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 100000 commId 0x1234abcd5678ef00"),
    # the same rank's lines twice (a log pasted twice)
    TRTLLM_9263_STARTS.splitlines(True)[0] * 2,
    # NCCL 2.30's opt-in to several ranks per GPU, echoed by NCCL
    "test-trt-prefill-worker-0-0:42:982 [0] NCCL INFO NCCL_MULTI_RANK_GPU_ENABLE set by environment to 1.\n"
    + TRTLLM_9263_STARTS,
    # the host name redacted as people redact it before posting: two machines' GPU 0 share the name and the busId
    TRTLLM_9263_STARTS.replace("test-trt-prefill-worker-0-0", "node-xxx"),
    TRTLLM_9263_STARTS.replace("test-trt-prefill-worker-0-0", "<hostname>"),
    # one pid under one host name: two machines (containers that number their processes alike, one host name)
    TRTLLM_9263_STARTS.replace(":43:43 [0]", ":42:43 [0]"),
])
def test_init_lines_without_two_ranks_on_one_gpu_stay_quiet(text):
    assert "nccl.duplicate_gpu" not in by_check(nccl_checks.judge(parse(text)))

