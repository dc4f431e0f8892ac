"""RoCE set-up area: mlnx_qos (trust, PFC), ECN, MTU, ARP and rp_filter for several NICs in one subnet."""
from nccldiag.areas import roce
from nccldiag.areas.infiniband import IbPort
from nccldiag.areas.system import Interface, SystemFacts
from tests import real

from .areahelp import findings, judge, run_sources

SPIDER = ("roce-qos", "spiderpool-rdma-qos-q-dscp-pfc5-ecn-cnp48-indented.txt")
ATT = ("roce-qos", "att-netarbiter-mlnx_qos-trust-dscp-pfc3-dscp2prio-cable-len.txt")
SYSCTL = ("roce-qos", "hotsos-openstack-9nic-sysctl-rp_filter2-arp_ignore0-selected.txt")


def text(capture):
    return real.node_text(*capture)


def two_rails(mtu=9000):
    """Written for this test: two RoCE netdevs (named as in the sysctl capture) in one /24."""
    system = SystemFacts(interfaces=[Interface("ens3", "UP", mtu, ["10.1.0.2/24"]), Interface("ens4", "UP", mtu, ["10.1.0.3/24"])])
    ib = type("Ib", (), {"ports": [IbPort("mlx5_0", 1, state="Active", link_layer="Ethernet", netdev="ens3", mtu=4096),
                                   IbPort("mlx5_1", 1, state="Active", link_layer="Ethernet", netdev="ens4", mtu=4096)]})()
    return {"system": system, "ib": ib}


def test_mlnx_qos_outputs_trust_pfc_and_ecn():
    real.require()
    (d,) = roce.parse_qos(text(SPIDER))[0]
    assert (d.device, d.netdev, d.trust, d.pfc) == ("mlx5_0", "eth0", "dscp", [5])
    assert d.ecn["roce_np"] == {i: True for i in range(8)} and d.ecn["roce_rp"][5] is True
    (d,) = roce.parse_qos(text(ATT))[0]
    assert (d.trust, d.pfc) == ("dscp", [3])
    out = judge(roce, {"roce_qos": text(SPIDER)})
    assert out["roce.pfc"] == ["ok"] and out["roce.ecn"] == ["ok"]
    assert judge(roce, {"roce_qos": text(ATT)})["roce.pfc"] == ["ok"]


def test_no_pfc_and_ecn_off_warn():
    real.require()
    # written for this test: the real output with PFC off on every priority and ECN off on priority 5
    t = text(SPIDER).replace("enabled     0   0   0   0   0   1   0   0", "enabled     0   0   0   0   0   0   0   0")
    t = t.replace("roce_rp/enable/5 = 1", "roce_rp/enable/5 = 0")
    f = findings(roce, {"roce_qos": t})
    assert f["roce.pfc"].status.value == "warn" and f["roce.pfc"].actual == {"eth0": []}
    assert f["roce.ecn"].status.value == "warn" and f["roce.ecn"].actual == {"eth0": ["roce_rp 5"]}


def test_sysctl_in_both_forms():
    real.require()
    s = roce.parse_sysctl(text(SYSCTL))
    assert s["all"] == {"arp_announce": 0, "arp_ignore": 0, "rp_filter": 2} and s["ens3"]["rp_filter"] == 2
    assert roce.parse_sysctl("all/rp_filter:1\nens3/arp_ignore:2\n") == {"all": {"rp_filter": 1}, "ens3": {"arp_ignore": 2}}


def test_two_rails_in_one_subnet_need_the_arp_settings():
    real.require()
    qos = "=== mlx5_0 ens3\nmtu: 9000\n=== mlx5_1 ens4\nmtu: 9000\n"  # the source's block form, written for this test
    f = findings(roce, {"roce_qos": qos, "arp_sysctl": text(SYSCTL)}, **two_rails())
    assert f["roce.arp"].status.value == "fail"
    assert f["roce.arp"].actual == {"ens3": ["arp_ignore 0", "arp_announce 0"], "ens4": ["arp_ignore 0", "arp_announce 0"]}
    assert f["roce.mtu"].status.value == "ok"
    good = "all/arp_ignore:2\nall/arp_announce:2\nall/rp_filter:2\n"  # written for this test: the libfabric settings
    assert judge(roce, {"roce_qos": qos, "arp_sysctl": good}, **two_rails())["roce.arp"] == ["ok"]
    # the larger of "all" and the netdev's own value is the one in force
    assert judge(roce, {"roce_qos": qos, "arp_sysctl": good + "ens4/rp_filter:1\n"}, **two_rails())["roce.arp"] == ["ok"]
    strict = good.replace("all/rp_filter:2", "all/rp_filter:0") + "ens4/rp_filter:1\n"
    assert findings(roce, {"roce_qos": qos, "arp_sysctl": strict}, **two_rails())["roce.arp"].actual == {"ens4": ["rp_filter 1"]}


def test_one_rail_or_no_roce_is_not_judged():
    real.require()
    assert judge(roce, {"arp_sysctl": text(SYSCTL)}) == {"roce.pfc": ["skip"]}
    facts = two_rails()
    facts["system"].interfaces[1].addresses = ["10.2.0.3/24"]
    assert judge(roce, {"roce_qos": "=== mlx5_0 ens3\nmtu: 9000\n=== mlx5_1 ens4\nmtu: 9000\n",
                        "arp_sysctl": text(SYSCTL)}, **facts)["roce.arp"] == ["skip"]


def test_small_mtu_warns():
    f = findings(roce, {"roce_qos": "=== mlx5_0 ens3\nmtu: 1500\n"}, **two_rails(1500))["roce.mtu"]
    assert f.status.value == "warn" and f.actual == {"ens3": 1500}


def test_qos_source_walks_roce_devices(tmp_path):
    root = tmp_path / "root"
    # written for this test: one RoCE device with its netdev, MTU and two ECN files; one IB device, skipped
    for rel, value in (("sys/class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet"),
                       ("sys/class/infiniband/mlx5_0/device/net/ens3/dev_port", "0"),
                       ("sys/class/infiniband/mlx5_1/ports/1/link_layer", "InfiniBand"),
                       ("sys/class/infiniband/mlx5_1/device/net/ib0/dev_port", "0"),
                       ("sys/class/net/ens3/mtu", "9000"),
                       ("sys/class/net/ens3/ecn/roce_np/enable/3", "1"),
                       ("sys/class/net/ens3/ecn/roce_rp/enable/3", "0")):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(value + "\n")
    secs = run_sources(roce.SOURCES, root)
    (d,) = roce.parse_qos(secs["roce_qos"])[0]
    assert (d.device, d.netdev, d.mtu, d.ecn) == ("mlx5_0", "ens3", 9000, {"roce_np": {3: True}, "roce_rp": {3: False}})


def test_roce_skips_say_why():
    from nccldiag.areas import infiniband as ib
    assert findings(roce, {})["roce.pfc"].message.startswith("not collected: roce_qos")
    assert findings(roce, {"roce_qos": ""})["roce.pfc"].message == (
        "no RoCE port on this node (no RDMA device with an Ethernet link layer)")
    # constructed, not captured: two InfiniBand ports; then a RoCE port whose roce_qos was not collected
    ib_only = ib.IbFacts(ports=[ib.IbPort("mlx5_0", 1, link_layer="InfiniBand"),
                                ib.IbPort("mlx5_1", 1, link_layer="InfiniBand")])
    assert findings(roce, {}, ib=ib_only)["roce.pfc"].message == (
        "no RoCE port on this node: its 2 RDMA ports are InfiniBand")
    with_roce = ib.IbFacts(ports=[ib.IbPort("mlx5_0", 1, link_layer="Ethernet", netdev="ens3")])
    f = findings(roce, {}, ib=with_roce)["roce.pfc"]
    assert f.status.value == "skip" and f.message == "PFC and trust not read: roce_qos (which runs mlnx_qos) was not collected"


def test_iwarp_netdevs_get_no_roce_setup_checks():
    from nccldiag.areas import infiniband as ib
    # constructed, not captured: an Intel iWARP device's netdev at MTU 1500, no ECN files
    qos = "=== i40iw0 eno1\nmtu: 1500\n"
    iw = ib.IbFacts(ports=[ib.IbPort("i40iw0", 1, state="Active", link_layer="Ethernet", netdev="eno1")])
    out = findings(roce, {"roce_qos": qos}, ib=iw)
    assert list(out) == ["roce.pfc"] and out["roce.pfc"].status.value == "skip"
    assert "iWARP (i40iw0 port 1)" in out["roce.pfc"].message
    # the same netdev on a RoCE device is judged
    assert judge(roce, {"roce_qos": qos.replace("i40iw0", "mlx5_0")})["roce.mtu"] == ["warn"]
