"""Xid area: the kernel log's Xid lines in every prefix, classified, per GPU; the shared kernel_log source."""
import pytest

from nccldiag.areas import kernlog, xid
from nccldiag.areas.gpu import Gpu, GpuFacts
from tests import real

from .areahelp import findings, judge, run_sources, stand_in

KIND = "kernel-xid"
GSP = "gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt"
DBE = "gpud-dmesg-iso-xid48-dbe-xid63-remap-xid94-peermem.txt"
APP = "gpud-dmesg-decode-iso-xid13-sm-exceptions-xid43.txt"
HEALTHY = "gpud-h100-boot-dmesg-decode-nvrm-nvswitch-no-xid-healthy.txt"
MMU = "ogkm1030-rtx5070ti-595-dmesg-xid31-mmu-fault-channel-hex.txt"

EXPECTED = {
    GSP: {"xid.critical": ["fail"]},
    DBE: {"xid.critical": ["fail"], "xid.memory": ["warn"]},
    APP: {"xid.application": ["warn"]},
    HEALTHY: {"xid.events": ["ok"]},
    MMU: {"xid.application": ["warn"]},
}


def raw(name):
    return {"kernel_log": real.node_text(KIND, name)}


@pytest.mark.parametrize("name", real.names(real.NODE / KIND))
def test_every_capture_is_judged_as_expected(name):
    assert judge(xid, raw(name)) == EXPECTED[name]


def test_counts_and_last_occurrence_per_gpu_with_its_index():
    gpu = GpuFacts(gpus=[Gpu(4, "NVIDIA H100 80GB HBM3", bus_id="0000:9b:00.0")])
    f = findings(xid, raw(GSP), gpu=gpu)["xid.critical"]
    assert f.actual == {"GPU4 (0000:9b:00.0)": {119: 5}}
    assert "GPU4 (0000:9b:00.0): Xid 119 (GSP RPC timeout) x5; last [Sun Feb 23 16:30:13 2025]" in f.message
    assert "Drain the node" in f.fix and f.evidence


def test_uuid_line_maps_the_gpu_when_the_bus_ids_differ_in_form():
    # the driver's "GPU at PCI:0000:01:00: GPU-4e39..." names the GPU; the gpu area knows it by UUID only
    gpu = GpuFacts(gpus=[Gpu(0, "RTX 5070 Ti", uuid="GPU-4e391288-897c-ba5d-6944-dfbea55ebcfa")])
    f = findings(xid, raw(MMU), gpu=gpu)["xid.application"]
    assert "GPU0 (0000:01:00.0): Xid 31 (GPU memory page fault) x1" in f.message


def test_dbe_capture_separates_drain_codes_from_the_remap_event():
    f = findings(xid, raw(DBE))
    assert f["xid.critical"].actual == {"0000:19:00.0": {48: 1, 94: 9}}
    assert f["xid.memory"].actual == {"0000:19:00.0": {63: 1}}


def test_recovery_action_cleared_is_not_a_drain():
    # written for this test, in the layout of Xid 154 lines: the recovery action going back to None
    line = "[ 99.1] NVRM: Xid (PCI:0000:19:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"
    assert judge(xid, {"kernel_log": line}) == {"xid.memory": ["warn"]}
    line = line.replace("from 0x1 (GPU Reset Required) to 0x0 (None)", "from 0x0 (None) to 0x2 (Node Reboot Required)")
    assert judge(xid, {"kernel_log": line}) == {"xid.critical": ["fail"]}


def test_not_collected_and_unreadable_are_skips_not_ok():
    assert judge(xid, {}) == {"xid.events": ["skip"]}
    assert judge(xid, {"kernel_log": "nccldiag: kernel log unreadable\nnccldiag: kernel log lines 0\n"}) == {"xid.events": ["skip"]}
    assert judge(xid, {"kernel_log": "nccldiag: kernel log lines 1834\n"}) == {"xid.events": ["ok"]}


def test_hostile_text_never_raises():
    for text in ("NVRM: Xid (PCI:zz): x", "NVRM: Xid (PCI:0000:01:00): 99999999999999999999, y", "\x00\t \n", "[" * 500):
        xid.judge(xid.parse({"kernel_log": text}), None)


def test_kernel_log_source_keeps_the_event_lines_and_counts_what_it_read(tmp_path):
    bin_dir = tmp_path / "bin"
    # the DBE capture ends without a newline: echo ends its last line, as the next kernel message would
    stand_in(bin_dir, "dmesg", f"cat '{real.node(KIND, DBE)}'; echo; cat '{real.node(KIND, HEALTHY)}'")
    secs = run_sources(xid.SOURCES, tmp_path / "root", bin_dir)
    lines = secs["kernel_log"].strip().splitlines()
    total = len((real.node_text(KIND, DBE).rstrip("\n") + "\n" + real.node_text(KIND, HEALTHY)).splitlines())
    assert lines[-1] == f"nccldiag: kernel log lines {total}"
    assert sum("NVRM: Xid" in l for l in lines) == 11
    assert not any("peermem" in l for l in lines)  # not an event line: filtered on the node
    assert judge(xid, secs)["xid.critical"] == ["fail"]


def test_kernel_log_source_says_unreadable_when_dmesg_and_journalctl_refuse(tmp_path):
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    stand_in(bin_dir, "journalctl", "exit 1")
    secs = run_sources((kernlog.SOURCE,), tmp_path / "root", bin_dir)
    assert kernlog.parse(secs["kernel_log"]).read is False
    assert judge(xid, secs) == {"xid.events": ["skip"]}
