"""IB/RoCE counters area: sysfs counters in both renderings, snapshot and delta, link flaps from the kernel log."""
from pathlib import Path

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
    assert out.pop("ibcounters.hca_errors") == ["skip"]  # no kernel log in these captures
    assert out.pop("ibcounters.ipoib_tx_timeout") == ["skip"]
    assert out.pop("ibcounters.cqe_errors") == ["skip"]
    assert out.pop("ibcounters.module_errors") == ["skip"]
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


def test_an_mlx5_cable_module_unplugged_after_it_was_plugged_is_a_flap():
    # the real lines of tests/cases/net-gaps63b-dtcms-blog-mlx5-port-module-cable-unplugged-plugged-flapping-loose-cable
    # (a cable seated loosely) and of its healthy neighbour (modules plugged, links up)
    case = Path(__file__).resolve().parents[1] / "cases"
    flapping = (case / "net-gaps63b-dtcms-blog-mlx5-port-module-cable-unplugged-plugged-flapping-loose-cable"
                / "posted-kernel-log.txt").read_text()
    f = findings(ibcounters, {"kernel_log": flapping})["ibcounters.link_flaps"]
    # the first unplug, before any plug, is not counted (the log starts there); five after a plug are
    assert f.status.value == "fail" and f.actual == {"0000:00:08.0 module 1": 5}
    plugged = (case / "net-gaps63b-jishuzhan-notes-mlx5-port-module-cable-plugged-link-up-healthy"
               / "posted-dmesg.txt").read_text()
    assert judge(ibcounters, {"kernel_log": plugged})["ibcounters.link_flaps"] == ["ok"]


def test_counters_source_reads_the_sysfs_tree(tmp_path):
    real.require()
    root = tmp_path / "root"
    write_tree(text(H100), str(root))
    secs = run_sources((ibcounters.COUNTERS_SOURCE,), root)
    assert ibcounters.snapshot(secs["ib_counters"]) == ibcounters.snapshot(text(H100))
    assert len(ibcounters.snapshot(secs["ib_counters"])["mlx5_0/1"]) > 20


# ---- infiniband-diags layouts: perfquery [-x] and ibqueryerrors ---------------------------------------------

# Written for this test, in the layout `perfquery -x` prints (header "# Port extended counters: Lid N port N
# (CapMask: ...)", then dot-padded IBTA names; a real one is in treydock/infiniband_exporter,
# collectors/perfquery_test.go). Two ports of one HCA, all error counters zero.
PERFQUERY_X = """\
# Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
PortSelect:......................1
CounterSelect:...................0x0000
PortXmitData:....................36298026860928
PortRcvData:.....................12279028775751
PortXmitPkts:....................101733204203
PortRcvPkts:.....................32262508468
CounterSelect2:..................0x00000000
SymbolErrorCounter:..............0
LinkErrorRecoveryCounter:........0
LinkDownedCounter:...............0
PortRcvErrors:...................0
PortRcvRemotePhysicalErrors:.....0
PortRcvSwitchRelayErrors:........0
PortXmitDiscards:................0
PortXmitConstraintErrors:........0
PortRcvConstraintErrors:.........0
LocalLinkIntegrityErrors:........0
ExcessiveBufferOverrunErrors:....0
VL15Dropped:.....................0
PortXmitWait:....................22730501
QP1Dropped:......................0
# Port extended counters: Lid 1719 port 2 (CapMask: 0x5300 CapMask2: 0x0000002)
PortSelect:......................2
SymbolErrorCounter:..............0
LinkDownedCounter:...............0
PortRcvErrors:...................0
PortXmitDiscards:................0
"""

# Written for this test, in the layout `ibqueryerrors` prints ("Errors for" a node, one "GUID ... port N:" line of
# [Name == value] per port beyond its thresholds, a switch's "port ALL" total, the "## Summary" lines); the values
# with "(25.000)" are the layout of newer infiniband-diags. A real one, an SX6036 switch with LinkDownedCounter 48
# and PortXmitDiscards 15854, was posted to the linux-rdma list.
IBQUERYERRORS = """\
Errors for "gpu01 mlx5_0"
   GUID 0x7cfe900300179b31 port 1: [PortXmitWait == 4294967295]
Errors for 0x2c903006e29b0 "MF0;leaf01:SX6036/U1"
   GUID 0x2c903006e29b0 port ALL: [LinkDownedCounter == 25 (25.000)] [PortXmitDiscards == 2846 (2.779K)]
   GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535 (65.535K)] [LinkDownedCounter == 25 (25.000)] [PortXmitDiscards == 2846 (2.779K)]

## Summary: 4 nodes checked, 2 bad nodes found
##          43 ports checked, 2 ports have errors beyond threshold
"""


def test_perfquery_x_blocks_map_ibta_names_to_the_sysfs_counters():
    dump = ibcounters.read_counters(PERFQUERY_X)
    assert dump.formats == ["perfquery"] and sorted(dump.counters) == ["lid 1719/1", "lid 1719/2"]
    port1 = dump.counters["lid 1719/1"]
    assert port1["symbol_error"] == 0 and port1["link_downed"] == 0 and port1["port_xmit_discards"] == 0
    assert port1["excessive_buffer_overrun_errors"] == 0 and port1["VL15_dropped"] == 0
    assert port1["port_xmit_data"] == 36298026860928 and port1["port_xmit_wait"] == 22730501
    assert "PortSelect" not in port1 and "port_select" not in port1
    f = findings(ibcounters, {"ib_counters": PERFQUERY_X})["ibcounters.link"]
    assert f.status.value == "ok" and f.message == "no link errors on 2 ports (perfquery)"


def test_perfquery_with_downed_links_and_discards_warns_naming_the_port():
    bad = PERFQUERY_X.replace("LinkDownedCounter:...............0\nPortRcvErrors:...................0\n"
                              "PortXmitDiscards:................0\n",
                              "LinkDownedCounter:...............3\nPortRcvErrors:...................0\n"
                              "PortXmitDiscards:................2846\n")
    # the command line an admin ran (the collection script prints it too) names the CA and port of the next block
    dump = ibcounters.read_counters("$ perfquery -x -C mlx5_2 -P 1\n" + bad)
    assert sorted(dump.counters) == ["lid 1719/2", "mlx5_2/1"]
    f = findings(ibcounters, {"ib_counters": bad})["ibcounters.link"]
    assert f.status.value == "warn"
    assert f.actual == {"lid 1719/2": {"link_downed": 3, "port_xmit_discards": 2846}}
    assert "since they were last cleared" in f.message and "(perfquery)" in f.message


def test_perfquery_command_line_names_the_port_and_old_names_are_read():
    # written for this test: the command line, then the older perfquery layout ("# Port counters:", SymbolErrors,
    # LinkDowned, XmtDiscards, RcvErrors)
    old = ("perfquery -C mlx4_0 -P 1\n# Port counters: Lid 5 port 1\nPortSelect:......................1\n"
           "SymbolErrors:....................7\nLinkRecovers:....................0\nLinkDowned:......................1\n"
           "RcvErrors:.......................0\nXmtDiscards:.....................4\nVL15Dropped:.....................0\n")
    assert ibcounters.snapshot(old) == {"mlx4_0/1": {"symbol_error": 7, "link_error_recovery": 0, "link_downed": 1,
                                                     "port_rcv_errors": 0, "port_xmit_discards": 4, "VL15_dropped": 0}}


def test_ibqueryerrors_reports_switch_ports_with_downed_links_and_discards():
    dump = ibcounters.read_counters(IBQUERYERRORS)
    assert dump.formats == ["ibqueryerrors"] and dump.fabric_ports_checked == 43
    # the switch's "port ALL" total is left out when its numbered ports are listed
    assert dump.counters == {
        '0x7cfe900300179b31/1 "gpu01 mlx5_0"': {"port_xmit_wait": 4294967295},
        '0x2c903006e29b0/5 "MF0;leaf01:SX6036/U1"': {"symbol_error": 65535, "link_downed": 25,
                                                     "port_xmit_discards": 2846}}
    f = findings(ibcounters, {"ib_counters": IBQUERYERRORS})["ibcounters.link"]
    assert f.status.value == "warn" and list(f.actual) == ['0x2c903006e29b0/5 "MF0;leaf01:SX6036/U1"']
    assert "of 43 ports (ibqueryerrors, fabric-wide: switch ports too)" in f.message
    # a switch listed by its total only is kept as "ALL"
    total_only = "\n".join(l for l in IBQUERYERRORS.splitlines() if "port 5:" not in l)
    assert '0x2c903006e29b0/ALL "MF0;leaf01:SX6036/U1"' in ibcounters.snapshot(total_only)


def test_ibqueryerrors_with_nothing_beyond_thresholds_is_ok():
    # written for this test: ibqueryerrors on a clean fabric prints its summary only
    clean = ("\n## Summary: 4 nodes checked, 0 bad nodes found\n"
             "##          43 ports checked, 0 ports have errors beyond threshold\n")
    f = findings(ibcounters, {"ib_counters": clean})["ibcounters.link"]
    assert f.status.value == "ok" and "43 ports" in f.message
    # congestion (PortXmitWait) alone is not a link error
    waits = "\n".join(l for l in IBQUERYERRORS.splitlines() if "0x2c903006e29b0" not in l)
    assert judge(ibcounters, {"ib_counters": waits})["ibcounters.link"] == ["ok"]


def test_counter_skips_say_why():
    assert "not collected" in findings(ibcounters, {})["ibcounters.link"].message
    assert findings(ibcounters, {"ib_counters": ""})["ibcounters.link"].message == (
        "no RDMA ports (nothing under /sys/class/infiniband)")
    real.require()
    assert "no PMA" in findings(ibcounters, {"ib_counters": text(NOPMA)})["ibcounters.link"].message
    assert "could not read" in findings(ibcounters, {"ib_counters": text(ETHTOOL)})["ibcounters.link"].message


def test_counters_source_falls_back_to_perfquery_where_sysfs_has_no_counter_files(tmp_path):
    from .areahelp import stand_in
    root = tmp_path / "root"
    (root / "sys/class/infiniband/mlx5_0/ports/1").mkdir(parents=True)
    (root / "sys/class/infiniband/mlx5_0/ports/1/state").write_text("4: ACTIVE\n")
    bin_dir = tmp_path / "bin"
    port1 = PERFQUERY_X.split("# Port extended counters: Lid 1719 port 2")[0]
    stand_in(bin_dir, "perfquery", "cat <<'EOF'\n" + port1 + "EOF")
    secs = run_sources((ibcounters.COUNTERS_SOURCE,), root, bin_dir)
    assert secs["ib_counters"].splitlines()[0] == "perfquery -x -C mlx5_0 -P 1"
    assert ibcounters.snapshot(secs["ib_counters"])["mlx5_0/1"]["symbol_error"] == 0
    assert judge(ibcounters, {"ib_counters": secs["ib_counters"]})["ibcounters.link"] == ["ok"]
    # written for this test, in the words of infiniband-diags when the user may not open the MAD device
    stand_in(bin_dir, "perfquery", "echo \"ibwarn: [3502] mad_rpc_open_port: can't open UMAD port ((null):0)\"; "
                                   "echo \"perfquery: iberror: failed: Failed to open '(null)' port '0'\"; exit 255")
    secs = run_sources((ibcounters.COUNTERS_SOURCE,), root, bin_dir)
    f = findings(ibcounters, {"ib_counters": secs["ib_counters"]})["ibcounters.link"]
    assert f.status.value == "skip" and f.message.startswith("could not read the port counters: perfquery: iberror")
    # with sysfs counter files, perfquery is not run
    (root / "sys/class/infiniband/mlx5_0/ports/1/counters").mkdir()
    (root / "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error").write_text("0\n")
    secs = run_sources((ibcounters.COUNTERS_SOURCE,), root, bin_dir)
    assert "perfquery" not in secs["ib_counters"] and ibcounters.snapshot(secs["ib_counters"]) == {
        "mlx5_0/1": {"symbol_error": 0}}
