"""InfiniBand/RoCE area: parsing real sysfs trees and tool outputs, merging, judgement, the sysfs snippet."""
import os
import subprocess
from pathlib import Path

import pytest

from nccldiag.areas.base import parse_dump
from nccldiag.benchmarks import perftest
from nccldiag.benchmarks.checks import judge_perftest
from nccldiag.areas import infiniband as ib
from nccldiag.areas.base import NodeFacts
from nccldiag.areas.pcie import node_rdma
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real
from tests.trees import write_tree

SUBDIR_SOURCE = {
    "sysfs-infiniband": "ib_sysfs",
    "ibstat": "ibstat",
    "ibv_devinfo": "ibv_devinfo",
    "show-gids": "show_gids",
    "ibdev2netdev": "ibdev2netdev",
    "rdma-link": "rdma_link",
}
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"


def text(subdir: str, name: str) -> str:
    return real.node_text(subdir, name)


def facts_of(subdir: str, name: str) -> ib.IbFacts:
    return ib.parse({SUBDIR_SOURCE[subdir]: text(subdir, name)})


def by_check(findings, check):
    return [f for f in findings if f.check == check]


def statuses(findings, check):
    return sorted(f.status.value for f in by_check(findings, check))


# ---- every fixture -------------------------------------------------------------------------------


def _all_fixtures():
    if not real.AVAILABLE:
        yield pytest.param("", "", real.ABSENT, marks=pytest.mark.skip(reason=real.REASON), id=real.ABSENT)
        return
    for subdir, source in SUBDIR_SOURCE.items():
        for name in real.names(real.NODE / subdir):
            yield pytest.param(subdir, source, name, id=f"{subdir}/{name}")


@pytest.mark.parametrize("subdir,source,name", list(_all_fixtures()))
def test_every_fixture_parses_judges_and_summarizes(subdir, source, name):
    facts = ib.parse({source: text(subdir, name)})
    assert facts is not None and facts.ports, "every fixture lists at least one port"
    assert facts.sources == [source]
    found = ib.judge(facts, NodeFacts("h"))
    assert found and all(f.area == "ib" for f in found)
    assert ib.summarize(facts)["ports"] == str(len(facts.ports))


def test_fixture_counts():
    counts = {d: len(list(real.node(d).glob("*.txt"))) for d in list(SUBDIR_SOURCE) + ["perftest"]}
    assert counts == {"sysfs-infiniband": 4, "ibstat": 8, "ibv_devinfo": 3, "show-gids": 3,
                      "ibdev2netdev": 1, "rdma-link": 3, "perftest": 1}


# ---- sysfs ------------------------------------------------------------------------------------------


def test_sysfs_h100_eight_ndr_ib_plus_ethernet_bond():
    f = facts_of("sysfs-infiniband", "gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")
    assert f.devices == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    ibp = [p for p in f.ports if p.link_layer == "InfiniBand"]
    assert len(ibp) == 8
    assert {(p.state, p.phys_state, p.rate, p.rate_text, p.hca_type, p.fw_ver) for p in ibp} == {
        ("Active", "LinkUp", 400.0, "400 Gb/sec (4X NDR)", "MT4129", "28.41.1000")}
    bond = f.port("mlx5_bond_0")
    assert (bond.link_layer, bond.rate, bond.rate_text, bond.hca_type, bond.fw_ver, bond.board_id) == (
        "Ethernet", 200.0, "200 Gb/sec (2X NDR)", "MT41692", "32.38.3056", "MT_0000000884")
    assert bond.gids == [] and bond.gids_source is None  # the tree has no GID files
    found = ib.judge(f, NodeFacts("h"))
    (state,) = by_check(found, "ib.port_state")
    assert state.status is Status.OK
    assert state.message.startswith("9 ports Active, 8x 400 Gb/s IB, 1x 200 Gb/s RoCE")
    assert statuses(found, "ib.port_rate") == ["ok"]  # the bond is another model: not a slow rail
    assert statuses(found, "ib.roce_gid") == ["skip"]  # no GID table for the RoCE port
    assert ib.summarize(f) == {"firmware": "MT4129 28.41.1000; MT41692 32.38.3056",
                               "active_ports": "8x 400 Gb/s IB, 1x 200 Gb/s RoCE", "ports": "9"}


def test_sysfs_node_exporter_iwarp_and_dual_port_mlx4_ignores_pci_and_net_files():
    f = facts_of("sysfs-infiniband", "node_exporter-sys-ttar-infiniband-pci-net.txt")
    assert [(p.device, p.port) for p in f.ports] == [("i40iw0", 1), ("mlx4_0", 1), ("mlx4_0", 2)]
    assert f.port("i40iw0").rate_text == "10 Gb/sec (4X)" and f.port("i40iw0").rate == 10.0
    assert f.port("mlx4_0", 2).rate == 40.0 and f.port("mlx4_0", 2).hca_type == "MT4099"
    assert all(p.state == "Active" and p.phys_state == "LinkUp" for p in f.ports)


def test_sysfs_procfs_malformed_values_and_missing_hca_type():
    f = facts_of("sysfs-infiniband", "procfs-fixtures-ttar-infiniband-pci.txt")
    assert f.devices == ["hfi1_0", "mlx4_0", "mlx5_0"]
    assert f.port("hfi1_0").hca_type is None and f.port("hfi1_0").rate == 100.0
    assert f.port("mlx4_0", 2).link_layer == "InfiniBand"  # value followed by an extra blank line
    odd = f.port("mlx5_0")
    assert odd.phys_state == "ACTIVE"  # a port state written where a physical state belongs: kept as is
    assert odd.node_guid == "0a7f:bc12:45ef:d23b"  # a device file without a trailing newline
    assert (odd.state, odd.rate, odd.rate_text) == ("Active", 25.0, "25 Gb/sec (1X EDR)")


def test_sysfs_unknown_phys_state_with_placeholder_device():
    f = facts_of("sysfs-infiniband", "azhpc-endure-port-unknown-physstate.txt")
    (p,) = f.ports
    assert (p.device, p.state, p.phys_state, p.rate) == ("<dev>", "Active", "Unknown", 5.0)
    assert statuses(ib.judge(f), "ib.port_state") == ["ok"]  # NCCL needs the port Active; it is


# ---- ibstat / ibstatus --------------------------------------------------------------------------------


def test_ibstat_roce_down_polling_fails_and_disabled_warns():
    f = facts_of("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    assert len(f.ports) == 12 and all(p.link_layer == "Ethernet" for p in f.ports)
    assert [p.device for p in f.ports][:4] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]  # natural order
    polling = f.port("mlx5_11")
    assert (polling.state, polling.phys_state, polling.rate, polling.hca_type) == ("Down", "Polling", 40.0, "MT4129")
    assert f.port("mlx5_5").phys_state == "Disabled"
    assert sum(p.state == "Active" for p in f.ports) == 10
    found = ib.judge(f)
    states = {f_.message.split(":")[0]: f_ for f_ in by_check(found, "ib.port_state")}
    assert set(states) == {"mlx5_11 port 1 (Ethernet)", "mlx5_5 port 1 (Ethernet)"}
    bad = states["mlx5_11 port 1 (Ethernet)"]
    assert bad.status is Status.FAIL
    assert (bad.actual, bad.expected) == ("Down/Polling", "Active/LinkUp")
    assert "Polling" in bad.message and "10 of the node's 12 ports Active" in bad.message
    assert "ibstat mlx5_11 port 1: State: Down" in bad.evidence
    assert "mlxlink -d mlx5_11" in bad.fix
    dis = states["mlx5_5 port 1 (Ethernet)"]
    # a RoCE port reads Disabled switched off or unplugged alike: the fix tells the two apart
    assert dis.status is Status.WARN and "switched off or has no carrier" in dis.message
    assert "administratively" not in dis.message
    assert "NCCL_IB_HCA" in dis.fix and "`ip link show" in dis.fix and "NO-CARRIER" in dis.fix
    # 100G ConnectX-6 Dx frontend ports are not compared with the 400G ConnectX-7 rails
    assert statuses(found, "ib.port_rate") == ["ok"]
    assert ib.summarize(f)["active_ports"] == "6x 400 Gb/s RoCE, 4x 100 Gb/s RoCE"


def test_ibstat_mixed_ib_and_disabled_ethernet():
    f = facts_of("ibstat", "gpud-h100-ib-ndr-3-down-disabled.txt")
    ib_ports = [p for p in f.ports if p.link_layer == "InfiniBand"]
    assert len(ib_ports) == 8 and {p.sm_lid for p in ib_ports} == {"334"}
    assert {p.rate for p in ib_ports} == {400.0}
    down = [p.device for p in f.ports if p.state == "Down"]
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]
    assert all(f.port(d).phys_state == "Disabled" and f.port(d).link_layer == "Ethernet" for d in down)
    found = ib.judge(f)
    assert statuses(found, "ib.port_state") == ["warn", "warn", "warn"]
    assert ib.summarize(f)["firmware"] == "MT4125 22.38.1002; MT4129 28.39.1002"


def test_ibstat_space_indented_all_active():
    f = facts_of("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt")
    assert len(f.ports) == 9
    assert f.port("mlx5_bond_0").link_layer == "Ethernet" and f.port("mlx5_bond_0").hca_type == "MT41692"
    assert f.port("mlx5_0").lid == "128"
    found = ib.judge(f)
    assert [x.status for x in by_check(found, "ib.port_state")] == [Status.OK]


def test_ibstat_ibpanic_stderr_line_ignored():
    f = facts_of("ibstat", "gpud-a100-azure-ib-hdr-ibpanic-mlx5_8.txt")
    assert f.devices == [f"mlx5_{i}" for i in range(8)]  # mlx5_8 only appears in the ibpanic line
    assert {(p.state, p.rate, p.hca_type, p.fw_ver) for p in f.ports} == {("Active", 200.0, "MT4124", "20.41.1000")}


def test_ibstatus_format_with_ethernet_port():
    f = facts_of("ibstat", "gpud-a100-azure-ibstatus-all-active.txt")
    assert len(f.ports) == 9
    eth = f.port("mlx5_8")
    assert (eth.state, eth.phys_state, eth.rate, eth.rate_text, eth.link_layer) == (
        "Active", "LinkUp", 40.0, "40 Gb/sec (4X QDR)", "Ethernet")
    assert f.port("mlx5_0").sm_lid == "0x1" and f.port("mlx5_0").lid == "0x33bf"
    f2 = facts_of("ibstat", "azhpc-ibstatus-ethernet-and-ib-hdr.txt")
    assert [(p.device, p.link_layer, p.rate) for p in f2.ports] == [
        ("mlx5_an0", "Ethernet", 40.0), ("mlx5_ib0", "InfiniBand", 200.0)]


def test_ibstat_truncated_block_down_disabled():
    f = facts_of("ibstat", "gpud99-cx6dx-down-disabled-truncated-by-poster.txt")
    (p,) = f.ports
    assert (p.device, p.state, p.phys_state, p.rate, p.link_layer) == ("mlx5_8", "Down", "Disabled", None, None)
    (finding,) = by_check(ib.judge(f), "ib.port_state")
    assert finding.status is Status.WARN


def test_ibstat_down_with_link_up_and_no_lid_fails_pointing_at_subnet_manager():
    f = facts_of("ibstat", "netop249-sriov-vf-cx6-state-down-physical-linkup-lid65535-spaces.txt")
    (p,) = f.ports
    assert (p.state, p.phys_state, p.lid, p.link_layer) == ("Down", "LinkUp", "65535", "InfiniBand")
    (finding,) = by_check(ib.judge(f), "ib.port_state")
    assert finding.status is Status.FAIL
    assert "sminfo" in finding.fix and "subnet manager" in finding.fix


# ---- ibv_devinfo ----------------------------------------------------------------------------------------


def test_ibv_devinfo_port_down_and_cut_block():
    f = facts_of("ibv_devinfo", "deepep60-cx6dx-eth-port-down-mtu1024-fragment.txt")
    # mlx5_13's block was cut before its port section: the device exists (phys_port_cnt 1), its state is unknown
    assert [(p.device, p.state, p.link_layer, p.mtu, p.hca_type, p.fw_ver) for p in f.ports] == [
        ("mlx5_12", "Down", "Ethernet", 1024, "MT4125", "22.38.1900"),
        ("mlx5_13", None, None, None, "MT4129", "28.39.2048")]
    assert "no port section" in f.ports[1].lines[0]
    assert statuses(ib.judge(f), "ib.port_state") == ["fail"]
    assert ib.summarize(f)["active_ports"] is None  # an unknown state is never compared across nodes


def test_ibv_devinfo_renamed_hcas():
    f = facts_of("ibv_devinfo", "azhpcimages44-azure-hbv2-renamed-hcas-fragment.txt")
    cut, p = f.ports  # natural order: ibP... before rdmaP...
    assert (p.device, p.state, p.link_layer, p.hca_type, p.fw_ver, p.board_id) == (
        "rdmaP23800p0s2", "Active", "Ethernet", "MT4118", "14.25.8102", "MSF0010110035")
    # the second hca_id block was cut after hw_ver: the device is listed, its port state unknown
    assert (cut.device, cut.port, cut.state) == ("ibP57247p0s2", 1, None)
    assert "state of 1 port not reported" in next(x for x in ib.judge(f) if x.check == "ib.port_state").message


def test_ibv_devinfo_verbose_port_rate_and_gids_through_markdown_bold():
    f = facts_of("ibv_devinfo", "k8srdma164-ibv_devinfo-v-port-25g-roce-gid-markdown-bold.txt")
    (p,) = f.ports
    assert (p.device, p.state, p.phys_state, p.rate, p.rate_text, p.mtu) == (
        "?", "Active", "LinkUp", 25.0, "1X 25.0 Gbps", 4096)
    assert [(g.index, g.ipv4, g.type) for g in p.gids] == [(14, "192.168.6.6", None), (15, "192.168.6.6", None)]
    (gid,) = by_check(ib.judge(f), "ib.roce_gid")
    assert gid.status is Status.OK and "version not reported" in gid.message


# ---- show_gids / ibdev2netdev / rdma link ------------------------------------------------------------------


def test_show_gids_classic_table():
    f = facts_of("show-gids", "husky-readme-mlx5_0-rdma0-v1-v2.txt")
    (p,) = f.ports
    assert p.netdev == "rdma0" and p.gids_source == "show_gids"
    assert [(g.index, g.type, g.ipv4, g.link_local) for g in p.gids] == [
        (0, "RoCE v1", None, True), (1, "RoCE v2", None, True),
        (2, "RoCE v1", "192.168.211.242", False), (3, "RoCE v2", "192.168.211.242", False)]


def test_show_gids_trailing_blanks_three_ports():
    f = facts_of("show-gids", "multi-mlx5-eth0-2-trailing-double-space-partial.txt")
    assert [(p.device, p.netdev, len(p.gids)) for p in f.ports] == [("mlx5_0", "eth0", 4), ("mlx5_1", "eth1", 4),
                                                                    ("mlx5_2", "eth2", 4)]
    assert f.port("mlx5_2").gids[3].ipv4 == "25.11.128.34"


def test_show_gids_bond_without_ipv4_with_ethernet_port_state_fails_when_alone():
    gids = text("show-gids", "cn-notes-huawei-hrn3-v2-only-and-mlx5-bond1-no-ipv4.txt")
    f = ib.parse({"show_gids": gids})
    assert [g.type for g in f.port("hrn3_bond_0").gids] == ["RoCE v2", "RoCE v2"]
    assert [g.ipv4 for g in f.port("mlx5_bond_0").gids] == [None, None]
    # constructed, not captured: rdma link lines giving both bonds Active, so the GID check can run
    link = ("link hrn3_bond_0/1 state ACTIVE physical_state LINK_UP netdev bond0\n"
            "link mlx5_bond_0/1 state ACTIVE physical_state LINK_UP netdev bond1\n")
    f = ib.parse({"show_gids": gids, "rdma_link": link})
    for p in f.ports:
        p.link_layer = "Ethernet"
    found = by_check(ib.judge(f), "ib.roce_gid")
    assert [x.status for x in found] == [Status.WARN]  # hrn3_bond_0 has an IPv4 v2 GID: RDMA can still route
    assert "mlx5_bond_0 port 1 (netdev bond1)" in found[0].message and "ip addr add" in found[0].fix
    # without the other port, this node has no routable RoCE port at all
    f.ports = [p for p in f.ports if p.device == "mlx5_bond_0"]
    (only,) = by_check(ib.judge(f), "ib.roce_gid")
    assert only.status is Status.FAIL and "only link-local GIDs" in only.message


def test_ibdev2netdev_annotated_column_output():
    f = facts_of("ibdev2netdev", "imbue4-h100-cx7-ib-cx6-eth-column-t-annotated.txt")
    assert len(f.ports) == 12
    assert f.port("mlx5_0").netdev == "ibp26s0" and f.port("mlx5_0").netdev_state == "Down"
    assert f.port("mlx5_7").netdev == "enp157s0f0np0" and f.port("mlx5_7").netdev_state == "Up"
    assert all(p.state is None for p in f.ports)  # the netdev state is not the RDMA port state
    assert [x.status for x in ib.judge(f)] == [Status.SKIP]
    assert not any("#" in line for p in f.ports for line in p.lines)


@pytest.mark.parametrize("name,expected", [
    ("3fs283-cx6dx-2port-trailing-space.txt", [("mlx5_0", "p1p1"), ("mlx5_1", "p1p2")]),
    ("spiderpool-roce-cx-rdma-link-indented.txt", [("mlx5_0", "ens6f0np0"), ("mlx5_1", "ens6f1np1")]),
    ("spiderpool-sriov-ib-vf-rdma-link-indented.txt",
     [("mlx5_27", "net2"), ("mlx5_54", "net1"), ("mlx5_67", "net4"), ("mlx5_98", "net3")]),
])
def test_rdma_link(name, expected):
    f = facts_of("rdma-link", name)
    assert [(p.device, p.netdev) for p in f.ports] == expected
    assert {(p.state, p.phys_state) for p in f.ports} == {("Active", "LinkUp")}


def test_rdma_link_old_iproute2_form_and_ib_attributes():
    # constructed, not captured: the iproute2 4.x layout and an IB port line with LIDs
    f = ib.parse({"rdma_link": "1/1: mlx5_0/1: state DOWN physical_state POLLING netdev ens1f0\n"
                                "link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 75 sm_lid 334 lmc 0 "
                                "state ACTIVE physical_state LINK_UP\n"})
    assert (f.port("mlx5_0").state, f.port("mlx5_0").phys_state, f.port("mlx5_0").netdev) == ("Down", "Polling", "ens1f0")
    assert (f.port("mlx5_1").lid, f.port("mlx5_1").sm_lid) == ("75", "334")


# ---- merging ---------------------------------------------------------------------------------------------


def test_sysfs_wins_over_tools_and_tools_fill_gaps():
    sysfs = text("sysfs-infiniband", "gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")
    ibstat = text("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt")
    # constructed, not captured: rdma link disagreeing with sysfs about mlx5_0, naming a netdev
    link = "link mlx5_0/1 state DOWN physical_state POLLING netdev ibp26s0\n"
    f = ib.parse({"ib_sysfs": sysfs, "ibstat": ibstat, "rdma_link": link})
    p = f.port("mlx5_0")
    assert (p.state, p.phys_state) == ("Active", "LinkUp")  # sysfs kept
    assert p.netdev == "ibp26s0"  # filled by rdma link
    assert p.lid == "128"  # filled by ibstat (the sysfs tree has no lid file)
    assert p.sources == ["ib_sysfs", "rdma_link", "ibstat"]
    assert any("rdma_link reports state Down, kept Active from ib_sysfs" in n for n in f.notes)
    assert len(f.ports) == 9
    assert [x.status for x in by_check(ib.judge(f), "ib.port_state")] == [Status.OK]


def test_gid_table_from_show_gids_fills_sysfs_without_gids():
    # constructed, not captured: a one-port sysfs tree for the port show_gids describes
    sysfs = ("==> /sys/class/infiniband/mlx5_0/ports/1/state <==\n4: ACTIVE\n"
             "==> /sys/class/infiniband/mlx5_0/ports/1/link_layer <==\nEthernet\n")
    f = ib.parse({"ib_sysfs": sysfs, "show_gids": text("show-gids", "husky-readme-mlx5_0-rdma0-v1-v2.txt")})
    (p,) = f.ports
    assert p.gids_source == "show_gids" and p.netdev == "rdma0" and len(p.gids) == 4
    (gid,) = by_check(ib.judge(f), "ib.roce_gid")
    assert gid.status is Status.OK and "GID 3 RoCE v2 192.168.211.242" in gid.message


# ---- judgement ------------------------------------------------------------------------------------------


def _port(device, state="Active", phys="LinkUp", rate=400.0, ll="InfiniBand", hca="MT4129", **kw):
    return ib.IbPort(device=device, port=1, state=state, phys_state=phys, rate=rate, link_layer=ll, hca_type=hca,
                     fw_ver="28.39.1002", **kw)


def test_slower_port_of_the_same_model_warns():
    # constructed, not captured: 8 CX-7 IB ports, one trained at 200 (2X NDR)
    ports = [_port(f"mlx5_{i}", rate_text="400 Gb/sec (4X NDR)") for i in range(8)]
    ports[3].rate, ports[3].rate_text = 200.0, "200 Gb/sec (2X NDR)"
    found = by_check(ib.judge(ib.IbFacts(ports=ports)), "ib.port_rate")
    assert [x.status for x in found] == [Status.WARN]
    assert found[0].message.startswith("mlx5_3 port 1: 200 Gb/s (2X NDR), slower than the other 7 active IB MT4129 ports")
    assert (found[0].actual, found[0].expected) == (200.0, 400.0)
    assert "mlxlink -d mlx5_3" in found[0].fix


def test_rate_is_not_compared_across_link_layers():
    # constructed, not captured: 400G IB rails and a 100G RoCE frontend port of the same model
    ports = [_port("mlx5_0"), _port("mlx5_1"), _port("mlx5_2", rate=100.0, ll="Ethernet")]
    assert statuses(ib.judge(ib.IbFacts(ports=ports)), "ib.port_rate") == ["ok"]


CORI_GPU_IBSTAT = (Path(__file__).resolve().parents[1] / "cases"
                   / "net-gaps76c-sparticlesteve-cori-gpu-ibstat-mlx4-mlx5-ports-active-healthy" / "ibstat.txt")


def test_rate_is_not_compared_across_subnet_managers():
    # captured: a Cori-GPU node's ConnectX-5 ports, EDR (100) under SM lid 10 and FDR (56) under SM lids 43 and 344
    f = ib.parse({"ibstat": CORI_GPU_IBSTAT.read_text()})
    assert {p.name: (p.rate, p.sm_lid) for p in f.ports if p.hca_type == "MT4119" and not p.roce} == {
        "mlx5_0 port 1": (100.0, "10"), "mlx5_1 port 1": (56.0, "43"), "mlx5_2 port 1": (100.0, "10"),
        "mlx5_4 port 1": (100.0, "10"), "mlx5_5 port 1": (56.0, "344"), "mlx5_6 port 1": (100.0, "10"),
        "mlx5_7 port 1": (56.0, "43")}
    (rate,) = by_check(ib.judge(f), "ib.port_rate")
    assert rate.status is Status.OK and "per model and subnet" in rate.message
    assert "4x 100 Gb/s IB MT4119 (SM lid 10)" in rate.message and "2x 56 Gb/s IB MT4119 (SM lid 43)" in rate.message


def test_slower_port_under_the_same_subnet_manager_still_warns():
    # constructed, not captured: the Cori-GPU EDR ports with one of them trained at FDR under the same SM
    text = CORI_GPU_IBSTAT.read_text().replace("Rate: 100\n\t\tBase lid: 64", "Rate: 56\n\t\tBase lid: 64")
    assert text != CORI_GPU_IBSTAT.read_text()
    found = by_check(ib.judge(ib.parse({"ibstat": text})), "ib.port_rate")
    assert [x.status for x in found] == [Status.WARN]
    assert found[0].message.startswith("mlx5_2 port 1: 56 Gb/s, slower than the other 3 active IB MT4119 (SM lid 10) ports")


@pytest.mark.parametrize("state,phys,status,words", [
    ("Down", "Polling", Status.FAIL, "no link partner"),
    ("Down", "Disabled", Status.WARN, "administratively disabled"),
    ("Init", "LinkUp", Status.FAIL, "not brought to Active"),
    ("Armed", "LinkUp", Status.FAIL, "not brought to Active"),
    ("Down", "LinkErrorRecovery", Status.FAIL, "did not come up"),
])
def test_port_states(state, phys, status, words):
    # constructed, not captured: one bad port among Active ones
    ports = [_port("mlx5_0"), _port("mlx5_1", state=state, phys=phys)]
    (bad,) = by_check(ib.judge(ib.IbFacts(ports=ports)), "ib.port_state")
    assert bad.status is status and words in bad.message
    assert bad.evidence[0].startswith("mlx5_1 port 1: State " + state)
    if state in ("Init", "Armed"):
        assert "subnet manager" in bad.fix


def test_roce_port_with_only_v1_ipv4_gid_warns():
    # constructed, not captured
    p = _port("mlx5_0", ll="Ethernet", netdev="eth0")
    p.gids = [ib.make_gid(0, "fe80::1", "IB/RoCE v1"), ib.make_gid(1, "::ffff:10.0.0.5", "IB/RoCE v1")]
    p.gids_source = "ib_sysfs"
    (gid,) = by_check(ib.judge(ib.IbFacts(ports=[p])), "ib.roce_gid")
    assert gid.status is Status.WARN and "RoCE v1 only" in gid.message


def test_roce_gid_finding_without_a_known_netdev_names_no_placeholder():
    # constructed, not captured: an active RoCE port with only a link-local GID, its netdev not reported
    p = _port("mlx5_0", ll="Ethernet")
    p.gids = [ib.make_gid(0, "fe80::1", "RoCE v2")]
    p.gids_source = "ibv_devinfo"
    (gid,) = by_check(ib.judge(ib.IbFacts(ports=[p])), "ib.roce_gid")
    assert gid.status is Status.FAIL and "(netdev not reported)" in gid.message
    assert "<" not in gid.message + gid.fix and "the port's netdev (`ibdev2netdev` or `rdma link` names it)" in gid.fix


def test_netdev_names_give_the_link_layer_only_when_they_are_telling():
    real.require()
    links = {n: [(p.device, p.link_layer) for p in facts_of("rdma-link", n).ports] for n in (
        "3fs283-cx6dx-2port-trailing-space.txt", "spiderpool-roce-cx-rdma-link-indented.txt",
        "spiderpool-sriov-ib-vf-rdma-link-indented.txt")}
    assert links["spiderpool-roce-cx-rdma-link-indented.txt"] == [("mlx5_0", "Ethernet"), ("mlx5_1", "Ethernet")]
    # p1p1 and a pod's net1 say nothing of the link layer
    assert {ll for ll in [x[1] for x in links["3fs283-cx6dx-2port-trailing-space.txt"]]} == {None}
    assert {x[1] for x in links["spiderpool-sriov-ib-vf-rdma-link-indented.txt"]} == {None}


def test_inactive_roce_ports_are_not_gid_checked_and_ib_ports_never_are():
    # constructed, not captured: a Down RoCE port without GIDs, an IB port without GIDs
    down = _port("mlx5_0", state="Down", phys="Polling", ll="Ethernet")
    down.gids_source = "ib_sysfs"
    ibp = _port("mlx5_1")
    ibp.gids_source = "ib_sysfs"
    assert by_check(ib.judge(ib.IbFacts(ports=[down, ibp])), "ib.roce_gid") == []


def test_no_devices_skip_and_not_collected():
    (f,) = ib.judge(ib.parse({"ib_sysfs": "", "ibstat": None}))
    assert (f.status, f.check, f.message) == (Status.SKIP, "ib.present", "no InfiniBand/RoCE devices")
    assert ib.parse({"proc_cmdline": "ro quiet"}) is None
    (g,) = ib.judge(None, NodeFacts("h"))
    assert g.status is Status.SKIP and g.message == (
        "InfiniBand/RoCE sources not collected (ib_sysfs, rdma_link, ibstat, ibv_devinfo, ibdev2netdev, show_gids)")
    assert ib.summarize(None) == {} and ib.summarize(ib.IbFacts()) == {}


def test_ports_list_feeds_the_other_areas():
    n = NodeFacts("h")
    n.facts["ib"] = facts_of("ibstat", "gpud-h100-ib-ndr-3-down-disabled.txt")
    assert node_rdma(n)[0] is True and "12" in node_rdma(n)[1]
    n.facts["ib"] = ib.parse({"ib_sysfs": ""})
    assert node_rdma(n)[0] is False


# ---- tolerance ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("subdir,source,name", list(_all_fixtures()))
def test_tabs_to_spaces_and_truncation_never_raise(subdir, source, name):
    t = text(subdir, name)
    whole = ib.parse({source: t})
    spaced = ib.parse({source: t.replace("\t", "    ")})
    assert [(p.device, p.port, p.state, p.rate, p.link_layer) for p in spaced.ports] == \
        [(p.device, p.port, p.state, p.rate, p.link_layer) for p in whole.ports]
    for cut in (1, 7, len(t) // 3, len(t) // 2, len(t) - 5):
        ib.judge(ib.parse({source: t[:cut]}))


@pytest.mark.parametrize("value", [None, "", "   \n", "garbage\n==> \n<== x", "\x00\x01", "CA 'x'\n\tPort 1:\n"])
def test_junk_never_raises(value):
    for source in SUBDIR_SOURCE.values():
        f = ib.parse({source: value})
        ib.judge(f)
        ib.summarize(f)


def test_state_and_rate_normalisers():
    assert [ib.norm_state(s) for s in ("4: ACTIVE", "PORT_DOWN (1)", "Initializing", "ARMED", "", None, "7: ODD")] == [
        "Active", "Down", "Init", "Armed", None, None, "ODD"]
    assert [ib.norm_phys(s) for s in ("5: LinkUp", "LINK_UP (5)", "POLLING", "3: Disabled", "0: <unknown>",
                                      "PORT_CONFIGURATION TRAINNING (4)", "2:")] == [
        "LinkUp", "LinkUp", "Polling", "Disabled", "Unknown", "PortConfigurationTraining", "Polling"]
    assert [ib.parse_rate(s) for s in ("400 Gb/sec (4X NDR)", "200", "2.5 Gb/sec (1X SDR)", "N/A", None)] == [
        400.0, 200.0, 2.5, None, None]
    assert ib.make_gid(0, ZERO) is None and ib.make_gid(0, "not-a-gid") is None
    assert ib.make_gid(3, "::ffff:10.0.60.3", "RoCE v2").ipv4 == "10.0.60.3"


# ---- perftest ---------------------------------------------------------------------------------------------


def test_perftest_ib_write_bw_roce():
    r = perftest.parse_perftest(text("perftest", "deepops-cx5-roce-ib_write_bw-cpu-freq-warning.txt"))
    assert (r.test, r.device, r.link_type, r.gid_index, r.mtu, r.unit) == (
        "RDMA_Write BW Test", "mlx5_0", "Ethernet", 3, 4096, "Gb/sec")
    assert r.rows == [{"bytes": 65536.0, "iterations": 5000.0, "peak": 92.42, "average": 92.40, "msg_rate": 0.17623}]
    assert r.rows[-1]["average"] == 92.40
    assert len(r.warnings) == 1 and "CPU Frequency is not max" in r.warnings[0]
    assert perftest.parse_perftest(None).rows == [] and perftest.parse_perftest("").rows == []


# ---- the collection snippet on a fake root -----------------------------------------------------------------


def _collect(root: Path) -> dict:
    """Run the real collection script's ib_sysfs source against ``root``."""
    script = build_script([s for s in ib.SOURCES if s.name == "ib_sysfs"], ["ib"])
    r = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, NCCLDIAG_ROOT=str(root)))
    assert r.returncode == 0, r.stderr
    sections, rcs, truncated = split_sections(r.stdout)
    assert rcs == {"ib_sysfs": 0} and not truncated
    return sections


def _key(f: ib.IbFacts):
    return [(p.device, p.port, p.state, p.phys_state, p.rate, p.rate_text, p.link_layer, p.fw_ver, p.hca_type)
            for p in f.ports]


@pytest.mark.parametrize("name", real.names(real.NODE / "sysfs-infiniband"))
def test_snippet_reads_fixture_trees_like_the_fixture(tmp_path, name):
    dump = text("sysfs-infiniband", name)
    write_tree(dump, str(tmp_path))
    collected = _collect(tmp_path)
    assert collected["ib_sysfs"].startswith("==> /sys/class/infiniband/")
    assert "counters" not in collected["ib_sysfs"]  # only what the checks read
    assert _key(ib.parse(collected)) == _key(ib.parse({"ib_sysfs": dump}))


def test_snippet_prints_only_nonzero_gids_with_types_and_netdevs(tmp_path):
    write_tree(text("sysfs-infiniband", "gpud-h100-ndr400-8ib-plus-bond-ethernet.txt"), str(tmp_path))
    # constructed, not captured: a 256-entry GID table for the RoCE bond (4 non-zero entries, as the kernel
    # makes for one IPv4 address), and the IPoIB netdev of mlx5_0
    port = tmp_path / "sys/class/infiniband/mlx5_bond_0/ports/1"
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / sub).mkdir(parents=True)
    table = {0: "fe80:0000:0000:0000:0ac0:ebff:fe8c:3b44", 1: "fe80:0000:0000:0000:0ac0:ebff:fe8c:3b44",
             2: "0000:0000:0000:0000:0000:ffff:0a00:3c03", 3: "0000:0000:0000:0000:0000:ffff:0a00:3c03"}
    for i in range(256):
        (port / "gids" / str(i)).write_text(table.get(i, ZERO) + "\n")
    for i in table:
        (port / "gid_attrs/types" / str(i)).write_text("IB/RoCE v1\n" if i % 2 == 0 else "RoCE v2\n")
        (port / "gid_attrs/ndevs" / str(i)).write_text("bond0\n")
    net = tmp_path / "sys/class/infiniband/mlx5_0/device/net/ibp26s0"
    net.mkdir(parents=True)
    (net / "dev_port").write_text("0\n")
    (net / "operstate").write_text("down\n")

    out = _collect(tmp_path)["ib_sysfs"]
    assert out.count("/gids/") == 4 and ZERO not in out
    f = ib.parse({"ib_sysfs": out})
    bond = f.port("mlx5_bond_0")
    assert [(g.index, g.type, g.ipv4, g.netdev) for g in bond.gids] == [
        (0, "RoCE v1", None, "bond0"), (1, "RoCE v2", None, "bond0"),
        (2, "RoCE v1", "10.0.60.3", "bond0"), (3, "RoCE v2", "10.0.60.3", "bond0")]
    assert bond.netdev == "bond0"
    assert (f.port("mlx5_0").netdev, f.port("mlx5_0").netdev_state) == ("ibp26s0", "down")
    (gid,) = by_check(ib.judge(f), "ib.roce_gid")
    assert gid.status is Status.OK and "GID 3 RoCE v2 10.0.60.3" in gid.message


def test_snippet_prints_nothing_without_infiniband_class(tmp_path):
    (tmp_path / "sys/class").mkdir(parents=True)
    assert _collect(tmp_path)["ib_sysfs"] == ""


def test_tree_from_dump_and_symlinks(tmp_path):
    dump = text("sysfs-infiniband", "node_exporter-sys-ttar-infiniband-pci-net.txt")
    tree = parse_dump(dump)[0]
    assert tree["/sys/class/infiniband/mlx4_0/ports/2/rate"] == "40 Gb/sec (4X QDR)\n"
    assert "/sys/bus/pci/devices/0000:01:00.0" not in tree
    write_tree(dump, str(tmp_path))
    link = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    assert link.is_symlink() and (link / "current_link_speed").read_text() == "8.0 GT/s PCIe\n"


# ---- format variations: empty GID tables, inferred link layers, soft RDMA, netdev-only ports --------------

# show_gids' header as MLNX_OFED prints it (IBM/SpectrumScale_NETWORK_READINESS#4 quotes a full table), with no
# row: written for this test, the state of a RoCE port whose netdev has no address at all.
SHOW_GIDS_EMPTY = ("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
                   "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
                   "n_gids_found=0\n")


def test_empty_show_gids_on_active_ethernet_ports_is_a_failure_not_a_skip():
    raw = {"ibstat": text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt"), "show_gids": SHOW_GIDS_EMPTY}
    f = ib.parse(raw)
    active = [p for p in f.ports if p.active]
    assert active and all(p.gids_source == "show_gids" and p.gids == [] for p in active)
    gid = by_check(ib.judge(f), "ib.roce_gid")
    assert gid and all(x.status == Status.FAIL for x in gid)
    assert "no GID at all" in gid[0].message and "no GID table was collected" not in gid[0].message
    # without show_gids the same ports are a skip: nothing was collected
    assert statuses(ib.judge(ib.parse({"ibstat": raw["ibstat"]})), "ib.roce_gid") == ["skip"]


def test_show_gids_with_rows_is_not_empty():
    assert not ib.show_gids_empty(text("show-gids", "husky-readme-mlx5_0-rdma0-v1-v2.txt"))
    assert ib.show_gids_empty(SHOW_GIDS_EMPTY)


def test_link_layer_inferred_from_roce_v2_ipv4_gids():
    # Two real captures side by side: `rdma link` (no link layer field) and show_gids for mlx5_0 port 1.
    f = ib.parse({"rdma_link": text("rdma-link", "3fs283-cx6dx-2port-trailing-space.txt"),
                  "show_gids": text("show-gids", "husky-readme-mlx5_0-rdma0-v1-v2.txt")})
    p0, p1 = f.ports
    assert (p0.device, p0.link_layer) == ("mlx5_0", "Ethernet") and "RoCE v2" in p0.link_layer_from
    assert p1.link_layer is None  # no GID seen: nothing to infer from
    assert statuses(ib.judge(f), "ib.roce_gid") == ["ok"]
    assert "ib.soft_rdma" not in {x.check for x in ib.judge(f)}


def test_infiniband_gids_give_no_ethernet_inference():
    f = facts_of("sysfs-infiniband", "gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")
    assert all(p.link_layer_from is None for p in f.ports)


def test_soft_roce_and_siw_are_said_to_be_software():
    # Written for this test: `rdma link` as iproute2 prints it for rdma_rxe and siw devices.
    f = ib.parse({"rdma_link": "link rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0 \n"
                               "link siw0/1 state ACTIVE physical_state LINK_UP netdev eth1 \n"})
    assert [(p.device, p.link_layer, p.soft) for p in f.ports] == [
        ("rxe0", "Ethernet", "Soft-RoCE (rdma_rxe)"), ("siw0", "Ethernet", "soft iWARP (siw)")]
    (soft,) = by_check(ib.judge(f), "ib.soft_rdma")
    assert soft.status == Status.WARN and "not the fabric" in soft.message and "rxe0 port 1" in soft.message


def test_ibdev2netdev_only_ports_with_down_netdevs_get_a_word():
    f = facts_of("ibdev2netdev", "imbue4-h100-cx7-ib-cx6-eth-column-t-annotated.txt")
    (st,) = by_check(ib.judge(f), "ib.port_state")
    assert st.status == Status.SKIP
    # the link layer comes from the netdev names, as the poster's annotations say (8 CX-7 infiniband, 4 CX-6 ethernet)
    assert [p.device for p in f.ports if p.link_layer == "InfiniBand"] == [
        "mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert [p.device for p in f.ports if p.link_layer == "Ethernet"] == ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
    assert f.port("mlx5_0").link_layer_from == "the netdev name (ibp26s0: IPoIB)"
    assert ("the IPoIB netdev is Down for 8 InfiniBand ports (mlx5_0 port 1 (ibp26s0), mlx5_3 port 1 (ibp60s0), "
            "mlx5_4 port 1 (ibp77s0), mlx5_5 port 1 (ibp94s0) and 4 more): normal without IPoIB") in st.message
    assert ("the netdev is Down for 2 RoCE ports (mlx5_2 port 1 (enp27s0f1np1), mlx5_8 port 1 (enp157s0f1np1)): "
            "a RoCE port whose netdev is Down carries no traffic") in st.message
    assert ib.summarize(f)["active_ports"] is None


def test_a_node_with_unknown_port_states_is_not_the_consistency_majority():
    from nccldiag.areas import consistency

    healthy = ib.summarize(facts_of("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt"))
    unknown = ib.summarize(facts_of("ibdev2netdev", "imbue4-h100-cx7-ib-cx6-eth-column-t-annotated.txt"))
    summaries = {h: {f"ib.{k}": v for k, v in s.items()}
                 for h, s in (("a", healthy), ("b", healthy), ("u1", unknown), ("u2", unknown), ("u3", unknown))}
    out = consistency.judge_cluster(summaries)
    assert all(x.check != "consistency.ib.active_ports" for fs in out.values() for x in fs)


# Written for this test, in perftest's ib_read_lat layout (title, header, one result row).
READ_LAT = """\
---------------------------------------------------------------------------------------
                    RDMA_Read Latency Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 Mtu             : 4096[B]
 Link type       : IB
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          1.89           4.15         1.93     \t       1.94        \t0.05   \t\t2.05    \t\t4.15   
---------------------------------------------------------------------------------------
"""


def test_perftest_latency_table_is_not_a_bandwidth_table():
    r = perftest.parse_perftest(READ_LAT)
    assert r.kind == "lat" and r.rows == []
    (row,) = r.latency_rows
    assert (row["bytes"], row["iterations"], row["t_min"], row["t_typical"], row["t_avg"]) == (2, 1000, 1.89, 1.93, 1.94)
    assert r.device == "mlx5_0" and r.link_type == "IB" and "Latency Test" in r.test


def test_perftest_warning_inside_a_latency_table_is_kept():
    # READ_LAT (written for this test) with perftest's CPU-frequency warning between the column header and the result
    # row, where the real bandwidth capture deepops-cx5-roce-ib_write_bw-cpu-freq-warning.txt prints it
    header, _, rest = READ_LAT.partition(" 2       1000")
    warned = header + " Conflicting CPU frequency values detected: 1200.535000 != 1251.336000. CPU Frequency is not max.\n 2       1000" + rest
    r = perftest.parse_perftest(warned)
    assert r.kind == "lat" and len(r.latency_rows) == 1 and r.latency_rows[0]["t_min"] == 1.89
    assert len(r.warnings) == 1 and "CPU Frequency is not max" in r.warnings[0]
    found = {f.check: f for f in judge_perftest(r)}
    assert found["perftest.warning"].status == Status.WARN and found["perftest.result"].status == Status.OK
    assert perftest.parse_perftest(READ_LAT).warnings == []


def test_perftest_bandwidth_fixture_is_a_bandwidth_table():
    r = perftest.parse_perftest(text("perftest", "deepops-cx5-roce-ib_write_bw-cpu-freq-warning.txt"))
    assert r.kind == "bw" and r.rows and r.latency_rows == []


# ---- ib.present: why no port is listed ------------------------------------------------------------------------


def test_no_port_skip_says_why():
    from nccldiag.areas import pcie
    real.require()
    # the real ibstatus of a node whose HCA never came up (clustervision/trinity#219): the tool's own words
    case = real.ROOT / "cases" / "node-trinity219-mlx4-hca-old-firmware-ib-device-missing" / "node-a" / "ibstat.txt"
    (f,) = ib.judge(ib.parse({"ibstat": case.read_text()}))
    assert f.status is Status.SKIP and f.message == (
        "no InfiniBand/RoCE devices (ibstat: Fatal error:  device '*': sys files not found (/sys/class/infiniband/*/ports))")
    # only an empty ibdev2netdev collected: the sysfs listing was not
    (f,) = ib.judge(ib.parse({"ibdev2netdev": ""}))
    assert f.message == "no RDMA port listed by ibdev2netdev; the sysfs listing (ib_sysfs) was not collected"
    # collected and empty, while lspci shows two Mellanox functions: never "no devices"
    lspci = pcie.parse({"lspci": text("lspci", "gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt")})
    facts = ib.parse({"ib_sysfs": "", "ibstat": ""})
    (f,) = ib.judge(facts, NodeFacts("n", {"ib": facts, "pcie": lspci}))
    assert f.status is Status.SKIP and "no InfiniBand/RoCE devices" not in f.message
    assert f.message.startswith("no RDMA port listed by ib_sysfs, ibstat, though the node has 2 Mellanox NIC functions")
    (f,) = ib.judge(facts, NodeFacts("n", {"ib": facts}))
    assert f.message == "no InfiniBand/RoCE devices"


def test_down_port_of_another_vendor_gets_its_own_tools_not_mlxlink():
    # constructed, not captured: a Broadcom RoCE port that lost its link next to an Active one, and a ConnectX port
    bnxt = _port("bnxt_re1", state="Down", phys="Polling", ll="Ethernet", hca="BCM57508", netdev="ens2f1np1")
    found = by_check(ib.judge(ib.IbFacts(ports=[_port("bnxt_re0", ll="Ethernet", hca="BCM57508"), bnxt])),
                     "ib.port_state")
    (down,) = [f for f in found if f.status is not Status.OK]
    assert down.status is Status.FAIL and "mlxlink" not in down.fix and "`ethtool ens2f1np1`" in down.fix
    mlx = by_check(ib.judge(ib.IbFacts(ports=[_port("mlx5_1", state="Down", phys="Polling", ll="Ethernet")])),
                   "ib.port_state")
    assert "`mlxlink -d mlx5_1 -p 1 -m`" in mlx[0].fix


def _case_text(case, name):
    return (real.ROOT / "cases" / case / "node-a" / name).read_text()


def test_sysfs_posted_as_grep_lines_and_port_directories_is_read():
    real.require()
    # stackhpc/ansible-slurm-appliance#988: `ls -1d .../ports/*` and `grep "" .../{state,rate,phys_state}`
    f = ib.parse({"ib_sysfs": _case_text("node-slurmappliance988-sysfs-ib-ports-active-linkup-healthy", "ib_sysfs.txt")})
    assert [(p.device, p.port, p.state, p.phys_state, p.rate) for p in f.ports] == [
        ("mlx5_0", 1, "Active", "LinkUp", 100.0), ("mlx5_1", 1, "Active", "LinkUp", 100.0)]
    found = ib.judge(f)
    assert statuses(found, "ib.port_state") == ["ok"] and statuses(found, "ib.port_rate") == ["ok"]
    assert by_check(found, "ib.port_state")[0].message == "2 ports Active, 2x 100 Gb/s RDMA"
    # the ls lines alone list the ports, state unknown
    only_ls = "/sys/class/infiniband/mlx5_0/ports/1\n/sys/class/infiniband/mlx5_1/ports/1/\n"
    assert [(p.device, p.state) for p in ib.parse({"ib_sysfs": only_ls}).ports] == [("mlx5_0", None), ("mlx5_1", None)]


def test_ibv_devinfo_port_excerpt_without_hca_id_is_one_port():
    real.require()
    # NVIDIA/nccl#769: phys_state and GID[0..3] of `ibv_devinfo -d mlx5_bond_0 -v`, nothing else
    f = ib.parse({"ibv_devinfo": _case_text("node-nccl769-a100-roce-bond-gid-table-healthy-linklocal-index-chosen",
                                            "ibv_devinfo.txt")})
    (p,) = f.ports
    assert (p.device, p.phys_state, p.link_layer) == ("?", "LinkUp", "Ethernet")
    assert [(g.index, g.type, g.ipv4) for g in p.gids if g.ipv4] == [(2, "RoCE v1", "200.0.209.6"),
                                                                    (3, "RoCE v2", "200.0.209.6")]
    assert not [x for x in ib.judge(f) if x.status in (Status.FAIL, Status.WARN)]


def test_iwarp_ports_are_not_judged_as_roce():
    # constructed, not captured: an Intel iWARP port, Active, its GID the MAC-based one iWARP devices list
    p = _port("i40iw0", ll="Ethernet", hca=None, netdev="eno1")
    p.gids, p.gids_source = [ib.make_gid(0, "a4bf:0101:6f3c:0000:0000:0000:0000:0000")], "ib_sysfs"
    (gid,) = by_check(ib.judge(ib.IbFacts(ports=[p])), "ib.roce_gid")
    assert gid.status is Status.SKIP and "iWARP" in gid.message
    # ibv_devinfo's transport line says iWARP whatever the device is named (written for this test, in its layout)
    text = ("hca_id:\tirdma0\n\ttransport:\t\t\tiWARP (1)\n\tfw_ver:\t\t\t\t1.57\n\tphys_port_cnt:\t\t\t1\n"
            "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tEthernet\n")
    (q,) = ib.parse({"ibv_devinfo": text}).ports
    assert q.transport == "iWARP" and q.iwarp
    assert statuses(ib.judge(ib.parse({"ibv_devinfo": text})), "ib.roce_gid") == ["skip"]


POD_CASE = Path(__file__).resolve().parents[1] / "cases" / "net-sriovop382-pod-ibdev2netdev-ib-vf-down-linkstate-not-enabled"


def test_in_pod_knows_a_deployments_pod_name_by_kubernetes_alphabet():
    from nccldiag.pods import in_pod

    # pod names from the collected cases (a prompt inside a pod, kubectl's listings)
    assert in_pod("sample-pod-4-5bddf8c4b4-hf49j")
    assert in_pod("gpu-operator-8dc8d6648-jzhnr") and in_pod("nfd-master-66c886fb64-bkt5m")
    # node names of the cases and fixtures: a letter outside the alphabet, or no hash and suffix
    for host in ("ip-26-0-146-100", "jean-zay-iam06", "x99", "gpu-node-01", "node1", "worker-1", "dgx-a100-b2f4-x7",
                 None, ""):
        assert not in_pod(host), host


def test_ibdev2netdev_down_inside_a_pod_is_the_pods_port_without_link():
    lines = (POD_CASE / "posted-pod.txt").read_text().splitlines()
    f = ib.parse({"ibdev2netdev": "".join(line + "\n" for line in lines if "==>" in line)})
    (link,) = by_check(ib.judge(f, NodeFacts(host="sample-pod-4-5bddf8c4b4-hf49j")), "ib.port_link")
    assert link.status == Status.FAIL and "mlx5_3 port 1 (netdev net1): Down inside the pod" in link.message
    assert "linkState: enable" in link.fix
    # the same line on a node is the netdev's state, no port state: no failure
    out = ib.judge(f, NodeFacts(host="node1"))
    assert not [x for x in out if x.status in (Status.FAIL, Status.WARN)]
    assert statuses(out, "ib.port_state") == ["skip"]
    # the pod named by the prompt the output was typed under, whatever host a decoration names (pdsh's)
    (link,) = by_check(ib.judge(f, NodeFacts(host="node017", options={"pod": "sample-pod-4-5bddf8c4b4-hf49j"})),
                       "ib.port_link")
    assert link.status == Status.FAIL


def test_a_pasted_ibdev2netdev_under_a_pods_prompt_is_read_inside_the_pod():
    from nccldiag import paste

    text = (POD_CASE / "posted-pod.txt").read_text()
    for pasted in (text, text.replace("[root@", "node017: [root@").replace("mlx5_3 port", "node017: mlx5_3 port"),
                   text.replace("[root@", "    [root@").replace("mlx5_3 port", "    mlx5_3 port")):
        found = paste.scan(pasted, "posted-pod.txt")
        (block,) = [b for b in found.blocks if b.kind == "ibdev2netdev"]
        assert block.pod == "sample-pod-4-5bddf8c4b4-hf49j"
        assert [f.check for f in found.findings] == ["ib.port_link"]
    # the same line under a node's prompt: the netdev's state, no failure
    found = paste.scan(text.replace("sample-pod-4-5bddf8c4b4-hf49j", "gpu-node-07"), "posted-pod.txt")
    assert not found.findings and all(not b.pod for b in found.blocks)


def test_healthy_node_ibdev2netdev_with_down_ipoib_netdevs_stays_unjudged_on_a_node():
    f = facts_of("ibdev2netdev", "imbue4-h100-cx7-ib-cx6-eth-column-t-annotated.txt")
    out = ib.judge(f, NodeFacts(host="h100-node-07"))
    assert not by_check(out, "ib.port_link") and statuses(out, "ib.port_state") == ["skip"]


def test_an_ibstat_port_pasted_without_its_ca_is_read_under_an_unnamed_ca(tmp_path):
    from tests import realcases
    # real: the Azure HPC diagnostics maintainer's fragment ('...', 'Port 1:', State Down, Physical state Polling, '...')
    case = realcases.IN_REPO / "net-node45-azhpcdiag76-ibstat-fragment-elided-port-down-polling"
    (p,) = ib.parse_ibstat((case / "posted-ibstat.txt").read_text(encoding="utf-8")).values()
    assert (p.device, p.port, p.state, p.phys_state) == (ib.UNNAMED_CA, 1, "Down", "Polling")
    ds = realcases.alarms_of_case(case)
    assert [d.id for d in ds] == ["ib-port-down"] and "Polling" in ds[0].summary, [(d.id, d.summary) for d in ds]
    # real working port: the advancedclustering KB's ibstat with its CA's lines left out (cut for this test): an
    # Active port alone is read and says nothing is broken
    text = (realcases.IN_REPO / "node-advancedclustering-kb-ibstat-mlx4-active-linkup-healthy" /
            "posted-ibstat.txt").read_text(encoding="utf-8")
    port = text[text.index("Port 1:"):]
    (p,) = ib.parse_ibstat(port).values()
    assert (p.device, p.state, p.phys_state) == (ib.UNNAMED_CA, "Active", "LinkUp")
    (tmp_path / "port.txt").write_text(port, encoding="utf-8")
    assert realcases.alarms_of([tmp_path / "port.txt"]) == []
    # the whole output still names its CA
    assert {x.device for x in ib.parse_ibstat(text).values()} == {"mlx4_0"}
