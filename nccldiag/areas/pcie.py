"""PCIe: Access Control Services on bridges, and the links of GPUs and NICs.

ACS request/completion redirect on a PCIe switch or root port sends every
peer-to-peer transaction up to the root complex for validation. GPU-to-GPU and
GPU-to-NIC (GPUDirect RDMA) traffic then either crawls or, with some IOMMU
setups, never arrives: NCCL hangs, or copies land as zeros (NCCL's
troubleshooting guide, section "PCI Access Control Services"). Inside a
virtual machine ACS is what keeps devices of different guests apart, so it is
expected there and judged more leniently (GPUd does the same).

A GPU or NIC whose link trained below its capability (``LnkSta`` under
``LnkCap``) caps the bandwidth every collective can reach. Lost lanes (width)
are a seating, riser or cable fault; a lower speed is often just an idle GPU
saving power: an NVIDIA GPU at Gen1 (2.5 GT/s) on all its lanes is read as
the speed it drops to at rest, any other lower speed is reported with that
caveat. The kernel also logs a
device whose *path* is narrower than the device ("PCIe bandwidth, limited
by"), which ``LnkSta`` of the endpoint alone does not show. Link lines pasted
without their device (a grep of ``lspci -vvv``) are judged by port number: a
link whose capability is port 0's (an endpoint, or a switch's upstream port)
on fewer lanes is a fault; a numbered root or downstream port trains to the
narrower device below it.

This module also answers "does this node have NVIDIA GPUs / RDMA NICs?" for
the other areas, from whichever area saw the hardware.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "pcie"
TITLE = "PCIe"

_LSPCI_KEEP = "^[0-9a-f]|Bus: primary|LnkCap:|LnkSta:|ACSCap:|ACSCtl:|access denied|Kernel driver in use"

SOURCES = (
    Source(
        "lspci",
        "command -v lspci >/dev/null 2>&1 || exit 0; "
        f"lspci -D -vvv -nn 2>/dev/null | grep -E '{_LSPCI_KEEP}' | head -n 20000",
        timeout=30,
        description="lspci -D -vvv -nn, reduced to device headers, bus ranges, link and ACS lines",
    ),
    Source(
        "pcie_dmesg",
        "{ dmesg 2>/dev/null || journalctl -k -b --no-pager 2>/dev/null; } "
        "| grep -E 'PCIe bandwidth, limited by' | head -n 200",
        timeout=15,
        description="kernel lines about devices whose PCIe path limits their bandwidth",
    ),
    Source(
        "virt",
        "systemd-detect-virt 2>/dev/null; "
        "grep -qE '^flags.* hypervisor' \"$R/proc/cpuinfo\" 2>/dev/null && echo cpu-flag:hypervisor; true",
        description="whether the node is a virtual machine (systemd-detect-virt, CPU hypervisor flag)",
    ),
)

NVIDIA = "10de"
MELLANOX = "15b3"
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
# the bits NCCL's guide names: with any of them on, P2P goes through the root complex
ACS_REDIRECT = ("SrcValid", "ReqRedir", "CmpltRedir")
# the PCIe Gen1 rate: the link speed of an NVIDIA GPU at rest
IDLE_GTS = 2.5


@dataclass
class Link:
    speed_gts: Optional[float] = None
    width: Optional[int] = None


@dataclass
class PciDevice:
    bdf: str  # 0000:19:00.0
    class_name: str = ""
    class_id: Optional[str] = None  # "0302" (lspci -nn)
    description: str = ""
    vendor_id: Optional[str] = None  # "10de" (lspci -nn), or inferred from the name
    device_id: Optional[str] = None
    driver: Optional[str] = None
    cap: Link = field(default_factory=Link)
    sta: Link = field(default_factory=Link)
    acs_cap: Dict[str, bool] = field(default_factory=dict)
    acs_ctl: Dict[str, bool] = field(default_factory=dict)
    bus_range: Optional[Tuple[int, int]] = None  # (secondary, subordinate) for bridges
    caps_denied: bool = False
    lines: List[str] = field(default_factory=list)  # the lines judged, for evidence

    @property
    def domain(self) -> str:
        return self.bdf.split(":", 1)[0]

    @property
    def bus(self) -> int:
        return int(self.bdf.split(":")[1], 16)

    @property
    def is_bridge(self) -> bool:
        return self.class_id == "0604" or "bridge" in self.class_name.lower()

    @property
    def is_nvidia_gpu(self) -> bool:
        if self.vendor_id != NVIDIA:
            return False
        if self.class_id:
            return self.class_id in ("0300", "0302")
        return self.class_name.lower() in ("vga compatible controller", "3d controller")

    @property
    def is_rdma_nic(self) -> bool:
        if self.vendor_id != MELLANOX:
            return False
        if self.class_id:
            return self.class_id in ("0200", "0207")
        return self.class_name.lower() in ("ethernet controller", "infiniband controller", "network controller")

    @property
    def acs_redirect(self) -> List[str]:
        return [b for b in ACS_REDIRECT if self.acs_ctl.get(b)]


@dataclass
class LimitedLine:
    """One kernel 'available PCIe bandwidth, limited by' line."""

    bdf: str
    available_gbps: float
    limited_by: str  # "16.0 GT/s PCIe x16 link at 0000:01:00.0"
    capable_gbps: Optional[float]
    line: str


@dataclass
class TreeDevice:
    """One function of a ``lspci -t``/``-tv`` tree, placed by the tree's layout."""

    bdf: str  # 0000:04:00.0
    name: Optional[str] = None  # -tv only
    bus_range: Optional[Tuple[int, int]] = None  # a bridge's secondary..subordinate buses ("-[03-05]")
    parent: Optional[str] = None  # the bridge above it; None on a root bus


@dataclass
class PcieFacts:
    devices: List[PciDevice] = field(default_factory=list)
    limited: List[LimitedLine] = field(default_factory=list)
    virtualization: Optional[str] = None  # "kvm", "microsoft", ... ; None on bare metal or unknown
    virt_known: bool = False
    lspci_present: bool = False
    tree: bool = False  # the lspci text is a `lspci -t` / `-tv` tree: no stanzas, no link or ACS lines
    tree_names: List[str] = field(default_factory=list)  # "0000:01:00.0 Mellanox ... [ConnectX-6]" (-tv only)
    tree_devices: List[TreeDevice] = field(default_factory=list)  # every function of the tree, named or not
    acs_lines: List[str] = field(default_factory=list)  # ACSCtl lines with no device header ('lspci -vvv | grep ACSCtl')
    kernel_classes: Dict[str, str] = field(default_factory=dict)  # bdf -> class code the kernel log enumerated ("060400")
    link_lines: List[Tuple[Link, Link, List[str]]] = field(default_factory=list)  # (cap, sta, lines) with no device header

    @property
    def bridges(self) -> List[PciDevice]:
        return [d for d in self.devices if d.is_bridge]

    @property
    def gpus(self) -> List[PciDevice]:
        return [d for d in self.devices if d.is_nvidia_gpu]

    @property
    def nics(self) -> List[PciDevice]:
        return [d for d in self.devices if d.is_rdma_nic]

    @property
    def tree_rdma(self) -> List[str]:
        """Devices a ``lspci -tv`` tree names as Mellanox/NVIDIA networking (ConnectX, BlueField)."""
        return [n for n in self.tree_names if _TREE_RDMA.search(n)]

    @property
    def tree_gpus(self) -> List[str]:
        return [n for n in self.tree_names if _TREE_GPU.search(n) and not _TREE_NOT_GPU.search(n)]

    @property
    def tree_other_gpus(self) -> List[str]:
        """GPUs of other vendors a ``-tv`` tree names (AMD Instinct/Radeon, Intel data-center GPUs, Habana)."""
        return [n for n in self.tree_names if _TREE_OTHER_GPU.search(n) and not _TREE_NOT_GPU.search(n)]

    def tree_chain(self, bdf: str) -> List[TreeDevice]:
        """The bridges above a tree function, from the root port down."""
        by = {d.bdf: d for d in self.tree_devices}
        chain: List[TreeDevice] = []
        cur = by.get(bdf)
        while cur is not None and cur.parent and len(chain) < 32:
            cur = by.get(cur.parent)
            if cur is not None:
                chain.insert(0, cur)
        return chain

    @property
    def tree_switches(self) -> List[TreeDevice]:
        """Upstream ports of PCIe switches: bridges below a root port with bridges below them."""
        parents = {d.parent for d in self.tree_devices if d.bus_range is not None}
        return [d for d in self.tree_devices if d.bus_range is not None and d.parent and d.bdf in parents]


# 0000:19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
_HEADER = rx.compile(
    r"^(?:([0-9a-fA-F]{4,}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\s+"
    r"([^:\[]+?)(?:\s+\[([0-9a-fA-F]{4})\])?:\s*(.*)$"
)
_IDS = rx.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_SPEED = rx.compile(r"Speed\s+([\d.]+)\s*GT/s")
_PORT0 = rx.compile(r"LnkCap:\s{1,8}Port #0,")
_WIDTH = rx.compile(r"Width\s+x(\d+)")
_BUS = rx.compile(r"Bus:\s*primary=([0-9a-fA-F]+),\s*secondary=([0-9a-fA-F]+),\s*subordinate=([0-9a-fA-F]+)")
_ACS = rx.compile(r"\b(" + "|".join(ACS_BITS) + r")([+-])")
_LIMITED = rx.compile(
    r"\b(?:pci\s+)?((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):\s*([\d.]+)\s*Gb/s available PCIe bandwidth,"
    r"\s*limited by\s+(.+?)(?:\s*\(capable of\s+([\d.]+)\s*Gb/s[^)]*\))?\s*$"
)
_VENDOR_NAMES = (("nvidia", NVIDIA), ("mellanox", MELLANOX))
# `lspci -t[v]`: "-[0000:00]-+-01.0-[01]----00.0  Mellanox Technologies MT28908 Family [ConnectX-6]"
_TREE_ROOT = rx.compile(r"^\s*[-+\\|]*\[(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2})\]-")
_TREE_BRANCH = rx.compile(r"[+\\`]-[0-9a-fA-F]{2}\.[0-7]")
_TREE_NAMED = rx.compile(r"([0-9a-fA-F]{2}\.[0-7])\s{2,}(\S.*?)\s*$")
_TREE_TOKEN = rx.compile(r"\[(?:(?P<dom>[0-9a-fA-F]{4}):)?(?P<sec>[0-9a-fA-F]{2})(?:-(?P<sub>[0-9a-fA-F]{2}))?\]"
                         r"|(?P<dev>[0-9a-fA-F]{2}\.[0-7])|(?P<br>[+\\`])-")
_TREE_NOT_GPU = rx.compile(r"Audio|USB|UCSI|Serial Bus|PCI Express|Root Port|Switch|Bridge", re.I)
_TREE_OTHER_GPU = rx.compile(r"\[AMD/ATI\]|Radeon|Instinct|Intel Corporation .{0,512}(?:Data Center GPU|Arc|Graphics)|"
                             r"Habana|Gaudi", re.I)
_TREE_RDMA = rx.compile(r"Mellanox|ConnectX|BlueField|\[15b3:", re.I)
_TREE_GPU = rx.compile(r"NVIDIA Corporation.{0,512}(?:\[(?:GeForce|RTX|Tesla|Quadro|[AHBL]\d+|GH|GB)|3D|VGA)|\[10de:[0-9a-f]{4}\]"
                       r"|NVIDIA Corporation G[AHBPKVMT]?\d{2,3}", re.I)


def _norm_bdf(bdf: str) -> str:
    bdf = bdf.lower()
    return bdf if bdf.count(":") == 2 else "0000:" + bdf


def _link(text: str) -> Link:
    s, w = _SPEED.search(text), _WIDTH.search(text)
    return Link(float(s.group(1)) if s else None, int(w.group(1)) if w else None)


def parse_lspci(text: Optional[str]) -> List[PciDevice]:
    """Devices of ``lspci [-D] -vvv [-nn]`` output, full or reduced to the lines we keep.

    A stanza starts at a header line (a BDF then the class); every other line
    belongs to the last header, whatever its indentation (pasted or
    re-indented output keeps working).
    """
    devices: List[PciDevice] = []
    cur: Optional[PciDevice] = None
    for raw_line in (text or "").splitlines():
        line = raw_line.strip()
        m = _HEADER.match(line)
        if m:
            dom, bus, dev, fn, cls, cls_id, rest = m.groups()
            cur = PciDevice(bdf=_norm_bdf(f"{dom or '0000'}:{bus}:{dev}.{fn}"), class_name=cls.strip(),
                            class_id=cls_id.lower() if cls_id else None, description=rest.strip())
            ids = _IDS.search(rest)
            if ids:
                cur.vendor_id, cur.device_id = ids.group(1).lower(), ids.group(2).lower()
            else:
                low = rest.lower()
                cur.vendor_id = next((vid for name, vid in _VENDOR_NAMES if low.startswith(name)), None)
            cur.lines.append(line)
            devices.append(cur)
            continue
        if cur is None:
            continue
        body = line.strip()
        if body.startswith("LnkCap:"):
            cur.cap = _link(body)
            cur.lines.append(body)
        elif body.startswith("LnkSta:"):
            cur.sta = _link(body)
            cur.lines.append(body)
        elif body.startswith("ACSCtl:") or body.startswith("ACSCap:"):
            bits = {k: v == "+" for k, v in _ACS.findall(body)}
            if body.startswith("ACSCtl:"):
                cur.acs_ctl = bits
                cur.lines.append(body)
            else:
                cur.acs_cap = bits
        elif "access denied" in body:
            cur.caps_denied = True
        elif body.startswith("Kernel driver in use:"):
            cur.driver = body.split(":", 1)[1].strip() or None
        else:
            b = _BUS.search(body)
            if b:
                cur.bus_range = (int(b.group(2), 16), int(b.group(3), 16))
    return devices


def parse_link_lines(text: Optional[str]) -> List[Tuple[Link, Link, List[str]]]:
    """``(LnkCap, LnkSta, lines)`` of link lines with no device header ('lspci -vvv | grep -i speed').

    Each ``LnkSta`` is paired with the ``LnkCap`` above it (lspci prints a device's capability first); a status
    with no capability before it is kept with an empty capability.
    """
    pairs: List[Tuple[Link, Link, List[str]]] = []
    cap: Optional[Tuple[Link, str]] = None
    for raw_line in (text or "").splitlines():
        body = raw_line.strip()
        if body.startswith("LnkCap:"):
            cap = (_link(body), body)
        elif body.startswith("LnkSta:"):
            pairs.append((cap[0] if cap else Link(), _link(body), ([cap[1]] if cap else []) + [body]))
            cap = None
    return pairs


def parse_tree_devices(text: Optional[str]) -> List[TreeDevice]:
    """Every function of a ``lspci -t``/``-tv`` tree with its bus address, bus range and parent bridge.

    A bracket gives the bus of what follows it on the line (``-[0000:00]-``
    a root bus, ``02.0-[02-05]`` the buses below bridge ``02.0``); a ``+-``
    or ``\\-`` fork continues, on the lines below, at the same column with the
    bus of the bracket it first followed. A function's name (``-tv``) is the
    text after two spaces, read to the end of the line.
    """
    out: List[TreeDevice] = []
    forks: Dict[int, Tuple[str, int, Optional[str]]] = {}  # column -> (domain, bus, parent bridge)
    domain = "0000"
    for line in (text or "").splitlines():
        cur: Optional[Tuple[str, int, Optional[str]]] = None
        last: Optional[TreeDevice] = None
        pos = 0
        while True:
            m = _TREE_TOKEN.search(line, pos)
            if not m:
                break
            pos = m.end()
            if m.group("sec"):
                if m.group("dom"):
                    domain = m.group("dom").lower()
                sec = int(m.group("sec"), 16)
                parent = None
                if last is not None and not m.group("dom"):
                    last.bus_range = (sec, int(m.group("sub") or m.group("sec"), 16))
                    parent = last.bdf
                cur, last = (domain, sec, parent), None
            elif m.group("br"):
                col = m.start("br")
                if cur is not None and last is None:
                    forks[col] = cur  # a fork right after a bracket: its bus for the lines below
                elif col in forks:
                    cur = forks[col]
                last = None
            elif cur is not None:
                dev = TreeDevice(f"{cur[0]}:{cur[1]:02x}:{m.group('dev').lower()}", parent=cur[2])
                out.append(dev)
                last = dev
                named = re.match(r"\s{2,}(\S.*?)\s*$", line[m.end():])
                if named:
                    dev.name = named.group(1)
                    break
    return out


def parse_tree(text: Optional[str]) -> Tuple[bool, List[str]]:
    """``(is a tree, named devices)`` of ``lspci -t`` / ``lspci -tv`` output.

    The tree has no link or ACS lines; with ``-v`` each function carries its
    vendor and device name, which is what the other areas can use (a named
    ConnectX is evidence of RDMA hardware).
    """
    lines = [l.rstrip() for l in (text or "").splitlines() if l.strip()]
    if not lines or not any(_TREE_ROOT.match(l) for l in lines) or not any(_TREE_BRANCH.search(l) for l in lines):
        return False, []
    names: List[str] = []
    for line in lines:
        m = _TREE_NAMED.search(line)
        if m and not _HEADER.match(line.strip()):
            names.append(f"{m.group(1)} {m.group(2)}")
    return True, names


# The kernel's enumeration line of a device: 'pci 0000:a7:00.0: [10b5:8725] type 01 class 0x060400'
_ENUMERATED = rx.compile(r"(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7]): \[[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\] "
                         r"type [0-9a-fA-F]{2} class 0x([0-9a-fA-F]{6})")
# the PCI class codes of the devices whose bandwidth the check judges: network controllers (02: Ethernet, InfiniBand),
# display controllers (03: GPUs), InfiniBand as a serial bus controller (0c06), processing accelerators (12)
_JUDGED_CLASSES = ("02", "03", "0c06", "12")


def parse_kernel_classes(text: Optional[str]) -> Dict[str, str]:
    """The class code of each device a kernel log shows being enumerated, by bus address."""
    out: Dict[str, str] = {}
    for m in _ENUMERATED.finditer(text or ""):
        dom, bus, dev, fn, cls = m.groups()
        out[_norm_bdf(f"{dom or '0000'}:{bus}:{dev}.{fn}")] = cls.lower()
    return out


def parse_limited(text: Optional[str]) -> List[LimitedLine]:
    out: List[LimitedLine] = []
    for line in (text or "").splitlines():
        m = _LIMITED.search(line.strip())
        if m:
            bdf, avail, by, capable = m.groups()
            out.append(LimitedLine(_norm_bdf(bdf), float(avail), by.strip(), float(capable) if capable else None, line.strip()))
    return out


def parse_virt(text: Optional[str]) -> Tuple[Optional[str], bool]:
    """``(hypervisor or None, known)`` from systemd-detect-virt and the CPU flag."""
    if text is None:
        return None, False
    words = [l.strip() for l in text.splitlines() if l.strip()]
    kinds = [w for w in words if not w.startswith("cpu-flag:")]
    if kinds and kinds[0] != "none":
        return kinds[0], True
    if "cpu-flag:hypervisor" in words:
        return "vm", True
    return None, bool(kinds)  # 'none' from systemd-detect-virt means bare metal


def parse(raw) -> PcieFacts:
    text = section(raw, "lspci")
    f = PcieFacts(devices=parse_lspci(text), lspci_present=text is not None)
    if not f.devices:
        f.tree, f.tree_names = parse_tree(text)
        if f.tree:
            f.tree_devices = parse_tree_devices(text)
            named = [f"{d.bdf} {d.name}" for d in f.tree_devices if d.name]
            if len(named) == len(f.tree_names):
                f.tree_names = named  # the same functions, with their full bus address
        f.acs_lines = [l.strip() for l in (text or "").splitlines() if l.strip().startswith("ACSCtl:")]
        f.link_lines = parse_link_lines(text)
    f.limited = parse_limited(section(raw, "pcie_dmesg"))
    f.kernel_classes = parse_kernel_classes(section(raw, "kernel_log")) if f.limited else {}
    f.virtualization, f.virt_known = parse_virt(raw.get("virt"))
    return f


# ---- what the node has, from whichever area saw it -------------------------------------------


def _list_attr(facts: Any, attr: str) -> Optional[list]:
    value = getattr(facts, attr, None) if facts is not None else None
    return list(value) if isinstance(value, (list, tuple)) else None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def node_gpus(node: Optional[NodeFacts]) -> Tuple[Optional[bool], str]:
    """Whether the node has NVIDIA GPUs, and how we know, in words for messages.

    Any area that saw GPUs wins (the gpu area's lists, including GPUs on the
    bus that the driver lost; NVIDIA functions in lspci; the ``nvidia``
    module); "no" needs an area that looked and found none; ``None`` when no
    area tells.
    """
    if node is None:
        return None, "no GPU information"
    looked = False
    gpu = node.get("gpu")
    listed, on_bus = _list_attr(gpu, "gpus"), _list_attr(gpu, "pci_gpus")
    if listed is not None or on_bus is not None:
        looked = True
        n = max(len(listed or []), len(on_bus or []))
        if n:
            return True, _plural(n, "NVIDIA GPU")
    pcie = node.get("pcie")
    if isinstance(pcie, PcieFacts):
        read, said = _lspci_count(pcie, pcie.gpus, pcie.tree_gpus, "NVIDIA GPU")
        if said:
            return True, said
        looked = looked or read
    modules = getattr(node.get("gdr"), "modules", None)
    if modules and "nvidia" in modules:
        return True, "NVIDIA GPUs (nvidia module loaded)"
    return (False, "no NVIDIA GPU") if looked else (None, "no GPU information")


def _lspci_count(pcie: PcieFacts, listed: Sequence[object], tree: Sequence[object], what: str
                 ) -> Tuple[bool, Optional[str]]:
    """Whether lspci was read in ``pcie`` (its listing or its tree), and the count of ``what`` it shows: ``listed``,
    the devices of the listing, else ``tree``, the names of the tree (-tv); None when it shows none."""
    if pcie.devices and listed:
        return True, _plural(len(listed), what) + " (lspci)"
    if pcie.tree_names and tree:
        return True, _plural(len(tree), what) + " (lspci -tv)"
    return bool(pcie.devices or pcie.tree_names), None


def node_rdma(node: Optional[NodeFacts]) -> Tuple[Optional[bool], str]:
    """Whether the node has RDMA NICs: InfiniBand ports, else Mellanox NICs in lspci, else RDMA modules."""
    if node is None:
        return None, "no RDMA information"
    looked = False
    for name in ("ib", "infiniband"):
        ports = _list_attr(node.get(name), "ports")
        if ports is not None:
            looked = True
            if ports:
                return True, _plural(len(ports), "RDMA port")
    pcie = node.get("pcie")
    if isinstance(pcie, PcieFacts):
        read, said = _lspci_count(pcie, pcie.nics, pcie.tree_rdma, "Mellanox NIC function")
        if said:
            return True, said
        looked = looked or read
    modules = getattr(node.get("gdr"), "modules", None)
    found = [m for m in ("mlx5_ib", "mlx4_ib", "ib_core") if m in (modules or [])]
    if found:
        return True, f"RDMA modules loaded ({', '.join(found)})"
    return (False, "no RDMA NIC") if looked else (None, "no RDMA information")


# ---- judgement ---------------------------------------------------------------------------------


def _below(dev: PciDevice, endpoints: List[PciDevice]) -> Optional[bool]:
    """Whether a GPU or NIC sits in the bridge's bus range (None when the range is unknown)."""
    if dev.bus_range is None:
        return None
    lo, hi = dev.bus_range
    return any(e.domain == dev.domain and lo <= e.bus <= hi for e in endpoints)


def _fmt_speed(v: Optional[float]) -> str:
    return "?" if v is None else f"{v:g} GT/s"


def _judge_acs(facts: PcieFacts, gpus: Optional[bool]) -> List[Finding]:
    endpoints = facts.gpus + facts.nics
    with_acs = [d for d in facts.bridges if d.acs_ctl]
    if not with_acs:
        denied = [d for d in facts.devices if d.caps_denied]
        if denied:
            return [skip(NAME, "pcie.acs", f"lspci could not read capabilities of {len(denied)} devices (not root)",
                         fix="Run the collection as root (or with sudo) so that lspci can read ACS and link registers.")]
        if not any(d.cap.width or d.acs_cap or d.bus_range for d in facts.devices):
            return [skip(NAME, "pcie.acs", "lspci output has no capability lines (not 'lspci -vvv' output)")]
        return [ok(NAME, "pcie.acs", f"no bridge reports ACS control ({len(facts.bridges)} bridges)")]
    on = [d for d in with_acs if d.acs_redirect]
    if not on:
        return [ok(NAME, "pcie.acs", f"ACS redirect off on all {len(with_acs)} bridges with ACS",
                   actual={"bridges_with_acs": len(with_acs), "redirecting": 0})]
    relevant = [d for d in on if _below(d, endpoints) is not False]
    evidence = [f"{d.bdf} {d.description[:60]}: ACSCtl " + " ".join(f"{b}{'+' if d.acs_ctl.get(b) else '-'}" for b in ACS_BITS)
                for d in (relevant or on)[:12]]
    actual = {d.bdf: d.acs_redirect for d in on}
    setpci = "; ".join(f"setpci -s {d.bdf} ECAP_ACS+0x6.w=0000" for d in (relevant or on)[:4])
    fix = ("Disable ACS (PCIe ACS / 'ACS Control') in the BIOS, or clear it after each boot on every bridge: "
           f"{setpci}{' ...' if len(relevant or on) > 4 else ''}. "
           "Also disable the IOMMU or boot with iommu=pt (NCCL troubleshooting, 'PCI Access Control Services').")
    if facts.virtualization:
        return [ok(NAME, "pcie.acs",
                   f"ACS redirect on {len(on)} bridges; expected inside a virtual machine ({facts.virtualization})",
                   actual=actual, evidence=evidence,
                   fix="In a VM ACS stays on; GPUDirect P2P/RDMA needs ATS enabled on the NICs, which the cloud or hypervisor configures.")]
    where = f"{len(relevant)} on the path of GPUs or NICs" if relevant else "none known to lead to a GPU or NIC"
    msg = f"ACS redirect ({'/'.join(ACS_REDIRECT)}) on {len(on)} bridges ({where}); expected off"
    if gpus and relevant:
        msg += ": P2P and GPUDirect RDMA traffic is redirected through the root complex (hangs or low bandwidth)"
        return [fail(NAME, "pcie.acs", msg, actual=actual, expected="ACSCtl SrcValid- ReqRedir- CmpltRedir-",
                     evidence=evidence, fix=fix)]
    return [warn(NAME, "pcie.acs", msg, actual=actual, expected="ACSCtl SrcValid- ReqRedir- CmpltRedir-",
                 evidence=evidence, fix=fix)]


def _judge_acs_lines(lines: List[str]) -> List[Finding]:
    """ACSCtl lines without their devices (a grep of lspci -vvv): redirect on some bridge, which one unknown."""
    on = [l for l in lines if any(f"{b}+" in l for b in ACS_REDIRECT)]
    if not on:
        return [ok(NAME, "pcie.acs", f"ACS redirect off on all {len(lines)} ACSCtl lines (devices not shown)")]
    return [warn(NAME, "pcie.acs", f"ACS redirect ({'/'.join(ACS_REDIRECT)}) on {len(on)} of {len(lines)} ACSCtl lines; "
                 "which bridges they are is not in the output (a grep of lspci -vvv)",
                 actual={"acs_lines": len(lines), "redirecting": len(on)}, expected="ACSCtl SrcValid- ReqRedir- CmpltRedir-",
                 evidence=on[:8],
                 fix=("Disable ACS in the BIOS (or clear it on every bridge after boot: setpci -s <bdf> "
                      "ECAP_ACS+0x6.w=0000) and run 'lspci -D -vvv' as root to see which bridges redirect; redirect "
                      "on a bridge above GPUs or NICs breaks P2P and GPUDirect RDMA."))]


def _judge_link_lines(pairs: List[Tuple[Link, Link, List[str]]]) -> List[Finding]:
    """Link lines without their devices (a grep of lspci -vvv): a link below its capability, which device unknown.

    Lost lanes are a fault whatever the device; a lower speed alone is not judged here: an idle GPU lowers its link
    speed to save power, and without the device line nothing says which device it is.
    """
    known = [(c, s, ls) for c, s, ls in pairs if c.width and s.width]
    # only a link whose capability is port 0's (an endpoint, or a switch's upstream port: the link facing the slot);
    # a root or downstream port (numbered) trains to the narrower device below it, which is no fault
    narrow = [(c, s, ls) for c, s, ls in known if s.width < c.width and _PORT0.match(ls[0])]
    if narrow:
        return [warn(NAME, "pcie.link_width",
                     f"{len(narrow)} of {len(known)} PCIe links run on fewer lanes than they support "
                     + ", ".join(f"x{s.width}/x{c.width}" for c, s, _ in narrow[:4])
                     + "; which devices they are is not in the output (a grep of lspci -vvv)",
                     actual=[s.width for _, s, _ in narrow], expected=[c.width for c, _, _ in narrow],
                     evidence=[l for _, _, ls in narrow[:8] for l in ls],
                     fix="Lost lanes are a hardware fault: run 'lspci -D -vvv' as root to see which device it is, then "
                         "reseat the card, riser or cable and check the slot (its wiring in the board's manual); "
                         "this caps the device's bandwidth.")]
    below = [(c, s, ls) for c, s, ls in known
             if s.width < c.width or (s.speed_gts and c.speed_gts and s.speed_gts < c.speed_gts)]
    if below:
        return [skip(NAME, "pcie.link", f"{len(below)} of {len(known)} PCIe links run below their maximum speed, or "
                     "narrower on a numbered (root or downstream) port, which trains to the device below it; an idle "
                     "GPU lowers its link speed to save power; which devices they are is not in the output",
                     evidence=[l for _, _, ls in below[:8] for l in ls],
                     fix="Run 'lspci -D -vvv' as root under load to see which devices stay slow or narrow.")]
    if known:
        return [ok(NAME, "pcie.link", f"{len(known)} PCIe links at full speed and width (devices not shown)")]
    return [skip(NAME, "pcie.lspci", "lspci link lines without capability lines to compare them with")]


def _judge_links(facts: PcieFacts) -> List[Finding]:
    endpoints = facts.gpus + facts.nics
    with_link = [d for d in endpoints if d.cap.width and d.sta.width]
    if not endpoints:
        return [skip(NAME, "pcie.link", "no NVIDIA GPU or Mellanox NIC in lspci")]
    if not with_link:
        return [skip(NAME, "pcie.link", f"no link registers readable for {len(endpoints)} GPUs/NICs (lspci needs root)")]
    findings: List[Finding] = []
    narrow = [d for d in with_link if d.sta.width < d.cap.width]
    below = [d for d in with_link if d.sta.speed_gts and d.cap.speed_gts and d.sta.speed_gts < d.cap.speed_gts and d not in narrow]
    # an NVIDIA GPU at rest drops its link to Gen1 (2.5 GT/s) with all its lanes, and trains up again under load
    # (nvidia-smi's 'Link Gen Current' of an idle GPU reads 1 too): that reading alone is no fault
    idle = [d for d in below if d.is_nvidia_gpu and d.sta.speed_gts == IDLE_GTS]
    slow = [d for d in below if d not in idle]

    def ev(ds: List[PciDevice]) -> List[str]:
        return [f"{d.bdf} {d.description[:50]}: LnkCap {_fmt_speed(d.cap.speed_gts)} x{d.cap.width}, "
                f"LnkSta {_fmt_speed(d.sta.speed_gts)} x{d.sta.width}" for d in ds[:16]]

    if narrow:
        findings.append(warn(
            NAME, "pcie.link_width",
            f"{len(narrow)} GPU/NIC links run on fewer lanes than they support "
            + ", ".join(f"{d.bdf} x{d.sta.width}/x{d.cap.width}" for d in narrow[:4]),
            actual={d.bdf: d.sta.width for d in narrow}, expected={d.bdf: d.cap.width for d in narrow},
            evidence=ev(narrow),
            fix="Lost lanes are a hardware fault: reseat the card, riser or cable, check the slot, "
                "and compare with 'nvidia-smi -q -d PCIE' or 'mlxlink'; this caps host and GPUDirect bandwidth.",
        ))
    if slow:
        gpu_only = all(d.is_nvidia_gpu for d in slow)
        note = (" (idle GPUs lower their link speed to save power: re-check under load before acting)"
                if any(d.is_nvidia_gpu for d in slow) else "")
        findings.append(warn(
            NAME, "pcie.link_speed",
            f"{len(slow)} GPU/NIC links run below their maximum speed "
            + ", ".join(f"{d.bdf} {_fmt_speed(d.sta.speed_gts)}/{_fmt_speed(d.cap.speed_gts)}" for d in slow[:4]) + note,
            actual={d.bdf: d.sta.speed_gts for d in slow}, expected={d.bdf: d.cap.speed_gts for d in slow},
            evidence=ev(slow),
            fix=("Run a load (nccldiag probe, or nvidia-smi -q -d PCIE during a job) and check 'Link Gen Current'. "
                 if gpu_only else "")
            + "A link that stays slow under load points at the slot or switch generation, a BIOS PCIe speed setting, or signal integrity.",
        ))
    if not findings:
        rest = (f"; {len(idle)} GPU {'link' if len(idle) == 1 else 'links'} at {_fmt_speed(IDLE_GTS)} (Gen1) on all "
                "lanes: the speed an idle GPU drops to, it trains up under load (a link that stays there under load "
                "is not seen at rest)" if idle else "")
        findings.append(ok(NAME, "pcie.link", f"{len(with_link) - len(idle)} GPU/NIC links at full speed and width"
                           + rest,
                           actual={d.bdf: f"{_fmt_speed(d.sta.speed_gts)} x{d.sta.width}" for d in with_link}))
    return findings


def _judge_limited(facts: PcieFacts) -> List[Finding]:
    if not facts.limited:
        return []
    by_bdf = {d.bdf: d for d in facts.devices}
    # a device lspci does not show is judged unless the kernel log enumerated it as something else than a GPU or a
    # NIC (a PCIe switch's port or a storage controller: a GPU or NIC behind a slow switch link gets its own line)
    def judged(l: LimitedLine) -> bool:
        d = by_bdf.get(l.bdf)
        if d is not None:
            return d.is_nvidia_gpu or d.is_rdma_nic
        return facts.kernel_classes.get(l.bdf, "03").startswith(_JUDGED_CLASSES)

    lines = [l for l in facts.limited if judged(l)]
    if not lines:
        return []
    return [warn(
        NAME, "pcie.bandwidth_limited",
        f"the kernel reports {len(lines)} devices whose PCIe path limits their bandwidth "
        f"({lines[0].bdf}: {lines[0].available_gbps:g} Gb/s, limited by {lines[0].limited_by})",
        actual={l.bdf: l.available_gbps for l in lines}, expected={l.bdf: l.capable_gbps for l in lines},
        evidence=[l.line for l in lines[:12]],
        fix="A link upstream of the device (switch or root port) trained slower or narrower than the device: "
            "check that link in lspci -vvv (LnkSta), the BIOS PCIe generation setting, and the riser/switch board.",
    )]


# An NVIDIA (Mellanox) adapter whose firmware does not boot answers as its flash recovery ('livefish') device, named
# in pci.ids (vendor 15b3, devices 0191 to 0225) '<family> [ConnectX-5 Flash Recovery]', '[ConnectX-6 Secure Flash
# Recovery]', '[ConnectX-9 Secure Flash Recovery-RMA]', '[BlueField-2 SoC Flash Recovery]' (pciutils/pciids pci.ids
# at c1c1254): no driver binds it and it has no ports until a firmware is burned to it (NVIDIA MFT user manual,
# 'Booting HCA Device in Livefish Mode').
_FLASH_RECOVERY = rx.compile(r"\[(?:ConnectX|Connect-IB|BlueField)[^\]\n]{0,40}? Flash Recovery(?:-RMA)?\]")


def _judge_recovery(facts: PcieFacts) -> List[Finding]:
    """pcie.hca_flash_recovery: an adapter lspci shows as its flash recovery device runs no firmware."""
    stuck = [d for d in facts.devices
             if _FLASH_RECOVERY.search(d.description) and d.vendor_id in (MELLANOX, None)]
    if not stuck:
        return []
    return [fail(
        NAME, "pcie.hca_flash_recovery",
        f"{_plural(len(stuck), 'NVIDIA (Mellanox) adapter')} in flash recovery: no firmware runs on "
        f"{'it' if len(stuck) == 1 else 'them'} ({stuck[0].bdf}: {stuck[0].description})",
        evidence=[d.lines[0] for d in stuck[:12]],
        fix="Burn the image of the card's own board to the recovery device (mst start; flint -d <dev> -i <image> "
            "-nofs -allow_psid_change burn; set its GUID and MAC again), then power-cycle the node; replace a card "
            "that stays in recovery after a good burn.",
    )]


def _judge_tree(facts: PcieFacts) -> Finding:
    """pcie.lspci on a ``lspci -t``/``-tv`` tree: a skip that keeps what the tree shows."""
    devs = facts.tree_devices
    bridges = [d for d in devs if d.bus_range is not None]
    counted = (f"; it lists {len(devs)} functions, {len(bridges)} of them bridges with bus ranges" if devs else "")
    if facts.tree_names:
        kinds = [f"{len(facts.tree_rdma)} Mellanox/ConnectX", f"{len(facts.tree_gpus)} NVIDIA GPUs"]
        if facts.tree_other_gpus:
            kinds.append(f"{len(facts.tree_other_gpus)} other GPUs ("
                         + "; ".join(n.split(" ", 1)[-1] for n in facts.tree_other_gpus[:2]) + ")")
        named = f"; it names {len(facts.tree_names)} functions: " + ", ".join(kinds)
    else:
        named = " (-t without -v: no names)"
    switches = {d.bdf: d for d in facts.tree_switches}
    placed = []
    for n in facts.tree_rdma + facts.tree_gpus + facts.tree_other_gpus:
        bdf = n.split(" ", 1)[0]
        chain = facts.tree_chain(bdf)
        if chain:
            placed.append(f"{n} <- " + " <- ".join(
                b.bdf + (f" (switch{': ' + b.name if b.name else ''})" if b.bdf in switches else "")
                for b in reversed(chain)))
    behind = sorted({n.split(" ", 1)[0] for n in facts.tree_rdma + facts.tree_gpus + facts.tree_other_gpus
                     if any(b.bdf in switches for b in facts.tree_chain(n.split(" ", 1)[0]))})
    sw = (f"; {len(switches)} PCIe switch{'es' if len(switches) != 1 else ''}"
          + (f", with {len(behind)} of the GPUs/NICs below" if behind else "") if switches else "")
    evidence = placed[:12] or facts.tree_names[:8] or [
        f"{d.bdf}" + (f" -[{d.bus_range[0]:02x}-{d.bus_range[1]:02x}]" if d.bus_range else "") for d in devs[:8]]
    return skip(NAME, "pcie.lspci", f"lspci output is a device tree (lspci -t/-tv): it has no link or ACS lines to "
                f"judge{counted}{named}{sw}", evidence=evidence,
                fix="Collect 'lspci -D -vvv -nn' as root (what 'nccldiag collect' runs) to check ACS and links.")


def judge(facts: Optional[PcieFacts], node: NodeFacts) -> List[Finding]:
    if facts is None or not facts.lspci_present:
        found = [skip(NAME, "pcie.lspci", "lspci output is absent (pciutils not installed?)",
                      fix="Install pciutils (apt install pciutils / dnf install pciutils) to check ACS and link widths.")]
        return found + _judge_limited(facts) if facts is not None else found
    if not facts.devices and facts.tree:
        return [_judge_tree(facts)] + _judge_limited(facts)
    if not facts.devices and (facts.acs_lines or facts.link_lines):
        return ((_judge_acs_lines(facts.acs_lines) if facts.acs_lines else [])
                + (_judge_link_lines(facts.link_lines) if facts.link_lines else []) + _judge_limited(facts))
    if not facts.devices:
        return [skip(NAME, "pcie.lspci", "lspci printed no device")] + _judge_limited(facts)
    return (_judge_acs(facts, node_gpus(node)[0]) + _judge_links(facts) + _judge_recovery(facts)
            + _judge_limited(facts))


def summarize(facts: Optional[PcieFacts]) -> Dict[str, Optional[str]]:
    if facts is None or not facts.devices:
        return {}
    return {
        "nvidia_functions": str(len(facts.gpus)),
        "mellanox_functions": str(len(facts.nics)),
        "acs_redirect_bridges": str(sum(1 for d in facts.bridges if d.acs_redirect)),
    }
