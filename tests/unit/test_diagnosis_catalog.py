"""The cause catalog on the shapes real evidence takes, one test per failure family.

Real cases are in ../shared/fixtures/cases (tests/unit/test_cases.py runs them all). The texts here are
written for these tests, each in the exact form NCCL, PyTorch, nccl-tests or the kernel print it, to pin one
way a failure shows itself that the cases do not cover (a prefix cut, a message split over lines, an errno
spelled out). Each test also holds a healthy or neighbouring text the rule must leave alone.
"""
import dataclasses
import io
import json
from pathlib import Path
from typing import List

import pytest

from nccldiag import paste as pasted
from nccldiag.diagnosis import Inputs, diagnose
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl import parser as nccllog
from nccldiag.nccl import scan
from tests import real, realcases


def read(text: str):
    """The facts of ``text`` as ``nccldiag log`` reads a file: through the prefilter, lines read before counted
    again. They must be those of reading every line: the prefilter drops no line the catalog reads."""
    data = text.encode("utf-8")
    facts = scan.parse_streams([("job.log", io.BytesIO(data))])
    every = nccllog.parse_streams([("job.log", io.BytesIO(data))])
    assert json.dumps(dataclasses.asdict(facts), default=str) == json.dumps(dataclasses.asdict(every), default=str)
    return facts


def verdict(text: str) -> List:
    facts = read(text)
    return diagnose(Inputs(logs=facts, log_findings=nccl_checks.judge(facts), pasted=pasted.scan(text, "job.log")))


def top(text: str):
    alarms = [d for d in verdict(text) if d.severity in ("fail", "warn")]
    assert alarms, "no fail/warn diagnosis"
    return alarms[0]


def categories(text: str) -> List[str]:
    return [d.category for d in verdict(text) if d.severity in ("fail", "warn")]


# ---- NVLS and Fabric Manager --------------------------------------------------------------------------


def test_nvls_warn_whose_prefix_was_cut_is_still_nvls_and_its_chain_counts():
    # written for this test: the WARN and its call chain with the host:pid:tid prefix removed by the poster
    text = ("NCCL version 2.18.5+cuda12.2\n"
            "transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"
            "NCCL INFO transport/nvls.cc:324 -> 1\n"
            "NCCL INFO init.cc:1093 -> 1\n")
    facts = nccllog.parse(text)
    (w,) = facts.warns
    assert w.file == "transport/nvls.cc" and w.kind == "nvls" and [s.code for s in w.chain] == [1, 1]
    assert top(text).category == "fabric_manager"


def test_nvls_failure_of_an_nccl_with_the_known_defect_is_not_blamed_on_fabric_manager():
    # written for this test: NCCL 2.26.2's NVLS set-up failure (fixed in 2.26.5)
    text = ("host1:1:2 [0] NCCL INFO NCCL version 2.26.2+cuda12.4\n"
            "host1:1:2 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 1 'invalid argument'\n")
    d = top(text)
    assert d.category == "nvls_multicast" and "2.26.5" in d.summary


def test_the_nvls_bind_message_of_newer_nccl_names_fabric_manager():
    # written for this test, in NCCL 2.2x's words (pasted without prefixes)
    text = ("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152:\n"
            "CUDA error 401 'the operation cannot be performed in the present state'.\n"
            "This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.\n")
    assert top(text).category == "fabric_manager"


def test_system_not_yet_initialized_is_fabric_manager():
    # written for this test: nccl-tests on an NVSwitch node whose Fabric Manager is not running
    text = "node7: Test CUDA failure common.cu:892 'system not yet initialized'\n"
    assert top(text).category == "fabric_manager"


def test_systemd_failing_to_start_the_fabric_manager_unit_is_fabric_manager():
    # written for this test, in systemd's words: 'Failed to start %s.' with the unit's Description ('NVIDIA fabric
    # manager service', as the journal of https://github.com/NVIDIA/nvtrust/issues/128 shows it), and newer
    # systemd's form with the unit's name before it
    for line in ("Failed to start NVIDIA fabric manager service.",
                 "Jan 05 14:44:41 node1 systemd[1]: Failed to start nvidia-fabricmanager.service - NVIDIA fabric "
                 "manager service."):
        assert top(line + "\n").category == "fabric_manager", line
    # the unit starting, started or stopping is no failure
    assert categories("Jan 05 14:45:28 TENCENT64 systemd[1]: Started nvidia-fabricmanager.service - NVIDIA fabric "
                      "manager service.\n") == []


def test_a_fatal_nvswitch_sxid_is_an_nvlink_error_and_a_non_fatal_one_is_left_unexplained():
    case = "gpu-gpud-docs-quoted-dmesg-xid79-nvswitch-sxid20034-ltssm-fault"
    fatal = [line for line in _in_repo_case(case).splitlines() if "SXid" in line and ", Fatal," in line]
    assert fatal
    for line in fatal:  # real lines (quoted behind '> '), alone
        assert top(line + "\n").category == "nvlink_error", line
    # the whole case: the GPU fell off the bus first (Xid 79), which explains its links' fatal SXids
    cats = categories(_in_repo_case(case))
    assert cats[:1] == ["gpu_lost_xid"] and "nvlink_error" not in cats, cats
    # a real non-fatal SXid (https://github.com/NVIDIA/nvtrust/issues/124) is no cause: the failure lexicon's
    # warning shape reads it, the kernel log's xid.nvswitch check warns, and the verdict leaves it unexplained
    line = ("[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ "
            "interrupt")
    got = verdict(line + "\n")
    assert [(d.category, d.severity) for d in got] == [("unexplained", "warn")]
    assert "non-fatal SXid" in got[0].summary
    from nccldiag.knowledge import lexicon
    shape = lexicon.shape_of(line)
    assert shape is not None and (shape.id, shape.severity) == ("nvswitch-sxid", "warn")


def test_nvls_channels_of_a_healthy_run_raise_nothing():
    # a real log: 16 NVLS channels, then PyTorch's watchdog timeout; the timeout is diagnosed, not the NVLS channels
    cats = categories(real.nccl_log("nvls-16-channels-then-watchdog-timeout-allgather.log").read_text())
    assert cats[:1] == ["rank_hang_timeout"] and not {"nvls", "nvls_multicast", "fabric_manager"} & set(cats)
    healthy = ("h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
               "h:1:2 [0] NCCL INFO 24 coll channels, 0 collnet channels, 16 nvls channels, 32 p2p channels\n"
               "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1000 commId 0x2 - Init COMPLETE\n")
    assert categories(healthy) == []


# ---- 'Last error' blocks and launcher wrapping --------------------------------------------------------


def test_last_error_after_a_tagged_pytorch_error_names_the_cause():
    # written for this test: a torch error with the 'Last error:' block behind [rankN]: tags
    text = ("[rank3]: torch.distributed.DistBackendError: NCCL error in: /pytorch/NCCLUtils.cpp:77, unhandled system "
            "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "[rank3]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed.\n"
            "[rank3]: Last error:\n"
            "[rank3]: socketStartConnect: Connect to 10.1.2.3<43215> failed : Connection timed out\n")
    assert top(text).category == "firewall_ports"


def test_markdown_wrapping_and_anonymised_pids_do_not_hide_a_warn():
    # written for this test: a WARN pasted in bold with its pid and tid anonymised
    text = "**node1:<pid>:<tid> [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'**\n"
    (w,) = nccllog.parse(text).warns
    assert w.at.host == "node1" and w.message == "Cuda failure 'named symbol not found'"
    assert top(text).category == "nccl_too_old_for_gpu"


def test_a_watchdog_message_wrapped_over_lines_is_read_whole():
    # written for this test, as a user pasted a PyTorch watchdog line wrapped by the terminal
    text = ("[Rank 1] Watchdog caught collective operation timeout:\n"
            "  WorkNCCL(SeqNum=7, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000)\n"
            "  ran for 600030 milliseconds before timing out.\n")
    (w,) = nccllog.parse(text).watchdogs
    assert (w.rank, w.op_type, w.timeout_ms) == (1, "BROADCAST", 600000)
    assert top(text).category == "rank_hang_timeout"


def test_collnet_count_zero_is_no_collnet():
    text = "h:1:2 [0] NCCL INFO 8 coll channels, 0 collnet channels, 0 nvls channels, 8 p2p channels, 2 p2p channels per peer\n"
    assert not nccllog.parse(text).summary.collnet_used


# ---- GPUDirect RDMA ------------------------------------------------------------------------------------


def test_gdr_on_one_side_of_a_pair_only_names_the_peer_memory_module():
    # written for this test: two channel fragments (their 'Channel NN :' head cut), GDR at one end only
    text = ("9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
            "9[1a000] -> 2[6b000] [receive] via NET/IB/1\n")
    assert [c.gdrdma for c in nccllog.parse(text).channels] == [True, False]
    assert top(text).category == "peermem_missing"


def test_gdr_disabled_for_a_hca_without_channel_lines_is_a_finding():
    text = "n1:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n"
    d = top(text)
    assert d.category == "peermem_missing" and d.severity == "warn"


def test_gdr_disabled_by_distance_is_gdr_unused_not_peermem():
    text = ("m:1:2 [2] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)\n"
            "m:1:2 [2] NCCL INFO Ring 00 : 6 -> 2 [receive] via NET/IB/0\n")
    assert "peermem_missing" not in categories(text)


# ---- IB verbs and completions --------------------------------------------------------------------------


@pytest.mark.parametrize("line,category", [
    # written for this test: ibv_modify_qp's errno, in the two spellings NCCL versions print
    ("Call to ibv_modify_qp failed with error Connection timed out", "ib_qp_timeout_routing"),
    ("Call to ibv_modify_qp failed with 110 Connection timed out", "ib_qp_timeout_routing"),
    ("Call to ibv_modify_qp failed with error No such device errno 19", "nccl_env_misconfig"),
])
def test_modify_qp_errno_decides_the_cause(line, category):
    text = f"n1:1:2 [0] misc/ibvwrap.cc:206 NCCL WARN {line}\nn1:1:2 [0] NCCL INFO transport/net_ib.cc:937 -> 2\n"
    cats = categories(text)
    assert cats[0] == category and "firewall_ports" not in cats


def test_modify_qp_einval_on_a_non_mellanox_nic_is_the_nic_support():
    # written for this test: the ECE line of a Broadcom RoCE NIC, then EINVAL
    text = ("n1:1:2 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 77 mtu 5 query_ece={supported=0, "
            "vendor_id=0x14e4} GID 3 (0/FFFF0A000001)\n"
            "n1:1:2 [0] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument\n")
    assert top(text).category == "rdma_nic_unsupported"


def test_completion_error_4_points_at_acs_and_the_gdr_test():
    text = ("n1:1:2 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<53249> with "
            "error 4, opcode 32564, len 32564, vendor err 81 (Send)\n")
    d = top(text)
    assert d.category == "ib_completion_error" and "NCCL_NET_GDR_LEVEL=LOC" in d.workaround and \
        any("acs" in a.lower() for a in d.alternatives)


def test_error_12_on_roce_is_the_gid_or_route_and_with_port_errors_the_port():
    roce = ("n1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
            "n1:1:2 [0] transport/net_ib.cc:881 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error "
            "12, opcode 1, len 0, vendor err 129\n")
    assert top(roce).category == "roce_gid_config"
    flapping = roce + "n1:1:3 [0] misc/ibvwrap.cc:1 NCCL WARN NET/IB : Got async event : port error\n"
    assert top(flapping).category == "ib_port_down"


def test_ib_wanted_but_no_device_in_the_container():
    # written for this test: NCCL told to use IB finds no device, then uses sockets
    text = ("n1:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
            "n1:1:2 [0] NCCL INFO NET/IB : No device found.\n"
            "n1:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n")
    assert top(text).category == "rdma_device_not_in_container"
    # without anything asking for IB, no device is how an Ethernet cluster looks
    assert categories(text.replace("NCCL_IB_DISABLE set by environment to 0.", "Bootstrap : Using eth0:10.0.0.1<0>")) == []


def test_ibv_open_device_failing_is_the_container():
    text = ("n1:1:2 [0] misc/ibvwrap.cc:120 NCCL WARN Call to ibv_open_device failed\n"
            "n1:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\nn1:1:2 [0] NCCL INFO Using network Socket\n")
    assert top(text).category == "rdma_device_not_in_container"


def test_qp_access_violation_and_flushed_receives_are_an_mtu_mismatch_and_a_port_error_is_not():
    # written for this test, in the format of https://github.com/NVIDIA/nccl/issues/1524 (NCCL 2.20's async
    # event and completion lines between two servers whose MTUs differ)
    text = ("srv-a:94639:94647 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async event : local "
            "access violation work queue error\n"
            "srv-a:94639:94652 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            "192.168.1.2<57888> with status=5 opcode=1 len=0 vendor err 249 (Recv) localGid fe80::1 remoteGids fe80::2\n"
            "srv-a:94639:94652 [0] NCCL INFO transport/net.cc:1298 -> 6\n")
    d = top(text)
    assert d.category == "mtu_mismatch" and d.id == "mtu-mismatch" and d.confidence == "medium"
    assert d.missing and "active_mtu" in d.missing[0]
    # NCCL 2.2x's later wording of the same event; and a local length error (status 1) on its own
    assert top("h:1:2 [0] transport/net_ib.cc:180 NCCL WARN NET/IB : mlx5_1:1 async fatal event on QP "
               "(0x7309dc3bb338): local access violation work queue error\n").category == "mtu_mismatch"
    assert top("h:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
               "status=1 opcode=0 len=0 vendor err 105 (Recv)\n").category == "mtu_mismatch"
    # neighbours: a port error is a flapping link; a flushed request alone names no cause
    port = "h:1:2 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : port error\n"
    assert "mtu_mismatch" not in categories(port)
    assert "mtu_mismatch" not in categories("h:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                                            "from peer 10.0.0.2<1> with status=5 opcode=1 len=0 vendor err 249\n")
    # a healthy init that names the HCA's MTU raises nothing
    healthy = ("h:1:2 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 1047 mtu 5 GID 3 (0/A0B0C0D)\n"
               "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x2 - Init COMPLETE\n")
    assert categories(healthy) == []



def test_a_systemd_units_exit_status_is_no_rdma_completion_status():
    """systemd's 'code=exited, status=1/FAILURE' is a process's exit status: read as an IB work completion of status 1
    (local length error) it named an MTU mismatch on a node with no RDMA at all."""
    from nccldiag.diagnosis import ibverbs
    from tests import realcases
    # real: nvidia-persistenced failing at start (NVIDIA/nvidia-persistenced#11), and Fabric Manager's unit in a
    # working state and failing (gpu-operator#1146, #610): no completion in any of them
    for cid, name in (("node-trk-persistenced11-gh200-numa-auto-online-permission-denied", "posted-journal.txt"),
                      ("node-gpuoperator1146-healthy-fabricmanager-active-after-install", "posted-systemctl-status.txt"),
                      ("node-gpuoperator610-journal-zh-locale-fabricmanager-nothing-to-do-no-nvswitch",
                       "posted-systemctl-journal.txt")):
        text = (realcases.IN_REPO / cid / name).read_text(encoding="utf-8")
        assert "status=" in text
        facts = read(text)
        inp = Inputs(logs=facts, log_findings=nccl_checks.judge(facts), pasted=pasted.scan(text, "job.log"))
        assert ibverbs.completions(inp) == [], cid
        assert not {"mtu_mismatch", "ib_completion_error"} & set(categories(text)), cid
    # NCCL's own completion line keeps its status, bare or after 'with'
    nccl = ("h:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
            "status=1 opcode=0 len=0 vendor err 105 (Recv)\n")
    assert [c.status for c in ibverbs.completions(Inputs(logs=read(nccl)))] == [1]

def test_a_slurm_task_prologs_exit_status_is_no_rdma_completion_status():
    """slurmstepd's 'TaskProlog failed status=1' is the exit status of the job's task prolog (SchedMD/slurm
    src/slurmd/slurmstepd/task.c and mgr.c: TaskProlog, TaskEpilog, --task-prolog, --task-epilog, in the source's
    words): read as an IB work completion of status 1 it named an MTU mismatch."""
    for line in ("slurmstepd: error: TaskProlog failed status=1\n", "slurmstepd: error: TaskEpilog failed status=2\n",
                 "slurmstepd: error: --task-prolog failed status=127\n"):
        assert not {"mtu_mismatch", "ib_completion_error"} & set(categories(line)), line


# ---- network plugins -----------------------------------------------------------------------------------


def test_efa_provider_not_found_and_plugin_registration():
    # written for this test in aws-ofi-nccl's words
    assert top("h:1:1 [0] get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\n").category \
        == "net_plugin"
    assert top("h:1:1 [0] nccl_net_ofi_init:1 NCCL WARN NET/OFI No eligible providers were found\n").category \
        == "rdma_device_not_in_container"


def test_a_plugin_that_cannot_load_a_library_it_needs_and_the_plugin_that_is_absent():
    # written for this test, in NCCL 2.2x's NET/Plugin words: the plugin file is found but the loader refuses it (a
    # library of another version, one missing); then the normal lines of a node with no plugin installed
    broken = ("a:1:2 [0] NCCL INFO NET/Plugin: libnccl-net-ofi.so: /opt/x/lib/libibverbs.so.1: version "
              "`IBVERBS_PRIVATE_34' not found (required by /usr/lib/x86_64-linux-gnu/libefa.so.1)\n"
              "a:1:2 [0] NCCL INFO NET/Plugin: Could not find: ofi\n"
              "a:1:2 [0] NCCL INFO Using network Socket\n")
    assert top(broken).category == "net_plugin"
    missing_dep = ("a:1:2 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: libfabric.so.1: "
                   "cannot open shared object file: No such file or directory : when loading libnccl-net.so\n")
    assert top(missing_dep).category == "net_plugin"
    absent = ("a:1:2 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file "
              "or directory No plugin found (libnccl-net.so), using internal implementation\n"
              "a:1:2 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object "
              "file: No such file or directory : when loading libnccl-net.so\n"
              "a:1:2 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.\n"
              "a:1:2 [0] NCCL INFO NET/Plugin: Using internal network plugin.\n")
    assert "net_plugin" not in categories(absent)
    # the same normal lines pasted without their host:pid:tid prefix, and aws-ofi-nccl's search for older API
    # versions and CollNet symbols before it loads: no alarm either
    bare = "".join(line.split(" [0] ", 1)[1] + "\n" for line in absent.splitlines())
    ofi = ("NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.\n"
           "NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin symbol (>= v5). ncclCollNetPlugin symbols v4 and "
           "lower are not supported.\n"
           "NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
           "NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v7)\n")
    assert "net_plugin" not in categories(bare) and "net_plugin" not in categories(ofi)
    # a plugin of no API version this NCCL reads
    old_api = "a:1:2 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols " \
              "v4 and lower are not supported.\n"
    assert top(old_api).category == "net_plugin"


def test_a_plugin_on_some_nodes_only():
    text = ("a:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"
            "b:3:4 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n")
    assert top(text).category == "net_plugin"


def test_the_plugins_static_topology_without_cpu_attributes_is_the_plugins_and_a_users_file_is_not():
    # written for this test, in the format of https://github.com/aws/aws-ofi-nccl/issues/785 (NCCL 2.21's topology
    # loader failing on the p5.48xl-topo.xml that aws-ofi-nccl < 1.11 sets as NCCL_TOPO_FILE)
    chain = ("p5-a:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute vendor of node cpu not found\n"
             "p5-a:2196:2275 [1] NCCL INFO graph/topo.cc:493 -> 3\n"
             "p5-a:2196:2275 [1] NCCL INFO graph/topo.cc:623 -> 3\n")
    d = top("p5-a:2196:2196 [1] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + chain)
    assert d.category == "net_plugin" and "static topology" in d.summary and d.id == "net-plugin"
    assert "nccl_env_misconfig" not in categories(chain)
    plugin_file = "p5-a:2196:2196 [1] NCCL INFO NCCL_TOPO_FILE set by environment to " \
                  "/opt/amazon/ofi-nccl/share/aws-ofi-nccl/xml/p5.48xl-topo.xml\n"
    assert top(plugin_file + chain).category == "net_plugin"
    # the user's own file, or an NCCL older than 2.8 (which failed on any injected topology): not the plugin's
    own = "p5-a:2196:2196 [1] NCCL INFO NCCL_TOPO_FILE set by environment to /home/me/topo.xml\n"
    assert top(own + chain).category == "nccl_env_misconfig"
    assert top("h:1:1 [0] NCCL INFO NCCL version 2.7.8+cuda11.0\n" + chain).category == "nccl_env_misconfig"
    # a healthy init prints missing attributes of other nodes at INFO level (NVIDIA/nccl#584's shape)
    healthy = ("h:1:2 [1] NCCL INFO Attribute coll of node net not found\n"
               "h:1:2 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId b1000 commId 0x2 - Init COMPLETE\n")
    assert categories(healthy) == []


# ---- /dev/shm ------------------------------------------------------------------------------------------


def test_a_system_error_on_one_node_that_no_warn_explains_points_at_dev_shm():
    # written for this test, in nccl-tests' words: one process, four GPUs of one host, no NCCL_DEBUG
    header = ("# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
              "validation: 1 \n#\n# Using devices\n"
              + "".join(f"#   Rank  {r} Pid   1688 on    {h} device  {r} [0x18] GeForce RTX 2080 Ti\n"
                        for r, h in enumerate(("box", "box", "box", "box"))))
    failure = "box: Test NCCL failure common.cu:777 'unhandled system error'\n"
    d = top(header + failure)
    assert d.category == "shm_too_small" and d.severity == "warn" and d.confidence == "low" and d.missing
    # NCCL named the failing call: that call's cause, not /dev/shm
    socket = "box:1688:1700 [0] include/socket.h:344 NCCL WARN Socket creation failed : Address family not supported\n"
    assert "shm_too_small" not in categories(header + socket + failure)
    # ranks on two hosts: a system error there may be the network's
    two = header.replace("on    box device  2", "on    box2 device  2")
    assert "shm_too_small" not in categories(two + failure)
    # a chain through NCCL's shared-memory transport, its WARN cut: /dev/shm, with more confidence
    chain = ("box:1688:1700 [0] NCCL INFO transport/shm.cc:114 -> 2\n"
             "box:1688:1700 [0] NCCL INFO transport.cc:33 -> 2\n"
             "box:1688:1700 [0] NCCL INFO init.cc:1089 -> 2\n")
    d = top(chain)
    assert d.category == "shm_too_small" and d.confidence == "medium"


# ---- GPU architecture, drivers, memory -----------------------------------------------------------------


def test_max_shared_mem_exceeded_is_an_nccl_too_old_for_the_gpu():
    text = ("h:1:1 [1] NCCL INFO NCCL version 2.25.1+cuda12.2\n"
            "h:1:1 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856\n")
    assert top(text).category == "nccl_too_old_for_gpu"


def test_rccls_hip_invalid_kernel_file_is_a_gpu_without_kernels_in_the_build():
    # ROCm/rccl#876 (tests/cases/gpu-gaps80a-rccl876-7900xtx-igpu-gfx1036-cuda-failure-invalid-kernel-file): HIP's
    # text for hipErrorInvalidKernelFile (ROCm/clr hipamd/src/hip_error.cpp) in RCCL's CUDACHECK WARN
    text = ("catalyst-convoy:774735:774739 [0] /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/"
            "build/hipify/src/enqueue.cc:66 NCCL WARN Cuda failure 'invalid kernel file'\n"
            "catalyst-convoy:774735:774739 [0] NCCL INFO /long_pathname_so_that_rpms_can_package_the_debug_info/src/"
            "extlibs/rccl/build/hipify/src/init.cc:1491 -> 1\n")
    assert top(text).category == "nccl_too_old_for_gpu"
    # another HIP error in the same WARN is not a build without the GPU's kernels
    other = text.replace("invalid kernel file", "invalid argument")
    assert "nccl_too_old_for_gpu" not in categories(other)
    # a file name that only holds the words is no error
    assert "nccl_too_old_for_gpu" not in categories(
        "loading kernels from /opt/app/invalid_kernel_file_list.txt\nNCCL INFO NCCL version 2.21.5\n")


def test_hips_invalid_device_function_in_a_programs_check_is_no_code_object_for_the_amd_gpu():
    # pytorch/pytorch#164346 (a ROCm 7 nightly wheel under ComfyUI), as posted: PyTorch's HIP check with HIP's
    # string and name for hipErrorInvalidDeviceFunction (ROCm/clr hipamd/src/hip_error.cpp)
    text = ("torch.AcceleratorError: HIP error: invalid device function\n"
            "Search for `hipErrorInvalidDeviceFunction' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__HIPRT__TYPES"
            ".html for more information.\n"
            "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
            "incorrect.\n")
    assert top(text).category == "other:hip-no-code-object-for-gpu"
    assert "nccl_too_old_for_gpu" not in categories(text)
    # etched-ai/open-oasis#27, the line alone, behind a launcher's rank prefix
    assert top("[rank3]: RuntimeError: HIP error: invalid device function\n").category == \
        "other:hip-no-code-object-for-gpu"
    # CUDA's words for cudaErrorInvalidDeviceFunction stay with the NCCL build without the GPU's kernels
    assert top("RuntimeError: CUDA error: invalid device function\n").category == "nccl_too_old_for_gpu"


def test_ucxs_pointer_query_not_found_is_no_nccl_without_kernels():
    # xcompact3d/x3d2#292: UCX's cuda_copy memory query, CUDA_ERROR_NOT_FOUND in cuGetErrorString's words
    text = ("[1774611987.873495] [kolmogorov:2952803:0]    cuda_copy_md.c:688  UCX  ERROR "
            "cuMemGetAddressRange(0x75e0ba800000) error: named symbol not found\n"
            "h:1:1 [1] NCCL INFO NCCL version 2.14.3+cuda11.7\n")
    assert "nccl_too_old_for_gpu" not in categories(text)


def test_cuda_graph_capture_refused_names_the_cuda_build():
    text = ("NCCL WARN NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3 or if "
            "the installed CUDA driver < R465.\n")
    assert top(text).category == "cuda_driver_mismatch"


def test_out_of_memory_on_the_gpu_and_not_host_enomem():
    assert top("h:1:1 [2] enqueue.cc:43 NCCL WARN Cuda failure 'out of memory'\n").category == "gpu_out_of_memory"
    enomem = "h:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n"
    cats = categories(enomem)
    assert cats[0] == "memlock_limit" and "gpu_out_of_memory" not in cats


# ---- one node, P2P, and runs that stop ----------------------------------------------------------------


def test_shm_between_two_gpus_of_one_host_then_a_stall_points_at_p2p():
    # written for this test: one host, P2P refused (SHM between its GPUs), init stops after channel set-up
    text = ("w:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - Init START\n"
            "w:1:2 [0] NCCL INFO Channel 00/0 : 0[1000] -> 1[2000] via SHM/direct/direct\n"
            "w:1:3 [1] NCCL INFO Channel 00/0 : 1[2000] -> 0[1000] via SHM/direct/direct\n")
    d = top(text)
    assert d.category == "acs_iommu_p2p" and "NCCL_P2P_DISABLE=1" in d.workaround


def test_nccl_tests_header_then_nothing_is_a_stall_but_an_excerpt_with_init_complete_is_not():
    stalled = ("# nThread 1 nGpus 4 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
               "#   Rank  0 Pid  1 on box device  0 [0x02] NVIDIA RTX A4000\n"
               "#   Rank  1 Pid  1 on box device  1 [0x03] NVIDIA RTX A4000\n"
               "#       size         count      type   redop    root     time   algbw   busbw #wrong\n")
    assert top(stalled).category == "acs_iommu_p2p"
    excerpt = real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log").read_text()
    assert categories(excerpt) == []


def test_independent_runs_of_nccl_tests_without_mpi():
    text = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 3.94145\n#\n# Out of bounds values : 0 OK\n" \
           "# Avg bus bandwidth    : 3.94156\n"
    assert top(text).category == "other:nccltests-built-without-mpi"


def test_cudas_peer_access_refusal_paraphrased_by_a_framework_is_still_p2p_unsupported():
    # written for this test, in the format of https://github.com/efeslab/Nanoflow/issues/22 (the CUDA error
    # quoted by a serving framework, singular 'device') and of TensorRT-LLM's IpcMemory message
    assert top("peer access is not supported between these two device\n").category == "p2p_unsupported_gpu"
    assert top("[TensorRT-LLM][ERROR] Encountered an error: peer access is not supported between these two "
               "devices in tensorrt_llm::runtime::IpcMemory::allocateIpcMemory()\n").category == "p2p_unsupported_gpu"
    # NCCL noting at INFO level that it will not use P2P between two GPUs, then falling back to SHM, is no fault
    healthy = ("ault43:1696335:1696335 [1] NCCL INFO Could not enable P2P between dev 1(=81000) and dev 0(=41000)\n"
               "ault43:1696335:1696335 [1] NCCL INFO Channel 00 : 1[81000] -> 0[41000] via SHM/direct/direct\n"
               "ault43:1696335:1696335 [1] NCCL INFO comm 0x666c240 rank 1 nranks 4 cudaDev 1 busId 81000 "
               "commId 0xecdec238786580e6 - Init COMPLETE\n")
    assert categories(healthy) == []


def test_an_elided_paste_of_a_passing_multi_node_run_raises_nothing_and_an_unelided_stop_does():
    # written for this test, in the format of https://github.com/aws/aws-parallelcluster/pull/6956
    titles = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong\n")
    mnnvl = ("q1-st-cr1-2:24285:24367 [2] NCCL INFO Channel 00/0 : 6[2] -> 7[3] via P2P/MNNVL\n"
             "q1-st-cr1-1:27416:27502 [0] NCCL INFO Channel 31/0 : 0[0] -> 1[1] via P2P/MNNVL\n")
    assert categories(titles + "...\n" + mnnvl + "...\n") == []
    assert categories(titles + mnnvl) == ["unexplained"]


# ---- sockets, names, environment -----------------------------------------------------------------------


def test_garbled_address_family_is_versions_unless_an_interface_was_named():
    line = "ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor AF_INET6(10)\n"
    assert top(line).category == "version_mismatch"
    named = "t:1:1 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n" + line
    assert top(named).category == "nccl_env_misconfig"


def test_loopback_peers_are_the_host_name():
    text = "[gloo/transport/tcp/pair.cc:761] connect [127.0.1.1]:60817: Connection refused\n"
    assert top(text).category == "hostname_resolution"


def test_an_address_that_cannot_be_assigned_is_the_host_name_only_where_something_binds_it():
    """EADDRNOTAVAIL ('Cannot assign requested address') names a resolution fault only in the context that means a
    name resolved to an address this host does not own: a bind or listen on it, c10d's server socket, MASTER_ADDR."""
    def named(text):
        return [d for d in verdict(text) if d.id == "hostname-resolution" and d.confidence == "high"]

    # real: uvicorn binding 'localhost', resolved to ::1 on a host without IPv6 (abetlen/llama-cpp-python#77)
    real_bind = ("ERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, 0): cannot assign "
                 "requested address\n")
    assert named(real_bind)
    # written for this test, in the layout of c10d's server socket message: the store binding MASTER_ADDR's address
    store = ("[E socket.cpp:957] [c10d] The server socket has failed to bind to [10.1.2.3]:29500 (errno: 99 - Cannot "
             "assign requested address).\n")
    assert named(store)
    # written for this test: the same errno where no name is at fault
    harmless = {
        # the ephemeral ports of a client that opens connections faster than they leave TIME_WAIT
        "ephemeral ports": "OSError: [Errno 99] Cannot assign requested address\n",
        "a connect": ("[E socket.cpp:860] [c10d] The client socket has failed to connect to [10.1.2.3]:29500 (errno: 99 "
                      "- Cannot assign requested address).\n"),
        # an IPv6 link-local address bound without its interface (fe80::...%eth0)
        "link-local bind": ("[E socket.cpp:957] [c10d] The server socket has failed to bind to [fe80::1c2:3ff:fe04:506]:"
                            "29500 (errno: 99 - Cannot assign requested address).\n"),
    }
    for why, text in harmless.items():
        assert not named(text), why


def test_an_nccl_variable_named_by_the_error():
    text = ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
            "Error : no algorithm/protocol available for function Broadcast with datatype ncclInt8. NCCL_ALGO was set "
            "to NVLS.\n")
    assert top(text).category == "nccl_env_misconfig"


def test_separate_runs_of_two_versions_in_one_file_are_no_mismatch():
    # written for this test: two runs, each version printed by its own rank 0, one after the other
    run = ("{h}:1:1 [0] NCCL INFO NCCL version {v}+cuda12.2\n"
           "{h}:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1000 commId 0x{c} - Init COMPLETE\n")
    text = run.format(h="a", v="2.18.5", c=1) + run.format(h="a", v="2.21.5", c=2)
    assert "version_mismatch" not in categories(text)


def test_a_version_mismatch_names_the_odd_node_out():
    text = "".join(f"{h}:1:1 [0] NCCL INFO NCCL version {v}+cuda12.2\n"
                   f"{h}:1:1 [0] NCCL INFO comm 0x1 rank {r} nRanks 3 nNodes 3 localRanks 1 localRank 0 MNNVL 0\n"
                   for h, v, r in (("a", "2.19.3", 0), ("b", "2.20.5", 1), ("c", "2.19.3", 2)))
    (d,) = [d for d in verdict(text) if d.category == "version_mismatch"]
    assert d.nodes == ["b"]


def test_a_host_local_interface_listed_after_the_routable_one_is_a_fault_only_where_used_or_failing():
    # written for this test, in NCCL 2.4-2.7's words: the docker veth interface (IPv6 link-local only) listed after
    # ens5 for the bootstrap and the socket transport, on two nodes
    head = "".join(f"{h}:1:1 [0] NCCL INFO {what} : Using [0]ens5:10.0.0.{i}<0> [1]veth{i}a:fe80::{i}%veth{i}a<0>\n"
                   for i, h in ((1, "a"), (2, "b")) for what in ("Bootstrap", "NET/Socket"))
    via0 = "a:1:2 [0] NCCL INFO Channel 00 : 1[1e0] -> 0[1e0] [receive] via NET/Socket/0\n"
    done = "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"
    # the channels seen go over ens5 and the run shows no failure: a note, no alarm
    assert categories(head + via0 + done) == []
    notes = [d for d in verdict(head + via0 + done) if d.id == "wrong-interface"]
    assert [d.severity for d in notes] == ["info"] and "NCCL_SOCKET_IFNAME=ens5" in notes[0].fix
    facts = nccllog.parse(head + via0 + done, "job.log")
    (sock,) = [f for f in nccl_checks.judge(facts) if f.check == "nccl.socket_if"]
    assert sock.status.value == "warn"
    # a channel through the veth device, or a connect failure: the interface is the fault
    via1 = "a:1:2 [0] NCCL INFO Channel 00 : 0[1e0] -> 1[1e0] [send] via NET/Socket/1\n"
    assert top(head + via1).category == "socket_ifname_wrong"
    refused = ("a:1:2 [0] include/socket.h:403 NCCL WARN Connect to fe80::2%veth1a<43011> failed : Network is "
               "unreachable\na:1:2 [0] NCCL INFO transport/net_socket.cc:334 -> 2\n")
    assert top(head + via0 + refused).category == "socket_ifname_wrong"


def test_sockets_between_nodes_of_a_run_that_worked_are_advice_not_an_alarm():
    # written for this test: a 2-node run over TCP sockets (no IB in sight) whose communicators initialised
    text = ("a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
            "a:1:2 [0] NCCL INFO Ring 00 : 1 -> 0 [receive] via NET/Socket/0\n"
            "b:3:4 [0] NCCL INFO Ring 00 : 0 -> 1 [receive] via NET/Socket/0\n"
            "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"
            "b:3:4 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE\n")
    facts = nccllog.parse(text, "job.log")
    assert [f.status.value for f in nccl_checks.judge(facts) if f.check == "nccl.network"] == ["warn"]
    assert categories(text) == []
    # the same run ending in a watchdog timeout is no longer advice
    timeout = ("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
               "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600027 "
               "milliseconds before timing out.\n")
    assert categories(text + timeout) != []


def test_plugin_warnings_of_a_run_that_went_on_are_no_alarm_and_an_error_beside_them_is():
    # written for this test, in the words of a net plugin's retries (NCCL WARN lines that return no error)
    text = ("a:1:2 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.\n"
            "b:3:4 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.\n"
            "b:3:4 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.\n")
    facts = nccllog.parse(text, "job.log")
    assert [f.status.value for f in nccl_checks.judge(facts) if f.check == "nccl.warn"] == ["warn"]
    assert categories(text) == []
    failed = text + "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, internal error, NCCL version 2.18.1\n"
    assert categories(failed) != []


def test_advice_is_noted_and_the_verdict_never_says_nothing_broken_beside_it():
    from nccldiag.report.diagnoses_report import headline

    # written for this test, in the words of a net plugin's retries (NCCL WARN lines that return no error)
    text = ("a:1:2 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.\n"
            "b:3:4 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.\n")
    (note,) = verdict(text)
    assert (note.id, note.severity) == ("advice", "info") and "Cannot get incoming CPU" in note.summary
    line, style = headline([note.to_dict()])
    assert "nothing broken" not in line and "Warnings to read" in line and style == "ok"
    # a log with no warning at all is the all-clear
    clean = "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"
    assert verdict(clean) == [] and headline([])[0] == "Verdict: nothing broken"


def test_a_warn_with_nothing_after_it_is_unexplained_not_advice():
    from nccldiag.report.diagnoses_report import headline

    # written for this test, in the words of a net plugin's WARN: a paste of the WARN line alone (or ending on it)
    # shows no run that went on, so the WARN is what went wrong as far as the evidence tells
    alone = "a:1:2 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.\n"
    (d,) = verdict(alone)
    assert (d.id, d.severity) == ("unexplained", "warn") and "Cannot get incoming CPU" in d.summary
    line, style = headline([d.to_dict()])
    assert "nothing broken" not in line and "no fault" not in line and style != "ok"
    # the same WARN before a line of the run going on, or an init that completed, is advice again
    for after in ("b:3:4 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.\n",
                  "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"):
        (note,) = verdict(alone + after)
        assert (note.id, note.severity) == ("advice", "info")


# ---- the unexplained verdict ---------------------------------------------------------------------------


def test_an_unknown_failure_is_unexplained_never_nothing_broken():
    text = "h:1:1 [0] foo.cc:1 NCCL WARN Something nobody has seen before\nh:1:1 [0] NCCL INFO foo.cc:2 -> 3\n"
    d = top(text)
    assert d.category == "unexplained" and d.severity == "fail" and "Something nobody has seen" in d.summary
    assert d.confirm and d.evidence


def test_init_that_stops_at_nvls_buffer_set_up_names_fabric_manager():
    # written for this test: the last lines of an init that hung in NVLS buffer registration
    text = ("h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 18000 commId 0x5 - Init START\n"
            "h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
            "h:1:2 [0] NCCL INFO NVLS comm 0x1 headRank 0 nHeads 8 buffSize 1048576 memSize 2097152 "
            "nvlsPerRankSize 201326592 nvlsTotalSize 1610612736\n")
    facts = nccllog.parse(text)
    assert facts.summary.nvls_used
    assert top(text).category == "fabric_manager"


def test_nccl_diag_p2p_verification_failing_and_passing():
    # written for this test in the words of NCCL 2.31's NCCL_RUN_DIAGNOSTICS report
    bad = "NCCL DIAG [INFO] p2p: only 52/56 GPU-to-GPU peer accesses passed verification\n"
    assert top(bad).category == "acs_iommu_p2p"
    good = "NCCL DIAG [OK] p2p: verified P2P access in both directions between every GPU pair (56 peer accesses)\n"
    assert categories(good) == []


def test_the_verdict_failing_inside_nccldiag_is_no_all_clear(monkeypatch):
    from nccldiag.diagnosis.rules import unexplained

    monkeypatch.setattr(unexplained, "fallback", lambda inp, diags: 1 / 0)
    d = top("h:1:1 [0] foo.cc:1 NCCL WARN Something nobody has seen before\n")
    assert d.id == "unexplained.internal" and "ZeroDivisionError" in d.summary


# ---- registration the stack lacks, loopback peers, sockets by choice, unopened HCAs, rings --------------------------


def test_dmabuf_registration_not_supported_is_gdr_not_memlock():
    # written for this test, in NCCL 2.13's words
    text = "n1:10:20 [0] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Operation not supported\n"
    d = top(text)
    assert d.category == "gdr_unused" and "NCCL_DMABUF_ENABLE=0" in d.fix
    assert "memlock_limit" not in categories(text)
    # written for this test: a registration that ran out of locked memory stays memlock's
    enomem = "n1:10:20 [0] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n"
    assert top(enomem).category == "memlock_limit"


def test_nccl_connecting_to_loopback_is_the_interface_not_the_host_name():
    # written for this test: NCCL advertises its socket interface's address, so 127.0.0.1<port> is 'lo' chosen
    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error, "
            "NCCL version 2.18.5\nncclSystemError: System call (e.g. socket, malloc) or external library call failed "
            "or device error.\nLast error:\nsocketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused "
            "connection abort\n")
    d = top(text)
    assert d.category == "socket_ifname_wrong" and "loopback address" in d.summary
    assert "hostname_resolution" not in categories(text)


def test_sockets_the_environment_asked_for_in_a_run_without_failure_raise_no_alarm():
    # written for this test: NCCL_IB_DISABLE=1 echoed, IPoIB bootstrap, the run set up and showing no error
    text = ("h1:5:5 [0] NCCL INFO Bootstrap : Using ib0:172.19.0.21<0>\n"
            "h1:5:5 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
            "h1:5:5 [0] NCCL INFO NET/Socket : Using [0]ib0:172.19.0.21<0>\n"
            "h1:5:5 [0] NCCL INFO Using network Socket\n"
            "h1:5:9 [0] NCCL INFO Channel 00 : 0[18000] -> 1[af000] via P2P/direct pointer\n")
    assert categories(text) == []
    assert any(d.id == "ib-unused-sockets" and d.severity == "info" for d in verdict(text))


def test_an_hca_nccl_cannot_open_is_the_container_device():
    # written for this test, in NCCL 2.2x's words
    text = "h2:7:7 [0] NCCL WARN NET/IB : Unable to open device erdma_1\n"
    d = top(text)
    assert d.category == "rdma_device_not_in_container" and d.severity == "warn"


def test_a_ring_that_does_not_close_names_versions_settings_or_nccl():
    # written for this test, in NCCL's words
    warn = "h3:1:2 [7] graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (13 != 15).\n"
    assert top(warn).category == "nccl_bug"
    two = "NCCL version 2.18.1+cuda12.1\nNCCL version 2.19.3+cuda12.2\n" + warn
    assert top(two).category == "version_mismatch"
    hostid = "h3:1:1 [7] NCCL INFO NCCL_HOSTID set by environment to node\n" + warn
    assert top(hostid).category == "nccl_env_misconfig"


def test_ib_without_gdrdma_in_a_run_that_completed_is_a_note_from_the_log_alone():
    # written for this test: two nodes over IB, no '/GDRDMA', no GDR statement by NCCL, init complete
    text = ("a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
            "a:1:2 [0] NCCL INFO Using network IB\n"
            "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n"
            "a:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n"
            "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
            "b:3:4 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0\n"
            "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
            "b:3:4 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    assert categories(text) == []
    assert any(d.id == "gdr-unused" and d.severity == "info" for d in verdict(text))


def test_nccl_duplicate_gpu_message_quoted_in_prose_is_two_ranks_on_one_gpu():
    # written for this test: NCCL's message quoted in a sentence, with no error word around it
    text = '"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device a4000" from NCCL INFO.\n'
    assert top(text).category == "duplicate_gpu_rank"
    real.require()
    for name in ("p2p-direct-pointer-and-shm-8gpu-single-process.log",
                 "net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log"):
        assert "duplicate_gpu_rank" not in categories(real.nccl_log(name).read_text())


def test_a_graph_file_nccl_echoes_is_a_warning_even_without_the_error_that_followed():
    # written for this test, in NCCL's words: the variable an image or /etc/nccl.conf set
    line = "h:1:2 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/microsoft/ncv4/graph.xml\n"
    d = top(line)
    assert d.category == "nccl_env_misconfig" and d.severity == "warn" and "graph.xml" in d.summary
    topo = "h:1:2 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/microsoft/ncv4/topo.xml\n"
    assert "nccl_env_misconfig" not in categories(topo)
    real.require()
    for name in real.names(real.NCCL_LOGS, "*.log"):
        text = real.nccl_log(name).read_text(errors="replace")
        assert not any(d.id == "nccl-env" and "NCCL_GRAPH_FILE" in d.summary for d in verdict(text))


def test_a_single_node_nccl_tests_run_that_printed_its_failure_did_not_stall_on_p2p():
    # written for this test, in the words of nccl-tests' first releases: the failure line has no 'Test '
    text = ("nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
            "# Using devices\n"
            "#   Rank  0 on     node03 device  0 [0x00] Tesla P100-PCIE-16GB\n"
            "#   Rank  1 on     node03 device  1 [0x00] Tesla P100-PCIE-16GB\n"
            "\n"
            "#                                                 out-of-place                    in-place\n"
            "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n")
    assert "acs_iommu_p2p" in categories(text)
    failed = text + "NCCL failure all_reduce.cu:95 'unhandled cuda error'\n"
    assert "acs_iommu_p2p" not in categories(failed) and categories(failed)
    real.require()
    assert "acs_iommu_p2p" not in categories(real.nccl_log("p2p-direct-pointer-and-shm-8gpu-single-process.log")
                                             .read_text())


def test_a_system_error_in_a_run_given_a_topology_file_names_the_file_before_dev_shm():
    # written for this test, in the words of nccl-tests and NCCL 2.18 (the WARN that followed was not posted)
    topo = "vm:1:2 [1] NCCL INFO Loading topology file /opt/microsoft/ncv4/topo.xml\n"
    failed = topo + "Test NCCL failure common.cu:953 'unhandled system error'\n"
    d = top(failed)
    assert d.category == "nccl_env_misconfig" and d.severity == "warn"
    # the same error with the WARN that names /dev/shm is /dev/shm's
    shm = failed + ("vm:1:2 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on "
                    "device\n")
    assert top(shm).category == "shm_too_small"
    # a run given a topology file that completed is no failure
    ok = topo + "vm:1:2 [1] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 100000 - Init COMPLETE\n"
    assert "nccl_env_misconfig" not in categories(ok)
    real.require()
    for name in real.names(real.NCCL_LOGS, "*.log"):
        text = real.nccl_log(name).read_text(errors="replace")
        assert not any(d.id == "nccl-env" and "topology file" in d.summary for d in verdict(text)), name


# ---- a GPU's InfoROM, NVML without its device nodes ------------------------------------------------------


def _in_repo_case(case_id: str) -> str:
    from pathlib import Path
    case = Path(__file__).resolve().parents[1] / "cases" / case_id
    meta = json.loads((case / "case.json").read_text(encoding="utf-8"))
    return "\n".join((case / f).read_text(encoding="utf-8") for f in meta["files"])


def test_a_corrupted_inforom_is_a_broken_gpu_and_a_clean_table_is_nothing():
    # real: a validator container's nvidia-smi with its infoROM warning (GPU Operator troubleshooting page)
    text = _in_repo_case("gpu-gpuoperator-docs-validator-nvidia-smi-inforom-corrupted-rc14")
    d = top(text)
    assert d.category == "gpu_lost_xid" and "InfoROM" in d.title, d
    # the same table without the warning and its return code: a working GPU (written for this test from it)
    clean = text.split("WARNING: infoROM")[0]
    assert categories(clean) == []


def test_nvml_unknown_error_is_device_access_lost_unless_a_gpu_fell_off_the_bus():
    # real: NVIDIA Container Toolkit troubleshooting, a container that lost its GPUs
    assert top(_in_repo_case("gpu-containertoolkit-docs-nvml-unknown-error-container-lost-gpus")).category == \
        "other:container-lost-gpu-access"
    # written for this test: the same message beside the driver's Xid 79 (the form of the real line of
    # tests/cases/gpu-gpuoperator-docs-gfd-crashloop-driver-rpc-timeout-dmesg-xid79): the GPU is lost, and that
    # explains NVML's failure
    text = ("NVRM: Xid (PCI:0000:ca:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
            "Failed to initialize NVML: Unknown Error\n")
    cats = categories(text)
    assert cats[:1] == ["gpu_lost_xid"] and "other:container-lost-gpu-access" not in cats, cats
    # other NVML failures keep their own causes
    assert "other:container-lost-gpu-access" not in categories("Failed to initialize NVML: Driver/library version mismatch\n")


# ---- connects the node's own stack would not send ---------------------------------------------------------------

GITCODE = "net-gitcode-blog-vllm-3x4090-socket-connect-abort-spare-server-ifname"


def _case_text(case: str, name: str) -> str:
    from pathlib import Path
    return (Path(__file__).resolve().parents[1] / "cases" / case / name).read_text(encoding="utf-8")


def test_a_connect_aborted_by_the_node_s_own_stack_is_the_interface_naming_the_address():
    # real: the gitcode blog's posted lines (tests/cases), a spare server whose interfaces differed
    text = _case_text(GITCODE, "posted-error-lines.log")
    d = top(text)
    assert d.category == "socket_ifname_wrong" and "10.37.12.78" in d.summary and d.nodes == ["jnlh102072"]
    assert "firewall_ports" not in categories(text)


def test_the_node_s_own_interfaces_say_whether_the_peer_is_in_another_subnet():
    # the real WARN line with a NET/Socket line of the same host before it, written for this test
    warn = _case_text(GITCODE, "posted-error-lines.log").splitlines()[0] + "\n"
    apart = "jnlh102072:8969:8969 [0] NCCL INFO NET/Socket : Using [0]bond0:10.37.8.72<0>\n" + warn
    d = top(apart)
    assert d.category == "socket_ifname_wrong" and "another subnet" in d.summary and "bond0 10.37.8.72" in d.summary
    assert d.confidence == "high"
    near = "jnlh102072:8969:8969 [0] NCCL INFO NET/Socket : Using [0]bond0:10.37.12.72<0>\n" + warn
    assert "socket_ifname_wrong" not in categories(near)  # on its own subnet: the route is there


@pytest.mark.parametrize("said", ["Network is unreachable", "Software caused connection abort", "No route to host"])
def test_unreachable_networks_and_hosts_are_the_interface_not_a_firewall(said):
    # written for this test, in NCCL 2.2x's words
    line = "n1:10:20 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.3<40000> failed : {}\n"
    assert top(line.format(said)).category == "socket_ifname_wrong"


def test_no_route_to_a_host_on_the_node_s_own_subnet_is_a_firewall_s_reject():
    """'No route to host' toward a peer on the subnet of the interface NCCL uses: the route is there, and the answer
    came from a REJECT rule (firewalld's icmp-host-prohibited). Real: the CSDN blog's two nodes (firewall_ports),
    beside real cases where the peer is not shown on the node's subnet (socket_ifname_wrong)."""
    cases = Path(__file__).resolve().parents[1] / "cases"
    firewall = (cases / "net-csdn-blog-2-node-nccl248-connect-no-route-to-host-firewall" / "posted-nccl-log.txt")
    assert top(firewall.read_text(encoding="utf-8")).category == "firewall_ports"
    for case in ("net-gaps67c-together-worklog-llama70b-socketpollconnect-no-route-to-host-container-misses-nccl-conf",
                 "net-gaps70d-lumi-hackmd-20220823-rccl-net-connect-no-route-to-host-socket-ifname-hsn"):
        folder = cases / case
        text = "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("posted*")))
        assert top(text).category == "socket_ifname_wrong", case
    # the same WARN with the node's interface in another subnet, and in the peer's subnet (written for this test)
    line = "n1:10:20 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.3<40000> failed : " \
           "No route to host\n"
    other = "n1:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:192.168.5.7<0>\n" + line
    d = top(other)
    assert d.category == "socket_ifname_wrong" and "another subnet" in d.summary and d.confidence == "high"
    same = "n1:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.9<0>\n" + line
    assert top(same).category == "firewall_ports"


def test_no_route_to_a_host_on_an_ipoib_interface_s_subnet_is_the_interface_not_a_firewall():
    """On an IPoIB interface the neighbour is resolved through the InfiniBand fabric: a peer on the same subnet whose
    port is down or on another fabric never answers, and the connect says 'No route to host' as a REJECT would.
    Real: a Cori-GPU bootstrap on ib0 that NCCL_SOCKET_IFNAME=eth fixed (tests/cases, gaps78c)."""
    case = "net-gaps78c-nerscpytorchtesting-cori-gpu-shifter-bootstrap-ib0-no-route-to-host-socket-ifname-eth"
    d = top(_case_text(case, "nccl-test-shifter-1450334.out"))
    assert d.category == "socket_ifname_wrong" and "IPoIB interface ib0 192.168.184.85" in d.summary
    assert d.confidence == "medium" and d.nodes == ["cgpu14"]
    # the same WARN with the node's bootstrap on an IPoIB interface of the peer's subnet (written for this test)
    line = "n1:10:20 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.3<40000> failed : " \
           "No route to host\n"
    for name in ("ib0", "ibp65s0", "ib0.8001"):
        ipoib = f"n1:10:10 [0] NCCL INFO Bootstrap : Using {name}:10.1.2.9<0>\n" + line
        assert top(ipoib).category == "socket_ifname_wrong", name


def test_a_connect_aborted_after_a_peer_s_own_failure_is_not_the_interface():
    # real: NVIDIA/nccl-tests#166, /dev/shm failure then an aborted connect to the peer on the same subnet
    text = real.nccl_log("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log").read_text(encoding="utf-8")
    assert categories(text)[0] == "shm_too_small" and "socket_ifname_wrong" not in categories(text)


# ---- c10d's retried connection attempts ----------------------------------------------------------------------


def test_a_c10d_connection_attempt_it_retries_is_no_failure_and_its_end_is_the_rendezvous():
    """c10d prints each failed attempt to reach the store as a warning ('[W socket.cpp:N] [c10d] The client socket
    has failed to connect to ...') and tries again until its timeout; the failure is the error line after the
    retries. Real lines (ofsoundof/GRL-Image-Restoration#27; pytorch/PiPPy#158 for the errno 99 form) behind a
    launcher's prefix."""
    retry = ("[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 "
             "(errno: 99 - Cannot assign requested address).\n")
    assert categories(retry) == []  # not a resolution failure, not a rendezvous failure, not unexplained
    failed = ("trainer/0 [1]:[W socket.cpp:558] [c10d] The client socket has failed to connect to "
              "[::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out).\n"
              "trainer/0 [1]:[E socket.cpp:610] [c10d] The client socket has failed to connect to any network "
              "address of (05, 40323).\n")
    assert categories(failed)[:1] == ["rendezvous_unreachable"]


# ---- DataLoader shared memory, a network NCCL_NET names, libfabric's provider, Docker's GPU runtime ---------


def test_a_dataloader_bus_error_is_shm_and_other_bus_errors_are_not():
    # real: Lightly's Docker FAQ, a DataLoader worker's SIGBUS in a container with Docker's 64 MB /dev/shm
    d = top(_in_repo_case("gpu-lightly-docs-docker-dataloader-bus-error-shm-64mb"))
    assert d.id == "dataloader-shm" and d.category == "shm_too_small" and d.severity == "fail", d
    # real: the BigScience tr1-13B logbook's lines of the same handler, behind Megatron-DeepSpeed's traceback
    # (bigscience-workshop/bigscience train/tr1-13B-base/chronicles.md, 'Round3 SAVE_INTERVAL=1500 NNODES=32')
    logbook = ("RuntimeError: DataLoader worker (pid 30882) is killed by signal: Bus error. It is possible that "
               "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n")
    assert "shm_too_small" in categories(logbook)
    # a process's own bus error, told by its launcher, is not the DataLoader's (its reading is killed-by-signal's;
    # the form of Open MPI's line in tests/lexicon/real.toml's samples, written for this test)
    assert "dataloader-shm" not in [d.id for d in verdict("[node:08445] Signal: Bus error (7)\n")]


def test_a_network_nccl_net_names_that_is_not_there_is_its_plugin_or_the_variable_naming_it():
    # real: CSCS Alps NCCL docs, nccl-tests' 'invalid usage' with the network of an unloaded plugin
    d = top(_in_repo_case("net-cscs-docs-nccl-tests-invalid-usage-aws-libfabric-plugin-not-loaded"))
    assert d.id == "net-plugin" and "AWS Libfabric" in d.summary, d
    # real: the same docs, NCCL_NET_PLUGIN="ofi" naming a library the uenv does not have: the variable is the cause
    text = _in_repo_case("net-cscs-docs-nccl-net-plugin-ofi-could-not-find-aws-libfabric-not-found")
    d = top(text)
    assert d.id == "nccl-env" and "NCCL_NET_PLUGIN=ofi" in d.summary, d
    assert "net_plugin" not in categories(text)
    # NCCL's own networks not found are not a plugin's (written for this test, NCCL's WARN of net.cc for NCCL_NET=IB)
    assert "net_plugin" not in categories("n1:1:2 [0] net.cc:626 NCCL WARN Error: network IB not found.\n")
    # the plugin absent when none was named is NCCL's normal line, and the line of the network found is no failure
    # (real: ../shared/fixtures/cases/net-nccl352-healthy-single-node-lo-socket-dgx-k8s; CSCS Alps NCCL docs)
    assert categories("n1:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.\n"
                      "nid006352:34610:34631 [0] NCCL INFO Using network AWS Libfabric\n") == []


def test_libfabric_without_the_provider_is_the_device_not_in_the_container():
    # real: CSCS Alps Container Engine docs, 'fi_info -p cxi' in a container without the CXI hook, and with it
    d = top(_in_repo_case("net-cscs-docs-container-fi-info-cxi-fi-getinfo-61-no-data"))
    assert d.category == "rdma_device_not_in_container" and d.severity == "fail", d
    assert categories(_in_repo_case("net-cscs-docs-container-fi-info-cxi-provider-working-healthy")) == []


def test_docker_without_a_gpu_runtime_is_named():
    # real: Lightly's Docker FAQ, 'docker run --gpus all' on a Docker without the NVIDIA runtime
    d = top(_in_repo_case("node-lightly-docs-docker-gpus-all-could-not-select-device-driver"))
    assert d.id == "container-runtime-no-gpu" and d.category == "other:container-runtime-without-gpu-support", d
    # Docker 19.03's words, the driver's name left out (real: NVIDIA/nvidia-docker#1642)
    d = top("docker: Error response from daemon: could not select device driver with capabilities: [[gpu]].\n")
    assert d.id == "container-runtime-no-gpu" and d.category == "other:container-runtime-without-gpu-support", d


def test_the_compute_domain_daemons_missing_imex_template_is_cdi_not_enabled():
    # real: kubernetes-sigs/dra-driver-nvidia-gpu#720, the daemon's exit when the kubelet plugin's CDI edits did not apply
    d = top(_in_repo_case("node-gaps80d-dradriver720-cd-daemon-writeimexconfig-template-missing-cdi-not-enabled"))
    assert d.id == "compute-domain-daemon-cdi-edits-missing" and d.category == "other:cdi-not-enabled", d
    assert d.severity == "fail", d
    # the daemon's healthy start logs the rendered config; its other failures are not this cause
    assert "compute-domain-daemon-cdi-edits-missing" not in [d.id for d in verdict(
        "I1113 01:08:57.594698       1 main.go:210] no cliqueID: register with ComputeDomain, but do not run IMEX daemon\n"
        "Error: writeIMEXConfig failed: error writing config file /imexd/imexd.cfg: permission denied\n")]


def test_a_symbol_version_the_hosts_library_lacks_is_a_library_too_old():
    # real: NVIDIA/mig-parted#329, the MIG manager's nvidia-mig-parted (built on UBI 9) run through chroot on RHEL 8
    d = top(_in_repo_case("gpu-gaps80d-migparted329-mig-manager-chroot-host-nvidia-mig-parted-glibc-2-34-not-found-rhel8"))
    assert d.id == "shared-library-too-old" and d.category == "other:shared-library-too-old", d
    assert d.severity == "fail", d
    # a weak version 'ldd -v' reports is not fatal to the loader; the host's glibc version line is no failure
    assert "shared-library-too-old" not in [d.id for d in verdict(
        "\tweak version `GLIBC_2.34' not found (required by ./prog)\n"
        "ldd (GNU libc) 2.28\n")]


def test_a_symbol_the_loader_cannot_resolve_is_a_library_of_another_version():
    # real: THU-MIG/yolov10#306 (torch finding an NCCL older than its own), Dao-AILab/flash-attention#723 (an
    # extension built for another torch)
    for line in ("ImportError: /root/.local/conda/envs/yolov10/lib/python3.9/site-packages/torch/lib/libtorch_cuda.so:"
                 " undefined symbol: ncclCommRegister",
                 "ImportError: /usr/local/lib/python3.8/dist-packages/flash_attn_2_cuda.cpython-38-x86_64-linux-gnu.so:"
                 " undefined symbol: _ZN3c104cuda9SetDeviceEi"):
        for prefix in ("", "[rank3]: ", "node7: "):
            d = verdict(prefix + line + "\n")[0]
            assert d.id == "shared-library-symbol-missing" and d.severity == "fail", (prefix + line, d)
    # a plugin Open MPI leaves out and an optional extension a warning names are not this cause; ldd's found
    # libraries (pytorch/pytorch#69013) are no failure
    assert "shared-library-symbol-missing" not in [d.id for d in verdict(
        "[n1:01234] mca_base_component_repository_open: unable to open mca_btl_x: /usr/lib/openmpi/mca_btl_x.so: "
        "undefined symbol: x_init (ignored)\n"
        "UserWarning: Failed to load image Python extension: /opt/tv/image.so: undefined symbol: _ZN5torch3jit\n"
        "\tlibnccl.so.2 => /usr/lib/x86_64-linux-gnu/libnccl.so.2 (0x00007fb8fe5d6000)\n")]


def test_a_library_asking_for_an_executable_stack_refused_by_the_loader_is_named():
    # real: open-power/pdbg#111 (glibc 2.41's dlopen), microsoft/WSL#2562 (a program's start)
    for line in ("libpdbg.so.6: cannot enable executable stack as shared object requires: Invalid argument",
                 "./test: error while loading shared libraries: libcriterion.so.3: cannot enable executable stack "
                 "as shared object requires: Invalid argument"):
        for prefix in ("", "[rank3]: ", "node7: "):
            d = verdict(prefix + line + "\n")[0]
            assert d.id == "shared-library-executable-stack" and d.severity == "fail", (prefix + line, d)
    # GStreamer leaves a plugin it cannot load out with a warning (microsoft/WSL#916)
    assert "shared-library-executable-stack" not in [d.id for d in verdict(
        "(gst-plugin-scanner:26987): GStreamer-WARNING **: Failed to load plugin '/usr/local/lib/gstreamer-1.0/"
        "libgstdtls.so': libcrypto.so.1.1: cannot enable executable stack as shared object requires: Invalid "
        "argument\n")]


def test_the_kubelets_podresources_get_method_disabled_is_named():
    # real: NVIDIA's Confidential Containers troubleshooting page, a Kata pod's FailedCreatePodSandBox event whose
    # device cold plug asked the kubelet's PodResources API for the pod's GPUs
    d = top(_in_repo_case("node-coco-docs-kata-cold-plug-podresources-get-disabled"))
    assert d.id == "kubelet-podresources-get-disabled" and d.severity == "fail", d
    assert d.category == "other:kubelet-podresources-get-disabled", d
    # a working GPU Operator's pods, a Kata pod's QEMU warnings the vendor calls expected: nothing
    for healthy in ("node-gpuoperator-docs-getting-started-pods-running-validator-completed-healthy",
                    "gpu-coco-docs-qemu-iommufd-ioas-map-bad-address-pci-bar-healthy"):
        assert categories(_in_repo_case(healthy)) == [], healthy


# ---- host memory told by a memory monitor; NCCL's /dev/shm segment removed under it ----------------------------


def _healthy_texts():
    """Real working runs: the in-repo healthy cases, and the healthy NCCL logs of ../shared (where present)."""
    from tests import realcases
    out = {c.id: "\n".join((c.path / f).read_text(encoding="utf-8") for f in c.meta["files"])
           for c in realcases.cases(realcases.IN_REPO) if c.healthy}
    if real.AVAILABLE:
        for name in ("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log", "p2p-direct-pointer-and-shm-8gpu-single-process.log"):
            out[name] = real.nccl_log(name).read_text(encoding="utf-8", errors="replace")
    return out


def test_a_memory_monitor_killing_workers_is_host_memory_not_gpu_memory():
    # real: Ray Data's docs (the OOM-kill block with its cgroup reason), a practitioner's raylet log and task
    # exception (julianygao.me), frameworks' trackers (verl's OutOfMemoryError with its top-memory table, EasyR1's
    # and Ray's raylet lines, and the 2022 raylet's 'System memory low at node with IP ...' behind
    # '(raylet, ip=...)'): the node ran out of host memory, whatever the exception's class is called
    for case in ("node-raydata-docs-ray-oom-killer-workers-node-low-memory-cgroup",
                 "node-julianygao-blog-raylet-workers-killed-due-to-memory-pressure",
                 "node-julianygao-blog-ray-outofmemoryerror-node-running-low-on-memory",
                 "node-fw41-verl2950-ray-oom-error-rollout-workers-host-memory-098",
                 "node-fw41-easyr1185-raylet-workers-killed-memory-pressure-log-probs",
                 "node-fw41-ray45894-raylet-worker-killed-memory-pressure-fewer-tasks",
                 "node-fw41-ray28781-raylet-ip-prefixed-system-memory-low-killing-task"):
        text = _in_repo_case(case)
        d = top(text)
        assert d.id == "memory-monitor-kill" and d.category == "other:host-oom" and d.severity == "fail", (case, d)
        assert "gpu_out_of_memory" not in categories(text) and "unexplained" not in categories(text), case
    # CUDA's own out-of-memory stays GPU memory (real: the B200 traceback of the ml-engineering book)
    assert top(_in_repo_case("gpu-mlengineering-b200-cuda-oom-in-forward-traceback")).category == "gpu_out_of_memory"
    # a line that merely speaks of memory pressure, with nothing killed, is no failure (written for this test)
    assert "other:host-oom" not in categories("INFO worker.py:1 -- memory pressure on the node is 42%\n")
    # the 2022 raylet's own start-up line names the threshold and kills nothing (the form of Ray's docs,
    # limiting-memory-usage.rst, 'MemoryMonitor initialized with usage threshold at ... bytes')
    assert "other:host-oom" not in categories(
        "(raylet) memory_monitor.cc: MemoryMonitor initialized with usage threshold at 32164429824 bytes "
        "(0.90 system memory), total system memory bytes: 35738255360\n")
    for name, text in _healthy_texts().items():
        assert "other:host-oom" not in categories(text), name


def test_an_nccl_segment_found_gone_at_unlink_is_removed_under_it_not_too_small():
    # real: NCCL User Guide, Runtime and MPI issues: the WARN of a segment systemd-logind's RemoveIPC deleted
    text = _in_repo_case("net-nccldocs-systemd-removeipc-unlink-shared-memory-enoent")
    d = top(text)
    assert d.id == "shm-removed" and d.category == "other:systemd-removeipc" and d.severity == "fail", d
    assert "shm_too_small" not in categories(text) and "unexplained" not in categories(text)
    # the same page's WARN of a segment that cannot grow stays /dev/shm too small
    assert top(_in_repo_case("net-nccldocs-failed-to-extend-dev-shm-segment")).id == "shm-too-small"
    # behind the host:pid:tid prefix of a real run (written for this test, the form of NCCL's shmutils.cc WARN)
    prefixed = ("node1:2031:2031 [0] misc/shmutils.cc:87 NCCL WARN unlink shared memory /dev/shm/nccl-d5rTd0 "
                "failed, error: No such file or directory\n")
    assert top(prefixed).id == "shm-removed"
    for name, text in _healthy_texts().items():
        assert "other:systemd-removeipc" not in categories(text), name


def test_a_full_file_system_is_named_and_a_full_dev_shm_stays_dev_shm():
    # real: the ML engineering book's storage chapter, a job's write to a full /tmp on a compute node
    d = top(_in_repo_case("node-mlengineering-tmp-full-oserror-errno28-no-space-left"))
    assert d.id == "file-system-full" and d.category == "other:file-system-full" and d.severity == "fail", d
    # the same errno on a quota (the C library's words for EDQUOT, written for this test)
    assert categories("tar: ckpt/shard-00017.bin: Cannot write: Disk quota exceeded\n") == ["other:file-system-full"]
    # ENOSPC on a shared-memory segment is /dev/shm's, never a file system's: NCCL's WARN in the form of
    # src/os/linux.cc (the sample of knowledge/nccl.toml's shm-segment-failed) and PyTorch's shared-memory file
    # (the form of torch/csrc's 'unable to write to file </torch_...>'), both written for this test
    nccl = ("n1:3401:3467 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
            "/dev/shm/nccl-oANTNJ (size 9637888), error: No space left on device (28)\n")
    assert categories(nccl)[:1] == ["shm_too_small"] and "other:file-system-full" not in categories(nccl)
    torch_shm = "RuntimeError: unable to write to file </torch_18692_1954506624>: No space left on device (28)\n"
    assert "other:file-system-full" not in categories(torch_shm)
    # ENOSPC from a memory registration is the NIC's registrations used up, no file system (real: ALCF's Aurora DAOS
    # notes, Mercury's na_ofi_mem_register after libfabric's fi_mr_enable): it stays a failure, unexplained
    mr = "net-hpc43-alcf-aurora-daos-na-ofi-mem-register-fi-mr-enable-no-space-left"
    assert "file-system-full" not in [d.id for d in verdict(_in_repo_case(mr))]
    from tests import realcases
    assert [d.category for d in realcases.alarms_of_case(realcases.IN_REPO / mr)] == ["unexplained"]


def test_an_io_error_on_a_file_is_a_storage_failure_and_a_sysfs_read_is_not():
    # real: OLMo's data loader creating its global indices file with np.memmap on /scratch, on several nodes
    d = top(_in_repo_case("node-gaps65a-olmo737-multinode-torchrun-global-indices-memmap-oserror-errno-5-eio"))
    assert d.id == "storage-io-error" and d.category == "other:storage-io-error" and d.severity == "fail", d
    # the C library's words behind a tool's prefix (the form of coreutils' 'error: <file>: <strerror>', written
    # for this test) and Go's lower-case ones (its syscall error table)
    assert categories("cp: error reading '/lustre/ckpt/step_1200/shard-07.pt': Input/output error\n") == [
        "other:storage-io-error"]
    assert categories("Error: read /mnt/data/train-0001.bin: input/output error\n") == ["other:storage-io-error"]
    # a sysfs attribute that answers EIO is the driver refusing that read (a counter the hardware lacks): it stays a
    # failure line nothing explains, never a file system's
    sysfs = "cat: /sys/class/infiniband/mlx5_0/ports/1/hw_counters/rx_icrc_encapsulated: Input/output error\n"
    assert "other:storage-io-error" not in categories(sysfs)
    # the kernel's own lines of a failing disk, pasted alone (real: tests/kmsg/real.toml, raspberrypi/linux#885 and
    # MichaIng/DietPi#2353), name the same cause; XFS's 'Quotacheck needed' of a healthy boot does not
    for line in ("[ 3651.567809] blk_update_request: I/O error, dev sda, sector 311\n",
                 "[ 3837.406095] Buffer I/O error on dev sda1, logical block 244, lost async page write\n",
                 "[29821.550114] EXT4-fs error (device mmcblk0p2): ext4_evict_inode:292: comm rm: couldn't truncate "
                 "inode 11376 (err -5)\n"):
        assert top(line).id == "storage-io-error", line
    assert "other:storage-io-error" not in categories("[    9.463650] XFS (vda4): Quotacheck needed: Please wait.\n")


def test_enotconn_on_a_path_is_a_fuse_mount_whose_daemon_is_gone_and_on_a_socket_is_not():
    # real, as posted: coreutils' df and ls, fusermount, gcsf, each on a FUSE mount whose daemon had died
    # (redbo/cloudfuse#15, s3fs-fuse/s3fs-fuse#373 and #635, rclone/rclone#2982, harababurel/gcsf#67)
    for line in ("df: `/media/cloudfiles': Transport endpoint is not connected",
                 "df: \u2018/backup/tapes\u2019: Transport endpoint is not connected",
                 "ls: cannot access /mnt/naip: Transport endpoint is not connected",
                 "2019/02/25 19:25:38 mount helper error: fusermount: failed to access mountpoint /mnt/gdrive: "
                 "Transport endpoint is not connected",
                 "ERROR gcsf > Could not mount to /root/mediaserver/drive: Transport endpoint is not connected (os "
                 "error 107)"):
        d = [d for d in _pasted(line + "\n") if d.severity in ("fail", "warn")][0]
        assert d.id == "fuse-mount-disconnected" and d.category == "other:storage-io-error" and d.severity == "fail", line
    # the daemon's own crash in the kernel log beside it (redbo/cloudfuse#15, as posted) is that cause's evidence too
    both = ("df: `/media/cloudfiles': Transport endpoint is not connected\n"
            " kernel: [249662.999667] cloudfuse[2459]: segfault at 1000000d7 ip 00007f8da9424095 sp 00007f8da460a000 "
            "error 4 in libxml2.so.2.7.7[7f8da93ec000+144000]\n")
    assert [d.id for d in _pasted(both) if d.severity in ("fail", "warn")] == ["fuse-mount-disconnected"]
    # the same words of a socket, and Python's bare errno without a path (s3fs-fuse/s3fs-fuse#2176), name no mount
    for line in ("shutdown: Transport endpoint is not connected",
                 "OSError: [Errno 107] Transport endpoint is not connected",
                 "connect to /var/run/dbus/system_bus_socket: Transport endpoint is not connected"):
        assert "fuse-mount-disconnected" not in [d.id for d in _pasted(line + "\n")], line


def _pasted(text: str) -> List:
    """The diagnoses of 'nccldiag log' on the text as a file: the failure lexicon's lines included."""
    import tempfile

    from nccldiag.sessions import log

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "pasted.txt"
        p.write_text(text, encoding="utf-8")
        return log.run([str(p)], workers=1).diagnoses[0]


def test_no_healthy_in_repo_case_reads_as_a_full_file_system():
    from tests import realcases
    healthy = [c for c in realcases.cases(realcases.IN_REPO) if c.healthy]
    assert len(healthy) >= 20
    for c in healthy:
        assert "file-system-full" not in [d.id for d in verdict(_in_repo_case(c.id))], c.id


# ---- the container stack's GPU hook without nvidia-container-cli; GDRCopy without its device node; EFA's CUDA
# ---- registration refused by an older Libfabric


def test_enroot_s_gpu_hook_without_nvidia_container_cli_is_a_runtime_without_gpu_support():
    # real: pyxis issue 110, slurmstepd's lines of a GPU container whose enroot hook found no nvidia-container-cli
    text = _in_repo_case("node-pyxis110-slurmstepd-enroot-hook-nvidia-container-cli-not-found")
    d = top(text)
    assert d.id == "container-runtime-no-gpu" and d.category == "other:container-runtime-without-gpu-support", d
    assert d.severity == "fail" and "unexplained" not in categories(text), d
    # the hook failing for another reason is not this cause (real: enroot issues 88 and 138)
    for case in ("node-enroot88-nvidia-container-cli-capability-change-failed-selinux",
                 "node-enroot138-pyxis-persistenced-socket-mount-error-libnvidia-container"):
        assert "other:container-runtime-without-gpu-support" not in categories(_in_repo_case(case)), case
    for name, text in _healthy_texts().items():
        assert "other:container-runtime-without-gpu-support" not in categories(text), name


def test_a_script_whose_shell_finds_no_nvidia_container_cli_is_a_runtime_without_gpu_support():
    # real: Charliecloud issue 939, ch-fromhost --nvidia on a host without nvidia-container-cli (dash's 'not found')
    text = _in_repo_case("node-gaps80e-charliecloud939-ch-fromhost-nvidia-container-cli-not-found")
    d = top(text)
    assert d.id == "container-runtime-no-gpu" and d.category == "other:container-runtime-without-gpu-support", d
    assert d.severity == "fail" and "unexplained" not in categories(text), d
    # bash's words for the same (written for this test)
    assert categories("./ch-fromhost: line 204: nvidia-container-cli: command not found\n")[0] == (
        "other:container-runtime-without-gpu-support")
    # a configure check and a transcript that finds the program are no failure (written for this test)
    assert categories("checking for nvidia-container-cli... not found\n$ which nvidia-container-cli\n"
                      "/usr/bin/nvidia-container-cli\n") == []


def test_gdrcopy_unable_to_open_its_driver_is_named_and_a_working_gdrcopy_is_not():
    # real: GDRCopy issue 234, gdrdrv loaded (lsmod) and every gdr_open of the sanity test failing
    text = _in_repo_case("node-gdrcopy234-lsmod-gdrdrv-loaded-sanity-gdr-open-error-no-device-node")
    d = top(text)
    assert d.id == "gdrcopy-device-unopenable" and d.category == "other:gdrcopy-device-node-missing", d
    assert d.severity == "fail" and "unexplained" not in categories(text), d
    # UCX's and an MPI's words for the same failure (the form quoted in GDRCopy issue 72, written for this test)
    assert categories('GDRCOPY library "libgdrapi.so" unable to open GDR driver, is gdrdrv.ko loaded?\n') == [
        "other:gdrcopy-device-node-missing"]
    # real: GDRCopy issue 278, the sanity suite all passed and /dev/gdrdrv listed
    assert categories(_in_repo_case("node-gdrcopy278-gdrcopy-sanity-28-passed-dev-gdrdrv-healthy")) == []
    for name, text in _healthy_texts().items():
        assert "other:gdrcopy-device-node-missing" not in categories(text), name


def test_efa_refusing_cuda_buffers_is_the_known_nccl_libfabric_incompatibility():
    # real: aws-ofi-nccl issue 584 (register_mr_buffers, with fi_info) and, where ../shared is, awsome-distributed-ai
    # issue 203 (register_rail_mr_buffer): the maintainers' known incompatibility, category net_plugin
    texts = [_in_repo_case("net-awsofinccl584-efa-register-mr-type2-einval-nccl219-old-libfabric")]
    if real.AVAILABLE:
        texts.append((real.ROOT / "cases" / "net-awsomeai203-ofi-register-mr-einval-old-libfabric-nccl219" /
                      "posted-warn.log").read_text(encoding="utf-8"))
    for text in texts:
        found = [d for d in verdict(text) if d.severity in ("fail", "warn")]
        assert found[0].id == "efa-cuda-mr-nccl-libfabric" and found[0].category == "net_plugin", found
        assert [d.id for d in found].count("net-plugin") == 0, found  # explained by the specific cause
    # a host buffer (type 1) refused for want of memory is not it (real form: NVIDIA/nccl issue 563)
    host = ("ip-10-0-87-143:149:298 [5] register_mr_buffers:465 NCCL WARN NET/OFI Unable to register memory "
            "(type = 1) for device 0. RC: 12, Error: Cannot allocate memory\n")
    assert "efa-cuda-mr-nccl-libfabric" not in [d.id for d in verdict(host)]
    # real: the same thread's working run behind SkyPilot's prefix
    assert categories(_in_repo_case("net-awsofinccl584-skypilot-prefixed-allreduce-bench-16-ranks-efa-healthy")) == []
    for name, text in _healthy_texts().items():
        assert "efa-cuda-mr-nccl-libfabric" not in [d.id for d in verdict(text)], name



def test_an_efa_peer_address_refused_is_the_security_group_not_the_plugin():
    # real: aws-ofi-nccl issue 663 (torch's Last error quoting the plugin's WARN; the outbound rule was missing)
    text = _in_repo_case("net-cloud42-awsofi663-p5-torchrun-efa-insert-remote-address-av-outbound-security-group")
    found = [d for d in verdict(text) if d.severity in ("fail", "warn")]
    assert found[0].id == "efa-av-insert-failed" and found[0].category == "firewall_ports", found
    assert "net-plugin" not in [d.id for d in found] and "unexplained" not in categories(text), found
    # the plugin's WARN as NCCL prints it (aws-ofi-nccl's format, written for this test) is the same cause
    warn = ("ip-10-0-1-5:2201:2290 [0] nccl_net_ofi_sendrecv_connect:1605 NCCL WARN NET/OFI Unable to insert remote "
            "address into address vector for device 0. RC: -22\n")
    assert top(warn).id == "efa-av-insert-failed"
    # another failure of the plugin at set-up stays the plugin's (real form: aws-ofi-nccl issue 715's WARN)
    other = ("algo-1:17778:17848 [5] nccl_ofi_ofiutils_init_connection:274 NCCL WARN NET/OFI Couldn't open CQ. RC: -22, "
             "ERROR: Invalid argument\n")
    assert "efa-av-insert-failed" not in [d.id for d in verdict(other)]
    for name, text in _healthy_texts().items():
        assert "efa-av-insert-failed" not in [d.id for d in verdict(text)], name


def test_the_efa_provider_aborting_for_its_receive_buffers_is_the_locked_memory_limit(tmp_path):
    # real: awsome-distributed-ai issue 647 (the provider's abort message; max locked memory was 65536)
    text = _in_repo_case("net-cloud42-awsomeai647-efa-libfabric-enomem-post-internal-receive-buffers-memlock")
    d = top(text)
    assert d.id == "efa-rx-buffers-enomem" and d.category == "memlock_limit" and d.severity == "fail", d
    assert "unexplained" not in categories(text), categories(text)
    # the same internal error for another errno is not the limit's (the line of libfabric's format, written for this
    # test): it stays a failure nobody explains
    eio = text.replace("(-12) Cannot allocate memory", "(-5) Input/output error")
    assert "efa-rx-buffers-enomem" not in [d.id for d in verdict(eio)]
    (tmp_path / "job.log").write_text(eio, encoding="utf-8")
    from tests import realcases
    assert [d.category for d in realcases.alarms_of([tmp_path / "job.log"])] == ["unexplained"]
    # real working EFA outputs: fi_info -p efa, fi_pingpong over efa, ibstat of an EFA device
    for case in ("net-cloud42-libfabric5689-fi-info-p-efa-rdm-dgram-providers-healthy",
                 "net-cloud42-magiccastle331-fi-pingpong-rdm-efa-server-healthy",
                 "node-cloud42-amzndrivers114-dmesg-efa-registered-ibstat-efa0-active-healthy"):
        assert categories(_in_repo_case(case)) == [], case
    for name, text in _healthy_texts().items():
        assert "efa-rx-buffers-enomem" not in [d.id for d in verdict(text)], name


def test_the_older_efa_provider_s_one_line_abort_for_enomem_is_the_locked_memory_limit(tmp_path):
    # real: aws-ofi-nccl issue 107 (libfabric 1.x's rxr provider in a container started without --ulimit memlock=-1)
    text = _in_repo_case("net-gaps78d-awsofinccl107-p3dn-docker-efa-unable-to-write-to-eq-enomem-memlock")
    d = top(text)
    assert d.id == "efa-rx-buffers-enomem" and d.category == "memlock_limit" and d.severity == "fail", d
    assert "unexplained" not in categories(text), categories(text)
    # the same abort for another errno is not the limit's (the line of the provider's format, written for this test):
    # it stays a failure nobody explains
    inval = text.replace("Unknown error -12 (-12)", "Invalid argument (-22)")
    assert "efa-rx-buffers-enomem" not in [d.id for d in verdict(inval)]
    (tmp_path / "job.log").write_text(inval, encoding="utf-8")
    from tests import realcases
    assert [d.category for d in realcases.alarms_of([tmp_path / "job.log"])] == ["unexplained"]
    # the host's working fi_info of the same thread stays quiet
    assert categories(_in_repo_case("net-gaps78d-awsofinccl107-p3dn-host-fi-info-p-efa-rdm-dgram-healthy")) == []


def test_an_efa_receiver_that_never_answered_is_a_failure_line_not_a_named_cause(tmp_path):
    # real: gardener/gardener-extension-provider-aws issue 1832 (a security group without its egress rule to itself);
    # the provider's own help names a peer process gone, so the line alone names no cause
    from tests import realcases
    text = _in_repo_case("net-gaps78d-gardener1832-efa-unresponsive-receiver-handshake-failed-sg-egress-self")
    assert categories(text) == [], categories(text)
    (tmp_path / "job.log").write_text(text, encoding="utf-8")
    assert [d.category for d in realcases.alarms_of([tmp_path / "job.log"])] == ["unexplained"]


def test_a_slingshot_nic_event_queue_overflow_is_its_own_cause_and_a_working_cxi_run_is_quiet():
    # real: ALCF's Aurora known issues (libfabric's cxi provider line as a job prints it)
    text = _in_repo_case("net-hpc43-alcf-aurora-libfabric-cxi-cassini-event-queue-overflow")
    d = top(text)
    assert d.id == "cxi-event-queue-overflow" and d.category == "other:cxi-event-queue-overflow", d
    assert d.severity == "fail" and "unexplained" not in categories(text), categories(text)
    # the later releases' wording of the same abort (libfabric's prov/cxi/src/cxip_evtq.c; the line written for this
    # test in the provider's log format)
    later = text.replace("Cassini Event Queue overflow detected.", "H/W Event Queue overflow detected.")
    assert top(later).id == "cxi-event-queue-overflow"
    # real working runs over the cxi provider: LUMI's RCCL with aws-ofi-rccl selecting cxi, and CSCS's fi_info -p cxi
    for case in ("net-hpc43-lumi-docs-rccl-net-ofi-aws-ofi-rccl-provider-cxi-epochs-healthy",
                 "net-cscs-docs-container-fi-info-cxi-provider-working-healthy"):
        assert categories(_in_repo_case(case)) == [], case
    for name, text in _healthy_texts().items():
        assert "cxi-event-queue-overflow" not in [d.id for d in verdict(text)], name



def test_a_nics_nvm_checksum_failure_is_its_own_cause_behind_a_mail_quote_and_a_working_boot_is_quiet(tmp_path):
    # real: the soekris-tech report as quoted in a reply ('>> ' prefixes, the boot agent's and the em driver's lines),
    # read as 'nccldiag log' reads it: the failure lexicon keeps the lines the log reader does not
    diags, failed = _log_run(tmp_path, _in_repo_case(
        "list-gaps76e-soekris-tech-net6501-bios-141c-em0-eeprom-checksum-not-valid-attach-returned-5"))
    d = diags[0]
    assert d.id == "nic-nvm-checksum-invalid" and d.category == "other:nic-nvm-corrupt" and d.severity == "fail", d
    assert failed and "unexplained" not in [x.category for x in diags], diags
    # Linux igb's wording (igb_main.c igb_probe's dev_err; the line written for this test in the driver's form)
    diags, _ = _log_run(tmp_path, "igb 0000:03:00.0: The NVM Checksum Is Not Valid\n")
    assert diags[0].id == "nic-nvm-checksum-invalid" and "igb 0000:03:00.0" in diags[0].summary, diags[0]
    for name, text in _healthy_texts().items():
        assert "nic-nvm-checksum-invalid" not in [x.id for x in verdict(text)], name


def test_a_node_the_launcher_can_no_longer_ping_is_a_lost_peer_and_a_failed_launch_stays_unexplained(tmp_path):
    # real: ALCF's Aurora troubleshooting page (PALS's three forms of a lost node, then the node's PBS comment)
    text = _in_repo_case("node-hpc43-alcf-aurora-ping-failed-no-reply-node-hbm-controller-errors")
    d = top(text)
    assert d.id == "launcher-node-unreachable" and d.category == "remote_peer_failure" and d.severity == "fail", d
    assert "unexplained" not in categories(text), categories(text)
    # real: ALCF's Polaris known issues, a launch that failed at start, whose cause the site did not establish: a
    # failure, unexplained, never a lost peer
    launch = ("launch failed on x3104c0s1b0n0: Couldn't forward RPC launch(ab751d77-e80a-4c54-b1c2-4e881f7e8c90) to "
              "child x3104c0s31b0n0.hsn.cm.polaris.alcf.anl.gov: Resource temporarily unavailable\n")
    assert "launcher-node-unreachable" not in [d.id for d in verdict(launch)]
    (tmp_path / "job.log").write_text(launch, encoding="utf-8")
    from tests import realcases
    assert [d.category for d in realcases.alarms_of([tmp_path / "job.log"])] == ["unexplained"]
    for name, text in _healthy_texts().items():
        assert "launcher-node-unreachable" not in [d.id for d in verdict(text)], name


# ---- the driver's parts of two versions; a module built for another kernel; a GPU reset refused -------------------


def test_the_driver_s_parts_of_two_versions_are_a_driver_mismatch():
    # real: Nobara rpm-sources#526 (the module refuses GSP firmware of another version) and void-packages#4473
    # (nvidia-modeset.ko left from the previous driver beside a new nvidia.ko)
    for case in ("node-nobara526-gsp-firmware-image-version-mismatch-module-595-58",
                 "node-voidpkgs4473-nvidia-modeset-version-mismatch-dkms-build-failed"):
        text = _in_repo_case(case)
        d = top(text)
        assert d.id == "cuda-driver-mismatch" and d.severity == "fail", (case, d)
        assert "unexplained" not in categories(text), case
    # nvidia-drm's form of the modules' check, behind a dmesg stamp (written for this test from the driver's
    # string 'Version mismatch: nvidia-modeset.ko(%s) nvidia-drm.ko(%s)')
    drm = "[    5.120000] Version mismatch: nvidia-modeset.ko(550.54.15) nvidia-drm.ko(550.90.07)\n"
    assert top(drm).category == "cuda_driver_mismatch"
    for name, text in _healthy_texts().items():
        assert "cuda_driver_mismatch" not in categories(text), name


def test_an_nvidia_module_built_for_another_kernel_is_named_and_other_refusals_are_not():
    # real: negativo17/nvidia-driver#97, modprobe's Exec format error and the kernel's version magic line
    text = _in_repo_case("node-negativo97-modprobe-exec-format-error-version-magic-other-kernel")
    d = top(text)
    assert d.id == "module-wrong-kernel" and d.category == "other:kernel-module-built-for-another-kernel", d
    assert d.severity == "fail" and "unexplained" not in categories(text), d
    # each line alone names it (the real text, split)
    modprobe, _, kernel = text.partition("\n\n")
    assert top(modprobe + "\n").id == "module-wrong-kernel"
    assert top(kernel).id == "module-wrong-kernel"
    # insmod's words for the same -ENOEXEC (written for this test, the form of kmod's insmod error)
    insmod = "insmod: ERROR: could not insert module /lib/modules/6.8.0-45-generic/updates/dkms/nvidia.ko: Invalid module format\n"
    assert top(insmod).id == "module-wrong-kernel"
    # another module refused for another reason is not this cause, and it is never an all-clear (real:
    # gpu-operator#2868's peermem sidecar, a module built against another RDMA stack)
    peermem = _in_repo_case("node-gpuoperator2868-gb300-nvidia-peermem-disagrees-symbol-version")
    assert "other:kernel-module-built-for-another-kernel" not in categories(peermem)
    from nccldiag.knowledge import lexicon
    assert lexicon.shape_of("modprobe: ERROR: could not insert 'ipmi_si': No such device").id == "module-load-refused"
    for name, text in _healthy_texts().items():
        assert "other:kernel-module-built-for-another-kernel" not in categories(text), name


def test_a_gpu_reset_refused_by_a_client_is_named():
    # real: NVIDIA/mig-parted#181, the MIG mode change's GPU reset refused while nvidia_drm holds the GPUs
    text = _in_repo_case("gpu-migparted181-gpu-reset-in-use-by-another-client-nvidia-drm")
    d = top(text)
    assert d.id == "gpu-reset-blocked" and d.category == "other:gpu-reset-blocked" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    for name, text in _healthy_texts().items():
        assert "other:gpu-reset-blocked" not in categories(text), name


def test_a_host_name_that_does_not_resolve_is_a_failure_line_of_its_own():
    # real: Mellanox/network-operator#830, the MOFED driver pod that cannot resolve its package repository's host
    text = _in_repo_case("node-netop830-mofed-pod-log-no-ofed-driver-cannot-resolve-cdn-redhat")
    assert top(text).category == "hostname_resolution"
    from nccldiag.knowledge import lexicon
    curl = [ln for ln in text.splitlines() if "Curl error" in ln]
    assert [lexicon.shape_of(ln).id for ln in curl] == ["name-not-resolved"]
    # the line alone is never an all-clear
    assert categories(curl[0] + "\n")[:1] == ["hostname_resolution"]


def test_resolving_something_other_than_a_host_is_not_a_host_name_fault():
    """'Failed to resolve' / 'could not resolve' names a resolution fault where a host, an address or a quoted name
    failed to resolve; Open MPI's UCX PML resolving a peer's endpoint from the modex resolves no name."""
    # real: MindSpore's FAQ (zh), Open MPI's UCX PML that never received a peer's worker address
    ucx = _in_repo_case("net-mindspore-faq-zh-openmpi-pml-ucx-worker-address-not-found-nic-differs")
    assert "Failed to resolve UCX endpoint" in ucx
    assert "hostname_resolution" not in categories(ucx)
    # (the CLI still says the start failed: the case's entry in tests/cases/gaps.py records it 'missed', unexplained)
    # real: the same FAQ, msrun's master host name that DNS cannot resolve, and the MOFED pod's repository host
    dns = _in_repo_case("net-mindspore-faq-zh-msrun-dns-resolution-failed-master-hostname")
    assert top(dns).category == "hostname_resolution"
    curl = _in_repo_case("node-netop830-mofed-pod-log-no-ofed-driver-cannot-resolve-cdn-redhat")
    assert top(curl).category == "hostname_resolution"
    for name, text in _healthy_texts().items():
        assert "hostname_resolution" not in categories(text), name


def test_nvidia_smi_that_cannot_reach_the_driver_is_the_driver_not_loaded():
    # real: a 2x RTX 3090 server's notes (lcp0578/cheat-sheets): nvidia-smi after installing only nvidia-utils
    text = _in_repo_case("node-lcp0578-notes-2x-rtx3090-nvidia-smi-cannot-communicate-utils-without-driver")
    d = top(text)
    assert d.id == "nvidia-driver-not-loaded" and d.category == "other:nvidia-driver-not-loaded", d
    assert d.severity == "fail" and "unexplained" not in categories(text), d
    # the message alone, as nvidia-smi prints it, is the same cause
    line = [ln for ln in text.splitlines() if "couldn't communicate" in ln]
    assert len(line) == 1 and categories(line[0] + "\n")[:1] == ["other:nvidia-driver-not-loaded"]
    # a module the kernel refused explains it (real: negativo17/nvidia-driver#97's modprobe line, beside it)
    refused = _in_repo_case("node-negativo97-modprobe-exec-format-error-version-magic-other-kernel")
    assert top(refused + "\n" + line[0] + "\n").id == "module-wrong-kernel"
    assert "other:nvidia-driver-not-loaded" not in categories(refused + "\n" + line[0] + "\n")
    # the same server's nvidia-smi once the driver is installed, and every other working run, raise nothing
    for name, healthy in _healthy_texts().items():
        assert "other:nvidia-driver-not-loaded" not in categories(healthy), name


# ---- a GPU the driver does not support, no GPU for the driver, a module the kernel refuses, a BAR held by the console


NOT_SUPPORTED = ("node-flatcar1283-vgpu-p40-6q-nvrm-gpu-not-supported-by-driver-release",
                 "node-talosext227-kmsg-x0a-nvrm-p40-vgpu-not-supported-by-535-release",
                 "node-proxmoxvgpuinstaller29-p100-nvrm-supported-through-580-legacy-driver-will-ignore")


def test_a_gpu_the_driver_does_not_support_is_named_and_explains_the_failed_probe():
    # real: the driver's message under dmesg with its continuation lines indented (Flatcar#1283), on one Talos line
    # with its breaks escaped as '\x0a' (siderolabs/extensions#227), and a maintainer's elided quote of the legacy
    # form ('supported through the NVIDIA 580.xx Legacy drivers', proxmox-vgpu-installer#29)
    for case in NOT_SUPPORTED:
        text = _in_repo_case(case)
        d = top(text)
        assert d.id == "gpu-not-supported-by-driver" and d.category == "other:gpu-not-supported-by-driver", (case, d)
        assert d.severity == "fail" and d.confidence == "high", (case, d)
        got = categories(text)
        # the probe failure, 'No NVIDIA GPU found' and insmod's 'No such device' after it are explained by it
        assert "gpu_lost_xid" not in got and "other:no-nvidia-gpu-found" not in got and "unexplained" not in got, (case, got)
    # a GPU that needs the open modules is still that cause (real: open-gpu-kernel-modules#1027)
    assert top(_in_repo_case("node-ogkm1027-journal-rtx5090-proprietary-module-requires-open-modules")).id == "open-kernel-modules"
    for name, text in _healthy_texts().items():
        assert "other:gpu-not-supported-by-driver" not in categories(text), name


def test_a_driver_that_found_no_gpu_is_named_unless_it_refused_one():
    # real: Bottlerocket's NVIDIA variant booted on an instance without GPU (bottlerocket-kernel-kit#321)
    text = _in_repo_case("node-bottlerocketkk321-m6i-no-gpu-nvrm-no-nvidia-gpu-found-tesla-modules-failed")
    d = top(text)
    assert d.id == "no-nvidia-gpu-found" and d.category == "other:no-nvidia-gpu-found" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    # the driver's line alone names it (the real line); beside a refused GPU it is that GPU's (above)
    assert top("[   28.104268] NVRM: No NVIDIA GPU found.\n").id == "no-nvidia-gpu-found"
    for name, text in _healthy_texts().items():
        assert "other:no-nvidia-gpu-found" not in categories(text), name


def test_glibc_aborting_on_a_corrupted_heap_is_named_and_healthy_runs_are_not():
    # real: nccl-tests on GB200 with NCCL 2.21.5 (NVIDIA/nccl#1611): glibc's check, then Open MPI's 'Signal: Aborted (6)'
    text = _in_repo_case("gpu-nccltrk1611-gb200-10-nodes-free-corrupted-unsorted-chunks-nccl2215")
    d = top(text)
    assert d.id == "heap-corruption" and d.category == "other:heap-corruption" and d.severity == "fail", d
    assert "free(): corrupted unsorted chunks" in d.summary, d
    assert "unexplained" not in [x.category for x in verdict(text) if x.tier < 2 and x.severity in ("fail", "warn")]
    # glibc's other checks, each the string malloc_printerr prints in malloc/malloc.c (glibc-2.39), and glibc before
    # 2.26's '*** Error in ...' form of them (written for this test from those strings)
    for line in ("double free or corruption (!prev)", "malloc(): unaligned tcache chunk detected",
                 "corrupted size vs. prev_size", "free(): double free detected in tcache 2",
                 "munmap_chunk(): invalid pointer",
                 "*** Error in `/usr/bin/python3': double free or corruption (fasttop): 0x00007f1c3c0008f0 ***"):
        assert top(line + "\nAborted (core dumped)\n").id == "heap-corruption", line
    # words of the allocator that report nothing broken are not it (written for this test)
    for line in ("MALLOC_CHECK_=3 set: heap consistency checks enabled", "free(): 0 chunks released to the OS"):
        assert "other:heap-corruption" not in categories(line + "\n"), line
    for name, healthy in _healthy_texts().items():
        assert "other:heap-corruption" not in categories(healthy), name


def test_a_python_module_missing_from_a_failure_line_is_named_and_healthy_runs_are_not():
    # real: Oracle's OCI HPC active health check, whose silent-data-corruption test could not import numpy
    text = _in_repo_case("node-cloudts-oci-hpc-active-healthcheck-sdc-test-crashed-no-module-numpy")
    d = top(text)
    assert d.id == "python-module-missing" and d.category == "other:python-module-missing", d
    assert d.severity == "fail" and "'numpy'" in d.summary, d
    # CPython's own words as a traceback ends on them (importlib's _ERR_MSG; written for this test)
    d = top("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import deepspeed\n"
            "ModuleNotFoundError: No module named 'deepspeed'\n")
    assert d.id == "python-module-missing" and "'deepspeed'" in d.summary, d
    # the words on a line that reports nothing failed are no evidence (written for this test)
    assert "other:python-module-missing" not in categories("INFO optional backend skipped: No module named 'apex'\n")
    for name, healthy in _healthy_texts().items():
        assert "other:python-module-missing" not in categories(healthy), name


def test_an_nvidia_module_the_kernel_refuses_to_load_is_named_and_other_refusals_are_not():
    # real: Bottlerocket under lockdown 'integrity' (bottlerocket#4218): modprobe's 'Operation not permitted'
    text = _in_repo_case("node-bottlerocket4218-lockdown-integrity-modprobe-nvidia-operation-not-permitted")
    d = top(text)
    assert d.id == "nvidia-module-load-refused" and d.category == "other:nvidia-module-load-refused", d
    assert "unexplained" not in categories(text)
    # the signature forms, in kmod's and Talos's words (written for this test from kmod's 'could not insert
    # '%s': %s' with strerror(EKEYREJECTED) and strerror(ENOKEY), and the controller's line of siderolabs/talos#7174)
    for line in ("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
                 "insmod: ERROR: could not insert module /lib/modules/6.8.0-45-generic/updates/dkms/nvidia.ko: Required key not available",
                 '"error": "error loading module \\x5c"nvidia\\x5c": load nvidia failed: key was rejected by service"'):
        assert top(line + "\n").id == "nvidia-module-load-refused", line
    # a module built for another kernel is that cause (real: negativo17#97); another module refused is not this
    # cause; an nvidia module refused for want of a device is not either (real: bottlerocket-kernel-kit#321)
    assert top(_in_repo_case("node-negativo97-modprobe-exec-format-error-version-magic-other-kernel")).id == "module-wrong-kernel"
    assert "other:nvidia-module-load-refused" not in categories("modprobe: ERROR: could not insert 'ipmi_si': Operation not permitted\n")
    assert "other:nvidia-module-load-refused" not in categories(
        _in_repo_case("node-bottlerocketkk321-m6i-no-gpu-nvrm-no-nvidia-gpu-found-tesla-modules-failed"))
    for name, text in _healthy_texts().items():
        assert "other:nvidia-module-load-refused" not in categories(text), name


def test_a_gpu_bar_vfio_cannot_reserve_is_the_host_console_and_a_typographic_apostrophe_is_read():
    # real: Harvester#6228, dmesg -T of vfio-pci with the reporter's typographic apostrophe ("can’t")
    text = _in_repo_case("node-harvester6228-vfio-pci-bar1-cant-reserve-host-efifb-console")
    d = top(text)
    assert d.id == "gpu-bar-held-by-console" and d.category == "other:host-framebuffer-holds-gpu-bar", d
    assert "unexplained" not in categories(text)
    # the kernel's own ASCII apostrophe (the real line with it), and the line alone is never an all-clear
    ascii_line = [ln for ln in text.splitlines() if "reserve" in ln][0].replace("’", "'")
    assert top(ascii_line + "\n").id == "gpu-bar-held-by-console"
    from nccldiag.knowledge import lexicon
    from nccldiag.nccl import grammar
    assert lexicon.shape_of(ascii_line).id == "pci-bar-cant-reserve"
    # the typographic apostrophe is an error word as the ASCII one is (written for this test)
    assert grammar.error_kind("mount: couldn’t find the device") == "error"
    assert grammar.error_kind("it can’t be") == grammar.error_kind("it can't be") == "error"
    # a BAR the firmware did not assign is not this cause (real: open-gpu-kernel-modules#510's 'no space for')
    assert "other:host-framebuffer-holds-gpu-bar" not in categories(_in_repo_case("node-ogkm510-6x4090-bar15-no-space-rebar-5-of-6"))
    for name, text in _healthy_texts().items():
        assert "other:host-framebuffer-holds-gpu-bar" not in categories(text), name


def test_the_node_s_kernel_captures_raise_none_of_the_driver_s_refusals():
    # real: the kernel-log captures of ../shared/fixtures/node (IOMMU, PCIe, AER, Xid, modules, Fabric Manager), healthy
    # and failing ones: none holds a GPU refused by the driver, a driver without GPU, a module refused or a BAR held
    real.require()
    mine = {"other:gpu-not-supported-by-driver", "other:no-nvidia-gpu-found", "other:nvidia-module-load-refused",
            "other:host-framebuffer-holds-gpu-bar"}
    seen = 0
    for kind in ("dmesg-iommu", "dmesg-pcie", "kernel-xid", "pcie-aer", "lsmod-modules", "fabric-manager", "link-flaps"):
        for name in real.names(real.NODE / kind):
            seen += 1
            assert not mine & set(categories(real.node_text(kind, name))), (kind, name)
    assert seen >= 20


def test_a_module_and_libraries_of_two_versions_are_told_apart_from_a_build_the_driver_cannot_run():
    # real: the kernel's API mismatch (NVIDIA/nvidia-docker#182), NVML's words (nobara-project#525)
    for case in ("node-nvidiadocker182-journal-nvrm-api-mismatch-after-driver-upgrade",
                 "node-nobara525-nvml-driver-library-mismatch-dkms-stale-module-source"):
        d = top(_in_repo_case(case))
        assert d.id == "cuda-driver-mismatch" and d.summary.startswith(
            "the NVIDIA kernel module and the driver's user-space libraries are of different versions"), (case, d)
    # real: CUDA's forward-compatibility error (NVIDIA/gpu-operator#277): a build the driver cannot run
    d = top(_in_repo_case("gpu-gpuoperator277-cuda-validator-forward-compat-non-supported-hw-driver-450"))
    assert d.id == "cuda-driver-mismatch" and d.summary.startswith("the CUDA the job was built for"), d


def test_an_nccl_before_2_17_given_a_2_17_config_is_an_nccl_older_than_the_build():
    # real: vLLM's torch error with NCCL 2.14.3 loaded (vllm-project/vllm#1726, a second NCCL removed)
    text = _in_repo_case("net-gaps62a-vllm1726-invalid-config-blocking-attribute-int-min-nccl-2-14-3-loaded")
    d = top(text)
    assert d.id == "nccl-older-than-build" and d.category == "version_mismatch" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    # real: the same error with NCCL 2.16.5 (axolotl-ai-cloud/axolotl#1158)
    line = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
            "invalid argument, NCCL version 2.16.5\nncclInvalidArgument: Invalid value for an argument.\n"
            "Last error:\nInvalid config blocking attribute value -2147483648\n")
    assert top(line).id == "nccl-older-than-build"
    # written for this test: a value a program set itself is not INT_MIN, and names no older library
    got = [d.id for d in verdict("Invalid config blocking attribute value 2\n") if d.severity in ("fail", "warn")]
    assert "nccl-older-than-build" not in got, got


def test_an_nccl_1_result_from_a_program_built_for_nccl_2_is_a_version_mismatch():
    # real: Horovod's troubleshooting page quotes TensorFlow's 'ncclAllReduce failed: invalid data type' (the conda
    # nccl package, an NCCL 1, loaded by a Horovod built for NCCL 2)
    text = _in_repo_case("net-horovod-docs-ncclallreduce-failed-invalid-data-type-wrong-nccl-linked")
    d = top(text)
    assert d.id == "nccl1-library-loaded" and d.category == "version_mismatch" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    # written for this test: NCCL 2's results in the same wording are a failed call, not an NCCL 1 library
    for line in ("ncclCommInitRank failed: unhandled system error", "ncclAllReduce failed: invalid argument"):
        got = categories(line + "\n")
        assert "version_mismatch" not in got, (line, got)
    for name, text in _healthy_texts().items():
        assert "version_mismatch" not in categories(text), name


def test_a_driver_container_that_cannot_install_its_build_packages_is_named():
    # real: the NVIDIA GPU Operator on OpenShift documentation's troubleshooting page (the operands in Init, the
    # driver pod crash-looping, and the driver container's FATAL)
    text = _in_repo_case("gpu-ocp-docs-driver-daemonset-crashloop-elfutils-rhel-entitlement")
    d = top(text)
    assert d.id == "driver-container-packages" and d.category == "other:driver-container-build-rhel-entitlement", d
    assert d.severity == "fail" and d.confidence == "high", d
    for name, text in _healthy_texts().items():
        assert "other:driver-container-build-rhel-entitlement" not in categories(text), name


def test_cloud_inits_duplicate_mac_is_named_with_its_two_interfaces():
    # real: Azure's known issues of its HPC and GPU VMs (cloud-init at boot, IPoIB ib0 beside eth1)
    text = _in_repo_case("node-azure-docs-cloud-init-duplicate-mac-eth1-ib0-ubuntu-hpc-vm")
    d = top(text)
    assert d.id == "cloud-init-duplicate-mac" and d.category == "other:cloud-init-duplicate-mac", d
    assert "eth1" in d.summary and "ib0" in d.summary, d.summary
    assert "unexplained" not in categories(text)
    for name, text in _healthy_texts().items():
        assert "other:cloud-init-duplicate-mac" not in categories(text), name


def test_xla_that_cannot_load_nccl_is_named_and_a_working_run_is_left_alone():
    # real: jax-ml/jax#18391, XLA's runtime error when jaxlib (installed with cuda12_local) found no NCCL to load
    text = _in_repo_case("node-jax18391-xla-all-reduce-unable-to-load-nccl-library-cuda12-local")
    d = top(text)
    assert d.id == "xla-nccl-library-not-loaded" and d.category == "other:nccl-library-missing", d
    assert d.severity == "fail" and d.confidence == "high", d
    assert "unexplained" not in categories(text)
    # the same words quoted as XLA's last NCCL warning beside an all-reduce that failed (the shape XLA prints with
    # jaxlib 0.4.23; written for this test from the stub's error string and XLA's runtime error above)
    quoted = ("INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:134: NCCL operation ncclGetUniqueId(&id) failed: "
              "Unable to load NCCL library. Multi-GPU collectives will not work.. Last NCCL warning(error) log entry "
              "(may be unrelated) 'Unable to load NCCL library. Multi-GPU collectives will not work.'.\n")
    assert top(quoted).id == "xla-nccl-library-not-loaded"
    # a working NCCL (the sanity check of vLLM's troubleshooting page on one node) is nothing of it
    assert "other:nccl-library-missing" not in categories(
        _in_repo_case("gpu-vllm18567-test-py-nccl-trace-4-gpu-bootstrap-ib-healthy"))
    for name, text in _healthy_texts().items():
        assert "other:nccl-library-missing" not in categories(text), name


def test_a_pytorch_without_nccl_is_named_before_the_store_warnings_beside_it():
    # real: hiyouga/LlamaFactory#4359, torchrun on Windows with several GPUs: each worker's RuntimeError from
    # _new_process_group_helper, beside c10d's retried store-connection warnings (system error 10049)
    text = _in_repo_case("node-gaps78b-llamafactory4359-windows-torchrun-2-gpus-distributed-package-without-nccl")
    d = top(text)
    assert d.id == "nccl-backend-not-built" and d.severity == "fail", d
    assert "rendezvous_unreachable" not in categories(text)
    assert "unexplained" not in categories(text)
    for name, text in _healthy_texts().items():
        assert "other:nccl-backend-unavailable-on-platform" not in categories(text), name


def test_the_deepspeed_launchers_ssh_check_is_named_and_pdsh_lines_are_not():
    # real: deepspeedai/DeepSpeed#4907, the launcher's traceback when its ssh check of the hostfile's first host fails
    text = _in_repo_case("node-deepspeed4907-launcher-ssh-check-passwordauthentication-exit-255")
    d = top(text)
    assert d.category == "other:launcher-ssh-unreachable" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    for name, text in _healthy_texts().items():
        assert "other:launcher-ssh-unreachable" not in categories(text), name


# ---- a program without the driver's NVML library; a warning's cause in a run that failed -------------------------


def test_a_program_that_cannot_load_nvml_is_named_with_the_driver_not_deployed_as_its_alternative():
    # real: k8s-device-plugin issue 23, the plugin's container on a Docker whose default runtime was not nvidia
    text = _in_repo_case("gpu-k8sdp23-device-plugin-failed-to-start-nvml-default-runtime-not-nvidia")
    d = top(text)
    assert d.id == "nvml-library-not-found" and d.category == "other:container-runtime-without-gpu-support", d
    assert d.severity == "fail" and "unexplained" not in categories(text), d
    # real: k8s-device-plugin issue 170, the same words from a plugin that started before the driver was deployed:
    # the lines are the same, the alternative names it
    d = top(_in_repo_case("gpu-k8sdp170-device-plugin-could-not-load-nvml-before-driver-deployed"))
    assert d.id == "nvml-library-not-found", d
    assert any(a.startswith("other:gpu-driver-container-not-ready") for a in d.alternatives), d.alternatives
    for name, text in _healthy_texts().items():
        assert "nvml-library-not-found" not in [x.id for x in verdict(text)], name


def _log_run(tmp_path, text: str):
    from nccldiag.diagnosis.model import fails_run
    from nccldiag.sessions import log as session

    path = tmp_path / "posted.txt"
    path.write_text(text, encoding="utf-8")
    diags = [d for d in session.run([str(path)], workers=1).diagnoses[0] if d.severity in ("fail", "warn")]
    return diags, any(fails_run(d) for d in diags)


def test_a_cause_named_by_a_warning_fails_where_the_log_says_the_run_failed(tmp_path):
    # real: a DataLoader's traceback ending in 'Connection refused' beside df's 64M /dev/shm row (lizhenyang's blog)
    text = _in_repo_case("node-lizhenyang-blog-dataloader-socket-error-111-dev-shm-64m")
    diags, failed = _log_run(tmp_path, text)
    assert diags[0].category == "shm_too_small" and diags[0].severity == "fail" and failed, diags[0]
    assert any("(the run failed)" in e.text and "Traceback" in e.text for e in diags[0].evidence), diags[0].evidence
    # the df row alone (the same paste's last line) says nothing of a run that failed: a warning, exit 0
    row = [line for line in text.splitlines() if line.startswith("shm ")]
    diags, failed = _log_run(tmp_path, "\n".join(row) + "\n")
    assert diags[0].category == "shm_too_small" and diags[0].severity == "warn" and not failed, diags[0]
    # real: corrected AER errors of a root port and nothing else: still a warning
    diags, failed = _log_run(tmp_path, _in_repo_case(
        "node-redhat-kb-rhel6-rhel7-pcie-bus-error-corrected-replay-timer-bad-tlp"))
    assert diags[0].severity == "warn" and not failed, diags[0]
    # real: a bare Xid 31 line (an MMU fault that killed the process's CUDA context) is an application's fault, a
    # warning; the line says something failed, so the run does not exit 0, as the same line unexplained would not
    for case in ("gpu-abhik-blog-journalctl-xid31-mmu-fault-pde-allocator-race",
                 "net-gaps65d-together-worklog-b200-find-stragglers-mlx5-0-port-down-two-nodes"):
        diags, failed = _log_run(tmp_path, _in_repo_case(case))
        assert diags[0].severity == "warn" and failed and diags[0].figures.get("failure_lines"), (case, diags[0])
    # healthy runs have no cause to make fail
    for name, healthy in _healthy_texts().items():
        assert _log_run(tmp_path, healthy) == ([], False), name


def test_cuda_finding_no_gpu_is_a_process_given_none_unless_the_driver_or_container_explains_it():
    # real: REPACSS's user guide, the error of a program run in a step that requested no GPU
    text = _in_repo_case("gpu-repacss-docs-srun-without-gres-no-cuda-capable-device-detected")
    d = top(text)
    assert d.id == "cuda-no-device-given" and d.category == "other:gpus-not-allocated-to-job", d
    assert "unexplained" not in categories(text), categories(text)
    # the same words from a container without its GPU option or a driver that lost its GPUs: said beside it
    assert any(a.startswith("other:container-runtime-without-gpu-support") for a in d.alternatives), d.alternatives
    assert any(a.startswith("gpu_lost_xid") for a in d.alternatives), d.alternatives
    for name, healthy in _healthy_texts().items():
        assert "other:gpus-not-allocated-to-job" not in categories(healthy), name


def test_a_barrier_whose_ranks_hash_its_name_differently_is_their_python_hash_seeds():
    # real: Fast-LLM's help page, the RuntimeError of safe_barrier when the ranks' PYTHONHASHSEED differ
    text = _in_repo_case("net-fastllm-docs-desync-detected-barrier-train-begin-pythonhashseed")
    d = top(text)
    assert d.id == "barrier-hash-desync" and d.category == "other:python-hash-seed-mismatch", d
    assert "unexplained" not in categories(text), categories(text)
    # PyTorch's own desync report (TORCH_NCCL_DESYNC_DEBUG) is another message, read by the hang's causes
    assert "barrier-hash-desync" not in [x.id for x in verdict(_in_repo_case(
        "gpu-mlengineering-desync-debug-watchdog-timeout-rank1-skipped-allreduce"))]
    for name, healthy in _healthy_texts().items():
        assert "other:python-hash-seed-mismatch" not in categories(healthy), name


def test_a_cloud_quota_that_stopped_the_nodes_is_named_and_healthy_runs_are_left_alone():
    # real: Google Cloud's Cluster Toolkit troubleshooting page, srun's revoked allocation and the controller's
    # resume.log with Compute Engine's quota error
    text = _in_repo_case("node-cloudts-gcp-toolkit-srun-prologslurmctld-failed-resume-log-quota-exceeded")
    d = top(text)
    assert d.id == "cloud-quota-exceeded" and d.category == "other:cloud-quota-exceeded", d
    assert d.severity == "fail" and d.confidence == "high", d
    assert "unexplained" not in categories(text)
    # the same error as gcloud prints it for a GPU quota (written for this test in the API's words)
    assert top("ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
               " - Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.\n").id == "cloud-quota-exceeded"
    for name, text in _healthy_texts().items():
        assert "other:cloud-quota-exceeded" not in categories(text), name


def test_a_zone_without_capacity_is_named_from_slurm_on_google_clouds_resume_log(tmp_path):
    # real: the Cluster Toolkit page's resume.log line of a bulk insert that could not create the nodes
    text = _in_repo_case("node-cloudts-gcp-toolkit-resume-log-bulkinsert-vm-min-count-not-reached-capacity")
    d = top(text)
    assert d.category == "other:cloud-capacity-unavailable" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    # another code of the same insert names no capacity: it stays a failure, said unexplained, never an all-clear
    other = tmp_path / "resume.log"
    other.write_text("resume.py WARNING: bulkInsert operation errors: RESOURCE_NOT_FOUND name=op-1 operationGroupId=7 "
                     "nodes=c-0\n", encoding="utf-8")
    assert [d.category for d in realcases.alarms_of([other])] == ["unexplained"]
    for name, text in _healthy_texts().items():
        assert "other:cloud-capacity-unavailable" not in categories(text), name


def test_azures_gpu_ecc_check_is_read_and_its_legend_and_a_clean_report_are_not(tmp_path):
    # real: Azure's check_gpu_ecc.py report on an ND96asr_v4 (row remap error, SRAM and DRAM uncorrectable errors)
    text = _in_repo_case("gpu-cloudts-azurehpc-check-gpu-ecc-row-remap-error-sram-uncorrectable-nd96asr-v4")
    d = top(text)
    assert d.category == "gpu_ecc_rowremap" and d.severity == "fail", d
    assert "unexplained" not in categories(text)
    # the same report without its warnings (a clean GPU: counters at 0, the legend) says nothing
    clean = tmp_path / "check_gpu_ecc.out"
    clean.write_text("\n".join(line for line in text.splitlines() if not line.startswith("Warning:")) + "\n",
                     encoding="utf-8")
    assert realcases.alarms_of([clean]) == []
    for name, text in _healthy_texts().items():
        assert "gpu_ecc_rowremap" not in categories(text), name


def test_ibstat_failing_on_a_device_is_read_by_its_errno_and_a_full_ibstat_is_quiet():
    # real: rdma-core pull request 239 (a port with no QSFP module: the rate read fails with EINVAL)
    text = _in_repo_case("net-node45-rdmacore239-ibstat-ibpanic-mlx5-1-invalid-argument-qsfp-unplugged")
    d = top(text)
    assert d.id == "ibstat-port-rate-unreadable" and d.category == "ib_port_down" and d.severity == "warn", d
    assert "mlx5_1" in d.summary and "unexplained" not in categories(text), categories(text)
    # the same line from the ibstat of rdma-core since 703b52c, which warns and goes on (written for this test)
    assert top(text.replace("ibpanic:", "ibwarn:")).id == "ibstat-port-rate-unreadable"
    # real: Azure's HPC image, ibstat stopping at the Accelerated Networking VF (the maintainer: not an IB device)
    text = _in_repo_case("node-node45-azhpcimages213-ibstat-ibpanic-mlx5-an0-not-an-ib-device")
    d = top(text)
    assert d.id == "ibstat-not-an-ib-device" and d.category == "other:ibstat-non-ib-device" and d.severity == "warn", d
    assert "ib_port_down" not in categories(text)
    # real working ibstat outputs: the in-repo working runs and the captures of ../shared (all ports read)
    for name, text in _healthy_texts().items():
        assert not {"ibstat-port-rate-unreadable", "ibstat-not-an-ib-device"} & {d.id for d in verdict(text)}, name
    if real.AVAILABLE:
        for name in ("gpud-h100-ib-ndr-all-active-space-indented.txt", "gpud-h100-ib-ndr-3-down-disabled.txt"):
            ids = {d.id for d in verdict(real.node_text("ibstat", name))}
            assert not {"ibstat-port-rate-unreadable", "ibstat-not-an-ib-device"} & ids, name


# ---- node health checks' failing lines, and lines of other nodes beside a cause ----------------------------------


def test_a_health_check_log_of_many_nodes_names_each_nodes_failure(tmp_path):
    """real: azurehpc-health-checks' distributed_nhc README, one 'host | ...' line per node. The Xid on mynode-066
    is a lost GPU; it says nothing of the other nodes' failures: NHC's check_hw_ib (a port not Active), Azure's
    check_gpu_ecc (SRAM uncorrectable) and its host-copy bandwidth test are each named, and the lines no cause
    explains (an NCCL IB-loopback bandwidth below its figure, a node with no results) are still said, on their
    nodes."""
    from pathlib import Path

    from nccldiag.diagnosis.model import fails_run
    from nccldiag.sessions import log as session
    from nccldiag.spec import runs

    def read_log(path):
        diagnoses = session.run([str(path)], 1, False, {}, runs.from_option(None, None)).diagnoses[0]
        return [d for d in diagnoses if d.severity in ("fail", "warn")]

    case = "gpu-cloudts-aznhc-health-log-xid119-gsp-rpc-timeout-low-busbw-ib-port-sram-ecc"
    path = Path(__file__).resolve().parents[1] / "cases" / case / "posted-health-log.txt"
    text = path.read_text(encoding="utf-8")
    ds = read_log(path)
    by = {d.id: d for d in ds}
    assert ds[0].id == "gpu-lost"
    assert {"health-check-ib-port-not-active", "health-check-gpu-memory-errors",
            "health-check-gpu-host-bandwidth-low"} <= set(by), list(by)
    assert by["health-check-ib-port-not-active"].category == "ib_port_down"
    assert "mlx5_ib7:1" in by["health-check-ib-port-not-active"].summary
    assert by["health-check-gpu-memory-errors"].category == "gpu_ecc_rowremap"
    assert "SRAM Uncorrectable" in by["health-check-gpu-memory-errors"].summary
    assert by["health-check-gpu-host-bandwidth-low"].category == "pcie_link_aer"
    rest = by["unexplained"]
    assert rest.severity == "warn" and fails_run(rest) and rest.nodes == ["mynode-079", "mynode-108"], rest
    quoted = " ".join(e.text for e in rest.evidence)
    assert "check_nccl_allreduce_ib_loopback" in quoted and "mynode-066" not in quoted
    # the same lines with the cause's node alone: its failure lines are its cause's
    alone = tmp_path / "one-node.txt"
    alone.write_text("\n".join(line for line in text.splitlines() if line.startswith("mynode-066 ")) + "\n")
    assert [d.id for d in read_log(alone)] == ["gpu-lost"]


def test_health_check_signatures_stay_quiet_on_working_runs():
    ids = {"health-check-ib-port-not-active", "health-check-gpu-memory-errors", "health-check-gpu-host-bandwidth-low"}
    for name, text in _healthy_texts().items():
        assert not ids & {d.id for d in verdict(text)}, name
    # the health log's healthy node
    assert not verdict("mynode-042 | Healthy\n") or all(d.severity == "info" for d in verdict("mynode-042 | Healthy\n"))


def test_a_line_names_its_host_by_a_prefix_or_a_label():
    from nccldiag.diagnosis.rules.unexplained import origin

    assert origin("mynode-273 | ERROR: nhc: Health check failed: check_hw_ib: x") == "mynode-273"
    assert origin("node12: [  3.1] NVRM: Xid (PCI:0000:3b:00): 79") == "node12"
    assert origin("Dec  1 10:00:01 gpu-3 kernel: mlx5_core: failed") == "gpu-3"
    # a table's cell and a word before a pipe are no host
    assert origin("| GPU 0 | failed |") is None
    assert origin("status | failed") is None


def test_an_mpis_ib_ports_on_different_subnets_are_a_routing_cause_and_a_working_node_raises_none():
    # real: HP-MPI 2.2.7's release note, two nodes cabled crosswise to two fabrics and MPI_Init's refusal
    text = _in_repo_case("net-gaps64c-hpmpi227-relnote-ibv-devinfo-ports-crossed-subnet-prefix-mpi-init")
    d = top(text)
    assert d.id == "ib-ports-different-subnets" and d.category == "ib_qp_timeout_routing", d
    assert "unexplained" not in categories(text)
    # the line holds no error word of its own: the reader keeps it, and alone it is the cause, never an all-clear
    from nccldiag.nccl import grammar
    line = [ln for ln in text.splitlines() if "subnet_prefix" in ln][0]
    assert grammar.error_kind(line) == "error"
    assert top(line + "\n").id == "ib-ports-different-subnets"
    # the same release note's working node (port 1 of every node on one subnet) and the other working runs
    assert verdict(_in_repo_case("net-gaps64c-hpmpi227-relnote-ibv-devinfo-two-ports-port1-same-subnet-healthy")) == []
    for name, text in _healthy_texts().items():
        assert "ib_qp_timeout_routing" not in categories(text), name


def test_a_work_completions_retry_status_in_words_is_a_completion_error_whatever_printed_it():
    # real: Solaris's hermon and mcxnex drivers in /var/log/messages (Oracle note 1614576.1)
    text = _in_repo_case("net-gaps64c-oracle-sure-1614576-solaris-hermon-mcxnex-cqe-transport-retry-counter-exceeded")
    d = top(text)
    assert d.category == "ib_completion_error", d
    assert "unexplained" not in categories(text)
    # ibv_wc_status_str()'s words printed by a program (the form of rdma-core's enum_strs.c, written for this test)
    assert top("rdma.cc:851 error on send wc: RNR retry counter exceeded\n").category == "ib_completion_error"
    for name, text in _healthy_texts().items():
        assert "ib_completion_error" not in categories(text), name


def test_a_gpu_put_in_cc_mode_explains_the_host_not_taking_it_and_alone_is_no_fault():
    # real: nvtrust#30, gpu_cc_tool.py switching an H100 to CC mode on the host, then nvidia-smi's Unknown Error
    text = _in_repo_case("node-gaps64a-nvtrust30-gh200-h100-cc-mode-on-bare-metal-host-nvidia-smi-device-handle-unknown-error")
    d = top(text)
    assert d.id == "gpu-cc-mode-on" and d.category == "other:gpu-cc-mode-outside-cvm" and d.severity == "fail", d
    assert "gpu_lost_xid" not in categories(text), categories(text)
    # the tool's lines without the failure: a GPU prepared for a confidential VM, no fault (the real block alone)
    assert categories(text.split("\n\n")[0]) == []
    # switching CC mode off, with the tool's own warnings (real: nvtrust#55), is a working run
    assert categories(_in_repo_case("node-gaps64a-nvtrust55-h100-sxm-gpu-admin-tools-set-cc-mode-off-reset-healthy")) == []
    # the driver's own failure inside a confidential VM is not this cause (real: nvtrust#64, no tool line)
    assert top(_in_repo_case("gpu-gaps64a-nvtrust64-h100-tdx-guest-fsp-boot-cmds-failed-vbios-without-cc")).id == \
        "gpu-init-failed"


def test_the_gsp_boot_failures_alone_are_a_gpu_the_driver_could_not_initialise():
    # real lines (nvtrust#64, open-gpu-kernel-modules#795 and #1230), each pasted without RmInitAdapter's line
    for line in ("[73750.262579] NVRM: kfspSendBootCommands_GH100: FSP boot cmds failed. RM cannot boot.",
                 " kernel: NVRM: gpuWaitForGfwBootComplete_TU102: failed to wait for GFW_BOOT: (progress 0x3)",
                 " kernel: NVRM: kgspWaitForGfwBootOk_TU102: failed to wait for GFW boot complete: 0x55 VBIOS version "
                 "95.04.69.40.36",
                 "[  127.849897] NVRM: GPU6 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP"):
        d = top(line + "\n")
        assert d.id == "gpu-init-failed" and d.category == "gpu_lost_xid", (line, d)


def test_a_cause_reads_a_failure_line_the_reader_kept_as_no_line_of_its_own():
    """A real lspci line of an HCA in flash recovery (a ServeTheHome forum post) behind a launcher's rank label: the
    paste reader does not take it for lspci's output, and the NCCL log reader keeps no line of it, yet the failure
    lexicon reads it; the cause reads it there, as it reads the same line pasted plain."""
    case = realcases.IN_REPO / "cf-gaps65b-sth32379-hp-mcx556a-allow-psid-change-burn-connectx5-flash-recovery"
    meta = json.loads((case / "case.json").read_text(encoding="utf-8"))
    text = "".join((case / f).read_text(encoding="utf-8") for f in meta["files"])
    line = next(ln for ln in text.splitlines() if "Flash Recovery]" in ln)
    labelled = "".join(f"[rank0]: {ln}\n" for ln in text.splitlines())
    import tempfile
    from pathlib import Path

    from nccldiag.sessions import log as session

    with tempfile.TemporaryDirectory(prefix="nccldiag-test-") as tmp:
        for name, given in (("plain.txt", text), ("labelled.txt", labelled)):
            p = Path(tmp) / name
            p.write_text(given, encoding="utf-8")
            got = [d for d in session.run([str(p)], workers=1).diagnoses[0] if d.severity in ("fail", "warn")]
            assert got and got[0].category == "hca_firmware", (name, [(d.category, d.summary[:80]) for d in got])
        assert any(line in e.text for e in got[0].evidence), [e.text for e in got[0].evidence]  # the labelled line


def test_mpich_ofi_poll_failed_with_eio_is_no_storage_failure():
    # real: MPICH's OFI netmod passing up the cxi provider's completion error, as posted in
    # https://github.com/ofiwg/libfabric/issues/10072 (LUMI/Adastra): a NIC or a peer endpoint, no file system
    line = ("MPIDI_OFI_handle_cq_error(1075): OFI poll failed (ofi_events.c:1077:MPIDI_OFI_handle_cq_error:"
            "Input/output error - PTLTE_NOT_FOUND)\n")
    assert "other:storage-io-error" not in categories(line)


def test_an_xla_coordination_service_heartbeat_timeout_is_a_peer_gone():
    # real: https://github.com/jax-ml/jax/issues/23599, as posted: the coordination service set a task that sent
    # no heartbeat to ERROR ('the remote task has failed, got preempted, or crashed unexpectedly')
    line = ("2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/"
            "coordination_service.cc:1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in coordination "
            "service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:0 heartbeat timeout. This indicates that the "
            "remote task has failed, got preempted, or crashed unexpectedly. Check the task logs for an earlier error "
            "to debug further. [type.googleapis.com/tensorflow.CoordinationServiceError='']\n")
    assert categories(line)[:1] == ["remote_peer_failure"]


def test_a_batch_systems_own_words_for_a_job_killed_at_its_time_or_memory_limit_name_the_limit():
    """PBS, LSF, HTCondor and Flux write into the job's output why they ended it; each line below is copied from the
    public thread named beside it. The time limit is other:job-time-limit (Slurm's own words stay
    other:slurm-time-limit), the memory limit other:host-oom; the healthy LSF report of a job that completed, and
    the healthy lines of the same threads, name nothing."""
    time_limit = {
        # https://github.com/marbl/canu/issues/1214
        "=>> PBS: job killed: walltime 86415 exceeded limit 86400\n": "batch-job-time-limit",
        # https://github.com/marbl/canu/issues/444
        "TERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with exit code 140.\n":
            "batch-job-time-limit",
        # https://github.com/flux-framework/flux-sched/issues/1084
        "1.029s: job.exception type=timeout severity=0 resource allocation expired\n": "batch-job-time-limit",
        # https://github.com/flux-framework/flux-core/issues/6713 (the job's eventlog)
        '[Mar16 08:11] exception type="timeout" severity=0 userid=1001 note="resource allocation expired"\n':
            "batch-job-time-limit",
    }
    memory_limit = {
        # https://github.com/wheaton5/souporcell/issues/20
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\nExited with exit code 143.\n":
            "batch-job-memory-limit",
        # https://github.com/galaxyproject/tpv-shared-database/issues/30
        "        Error from slot1_8@vgcnbwc-worker-xxxxxxx: Job has gone over memory limit of 16384 megabytes. "
        "Peak usage: 16328 megabytes.\n": "batch-job-memory-limit",
    }
    for text, cause in time_limit.items():
        for prefix in ("", "node7: "):
            d = top(prefix + text)
            assert (d.id, d.category, d.severity) == (cause, "other:job-time-limit", "fail"), (text, d)
    for text, cause in memory_limit.items():
        for prefix in ("", "node7: "):
            d = top(prefix + text)
            assert (d.id, d.category, d.severity) == (cause, "other:host-oom", "fail"), (text, d)
    # Slurm's time limit keeps its own category (the launchers table's slurm-time-limit)
    assert "other:slurm-time-limit" in categories(
        "slurmstepd: error: *** JOB 4242 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***\n")
    # https://github.com/ncbi/fcs/issues/81: LSF's report of a job that completed
    healthy = ("Successfully completed.\n\nResource usage summary:\n\n"
               "    CPU time :                                   510.08 sec.\n"
               "    Max Memory :                                 49 MB\n"
               "The output (if any) is above this job summary.\n")
    assert categories(healthy) == []


def test_torque_moab_grid_engine_and_flux_words_for_a_job_killed_at_a_limit_name_the_limit():
    """The batch systems beside PBS's and LSF's job reports: Torque's MOM mail, Moab's, Grid Engine's execution
    daemon and accounting, Flux's exception with the job's id, read as 'nccldiag log' reads them (the failure lexicon's
    lines included). Each line is copied from the thread named beside it."""
    named = {
        # https://github.com/nf-core/sarek/issues/541 (Torque's MOM, msg_momjobovermemlimit)
        "Job exceeded a memory resource limit (vmem, pvmem, etc.). Job was aborted\n":
            ("batch-job-memory-limit", "other:host-oom"),
        # https://github.com/CoBrALab/MAGeTbrain/issues/20 (Moab's mail)
        "MOAB_INFO:  job exceeded wallclock limit\n": ("batch-job-time-limit", "other:job-time-limit"),
        # https://github.com/syoung/s3lib notes/apps/sge: an execution daemon's messages file as an admin kept it
        # (son-of-gridengine/sge source/daemons/execd/msg_execd.h, MSG_EXECD_EXCEEDHWALLCLOCK_UU)
        "    05/04/2011 03:36:38|  main|master|W|job 48.1 exceeded hard wallclock time - initiate terminate method\n":
            ("batch-job-time-limit", "other:job-time-limit"),
        # https://github.com/dask/dask-jobqueue/issues/178 (PBS's mem form with 'job total')
        "dask-worker.o1838772:=>> PBS: job killed: mem job total 115343360 kb exceeded limit 115343360 kb\n":
            ("batch-job-memory-limit", "other:host-oom"),
        # https://github.com/veg/hyphy/issues/500
        "=>> PBS: job killed: vmem 3372163072 exceeded limit 2147483648\n": ("batch-job-memory-limit", "other:host-oom"),
    }
    for text, (cause, category) in named.items():
        for prefix in ("", "[rank3]: ", "node7: "):
            d = _log_alarms(prefix + text)[0]
            assert (d.id, d.category, d.severity) == (cause, category, "fail"), (prefix + text, d)
    # failure lines whose cause the line does not settle: Grid Engine's accounting of a job killed at h_rt, h_cpu or
    # h_vmem (StatFunGen/xqtl-protocol#156) or ended by a signal (hpc-gridware/clusterscheduler#66), Flux's exec
    # exception with the job's id (flux-framework/flux-core#7328), LSF's thread limit (cdanielmachado/carveme#34)
    for line in ("failed       37  : qmaster enforced h_rt, h_cpu, or h_vmem limit\n",
                 "failed: 100 : assumedly after job\n",
                 "0.038s: job.exception \u01928ezArJcP type=exec severity=0 foo.sh: task rank 1 on host system76-pc failed "
                 "and exit-on-error is set\n",
                 "TERM_THREADLIMIT: job killed after reaching LSF thread limit.\n"):
        for prefix in ("", "[rank3]: ", "node7: "):
            assert [d.severity for d in _log_alarms(prefix + line)][:1] == ["fail"], prefix + line
    # routine lines of the same threads and of jobs that ended well stay quiet
    for line in ("flux-job: fDW519iTCbZ started                                           00:00:05\n",  # flux-core#7310
                 "Thu Aug 20 15:21:06: Done successfully. The CPU time used is 0.0 seconds;\n",  # bytedance/volclava#92
                 "Thu Aug 20 15:18:04: Dispatched to <v-y-volclava-dev4>;\n",
                 "PBS Job Id: 26066307.gpc-sched-ib0\n",  # CoBrALab/MAGeTbrain#20
                 "ru_wallclock 18001s\n"):  # StatFunGen/xqtl-protocol#156
        assert _log_alarms(line) == [], line


def test_an_nccl_built_for_a_newer_minor_cuda_is_no_mismatch_and_a_newer_major_one_is():
    # real: NCCL 2.19.3+cuda12.3 on a driver of CUDA 12.2 (cudaDriverVersion 12020), a run that failed for its
    # topology file (NVIDIA/nccl#1240): CUDA's minor version compatibility runs the build, so no mismatch is named
    text = _in_repo_case("net-gaps78d-nccl1240-azure-spot-a100-vm-ncv4-graph-file-xml-import-dev-1-not-found")
    assert "+cuda12.3" in text and "cudaDriverVersion 12020" in text
    assert "cuda_driver_mismatch" not in categories(text)
    # the same log with its version line changed for this test to a build for CUDA 13.0: a newer major version
    assert "cuda_driver_mismatch" in categories(text.replace("+cuda12.3", "+cuda13.0"))


def test_a_bmcs_bus_memory_or_power_supply_event_names_its_cause_while_asserted():
    # real: the BMC's lines of tests/cases (a Supermicro BMC's PCI PERR, a health event log's uncorrectable ECC,
    # FreeIPMI's ipmi-sel of a failed supply) and ipmitool's 'sel elist' of a Critical Interrupt (ipmitool pull 340)
    for case, cause, category, severity in (
            ("node-gaps81c-dualedgetpu78-supermicro-h13ssl-bmc-pci-perr-bus85-asmedia-switch", "bmc-pci-bus-error",
             "pcie_link_aer", "fail"),
            ("node-gaps81c-ovrolwa117-gpu09-bmc-health-event-log-uncorrectable-ecc-p2-dimmf1", "bmc-uncorrectable-ecc",
             "other:machine-check", "fail"),
            ("node-gaps81c-checkipmi66-freeipmi-ipmi-sel-ps2-power-supply-failure-detected", "bmc-power-supply-failure",
             "other:power-supply-failure", "warn")):
        from pathlib import Path
        from tests import realcases
        d = realcases.alarms_of_case(Path(__file__).resolve().parents[1] / "cases" / case)[0]
        assert (d.id, d.category, d.severity) == (cause, category, severity), d
    d = top("   1 |  Pre-Init  |0000198492| Critical Interrupt #0xa1 | Bus Fatal Error | Asserted\n")
    assert d.id == "bmc-pci-bus-error" and "Bus Fatal Error" in d.summary, d
    # routine and ended events of real SELs stay quiet (sosreport/sos issue 2015, the HPE S2600 'Decoding SEL
    # Errors' page, Linuxfabrik/monitoring-plugins issue 982), and so does a healthy SEL's case
    assert categories("  30 | 11/15/2019 | 18:50:40 | Power Unit Pwr Unit Status | Power off/down | Asserted\n"
                      "  84 | 11/11/2015 | 09:07:31 | Memory Mmry ECC Sensor | Correctable ECC | Asserted\n") == []
    assert categories(_in_repo_case("node-gaps81c-linuxfabrik982-ipmitool-sel-elist-only-log-area-reset-cleared-"
                                    "healthy")) == []


def test_a_dell_servers_bus_error_and_post_link_speed_name_a_pcie_cause_and_a_memory_rate_warning_names_none():
    # real: the cases' iDRAC and POST lines (an R640's failed network daughter card, R760/XE8680 nodes whose link
    # trained at Gen1) and the Dell server quoted in Linux commit b112036535eda34460677ea883eaecc3a45a435d
    from pathlib import Path
    from tests import realcases
    for case, cause in (
            ("node-gaps83b-strickfaden-blog-r640-idrac-pcie-fatal-error-bus25-failed-ndc", "dell-pci-component-error"),
            ("node-gaps83b-dsxinfra6282-dell-r760-xe8680-uefi0080-pcie-link-gen1-expected-gen5",
             "dell-post-pcie-link-speed-not-optimal")):
        d = realcases.alarms_of_case(Path(__file__).resolve().parents[1] / "cases" / case)[0]
        assert (d.id, d.category, d.severity) == (cause, "pcie_link_aer", "fail"), d
    d = top("Event Message: A PCI parity error was detected on a component at bus 0 device 5 function 0.\n")
    assert d.id == "dell-pci-component-error" and "PCI parity error" in d.summary and "bus 0 device 5" in d.summary, d
    # a correctable memory error rate names no cause (the DIMM still corrects it), and a reset beside it is routine
    assert categories("2017-03-07 23:08:02 SYS1003 System CPU Resetting.\n"
                      "2017-03-07 23:08:02 MEM0702 Correctable memory error rate exceeded for DIMM_xx.\n") == []
    assert categories("2023-03-09 08:11:26 RAC0701 Requested system powerup.\n"
                      "Expected link speed is Gen5 but actual link speed is Gen1.\n") == []


def test_a_private_key_ssh_refuses_for_its_mode_is_named(tmp_path):
    # real: kubeflow/trainer#2716 (the worker's sshd, key mounted 0644) and kubeflow/mpi-operator#429 (the launcher's
    # ssh, key at 0640 under a pod fsGroup), read as 'nccldiag log' reads them: the failure lexicon keeps the lines
    for case in ("node-gaps81e-trainer2716-mpi-sshd-host-key-0644-unprotected-no-hostkeys-available",
                 "node-gaps81e-mpioperator429-launcher-ssh-private-key-0640-too-open-permission-denied"):
        diags, failed = _log_run(tmp_path, _in_repo_case(case))
        d = diags[0]
        assert d.id == "ssh-key-bad-permissions" and d.category == "other:ssh-key-permissions", d
        assert d.severity == "fail" and failed and "/root/.ssh/id_rsa" in d.summary, d
    for name, text in _healthy_texts().items():
        assert "ssh-key-bad-permissions" not in [x.id for x in verdict(text)], name


def test_a_parallel_file_system_client_refused_or_timing_out_names_its_stall_or_its_error():
    # real: CephFS's teuthology client, quoted in ceph/ceph#65325: the MDS refused the reconnect (the client was
    # evicted), so its requests in flight fail; the session closed alone is a warning nothing explains yet
    denied = "   Jul 20 08:14:39 teuthology kernel: [3677602.093378] ceph: mds0 reconnect denied\n"
    assert categories(denied) == ["other:storage-io-error"]
    closed = "   Jul 20 08:14:38 teuthology kernel: [3677601.123718] ceph: mds0 closed our session\n"
    from nccldiag.knowledge import lexicon
    assert categories(closed) == [] and lexicon.shape_of(closed).id == "ceph-mds-session-lost"
    # real: whamcloud/integrated-manager-for-lustre#329, a Lustre client's request to its MGS without a reply: a
    # stall on the file system, behind a dmesg stamp, a rank's prefix and a journal's
    rpc = ("Lustre: 1160:0:(client.c:2114:ptlrpc_expire_one_request()) @@@ Request sent has timed out for slow "
           "reply: [sent 1507651404/real 1507651404]  req@ffff88005ef8c000 x1580882981821232/t0(0) "
           "o250->MGC10.14.81.0@tcp@10.14.81.0@tcp:26/25 lens 520/544 e 0 to 1 dl 1507651425 ref 1 fl "
           "Rpc:XN/0/ffffffff rc 0/-1\n")
    for prefix in ("[ 3963.751497] ", "[rank3]: ", "Dec 01 12:00:00 node7 kernel: "):
        assert categories(prefix + rpc) == ["io_hang"], prefix
    # its repeat count alone says nothing (real: jade-hpc-gpu/jade-hpc-gpu.github.io#14)
    skipped = ("[Mon Oct 16 09:50:06 2017] Lustre: 2449:0:(client.c:2141:ptlrpc_expire_one_request()) Skipped 24 "
               "previous similar messages\n")
    assert categories(skipped) == []


def _log_alarms(text: str) -> List:
    """The fail/warn diagnoses of 'nccldiag log' given ``text``: the log reader's, the failure lexicon's and the
    pasted node outputs' inputs."""
    from nccldiag.knowledge import lexicon
    inp = Inputs(logs=nccllog.parse_logs([("job.log", text)]), failure_lines=lexicon.lines_in(text, "job.log"),
                 pasted=pasted.scan(text, "job.log"))
    return [d for d in diagnose(inp) if d.severity in ("fail", "warn")]


def test_nvidia_smis_older_refused_reset_and_a_pending_mig_change_name_the_client_holding_the_gpu():
    # real lines: NVIDIA/gpu-operator#118 (nvidia-persistenced held the GPU; the reset passed once it was stopped)
    for line in ("GPU 00000000:C1:00.0 is currently in use by another process.",
                 "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
                 "application, graphics application such as an X server, or a monitoring application such as another "
                 "instance of nvidia-smi). Please first kill all processes using this device and all compute "
                 "applications running in the system.",
                 "Warning: MIG mode is in pending disable state for GPU 00000000:C1:00.0:In use by another client"):
        d = _log_alarms(line + "\n")[0]
        assert d.id == "gpu-reset-blocked" and d.severity == "fail", (line, d)
    assert _log_alarms("GPU 00000000:C1:00.0 was successfully reset.\nAll done.\n") == []


def test_dcgm_memory_errors_and_thermal_violation_are_named():
    # real: NVIDIA/NVSentinel#973, DCGM_FR_UNCONTAINED_ERROR in the health monitor's node condition
    d = _log_alarms("ErrorCode:DCGM_FR_UNCONTAINED_ERROR GPU:0 PCI:0000:16:00.0 GPU_UUID:GPU-65e4956a-8db1-af7f-47f8-b355e3b7bf07 "
            "GPU had an uncontained error (XID 95) Drain the GPU and reset it or reboot the node. Recommended "
            "Action=RESTART_VM;\n")[0]
    assert d.id == "dcgm-gpu-memory-errors" and d.category == "gpu_ecc_rowremap" and d.severity == "fail", d
    # a form of dcgm_errors.h at 72fa3feaa67d716a75323a8f47c34ff3ee73f824, DCGM_FR_PENDING_ROW_REMAP_MSG
    assert _log_alarms("GPU 1 had memory errors and row remappings are pending\n")[0].category == "gpu_ecc_rowremap"
    # real: NVIDIA/DCGM#270, the host engine's health watch
    d = _log_alarms("ERROR [1514002:1514004] [[Health]] Detected a WARNING in health system Thermal: 'Detected clocks event due "
            "to thermal violation in GPU 2. Verify that the cooling on this machine is functional, including external, "
            "thermal material interface, fans, and any other components.\n")[0]
    assert d.id == "dcgm-thermal-violation" and d.category == "other:gpu-power-thermal" and d.severity == "warn", d
    for name, text in _healthy_texts().items():
        cats = categories(text)
        assert "other:gpu-power-thermal" not in cats and "other:gpu-reset-blocked" not in cats, name


def test_the_subnet_managers_errors_and_a_management_query_without_answer_are_failure_lines_and_routine_lines_not(
        tmp_path):
    # real: linux-rdma/opensm#37, OpenSM failing to bind its MAD agents after a kernel upgrade (its log file); each
    # error line alone, behind a rank's prefix, a node's and a journal's, is an unexplained warning
    errors = ["  165028 [F0D43740] 0x01 -> osm_vendor_bind: ERR 5426: Unable to register class 129 version 1",
              "  165162 [F0D43740] 0x01 -> osm_sm_bind: ERR 2E10: SM MAD Controller bind failed (IB_ERROR)",
              "  165217 [F0D43740] 0x01 -> osm_sa_mad_ctrl_unbind: ERR 1A11: No previous bind"]
    # real: infiniband-radar/infiniband-radar-daemon#6, libibmad's query that got no answer
    errors.append("ibwarn: [1] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)")
    # real: NVIDIA/caffe#590, 'ibv_devinfo -l' in a container that sees no device
    errors.append("0 HCAs found:")
    for line in errors:
        for prefix in ("", "[rank3]: ", "node7: ", "Dec 01 12:00:00 node7 opensm[1234]: "):
            diags, _ = _log_run(tmp_path, prefix + line.lstrip() + "\n")
            assert diags and diags[0].category == "unexplained", (prefix, line, diags)
    # NVIDIA/caffe#590, two of its warnings and its last line: libibverbs had no provider for any device, and
    # 'ibv_devinfo -l' listed none
    caffe = ("libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs1\n"
             "libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0\n"
             "0 HCAs found:\n")
    assert _log_run(tmp_path, caffe)[0][0].id == "ibverbs-provider-missing"
    # the same log's routine lines, and libibumad's debug lines (linux-rdma/rdma-core#847), stay quiet
    for line in ("  138670 [F0D43740] 0x03 -> OpenSM 3.3.23",
                 "  140628 [F0D43740] 0x80 -> Entering DISCOVERING state",
                 "  140711 [F0D43740] 0x02 -> osm_vendor_bind: Mgmt class 0x81 binding to port GUID 0x9c63c00300033240",
                 "  165630 [F0D43740] 0x80 -> Exiting SM",
                 "ibwarn: [168997] umad_register: fd 3 registered to use agent 0 qp 0"):
        assert _log_run(tmp_path, line + "\n")[0] == [], line


def test_open_mpis_cuda_shared_memory_and_transport_failures_are_failure_lines_and_its_routine_notices_not(tmp_path):
    # real lines of public threads, each alone, behind a rank's prefix, a node's, Open MPI's --tag-output label and
    # its '[host:pid] ' label: a CUDA driver call Open MPI's CUDA support says failed (users 2013/03/21521,
    # STREAmS-CFD/STREAmS-2#12) or the count of the ranks that printed it (OPM/LBPM#34), a system call of its
    # shared-memory set-up (open-mpi/ompi#7308), the OFI MTL's abort (OPM/LBPM#48), a PML that cannot be selected
    # (open-mpi/ompi#11669), the tcp BTL's failed handshake (open-mpi/ompi#4131, #12779) and the count of
    # MPI_ERRORS_ARE_FATAL's help text (open-mpi/ompi#6201): each is an unexplained failure, never an all-clear
    errors = ["The call to cuIpcOpenMemHandle failed. This is an unrecoverable error",
              "The call to cuMemHostRegister(0x77e643e00008, 134217728, 0) failed.",
              "[gpu03:11920] 126 more processes have sent help message help-mpi-common-cuda.txt / cuIpcGetMemHandle failed",
              "A system call failed during shared memory initialization that should",
              "> *** The Open MPI OFI MTL is aborting the MPI job (via exit(3)).",
              ">  mtl_ofi.h:101: Error returned from fi_cq_readerr: Resource temporarily unavailable(-11).",
              "[cn557:1724353] PML ucx cannot be selected",
              "No components were able to be opened in the pml framework.",
              "WARNING: Open MPI failed to handshake with a connecting peer MPI",
              "[rhc002][[16379,1],2][btl_tcp.c:556:mca_btl_tcp_recv_blocking] remote peer unexpectedly closed connection "
              "while I was waiting for blocking message",
              "[cu25][[13139,1],1][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected "
              "process identifier [[13139,1],4]",
              "[HOST] 1 more process has sent help message help-mpi-errors.txt / mpi_errors_are_fatal"]
    prefixes = ("", "[rank3]: ", "node7: ", "[1,0]<stderr>:", "[node7:12345] ")
    for line in errors:
        for prefix in prefixes:
            diags, _ = _log_run(tmp_path, prefix + line + "\n")
            assert diags and diags[0].category == "unexplained", (prefix, line, diags)
    # Open MPI 1.2's wording of the openib BTL's locked-memory help text (users 2007/11/4443): its second line names
    # the memlock limit
    for prefix in prefixes:
        diags, _ = _log_run(tmp_path, prefix + "locked memory.  This typically can indicate that the memlock limits\n")
        assert diags and diags[0].category == "memlock_limit", (prefix, diags)
    # what working runs print stay quiet: the openib BTL's notices under UCX and their count (open-mpi/ompi#10693,
    # whose application finished), its device-parameters warning (openucx/ucx#8511, a run that worked with UCX),
    # the UCX PML's verbose lines (open-mpi/ompi#6517), the VM_UNMAP warning (openucx/ucx#3686), the help-message
    # aggregation notice (open-mpi/ompi#6201), the count of the tcp BTL's dropped inbound connection
    # (jbornschein/mpi4py-examples#11) and the OFI MTL's fi_domain warning, which a working single-node step on
    # LUMI prints (open-mpi/ompi#12038; tests/cases/net-gaps62d-lumi-easybuild-openmpi4-single-node-fi-domain-
    # warning-healthy)
    for line in ("By default, for Open MPI 4.0 and later, infiniband ports on a device",
                 "WARNING: There was an error initializing an OpenFabrics device.",
                 "[lxbk1039:106838] 11 more processes have sent help message help-mpi-btl-openib.txt / ib port not selected",
                 "WARNING: No preset parameters were found for the device that Open MPI",
                 "[c36a-s39.ufhpc:252551] common_ucx.c:108 using OPAL memory hooks as external events",
                 "[c36a-s39.ufhpc:252551] pml_ucx.c:134 mca_pml_ucx_open",
                 "[nicpa-dtu:21644] ../../../../../opal/mca/common/ucx/common_ucx.c:146  Warning: UCX is unable to handle "
                 "VM_UNMAP event. This may cause performance degradation or data corruption. Pls try adding --mca "
                 "opal_common_ucx_opal_mem_hooks 1 to mpirun/oshrun command line to resolve this issue.",
                 '[HOST] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages',
                 "[pi01:28731] 3 more processes have sent help message help-mpi-btl-tcp.txt / dropped inbound connection",
                 "Open MPI failed an OFI Libfabric library call (fi_domain).  This is highly"):
        assert _log_run(tmp_path, line + "\n")[0] == [], line


def test_cuda_errors_in_the_forms_of_pytorchs_thc_its_device_count_and_fastertransformer_are_read_by_the_cuda_table(
        tmp_path):
    # real lines, each alone, behind a rank's prefix, a node's, and after torchrun's report of the failed worker: the
    # CUDA error's text names the row of knowledge/cuda.toml, whatever form printed it
    torchrun = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4321) of "
                "binary: /usr/bin/python3\n")
    named = [
        # NVIDIA/apex#124 and pytorch/pytorch#10853: PyTorch's THC, 'THCudaCheck FAIL file=%s line=%i error=%i : %s'
        ("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCTensorCopy.cu line=84 error=74 : misaligned address",
         "other:gpu-application-fault"),
        ("THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1532582123400/work/aten/src/THC/generic/THCStorage.cpp "
         "line=36 error=6 : the launch timed out and was terminated", "other:gpu-application-fault"),
        # pytorch/pytorch#2567: THC's exception, 'cuda runtime error (%d) : %s'
        ("RuntimeError: cuda runtime error (4) : unspecified launch failure at "
         "/home/ubuntu/pytorch/torch/lib/THC/THCTensorCopy.cu:85", "other:gpu-application-fault"),
        # apecloud/ApeRAG#120: c10's device count, '... that might have already set an error? Error <value>: <text>'
        ("/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:107: UserWarning: CUDA initialization: "
         "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() "
         "that might have already set an error? Error 805: MPS client failed to connect to the MPS control daemon or "
         "the MPS server (Triggered internally at /opt/conda/conda-bld/pytorch_1682343967769/work/c10/cuda/"
         "CUDAFunctions.cpp:109.)", "other:mps-failure"),
        # NVIDIA/FasterTransformer#592: '[FT][ERROR] CUDA runtime error: <text> <file>:<line>'
        ("  what():  [FT][ERROR] CUDA runtime error: operation not supported "
         "/workspace/FasterTransformer/src/fastertransformer/utils/allocator.h:160 ", "other:cuda-operation-refused"),
        # xhw205/GPLinker_torch#14 and taishan1994/qlora-chinese-LLM#3: a kernel's failed assert, per thread
        ("/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:115: operator(): block: [0,0,0], thread: [1,0,0] "
         "Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.",
         "other:gpu-application-fault"),
        ("../aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [336,0,0], thread: [0,0,0] "
         "Assertion `srcIndex < srcSelectDimSize` failed.", "other:gpu-application-fault"),
        # the forms that were read before stay read: zai-org/ChatGLM3#681, mlcommons/inference#54
        ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu_ecc_rowremap"),
        ("THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=34 error=35 : CUDA driver version is "
         "insufficient for CUDA runtime version", "cuda_driver_mismatch"),
        # OdingdongO/pytorch_classification#1, wentaozhu/DeepLung#1: no GPU given to the process, in THC's forms as in
        # c10's
        ("THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1524584710464/work/aten/src/THC/THCGeneral.cpp line=70 "
         "error=38 : no CUDA-capable device is detected", "other:gpus-not-allocated-to-job"),
        ("RuntimeError: cuda runtime error (38) : no CUDA-capable device is detected at torch/csrc/cuda/Module.cpp:81",
         "other:gpus-not-allocated-to-job"),
    ]
    for line, category in named:
        for text in (line, "[rank3]: " + line.lstrip(), "node7: " + line.lstrip(), torchrun + line):
            diags, _ = _log_run(tmp_path, text + "\n")
            assert diags and diags[0].category == category, (text, diags)
    # the lines PyTorch prints after every CUDA error, and a traceback's frame, say nothing of their own
    for line in ("CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below "
                 "might be incorrect.",
                 "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                 "  return torch._C._cuda_getDeviceCount() > 0"):
        assert _log_run(tmp_path, line + "\n")[0] == [], line


# ---- AMD GPUs: the amdgpu driver's RAS ------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # ROCm/legacy-rocm-build#1886 (an MI50's dmesg, as posted) and #1386 (the support team's quote of it)
    "[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) "
    "detected!",
    "[ 1358.996458] amdgpu 0000:83:00.0: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
])
def test_an_amd_gpus_uncorrectable_ras_error_names_the_gpus_hardware_behind_any_prefix(line):
    for prefix in ("", "[rank3]: ", "node7: ", "Dec 07 10:00:01 gpu01 kernel: "):
        assert top(prefix + line + "\n").category == "other:amd-gpu-uncorrectable-hardware-error", prefix


def test_an_amd_gpus_ecc_notices_and_its_recovered_reset_name_no_hardware_error():
    # ROCm/legacy-rocm-build#1886: the lines of the same boot that every MI50 with ECC prints; pop-os/cosmic-comp#2626
    text = ("[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: MEM ECC is active.\n"
            "[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: SRAM ECC is active.\n"
            "Jul 24 12:26:20 macross kernel: amdgpu 0000:08:00.0: amdgpu: GPU reset(2) succeeded!\n")
    assert "other:amd-gpu-uncorrectable-hardware-error" not in categories(text)
    assert categories(text) == []


@pytest.mark.parametrize("line,category", [
    # geerlingguy/internet-pi#604: Ansible's UNREACHABLE! result carrying ssh's refused login
    ('fatal: [117.250.157.210]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: '
     'nib@117.250.157.210: Permission denied (publickey,password).", "unreachable": true}',
     "other:launcher-ssh-login-refused"),
    # rdbreak/rhcsa7env#8: the YAML callback's msg carrying OpenSSH's failed connect
    ('    Data could not be sent to remote host "192.168.55.4". Make sure this host can be reached over ssh: ssh: '
     'connect to host 192.168.55.4 port 22: No route to host', "other:launcher-ssh-unreachable"),
])
def test_ssh_failing_to_reach_a_node_is_the_launchers_ssh_not_a_firewall_between_ranks(line, category):
    for prefix in ("", "[rank3]: ", "node7: "):
        text = prefix + line + "\n"
        assert top(text).category == category, prefix
        assert "firewall_ports" not in categories(text) and "socket_ifname_wrong" not in categories(text)


# ---- a training job's surroundings: the Hub, W&B, file descriptors, checkpoints (sweep34) -----------------------

_SURROUNDINGS = [
    # real: facebookresearch/bitsandbytes#34 (transformers' cached_file on a node with no way to the Hub)
    ("OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files "
     "and it looks like decapoda-research/llama-7b-hf is not the path to a directory containing a file named "
     "config.json.", "other:hub-unreachable-no-cached-copy"),
    # real: yuruotong1/autoMate#104 (huggingface_hub's _raise_on_head_call_error)
    ("huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub and "
     "we cannot find the requested files in the local cache. Please check your connection and try again or make sure "
     "your Internet connection is on.", "other:hub-unreachable-no-cached-copy"),
    # real: huggingface/kernels#553 (HF_HUB_OFFLINE=1 and a call to the Hub)
    ("huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/kernels-community/"
     "finegrained-fp8/refs: offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment "
     "variable.", "other:hub-unreachable-no-cached-copy"),
    # real: tomaarsen/SpanMarkerNER#52 (the Hub's name not resolved from the node: the way out, no peer's name)
    ("MaxRetryError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: "
     "/bert-base-uncased/resolve/main/config.json (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection "
     "object at 0x783edf828070>: Failed to establish a new connection: [Errno -3] Temporary failure in name "
     "resolution'))", "other:hub-unreachable-no-cached-copy"),
    # real: wandb/wandb#10044 and wandb/wandb#6038 (behind Ray's prefix)
    ("wandb: ERROR Run initialization has timed out after 90.0 sec. Please try increasing the timeout with the "
     "`init_timeout` setting: `wandb.init(settings=wandb.Settings(init_timeout=120))`.", "other:wandb-unreachable"),
    ("(train_function_wandb pid=48305) wandb: Network error (ConnectionError), entering retry loop.",
     "other:wandb-unreachable"),
    # real: zju3dv/NeuralRecon#91 (torch/utils/data/dataloader.py) and ML-GSAI/SMDM#3 (aten/src/ATen/MapAllocator.cpp)
    ("RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase the "
     "limit using `ulimit -n` in the shell or change the sharing strategy by calling "
     "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code",
     "other:open-files-limit"),
    ("RuntimeError: unable to open shared memory object </torch_710863_755204907_419> in read-write mode: Too many "
     "open files (24)", "other:open-files-limit"),
    # real: lyogavin/airllm#137, ShineChen1024/MagicClothing#11, BolinLai/GLC#4, THU-MIG/yolov10#154
    ("safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
     "other:checkpoint-file-incomplete"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
     "other:checkpoint-file-incomplete"),
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
     "other:checkpoint-file-incomplete"),
    ("PytorchStreamReader failed reading zip archive: failed finding central directory",
     "other:checkpoint-file-incomplete"),
]


@pytest.mark.parametrize("line,category", _SURROUNDINGS)
def test_a_jobs_surroundings_failing_are_named_behind_any_prefix(line, category):
    for prefix in ("", "[rank3]: ", "node7: "):
        text = prefix + line + "\n"
        assert top(text).category == category, prefix
        assert "hostname_resolution" not in categories(text), prefix


def test_wandb_retrying_warns_and_its_init_giving_up_fails():
    # real: wandb/wandb#2719 (the retry loop, the run not yet stopped) and wandb/wandb#10044 (wandb.init gave up)
    assert top("wandb: Network error (ConnectTimeout), entering retry loop.\n").severity == "warn"
    assert top("CommError: Run initialization has timed out after 90.0 sec. \n").severity == "fail"


@pytest.mark.parametrize("line", [
    # real, the routine lines of working runs beside those failures: huggingface_hub's retry notice
    # (AUTOMATIC1111/stable-diffusion-webui#17165), wandb's start (wandb/wandb#6038, verl-project/verl#1348,
    # momentum-robotics-lab/deformgs#7), the Hub lock a rank waits on while another downloads
    # (huggingface/huggingface_hub#2543), a shard loader's progress (SCIR-HI/Huatuo-Llama-Med-Chinese#89), a download
    # (lllyasviel/Fooocus#3522)
    "Retrying in 1s [Retry 1/5].",
    "(train_function_wandb pid=48305) wandb: W&B API key is configured. Use `wandb login --relogin` to force relogin",
    "(train_function_wandb pid=48305) wandb: - Waiting for wandb.init()...",
    "(TaskRunner pid=1330721) wandb: Syncing run gsm8k",
    "(TaskRunner pid=1330721) wandb: Run `wandb offline` to turn off syncing.",
    "wandb: Using wandb-core as the SDK backend.  Please refer to https://wandb.me/wandb-core for more information.",
    "still waiting to acquire lock on /home/austin/.cache/huggingface/hub/.locks/models--NousResearch--Meta-Llama-3.1-"
    "8B-Instruct/fc1cdddd6bfa91128d6e94ee73d0ce62bfcdb7af29e978ddcab30c66ae9ea7fa.lock",
    "Loading checkpoint shards:  14%|█▎        | 11/81 [00:10<01:05,  1.06it/s]",
    'Downloading: "https://huggingface.co/lllyasviel/misc/resolve/main/xlvaeapp.pth" to '
    "/content/data/models/vae_approx/xlvaeapp.pth",
])
def test_the_routine_lines_of_a_jobs_surroundings_stay_quiet(line):
    for prefix in ("", "[rank3]: ", "node7: "):
        assert categories(prefix + line + "\n") == [], prefix


# ---- the kernel's network tables at cluster scale (sweep36) ------------------------------------------------

@pytest.mark.parametrize("line,table", [
    # real: rtr7/router7#31 (a dmesg stamp), Requiem4Eternity/Appstream#102 (a Kubernetes node's journal),
    # QubesOS/qubes-issues#355 (an older kernel's wording)
    ("[843041.359054] neighbour: arp_cache: neighbor table overflow!", "neighbour (ARP/NDP) table"),
    ("Jun 11 11:04:35 k8snode228 kernel: neighbour: arp_cache: neighbor table overflow!", "neighbour (ARP/NDP) table"),
    ("[250066.491572](250066.489724]) ipv4: Neighbour table overflow.", "neighbour (ARP/NDP) table"),
    # real: canonical/hotsos#101, kubernetes/kubernetes#71261
    ("e.g. kernel: [1694413.644132] nf_conntrack: nf_conntrack: table full, dropping packet", "conntrack"),
    ("[Tue Nov 20 22:30:22 2018] nf_conntrack: table full, dropping packet", "conntrack"),
    # real: tempesta-tech/tempesta#1763, shadowsocks/shadowsocks-rust#376, coolsnowwolf/lede#5072
    ("[  179.636034] TCP: out of memory -- consider tuning tcp_mem", "TCP memory"),
    ("[827341.246171] TCP: too many orphaned sockets", "orphaned TCP sockets"),
    ("kern.info kernel: [31617.809376] TCP: request_sock_TCP: Possible SYN flooding on port 5000. Sending cookies.  "
     "Check SNMP counters.", "SYN backlog"),
])
def test_a_kernel_network_table_full_is_named_with_its_table_behind_any_prefix(tmp_path, line, table):
    # read as 'nccldiag log' reads a paste: the failure lexicon keeps the lines the log reader does not
    for prefix in ("", "[rank3]: ", "node7: ", "[12345.678901] ", "Jan 01 00:00:00 node7 kernel: "):
        diags, failed = _log_run(tmp_path, prefix + line + "\n")
        d = [x for x in diags if x.severity in ("fail", "warn")][0]
        assert (d.id, d.category, d.severity) == ("kernel-network-table-full", "other:kernel-network-table-full",
                                                  "warn"), (prefix, d)
        assert table in d.summary, d.summary
        assert "gpu_out_of_memory" not in [x.category for x in diags], prefix


@pytest.mark.parametrize("line", [
    # real routine lines beside them: coolsnowwolf/lede#6427, Requiem4Eternity/Appstream#102, kubernetes/kubernetes#71261,
    # systemd/systemd#7380, NethServer/dev#5062
    "Wed Feb 24 00:35:26 2021 kern.warn kernel: [16305.802373] net_ratelimit: 241 callbacks suppressed",
    "Jun 11 11:04:36 k8snode228 systemd-networkd[1883]: veth53cd54f: Gained IPv6LL",
    "I1120 15:18:19.757786   26448 conntrack.go:52] Setting nf_conntrack_max to 786432",
    "Oct 23 16:45:25 san-jose systemd-networkd[1217]: enp129s0f0: Gained carrier",
    "Jul 17 04:19:28 intranet chronyd[17789]: Selected source 81.19.96.148",
])
def test_the_routine_lines_around_the_kernels_network_tables_stay_quiet(line):
    for prefix in ("", "[rank3]: ", "node7: "):
        assert categories(prefix + line + "\n") == [], prefix


def test_no_healthy_text_reads_as_a_kernel_network_table_full():
    for name, text in _healthy_texts().items():
        assert "kernel-network-table-full" not in [d.id for d in verdict(text)], name


# ---- memory exhaustion as each framework words it on a GPU node (sweep38) ---------------------------------------

_MEMORY_EXHAUSTED = [
    # real: google-deepmind/alphafold#1023, sokrypton/ColabFold#65 (XLA's TfAllocatorAdapter)
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 "
     "bytes.", "gpu_out_of_memory"),
    ("RuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 14285187448 bytes.", "gpu_out_of_memory"),
    # real: keras-team/keras#9643 (TensorFlow's OpKernelContext::allocate_tensor on the GPU's BFC allocator)
    ("ResourceExhaustedError: OOM when allocating tensor with shape[128,128,109,109] and type float on "
     "/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc", "gpu_out_of_memory"),
    # real: knaw-huc/loghi#55 (the BFC allocator's dump when no chunk fits)
    ("9:07:50.044545: W external/local_xla/xla/tsl/framework/bfc_allocator.cc:501] Allocator (GPU_0_bfc) ran out of "
     "memory trying to allocate 34.10MiB (rounded to 35758080)requested by op StatefulPartitionedCall/model_new14_1/"
     "batch_normalization_36_1/moments/SquaredDifference", "gpu_out_of_memory"),
    # real: CharlesShang/FastMaskRCNN#129, QwenLM/Qwen3#873, microsoft/CNTK#220, pytorch/pytorch#121899
    (": F tensorflow/core/common_runtime/gpu/gpu_device.cc:103] EigenAllocator for GPU ran out of memory when "
     "allocating 0. See error logs for more detailed info.", "gpu_out_of_memory"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "gpu_out_of_memory"),
    ("cuDNN failure 2: CUDNN_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=PTNUWCL5099642 ; expr=finder(calgo, algoPerf)",
     "gpu_out_of_memory"),
    ('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/opt/builds/pytorch/c10/cuda/CUDACachingAllocator.cpp"'
     ':830, please report a bug to PyTorch.', "gpu_out_of_memory"),
    # real: open-mmlab/mmhuman3d#331, ru1ven/KeypointFusion#3, ljanyst/ssd-tensorflow#8, microsoft/Graphormer#7,
    # hezhangsprinter/DCPDN#12 (host memory)
    ("numpy.core._exceptions.MemoryError: Unable to allocate 7.91 GiB for an array with shape (1396913, 190, 4) and "
     "data type float64", "other:host-oom"),
    ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 58.0 GiB for an array with shape (176351, 176460) "
     "and data type uint16", "other:host-oom"),
    ("terminate called after throwing an instance of 'std::bad_alloc'", "other:host-oom"),
    ("OSError: [Errno 12] Cannot allocate memory", "other:host-oom"),
    ("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.", "other:host-oom"),
]


@pytest.mark.parametrize("line,category", _MEMORY_EXHAUSTED)
def test_memory_exhausted_is_named_gpu_or_host_behind_any_prefix(line, category):
    for prefix in ("", "[rank3]: ", "node7: "):
        assert top(prefix + line + "\n").category == category, prefix


@pytest.mark.parametrize("line", [
    # real: tensorpack/tensorpack#1303 and tensorflow/tensorflow#23953 (the BFC allocator's notice for a caller that
    # falls back; training went on), the memory_summary table of a working run (Comfy-Org/ComfyUI#13950), vLLM's
    # profile of a run that started (vllm-project/vllm#10517)
    "W tensorflow/core/common_runtime/bfc_allocator.cc:237] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
    "2.39GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be "
    "performance gains if more memory were available.",
    "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |",
    "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB "
    "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90",
    "GPU blocks: 1952, # CPU blocks: 2048",
])
def test_the_memory_lines_of_working_runs_stay_quiet(line):
    for prefix in ("", "[rank3]: ", "node7: "):
        assert not categories(prefix + line + "\n"), prefix
