"""Firmware area: infoROM warning, VBIOS per model, HCA firmware per model, fabric manager against the driver."""
from nccldiag.areas import firmware
from nccldiag.areas.base import NodeFacts
from nccldiag.areas import consistency
from tests import real

from .areahelp import findings, judge

INFOROM = ("firmware", "azhpc-8x-v100-460-inforom-corrupted-warning.txt")
VBIOS = ("firmware", "gpud-h100-535-gpu0-vbios-inforom-gsp-section.txt")
MLX_FW = ("firmware", "gpud-h100-dmesg-mlx5-firmware-version-cx7-cx6dx-12-funcs-selected.txt")
FULL_Q = ("gpu-throttle", "gpud-8x-h100-535.161.08-hw-power-brake-slowdown-active-full-q.txt")
FM_START = ("fabric-manager", "gpud-hgx-h100-fm-535-startup-4-nvswitch-8-gpu-registered.txt")


def text(capture):
    return real.node_text(*capture)


def test_corrupted_inforom_fails():
    real.require()
    f = findings(firmware, {"nvidia_smi_full": text(INFOROM)})["firmware.inforom"]
    assert f.status.value == "fail" and f.message == "infoROM corrupted on 1 GPUs: 0008:00:00.0"
    assert judge(firmware, {"nvidia_smi_full": text(FULL_Q)})["firmware.inforom"] == ["ok"]


def test_vbios_and_inforom_per_model():
    real.require()
    f = firmware.parse({"nvidia_smi_full": text(VBIOS)})
    assert f.vbios == {"0000:19:00.0": "96.00.74.00.0D"} and f.inforom == {"0000:19:00.0": "G520.0200.00.05"}
    out = findings(firmware, {"nvidia_smi_full": text(FULL_Q)})["firmware.gpu"]
    assert out.status.value == "ok" and out.message == "NVIDIA H100 80GB HBM3 VBIOS 96.00.74.00.0D on 8"
    # written for this test: the real 8-GPU report with another VBIOS on its first GPU
    mixed = text(FULL_Q).replace("96.00.74.00.0D", "96.00.89.00.01", 1)
    out = findings(firmware, {"nvidia_smi_full": mixed})["firmware.gpu"]
    assert out.status.value == "warn" and out.actual == {"NVIDIA H100 80GB HBM3": {"96.00.74.00.0D": 7, "96.00.89.00.01": 1}}


def test_hca_firmware_from_the_kernel_log():
    real.require()
    f = findings(firmware, {"kernel_log": text(MLX_FW)})["firmware.hca"]
    assert f.status.value == "ok" and "28.39.1002 on 8" in f.message and "22.38.1002 on 4" in f.message
    # written for this test: one ConnectX-7 function left on older firmware
    t = text(MLX_FW).replace("28.39.1002", "28.37.1014", 1)
    assert judge(firmware, {"kernel_log": t})["firmware.hca"] == ["warn"]


def test_fabric_manager_must_equal_the_driver():
    real.require()
    raw = {"fabricmanager": text(FM_START), "nvidia_smi_full": text(FULL_Q)}
    assert judge(firmware, raw)["firmware.fabricmanager"] == ["ok"]  # 535.161.08 both
    raw["nvidia_smi_full"] = text(FULL_Q).replace("Driver Version                            : 535.161.08",
                                                  "Driver Version                            : 535.183.01")  # written for this test
    f = findings(firmware, raw)["firmware.fabricmanager"]
    assert f.status.value == "fail" and (f.actual, f.expected) == ("535.161.08", "535.183.01")


def test_versions_source_lines_and_consistency_names_the_odd_node():
    real.require()
    f = firmware.FirmwareFacts()
    firmware.parse_versions("ofed: MLNX_OFED_LINUX-23.10-1.1.9.0:\nrdma-core: 2404mlnx51-1.2404066\n", f)
    assert (f.ofed, f.rdma_core) == ("MLNX_OFED_LINUX-23.10-1.1.9.0", "2404mlnx51-1.2404066")
    firmware.parse_versions("rdma-core: package rdma-core is not installed\n", f)
    assert f.rdma_core == "2404mlnx51-1.2404066"
    same = firmware.summarize(firmware.parse({"nvidia_smi_full": text(FULL_Q)}))
    odd = firmware.summarize(firmware.parse({"nvidia_smi_full": text(FULL_Q).replace("96.00.74.00.0D", "96.00.89.00.01")}))
    summaries = {h: {f"firmware.{k}": v for k, v in s.items()} for h, s in (("a", same), ("b", same), ("c", odd))}
    out = consistency.judge_cluster(summaries)
    (finding,) = out["c"]
    assert finding.check == "consistency.firmware.vbios" and finding.expected == "NVIDIA H100 80GB HBM3 96.00.74.00.0D"
    assert [f.check for f in out["a"]] == ["consistency.all"]


def test_nothing_collected():
    assert judge(firmware, {}) == {"firmware.gpu": ["skip"], "firmware.hca": ["skip"]}
    assert firmware.judge(firmware.parse({}), NodeFacts("n"))[0].status.value == "skip"


def test_gpu_firmware_skip_says_why():
    assert "not collected (nvidia-smi -q" in findings(firmware, {})["firmware.gpu"].message
    f = findings(firmware, {"nvidia_smi_full": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"})
    assert "could not read nvidia-smi -q" in f["firmware.gpu"].message
