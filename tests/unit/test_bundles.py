"""End to end: bundles assembled from captured outputs, judged by ``nccldiag check --bundle``.

Each node directory holds real outputs read in place (tests/real.py; see
../shared/fixtures/node/SOURCES.md) under the source name of the area that reads that
command's output; :mod:`tests.unit.bundles` says which few sources are
constructed because no fixture captured them. The CLI is run as a user runs
it, and the JSON report and the table are checked: check ids, statuses,
hosts, exit codes.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from nccldiag.areas import kernlog
from nccldiag.transport.base import FIXES

from . import bundles as B
from .bundles import by_check, check_json, check_table, fixture, fixtures, status_of, write_bundle


def statuses(report: dict, host: Optional[str] = None) -> Dict[str, List[str]]:
    """``{check id: [status, ...]}`` of one host (or all), for comparing whole reports."""
    out: Dict[str, List[str]] = defaultdict(list)
    for f in B.findings(report, host):
        out[f["check"]].append(f["status"])
    return dict(out)


HEALTHY = {
    "ssh.collect": ["ok"],
    "system.basic": ["ok"],
    "system.interfaces": ["ok"],
    "iommu.mode": ["ok"],
    "pcie.acs": ["ok"],
    "pcie.link": ["ok"],
    # the node-health areas' sources are not in this bundle: each says so (skip), none fails
    "pcie_errors.aer": ["skip"],
    "pcie_errors.replays": ["skip"],
    "pcie_errors.kernel_log": ["skip"],
    "ib.port_state": ["ok"],
    "ib.port_rate": ["ok"],
    "ib.roce_gid": ["skip"],  # the bond's RoCE port: no GID table in these captures
    "ibcounters.link": ["skip"],
    "ibcounters.link_flaps": ["skip"],
    "roce.pfc": ["skip"],
    "roce.ecn": ["skip"],
    "roce.mtu": ["skip"],
    "roce.arp": ["skip"],
    "gdr.peermem": ["ok"],
    "gpu.inventory": ["ok"],
    "gpu.pcie_width": ["ok"],
    "gpu.nvlink": ["ok"],
    "gpuhealth.ecc": ["skip"],
    "dcgm.diag": ["skip"],  # no dcgmi in these captures
    "nvlink.fabric": ["skip"],
    "nvlink.fabricmanager": ["skip"],
    "nvlink.links": ["ok"],
    "nvlink.errors": ["skip"],
    "xid.events": ["skip"],
    "topology.matrix": ["ok"],
    "topology.p2p": ["ok"],
    "affinity.nic_distance": ["skip"],
    "firmware.gpu": ["skip"],
    "firmware.hca": ["ok"],
    "limits.memlock": ["ok"],
    "limits.cpu_governor": ["ok"],
    "limits.shm": ["skip"],
    "python.interpreter": ["skip"],
}
# the checks of the kernel-message table (nccldiag/knowledge/kmsg.toml): no kernel log in this bundle, each skips
KMSG_CHECKS = ["pcie_errors.bar"] + [c for a in ("pcie_errors", "ibcounters", "xid", "kernel") for c in kernlog.checks_of(a)]
HEALTHY.update({c: ["skip"] for c in KMSG_CHECKS})


# ---- (a) a healthy 8x H100 node -----------------------------------------------------------------


def test_healthy_h100_node_passes_every_check(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    code, rep = check_json(bundle)
    assert code == 0 and rep["exit_code"] == 0
    assert statuses(rep) == HEALTHY
    node = rep["nodes"][0]
    assert node["host"] == "gpu001" and node["status"] == "ok" and node["reachable"]
    assert all(f["host"] == "gpu001" for f in node["findings"])
    assert rep["areas"] == ["ssh", "system", "iommu", "pcie", "pcie_errors", "ib", "ibcounters", "roce", "gdr", "gpu",
                            "gpuhealth", "dcgm", "nvlink", "xid", "kernel", "topology", "affinity", "firmware", "limits",
                            "python"]
    msg = {f["check"]: f["message"] for f in node["findings"]}
    assert msg["gpu.inventory"].startswith("8x NVIDIA H100 80GB HBM3, driver 535.183.01, CUDA 12.2")
    assert msg["ib.port_state"].startswith("9 ports Active, 8x 400 Gb/s IB, 1x 200 Gb/s RoCE")
    assert msg["topology.p2p"] == "P2P OK between all 28 GPU pairs (nvidia-smi topo -p2p)"
    assert msg["topology.matrix"].endswith("GPU pairs: NV18 x28")
    assert msg["gdr.peermem"].startswith("nv_peer_mem loaded")
    assert msg["iommu.mode"].startswith("IOMMU off")
    assert msg["limits.memlock"].startswith("memlock unlimited")
    assert node["facts"]["gpu"]["driver_version"] == "535.183.01"

    code, text = check_table(bundle)
    assert code == 0
    assert "gpu001" in text and "1 node: 1 healthy, 0 with warnings, 0 unhealthy, 0 not checked" in text
    assert "FAIL" not in text and "WARN" not in text


# ---- (b) ACS redirect on a bridge ------------------------------------------------------------------


def test_acs_redirect_above_gpus_fails_the_node(tmp_path):
    # the EPYC root port's ACSCtl has SrcValid+ ReqRedir+ CmpltRedir+ and its bus range was elided by
    # the poster, so it may lead to the node's GPUs: judged as on their path
    node = dict(B.healthy_h100(), lspci=fixture("lspci/rccl547-epyc-matisse-gpp-bridge-acs-enabled-elided.txt"))
    bundle = write_bundle(tmp_path / "b", {"gpu001": node})
    code, rep = check_json(bundle)
    assert code == 1 and rep["exit_code"] == 1
    (acs,) = by_check(rep, "pcie.acs")
    assert acs["status"] == "fail" and acs["host"] == "gpu001"
    assert "1 on the path of GPUs or NICs" in acs["message"]
    assert acs["actual"] == {"0000:40:01.1": ["SrcValid", "ReqRedir", "CmpltRedir"]}
    assert "setpci -s 0000:40:01.1 ECAP_ACS+0x6.w=0000" in acs["fix"]
    assert rep["nodes"][0]["areas"]["pcie"] == "fail"
    rest = {k: v for k, v in statuses(rep).items() if not k.startswith("pcie.")}
    assert rest == {k: v for k, v in HEALTHY.items() if not k.startswith("pcie.")}

    code, text = check_table(bundle)
    assert code == 1
    assert "pcie.acs" in text and "FAIL" in text and "1 unhealthy" in text


def test_acs_redirect_only_under_the_nvme_switch_is_a_warning(tmp_path):
    # two excerpts of the same Dell H100 host's lspci: the GPU0 path (ACS off) and the PMC-Sierra
    # switch (ACS on) whose bus range 83-86 holds no GPU or NIC
    lspci = fixtures("lspci/gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt", "lspci/gpud-h100-dell-pmc-sierra-switch-acs-on.txt")
    bundle = write_bundle(tmp_path / "b", {"gpu001": dict(B.healthy_h100(), lspci=lspci)})
    code, rep = check_json(bundle)
    assert code == 0
    (acs,) = by_check(rep, "pcie.acs")
    assert acs["status"] == "warn" and "none known to lead to a GPU or NIC" in acs["message"]
    assert sorted(acs["actual"]) == ["0000:82:00.0", "0000:82:01.0", "0000:82:02.0", "0000:82:03.0"]
    assert status_of(rep, "pcie.link") == ["ok"]


# ---- (c) an InfiniBand port down --------------------------------------------------------------------


def test_ib_port_down_with_link_up_fails_with_the_subnet_manager_fix(tmp_path):
    node = B.healthy_h100()
    del node["ib_sysfs"]
    node["ibstat"] = fixture("ibstat/netop249-sriov-vf-cx6-state-down-physical-linkup-lid65535-spaces.txt")
    bundle = write_bundle(tmp_path / "b", {"gpu001": node})
    code, rep = check_json(bundle)
    assert code == 1
    (port,) = by_check(rep, "ib.port_state")
    assert port["status"] == "fail" and port["host"] == "gpu001"
    assert port["message"].startswith("mlx5_7 port 1 (InfiniBand): State Down, Physical state LinkUp")
    assert port["actual"] == "Down/LinkUp" and port["expected"] == "Active/LinkUp"
    assert "subnet manager" in port["fix"]
    assert by_check(rep, "ib.port_rate") == []  # no active port to compare
    # the RDMA port is still there, so GPUDirect and memlock are judged as on an RDMA node
    assert status_of(rep, "gdr.peermem") == ["ok"]

    code, text = check_table(bundle)
    assert code == 1 and "ib.port_state" in text and "mlx5_7 port 1" in text


def test_roce_port_polling_fails_and_disabled_port_warns(tmp_path):
    node = B.healthy_h100()
    del node["ib_sysfs"]
    node["ibstat"] = fixture("ibstat/gpud-h100-roce400g-down-polling-disabled.txt")
    code, rep = check_json(write_bundle(tmp_path / "b", {"gpu001": node}))
    assert code == 1
    ports = by_check(rep, "ib.port_state")
    assert [(p["status"], p["message"].split(":")[0]) for p in ports] == [
        ("warn", "mlx5_5 port 1 (Ethernet)"),
        ("fail", "mlx5_11 port 1 (Ethernet)"),
    ]
    assert "switched off or has no carrier" in ports[0]["message"] and "no link partner" in ports[1]["message"]
    # 400G ConnectX-7 and 100G ConnectX-6 Dx ports are compared within their own model
    assert status_of(rep, "ib.port_rate") == ["ok"]
    assert status_of(rep, "ib.roce_gid") == ["skip"]


# ---- (d) GPUs and RDMA without a peer-memory module ------------------------------------------------


def test_missing_peermem_fails_gpudirect(tmp_path):
    node = dict(B.healthy_h100(), proc_modules=fixture("lsmod-modules/azhpc-lsmod-nvidia-mlx4-no-peermem.txt"))
    bundle = write_bundle(tmp_path / "b", {"gpu001": node})
    code, rep = check_json(bundle)
    assert code == 1
    (peer,) = by_check(rep, "gdr.peermem")
    assert peer["status"] == "fail"
    assert "8 NVIDIA GPUs and 9 RDMA ports" in peer["message"] and "no GDRDMA" in peer["message"]
    assert "modprobe nvidia-peermem" in peer["fix"]
    assert "loaded: nvidia" in peer["evidence"] and "loaded: mlx4_ib" in peer["evidence"]
    rest = {k: v for k, v in statuses(rep).items() if k != "gdr.peermem"}
    assert rest == {k: v for k, v in HEALTHY.items() if k != "gdr.peermem"}

    code, text = check_table(bundle)
    assert code == 1 and "gdr.peermem" in text and "modprobe nvidia-peermem" in text


# ---- (e) a consumer box ---------------------------------------------------------------------------


def test_consumer_box_warns_on_iommu_says_p2p_as_information_and_passes(tmp_path):
    node = B.consumer_5090()
    # an AMD desktop's log: AMD-Vi active, no passthrough option -> translated
    node["iommu_dmesg"] = fixture("dmesg-iommu/amd-vi-unknown-option-on-blockquoted.txt")
    bundle = write_bundle(tmp_path / "b", {"ws01": node})
    code, rep = check_json(bundle)
    assert code == 0  # warnings only
    st = statuses(rep)
    # GeForce cards ship without P2P: information (ok), not a warning
    assert st["topology.p2p"] == ["ok"] and st["iommu.mode"] == ["warn"]
    assert st["gdr.peermem"] == ["skip"] and st["ib.present"] == ["skip"]
    assert "topology.p2p_nvlink" not in st  # PHB pair: no NVLink to complain about
    (p2p,) = by_check(rep, "topology.p2p")
    assert "GPU0-GPU1 (read GNS, PHB)" in p2p["message"]
    assert "NVIDIA GeForce RTX 5090: NVIDIA does not enable P2P on consumer cards" in p2p["fix"]
    assert "NCCL_P2P_DISABLE=1" in p2p["fix"]
    (mode,) = by_check(rep, "iommu.mode")
    assert "2 NVIDIA GPUs" in mode["message"] and "GPUDirect RDMA" not in mode["message"]
    assert rep["nodes"][0]["status"] == "warn"

    code, text = check_table(bundle)
    assert code == 0 and "iommu.mode" in text and "1 with warnings" in text
    assert "P2P is not offered between the GPUs of ws01" in text  # the information, with what NCCL does


# ---- one source changed on the healthy node -----------------------------------------------------------

def _lazy(rel, prefix=""):
    """A capture read when the test runs (where the root is absent, the test skips, not the module)."""
    return lambda: prefix + fixture(rel)


_PROC1 = _lazy("limits-ulimit/hotsos-proc-1-limits-memlock-64MiB.txt", "==> /proc/1/limits <==\n")

VARIANTS = [
    # (id, sources replaced (None: removed), expected statuses of the checks that change, exit code)
    ("iommu-translated-with-rdma", {"iommu_dmesg": _lazy("dmesg-iommu/amd-vi-unknown-option-on-blockquoted.txt")},
     {"iommu.mode": ["fail"]}, 1),
    ("pcie-path-bandwidth-limited", {"pcie_dmesg": _lazy("dmesg-pcie/mleng-h100-pcie-bandwidth-limited-by-gen4-switch.txt")},
     {"pcie.bandwidth_limited": ["warn"]}, 0),
    ("peermem-unknown", {"proc_modules": _lazy("lsmod-modules/nccl988-lsmod-grep-peermem-not-loaded-empty.txt")},
     {"gdr.peermem": ["warn"]}, 0),
    ("peermem-errors", {"gdr_dmesg": _lazy("lsmod-modules/gpud-dmesg-nvidia-peermem-invalid-context-errors.txt")},
     {"gdr.peermem_errors": ["warn"]}, 0),
    ("nvlink-inactive", {"nvlink_status": _lazy("nvidia-smi-nvlink/azhpc-v100-8gpu-inactive-links.txt")},
     {"gpu.nvlink": ["fail"]}, 1),
    ("ib-ethernet-ports-disabled", {"ib_sysfs": None, "ibstat": _lazy("ibstat/gpud-h100-ib-ndr-3-down-disabled.txt")},
     {"ib.port_state": ["warn", "warn", "warn"], "ib.port_rate": ["ok"], "ib.roce_gid": ["skip"]}, 0),
    # CONSTRUCTED ulimit lines without systemd's DefaultLimitMEMLOCK; PID 1's limits are captured
    ("memlock-services", {"ulimit": "memlock soft unlimited\nmemlock hard unlimited\n", "proc_limits": _PROC1},
     {"limits.memlock_services": ["warn"]}, 0),
]


@pytest.mark.parametrize("changes,expected,exit_code", [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS])
def test_one_source_changed_changes_only_its_check(tmp_path, changes, expected, exit_code):
    node = B.healthy_h100()
    for name, text in changes.items():
        if text is None:
            node.pop(name)
        else:
            node[name] = text() if callable(text) else text
    code, rep = check_json(write_bundle(tmp_path / "b", {"gpu001": node}))
    assert code == exit_code == rep["exit_code"]
    want = dict(HEALTHY)
    want.update(expected)
    assert statuses(rep) == want
    for check in expected:
        for f in by_check(rep, check):
            if f["status"] in ("warn", "fail"):
                assert f["fix"] and f["host"] == "gpu001"


# ---- several nodes ------------------------------------------------------------------------------


def test_consistency_names_the_node_with_another_driver(tmp_path):
    nodes = {f"gpu00{i}": B.healthy_h100(f"gpu00{i}", f"10.0.0.1{i}") for i in (1, 2, 3)}
    nodes["gpu002"]["gpu_query"] = B.h100_query_csv(driver="550.54.15")
    bundle = write_bundle(tmp_path / "b", nodes)
    code, rep = check_json(bundle)
    assert code == 0
    assert [n["host"] for n in rep["nodes"]] == ["gpu001", "gpu002", "gpu003"]
    assert rep["areas"][-1] == "consistency"
    (odd,) = [f for f in B.findings(rep) if f["area"] == "consistency" and f["status"] != "ok"]
    assert odd["check"] == "consistency.gpu.driver" and odd["host"] == "gpu002" and odd["status"] == "warn"
    assert odd["actual"] == "550.54.15" and odd["expected"] == "535.183.01"
    assert "the value on 2 of 3 nodes" in odd["message"]
    for host in ("gpu001", "gpu003"):
        assert status_of(rep, "consistency.all", host) == ["ok"]
    assert by_check(rep, "consistency.all", "gpu002") == []
    assert [n["status"] for n in rep["nodes"]] == ["ok", "warn", "ok"]

    code, text = check_table(bundle)
    assert code == 0 and "consistency.gpu.driver" in text and "gpu002" in text and "1 with warnings" in text


def test_an_area_summary_that_fails_is_an_error_on_its_node_and_the_others_are_still_compared(monkeypatch):
    """A bug in one area's summarize (CONSTRUCTED: the gpu area's made to raise on the second node) is said on
    that node, never passed over in silence; the other areas are compared as ever."""
    from nccldiag.areas import all_areas, gpu
    from nccldiag.check import engine
    from nccldiag.model.raw import RawNode

    nodes = {f"gpu00{i}": B.healthy_h100(f"gpu00{i}", f"10.0.0.1{i}") for i in (1, 2, 3)}
    raws = [RawNode(host=h, sections=dict(s), rcs={k: 0 for k in s}) for h, s in nodes.items()]
    assert not [f for f in engine.analyze(raws, all_areas()).findings if f.check.endswith(".summarize")]
    real, calls = gpu.summarize, []

    def summarize(facts):
        calls.append(facts)
        if len(calls) == 2:
            raise KeyError("bus_id")
        return real(facts)

    monkeypatch.setattr(gpu, "summarize", summarize)
    report = engine.analyze(raws, all_areas())
    (bad,) = [f for f in report.findings if f.check == "gpu.summarize"]
    assert bad.status.value == "error" and bad.host == "gpu002" and "KeyError" in bad.message
    assert report.exit_code != 0
    assert [f.status.value for f in report.findings if f.check == "consistency.all"] == ["ok"] * 3


def test_consistency_names_the_node_with_slower_ib(tmp_path):
    nodes = {f"gpu00{i}": B.healthy_h100(f"gpu00{i}", f"10.0.0.1{i}") for i in (1, 2, 3, 4)}
    hdr = nodes["gpu004"]
    del hdr["ib_sysfs"]
    hdr["ibstat"] = fixture("ibstat/gpud-a100-azure-ibstatus-all-active.txt")  # ibstatus: 8 HDR ports and a 40G Ethernet one
    code, rep = check_json(write_bundle(tmp_path / "b", nodes))
    assert code == 0
    odd = [f for f in B.findings(rep) if f["area"] == "consistency" and f["status"] != "ok"]
    assert {f["host"] for f in odd} == {"gpu004"}
    (active,) = [f for f in odd if f["check"] == "consistency.ib.active_ports"]
    assert active["expected"] == "8x 400 Gb/s IB, 1x 200 Gb/s RoCE"
    assert active["actual"] == "8x 200 Gb/s IB, 1x 40 Gb/s RoCE"
    assert "the value on 3 of 4 nodes" in active["message"]
    # ibstatus shows no firmware: the node is not held to the others' firmware
    assert not [f for f in odd if f["check"] == "consistency.ib.firmware"]


def test_unreachable_node_is_an_error_and_exit_3(tmp_path):
    nodes = {"gpu001": B.healthy_h100(), "gpu002": {}}
    errors = {"gpu002": {"kind": "auth", "message": "gpu002: no accepted key (tried ~/.ssh/id_ed25519)"}}
    bundle = write_bundle(tmp_path / "b", nodes, errors=errors)
    code, rep = check_json(bundle)
    assert code == 3 and rep["exit_code"] == 3
    (auth,) = B.findings(rep, "gpu002")
    assert (auth["check"], auth["status"]) == ("ssh.auth", "error")
    assert auth["message"].startswith("gpu002: no accepted key") and auth["fix"] == FIXES["auth"]
    node = rep["nodes"][1]
    assert node["reachable"] is False and node["areas"]["ssh"] == "error"
    # one reachable node: nothing to compare
    assert not [f for f in B.findings(rep) if f["area"] == "consistency"]

    code, text = check_table(bundle)
    assert code == 3 and "ssh.auth" in text and "1 not checked" in text


def test_transport_failure_finding_names_its_host(tmp_path):
    errors = {"gpu002": {"kind": "refused", "message": "connection refused"}}
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100(), "gpu002": {}}, errors=errors)
    _, rep = check_json(bundle)
    (refused,) = B.findings(rep, "gpu002")
    assert refused["host"] == "gpu002"


def test_node_with_an_unchecked_part_is_not_counted_healthy(tmp_path):
    # the P2P copy test's output cut off mid-line (CONSTRUCTED): topology.p2p_copy is an error
    node = dict(B.healthy_h100(), p2p_copy='{"pairs": [')
    bundle = write_bundle(tmp_path / "b", {"gpu001": node})
    code, rep = check_json(bundle)
    assert code == 3 and status_of(rep, "topology.p2p_copy") == ["error"]
    code, text = check_table(bundle)
    assert code == 3 and "0 healthy" in text


def test_node_to_node_ssh_failure_is_reported_on_the_source_node(tmp_path):
    nodes = {h: B.healthy_h100(h, f"10.0.0.1{i}") for i, h in enumerate(("gpu001", "gpu002", "gpu003"), 1)}
    # the mesh command's output lines as mesh.build_command prints them (CONSTRUCTED)
    nodes["gpu001"]["ssh_mesh"] = (
        "@@mesh gpu002 0 \n@@mesh gpu003 255 Host key verification failed.\n"
    )
    extra = {"gpu001": {"mesh_targets": ["gpu002", "gpu003"]}}
    bundle = write_bundle(tmp_path / "b", nodes, extra=extra)
    code, rep = check_json(bundle)
    assert code == 1
    (mesh,) = by_check(rep, "ssh.node_to_node")
    assert mesh["host"] == "gpu001" and mesh["status"] == "fail"
    assert mesh["actual"] == ["gpu003: Host key verification failed."]
    assert "1 of 2 nodes" in mesh["message"] and "ssh-keyscan" in mesh["fix"]

    code, text = check_table(bundle)
    assert code == 1 and "ssh.node_to_node" in text


def test_bundle_areas_limit_what_is_judged(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()}, areas=["system", "gpu", "topology"])
    code, rep = check_json(bundle)
    assert code == 0
    assert rep["areas"] == ["ssh", "system", "gpu", "topology"]
    assert {f["area"] for f in B.findings(rep)} == {"ssh", "system", "gpu", "topology"}
    # --only overrides what the bundle recorded
    code, rep = check_json(bundle, "--only", "ib")
    assert {f["area"] for f in B.findings(rep)} == {"ssh", "system", "ib"}


def test_every_check_seen_and_every_ssh_kind_is_documented(tmp_path):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text(encoding="utf-8")
    seen = set()
    nodes = {
        "gpu001": B.healthy_h100(),
        "gpu002": B.healthy_h100("gpu002", "10.0.0.12"),
        "gpu003": B.healthy_h100("gpu003", "10.0.0.13"),
        "ws01": B.consumer_5090(),
    }
    nodes["gpu003"].update(
        proc_modules=fixture("lsmod-modules/azhpc-lsmod-nvidia-mlx4-no-peermem.txt"),
        pcie_dmesg=fixture("dmesg-pcie/mleng-h100-pcie-bandwidth-limited-by-gen4-switch.txt"),
        gdr_dmesg=fixture("lsmod-modules/gpud-dmesg-nvidia-peermem-invalid-context-errors.txt"),
    )
    _, rep = check_json(write_bundle(tmp_path / "b", nodes))
    seen.update(f["check"] for f in B.findings(rep))
    assert {"consistency.all", "consistency.gpu.model", "pcie.bandwidth_limited", "gdr.peermem_errors"} <= seen
    for check in seen:
        if check.startswith("consistency.") and check != "consistency.all":
            assert f"`{check[len('consistency.'):]}`" in docs, check  # the key, in the table of compared keys
        else:
            assert f"`{check}`" in docs, check
    for kind in FIXES:
        assert f"| `ssh.{kind}` |" in docs and FIXES[kind] in docs
