"""IOMMU: is DMA from GPUs and NICs translated by the IOMMU?

With the IOMMU translating DMA (Intel VT-d / AMD-Vi in "Translated" mode),
peer-to-peer traffic between GPUs and from NICs into GPU memory must be
remapped too. On bare metal that is the classic cause of NCCL hangs, very low
P2P bandwidth, ``IO_PAGE_FAULT`` messages and even silently zeroed copies.
NVIDIA's advice is to disable the IOMMU in the BIOS or boot with ``iommu=pt``
(passthrough: DMA is not translated for host-owned devices).

The mode is read from sysfs first (``/sys/kernel/iommu_groups/*/type``:
``identity`` = passthrough, ``DMA``/``DMA-FQ`` = translated), then from the
kernel log ("iommu: Default domain type: ...") and the kernel command line.
A log with the IOMMU core's line but no DMAR / AMD-Vi / SMMU line at all (a
KVM guest, a desktop with VT-d off) means no IOMMU is translating anything.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.areas.pcie import node_gpus, node_rdma
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "iommu"
TITLE = "IOMMU"

SOURCES = (
    Source("proc_cmdline", 'cat "$R/proc/cmdline"', description="kernel command line"),
    Source(
        "iommu_dmesg",
        "{ dmesg 2>/dev/null || journalctl -k -b --no-pager 2>/dev/null; } "
        "| grep -iE 'iommu|dmar|amd-vi|smmu|default domain type|io_page_fault' "
        "| grep -v 'Adding to iommu group' | head -n 300",
        timeout=15,
        description="kernel log lines about the IOMMU (dmesg, else journalctl -k)",
    ),
    Source(
        "iommu_sysfs",
        '[ -d "$R/sys/kernel" ] || exit 0; '
        'printf "class:"; for d in "$R"/sys/class/iommu/*; do [ -e "$d" ] && printf " %s" "${d##*/}"; done; echo; '
        'n=0; for g in "$R"/sys/kernel/iommu_groups/*; do [ -d "$g" ] && n=$((n+1)); done; echo "groups: $n"; '
        'cat "$R"/sys/kernel/iommu_groups/*/type 2>/dev/null | sort | uniq -c | sed "s/^ */type: /"; '
        'for d in "$R"/sys/bus/pci/devices/*; do [ -r "$d/vendor" ] || continue; read v < "$d/vendor"; '
        'case "$v" in 0x10de|0x15b3) t=; [ -r "$d/iommu_group/type" ] && read t < "$d/iommu_group/type"; '
        'echo "dev: ${d##*/} $v ${t:-none}";; esac; done | head -n 200; true',
        timeout=15,
        description="IOMMU devices, group count and group types; the group type of NVIDIA/Mellanox functions",
    ),
)

MODES = ("off", "passthrough", "translated", "unknown")

# lines that prove an IOMMU is translating or at least active
_ACTIVE = rx.compile(
    r"DMAR: IOMMU enabled|Intel\(R\) Virtualization Technology for Directed I/O|Intel-IOMMU: enabled"
    r"|DMAR: dmar\d+: Using Queued invalidation|AMD-Vi: Found IOMMU|Detected AMD IOMMU"
    r"|AMD-Vi: IOMMU performance counters supported|AMD-Vi: Interrupt remapping enabled"
    r"|AMD-Vi: Lazy IO/TLB flushing enabled|(?<!\S)arm-smmu(?:-v3)?\S*: (?:probing hardware|\S+ SMMUv)",
    re.I,
)
_HW = rx.compile(r"\bDMAR\b|AMD-Vi|arm-smmu|\bIVRS\b", re.I)
_DISABLED = rx.compile(r"DMAR: IOMMU disabled|AMD-Vi: AMD IOMMU disabled|IOMMU disabled by BIOS", re.I)
_DOMAIN = rx.compile(r"Default domain type:\s*(\w+)(.*)$", re.I)
_FAULT = rx.compile(r"IO_PAGE_FAULT|DMAR: \[DMA (?:Read|Write)|DRHD: handling fault", re.I)
_PTE_FAULT = rx.compile(r"PTE (?:Read|Write) access is not set", re.I)  # after a "DMAR:"


def _fault(line: str) -> bool:
    if _FAULT.search(line):
        return True
    m = _PTE_FAULT.search(line)
    return bool(m and "dmar:" in line[:m.start()].lower())
_UNKNOWN_OPT = rx.compile(r"AMD-Vi: Unknown option - '([^']*)'")
_DMAR_UNIT = rx.compile(r"\bDMAR: (dmar\d+): reg_base_addr")


@dataclass
class IommuFacts:
    cmdline: Optional[str] = None
    flags: Dict[str, str] = field(default_factory=dict)  # intel_iommu, amd_iommu, iommu, iommu.passthrough, iommu.strict
    vendor: Optional[str] = None  # "intel", "amd", "arm"
    active_lines: List[str] = field(default_factory=list)
    disabled_lines: List[str] = field(default_factory=list)
    hardware_lines: int = 0  # DMAR / AMD-Vi / SMMU lines (tables parsed: hardware exists)
    dmar_units: List[str] = field(default_factory=list)
    default_domain: Optional[str] = None  # "translated", "passthrough", ...
    default_domain_line: Optional[str] = None
    unknown_options: List[str] = field(default_factory=list)
    fault_lines: List[str] = field(default_factory=list)
    sysfs_collected: bool = False
    devices: List[str] = field(default_factory=list)  # /sys/class/iommu entries
    groups: Optional[int] = None
    group_types: Dict[str, int] = field(default_factory=dict)  # {"DMA-FQ": 120, "identity": 2}
    device_types: Dict[str, str] = field(default_factory=dict)  # {"0000:19:00.0": "DMA-FQ"} NVIDIA/Mellanox only
    mode: str = "unknown"
    mode_basis: str = ""  # why the mode is what it is
    evidence: List[str] = field(default_factory=list)


def _clean(line: str) -> str:
    """A kernel log line without markdown quoting, indentation or trailing blanks."""
    line = line.strip()
    while line.startswith(">"):
        line = line[1:].strip()
    return line


def parse_cmdline(text: Optional[str]) -> Dict[str, str]:
    flags: Dict[str, str] = {}
    for tok in (text or "").split():
        key, eq, value = tok.partition("=")
        if key in ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict"):
            # repeated iommu= options add up (iommu=pt iommu=soft); keep them all
            flags[key] = f"{flags[key]},{value}" if key in flags and eq else (value if eq else "")
    return flags


def _type_mode(t: str) -> Optional[str]:
    t = t.strip().lower()
    if t == "identity":
        return "passthrough"
    if t in ("dma", "dma-fq"):
        return "translated"
    return None


def parse_sysfs(text: str, f: IommuFacts) -> None:
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if line.startswith("class:"):
            f.devices = line[len("class:"):].split()
        elif line.startswith("groups:"):
            try:
                f.groups = int(line.split(":", 1)[1])
            except ValueError:
                pass
        elif line.startswith("type:"):
            parts = line.split(":", 1)[1].split()
            if len(parts) == 2 and parts[0].isdigit():
                f.group_types[parts[1]] = f.group_types.get(parts[1], 0) + int(parts[0])
        elif line.startswith("dev:"):
            parts = line.split(":", 1)[1].split()
            if len(parts) == 3:
                f.device_types[parts[0]] = parts[2]


def parse_dmesg(text: str, f: IommuFacts) -> None:
    for raw_line in text.splitlines():
        line = _clean(raw_line)
        if not line:
            continue
        if _fault(line):
            f.fault_lines.append(line)
            continue
        m = _DOMAIN.search(line)
        if m:
            f.default_domain = m.group(1).lower()
            f.default_domain_line = line
        m = _UNKNOWN_OPT.search(line)
        if m:
            f.unknown_options.append(m.group(1))
        m = _DMAR_UNIT.search(line)
        if m and m.group(1) not in f.dmar_units:
            f.dmar_units.append(m.group(1))
        if _HW.search(line):
            f.hardware_lines += 1
            low = line.lower()
            f.vendor = f.vendor or ("amd" if "amd-vi" in low or "ivrs" in low else "arm" if "smmu" in low else "intel")
        if _ACTIVE.search(line):
            f.active_lines.append(line)
        if _DISABLED.search(line):
            f.disabled_lines.append(line)


def _cmdline_policy(flags: Dict[str, str]) -> Optional[str]:
    iommu = flags.get("iommu", "").split(",")
    pt = flags.get("iommu.passthrough", "").lower()
    if "pt" in iommu or pt in ("1", "y", "on"):
        return "passthrough"
    if "nopt" in iommu or pt in ("0", "n", "off"):
        return "translated"
    return None


def _cmdline_off(flags: Dict[str, str]) -> bool:
    return (flags.get("intel_iommu", "").split(",")[0] == "off" or flags.get("amd_iommu", "").split(",")[0] == "off"
            or "off" in flags.get("iommu", "").split(","))


def decide_mode(f: IommuFacts) -> None:
    """Set ``mode``, ``mode_basis`` and ``evidence`` from the parsed facts (sysfs first)."""
    ev = f.evidence
    if f.cmdline is not None:
        flags = " ".join(f"{k}={v}" if v else k for k, v in f.flags.items())
        ev.append(f"/proc/cmdline: {flags or 'no IOMMU options'}")
    if f.default_domain_line:
        ev.append(f.default_domain_line)
    ev.extend(f.active_lines[:3])
    ev.extend(f.disabled_lines[:2])
    if f.sysfs_collected:
        types = ", ".join(f"{n} {t}" for t, n in sorted(f.group_types.items()))
        ev.append(f"/sys/class/iommu: {' '.join(f.devices) or 'empty'}; iommu_groups: {f.groups}" + (f" ({types})" if types else ""))

    # 1. sysfs group types: what the kernel actually does, per device
    dev_modes = Counter(m for m in (_type_mode(t) for t in f.device_types.values()) if m)
    all_modes = Counter()
    for t, n in f.group_types.items():
        m = _type_mode(t)
        if m:
            all_modes[m] += n
    if dev_modes:
        f.mode = "translated" if dev_modes.get("translated") else "passthrough"
        f.mode_basis = "IOMMU group type of the NVIDIA/Mellanox devices"
        ev.extend(f"{bdf}: iommu group type {t}" for bdf, t in list(f.device_types.items())[:8])
        return
    if all_modes:
        f.mode = all_modes.most_common(1)[0][0]
        f.mode_basis = "IOMMU group types in /sys/kernel/iommu_groups"
        return
    sysfs_active = bool(f.devices) or bool(f.groups)
    sysfs_absent = f.sysfs_collected and not sysfs_active
    log_active = bool(f.active_lines)
    # the IOMMU core's line is printed on every boot: with it and no hardware line, no IOMMU was found
    # ... unless that line says Passthrough: the kernel chose identity mapping (iommu=pt or its build default), and
    # with no other line that is what the log says, not "off".
    log_none = f.default_domain not in (None, "passthrough") and f.hardware_lines == 0 and not log_active
    policy, policy_basis = _cmdline_policy(f.flags), "kernel command line"
    if f.default_domain in ("passthrough", "translated"):
        policy, policy_basis = f.default_domain, "default domain type"

    off_reason = None
    if sysfs_absent:
        off_reason = "no IOMMU device and no IOMMU group in sysfs"
    elif not sysfs_active and log_none:
        off_reason = "the kernel log shows no DMAR/AMD-Vi/SMMU hardware"
    elif not sysfs_active and (f.disabled_lines or (not log_active and _cmdline_off(f.flags))):
        off_reason = "the IOMMU is disabled (kernel log or command line)"
    if off_reason:
        f.mode, f.mode_basis = "off", off_reason
        return
    if sysfs_active or log_active:
        if policy:
            f.mode, f.mode_basis = policy, policy_basis
        else:
            f.mode = "translated"
            f.mode_basis = "IOMMU active, no passthrough setting found; translated is the kernel default"
        return
    if policy == "passthrough":
        f.mode = "passthrough"
        f.mode_basis = ("iommu=pt on the kernel command line" if policy_basis == "kernel command line"
                        else "the kernel log's default domain type Passthrough")
        return
    f.mode = "unknown"
    f.mode_basis = ("DMAR/AMD-Vi tables are present but the log does not show whether remapping is enabled"
                    if f.hardware_lines else "no IOMMU information")


def parse(raw) -> IommuFacts:
    f = IommuFacts()
    cmd = section(raw, "proc_cmdline")
    if cmd is not None:
        f.cmdline = " ".join(cmd.split())
        f.flags = parse_cmdline(f.cmdline)
    parse_dmesg(section(raw, "iommu_dmesg") or "", f)
    sysfs = section(raw, "iommu_sysfs")
    if sysfs is not None:
        parse_sysfs(sysfs, f)
        f.sysfs_collected = f.groups is not None or bool(f.devices)
    if f.unknown_options:
        f.evidence.append(f"kernel rejected amd_iommu={','.join(repr(o) for o in f.unknown_options)} (not a valid value; ignored)")
    decide_mode(f)
    return f


_FIX = ("NVIDIA's advice for bare-metal GPU nodes: boot with 'iommu=pt' (add it to GRUB_CMDLINE_LINUX in "
        "/etc/default/grub, run update-grub or grub2-mkconfig, reboot), or disable VT-d / AMD-Vi (IOMMU) in the BIOS. "
        "Keep it only where devices are passed to VMs (vfio).")


def judge(facts: Optional[IommuFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "iommu.mode", "no IOMMU information collected")]
    gpus, gpu_words = node_gpus(node)
    rdma, _ = node_rdma(node)
    findings: List[Finding] = []
    ev = facts.evidence[:12]
    actual = {"mode": facts.mode, "basis": facts.mode_basis}
    if facts.mode == "unknown":
        findings.append(skip(NAME, "iommu.mode", f"IOMMU mode unknown: {facts.mode_basis}", actual=actual, evidence=ev,
                             fix="Check 'cat /sys/kernel/iommu_groups/*/type' and 'dmesg | grep -i -e DMAR -e AMD-Vi -e iommu' as root."))
    elif facts.mode == "translated" and gpus:
        what = gpu_words + (" and RDMA NICs" if rdma else "")
        msg = (f"IOMMU translates DMA ({facts.mode_basis}) on a node with {what}; expected passthrough (iommu=pt) or off: "
               "GPU peer-to-peer" + (" and GPUDirect RDMA" if rdma else "") + " traffic can hang, slow down or arrive corrupted")
        make = fail if rdma else warn
        findings.append(make(NAME, "iommu.mode", msg, actual=actual, expected="passthrough or off", evidence=ev, fix=_FIX))
    else:
        note = "" if gpus else f"; {gpu_words}: the IOMMU mode matters for NCCL only on GPU nodes"
        findings.append(ok(NAME, "iommu.mode", f"IOMMU {facts.mode} ({facts.mode_basis}){note}", actual=actual, evidence=ev))
    if facts.fault_lines:
        findings.append(warn(
            NAME, "iommu.faults",
            f"{len(facts.fault_lines)} IOMMU fault lines in the kernel log (IO_PAGE_FAULT / DMAR fault)",
            actual=len(facts.fault_lines), expected=0, evidence=facts.fault_lines[:10],
            fix="DMA by a device to an address the IOMMU had not mapped: with GPUs this is the signature of P2P or "
                "GPUDirect traffic under a translating IOMMU. " + _FIX,
        ))
    return findings


def summarize(facts: Optional[IommuFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    opts = " ".join(f"{k}={v}" if v else k for k, v in sorted(facts.flags.items()))
    return {
        "mode": facts.mode if facts.mode != "unknown" else None,
        "cmdline_options": (opts or "none") if facts.cmdline is not None else None,
    }
