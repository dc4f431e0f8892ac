"""IB/RoCE counters area: sysfs counters in both renderings, snapshot and delta, link flaps from the kernel log."""
import pytest

from nccldiag.areas import ibcounters
from tests import real
from tests.trees import write_tree

from .areahelp import findings, judge, run_sources

PROCFS = ("ib-counters", "procfs-ttar-hfi1-mlx4-mlx5-counters-hw-counters-roce-errors.txt")
NODEEXP = ("ib-counters", "node_exporter-ttar-mlx4-counters-ext-i40iw-no-pma.txt")
NOPMA = ("ib-counters", "nodeexp966-i40iw-grep-s-counters-na-no-pma-fragment.txt")
ETHTOOL = ("ib-counters", "ethq8-cx4lx-mlx5-ethtool-S-head-fragment.txt")
H100 = ("sysfs-infiniband", "gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")

COUNTERS = {
    PROCFS: {"ibcounters.link": ["ok"], "ibcounters.transport": ["warn"]},
    NODEEXP: {"ibcounters.link": ["warn"]},
    NOPMA: {"ibcounters.link": ["skip"]},
    ETHTOOL: {"ibcounters.link": ["skip"]},  # ethtool -S is not a sysfs counter dump
    # the H100 node's mlx5_0 counted 15 excessive buffer overruns since its driver loaded: reported, not failed
    H100: {"ibcounters.link": ["warn"], "ibcounters.transport": ["ok"]},
}

FLAPS = {
    ("link-flaps", "gpud1209-journal-mlx5_5-port1-link-init-then-active.txt"): "ok",
    ("link-flaps", "armnas16-cx5-dmesg-grep-mlx5-cable-plugged-sufficient-power-partial.txt"): "ok",
    ("link-flaps", "gpud-h100-dmesg-mlx5-port-module-cable-plugged-unplugged-selected.txt"): "ok",
    # simulated by its author; all its "lost carrier" lines come before the first "Gained carrier": bring-up
    ("link-flaps", "azurehpc-syslog-ib6-lost-gained-carrier-SIMULATED.txt"): "ok",
    ("kernel-xid", "gpud-h100-boot-dmesg-decode-nvrm-nvswitch-no-xid-healthy.txt"): "ok",
}


def text(capture):
    return real.node_text(*capture)


@pytest.mark.parametrize("capture", list(COUNTERS), ids=lambda c: c[1])
def test_counters_of_every_capture(capture):
    real.require()
    out = judge(ibcounters, {"ib_counters": text(capture)})
    out.pop("ibcounters.link_flaps")
    assert out == COUNTERS[capture]


def test_counter_findings_name_port_and_counter():
    real.require()
    f = findings(ibcounters, {"ib_counters": text(NODEEXP)})["ibcounters.link"]
    assert f.actual == {"mlx4_0/1": {"port_xmit_discards": 5}}
    f = findings(ibcounters, {"ib_counters": text(PROCFS)})["ibcounters.transport"]
    assert f.actual == {"mlx5_0/1": {"local_ack_timeout_err": 131, "out_of_sequence": 1, "packet_seq_err": 1}}


def test_nvsentinel_fatal_counters_are_named_and_no_pma_is_not_a_number():
    real.require()
    f = findings(ibcounters, {"ib_counters": text(H100)})["ibcounters.link"]
    assert f.actual == {"mlx5_0/1": {"excessive_buffer_overrun_errors": 15, "port_rcv_errors": 14, "port_rcv_switch_relay_errors": 1}}
    assert "excessive_buffer_overrun_errors: fatal in NVSentinel when it grows" in f.message
    assert "i40iw0/1" not in ibcounters.snapshot(text(NOPMA))


def test_snapshot_reads_both_renderings_and_delta_is_per_port_and_counter():
    real.require()
    dump = ibcounters.snapshot(text(PROCFS))
    assert sorted(dump) == ["hfi1_0/1", "mlx4_0/1", "mlx4_0/2", "mlx5_0/1"]
    assert dump["mlx5_0/1"]["local_ack_timeout_err"] == 131
    grep = "".join(f"/sys/class/infiniband/{p.split('/')[0]}/ports/{p.split('/')[1]}/counters/{n}:{v}\n"
                   for p, c in dump.items() for n, v in c.items())
    assert ibcounters.snapshot(grep) == dump
    # written for this test: a later snapshot where two counters moved and one was reset
    after = {p: dict(c) for p, c in dump.items()}
    after["mlx5_0/1"]["local_ack_timeout_err"] += 4
    after["mlx4_0/2"]["port_xmit_data"] += 1000
    after["mlx4_0/1"]["port_rcv_data"] = 0
    d = ibcounters.delta(dump, after)
    assert d["mlx5_0/1"]["local_ack_timeout_err"] == 4 and d["mlx4_0/2"]["port_xmit_data"] == 1000
    assert d["mlx4_0/1"]["port_rcv_data"] is None and d["hfi1_0/1"]["port_rcv_data"] == 0
    assert ibcounters.delta({}, after) == {}


@pytest.mark.parametrize("capture", list(FLAPS), ids=lambda c: c[1])
def test_link_flaps_healthy_captures(capture):
    real.require()
    assert judge(ibcounters, {"kernel_log": text(capture)})["ibcounters.link_flaps"] == [FLAPS[capture]]


def test_link_flaps_fail_at_five_downs_after_the_port_came_up():
    real.require()
    base = text(("link-flaps", "gpud1209-journal-mlx5_5-port1-link-init-then-active.txt"))
    # written for this test, in the real mlx5 line format of that capture: the port going down and back
    down = "Feb 14 06:00:00 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN\n"
    up = "Feb 14 06:00:01 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE\n"
    f = findings(ibcounters, {"kernel_log": base + down + up})["ibcounters.link_flaps"]
    assert f.status.value == "warn" and f.actual == {"mlx5_5 port 1": 1}
    f = findings(ibcounters, {"kernel_log": base + (down + up) * 5})["ibcounters.link_flaps"]
    assert f.status.value == "fail" and f.actual == {"mlx5_5 port 1": 5} and len(f.evidence) == 3


def test_an_ethernet_nic_link_down_right_after_up_is_a_flap(tmp_path):
    # written for this test, in the wording of the Intel Ethernet drivers (ixgbe, igb): up at boot, then down
    text = ("[    5.100000] ixgbe 0000:03:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX\n"
            "[    9.200000] igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: RX\n"
            "[    9.700000] ixgbe 0000:03:00.0 eth0: NIC Link is Down\n")
    f = findings(ibcounters, {"kernel_log": text})["ibcounters.link_flaps"]
    assert f.status.value == "warn" and f.actual == {"eth0": 1}
    # a link that only came up is no flap
    assert judge(ibcounters, {"kernel_log": text.rsplit("\n", 2)[0]})["ibcounters.link_flaps"] == ["ok"]
    # the node-side filter keeps the lines
    from tests.unit.areahelp import stand_in
    bin_dir = tmp_path / "bin"
    (tmp_path / "k.txt").write_text("[    1.0] unrelated\n" + text)
    stand_in(bin_dir, "dmesg", f"cat '{tmp_path / 'k.txt'}'")
    secs = run_sources((ibcounters.SOURCES[1],), tmp_path / "root", bin_dir)
    assert sum("NIC Link is" in l for l in secs["kernel_log"].splitlines()) == 3
    assert judge(ibcounters, secs)["ibcounters.link_flaps"] == ["warn"]


def test_counters_source_reads_the_sysfs_tree(tmp_path):
    real.require()
    root = tmp_path / "root"
    write_tree(text(H100), str(root))
    secs = run_sources((ibcounters.COUNTERS_SOURCE,), root)
    assert ibcounters.snapshot(secs["ib_counters"]) == ibcounters.snapshot(text(H100))
    assert len(ibcounters.snapshot(secs["ib_counters"])["mlx5_0/1"]) > 20
