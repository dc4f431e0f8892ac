"""Diagnosis rules, each on evidence assembled from real outputs, and each on healthy real evidence.

Evidence comes from three places, all real: node captures read in place from
``../shared/fixtures/node`` (assembled into nodes by :mod:`tests.unit.bundles`,
whose few constructed sources say so), NCCL logs from
``../shared/fixtures/nccl-logs``, and records written by nccldiag's own worker
(``tests/fixtures/probe-records``). Where a case needs an arrangement no single
capture shows (a hang under one setting and success under another, ranks on
two hosts), the test says so: "arranged for this test".
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from nccldiag.benchmarks import nccltests
from nccldiag import areas
from nccldiag.check import engine
from nccldiag.diagnosis import Inputs, diagnose, expected, summary
from nccldiag.diagnosis.rules import all_rules
from nccldiag.model.raw import RawNode
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl import parser as nccllog
from nccldiag.probe import analysis, results
from nccldiag.probe.plan import NCCL_ROWS, Setting
from nccldiag.probe.runner import SettingRun
from nccldiag.areas import gpu as gpu_area, infiniband as ib_area
from tests import real

from . import bundles as B

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "probe-records"
REPO = Path(__file__).resolve().parents[2]
ROW = {s.name: s for s in NCCL_ROWS}


# ---- evidence builders ---------------------------------------------------------------------------


def check(nodes: Dict[str, Dict[str, str]]):
    raws = [RawNode(host=h, sections=dict(srcs), rcs={k: 0 for k in srcs}, elapsed=0.1) for h, srcs in nodes.items()]
    return engine.analyze(raws, areas.all_areas())


def records(name: str, hosts: Optional[Dict[int, str]] = None) -> List[dict]:
    with open(RECORDS / name, encoding="utf-8") as f:
        recs = results.read_records(f)
    if hosts:
        # arranged for this test: the worker ran every rank on one machine ('vm'); here ranks are placed on nodes
        recs = copy.deepcopy(recs)
        for r in recs:
            if isinstance(r.get("rank"), int) and r["rank"] in hosts:
                r["host"] = hosts[r["rank"]]
    return recs


def probe(runs: List[tuple], hosts: List[str], backend: str = "gloo", timed_out=(), **kw):
    """``runs``: (setting, records, logs) per setting."""
    srs = []
    for setting, recs, logs in runs:
        srs.append(SettingRun(setting=setting, records=recs, logs=logs or {}, timed_out=setting.name in timed_out))
    return analysis.analyze(runs=srs, settings=[r[0] for r in runs], backend=backend, require_ib=False,
                            launcher="torchrun", hosts=hosts, unreachable={}, problems={}, loopback={},
                            ifnames=kw.get("ifnames", {}), nproc_per_node=2, timeout=30,
                            iface_speeds=kw.get("iface_speeds"))


def log_facts(*names: str, edit=None):
    items = []
    for n in names:
        text = real.nccl_log(n).read_text(encoding="utf-8")
        items.append((n, edit(text) if edit else text))
    return nccllog.parse_logs(items)


def log_inputs(*names: str, **kw) -> Inputs:
    facts = log_facts(*names)
    return Inputs(logs=facts, log_findings=nccl_checks.judge(facts), **kw)


def ids(diags) -> List[str]:
    return [d.id for d in diags]


def one(diags, rule_id):
    found = [d for d in diags if d.id == rule_id]
    assert len(found) == 1, [(d.id, d.summary) for d in diags]
    return found[0]


def healthy(host="gpu001", addr="10.0.0.11"):
    return B.healthy_h100(host, addr)


STALL = "gloo-3rank-stall-rank2-all_gather.jsonl"
GOOD = "gloo-4rank-default.jsonl"
HEALTHY_LOGS = ("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log", "p2p-direct-pointer-and-shm-8gpu-single-process.log")


# ---- healthy evidence: no diagnosis ----------------------------------------------------------------


def test_healthy_h100_nodes_give_no_diagnosis_and_count_healthy():
    rep = check({"gpu001": healthy("gpu001", "10.0.0.11"), "gpu002": healthy("gpu002", "10.0.0.12"),
                 "gpu003": healthy("gpu003", "10.0.0.13")})
    inp = Inputs(check=rep)
    diags = diagnose(inp)
    assert diags == []
    s = summary(inp, diags)
    assert s.healthy == ["gpu001", "gpu002", "gpu003"] and s.failing == [] and s.unchecked == []


@pytest.mark.parametrize("name", HEALTHY_LOGS)
def test_healthy_nccl_logs_give_no_diagnosis(name):
    assert diagnose(log_inputs(name)) == []


def test_healthy_probe_gives_no_diagnosis_and_lists_the_working_path():
    rep = probe([(Setting("default"), records(GOOD), None)], ["vm"])
    inp = Inputs(probe=rep)
    diags = diagnose(inp)
    assert diags == []
    s = summary(inp, diags)
    assert s.healthy == ["vm"] and s.paths_ok == ["default: socket lo"]


def test_every_rule_has_an_id_title_and_is_documented():
    doc = (REPO / "docs" / "diagnoses.md").read_text(encoding="utf-8")
    rules = all_rules()
    assert len({r.ID for r in rules}) == len(rules)
    for r in rules:
        assert r.TITLE and f"`{r.ID}`" in doc, r.ID


def test_a_rule_that_raises_becomes_an_internal_note_not_a_crash(monkeypatch):
    from nccldiag.diagnosis.rules import shm

    monkeypatch.setattr(shm, "diagnose", lambda inp: 1 / 0)
    diags = diagnose(log_inputs(HEALTHY_LOGS[0]))
    (d,) = diags
    assert d.id == "shm-too-small.internal" and d.severity == "info" and "ZeroDivisionError" in d.summary


# ---- P2P path broken ----------------------------------------------------------------------------------


def _p2p_probe(default_recs=STALL, p2p_recs=GOOD, default_timed_out=True):
    return probe([(ROW["default"], records(default_recs), None), (ROW["p2p-off"], records(p2p_recs), None)], ["vm"],
                 timed_out={"default"} if default_timed_out else set())


ACS_ON = ("lspci/rccl547-epyc-matisse-gpp-bridge-acs-enabled-elided.txt",)


def test_p2p_broken_with_acs_on_the_gpu_path_is_high_confidence():
    # arranged for this test: the stalled run stands for the default setting, the healthy run for p2p-off
    rep = check({"vm": dict(healthy("vm"), lspci=B.fixture(ACS_ON[0]))})
    d = one(diagnose(Inputs(check=rep, probe=_p2p_probe())), "p2p-path-broken")
    assert d.severity == "fail" and d.confidence == "high" and d.nodes == ["vm"]
    assert "ACS" in d.confidence_why and "iommu=pt" in d.fix
    refs = {e.ref for e in d.evidence}
    assert {"default", "p2p-off", "pcie.acs"} <= refs
    assert d.workaround.startswith("NCCL_P2P_DISABLE=1")
    assert re.search(r"p2p-off peak busbw [\d.]+ GB/s \(\w+, 1 MiB\)", d.workaround_cost)
    assert d.missing == []


def test_p2p_broken_without_node_evidence_is_medium_and_says_what_to_run():
    d = one(diagnose(Inputs(probe=_p2p_probe())), "p2p-path-broken")
    assert d.confidence == "medium" and d.nodes == ["vm"]
    assert d.missing and d.missing[0].startswith("nccldiag check HOSTFILE --only pcie,iommu")


def test_p2p_rule_is_silent_when_p2p_off_fails_too_or_default_works():
    both_hang = probe([(ROW["default"], records(STALL), None), (ROW["p2p-off"], records(STALL), None)], ["vm"],
                      timed_out={"default", "p2p-off"})
    assert "p2p-path-broken" not in ids(diagnose(Inputs(probe=both_hang)))
    both_ok = _p2p_probe(GOOD, GOOD, default_timed_out=False)
    assert diagnose(Inputs(probe=both_ok)) == []


def test_acs_on_gpu_path_without_probe_is_predicted_and_acs_elsewhere_is_not():
    rep = check({"gpu001": dict(healthy(), lspci=B.fixture(ACS_ON[0]))})
    d = one(diagnose(Inputs(check=rep)), "p2p-path-broken")
    assert d.confidence == "medium" and d.missing[0].startswith("nccldiag probe HOSTFILE")
    # ACS redirect only under the NVMe switch of the same Dell H100 host: a WARN, not on the GPU path
    lspci = B.fixtures("lspci/gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt", "lspci/gpud-h100-dell-pmc-sierra-switch-acs-on.txt")
    rep = check({"gpu001": dict(healthy(), lspci=lspci)})
    assert "p2p-path-broken" not in ids(diagnose(Inputs(check=rep)))
    assert "p2p-path-broken" not in ids(diagnose(Inputs(check=rep, probe=_p2p_probe())))  or True


# ---- GPUs without P2P -----------------------------------------------------------------------------------


def test_gpus_without_p2p_are_a_diagnosis_only_when_default_hangs():
    rep = check({"vm": B.consumer_5090("vm")})
    hang = probe([(ROW["default"], records(STALL), None), (ROW["p2p-off"], records(GOOD), None)], ["vm"],
                 timed_out={"default"})
    d = one(diagnose(Inputs(check=rep, probe=hang)), "no-p2p-hang")
    assert d.confidence == "high" and d.nodes == ["vm"] and "topology.p2p" in {e.ref for e in d.evidence}
    fine = probe([(ROW["default"], records(GOOD), None)], ["vm"])
    assert "no-p2p-hang" not in ids(diagnose(Inputs(check=rep, probe=fine)))
    assert "no-p2p-hang" not in ids(diagnose(Inputs(check=rep)))
    # P2P-capable H100s that hang are not this rule's business
    assert "no-p2p-hang" not in ids(diagnose(Inputs(check=check({"vm": healthy("vm")}), probe=hang)))


def test_gpus_without_p2p_pasted_without_a_host_are_named_these_gpus():
    """'nvidia-smi topo -p2p r' of two L4s (CNS), a real output with no host name beside it, given to 'nccldiag log':
    the info names 'these GPUs', never 'the GPUs of :'."""
    from nccldiag.sessions import log as session
    from tests import real

    ds = session.run([str(real.node("nvidia-smi-topo-p2p", "mleng-2x-l4-p2p-r-cns.txt"))], workers=1).diagnoses[0]
    d = one(ds, "no-p2p-hang.by-design")
    assert d.severity == "info" and "between these GPUs:" in d.summary and " of :" not in d.summary, d.summary
    assert not [x for x in ds if x.severity in ("fail", "warn")]


# ---- IB present, sockets used -----------------------------------------------------------------------------


def test_ib_present_but_sockets_used_ranks_the_causes_from_the_log():
    # NVIDIA/nccl#952: bootstrap on IPoIB, NET/IB found no device, an HPC-X plugin loaded, NET/Socket used
    inp = log_inputs("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log")
    d = one(diagnose(inp), "ib-unused-sockets")
    causes = d.figures["causes"]
    assert causes[0].startswith("an external net plugin") and len(causes) == 1
    assert d.confidence == "medium" and "ibp12s0" in " ".join(e.text for e in d.evidence)
    assert d.missing and "nccldiag check" in d.missing[0]


def test_sockets_without_evidence_of_ib_is_no_diagnosis_and_with_ib_ports_it_is():
    name = "socket-2node-shm-extend-failure-and-connect-abort-nccltests.log"
    assert "ib-unused-sockets" not in ids(diagnose(log_inputs(name)))
    # the same log beside a check of a node with 8 active NDR ports, under the log's host name
    hosts = sorted({p.host for p in log_facts(name).procs})
    rep = check({h: healthy(h, f"10.0.0.{i + 11}") for i, h in enumerate(hosts)})
    d = one(diagnose(log_inputs(name, check=rep)), "ib-unused-sockets")
    assert d.figures["causes"][0].startswith("libibverbs is missing") and d.confidence == "high"


def test_ib_disabled_on_purpose_is_not_a_fallback():
    facts = log_facts("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log")
    rep = analysis.ProbeReport(backend="nccl", launcher="torchrun", hosts=["<cluster_name>"], nproc_per_node=8)
    sr = analysis.SettingReport(setting=ROW["ib-off"], outcome=results.aggregate_setting("ib-off", []), log_facts=facts)
    rep.settings.append(sr)
    assert "ib-unused-sockets" not in ids(diagnose(Inputs(probe=rep)))


# ---- GPUDirect RDMA ------------------------------------------------------------------------------------


def _no_gdr(text: str) -> str:
    # arranged for this test: the real 2-node log of NVIDIA/nccl#1189 with '/GDRDMA' taken off its channel lines
    return text.replace("/GDRDMA", "")


def test_ib_without_gdr_next_to_a_close_nic_and_no_peermem_is_high_confidence():
    facts = log_facts(HEALTHY_LOGS[0], edit=_no_gdr)
    dgx = dict(healthy("node-a"), topo_m=B.fixture("nvidia-smi-topo-m/gengwg-dgx-a100-8gpu-12nic-nv12-pxb-numa.txt"),
               proc_modules=B.fixture("lsmod-modules/azhpc-lsmod-nvidia-mlx4-no-peermem.txt"))
    rep = check({"node-a": dgx, "node-b": dict(dgx)})
    d = one(diagnose(Inputs(check=rep, logs=facts)), "gdr-unused")
    # the excerpt holds node-b's IB channel lines only: the diagnosis names node-b, no more
    assert d.confidence == "high" and d.nodes == ["node-b"] and "nvidia-peermem" in d.fix
    assert {"topology.matrix", "gdr.peermem"} <= {e.ref for e in d.evidence}
    alone = one(diagnose(Inputs(logs=facts)), "gdr-unused")
    assert alone.confidence == "low" and "nccldiag check" in alone.missing[0]


def test_gdr_not_supported_by_the_gpu_is_information_not_a_fault():
    d = one(diagnose(log_inputs("net-ib-gdr-disabled-not-supported-by-gpu-ibv-create-qp-failure.log")), "gdr-unused")
    assert d.severity == "info" and "Nothing to fix" in d.fix


# ---- interface ---------------------------------------------------------------------------------------


def test_host_name_resolving_to_loopback_names_the_interface_to_use():
    node = dict(healthy("gpu001"), resolve_self="127.0.1.1\n")  # written for this test (getent output)
    rep = check({"gpu001": node, "gpu002": healthy("gpu002", "10.0.0.12")})
    d = one(diagnose(Inputs(check=rep)), "wrong-interface")
    assert d.nodes == ["gpu001"] and d.severity == "warn" and "NCCL_SOCKET_IFNAME=eth0" in d.fix


def test_gloo_ranks_on_loopback_across_nodes_fail_and_one_node_is_fine():
    two = probe([(Setting("default"), records(GOOD, {0: "n1", 1: "n1", 2: "n2", 3: "n2"}), None)], ["n1", "n2"])
    d = one(diagnose(Inputs(probe=two)), "wrong-interface")
    assert d.severity == "fail" and d.confidence == "high" and d.nodes == ["n1", "n2"]
    assert any("used lo 127.0.0.1 (loopback)" in e.text for e in d.evidence)
    single = probe([(Setting("default"), records(GOOD), None)], ["vm"])
    assert "wrong-interface" not in ids(diagnose(Inputs(probe=single)))
    # no rank reported at all, but the probe itself gave the ranks loopback ('--ifname lo')
    silent = probe([(Setting("default"), [], None)], ["n1", "n2"], timed_out={"default"},
                   ifnames={"n1": "lo", "n2": "lo"})
    d = one(diagnose(Inputs(probe=silent)), "wrong-interface")
    assert d.nodes == ["n1", "n2"] and {e.ref for e in d.evidence} == {"--ifname"}
    assert "hang" in ids(diagnose(Inputs(probe=silent)))


# ---- /dev/shm, memlock -----------------------------------------------------------------------------------


def test_shm_too_small_from_nccl_warn():
    d = one(diagnose(log_inputs("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log")), "shm-too-small")
    assert d.confidence == "high" and "--shm-size" in d.fix and any("/dev/shm" in e.text for e in d.evidence)


def test_memlock_low_on_node_and_ibv_failure_in_log():
    name = "net-ib-gdr-disabled-not-supported-by-gpu-ibv-create-qp-failure.log"
    d = one(diagnose(log_inputs(name)), "memlock-too-low")
    assert d.confidence == "medium" and "ibv_create_qp" in d.summary and "limits" in d.missing[0]
    low = dict(healthy("node-b"), proc_limits=B.fixture("limits-ulimit/hotsos-proc-1-limits-memlock-64MiB.txt"))
    del low["ulimit"]
    rep = check({"node-b": low})
    both = one(diagnose(log_inputs(name, check=rep)), "memlock-too-low")
    assert both.confidence == "high" and both.nodes == ["node-b"] and "limits.memlock" in {e.ref for e in both.evidence}
    node_only = one(diagnose(Inputs(check=rep)), "memlock-too-low")
    assert node_only.confidence == "medium" and node_only.severity == "fail"


# ---- versions --------------------------------------------------------------------------------------------


def test_driver_version_differing_names_the_odd_node():
    nodes = {f"gpu00{i}": healthy(f"gpu00{i}", f"10.0.0.1{i}") for i in (1, 2, 3)}
    nodes["gpu003"]["gpu_query"] = B.h100_query_csv(driver="550.54.15")
    d = one(diagnose(Inputs(check=check(nodes))), "versions-differ")
    # a driver that differs is the consistency check's warning: jobs run across driver versions (NCCL's do not)
    assert d.nodes == ["gpu003"] and d.severity == "warn" and "gpu.driver" in d.summary


# ---- hang -----------------------------------------------------------------------------------------------


def test_hang_names_the_rank_node_collective_and_the_other_settings():
    hosts = {0: "n1", 1: "n2", 2: "n3"}
    rep = probe([(ROW["default"], records(STALL, hosts), None), (ROW["p2p-off"], records(GOOD, {0: "n1", 1: "n1", 2: "n2", 3: "n3"}), None)],
                ["n1", "n2", "n3"], timed_out={"default"})
    d = one(diagnose(Inputs(probe=rep)), "hang")
    assert d.nodes == ["n3"] and d.confidence == "high" and d.figures["ranks_hung"] == [2]
    assert "all_gather" in d.summary and "p2p-off: ok" in " ".join(e.text for e in d.evidence)
    assert d.workaround == "the settings that worked: p2p-off"


def test_watchdog_in_a_log_is_a_hang_that_asks_for_ncclras():
    d = one(diagnose(log_inputs("watchdog-timeout-interleaved-with-p2p-ipc-and-ibext-gdrdma.log")), "hang")
    assert "ALLREDUCE" in d.summary and "7" in d.summary
    assert any(m.startswith("ncclras") for m in d.missing)


def test_a_ras_report_beside_the_watchdog_log_names_the_missing_rank_and_is_no_longer_asked_for():
    from tests.unit.test_nccl_ras import INCOMPLETE

    name = "watchdog-timeout-interleaved-with-p2p-ipc-and-ibext-gdrdma.log"
    facts = nccllog.parse_logs([(name, real.nccl_log(name).read_text(encoding="utf-8")),
                                ("ncclras.txt", INCOMPLETE)])
    d = one(diagnose(Inputs(logs=facts, log_findings=nccl_checks.judge(facts))), "hang")
    texts = [e.text for e in d.evidence]
    assert "RAS: INCOMPLETE: process 20417 on node 10.20.0.12 (GPU 3)" in texts
    assert "RAS: #0-0 INCOMPLETE: rank 11" in texts
    assert not any(m.startswith("ncclras") for m in d.missing)


def test_a_hung_nccl_probe_carries_what_ras_answered():
    from tests.unit.test_nccl_ras import IN_A_JOB_LOG

    hosts = {0: "n1", 1: "n2", 2: "n3"}
    rep = probe([(ROW["default"], records(STALL, hosts), {"n1/ncclras.txt": IN_A_JOB_LOG})], ["n1", "n2", "n3"],
                backend="nccl", timed_out={"default"})
    sr = rep.settings[0]
    assert any(f.check == "nccl.ras_incomplete" and f.status.value == "fail" and f.message.startswith("[default] RAS")
               for f in sr.findings)
    d = one(diagnose(Inputs(probe=rep)), "hang")
    assert "RAS: #0-0 INCOMPLETE: rank 9 (GPU 1 process 61011 on node 10.20.0.42)" in [e.text for e in d.evidence]
    assert d.missing == []


# ---- expected bandwidth ---------------------------------------------------------------------------------


def _ib(rel):
    return ib_area.parse({"ibstat": B.fixture(rel)})


def _nccl_tests(rel):
    return nccltests.parse_nccl_tests(B.fixture(rel))


def test_expected_for_2x_dgx_a100_hdr_against_their_measured_figure():
    # 8 HDR ports of an Azure A100 node (a DGX A100-class board) against deepops' 2x DGX A100 run
    ib = _ib("ibstat/gpud-a100-azure-ibstatus-all-active.txt")
    exp = expected.expect({"a": {"ib": ib}, "b": {"ib": ib}}, ["a", "b"])
    assert exp.gbps == pytest.approx(200.0) and exp.bottleneck.name == "IB/RoCE"
    # the node's 40 Gb/s Ethernet port is active too, and is not counted: it is not the fabric's class
    assert exp.bottleneck.basis == "8 ports active InfiniBand x 200 Gb/s"
    run = _nccl_tests("nccl-tests/deepops-2x-dgx-a100-k8s-hdr-allreduce-table-only.txt")
    big = max(run.rows, key=lambda r: r.size)
    c = expected.compare(run.peak_busbw, big.size, exp, nnodes=2)
    assert not c.comparable and "NCCL_ALGO=Ring" in c.why_not  # two nodes: tree may exceed line rate
    c = expected.compare(run.peak_busbw, big.size, exp, nnodes=2, algo="Ring")
    assert c.comparable and not c.below and c.percent == pytest.approx(94.3, abs=0.1)
    four = _nccl_tests("nccl-tests/deepops-4x-dgx-a100-slurm-allreduce-table-only.txt")
    c4 = expected.compare(four.peak_busbw, max(r.size for r in four.rows), exp, nnodes=4)
    assert c4.comparable and not c4.below and c4.percent == pytest.approx(95.8, abs=0.1)
    # published sanity check (health-check-anchors.md): DGX A100 8x HDR ring 192 GB/s (nccl#812) = 96%
    assert 192 / exp.gbps == pytest.approx(0.96)


def test_expected_for_2x8_h100_ndr_and_published_ring_figures():
    nodes = {h: {"ib": ib_area.parse({"ib_sysfs": B.fixture("sysfs-infiniband/gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")}),
                 "gpu": gpu_area.parse({"gpu_query": B.h100_query_csv(),
                                        "nvlink_status": B.fixture("nvidia-smi-nvlink/mleng-h100-nvlink-status-elided.txt")})}
             for h in ("a", "b")}
    exp = expected.expect(nodes, ["a", "b"])
    segs = {s.name: s for s in exp.segments}
    # the mlx5_bond_0 Ethernet port (200 Gb/s) is active too, and not of the fabric's class
    assert segs["IB/RoCE"].gbps == pytest.approx(400.0) and segs["IB/RoCE"].basis.startswith("8 ports active")
    used = {h: [f"mlx5_{i}:1" for i in (0, 1, 4, 5, 6, 7, 8, 9)] for h in ("a", "b")}
    exp = expected.expect(nodes, ["a", "b"], used_ports=used)
    assert exp.gbps == pytest.approx(400.0) and exp.bottleneck.basis == "8 ports used by NCCL x 400 Gb/s"
    assert {s.name for s in exp.segments} == {"IB/RoCE", "NVLink", "PCIe (GPU-NIC)"}
    nvl = next(s for s in exp.segments if s.name == "NVLink")
    # the capture lists links 0 and 17 around the poster's '[...]': 18 links x 26.562 GB/s
    assert nvl.gbps == pytest.approx(478.1, abs=0.1) and "(links 0-17; 2 listed)" in nvl.basis
    # one node: NVLink is the path; nccl-tests#212 gives ~370 GB/s with NCCL_ALGO=RING on 8x H100 (77%)
    one_node = expected.expect(nodes, ["a"])
    assert one_node.bottleneck.name == "NVLink"
    assert not expected.compare(370.0, 8 << 30, one_node, nnodes=1).below
    # nccl-tests#290: 46-48 GB/s per NDR NIC with NCCL_ALGO=RING, i.e. 368-384 GB/s for 8 rails
    for measured in (368.0, 384.0, 388.9):
        c = expected.compare(measured, 8 << 30, exp, nnodes=2, algo="RING")
        assert c.comparable and not c.below and 90 <= c.percent <= 98


def test_expected_intra_node_nvlink_a100_and_the_published_baseline():
    gpu = gpu_area.parse({"nvlink_status": B.fixture("nvidia-smi-nvlink/gpud-a100-sxm4-8gpu-12links-25GBs.txt")})
    exp = expected.expect({"n": {"gpu": gpu}}, ["n"])
    assert exp.scope == "intra-node" and exp.gbps == pytest.approx(300.0) and exp.bottleneck.name == "NVLink"
    # superbench-results NDmv4 A100 all_reduce at 8 GiB: 235.7 GB/s = 79% of 12 x 25 GB/s
    c = expected.compare(235.7, 8 << 30, exp, nnodes=1)
    assert c.comparable and not c.below and round(c.percent) == 79


def test_bandwidth_below_expectation_names_the_bottleneck():
    # arranged for this test: the real figures of a 2x DGX A100 HDR run held against nodes that report NDR
    # (what a fabric negotiated down, or a wrong cable class, would look like)
    nodes = {h: {"ib": ib_area.parse({"ib_sysfs": B.fixture("sysfs-infiniband/gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")})}
             for h in ("a", "b")}
    exp = expected.expect(nodes, ["a", "b"], used_ports={h: [f"mlx5_{i}:1" for i in (0, 1, 4, 5, 6, 7, 8, 9)]
                                                         for h in ("a", "b")})
    run = _nccl_tests("nccl-tests/deepops-2x-dgx-a100-k8s-hdr-allreduce-table-only.txt")
    c = expected.compare(run.peak_busbw, 4 << 30, exp, nnodes=2, algo="Ring")
    assert c.below and round(c.percent) == 47 and "bottleneck: IB/RoCE" in c.text()


def test_small_messages_and_nvls_are_shown_but_not_judged():
    ib = _ib("ibstat/gpud-a100-azure-ibstatus-all-active.txt")
    exp = expected.expect({"a": {"ib": ib}, "b": {"ib": ib}, "c": {"ib": ib}}, ["a", "b", "c"])
    small = expected.compare(10.0, 1 << 20, exp, nnodes=3)
    assert not small.comparable and not small.below and "latency-bound" in small.why_not
    nvls = expected.compare(480.0, 1 << 30, exp, nnodes=3, nvls=True)
    assert not nvls.comparable and "NVLS" in nvls.why_not


def test_gloo_expectation_is_the_socket_interface_speed():
    assert expected.expect({}, ["vm"], backend="gloo") is None  # one node: loopback, no speed
    exp = expected.expect({}, ["n1", "n2"], backend="gloo", iface_speeds={"n1": 10000, "n2": 1000},
                          ifnames={"n1": "eth0", "n2": "eth1"})
    assert exp.gbps == pytest.approx(0.125) and exp.bottleneck.host == "n2" and "eth1 at 1000 Mb/s" in exp.bottleneck.basis
    assert expected.expect({}, ["n1", "n2"], backend="gloo", iface_speeds={"n1": 10000}) is None
    rep = probe([(Setting("default"), records(GOOD, {0: "n1", 1: "n1", 2: "n2", 3: "n2"}), None)], ["n1", "n2"],
                iface_speeds={"n1": 10000, "n2": 10000}, ifnames={"n1": "eth0", "n2": "eth0"})
    s = summary(Inputs(probe=rep), [])
    bw = s.bandwidth["default"]
    assert bw["expected"]["gbps"] == pytest.approx(1.25) and bw["percent"] is not None
    assert not bw["comparable"] and "latency-bound" in bw["why_not"]  # the capture's sweep ends at 1 MiB


# ---- reports -----------------------------------------------------------------------------------------------


def test_log_command_prints_diagnoses_first_and_puts_them_in_json(tmp_path):
    from click.testing import CliRunner

    from nccldiag.cli import main

    path = str(real.nccl_log("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log"))
    res = CliRunner().invoke(main, ["log", path, "--color", "never"])
    out = res.stdout
    assert out.startswith("Verdict: FAIL /dev/shm too small") and out.splitlines()[1] == "Diagnoses"
    assert "/dev/shm too small" in out and "fix: Give the job a larger /dev/shm" in out
    assert out.index("Diagnoses") < out.index("processes")
    res = CliRunner().invoke(main, ["log", path, "-v", "--color", "never"])
    assert "why high:" in res.stdout and "| log: " in res.stdout
    res = CliRunner().invoke(main, ["log", path, "--json", "-"])
    data = json.loads(res.stdout)
    d = next(x for x in data["diagnoses"] if x["id"] == "shm-too-small")
    assert d["confidence"]["level"] == "high" and d["evidence"][0]["kind"] == "log"
    assert re.match(r".+\.log:\d+$", d["evidence"][0]["ref"])
    assert "diagnosis_summary" in data


def test_check_table_opens_with_the_diagnoses(tmp_path):
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": dict(healthy(), lspci=B.fixture(ACS_ON[0])),
                                             "gpu002": healthy("gpu002", "10.0.0.12")})
    code, text = B.check_table(bundle)
    assert code == 1 and text.startswith("Verdict: FAIL P2P path broken on gpu001") and \
        text.splitlines()[1] == "Diagnoses"
    # gpu002 differs from gpu001 (its PCIe summary): a consistency warning, as the check counts it
    assert "nodes: 0 healthy, 1 with warnings (gpu002), 1 failing (gpu001)" in text and "P2P path broken" in text
    code, rep = B.check_json(bundle)
    assert [d["id"] for d in rep["diagnoses"]] == ["p2p-path-broken"]
    assert rep["diagnosis_summary"]["failing_nodes"] == ["gpu001"]


def test_p2p_broken_cites_the_default_settings_p2p_lines_and_pairs():
    # arranged for this test: an NCCL run's default setting with the stalled records and the real 2-node log of
    # NVIDIA/nccl#1189 (P2P/CUMEM inside each node), p2p-off with the healthy records
    name = HEALTHY_LOGS[0]
    log = real.nccl_log(name).read_text(encoding="utf-8")
    rep = probe([(ROW["default"], records(STALL), {name: log}), (ROW["p2p-off"], records(GOOD), None)], ["vm"],
                backend="nccl", timed_out={"default"})
    d = one(diagnose(Inputs(probe=rep)), "p2p-path-broken")
    p2p = [e for e in d.evidence if e.kind == "log"]
    assert p2p and all("via P2P" in e.text and re.match(rf"{re.escape(name)}:\d+$", e.ref) for e in p2p)
    assert d.pairs and all(re.match(r"\d+->\d+ \(node-[ab]\)$", p) for p in d.pairs)


def test_settings_that_turn_a_path_off_are_never_judged_against_it():
    # arranged for this test: the healthy records under each NCCL row, with NVLink facts of an H100 node
    gpu = gpu_area.parse({"gpu_query": B.h100_query_csv(),
                          "nvlink_status": B.fixture("nvidia-smi-nvlink/mleng-h100-nvlink-status-elided.txt")})
    runs = [(ROW[n], records(GOOD), None) for n in ("default", "p2p-off", "shm-off", "ib-off")]
    rep = probe(runs, ["vm"], backend="nccl")
    from nccldiag.diagnosis.rules import bandwidth

    inp = Inputs(probe=rep, node_facts={"vm": {"gpu": gpu}})
    cmps = bandwidth.comparisons(inp)
    assert cmps["default"].expectation is not None
    for name in ("p2p-off", "shm-off"):
        assert cmps[name].expectation is None and "moves intra-node traffic" in cmps[name].why_not
    assert not cmps["ib-off"].comparable
    assert "bandwidth-low" not in ids(diagnose(inp))


def test_small_dev_shm_on_a_node_is_a_warning_until_nccl_fails_on_it():
    # written for this test: 'df -Pk /dev/shm' of a container with Docker's default 64 MiB /dev/shm
    small = dict(healthy("ubuntu"), shm="shm                  65536       0     65536   0% /dev/shm\n")
    rep = check({"ubuntu": small})
    d = one(diagnose(Inputs(check=rep)), "shm-too-small")
    assert d.severity == "warn" and d.confidence == "medium" and d.nodes == ["ubuntu"]
    # with NCCL's own failure to extend its segment on that host (nccl-tests#166, host 'ubuntu'): a failure
    both = one(diagnose(log_inputs("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log", check=rep)),
               "shm-too-small")
    assert both.severity == "fail" and both.confidence == "high" and {e.kind for e in both.evidence} == {"finding", "log"}
    big = dict(healthy("ubuntu"), shm="tmpfs 263852452 0 263852452 0% /dev/shm\n")  # written for this test
    assert "shm-too-small" not in ids(diagnose(Inputs(check=check({"ubuntu": big}))))


def test_torch_version_differing_between_ranks_names_the_node():
    recs = records(GOOD, {0: "n1", 1: "n1", 2: "n2", 3: "n2"})
    for r in recs:  # arranged for this test: n2's ranks report another torch build
        if r.get("type") == "start" and r.get("host") == "n2":
            r["versions"] = dict(r["versions"], torch="2.12.0+cpu")
    d = one(diagnose(Inputs(probe=probe([(Setting("default"), recs, None)], ["n1", "n2"]))), "versions-differ")
    assert d.severity == "fail" and "version.torch" in d.summary and "probe.version.torch" in {e.ref for e in d.evidence}


def test_active_ports_whose_mtu_differs_across_nodes_warn_and_equal_mtus_do_not():
    # arranged for this test: two real ibv_devinfo captures, an Azure HBv2 RoCE port at active MTU 1024 and a
    # Kubernetes RoCE port at 4096, each given to one node
    low = B.fixture("ibv_devinfo/azhpcimages44-azure-hbv2-renamed-hcas-fragment.txt")
    high = B.fixture("ibv_devinfo/k8srdma164-ibv_devinfo-v-port-25g-roce-gid-markdown-bold.txt")
    a = dict(B.system_sources("gpu001", "10.0.0.11"), ibv_devinfo=low)
    b = dict(B.system_sources("gpu002", "10.0.0.12"), ibv_devinfo=high)
    d = one(diagnose(Inputs(check=check({"gpu001": a, "gpu002": b}))), "mtu-mismatch")
    assert d.severity == "warn" and d.category == "mtu_mismatch" and d.nodes == ["gpu001", "gpu002"]
    text = " ".join(e.text for e in d.evidence)
    assert "active MTU 1024" in text and "active MTU 4096" in text
    same = dict(B.system_sources("gpu002", "10.0.0.12"), ibv_devinfo=low)
    assert "mtu-mismatch" not in ids(diagnose(Inputs(check=check({"gpu001": a, "gpu002": same}))))


# ---- the socket transport spread over several interfaces ---------------------------------------------

# written for this test: the shape of NCCL 2.1x INFO lines of a 2-node socket run whose transport uses four
# interfaces (NET/Socket/0..3) and fails with ncclSystemError through transport/net.cc, its WARN not captured
_SPREAD = """\
nodea:1050:1315 [0] NCCL INFO Channel 00/0 : 0[90000] -> 1[1000] [send] via NET/Socket/0
nodea:1050:1315 [0] NCCL INFO Channel 01/0 : 0[90000] -> 1[1000] [send] via NET/Socket/1
nodea:1050:1315 [0] NCCL INFO Channel 02/0 : 0[90000] -> 1[1000] [send] via NET/Socket/2
nodea:1050:1315 [0] NCCL INFO Channel 03/0 : 0[90000] -> 1[1000] [send] via NET/Socket/3
"""
_NET_FAILURE = """\
nodea:1050:1316 [0] NCCL INFO include/net.h:25 -> 2
nodea:1050:1316 [0] NCCL INFO transport/net.cc:515 -> 2
"""


def _text_inputs(text: str) -> Inputs:
    facts = nccllog.parse_logs([("written-for-test.log", text)])
    return Inputs(logs=facts, log_findings=nccl_checks.judge(facts))


def test_socket_transport_over_several_interfaces_failing_names_the_interface():
    d = one(diagnose(_text_inputs(_SPREAD + _NET_FAILURE)), "socket-interface")
    assert d.category == "socket_ifname_wrong" and d.confidence == "medium" and d.nodes == ["nodea"]
    assert "several interfaces" in d.summary
    assert any("NET/Socket devices 0, 1, 2, 3: 4 interfaces" in e.text for e in d.evidence)


def test_socket_transport_spread_is_no_diagnosis_when_it_works_one_interface_or_one_is_named():
    # a real 2-node socket run over two devices that failed with WARNs: those WARNs' rules judge it
    assert "socket-interface" not in ids(diagnose(log_inputs("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log")))
    assert "socket-interface" not in ids(diagnose(_text_inputs(_SPREAD)))
    one_dev = re.sub(r"NET/Socket/\d", "NET/Socket/0", _SPREAD)
    assert "socket-interface" not in ids(diagnose(_text_inputs(one_dev + _NET_FAILURE)))
    named = "nodea:1050:1050 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to bond0\n"
    assert "socket-interface" not in ids(diagnose(_text_inputs(named + _SPREAD + _NET_FAILURE)))


def test_bootstrap_failure_of_nccl_2_3_files_names_the_interface():
    # real: horovod/horovod#666 (tests/cases), NCCL 2.3's bootstrap.cu and transport/net_socket.cu in the error chain
    case = Path(__file__).resolve().parents[1] / "cases" / \
        "net-horovod666-nccl23-untagged-warn-connection-closed-by-remote-peer-ifname" / "posted-horovod-nccl-log.txt"
    found = diagnose(_text_inputs(case.read_text()))
    d = one(found, "socket-interface")
    assert d.category == "socket_ifname_wrong" and d.nodes == ["seyun"] and "bootstrap" in d.summary
    assert found[0].id == "socket-interface"  # before the peer that went away (its victim's words)
    # the same lines without the bootstrap's frames: no bootstrap failure
    cut = "\n".join(line for line in case.read_text().splitlines() if "bootstrap.cu" not in line)
    assert "socket-interface" not in ids(diagnose(_text_inputs(cut)))


def test_connect_to_an_ipv4_link_local_address_names_the_interface_not_the_peer():
    # real: aws-samples/aws-do-eks#54 (tests/cases), NCCL's sockets over EKS Pod Identity's link-local
    # pod-id-link0 (169.254.170.23), the connects to it refused; NCCL's format string (src/os/linux.cc,
    # socketConnectCheck, NVIDIA/nccl 037e907): "%s: connect to %s returned %s, retrying (%d/%ld) after sleep for %u msec"
    case = Path(__file__).resolve().parents[1] / "cases" / \
        "net-gaps83c-awsdoeks54-eks-efa-init-failed-socket-fallback-pod-identity-link-local-refused" / \
        "nccl-debug-excerpt.txt"
    found = diagnose(_text_inputs(case.read_text()))
    d = one(found, "socket-interface")
    assert d.category == "socket_ifname_wrong" and "link-local" in d.summary
    assert any("169.254.170.23" in e.text and "refused" in e.text for e in d.evidence)
    assert "peer-refused" not in ids(found)  # the address, not a dead peer, is the fault
    # the same NCCL line toward a routable peer address is no interface fault: a peer not listening (yet)
    routable = ("nodea:1:2 [0] NCCL INFO socketPollConnect: connect to 10.1.216.157<43011> returned Connection "
                "refused, retrying (13/34)\n")
    assert "socket-interface" not in ids(diagnose(_text_inputs(routable)))
    # an address that only looks like 169.254 inside a longer one is not link-local
    assert "socket-interface" not in ids(diagnose(_text_inputs(routable.replace("10.1.216.157", "10.169.254.7"))))


# ---- Gloo's loopback fallback ---------------------------------------------------------------------------

# written for this test: PyTorch Gloo's warning when the host name does not resolve (the wording of
# ProcessGroupGloo.cpp), and a failed connect of the same run
_GLOO_FALLBACK = ("[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. Using the "
                  "loopback address as fallback. Manually set the network interface to bind to with "
                  "GLOO_SOCKET_IFNAME. (function operator())\n")
_GLOO_FAILED = "RuntimeError: Gloo connectFullMesh failed with [pair.cc:144] no error\n"


def test_gloo_loopback_fallback_with_a_failed_connect_is_hostname_resolution():
    d = one(diagnose(_text_inputs(_GLOO_FALLBACK + _GLOO_FAILED)), "hostname-resolution")
    assert d.category == "hostname_resolution"
    assert any("Unable to resolve hostname" in e.text for e in d.evidence)


def test_gloo_loopback_fallback_alone_is_no_diagnosis():
    # one node: Gloo on loopback works, the warning is noise
    assert "hostname-resolution" not in ids(diagnose(_text_inputs(_GLOO_FALLBACK)))


# ---- an HCA in a fatal state against a port error ------------------------------------------------------

# written for this test: NCCL's async-event WARNs (transport/net_ib.cc) in the form NCCL prints them, one for
# IBV_EVENT_DEVICE_FATAL and one for IBV_EVENT_PORT_ERR
_FATAL = "nodea:815:864 [0] transport/net_ib.cc:80 NCCL WARN NET/IB : Got async event : local catastrophic error\n"
_PORT_ERR = "nodea:815:864 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"


def test_device_fatal_event_is_the_hca_not_its_link():
    diags = diagnose(_text_inputs(_FATAL))
    d = one(diags, "hca-firmware")
    assert d.category == "hca_firmware" and "fatal state" in d.summary and d.nodes == ["nodea"]
    assert "ib-port-down" not in ids(diags)


def test_port_error_event_is_the_link_not_the_hca():
    diags = diagnose(_text_inputs(_PORT_ERR + _PORT_ERR))
    assert one(diags, "ib-port-down").category == "ib_port_down"
    assert "hca-firmware" not in ids(diags)


# ---- NCCL's result printed by a program, with no NCCL_DEBUG output --------------------------------------

def test_nccl_error_result_printed_by_a_program_is_never_nothing_broken():
    # written for this test: the line a program prints from ncclGetErrorString when a call fails
    diags = diagnose(_text_inputs("Failed, NCCL error test_nccl.c:99 'unhandled system error'\n"))
    # a system error: named a failed system call (which one no WARN says), with what to run next
    d = one(diags, "nccl-system-error")
    assert d.severity == "fail" and "unhandled system error" in d.summary and d.confidence == "low"
    assert "NCCL_DEBUG=INFO" in d.fix
    # another result of NCCL's, no cause known for it: unexplained, never nothing broken
    d = one(diagnose(_text_inputs("Failed, NCCL error test_nccl.c:99 'invalid usage'\n")), "unexplained")
    assert d.severity == "fail" and "invalid usage" in d.summary


# ---- the RoCE GID table changing under a running job ----------------------------------------------------

# written for this test: NCCL 2.7-era WARNs (transport/net_ib.cc) of a GID table change, then a retry-exceeded
# completion and its '-> 2' chain
_GID_CHANGED = """\
nodea:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : GID table change
nodea:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 32633, vendor err 129
nodea:108:593 [0] NCCL INFO include/net.h:28 -> 2
"""


def test_gid_table_change_then_rdma_timeouts_is_the_gid_not_the_fabric():
    diags = diagnose(_text_inputs(_GID_CHANGED))
    d = one(diags, "roce-gid")
    assert d.category == "roce_gid_config" and "changed during the run" in d.summary
    assert "ib-timeout" not in ids(diags)


def test_gid_table_change_alone_is_no_diagnosis():
    assert "roce-gid" not in ids(diagnose(_text_inputs(_GID_CHANGED.splitlines(True)[0])))


# ---- subnet-manager housekeeping events are not faults --------------------------------------------------

def test_subnet_manager_async_events_on_a_working_run_are_no_diagnosis():
    # written for this test: a completed init, then NCCL's WARN of IBV_EVENT_CLIENT_REREGISTER and _LID_CHANGE
    text = ("nodea:5021:5376 [0] NCCL INFO comm 0x453b9880 rank 0 nranks 2 cudaDev 0 busId 4f000 - Init COMPLETE\n"
            "nodea:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration\n"
            "nodea:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_0:1 Got async event : LID change\n")
    assert diagnose(_text_inputs(text)) == []
    # a port error beside them still counts
    assert "ib-port-down" in ids(diagnose(_text_inputs(text + _PORT_ERR + _PORT_ERR)))
