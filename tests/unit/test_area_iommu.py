"""IOMMU area: parsing real kernel logs and command lines, the mode decision, judgement, the collection snippet."""
import os
import subprocess
from pathlib import Path

import pytest

from nccldiag.areas import iommu
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real



def dmesg(name: str) -> str:
    return real.node_text("dmesg-iommu", name)


class Gpu:
    def __init__(self, n):
        self.gpus = list(range(n))


class Ib:
    def __init__(self, n):
        self.ports = list(range(n))


def node(gpus=None, ports=None) -> NodeFacts:
    n = NodeFacts("h")
    if gpus is not None:
        n.facts["gpu"] = Gpu(gpus)
    if ports is not None:
        n.facts["ib"] = Ib(ports)
    return n


def test_every_dmesg_fixture_parses():
    names = sorted(os.listdir(real.node("dmesg-iommu")))
    assert len([n for n in names if n.endswith(".txt")]) == 5
    for name in names:
        if name.endswith(".txt"):
            f = iommu.parse({"iommu_dmesg": dmesg(name)})
            assert f.mode in iommu.MODES


def test_amd_blockquoted_remapping_active_and_bad_option_reported():
    f = iommu.parse({"iommu_dmesg": dmesg("amd-vi-unknown-option-on-blockquoted.txt")})
    assert f.vendor == "amd"
    assert f.unknown_options == ["on"]
    # "   > " quoting is stripped, so the active lines are recognised
    assert any("Detected AMD IOMMU #0" in l for l in f.active_lines)
    assert f.active_lines[0].startswith("[")
    assert f.mode == "translated"  # active, and no passthrough anywhere
    assert "kernel default" in f.mode_basis
    assert any("amd_iommu='on'" in e for e in f.evidence)


def test_intel_dmar_table_without_enable_line_is_unknown():
    f = iommu.parse({"iommu_dmesg": dmesg("fwupd2093-lenovo-dmar-table-but-no-iommu-enabled-line-indented.txt")})
    assert f.vendor == "intel"
    assert f.dmar_units == ["dmar0"]
    assert f.hardware_lines == 5
    assert not f.active_lines
    assert f.mode == "unknown"


def test_dmesg_T_prefix_seven_dmar_units():
    f = iommu.parse({"iommu_dmesg": dmesg("lake10-dmesg-T-kern-info-dmar-7-units-partial.txt")})
    assert f.dmar_units == [f"dmar{i}" for i in range(7)]
    assert f.mode == "unknown"  # a partial log: table lines only


@pytest.mark.parametrize(
    "name", ["hotsos-kvm-guest-only-default-domain-line.txt", "fwupd5304-default-domain-translated.txt"]
)
def test_policy_line_without_hardware_means_off(name):
    f = iommu.parse({"iommu_dmesg": dmesg(name)})
    assert f.default_domain == "translated"
    assert f.default_domain_line.endswith("Translated")  # trailing blank dropped
    assert f.hardware_lines == 0
    assert f.mode == "off"


def test_cmdline_fixture_has_no_iommu_flags():
    text = real.node_text("proc-cmdline", "hotsos-openstack-vm-no-iommu-flags.txt")
    f = iommu.parse({"proc_cmdline": text})
    assert f.cmdline.startswith("BOOT_IMAGE=/boot/vmlinuz-5.4.0-99-generic")
    assert f.flags == {}
    assert f.mode == "unknown"
    assert iommu.summarize(f)["cmdline_options"] == "none"


def test_cmdline_flags_constructed():
    # constructed command lines (not captured)
    assert iommu.parse_cmdline("ro intel_iommu=on iommu=pt quiet") == {"intel_iommu": "on", "iommu": "pt"}
    assert iommu.parse_cmdline("amd_iommu=off iommu.passthrough=1") == {"amd_iommu": "off", "iommu.passthrough": "1"}
    f = iommu.parse({"proc_cmdline": "ro intel_iommu=on iommu=pt\n"})
    assert f.mode == "passthrough"
    f = iommu.parse({"proc_cmdline": "ro intel_iommu=off\n"})
    assert f.mode == "off"


def test_cmdline_pt_with_amd_log_gives_passthrough():
    f = iommu.parse({"proc_cmdline": "ro amd_iommu=on iommu=pt\n",
                     "iommu_dmesg": dmesg("amd-vi-unknown-option-on-blockquoted.txt")})
    assert f.mode == "passthrough"
    assert f.flags == {"amd_iommu": "on", "iommu": "pt"}


# sysfs sections below are constructed in the format the iommu_sysfs snippet prints


def test_sysfs_device_group_type_decides():
    text = "class: dmar0 dmar1\ngroups: 140\ntype: 138 DMA-FQ\ntype: 2 identity\n" \
           "dev: 0000:19:00.0 0x10de DMA-FQ\ndev: 0000:1a:00.0 0x15b3 DMA-FQ\n"
    f = iommu.parse({"iommu_sysfs": text, "iommu_dmesg": dmesg("hotsos-kvm-guest-only-default-domain-line.txt")})
    assert f.devices == ["dmar0", "dmar1"] and f.groups == 140
    assert f.group_types == {"DMA-FQ": 138, "identity": 2}
    assert f.device_types["0000:19:00.0"] == "DMA-FQ"
    assert f.mode == "translated"
    assert "NVIDIA/Mellanox" in f.mode_basis


def test_sysfs_identity_groups_mean_passthrough():
    f = iommu.parse({"iommu_sysfs": "class: dmar0\ngroups: 3\ntype: 3 identity\n"})
    assert f.mode == "passthrough"


def test_sysfs_without_groups_means_off_even_with_dmar_table():
    f = iommu.parse({"iommu_sysfs": "class:\ngroups: 0\n",
                     "iommu_dmesg": dmesg("lake10-dmesg-T-kern-info-dmar-7-units-partial.txt")})
    assert f.mode == "off"


def test_judge_translated_with_gpus_warns_and_with_rdma_fails():
    f = iommu.parse({"iommu_dmesg": dmesg("amd-vi-unknown-option-on-blockquoted.txt")})
    [w] = iommu.judge(f, node(gpus=8))
    assert w.status == Status.WARN and w.check == "iommu.mode"
    assert "8 NVIDIA GPUs" in w.message and "iommu=pt" in w.fix and "BIOS" in w.fix
    [x] = iommu.judge(f, node(gpus=8, ports=8))
    assert x.status == Status.FAIL and "RDMA" in x.message


def test_judge_without_gpus_reports_mode_ok():
    f = iommu.parse({"iommu_dmesg": dmesg("amd-vi-unknown-option-on-blockquoted.txt")})
    [o] = iommu.judge(f, node(gpus=0))
    assert o.status == Status.OK and "no NVIDIA GPU" in o.message
    [o] = iommu.judge(f, node())
    assert o.status == Status.OK and "no GPU information" in o.message


def test_judge_off_passthrough_unknown():
    off = iommu.parse({"iommu_dmesg": dmesg("hotsos-kvm-guest-only-default-domain-line.txt")})
    assert iommu.judge(off, node(gpus=8, ports=8))[0].status == Status.OK
    pt = iommu.parse({"proc_cmdline": "iommu=pt"})
    assert iommu.judge(pt, node(gpus=8))[0].status == Status.OK
    unk = iommu.parse({"iommu_dmesg": dmesg("lake10-dmesg-T-kern-info-dmar-7-units-partial.txt")})
    [s] = iommu.judge(unk, node(gpus=8))
    assert s.status == Status.SKIP and "iommu_groups" in s.fix


def test_judge_fault_lines_warn():
    # constructed: an AMD-Vi IO_PAGE_FAULT line in the format the kernel prints
    text = dmesg("amd-vi-unknown-option-on-blockquoted.txt") + (
        "[ 1234.5] amd_iommu: Event logged [IO_PAGE_FAULT domain=0x000e address=0x1000 flags=0x0020]\n"
    )
    f = iommu.parse({"iommu_dmesg": text})
    assert len(f.fault_lines) == 1
    found = iommu.judge(f, node(gpus=2))
    assert [x.check for x in found] == ["iommu.mode", "iommu.faults"]
    assert found[1].status == Status.WARN


def test_judge_none_facts():
    [s] = iommu.judge(None, node())
    assert s.status == Status.SKIP


@pytest.mark.parametrize("raw", [{}, {"iommu_dmesg": None}, {"iommu_dmesg": ""}, {"proc_cmdline": "   \n"},
                                 {"iommu_sysfs": "groups: x\ntype: lots\ndev:\n"}])
def test_tolerates_missing_and_odd_sections(raw):
    f = iommu.parse(raw)
    assert f.mode == "unknown"
    iommu.judge(f, node(gpus=1))
    iommu.summarize(f)


def test_truncated_and_tab_expanded_logs():
    text = dmesg("amd-vi-unknown-option-on-blockquoted.txt")
    cut = iommu.parse({"iommu_dmesg": text[: len(text) // 2]})
    assert cut.vendor == "amd"
    spaced = iommu.parse({"iommu_dmesg": text.replace("\t", "        ").replace("   > ", "\t> ")})
    assert spaced.mode == "translated" and spaced.unknown_options == ["on"]


def _fake_bin(tmp_path: Path, name: str, output_file: Path) -> None:
    b = tmp_path / "bin"
    b.mkdir(exist_ok=True)
    p = b / name
    p.write_text(f"#!/bin/sh\ncat '{output_file}'\n")
    p.chmod(0o755)


def test_snippets_run_against_a_fixture_tree(tmp_path):
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cmdline").write_text(real.node_text("proc-cmdline", "hotsos-openstack-vm-no-iommu-flags.txt"))
    # a constructed sysfs tree: two IOMMU groups, one of them holding an NVIDIA function
    for g, t in (("0", "DMA-FQ"), ("1", "DMA-FQ")):
        (root / "sys/kernel/iommu_groups" / g).mkdir(parents=True)
        (root / "sys/kernel/iommu_groups" / g / "type").write_text(t + "\n")
    (root / "sys/class/iommu/dmar0").mkdir(parents=True)
    dev = root / "sys/bus/pci/devices/0000:19:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    os.symlink("../../../../kernel/iommu_groups/1", dev / "iommu_group")
    other = root / "sys/bus/pci/devices/0000:00:1f.0"
    other.mkdir(parents=True)
    (other / "vendor").write_text("0x8086\n")
    _fake_bin(tmp_path, "dmesg", real.node("dmesg-iommu", "lake10-dmesg-T-kern-info-dmar-7-units-partial.txt"))
    env = {"NCCLDIAG_ROOT": str(root), "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    out = subprocess.run(["sh", "-s"], input=build_script(iommu.SOURCES), capture_output=True, text=True,
                         env=env, timeout=60).stdout
    secs, rcs, truncated = split_sections(out)
    assert not truncated and set(secs) == {"proc_cmdline", "iommu_dmesg", "iommu_sysfs"}
    assert all(rc == 0 for rc in rcs.values())
    assert secs["iommu_sysfs"].splitlines() == ["class: dmar0", "groups: 2", "type: 2 DMA-FQ",
                                                "dev: 0000:19:00.0 0x10de DMA-FQ"]
    assert secs["iommu_dmesg"].count("DMAR:") == 13
    f = iommu.parse(secs)
    assert f.cmdline.endswith("console=ttyS0") and f.dmar_units == [f"dmar{i}" for i in range(7)]
    assert f.mode == "translated" and f.device_types == {"0000:19:00.0": "DMA-FQ"}
    assert iommu.judge(f, node(gpus=1))[0].status == Status.WARN


def test_snippet_prints_nothing_without_sysfs(tmp_path):
    env = {"NCCLDIAG_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["sh", "-s"], input=build_script(iommu.SOURCES[2:]), capture_output=True, text=True,
                         env=env, timeout=30).stdout
    secs, rcs, _ = split_sections(out)
    assert secs["iommu_sysfs"] == "" and rcs["iommu_sysfs"] == 0


def test_default_domain_passthrough_and_disabled_lines():
    # constructed kernel lines in the formats the kernel prints
    pt = iommu.parse({"iommu_dmesg": "[    0.1] DMAR: IOMMU enabled\n"
                                     "[    0.2] iommu: Default domain type: Passthrough (set via kernel command line)\n"})
    assert (pt.mode, pt.mode_basis, pt.default_domain) == ("passthrough", "default domain type", "passthrough")
    off = iommu.parse({"iommu_dmesg": "[    0.0] DMAR: IOMMU disabled\n[    0.1] DMAR: Host address width 46\n"})
    assert off.mode == "off" and off.disabled_lines == ["[    0.0] DMAR: IOMMU disabled"]


def test_default_domain_passthrough_alone_means_passthrough_not_off():
    # The real guest line with its word changed to Passthrough: written for this test (the kernel prints
    # "iommu: Default domain type: Passthrough " the same way, trailing blank included, under iommu=pt).
    line = dmesg("hotsos-kvm-guest-only-default-domain-line.txt").replace("Translated", "Passthrough")
    assert "Passthrough" in line
    f = iommu.parse({"iommu_dmesg": line})
    assert (f.mode, f.mode_basis) == ("passthrough", "the kernel log's default domain type Passthrough")
    (m,) = [x for x in iommu.judge(f, NodeFacts("h")) if x.check == "iommu.mode"]
    assert m.status == Status.OK and "passthrough" in m.message
