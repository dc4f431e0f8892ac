"""Every real node output under ../shared/fixtures/node, fed to the source(s) it belongs to, through every
area's parse, judge and summarize: no exception and no ``error`` status. The net under the next variation."""
import pytest

from nccldiag.benchmarks import perftest
from nccldiag.areas import all_areas
from nccldiag.check.engine import analyze_node
from nccldiag.model.findings import Status
from nccldiag.model.raw import RawNode
from tests import real

# Each fixture kind (a directory of ../shared/fixtures/node) and the collection sources it is the output of.
# A kind that fits several sources (a full `nvidia-smi -q` is also what gpu_query falls back to) is fed to each.
KIND_SOURCES = {
    "cpufreq-governor": ["cpufreq"],
    "dmesg-iommu": ["iommu_dmesg"],
    "dmesg-pcie": ["pcie_dmesg"],
    "gpu-throttle": ["nvidia_smi_q", "nvidia_smi_full"],
    "ibdev2netdev": ["ibdev2netdev"],
    "ibstat": ["ibstat"],
    "ibv_devinfo": ["ibv_devinfo"],
    "limits-ulimit": ["limits_conf", "proc_limits", "ulimit"],
    "lsmod-modules": ["proc_modules", "gdr_dmesg"],
    "lspci": ["lspci"],
    "nvidia-smi-ecc-rowremap": ["nvidia_smi_q", "nvidia_smi_full"],
    "nvidia-smi-nvlink": ["nvlink_status"],
    "nvidia-smi-nvlink-status": ["nvlink_status"],
    "nvidia-smi-q": ["nvidia_smi_q", "gpu_query", "nvidia_smi_full"],
    "nvidia-smi-topo-m": ["topo_m"],
    "nvidia-smi-topo-p2p": ["topo_p2p_r", "topo_p2p_w"],
    "proc-cmdline": ["proc_cmdline"],
    "rdma-link": ["rdma_link"],
    "show-gids": ["show_gids"],
    "sysfs-infiniband": ["ib_sysfs"],
    "kernel-xid": ["kernel_log"],
    "link-flaps": ["kernel_log"],
    "fabric-manager": ["fabricmanager", "nvidia_smi_full"],
    "firmware": ["sw_versions", "kernel_log", "nvidia_smi_full"],
    "ib-counters": ["ib_counters"],
    "pcie-aer": ["aer_sysfs", "kernel_log", "nvidia_smi_full"],
    "roce-qos": ["roce_qos", "arp_sysctl"],
}
# Kinds no area of this checkout reads as a node source, and why.
NOT_AN_AREA_SOURCE = {
    "perftest": "read by benchmarks.perftest for `nccldiag log` (tested below), not collected by check",
    "nccl-tests": "read by benchmarks.nccltests for `nccldiag log`, not a node source",
}


def _cases():
    if not real.AVAILABLE:
        return [pytest.param(real.ABSENT, real.ABSENT, marks=pytest.mark.skip(reason=real.REASON))]
    out = []
    for kind in sorted(p.name for p in real.NODE.iterdir() if p.is_dir()):
        for name in real.names(real.NODE / kind):
            out.append(pytest.param(kind, name, id=f"{kind}/{name}"))
    return out


def test_every_fixture_kind_is_mapped_or_named():
    real.require()
    kinds = {p.name for p in real.NODE.iterdir() if p.is_dir()}
    unknown = kinds - set(KIND_SOURCES) - set(NOT_AN_AREA_SOURCE)
    assert not unknown, f"fixture kinds with no area source and no reason: {sorted(unknown)}"
    sources = {s.name for a in all_areas() for s in a.SOURCES}
    assert {s for ss in KIND_SOURCES.values() for s in ss} <= sources


@pytest.mark.parametrize("kind,name", _cases())
def test_fixture_through_every_area_has_no_error(kind, name):
    text = real.node_text(kind, name)
    if kind not in KIND_SOURCES:
        assert kind in NOT_AN_AREA_SOURCE
        if kind == "perftest":
            perftest.parse_perftest(text)
        return
    areas = all_areas()
    for source in KIND_SOURCES[kind]:
        report = analyze_node(RawNode(host="n1", sections={source: text}), areas)
        errors = [f"{f.check}: {f.message}" for f in report.findings if f.status == Status.ERROR]
        assert not errors, f"{kind}/{name} as {source}: {errors}"
        for area in areas:
            facts = report.facts.get(area.NAME)
            if facts is not None and hasattr(area, "summarize"):
                area.summarize(facts)  # compared across nodes: must not raise either
