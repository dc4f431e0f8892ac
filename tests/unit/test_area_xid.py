"""Xid area: the kernel log's Xid lines in every prefix, classified, per GPU; the shared kernel_log source."""
import pytest

from nccldiag.areas import kernlog, xid
from nccldiag.areas.gpu import Gpu, GpuFacts
from tests import real

from .areahelp import findings as findings_all
from .areahelp import judge as judge_all
from .areahelp import run_sources, stand_in

# the checks of the driver's other messages (nccldiag/knowledge/kmsg.toml), ok or skipped with the Xid checks
DRIVER_CHECKS = tuple(kernlog.checks_of("xid"))


def judge(area, raw, **facts):
    """The Xid checks' statuses; the driver-message checks left out where they are ok (tested apart below)."""
    out = judge_all(area, raw, **facts)
    for check in DRIVER_CHECKS:
        if out.get(check) == ["ok"]:
            del out[check]
    return out


def findings(area, raw, **facts):
    return {c: f for c, f in findings_all(area, raw, **facts).items()
            if not (c in DRIVER_CHECKS and f.status.value == "ok")}


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
    assert judge(xid, {"kernel_log": line}) == {"xid.events": ["ok"]}
    f = findings(xid, {"kernel_log": line})["xid.events"]
    assert "informational only" in f.message and "Xid 154 (GPU recovery action changed to None)" in f.message
    line = line.replace("from 0x1 (GPU Reset Required) to 0x0 (None)", "from 0x0 (None) to 0x2 (Node Reboot Required)")
    f = findings(xid, {"kernel_log": line})["xid.critical"]
    assert f.status.value == "fail" and "to Node Reboot Required" in f.message and f.fix.startswith("Drain the node. Reboot it")
    line = line.replace("0x2 (Node Reboot Required)", "0x4 (Drain and Reset)")
    assert judge(xid, {"kernel_log": line}) == {"xid.critical": ["fail"]}


# written for this test, in the layout of the driver's multi-line notice (continuation lines indented, no time
# stamp, as dmesg prints one record of several lines) and of its probe-failure line
NOTICE = """[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
               NVRM: (PCI ID: 10de:26b5) installed in this system has
               NVRM: fallen off the bus and is not responding to commands.
[ 1843.309001] NVRM: The NVIDIA probe routine failed for 1 device(s).
[ 1843.309002] NVRM: None of the NVIDIA devices were initialized.
"""


def test_a_gpu_lost_without_an_xid_line_is_critical_on_its_bus():
    gpu = GpuFacts(gpus=[Gpu(2, "NVIDIA L40S", bus_id="0000:b3:00.0")])
    f = findings(xid, {"kernel_log": NOTICE}, gpu=gpu)
    assert judge(xid, {"kernel_log": NOTICE}) == {"xid.critical": ["fail"], "xid.driver_init": ["fail"]}
    assert f["xid.critical"].actual == {"GPU2 (0000:b3:00.0)": {79: 1}}
    assert "Xid 79 (GPU has fallen off the bus) x1" in f["xid.critical"].message
    # the probe routine's failure and the driver giving up on every device: the driver could not take the GPU
    init = f["xid.driver_init"]
    assert init.actual == {"category": "gpu_lost_xid", "events": {"an unnamed device": {"nvrm-probe-routine": 2}}}
    assert "probe routine failed" in init.evidence[0] and "kmsg.toml:" in init.fix
    # the notice followed by its Xid 79 line is one event
    both = NOTICE.splitlines()[0:3] + ["[ 1843.308200] NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."]
    assert findings(xid, {"kernel_log": "\n".join(both)})["xid.critical"].actual == {"0000:b3:00.0": {79: 1}}
    # a probe failure with no notice before it still fails
    assert judge(xid, {"kernel_log": NOTICE.splitlines()[3]}) == {"xid.events": ["ok"], "xid.driver_init": ["fail"]}


def test_kernel_log_source_keeps_the_lost_gpu_notice_lines(tmp_path):
    bin_dir = tmp_path / "bin"
    text = tmp_path / "dmesg.txt"
    text.write_text("[ 1.0] unrelated line\n" + NOTICE)
    stand_in(bin_dir, "dmesg", f"cat '{text}'")
    secs = run_sources(xid.SOURCES, tmp_path / "root", bin_dir)
    lines = secs["kernel_log"].splitlines()
    assert sum("NVRM:" in l for l in lines) == 5 and not any("unrelated" in l for l in lines)
    assert judge(xid, secs) == {"xid.critical": ["fail"], "xid.driver_init": ["fail"]}


def test_a_cleanup_caused_by_a_previous_nvlink_xid_takes_its_class():
    # in the format of the lines posted in NVIDIA/open-gpu-kernel-modules#1150 (driver 590, GB200-class NVLink 5)
    lines = ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149\n"
             "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid 145\n")
    f = findings(xid, {"kernel_log": lines})
    assert set(f) == {"xid.critical"}
    assert "Xid 45 (preemptive cleanup, due to previous errors, caused by Xid 149 (NVLink NETIR error)) x1" in f["xid.critical"].message
    assert "Xid 149: reset the GPU" in f["xid.critical"].fix
    # alone, or after an application error, it stays the job's
    alone = "NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001 caused by previous Xid 13"
    assert judge(xid, {"kernel_log": alone}) == {"xid.application": ["warn"]}


def test_nvlink5_codes_fatal_drain_nonfatal_watch():
    # in the format of the NVLink 5 lines quoted in leptonai/gpud#1160 and #1174
    fatal = ("NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 "
             "(0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
    nonfatal = ("NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 "
                "(0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)")
    assert judge(xid, {"kernel_log": fatal}) == {"xid.critical": ["fail"]}
    f = findings(xid, {"kernel_log": nonfatal})
    assert set(f) == {"xid.other"} and "Xid 145 (NVLink RLW error, non-fatal)" in f["xid.other"].message


def test_mig_attributed_lines_and_the_reset_flags_of_memory_errors():
    # written for this test, in the layout the driver prints for an Xid on a MIG instance
    mig = "NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 31, pid=7, name=python, Ch 00000008, intr 00000000"
    assert findings(xid, {"kernel_log": mig})["xid.application"].actual == {"0000:3b:00.0": {31: 1}}
    # the real case's Xid 94 reads "RST: No, D-RST: No"; written for this test: the same with the reset flag set
    flagged = "NVRM: Xid (PCI:0000:00:08): 63, pid='<unknown>', name=<unknown>, Row remapper: RST: Yes, D-RST: No"
    assert judge(xid, {"kernel_log": flagged}) == {"xid.critical": ["fail"]}


def test_every_class_has_a_documented_action_and_the_docs_list_the_table():
    from pathlib import Path
    docs = (Path(__file__).resolve().parents[2] / "docs" / "xid.md").read_text()
    assert xid.CATALOGUE.split(", ")[1] in docs
    for code, (kind, meaning, action) in xid.CODES.items():
        assert kind in xid.CLASSES and meaning and action, code
        if kind != "unused":
            assert f"| {code} |" in docs, code


def test_not_collected_and_unreadable_are_skips_not_ok():
    skipped = {c: ["skip"] for c in ("xid.events",) + DRIVER_CHECKS}
    assert judge(xid, {}) == skipped
    assert judge(xid, {"kernel_log": "nccldiag: kernel log unreadable\nnccldiag: kernel log lines 0\n"}) == skipped
    assert judge_all(xid, {"kernel_log": "nccldiag: kernel log lines 1834\n"}) == {c: ["ok"] for c in ("xid.events",) + DRIVER_CHECKS}
    assert "(1834 lines read)" in findings_all(xid, {"kernel_log": "nccldiag: kernel log lines 1834\n"})["xid.driver_init"].message


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
    assert judge(xid, secs) == {c: ["skip"] for c in ("xid.events",) + DRIVER_CHECKS}


def test_the_device_plugins_relay_of_an_xid_is_that_xid_on_the_gpu_it_names():
    # real: the Kubernetes device plugin's health log as NVIDIA's GPU Operator troubleshooting page shows it
    # (tests/cases/gpu-gpuoperator-docs-*-device-plugin-*), bare and behind klog's prefix
    from pathlib import Path
    cases = Path(__file__).resolve().parents[1] / "cases"
    text = "\n".join((cases / c / f).read_text(encoding="utf-8") for c, f in (
        ("gpu-gpuoperator-docs-device-plugin-xid48-marking-device-unhealthy", "posted-device-plugin-log.txt"),
        ("gpu-gpuoperator-docs-node-7-allocatable-gpus-device-plugin-xid79-unhealthy",
         "posted-describe-node-and-device-plugin.txt")))
    events = xid.parse_events(kernlog.parse(text)).events
    assert [(e.bus, e.code, e.kind) for e in events] == [
        ("GPU-e3dbf294-2783-f38b-4274-5bc836df5be1", 48, "reset"),
        ("GPU-adb24b25-1db1-436e-d958-ddee5da83d07", 79, "reboot"),
    ], events
    assert events[0].when == "" and "health.go:185]" in events[1].line
    # the plugin's other lines of the same event ('Processing event ...', 'device marked unhealthy: ...') are no
    # second event, and the node's description beside them is no event at all
    assert all("XidCriticalError" in e.line for e in events)


def test_an_xid_the_operators_give_as_a_nodes_reason_in_the_schedulers_node_list_is_that_xid_on_that_node():
    # real: PBS's 'pbsnodes -l' as ALCF's user guide shows it (tests/cases/node-alcf-docs-pbsnodes-*): the node
    # taken offline for Xid 74 is that Xid on that node; the one offline for a firmware check is no event
    from pathlib import Path
    cases = Path(__file__).resolve().parents[1] / "cases"
    text = (cases / "node-alcf-docs-pbsnodes-offline-comment-xid74-gpus-need-reseat" / "posted-pbsnodes.txt").read_text(
        encoding="utf-8")
    events = xid.parse_events(kernlog.parse(text)).events
    assert [(e.bus, e.code, e.kind, e.text) for e in events] == [
        ("x3014c0s19b0n0", 74, "reset", "GPUs need reseat")], events
    # no line of a working run is read so: the healthy cases (sinfo of idle nodes, pods running, nvidia-smi of
    # busy GPUs, ...) and the healthy kernel captures of ../shared/fixtures
    for case in sorted(cases.glob("*-healthy")):
        for f in case.iterdir():
            if f.name != "case.json":
                assert not xid.parse_events(kernlog.parse(f.read_text(encoding="utf-8"))).events, f
