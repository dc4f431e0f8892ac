"""nccldiag on a real GPU: the outputs of one NVIDIA H200 in tests/fixtures/gpu-h200 (its SOURCES.md says how each
was made): a healthy node's bundle, NCCL's own log of a working one-rank job, three real failures of torchrun
jobs, and the records of two probes."""
import json
import os
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from nccldiag.areas.base import bounded
from nccldiag.areas.topology import parse_topo_m, parse_topo_p2p
from nccldiag.cli.log import log as log_command
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import Status
from nccldiag.nccl import parser as nccllog
from nccldiag.probe import results, runner, session
from tests.unit.bundles import check_json, findings

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gpu-h200")
BUNDLE = os.path.join(FIX, "bundle")


def text(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return f.read()


def log_json(name):
    r = CliRunner().invoke(log_command, [os.path.join(FIX, name), "--json", "-"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r.exit_code, json.loads(r.stdout)


def records(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return results.read_records(f)


# ---- the node ------------------------------------------------------------------------------------------------


def test_the_topology_matrix_underlined_by_nvidia_smi_is_read():
    raw = {"topo_m": text("bundle/vm/topo_m.txt"), "topo_p2p_r": text("bundle/vm/topo_p2p_r.txt")}
    assert "\x1b[4mGPU0" in raw["topo_m"]  # driver 580's nvidia-smi underlines the header even into a file
    assert parse_topo_m(raw["topo_m"]) is None and parse_topo_p2p(raw["topo_p2p_r"]) is None  # as printed
    clean = bounded(raw)
    m = parse_topo_m(clean["topo_m"])
    assert m.devices == ["GPU0"] and m.cpu_affinity == {"GPU0": "0-15"} and m.numa_affinity == {"GPU0": "0"}
    assert parse_topo_p2p(clean["topo_p2p_r"]).verdicts == {"GPU0": {"GPU0": "X"}}


def test_the_healthy_h200_node_has_no_failure_and_says_why_it_skips():
    code, rep = check_json(BUNDLE)
    assert code == 0
    by = {f["check"]: f for f in findings(rep, "vm")}
    bad = {c: f["status"] for c, f in by.items() if f["status"] in ("fail", "error", "warn")}
    # the one warning is real: the VM's host name resolves to 127.0.0.1, which gloo would advertise to peers
    assert bad == {"system.hostname_loopback": "warn"}
    assert by["topology.matrix"]["status"] == "ok" and "1 GPUs, 0 NICs" in by["topology.matrix"]["message"]
    assert by["affinity.nic_distance"]["message"] == "1 GPUs and no NIC in nvidia-smi topo -m"
    assert by["nvlink.errors"]["status"] == "skip" and "printed nothing" in by["nvlink.errors"]["message"]
    assert by["gpu.inventory"]["status"] == "ok" and "NVIDIA H200, driver 580.159.04" in by["gpu.inventory"]["message"]
    assert by["xid.events"]["status"] == "ok"  # the driver's boot lines (FBHUB interrupt cleared) are no Xid


# ---- NCCL's and torch's own output ----------------------------------------------------------------------------


def test_a_working_one_rank_nccl_job_is_nothing_broken_and_no_collnet():
    s = nccllog.parse(text("torchrun-nccl-info-1rank.log")).summary
    # NCCL 2.21+ prints the coll channel count in the collnet slot: '64 coll channels, 64 collnet channels'
    assert "64 coll channels, 64 collnet channels" in text("torchrun-nccl-info-1rank.log")
    assert not s.collnet_used and "CollNet" not in s.transports
    code, doc = log_json("torchrun-nccl-info-1rank.log")
    assert code == 0 and not [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")]


def test_collnet_counts_that_differ_from_the_coll_count_still_show_collnet():
    line = "h:1:2 [0] NCCL INFO 16 coll channels, 8 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer\n"
    assert nccllog.parse(line).summary.collnet_used  # before 2.21 the slot held comm->collNetChannels


@pytest.mark.parametrize("name, title", [
    ("torchrun-watchdog-device-assert.log", "gpu application fault"),
    ("torchrun-cuda-oom.log", "Out of GPU memory"),
    ("torchrun-nccl-duplicate-gpu.log", "Two ranks on one GPU"),
    ("torchrun-nccl-socket-ifname-nosuch.log", "NCCL_SOCKET_IFNAME names an interface a node lacks"),
    ("torchrun-cuda-visible-devices-absent.log", "cuda unavailable"),
])
def test_each_real_failure_is_named_first(name, title):
    code, doc = log_json(name)
    first = next(d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn"))
    assert code == 1 and first["severity"] == "fail" and title in first["title"]


@pytest.mark.parametrize("name", ["torchrun-watchdog-device-assert.log", "torchrun-illegal-address.log"])
def test_the_abort_after_a_named_cuda_error_is_said_as_its_end_not_as_a_crash_of_no_cause(name):
    """PyTorch's NCCL watchdog aborts the process (torchrun: SIGABRT) after the CUDA error it met: the crash is that
    error's end, under its category, and no diagnosis says "no cause recognised" beside the named one."""
    code, doc = log_json(name)
    alarms = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert code == 1 and "gpu application fault" in alarms[0]["title"]
    (crash,) = [d for d in alarms if d["id"] == "killed-by-signal"]
    assert "SIGABRT" in crash["summary"] and "after the failure named above" in crash["summary"], crash
    assert crash["category"] == alarms[0]["category"] != "unexplained"
    assert not [d for d in alarms if "no cause recognised" in d["summary"]]


def test_a_crash_with_no_named_cause_stays_unexplained():
    """The same launcher's report of the abort with nothing else of the job: the crash is all there is, unexplained."""
    crash = [ln for ln in text("torchrun-illegal-address.log").splitlines()
             if "SIGABRT" in ln or "Signal 6" in ln or "exitcode" in ln or "ChildFailedError" in ln]
    assert crash
    r = CliRunner().invoke(log_command, ["-", "--json", "-"], input="\n".join(crash) + "\n")
    doc = json.loads(r.stdout)
    alarms = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert r.exit_code == 1 and alarms and alarms[0]["category"] == "unexplained", alarms
    assert any(d["id"] == "killed-by-signal" and "no cause recognised" in d["summary"] for d in alarms), alarms


# ---- the probe ------------------------------------------------------------------------------------------------


def test_a_one_rank_probe_that_verified_every_collective_worked():
    so = results.aggregate_setting("default", records("probe-nccl-1rank-default.jsonl"))
    assert so.collectives["sendrecv"].status == "unsupported"  # needs two ranks
    assert so.collectives["all_reduce"].status == "ok" and so.status == "ok"
    f = {x.check: x for x in results.findings(so)}["probe.sendrecv"]
    assert f.status == Status.SKIP and "cannot run in this world (needs at least 2 ranks)" in f.message


def test_the_transport_matrix_of_a_one_rank_setting_says_one_rank_not_unknown():
    """One rank connects no peer, so NCCL's log of the real one-rank run names no transport: the matrix says so,
    where a setting of several ranks that left no log stays '?'."""
    from nccldiag.report import matrix

    so = results.aggregate_setting("default", records("probe-nccl-1rank-default.jsonl"))
    transports = list(nccllog.parse(text("torchrun-nccl-info-1rank.log")).summary.transports)  # as the probe reads
    assert so.world_size == 1 and not transports
    doc = {"backend": "nccl", "settings": [
        {"name": "default", "status": so.status, "world_size": so.world_size, "transports": transports},
        {"name": "p2p-off", "status": "ok", "world_size": 2, "transports": []}]}
    one, two = matrix.build(doc).rows
    assert set(one.cells.values()) == {matrix.ONE_RANK}
    assert set(two.cells.values()) == {"?"}


def test_a_rank_without_its_gpu_is_the_failure_not_a_hang_of_the_one_waiting_for_it():
    so = results.aggregate_setting("default", records("probe-nccl-2ranks-1gpu-default.jsonl"))
    assert so.stuck_in_init == [0] and so.setup_errors
    assert so.status == "error"
    fs = {x.check: x for x in results.findings(so)}
    assert fs["probe.device"].status == Status.FAIL and "needs GPU 1 but 1 GPU(s) are visible" in fs["probe.device"].message


def _shape(nproc, backend="auto", gpus=1):
    prep = runner.Prepared(run_id="r", rundir="/tmp/r", rdzv_host="vm", rdzv_port=1, ifnames={}, loopback={},
                           problems={}, info={"vm": {"gpus": gpus}})
    opts = session.ProbeOptions(launcher="local", backend=backend, nproc_per_node=nproc)
    return session._shape(None, opts, [], [SimpleNamespace(name="vm")], prep, None)


def test_more_ranks_than_gpus_under_nccl_is_refused_before_any_launch():
    with pytest.raises(UsageError, match=r"2 ranks per node, but vm has 1 NVIDIA GPU\(s\).*--nproc-per-node 1"):
        _shape(2)
    assert (_shape(1).backend, _shape(1).nproc) == ("nccl", 1)
    assert (_shape(2, backend="gloo").backend, _shape(2, backend="gloo").nproc) == ("gloo", 2)


def test_the_busbw_of_one_rank_is_not_judged():
    from nccldiag.diagnosis.inputs import Inputs
    from nccldiag.diagnosis.measured import setting_comparison
    from nccldiag.probe.plan import Setting

    outcome = results.aggregate_setting("default", records("probe-nccl-1rank-default.jsonl"))
    sr = SimpleNamespace(setting=Setting("default", {}), outcome=outcome, log_facts=None)
    probe = SimpleNamespace(backend="nccl", settings=[sr], hosts=["vm"], spec=None, node_facts={}, iface_speeds={},
                            ifnames={}, route_ifnames={})
    c = setting_comparison(Inputs(probe=probe, node_facts={}), sr)
    assert c.measured == 0.0 and not c.comparable and c.percent is None  # all_reduce's busbw, 0 by its formula
    assert c.why_not == "one rank: no data crosses between GPUs or nodes"


# ---- a kernel that faulted on the GPU --------------------------------------------------------------------------


def test_a_real_mmu_fault_is_the_jobs_application_fault_and_never_drains_the_node():
    from nccldiag.areas import xid
    from tests.unit.areahelp import judge as judge_all

    # the driver's own lines of an Xid 31 (driver 580): the GPU's UUID and serial, then the fault
    assert "Xid (PCI:0000:00:06): 31, pid=581, name=python, channel 0x0000000a" in text("dmesg-xid31-mmu-fault.txt")
    got = judge_all(xid, {"kernel_log": text("kernel-log-source-after-xid31.txt")})
    assert got.get("xid.application") == ["warn"]
    assert not [c for c, s in got.items() if "fail" in s or "error" in s], got
    code, doc = log_json("dmesg-xid31-mmu-fault.txt")
    first = next(d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn"))
    assert first["severity"] == "warn" and "gpu application fault" in first["title"] and "Xid 31" in first["summary"]
    # the job's side of the same fault: torch's illegal address behind [rank0]:, then the watchdog's abort
    code, doc = log_json("torchrun-illegal-address.log")
    first = next(d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn"))
    assert code == 1 and "gpu application fault" in first["title"] and "cudaErrorIllegalAddress" in first["summary"]


# ---- NCCL's RAS service, asked while a job ran --------------------------------------------------------------


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_real_ras_answer_of_a_working_job_reads_complete_and_quiet(form):
    from nccldiag.nccl import ras

    (r,) = ras.parse(text(f"ncclras-verbose-1rank-{form}.txt"), form)
    assert (r.format, r.nccl_version, r.cuda_runtime, r.cuda_driver) == (form, "2.28.9", 13000, 13000)
    assert (r.nodes, r.processes, r.gpus, r.communicators, r.complete, r.problems) == (1, 1, 1, 1, True, [])
    if form == "text":
        assert r.statuses() == ["RUNNING"]
    code, doc = log_json(f"ncclras-verbose-1rank-{form}.txt")
    assert code == 0 and not [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")]
