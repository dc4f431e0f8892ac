"""Kernel area and the kernel-message rows of the other areas, judged on real posted lines (tests/kmsg/real.toml,
with their addresses), on real healthy kernel logs of ../shared/fixtures, and on CONSTRUCTED lines
(tests/kmsg/constructed.toml) where a test needs damage or a sequence no real post shows."""
import tomllib
from pathlib import Path

import pytest

from nccldiag.areas import ibcounters, kernel, kernlog, pcie_errors, xid
from nccldiag.areas.gpu import Gpu, GpuFacts, PciGpu
from tests import real

from .areahelp import findings, judge
from .test_knowledge_kmsg import HEALTHY_CAPTURES

HERE = Path(__file__).resolve().parents[1] / "kmsg"
REAL: dict = {}  # a page's samples (several excerpts of one thread), joined in order
for _s in tomllib.loads((HERE / "real.toml").read_text(encoding="utf-8"))["sample"]:
    REAL[_s["url"]] = REAL.get(_s["url"], "") + _s["text"]
MADE = {s["what"]: s["text"] for s in tomllib.loads((HERE / "constructed.toml").read_text(encoding="utf-8"))["sample"]}
AREAS = (xid, kernel, pcie_errors, ibcounters)
NEW_CHECKS = {a.NAME: kernlog.checks_of(a.NAME) for a in AREAS}


def log(*urls):
    return {"kernel_log": "\n".join(REAL[u].strip("\n") for u in urls) + "\n"}


def made(what):
    return {"kernel_log": next(t for w, t in MADE.items() if w.startswith(what))}


def test_kernel_checks_on_real_failing_lines():
    raw = log("https://github.com/sonic-net/sonic-buildimage/issues/4822", "https://github.com/equinor/ert/issues/7797",
              "https://github.com/deepspeedai/DeepSpeed/issues/925", "https://github.com/Open-CAS/ocf/issues/408",
              "https://github.com/ovro-lwa/lwa-issues/issues/117")
    assert judge(kernel, raw) == {"kernel.io_hang": ["warn"], "kernel.oom": ["warn"], "kernel.lockups": ["fail"],
                                  "kernel.mce": ["fail"], "kernel.nvidia_fault": ["ok"], "kernel.oops": ["ok"],
                                  "kernel.process_crash": ["ok"],
                                  "kernel.thermal": ["ok"], "kernel.storage_io": ["ok"]}
    f = findings(kernel, raw)
    hung = f["kernel.io_hang"]
    assert hung.actual == {"category": "io_hang", "events": {"kworker/2:1:5747": {"hung-task": 1},
                                                              "ntpd:11794": {"hung-task": 1}}}
    assert "INFO: task kworker/2:1:5747 blocked for more than 120 seconds." in hung.evidence[0]
    assert "kmsg.toml:" in hung.fix and hung.message.startswith("tasks blocked in the kernel")
    assert f["kernel.oom"].actual["events"] == {"1440763 (perl)": {"oom-kill": 1}}
    assert f["kernel.lockups"].actual["category"] == "other:cpu-lockup"
    assert f["kernel.mce"].actual["events"]["MC3"] == {"edac-uncorrected": 1}


def test_a_memory_cgroup_kill_names_the_process_it_killed():
    raw = log("https://github.com/stas00/the-art-of-debugging/blob/6572af6a0dcaec91ff7e66b00d0f300743d5c037/unix/README.md")
    assert judge(kernel, raw)["kernel.oom"] == ["warn"]
    assert findings(kernel, raw)["kernel.oom"].actual["events"] == {"3128934 (ray::_DeepSpeed)": {"oom-kill": 1}}


def test_nfs_server_that_came_back_is_no_hang_and_one_that_did_not_is():
    raw = log("https://github.com/raspberrypi/linux/issues/2482")
    # the server came back (OK), the hung task stays: one event, the task's
    assert findings(kernel, raw)["kernel.io_hang"].actual["events"] == {"objcopy:24916": {"hung-task": 1}}
    f = findings(kernel, made("an NFS server"))["kernel.io_hang"]  # CONSTRUCTED
    assert f.actual["events"] == {"store2": {"nfs-not-responding": 1}}
    # the detector's notice alone (its task line cut) is a hung task all the same (CONSTRUCTED)
    assert judge(kernel, made("the hung-task detector's notice")) == dict(
        {"kernel.io_hang": ["warn"]}, **{c: ["ok"] for c in NEW_CHECKS["kernel"] if c != "kernel.io_hang"})


def test_a_task_reported_hung_for_ten_minutes_and_more_fails_a_task_reported_once_warns():
    """The hung-task detector reports a task only when it did not run since its last look, so the same task
    reported at later times was blocked all along: real, the kernel log committed beside Hugging Face's IDEFICS hang
    logbook (tests/cases, its case.json names the source): rank 0's python reported nine times over 16 minutes in
    a GPFS write (blocked at least 18 minutes), an epilog script once."""
    case = Path(__file__).resolve().parents[1] / "cases" / \
        "node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write" / "dmesg.txt"
    lines = case.read_text(encoding="utf-8").splitlines(keepends=True)
    whole = findings(kernel, {"kernel_log": "".join(lines)})["kernel.io_hang"]
    assert whole.status.value == "fail"
    assert whole.actual["events"] == {"epilog.sh:76609": {"hung-task": 1}, "python:280058": {"hung-task": 9}}
    assert "python:280058: a task blocked in the kernel for minutes (hung task) x9, not run once for at least " \
           "18 minutes" in whole.message
    # the epilog script's one report, and the python task's first four (blocked at least 8 minutes): a hung task
    # that can still come back, a warning
    for upto in ("[Thu Mar  2 15:59:56 2023] task:epilog.sh", "[Sat Mar  4 04:17:00 2023] task:python"):
        cut = next(i for i, line in enumerate(lines) if line.startswith(upto))
        part = findings(kernel, {"kernel_log": "".join(lines[:cut])})["kernel.io_hang"]
        assert part.status.value == "warn", upto
        assert "not run once" not in part.message
    # the same reports on the kernel's clock since boot, and behind syslog's date, are one stretch alike
    assert kernlog.seconds("[26825.855448]") == ("monotonic", 26825.855448)
    assert kernlog.seconds("[Sat Mar  4 04:27:15 2023]")[1] - kernlog.seconds("[Sat Mar  4 04:10:52 2023]")[1] == 983
    assert kernlog.seconds("Mar  4 04:27:15 jean-zay-iam06 kernel:")[1] - \
        kernlog.seconds("Mar  4 04:10:52 jean-zay-iam06 kernel:")[1] == 983
    assert kernlog.seconds("") is None and kernlog.seconds("[not a time]") is None


def test_driver_init_failures_are_the_xid_areas_on_the_gpu_they_name():
    raw = log("https://github.com/NVIDIA/gpu-operator/issues/1146")
    gpu = GpuFacts(gpus=[Gpu(0, "NVIDIA A100", bus_id="0000:07:00.0")], pci_gpus=[PciGpu("0000:0a:00.0")])
    f = findings(xid, raw, gpu=gpu)
    assert f["xid.events"].status.value == "ok" and f["xid.driver_init"].status.value == "fail"
    assert f["xid.driver_init"].actual == {"category": "gpu_lost_xid",
                                           "events": {"0000:0a:00.0": {"nvrm-rminitadapter-failed": 4}}}
    assert "RmInitAdapter failed!" in f["xid.driver_init"].evidence[0]
    # the GPU nvidia-smi knows is named by its index
    raw = log("https://github.com/ublue-os/bazzite/issues/2668")
    f = findings(xid, raw, gpu=gpu)
    assert "GPU0 (0000:07:00.0): the driver could not initialise the GPU" in f["xid.driver_init"].message
    assert f["xid.driver_version"].status.value == "fail"
    assert f["xid.driver_version"].actual["category"] == "cuda_driver_mismatch"


def test_gsp_timeouts_without_their_xid_fail_and_with_it_are_the_xid():
    assert judge(xid, log("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1230"))["xid.gsp"] == ["fail"]
    assert judge(xid, made("a GSP timeout printed without"))["xid.gsp"] == ["fail"]  # CONSTRUCTED
    gsp = {"kernel_log": real.node_text("kernel-xid", "gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt")}
    out = judge(xid, gsp)
    assert out["xid.critical"] == ["fail"] and out["xid.gsp"] == ["ok"]


def test_reset_required_and_out_of_memory_are_read():
    real.require()
    text = (real.ROOT / "cases" / "gpu-sichek51-nccltest-device-busy-gsp-reset-required" / "posted-dmesg.txt").read_text()
    assert judge(xid, {"kernel_log": text})["xid.reset_required"] == ["fail"]
    f = findings(xid, log("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/848"))["xid.driver_alloc"]
    assert f.status.value == "warn" and f.actual["category"] == "gpu_out_of_memory"


def test_driver_calls_failing_with_gpu_is_lost_fail_with_no_xid_line():
    # NV_ERR_GPU_IS_LOST (status 0x0000000f) in GSP RPCs, frees and asserts, with no Xid line in the paste
    for url in ("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/688", "https://github.com/Neroued/ninfer/issues/12"):
        f = findings(xid, log(url))
        assert f["xid.gpu_lost"].status.value == "fail" and f["xid.gpu_lost"].actual["category"] == "gpu_lost_xid"
        assert "0x0000000f" in f["xid.gpu_lost"].evidence[0]
        assert f["xid.events"].status.value == "ok"
    # CONSTRUCTED: the driver's assertion on a status check names NV_ERR_GPU_IN_FULLCHIP_RESET, no lost GPU
    assert judge(xid, {"kernel_log": "[ 1.0] NVRM: nvAssertFailedNoLog: Assertion failed: (status == NV_OK) || "
                                     "(status == NV_ERR_GPU_IN_FULLCHIP_RESET) @ rs_server.c:259\n"})["xid.gpu_lost"] == ["ok"]


def test_an_xid_line_with_an_anonymised_address_counts_on_an_unnamed_gpu():
    f = findings(xid, made("an Xid line whose address"))  # CONSTRUCTED
    assert f["xid.critical"].status.value == "fail"
    assert f["xid.critical"].actual == {"an unnamed GPU": {79: 1, 48: 1, 119: 1, 94: 1}}
    assert "an unnamed GPU: Xid 79 (GPU has fallen off the bus) x1" in f["xid.critical"].message


def test_bar_failures_fail_on_a_gpu_warn_elsewhere_and_clear_when_assigned():
    rock = log("https://github.com/HeyMeco/Rockchip-pcie-devices/issues/2")
    # the device is an NVIDIA GPU the driver could not take: sysfs lists it, nvidia-smi does not
    gpu = GpuFacts(pci_gpus=[PciGpu("0000:01:00.0")])
    f = findings(pcie_errors, rock, gpu=gpu)["pcie_errors.bar"]
    assert f.status.value == "fail" and f.actual["category"] == "pcie_bar_mmio"
    assert f.actual["events"] == {"GPU 0000:01:00.0": {"pci-bar-not-assigned": 4}}
    assert "can't assign; no space" in f.evidence[0]
    # with nothing that says what the device is: a warning
    assert judge(pcie_errors, rock)["pcie_errors.bar"] == ["warn"]
    # the driver's own line names its GPU's BAR unassigned: a failure without any inventory
    assert judge(pcie_errors, log("https://github.com/ublue-os/bazzite/issues/2612"))["pcie_errors.bar"] == ["fail"]
    # bridge windows alone: no event (real); a failure assigned later: no event (CONSTRUCTED)
    assert judge(pcie_errors, log("https://github.com/system76/firmware-open/issues/66"))["pcie_errors.bar"] == ["ok"]
    assert judge(pcie_errors, made("a GPU BAR that failed at the first pass"))["pcie_errors.bar"] == ["ok"]
    assert findings(pcie_errors, made("a GPU BAR left unassigned"))["pcie_errors.bar"].actual["events"] == {
        "0000:41:00.0": {"pci-bar-not-assigned": 2}}



def test_a_bar_left_unset_after_its_firmware_address_conflicts_is_read_and_an_expansion_rom_is_not():
    case = Path(__file__).resolve().parents[1] / "cases"
    bar0 = (case / "list-gaps76e-lkml-pcie-32bit-mmio-exhaustion-64bit-bar0-size-only-conflicts-with-pci-bus-pref-window"
            / "posted-dmesg.txt").read_text(encoding="utf-8")
    f = findings(pcie_errors, {"kernel_log": bar0})["pcie_errors.bar"]
    assert f.status.value == "warn" and f.actual["events"] == {"0002:01:00.0": {"pci-bar-not-assigned": 1}}
    rom = (case / "list-gaps76e-linux-pci-rfc-unassigned-expansion-rom-bar6-cant-claim-no-compatible-bridge-window-healthy"
           / "posted-dmesg.txt").read_text(encoding="utf-8")
    assert judge(pcie_errors, {"kernel_log": rom})["pcie_errors.bar"] == ["ok"]

def test_hotplug_link_down_and_aer_recovery_failures():
    assert judge(pcie_errors, log("https://github.com/lnls-dig/bpm-gw/issues/73"))["pcie_errors.link_down"] == ["warn"]
    assert judge(pcie_errors, made("the hot-plug link-down line"))["pcie_errors.link_down"] == ["warn"]  # CONSTRUCTED
    f = findings(pcie_errors, log("https://github.com/rwth-i6/returnn/issues/1500"))["pcie_errors.kernel_log"]
    assert f.status.value == "fail" and "0000:03:00.0: 1 fatal" in f.message


LORE_GHES_PCIE = "https://lore.kernel.org/netdev/alpine.LRH.2.21.1911141316340.16328@praktifix.dwd.de/"
WRX80E_GHES_PCIE = ("https://github.com/markwdalton/lambdalabs/blob/5ab53603458a936cfe9793906ade832e0dd0dbd1/"
                    "documentation/motherboards/ASUS-WRX80E/M.2-issues-of-performance.md")
PROXMOX_GHES_MEMORY = "https://github.com/prometheus/node_exporter/issues/3511"


def test_a_firmwares_pcie_record_is_an_aer_event_with_its_sections_severity_and_device():
    f = findings(pcie_errors, log(LORE_GHES_PCIE))["pcie_errors.kernel_log"]
    assert f.status.value == "fail" and f.message.endswith("0000:80:03.0: 2 fatal")  # two fatal sections
    assert judge(kernel, log(LORE_GHES_PCIE))["kernel.mce"] == ["ok"]  # the record is not a machine check
    f = findings(pcie_errors, log(WRX80E_GHES_PCIE))["pcie_errors.kernel_log"]
    assert f.status.value == "warn" and f.message.endswith("0000:2c:00.0: 1 corrected")  # the kernel's aer_status too
    assert judge(kernel, log(WRX80E_GHES_PCIE))["kernel.mce"] == ["ok"]


def test_a_firmwares_memory_record_stays_a_machine_check_beside_a_pcie_one():
    raw = log(PROXMOX_GHES_MEMORY, LORE_GHES_PCIE)
    mce = findings(kernel, raw)["kernel.mce"]
    assert mce.status.value == "warn" and mce.actual["events"] == {"an unnamed device": {"ghes-hardware-error": 1}}
    assert judge(kernel, log(PROXMOX_GHES_MEMORY))["kernel.mce"] == ["warn"]
    assert judge(pcie_errors, log(PROXMOX_GHES_MEMORY))["pcie_errors.kernel_log"] == ["ok"]


def test_the_kernels_aer_status_line_without_its_record_is_of_unknown_severity():
    lines = [ln for ln in REAL[WRX80E_GHES_PCIE].splitlines() if "AER" in ln]
    f = findings(pcie_errors, {"kernel_log": "\n".join(lines) + "\n"})["pcie_errors.kernel_log"]
    assert f.status.value == "warn" and f.message.endswith("0000:2c:00.0: 1 of unknown severity")


def test_hca_firmware_failures_are_the_ibcounters_areas():
    raw = log("https://github.com/openucx/ucx/issues/7738", "https://github.com/PeterSuh-Q3/tinycore-redpill/issues/9")
    f = findings(ibcounters, raw)["ibcounters.hca_errors"]
    assert f.status.value == "fail" and f.actual == {"category": "hca_firmware", "events": {
        "0000:61:00.0": {"mlx5-cmd-timeout": 2}, "0000:03:00.0": {"mlx5-probe-failed": 2}}}



def test_an_mlx4_catastrophic_error_and_its_reset_are_an_hca_failure():
    """ConnectX-3's driver dumps its catastrophic-error buffer and resets the device: a failure of the HCA, read
    by the device's address (real); the buffer words and the crdump notice after it are no events of their own."""
    raw = log("https://github.com/wenerme/wener/blob/4b8a83659560560904688e076dd31ebe0bb7018c/notes/os/linux/sys/dmesg-faq.md")
    f = findings(ibcounters, raw)["ibcounters.hca_errors"]
    assert f.status.value == "fail" and f.actual == {"category": "hca_firmware", "events": {
        "0000:82:00.0": {"mlx4-internal-error": 2}}}
    assert "mlx4" in f.message

@pytest.mark.parametrize("parts", HEALTHY_CAPTURES, ids=["/".join(p) for p in HEALTHY_CAPTURES])
def test_healthy_real_kernel_logs_are_ok_in_every_new_check(parts):
    raw = {"kernel_log": real.node_text(*parts)}
    for area in AREAS:
        out = judge(area, raw)
        assert {c: out[c] for c in NEW_CHECKS[area.NAME]} == {c: ["ok"] for c in NEW_CHECKS[area.NAME]}, area.NAME
        if area is pcie_errors:
            assert out["pcie_errors.bar"] == ["ok"]


def test_not_collected_and_unreadable_logs_are_skips_not_ok():
    for area in AREAS:
        for raw in ({}, {"kernel_log": "nccldiag: kernel log unreadable\nnccldiag: kernel log lines 0\n"}):
            out = judge(area, raw)
            assert all(out[c] == ["skip"] for c in NEW_CHECKS[area.NAME]), (area.NAME, out)
    assert findings(kernel, {"kernel_log": "nccldiag: kernel log lines 7\n"})["kernel.oom"].message == (
        "no process killed by the OOM killer in the kernel log since boot (7 lines read)")


def test_check_on_a_bundle_reports_the_failures_the_kernel_log_alone_shows(tmp_path):
    """`nccldiag check --bundle` on a node whose only sign is its kernel log: a GPU the driver could not
    initialise (real lines), a BAR left unassigned and a hung task: not "nothing broken"."""
    from . import bundles as B

    kernel_log = "\n".join([REAL["https://github.com/NVIDIA/gpu-operator/issues/1146"].strip("\n"),
                            REAL["https://github.com/HeyMeco/Rockchip-pcie-devices/issues/2"].strip("\n"),
                            REAL["https://github.com/gluster/gluster-health-report/pull/19"].strip("\n")]) + "\n"
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": {"kernel_log": kernel_log}})
    code, rep = B.check_json(bundle)
    assert code == 1
    got = {f["check"]: f["status"] for f in B.findings(rep) if f["area"] in ("xid", "kernel", "pcie_errors")}
    assert got["xid.driver_init"] == "fail" and got["kernel.io_hang"] == "warn"
    assert got["pcie_errors.bar"] == "warn"  # nothing in this bundle says the device is a GPU
    assert got["xid.events"] == "ok" and got["kernel.oom"] == "ok"
    f = next(f for f in B.findings(rep) if f["check"] == "xid.driver_init")
    assert f["actual"]["category"] == "gpu_lost_xid"


def test_nvswitch_sxids_fail_when_fatal_and_warn_when_not():
    fatal = findings(xid, log("https://github.com/leptonai/gpud/blob/211f86c728d5a6ce10a5ce97306d5e33e250727a/"
                              "components/accelerator/nvidia/error/sxid/README.md"))["xid.nvswitch"]
    assert fatal.status.value == "fail" and fatal.actual == {"category": "nvlink_error", "events": {
        "0000:06:00.0": {"nvswitch-sxid-fatal": 1}, "0000:05:00.0": {"nvswitch-sxid-fatal": 1},
        "0000:07:00.0": {"nvswitch-sxid-fatal": 1}}}  # the Severity and Data lines are the events' detail
    assert "20034, Fatal, Link 48 LTSSM Fault Up" in fatal.evidence[0]
    other = findings(xid, log("https://github.com/NVIDIA/nvtrust/issues/124"))
    assert other["xid.nvswitch"].status.value == "warn" and other["xid.events"].status.value == "ok"
    assert other["xid.nvswitch"].actual["events"] == {"0000:04:00.0": {"nvswitch-sxid-nonfatal": 1}}


def test_storage_io_errors_fail_and_nvme_timeouts_warn_per_device():
    raw = log("https://github.com/MichaIng/DietPi/issues/2353", "https://github.com/raspberrypi/linux/issues/885",
              "https://github.com/coreos/fedora-coreos-tracker/issues/784")
    f = findings(kernel, raw)["kernel.storage_io"]
    assert f.status.value == "fail" and f.actual == {"category": "other:storage-io-error", "events": {
        "mmcblk0p2": {"ext4-fs-error": 1, "buffer-io-error": 2}, "sda": {"block-io-error": 1},
        "sda1": {"buffer-io-error": 1}, "vda4": {"xfs-metadata-error": 2}}}
    nvme = findings(kernel, log("https://github.com/linux-surface/linux-surface/issues/733"))["kernel.storage_io"]
    assert nvme.status.value == "warn" and nvme.actual["events"] == {"nvme0": {"nvme-io-timeout": 1}}
    # an empty optical or floppy drive's errors are no failing disk (CONSTRUCTED from the real lines' wording)
    drives = {"kernel_log": "[    5.1] blk_update_request: I/O error, dev fd0, sector 0\n"
                            "[    5.2] Buffer I/O error on dev sr0, logical block 0, async page read\n"
                            "[    5.3] I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0\n"}
    assert judge(kernel, drives)["kernel.storage_io"] == ["ok"]


def test_ipoib_transmit_timeouts_warn_on_their_interface():
    f = findings(ibcounters, log("https://lists.openfabrics.org/pipermail/general/2008-April/049717.html"))
    assert f["ibcounters.ipoib_tx_timeout"].status.value == "warn"
    assert f["ibcounters.ipoib_tx_timeout"].actual == {"category": "other:ipoib-tx-timeout",
                                                       "events": {"ib1": {"ipoib-tx-timeout": 1}}}


def test_oopses_and_kernel_bugs_fail_a_crash_in_an_nvidia_library_warns_on_its_process():
    f = findings(kernel, log("https://github.com/ROCm/hip/issues/15",
                             "https://lore.kernel.org/r/20241115130313.46826-3-njavali@marvell.com"))["kernel.oops"]
    assert f.status.value == "fail" and f.actual == {"category": "other:kernel-oops", "events": {
        "an unnamed device": {"kernel-bug": 2, "kernel-oops": 2}}}
    assert "BUG: unable to handle kernel NULL pointer" in f.evidence[0] and f.evidence[-1].endswith("[#1] SMP PTI")
    crash = findings(kernel, log("https://github.com/zed-industries/zed/issues/35758"))["kernel.process_crash"]
    assert crash.status.value == "warn" and crash.actual == {
        "category": "other:process-crash-in-gpu-library",
        "events": {"zed-editor[11804]": {"gpu-library-crash": 1}, "zed-editor[1005460]": {"gpu-library-crash": 1}}}
    # a process's crash in another library, and a user-space general protection fault there, are no row's
    # (CONSTRUCTED from the real lines' wording)
    other = {"kernel_log": "[ 10.1] python3[4242]: segfault at 0 ip 00007f01 sp 00007ffe error 4 in libc.so.6[7f00+1000]\n"
                           "[ 10.2] traps: python3[4243] general protection fault ip:7f02 sp:7ffe error:0 in libz.so.1[7f00+10]\n"}
    assert judge(kernel, other)["kernel.process_crash"] == ["ok"] and judge(kernel, other)["kernel.oops"] == ["ok"]


def test_cpu_throttling_warns_until_its_cpu_is_back_to_normal():
    hot = findings(kernel, log("https://github.com/erpalma/throttled/issues/239"))["kernel.thermal"]
    assert hot.status.value == "warn" and hot.actual == {"category": "other:cpu-thermal-throttle", "events": {
        "CPU1: Core": {"cpu-thermal-throttle": 1}, "CPU1: Package": {"cpu-thermal-throttle": 1},
        "CPU5: Package": {"cpu-thermal-throttle": 1}, "CPU3: Package": {"cpu-thermal-throttle": 1}}}
    # each CPU that throttled came back to normal: nothing is left
    assert judge(kernel, log("https://github.com/erpalma/throttled/issues/186"))["kernel.thermal"] == ["ok"]


def test_a_firmware_hardware_error_warns_and_an_earlier_boots_record_does_not():
    f = findings(kernel, log("https://github.com/prometheus/node_exporter/issues/3511"))["kernel.mce"]
    assert f.status.value == "warn" and f.actual["events"] == {"an unnamed device": {"ghes-hardware-error": 1}}
    bert = {"kernel_log": "[    0.942261] [Hardware Error]: event severity: fatal\n"}  # real: linux-surface#390
    assert judge(kernel, bert)["kernel.mce"] == ["ok"]


def test_a_gpu_the_driver_does_not_support_fails_its_own_check_and_is_no_event():
    f = findings(xid, log("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/393"))
    assert f["xid.driver_unsupported"].status.value == "fail"
    assert f["xid.driver_unsupported"].actual == {"category": "other:gpu-not-supported-by-driver", "events": {
        "an unnamed device": {"nvrm-gpu-unsupported": 1}}}
    assert f["xid.driver_init"].status.value == "fail"  # its probe failed: the catalog's cause explains that
    assert "xid.driver_unsupported" in kernlog.NO_EVENT_CHECKS
    opened = findings(xid, log("https://github.com/NVIDIA/open-gpu-kernel-modules/issues/322"))
    assert opened["xid.driver_unsupported"].status.value == "fail" and opened["xid.driver_init"].status.value == "ok"


def test_error_completions_of_an_mlx5_hca_warn():
    f = findings(ibcounters, log("https://github.com/linux-nvme/nvme-cli/issues/3268"))["ibcounters.cqe_errors"]
    assert f.status.value == "warn" and f.actual == {"category": "ib_completion_error",
                                                     "events": {"an unnamed device": {"mlx5-error-cqe": 2}}}



def test_a_cable_module_error_warns_and_plugging_a_cable_or_a_slot_short_of_power_does_not():
    f = findings(ibcounters, log("https://github.com/leptonai/gpud/blob/2415928b747aec1cb86a90b0fb4957e99fd5442a/"
                                 "components/accelerator/nvidia/infiniband/kmsg_matcher.go"))["ibcounters.module_errors"]
    assert f.status.value == "warn" and f.actual == {"category": "ib_port_down", "events": {
        "an unnamed device": {"mlx5-module-error": 1}}}
    # modules plugged and unplugged (the link-flap captures) and a slot reported short of power (a healthy H100
    # node's boot log) are HEALTHY_CAPTURES

KERNEL_CAPTURES = tuple(sorted(
    p.relative_to(real.ROOT / "node").parts for p in (real.ROOT / "node").rglob("*")
    if p.is_file() and (p.parts[-2].startswith(("kernel-", "dmesg")) or "dmesg" in p.name or "journal" in p.name)))


@pytest.mark.parametrize("parts", KERNEL_CAPTURES, ids=["/".join(p) for p in KERNEL_CAPTURES])
def test_every_real_kernel_log_capture_is_ok_in_the_nvswitch_storage_ipoib_crash_thermal_and_cqe_checks(parts):
    raw = {"kernel_log": real.node_text(*parts)}
    assert judge(xid, raw)["xid.nvswitch"] == ["ok"]
    assert judge(xid, raw)["xid.driver_unsupported"] == ["ok"]
    out = judge(kernel, raw)
    assert {c: out[c] for c in ("kernel.storage_io", "kernel.oops", "kernel.process_crash", "kernel.thermal",
                                "kernel.mce")} == {c: ["ok"] for c in ("kernel.storage_io", "kernel.oops",
                                                                         "kernel.process_crash", "kernel.thermal",
                                                                         "kernel.mce")}
    assert judge(ibcounters, raw)["ibcounters.ipoib_tx_timeout"] == ["ok"]
    assert judge(ibcounters, raw)["ibcounters.cqe_errors"] == ["ok"]
    assert judge(ibcounters, raw)["ibcounters.module_errors"] == ["ok"]


def test_check_on_a_bundle_names_a_fatal_sxid_of_its_kernel_log(tmp_path):
    """`nccldiag check --bundle` on a node whose kernel log holds fatal SXids (real lines): the NVSwitch check fails
    with the NVLink error's category and cites the line."""
    from . import bundles as B

    url = "https://github.com/leptonai/gpud/blob/211f86c728d5a6ce10a5ce97306d5e33e250727a/components/accelerator/" \
          "nvidia/error/sxid/README.md"
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": {"kernel_log": REAL[url]}})
    code, rep = B.check_json(bundle)
    assert code == 1
    f = next(f for f in B.findings(rep) if f["check"] == "xid.nvswitch")
    assert f["status"] == "fail" and f["actual"]["category"] == "nvlink_error"
    assert any("SXid (PCI:0000:06:00.0): 20034, Fatal" in e for e in f["evidence"])
    # the diagnosis reads the finding's fatal SXid lines by their words: the NVSwitch cause, not unexplained
    assert [(d["category"], d["severity"], d["id"]) for d in rep["diagnoses"]][:1] == [
        ("nvlink_error", "fail", "nvswitch-fatal-sxid")]


def test_a_journal_line_without_its_host_name_is_read_as_with_it():
    """journalctl or syslog lines whose host name the poster left out ('Mar 27 17:40:36 kernel: NVRM: Xid ...'),
    real, from the in-repo case of an NVIDIA developer forum post (tests/cases, its case.json names the source):
    the prefix is the time and the 'kernel:' ident, the message the driver's line, as with a host."""
    from pathlib import Path

    from nccldiag.areas import kernlog, xid

    case = Path(__file__).resolve().parents[1] / "cases" / \
        "gpu-nvforum-rtxpro6000-journal-xid120-xid62-gsp-crash-reset-required" / "posted-journal.txt"
    lines = [l for l in case.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert lines and all(l.startswith(("Mar 29 ", "Mar 27 ")) and " kernel: NVRM: " in l for l in lines)
    for line in lines:
        when, text = kernlog.split_line(line)
        assert when.endswith(" kernel:") and text.startswith("NVRM: "), (when, text)
        with_host = line.replace(" kernel: ", " gpu01 kernel: ", 1)  # the same line with a host (CONSTRUCTED)
        assert kernlog.split_line(with_host)[1] == text
    log = kernlog.KernelLog(read=True, lines=[kernlog.split_line(l) for l in lines])
    assert {e.code for e in xid.parse_events(log).events} >= {120, 62, 154}
