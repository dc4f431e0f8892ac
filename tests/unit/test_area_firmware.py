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
    # text that only looks like a GPU's block (a kernel log here) has no place for the warning: no verdict
    dmesg = text(("dmesg-iommu", "amd-vi-unknown-option-on-blockquoted.txt"))
    assert judge(firmware, {"nvidia_smi_full": dmesg})["firmware.inforom"] == ["skip"]


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


# ---- HCA firmware from the tools admins paste: mlxfwmanager/mlxup, ethtool -i, flint/mstflint q ------------

MLXUP = ("firmware", "innova2-5-cx5-mlxup-device4-no-matching-image-found.txt")

# Written for this test, in the layout of `ethtool -i` on mlx5 netdevs (as in a netdev list post: "driver:
# mlx5_core", "firmware-version: 14.21.2328 (MT_2470112034)", "bus-info: 0000:3b:00.0"), two ports of one ConnectX-7,
# and an Intel NIC without RDMA that is not an HCA.
ETHTOOL_I = """\
driver: mlx5_core
version: 5.15.0-91-generic
firmware-version: 28.39.1002 (MT_0000000838)
expansion-rom-version:
bus-info: 0000:0c:00.0
supports-statistics: yes
supports-priv-flags: yes
driver: mlx5_core
version: 5.15.0-91-generic
firmware-version: 28.39.1002 (MT_0000000838)
expansion-rom-version:
bus-info: 0000:0c:00.1
supports-statistics: yes
driver: igb
version: 5.15.0-91-generic
firmware-version: 1.63, 0x800009fa
bus-info: 0000:05:00.0
"""

# Written for this test, in the layout of `mstflint -d DEV q` (as in OpenStack Ironic's nvidia_fw_update tests):
# the first card burned with new firmware that is not running yet ("FW Version(Running)").
FLINT_Q = """\
$ sudo mstflint -d 41:00.0 q
Image type:            FS4
FW Version:            20.35.1012
FW Version(Running):   20.34.1002
FW Release Date:       28.10.2022
Product Version:       20.35.1012
Rom Info:              type=UEFI version=14.28.15 cpu=AMD64,AARCH64
                       type=PXE version=3.6.804 cpu=AMD64
Base GUID:             043f720300f04c46        8
PSID:                  MT_0000000228
$ sudo mstflint -d 42:00.0 q
Image type:            FS4
FW Version:            20.35.1012
FW Release Date:       28.10.2022
PSID:                  MT_0000000228
"""


def test_hca_firmware_from_mlxfwmanager_device_blocks():
    real.require()
    (r,) = firmware.parse_hca_tools(text(MLXUP))
    assert (r.tool, r.device, r.fw, r.psid, r.model) == ("mlxfwmanager", "pci0:6:0:0", "16.24.4020", "MT_0000000158",
                                                         "ConnectX5")
    f = findings(firmware, {"sw_versions": text(MLXUP)})["firmware.hca"]
    assert f.status.value == "ok" and f.message == "one firmware per HCA model (mlxfwmanager): ConnectX5: 16.24.4020 on 1"


def test_hca_firmware_from_ethtool_i_groups_by_psid():
    records = firmware.parse_hca_tools(ETHTOOL_I)
    assert [(r.device, r.fw, r.psid, r.model) for r in records] == [
        ("0000:0c:00.0", "28.39.1002", "MT_0000000838", "mlx5_core"),
        ("0000:0c:00.1", "28.39.1002", "MT_0000000838", "mlx5_core")]
    f = findings(firmware, {"sw_versions": ETHTOOL_I})["firmware.hca"]
    assert f.status.value == "ok" and f.message == "one firmware per HCA model (ethtool -i): PSID MT_0000000838: 28.39.1002 on 2"
    mixed = ETHTOOL_I.replace("28.39.1002 (MT_0000000838)\nexpansion-rom-version:\nbus-info: 0000:0c:00.1",
                              "28.37.1014 (MT_0000000838)\nexpansion-rom-version:\nbus-info: 0000:0c:00.1")
    f = findings(firmware, {"sw_versions": mixed})["firmware.hca"]
    assert f.status.value == "warn" and f.actual == {"PSID MT_0000000838": {"28.39.1002": 1, "28.37.1014": 1}}
    assert "0000:0c:00.1: 28.37.1014 (PSID MT_0000000838) [ethtool -i]" in f.evidence


def test_hca_firmware_from_flint_query_reads_the_running_version():
    records = firmware.parse_hca_tools(FLINT_Q)
    assert [(r.device, r.fw, r.fw_image, r.psid) for r in records] == [
        ("41:00.0", "20.34.1002", "20.35.1012", "MT_0000000228"), ("42:00.0", "20.35.1012", None, "MT_0000000228")]
    f = findings(firmware, {"sw_versions": FLINT_Q})["firmware.hca"]
    assert f.status.value == "warn" and f.actual == {"PSID MT_0000000228": {"20.34.1002": 1, "20.35.1012": 1}}
    assert "41:00.0: 20.34.1002 (PSID MT_0000000228), 20.35.1012 in flash [flint]" in f.evidence
    # the ofed and rdma-core lines of the same file are still read
    facts = firmware.parse({"sw_versions": "ofed: MLNX_OFED_LINUX-23.10-1.1.9.0:\n" + FLINT_Q})
    assert facts.ofed == "MLNX_OFED_LINUX-23.10-1.1.9.0" and len(facts.hca_fw_tools) == 2


def test_hca_firmware_skip_says_why():
    from nccldiag.areas import infiniband, pcie
    assert "not collected" in findings(firmware, {})["firmware.hca"].message
    # ib sources collected and empty: no RDMA device
    f = findings(firmware, {"sw_versions": "", "kernel_log": ""}, ib=infiniband.parse({"ib_sysfs": ""}))
    assert f["firmware.hca"].message == "no HCA firmware information: no RDMA device"
    # another collected source names the hardware: never "no RDMA device"
    real.require()
    lspci = pcie.parse({"lspci": real.node_text("lspci", "gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt")})
    f = findings(firmware, {"kernel_log": ""}, pcie=lspci)["firmware.hca"]
    assert f.status.value == "skip" and "no RDMA device" not in f.message
    assert f.message.startswith("no HCA firmware information: the node has 2 Mellanox NIC functions (lspci)")


def test_versions_source_runs_ethtool_i_on_each_rdma_netdev(tmp_path):
    from .areahelp import run_sources, stand_in
    root = tmp_path / "root"
    for dev, net in (("mlx5_0", "ibp12s0"), ("mlx5_1", "ibp13s0")):
        (root / f"sys/class/infiniband/{dev}/device/net/{net}").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    # a stand-in printing the ethtool -i block written above for the netdev it is given
    stand_in(bin_dir, "ethtool", '[ "$1" = -i ] || exit 1; case "$2" in ibp12s0) f=0;; ibp13s0) f=1;; *) exit 1;; esac; '
                                 'printf "driver: mlx5_core\\nfirmware-version: 28.39.1002 (MT_0000000838)\\n'
                                 'bus-info: 0000:0c:00.$f\\n"')
    secs = run_sources((firmware.VERSIONS_SOURCE,), root, bin_dir)
    assert [r.device for r in firmware.parse_hca_tools(secs["sw_versions"])] == ["0000:0c:00.0", "0000:0c:00.1"]


def test_hca_firmware_from_tools_is_compared_across_nodes():
    same = firmware.summarize(firmware.parse({"sw_versions": ETHTOOL_I}))
    assert same["hca_firmware"] == "PSID MT_0000000838 28.39.1002"
    odd = firmware.summarize(firmware.parse({"sw_versions": ETHTOOL_I.replace("28.39.1002", "28.37.1014")}))
    summaries = {h: {f"firmware.{k}": v for k, v in s.items()} for h, s in (("a", same), ("b", same), ("c", odd))}
    (finding,) = consistency.judge_cluster(summaries)["c"]
    assert finding.check == "consistency.firmware.hca_firmware" and finding.expected == "PSID MT_0000000838 28.39.1002"
    assert firmware.summarize(firmware.parse({}))["hca_firmware"] is None
