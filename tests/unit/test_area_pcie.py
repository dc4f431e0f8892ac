"""PCIe area: lspci -vvv parsing (ACS, links, bus ranges), kernel 'limited by' lines, judgement, the snippets."""
import os
import subprocess
from pathlib import Path

import pytest

from nccldiag.areas import pcie
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real

ACS_OFF = "gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt"
ACS_ON = "gpud-h100-dell-pmc-sierra-switch-acs-on.txt"
RCCL = "rccl547-epyc-matisse-gpp-bridge-acs-enabled-elided.txt"
PLX = "torch-ipc17-supermicro-plx-pex8747-lspci-grep.txt"
LIMITED = ("dmesg-pcie", "mleng-h100-pcie-bandwidth-limited-by-gen4-switch.txt")


def lspci(name: str) -> str:
    return real.node_text("lspci", name)


class Gpu:
    def __init__(self, n):
        self.gpus = list(range(n))


def node(gpus=None, **facts) -> NodeFacts:
    n = NodeFacts("h", dict(facts))
    if gpus is not None:
        n.facts["gpu"] = Gpu(gpus)
    return n


def by_bdf(facts):
    return {d.bdf: d for d in facts.devices}


def test_every_lspci_fixture_parses():
    counts = {n: len(pcie.parse({"lspci": lspci(n)}).devices) for n in os.listdir(real.node("lspci")) if n.endswith(".txt")}
    assert counts == {ACS_OFF: 10, ACS_ON: 6, RCCL: 1, PLX: 11}


def test_dell_h100_gpu_path_acs_off_and_links():
    f = pcie.parse({"lspci": lspci(ACS_OFF)})
    d = by_bdf(f)
    assert [g.bdf for g in f.gpus] == ["0000:19:00.0"]
    assert [n.bdf for n in f.nics] == ["0000:1a:00.0", "0000:1b:00.0"]
    assert len(f.bridges) == 7
    gpu = d["0000:19:00.0"]
    assert (gpu.class_name, gpu.vendor_id) == ("3D controller", "10de")
    assert (gpu.cap.speed_gts, gpu.cap.width, gpu.sta.speed_gts, gpu.sta.width) == (32.0, 16, 32.0, 16)
    assert (d["0000:1b:00.0"].cap.speed_gts, d["0000:1b:00.0"].sta.speed_gts) == (16.0, 16.0)
    # the downstream port trained at Gen4 under a Gen5 capability
    assert (d["0000:17:00.0"].cap.speed_gts, d["0000:17:00.0"].sta.speed_gts, d["0000:17:00.0"].sta.width) == (32.0, 16.0, 4)
    assert d["0000:15:01.0"].bus_range == (0x16, 0x1C)
    assert d["0000:17:01.0"].bus_range == (0x19, 0x19)
    for b in f.bridges:
        if b.bdf != "0000:16:00.0":  # the upstream switch port has no ACS capability
            assert b.acs_ctl and not any(b.acs_ctl.values()), b.bdf
    assert d["0000:17:00.0"].acs_cap["DirectTrans"] is True
    assert d["0000:15:01.0"].driver == "pcieport"
    found = pcie.judge(f, node(gpus=8))
    assert [(x.check, x.status) for x in found] == [("pcie.acs", Status.OK), ("pcie.link", Status.OK)]


def test_pmc_switch_acs_redirect_on_nvme_side():
    f = pcie.parse({"lspci": lspci(ACS_ON)})
    d = by_bdf(f)
    on = [b.bdf for b in f.bridges if b.acs_redirect]
    assert on == ["0000:82:00.0", "0000:82:01.0", "0000:82:02.0", "0000:82:03.0"]
    assert d["0000:82:00.0"].acs_ctl == {"SrcValid": True, "TransBlk": False, "ReqRedir": True, "CmpltRedir": True,
                                         "UpstreamFwd": True, "EgressCtrl": False, "DirectTrans": False}
    assert d["0000:81:00.0"].acs_redirect == []
    assert (d["0000:80:01.0"].cap.width, d["0000:80:01.0"].sta.width) == (16, 2)
    # no GPU or NIC sits below these ports: a warning, not a failure, even on a GPU node
    [acs, link] = pcie.judge(f, node(gpus=8))
    assert acs.status == Status.WARN and "none known to lead to a GPU or NIC" in acs.message
    assert "setpci -s 0000:82:00.0 ECAP_ACS+0x6.w=0000" in acs.fix and "BIOS" in acs.fix
    assert link.status == Status.SKIP


def test_acs_on_above_a_gpu_fails_on_gpu_node():
    # constructed from the captured ACS-off path: the downstream port above the GPU (17:01.0) gets ACS redirect on
    text = lspci(ACS_OFF).splitlines()
    start = next(i for i, l in enumerate(text) if l.startswith("17:01.0"))
    i = next(i for i in range(start, len(text)) if "ACSCtl:" in text[i])
    text[i] = "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
    f = pcie.parse({"lspci": "\n".join(text)})
    [acs, _] = pcie.judge(f, node(gpus=8))
    assert acs.status == Status.FAIL and "1 on the path of GPUs or NICs" in acs.message
    assert acs.actual == {"0000:17:01.0": ["SrcValid", "ReqRedir", "CmpltRedir"]}
    assert "setpci -s 0000:17:01.0" in acs.fix
    assert pcie.judge(f, node(gpus=0))[0].status == Status.WARN


def test_rccl_elided_root_port_acs_on():
    f = pcie.parse({"lspci": lspci(RCCL)})
    [b] = f.devices
    assert b.bdf == "0000:40:01.1" and b.is_bridge and b.bus_range is None
    assert b.acs_redirect == ["SrcValid", "ReqRedir", "CmpltRedir"]
    assert b.acs_cap["TransBlk"] is True and b.acs_ctl["TransBlk"] is False
    # bus range unknown: counted as possibly on a GPU path
    assert pcie.judge(f, node(gpus=4))[0].status == Status.FAIL
    assert pcie.judge(f, node())[0].status == Status.WARN
    vm = pcie.parse({"lspci": lspci(RCCL), "virt": "kvm\ncpu-flag:hypervisor\n"})
    assert vm.virtualization == "kvm"
    acs = pcie.judge(vm, node(gpus=4))[0]
    assert acs.status == Status.OK and "virtual machine" in acs.message


def test_plx_grep_list_has_no_capabilities():
    f = pcie.parse({"lspci": lspci(PLX)})
    assert len(f.bridges) == 11 and all("PEX 8747" in b.description for b in f.bridges)
    [acs, link] = pcie.judge(f, node(gpus=4))
    assert acs.status == Status.SKIP and link.status == Status.SKIP


def _gpu_link(text: str, sta: str) -> str:
    # constructed: the captured GPU stanza with another LnkSta
    return text.replace("LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
                        f"LnkSta:\t{sta}\n\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-", 1)


def test_gpu_link_width_and_speed_below_capability():
    text = lspci(ACS_OFF)
    gpu_stanza = text[text.index("19:00.0 3D controller"):text.index("1a:00.0 Ethernet")]
    narrow = _gpu_link(gpu_stanza, "Speed 32GT/s (ok), Width x8 (downgraded)")
    assert narrow != gpu_stanza
    f = pcie.parse({"lspci": narrow})
    [w] = pcie.judge(f, node(gpus=1))[1:]
    assert (w.check, w.status) == ("pcie.link_width", Status.WARN)
    assert w.actual == {"0000:19:00.0": 8} and w.expected == {"0000:19:00.0": 16}
    slow = pcie.parse({"lspci": _gpu_link(gpu_stanza, "Speed 16GT/s (downgraded), Width x16 (ok)")})
    [s] = pcie.judge(slow, node(gpus=1))[1:]
    assert (s.check, s.status) == ("pcie.link_speed", Status.WARN)
    assert "idle GPUs" in s.message and s.actual == {"0000:19:00.0": 16.0}


def test_a_gpu_link_at_gen1_on_all_lanes_is_the_idle_downclock():
    # an idle GPU drops its link to 2.5 GT/s (Gen1) with all its lanes: no fault; the same GPU at 2.5 GT/s on fewer
    # lanes, and a NIC at 2.5 GT/s, are still findings
    text = lspci(ACS_OFF)
    gpu_stanza = text[text.index("19:00.0 3D controller"):text.index("1a:00.0 Ethernet")]
    idle = pcie.parse({"lspci": _gpu_link(gpu_stanza, "Speed 2.5GT/s (downgraded), Width x16 (ok)")})
    [link] = pcie.judge(idle, node(gpus=1))[1:]
    assert (link.check, link.status) == ("pcie.link", Status.OK)
    assert "1 GPU link at 2.5 GT/s (Gen1)" in link.message and link.actual == {"0000:19:00.0": "2.5 GT/s x16"}
    both = pcie.parse({"lspci": _gpu_link(gpu_stanza, "Speed 2.5GT/s (downgraded), Width x8 (downgraded)")})
    assert [(x.check, x.status) for x in pcie.judge(both, node(gpus=1))[1:]] == [("pcie.link_width", Status.WARN)]
    nic_stanza = text[text.index("1a:00.0 Ethernet"):text.index("1b:00.0")]
    nic = pcie.parse({"lspci": nic_stanza.replace("LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)",
                                                  "LnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)", 1)})
    assert nic.nics and nic.nics[0].sta.speed_gts == 2.5
    assert [(x.check, x.status) for x in pcie.judge(nic, node(gpus=1))[1:]] == [("pcie.link_speed", Status.WARN)]


def test_lspci_nn_and_domain_headers():
    # constructed header lines in the 'lspci -D -nn' format
    text = ("0000:19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
            "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us\n"
            "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n"
            "0001:1a:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
            "0000:15:01.0 PCI bridge [0604]: Intel Corporation Device [8086:352a] (rev 04) (prog-if 00 [Normal decode])\n"
            "\tCapabilities: <access denied>\n")
    f = pcie.parse({"lspci": text})
    d = by_bdf(f)
    assert (d["0000:19:00.0"].class_id, d["0000:19:00.0"].vendor_id, d["0000:19:00.0"].device_id) == ("0302", "10de", "2330")
    assert d["0001:1a:00.0"].is_rdma_nic and d["0001:1a:00.0"].domain == "0001"
    assert d["0000:15:01.0"].is_bridge and d["0000:15:01.0"].caps_denied
    acs = pcie.judge(f, node(gpus=1))[0]
    assert acs.status == Status.SKIP and "root" in acs.fix


def test_kernel_bandwidth_limited_lines():
    f = pcie.parse({"pcie_dmesg": real.node_text(*LIMITED)})
    assert [(l.bdf, l.available_gbps, l.capable_gbps) for l in f.limited] == [
        ("0000:04:00.0", 252.048, 504.112), ("0000:8b:00.0", 252.048, 504.112)]
    assert f.limited[1].limited_by == "16.0 GT/s PCIe x16 link at 0000:87:00.0"
    found = pcie.judge(f, node(gpus=8))
    assert [x.check for x in found] == ["pcie.lspci", "pcie.bandwidth_limited"]
    assert found[1].status == Status.WARN and len(found[1].evidence) == 2


def test_limited_lines_of_other_devices_are_ignored():
    f = pcie.parse({"lspci": lspci(ACS_OFF), "pcie_dmesg": real.node_text(*LIMITED).replace("0000:04:00.0", "0000:17:00.0")})
    checks = [x.check for x in pcie.judge(f, node(gpus=8))]
    assert "pcie.bandwidth_limited" in checks  # 8b:00.0 is unknown to this lspci: kept
    only_bridge = pcie.parse({"lspci": lspci(ACS_OFF), "pcie_dmesg": real.node_text(*LIMITED).splitlines()[0].replace("0000:04:00.0", "0000:17:00.0")})
    assert "pcie.bandwidth_limited" not in [x.check for x in pcie.judge(only_bridge, node(gpus=8))]


def test_node_hardware_helpers():
    f = pcie.parse({"lspci": lspci(ACS_OFF)})
    assert pcie.node_gpus(node(gpus=8)) == (True, "8 NVIDIA GPUs")
    assert pcie.node_gpus(node(gpus=0))[0] is False
    assert pcie.node_gpus(node(pcie=f)) == (True, "1 NVIDIA GPU (lspci)")
    assert pcie.node_rdma(node(pcie=f))[0] is True
    assert pcie.node_gpus(node())[0] is None and pcie.node_rdma(None)[0] is None

    class Ib:
        ports = []

    # an area that saw the hardware wins over one that found none
    assert pcie.node_rdma(node(pcie=f, infiniband=Ib())) == (True, "2 Mellanox NIC functions (lspci)")
    assert pcie.node_rdma(node(infiniband=Ib())) == (False, "no RDMA NIC")
    assert pcie.node_gpus(node(gpus=0, pcie=f)) == (True, "1 NVIDIA GPU (lspci)")

    class DriverLost:  # the gpu area's facts when nvidia-smi lists nothing but the bus shows GPUs
        gpus = []
        pci_gpus = [1, 2]

    assert pcie.node_gpus(node(gpu=DriverLost())) == (True, "2 NVIDIA GPUs")


@pytest.mark.parametrize("raw", [{}, {"lspci": None}, {"lspci": ""}, {"lspci": "garbage\n\tLnkSta: Speed\n"}])
def test_tolerates_missing_and_odd_sections(raw):
    f = pcie.parse(raw)
    assert f.devices == []
    assert pcie.judge(f, node(gpus=1))[0].status == Status.SKIP
    assert pcie.judge(None, node())[0].status == Status.SKIP
    assert pcie.summarize(f) == {}


def test_truncated_and_spaces_for_tabs():
    text = lspci(ACS_OFF)
    spaced = pcie.parse({"lspci": text.replace("\t", "    ")})
    assert [(d.bdf, d.sta.width, d.acs_redirect) for d in spaced.devices] == \
        [(d.bdf, d.sta.width, d.acs_redirect) for d in pcie.parse({"lspci": text}).devices]
    cut = pcie.parse({"lspci": text[: len(text) // 3]})
    assert 1 <= len(cut.devices) < 10
    pcie.judge(cut, node(gpus=1))


def _fake(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)


def test_snippets_run_with_stand_in_tools(tmp_path):
    root, bins = tmp_path / "root", tmp_path / "bin"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu vme de pse\n")
    _fake(bins, "lspci", f"cat '{real.node('lspci', ACS_OFF)}'")
    _fake(bins, "dmesg", f"cat '{real.node(*LIMITED)}'")
    _fake(bins, "systemd-detect-virt", "echo none; exit 1")
    env = {"NCCLDIAG_ROOT": str(root), "PATH": f"{bins}:/usr/bin:/bin"}
    out = subprocess.run(["sh", "-s"], input=build_script(pcie.SOURCES), capture_output=True, text=True,
                         env=env, timeout=60).stdout
    secs, rcs, truncated = split_sections(out)
    assert not truncated and set(secs) == {"lspci", "pcie_dmesg", "virt"}
    # the snippet keeps only the lines the parser uses
    assert "ACSCtl:" in secs["lspci"] and "DevCap:" not in secs["lspci"]
    assert len(secs["lspci"]) < len(lspci(ACS_OFF)) / 5
    assert secs["virt"] == "none\n"
    f = pcie.parse(secs)
    full = pcie.parse({"lspci": lspci(ACS_OFF)})
    assert [(d.bdf, d.cap, d.sta, d.acs_ctl, d.bus_range) for d in f.devices] == \
        [(d.bdf, d.cap, d.sta, d.acs_ctl, d.bus_range) for d in full.devices]
    assert len(f.limited) == 2 and f.virtualization is None and f.virt_known


def test_snippet_without_lspci_prints_nothing(tmp_path):
    # the script appends the system directories to PATH itself, so this needs a machine without pciutils
    if any(os.path.exists(os.path.join(d, "lspci")) for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin")):
        pytest.skip("lspci is installed here")
    out = subprocess.run(["/bin/sh", "-s"], input=build_script(pcie.SOURCES[:1]), capture_output=True, text=True,
                         env={"NCCLDIAG_ROOT": str(tmp_path), "PATH": str(tmp_path)}, timeout=30).stdout
    secs, rcs, _ = split_sections(out)
    assert secs["lspci"] == "" and rcs["lspci"] == 0


# ---- lspci -t / -tv ---------------------------------------------------------------------------------------

# Written for this test, in the layout `lspci -tv` prints (a root bus, a switch, a ConnectX and a GPU below it).
TREE_V = """\
-[0000:00]-+-00.0  Intel Corporation Sky Lake-E DMI3 Registers
           +-03.0-[17-1b]----00.0-[18-1b]--+-00.0-[19]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]
           |                               \\-01.0-[1a]----00.0  Mellanox Technologies MT2910 Family [ConnectX-7]
           \\-1f.0  Intel Corporation C621 Series Chipset LPC/eSPI Controller
"""
TREE = """\
-[0000:00]-+-00.0
           +-03.0-[17-1b]----00.0-[18-1b]--+-00.0-[19]----00.0
           |                               \\-01.0-[1a]----00.0
           \\-1f.0
"""


def test_lspci_tree_is_not_read_as_no_device_and_a_named_connectx_is_rdma_evidence():
    from nccldiag.areas.pcie import node_gpus, node_rdma

    f = pcie.parse({"lspci": TREE_V})
    assert f.tree and not f.devices
    assert f.tree_rdma == ["0000:1a:00.0 Mellanox Technologies MT2910 Family [ConnectX-7]"]
    assert f.tree_gpus == ["0000:19:00.0 NVIDIA Corporation GH100 [H100 SXM5 80GB]"]
    (only,) = pcie.judge(f, NodeFacts("h"))
    assert only.status == Status.SKIP and "device tree" in only.message and "no device" not in only.message
    n = NodeFacts("h")
    n.facts["pcie"] = f
    assert node_rdma(n) == (True, "1 Mellanox NIC function (lspci -tv)")
    assert node_gpus(n)[0] is True


def test_lspci_t_without_names():
    from nccldiag.areas.pcie import node_rdma

    f = pcie.parse({"lspci": TREE})
    assert f.tree and f.tree_names == []
    (only,) = pcie.judge(f, NodeFacts("h"))
    assert "(-t without -v: no names)" in only.message
    n = NodeFacts("h")
    n.facts["pcie"] = f
    assert node_rdma(n) == (None, "no RDMA information")


def test_real_lspci_outputs_are_not_trees():
    for name in real.names(real.node("lspci")):
        assert pcie.parse_tree(real.node_text("lspci", name)) == (False, []), name


# Written for this test, in the layout of a real `lspci -tv` posted in a public PCIe how-to (two root buses, a PLX
# PEX 8747 switch with GPUs below): here a GPU with its audio function and a ConnectX-6 share the switch, and an AMD
# Instinct GPU sits on its own root port.
TREE_SWITCH = """\
-+-[0000:ff]-+-08.0  Intel Corporation Xeon E7 v4/Xeon E5 v4/Xeon E3 v4/Xeon D QPI Link 0
 |           \\-1e.0  Intel Corporation Xeon E7 v4/Xeon E5 v4/Xeon E3 v4/Xeon D Power Control Unit
 \\-[0000:00]-+-00.0  Intel Corporation Xeon E7 v4/Xeon E5 v4/Xeon E3 v4/Xeon D DMI2
             +-01.0-[01]--
             +-02.0-[02-05]----00.0-[03-05]--+-08.0-[04]--+-00.0  NVIDIA Corporation GP102 [TITAN X]
             |                               |            \\-00.1  NVIDIA Corporation GP102 HDMI Audio Controller
             |                               \\-10.0-[05]----00.0  Mellanox Technologies MT28908 Family [ConnectX-6]
             +-03.0-[06]----00.0  Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210]
             \\-1f.0  Intel Corporation C610/X99 series chipset LPC Controller
"""


def test_lspci_tree_keeps_bus_addresses_ranges_switches_and_other_gpus():
    f = pcie.parse({"lspci": TREE_SWITCH})
    by = {d.bdf: d for d in f.tree_devices}
    assert list(by) == ["0000:ff:08.0", "0000:ff:1e.0", "0000:00:00.0", "0000:00:01.0", "0000:00:02.0", "0000:02:00.0",
                        "0000:03:08.0", "0000:04:00.0", "0000:04:00.1", "0000:03:10.0", "0000:05:00.0", "0000:00:03.0",
                        "0000:06:00.0", "0000:00:1f.0"]
    assert by["0000:00:02.0"].bus_range == (2, 5) and by["0000:02:00.0"].bus_range == (3, 5)
    assert by["0000:00:01.0"].bus_range == (1, 1) and by["0000:04:00.0"].bus_range is None
    assert by["0000:05:00.0"].parent == "0000:03:10.0" and by["0000:03:10.0"].parent == "0000:02:00.0"
    # the audio function is not a GPU; the AMD GPU is one, of another vendor
    assert f.tree_gpus == ["0000:04:00.0 NVIDIA Corporation GP102 [TITAN X]"]
    assert f.tree_other_gpus == ["0000:06:00.0 Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210]"]
    assert [d.bdf for d in f.tree_switches] == ["0000:02:00.0"]
    assert [b.bdf for b in f.tree_chain("0000:04:00.0")] == ["0000:00:02.0", "0000:02:00.0", "0000:03:08.0"]
    (only,) = pcie.judge(f, NodeFacts("h"))
    assert only.status == Status.SKIP
    assert ("it lists 14 functions, 6 of them bridges with bus ranges; it names 8 functions: 1 Mellanox/ConnectX, "
            "1 NVIDIA GPUs, 1 other GPUs (Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210]); "
            "1 PCIe switch, with 2 of the GPUs/NICs below") in only.message
    assert ("0000:05:00.0 Mellanox Technologies MT28908 Family [ConnectX-6] <- 0000:03:10.0 <- 0000:02:00.0 (switch) "
            "<- 0000:00:02.0") in only.evidence


def test_lspci_t_without_names_keeps_count_and_ranges():
    import re
    # the same tree as -t prints it: no names after the functions
    plain = "\n".join(re.sub(r"([0-9a-f]{2}\.[0-7])\s{2,}.*$", r"\1", l) for l in TREE_SWITCH.splitlines())
    f = pcie.parse({"lspci": plain})
    assert len(f.tree_devices) == 14 and f.tree_names == [] and [d.bdf for d in f.tree_switches] == ["0000:02:00.0"]
    (only,) = pcie.judge(f, NodeFacts("h"))
    assert "it lists 14 functions, 6 of them bridges with bus ranges (-t without -v: no names)" in only.message


CASES = Path(__file__).resolve().parents[1] / "cases"
LNK_GREP = CASES / "node-cloudnetops-blog-lspci-lnksta-8gts-x2-downgraded-from-16gts-x4" / "posted-lspci-speed.txt"


def _link_grep(text: str, indent: str = "") -> str:
    """The link lines of a real lspci -vvv output, as 'lspci -vvv | grep -E "LnkCap:|LnkSta:"' prints them
    (``indent`` replaces the tabs, as a page that lost them would)."""
    return "".join(indent + l.strip() + "\n" for l in text.splitlines() if l.strip().startswith(("LnkCap:", "LnkSta:")))


def test_link_lines_without_devices_warn_on_lost_lanes_of_port_0():
    # real: a blog's 'lspci -vvvs c9:00.0 | grep -i speed' (its indentation lost by the page)
    f = pcie.parse({"lspci": LNK_GREP.read_text(encoding="utf-8")})
    assert not f.devices and len(f.link_lines) == 1
    [w] = pcie.judge(f, node())
    assert (w.check, w.status) == ("pcie.link_width", Status.WARN)
    assert w.actual == [2] and w.expected == [4] and "LnkSta: Speed 8GT/s (downgraded), Width x2 (downgraded)" in w.evidence


@pytest.mark.parametrize("name", [ACS_OFF, ACS_ON])
@pytest.mark.parametrize("indent", ["\t\t", ""])
def test_link_lines_of_healthy_real_nodes_do_not_warn(name, indent):
    # real captures reduced to their link lines: a switch's downstream port at x2 below its x16 (ACS_ON, the device
    # below it is x2) and an x4 device at half speed (ACS_OFF) are no fault
    f = pcie.parse({"lspci": _link_grep(lspci(name), indent)})
    assert not f.devices and f.link_lines
    found = pcie.judge(f, node())
    assert all(x.status in (Status.OK, Status.SKIP) for x in found), [(x.check, x.status, x.message) for x in found]
    assert any(x.status == Status.SKIP and "numbered" in x.message for x in found)


def test_idle_rtx_a6000_links_at_gen1_in_a_real_transcript_are_the_idle_downclock():
    # real: a research lab's verification transcript (tests/cases/node-neuropoly-wiki-romane-4x-a6000-nvverify-idle-
    # link-downgraded-healthy): 'lspci -vvd 10DE:' of four idle RTX A6000, each 'LnkSta: Speed 2.5GT/s (downgraded),
    # Width x16 (ok)' under 'LnkCap: ... Speed 16GT/s, Width x16', the GPUs at P8 in the nvidia-smi that follows
    case = Path(__file__).resolve().parents[1] / "cases" / "node-neuropoly-wiki-romane-4x-a6000-nvverify-idle-link-downgraded-healthy"
    text = (case / "posted-nvverify.txt").read_text(encoding="utf-8")
    lspci_block = text[text.index("+ lspci -vvd 10DE:") + len("+ lspci -vvd 10DE:\n"):text.index("=====", text.index("+ lspci"))]
    f = pcie.parse({"lspci": lspci_block})
    assert len(f.gpus) == 4 and all((g.sta.speed_gts, g.cap.speed_gts, g.sta.width) == (2.5, 16.0, 16) for g in f.gpus)
    found = [x for x in pcie.judge(f, node(gpus=4)) if x.check.startswith("pcie.link")]
    assert [(x.check, x.status) for x in found] == [("pcie.link", Status.OK)]
    assert "4 GPU links at 2.5 GT/s (Gen1)" in found[0].message


# The real kernel log of a node whose eight A100s ran a job for days (tests/cases/node-m4-runlog-tr141-dmesg-hung-task-
# python-gpfs-mmfs-write): the one 'limited by' line is a PCIe switch port's, which the same log enumerated as a bridge.
M4_DMESG = Path(__file__).resolve().parents[1] / "cases" / "node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write" / "dmesg.txt"


def test_a_limited_line_of_a_device_the_kernel_log_enumerated_as_a_bridge_is_not_judged():
    text = M4_DMESG.read_text()
    limited = "\n".join(l for l in text.splitlines() if "PCIe bandwidth, limited by" in l)
    f = pcie.parse({"pcie_dmesg": limited, "kernel_log": text})
    assert [l.bdf for l in f.limited] == ["0000:a7:00.0"] and f.kernel_classes["0000:a7:00.0"] == "060400"
    assert f.kernel_classes["0000:07:00.0"] == "030200"  # the first A100
    assert "pcie.bandwidth_limited" not in [x.check for x in pcie.judge(f, node(gpus=8))]
    # the same line with no enumeration line beside it (a grep of the kernel log) is still judged
    alone = pcie.parse({"pcie_dmesg": limited})
    assert "pcie.bandwidth_limited" in [x.check for x in pcie.judge(alone, node(gpus=8))]


def test_limited_gpus_are_still_judged_beside_the_kernel_logs_classes():
    text = real.node_text(*LIMITED)
    # the kernel's enumeration lines of the two limited GPUs, written for this test in the format of the real ones above
    enumerated = ("[   10.000001] pci 0000:04:00.0: [10de:2330] type 00 class 0x030200\n"
                  "[   10.000002] pci 0000:8b:00.0: [10de:2330] type 00 class 0x030200\n")
    f = pcie.parse({"pcie_dmesg": text, "kernel_log": enumerated + text})
    found = pcie.judge(f, node(gpus=8))
    assert [x.check for x in found] == ["pcie.lspci", "pcie.bandwidth_limited"] and len(found[1].evidence) == 2


CASES = Path(__file__).resolve().parents[1] / "cases"


def _posted_lspci(case: str, name: str) -> str:
    """The lspci device lines of a real case's posted text (its other lines are other tools')."""
    text = (CASES / case / name).read_text(encoding="utf-8")
    return "\n".join(l for l in text.splitlines() if pcie._HEADER.match(l.strip()))


def test_an_hca_in_flash_recovery_fails_and_a_working_one_does_not():
    # ServeTheHome forums: a ConnectX-5 that a cross-flash left in flash recovery, beside the same card working
    # before it; a ConnectX-4 whose burned image never booted
    cx5 = _posted_lspci("cf-gaps65b-sth32379-hp-mcx556a-allow-psid-change-burn-connectx5-flash-recovery",
                        "posted-mlxup-lspci.txt")
    found = pcie.judge(pcie.parse({"lspci": cx5}), node(gpus=0))
    (rec,) = [x for x in found if x.check == "pcie.hca_flash_recovery"]
    assert rec.status == Status.FAIL and "41:00.0" in rec.message
    assert rec.evidence == ["41:00.0 Memory controller: Mellanox Technologies MT28800 Family [ConnectX-5 Flash Recovery]"]
    cx4 = _posted_lspci("cf-gaps65b-sth41103-blank-cx455a-flash-write-protected-connectx4-flash-recovery",
                        "posted-flint-lspci.txt")
    found = pcie.judge(pcie.parse({"lspci": cx4}), node(gpus=0))
    assert [x.status for x in found if x.check == "pcie.hca_flash_recovery"] == [Status.FAIL]
    # the ConnectX-5's lines before the burn: an InfiniBand controller, no recovery
    working = "\n".join(l for l in cx5.splitlines() if "Flash Recovery" not in l)
    assert working.count("Infiniband controller") == 2
    assert not [x for x in pcie.judge(pcie.parse({"lspci": working}), node(gpus=0))
                if x.check == "pcie.hca_flash_recovery"]


def test_the_kernels_limited_by_lines_pasted_alone_name_the_pcie_link_as_a_warning():
    """The kernel's 'limited by' lines of an H100 node behind gen4 switches (the shared fixture, read in place) given to
    'nccldiag log' name the pcie-link cause, as a warning: the slower link may be the platform's design."""
    from tests import realcases

    ds = realcases.alarms_of([real.node(*LIMITED)])
    assert ds and ds[0].id == "pcie-link" and ds[0].severity == "warn", [(d.id, d.severity, d.summary) for d in ds]
    assert ds[0].category == "pcie_link_aer"
    assert any("limited by 16.0 GT/s PCIe x16 link" in e.text for e in ds[0].evidence)
