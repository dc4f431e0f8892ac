"""PCIe error area: AER counters (sysfs), GPU replay counters, AER events in the kernel log."""
import os

from nccldiag.areas import pcie_errors
from tests import real
from tests.trees import write_tree

from .areahelp import findings, judge, run_sources

AER_ZERO = ("pcie-aer", "node_exporter-ttar-aer-dev-counters-nvme-all-zero.txt")
REPLAYS = ("pcie-aer", "gpud-8x-h100-535.183.01-replays-since-reset-58-120-full-q.txt")
POPOS = ("pcie-aer", "popos3363-amd-1022-1453-rootport-correctable-timeout-badtlp-journal.txt")
NBFC = ("pcie-aer", "nbfc181-intel-9d15-corrected-receiver-error-old-format-id-nl-month.txt")
BOOT = ("kernel-xid", "gpud-h100-boot-dmesg-decode-nvrm-nvswitch-no-xid-healthy.txt")


def text(capture):
    return real.node_text(*capture)


def test_aer_counters_all_zero_are_healthy():
    f = findings(pcie_errors, {"aer_sysfs": text(AER_ZERO)})["pcie_errors.aer"]
    assert f.status.value == "ok" and f.message == "no uncorrectable PCIe errors on 2 GPU/NIC functions"
    devs = pcie_errors.parse_aer(text(AER_ZERO)).devices
    assert sorted(d.bdf for d in devs) == ["0000:01:00.0", "0000:45:00.0"]
    assert all(set(d.counts) == {"correctable", "nonfatal", "fatal"} for d in devs)


def test_fatal_nonfatal_and_many_correctable():
    # written for this test: the real all-zero counters with errors counted on the first device
    t = text(AER_ZERO)
    fatal = t.replace("TOTAL_ERR_FATAL 0", "TOTAL_ERR_FATAL 1", 1)
    f = findings(pcie_errors, {"aer_sysfs": fatal})["pcie_errors.aer"]
    assert f.status.value == "fail" and f.actual["0000:01:00.0"]["fatal"] == 1
    nonfatal = t.replace("TOTAL_ERR_NONFATAL 0", "TOTAL_ERR_NONFATAL 2", 1)
    assert judge(pcie_errors, {"aer_sysfs": nonfatal})["pcie_errors.aer"] == ["warn"]
    few = t.replace("TOTAL_ERR_COR 0", "TOTAL_ERR_COR 100", 1)
    assert judge(pcie_errors, {"aer_sysfs": few})["pcie_errors.aer"] == ["ok"]
    many = t.replace("TOTAL_ERR_COR 0", "TOTAL_ERR_COR 101", 1)
    assert judge(pcie_errors, {"aer_sysfs": many})["pcie_errors.aer"] == ["warn"]


def test_replays_are_judged_as_a_rate_over_the_uptime():
    raw = {"nvidia_smi_full": text(REPLAYS)}
    f = findings(pcie_errors, raw)["pcie_errors.replays"]
    assert f.status.value == "ok" and f.actual == 652 and len(f.evidence) == 8
    # written for this test: uptimes of 10 minutes (more than 8 replays a minute on some GPUs) and of a day
    short = findings(pcie_errors, dict(raw, aer_sysfs="uptime: 600.5\n"))["pcie_errors.replays"]
    assert short.status.value == "warn" and "GPU 0000:19:00.0" not in short.message  # 67 replays: 6.7 a minute
    assert judge(pcie_errors, dict(raw, aer_sysfs="uptime: 86400\n"))["pcie_errors.replays"] == ["ok"]


def test_replays_in_the_old_spelling_and_skips_that_say_why():
    # written for this test: the real report with the key as drivers before 460 spell it, "Replays since reset"
    old = text(REPLAYS).replace("Replays Since Reset", "Replays since reset")
    f = findings(pcie_errors, {"nvidia_smi_full": old})["pcie_errors.replays"]
    assert f.status.value == "ok" and f.actual == 652
    assert "not collected" in findings(pcie_errors, {})["pcie_errors.replays"].message
    f = findings(pcie_errors, {"nvidia_smi_full": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"})
    assert "could not read nvidia-smi -q" in f["pcie_errors.replays"].message


def test_kernel_log_aer_events_in_three_formats():
    f = findings(pcie_errors, {"kernel_log": text(POPOS)})["pcie_errors.kernel_log"]
    assert f.status.value == "warn" and f.actual == {"0000:00:03.1": {"corrected": 3}}
    f = findings(pcie_errors, {"kernel_log": text(NBFC)})["pcie_errors.kernel_log"]
    assert f.actual == {"0000:00:1c.5": {"corrected": 1}}
    assert judge(pcie_errors, {"kernel_log": text(BOOT)})["pcie_errors.kernel_log"] == ["ok"]
    # written for this test: an uncorrected fatal event in the kernel's wording
    fatal = ("[ 7.1] pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0\n"
             "[ 7.1] nvidia 0000:01:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)\n")
    f = findings(pcie_errors, {"kernel_log": fatal})["pcie_errors.kernel_log"]
    assert f.status.value == "fail" and f.actual == {"0000:01:00.0": {"fatal": 1}}


def test_aer_source_reads_nvidia_and_mellanox_functions(tmp_path):
    root = tmp_path / "root"
    write_tree(text(AER_ZERO), str(root))
    devices = root / "sys" / "bus" / "pci" / "devices"
    devices.mkdir(parents=True)
    for bdf, rel, vendor in (("0000:01:00.0", "pci0000:00/0000:00:02.1/0000:01:00.0", "0x10de"),
                             ("0000:45:00.0", "pci0000:40/0000:40:01.3/0000:45:00.0", "0x144d")):
        target = root / "sys" / "devices" / rel
        assert (target / "aer_dev_fatal").is_file(), target
        # written for this test: vendor and class of the captured functions (an NVIDIA one, and one skipped)
        (target / "vendor").write_text(vendor + "\n")
        (target / "class").write_text("0x030200\n")
        os.symlink(os.path.relpath(target, devices), devices / bdf)
    (root / "proc").mkdir()
    (root / "proc" / "uptime").write_text("3600.25 7000.00\n")
    secs = run_sources((pcie_errors.AER_SOURCE,), root)
    facts = pcie_errors.parse_aer(secs["aer_sysfs"])
    assert facts.uptime_s == 3600.25
    assert [(d.bdf, d.vendor) for d in facts.devices] == [("0000:01:00.0", "0x10de")]
    assert facts.devices[0].total("correctable") == 0 and len(facts.devices[0].counts) == 3
