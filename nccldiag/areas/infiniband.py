"""InfiniBand / RoCE: are the RDMA ports up, at full rate, and addressable?

NCCL's IB transport opens every RDMA port whose state is ACTIVE (InfiniBand
or Ethernet link layer alike) and skips the others, so a port that is Down
silently removes a rail from the node: inter-node bandwidth drops, and rings
run at the pace of the node with the fewest rails. A port that trained at a
lower rate or width than its identical siblings (a bad cable or transceiver)
does the same. On RoCE ports NCCL (2.21 and later) picks the GID itself: the
RoCE v2 GID that carries an IPv4 address. Without one it falls back to GID 0,
a link-local address that does not route, and connections fail with
``ibv_modify_qp failed``.

Facts come from sysfs first (``/sys/class/infiniband``: port state, physical
state, rate, link layer, LIDs, firmware, the netdev of each port and the
non-zero GIDs with their type); ``ibstat``/``ibstatus``, ``ibv_devinfo -v``,
``rdma link``, ``ibdev2netdev`` and ``show_gids`` fill what sysfs did not give
(containers often hide parts of sysfs). Where a tool disagrees with sysfs,
sysfs is kept and the disagreement noted.
"""
from __future__ import annotations

import ipaddress
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from nccldiag import rx
from nccldiag.areas import netdev as nd
from nccldiag.areas.base import NodeFacts, Source, parse_dump, section
from nccldiag.areas.pcie import node_rdma
from nccldiag.model.findings import Finding, fail, ok, skip, warn
from nccldiag.pods import in_pod

NAME = "ib"
TITLE = "InfiniBand/RoCE"

_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"

# The sysfs tree, printed in the `==> path <==` form of `_dump`. GID tables
# have up to 256 entries per port, almost all zero: only the non-zero ones are
# printed (with their type and netdev), read with the `read` builtin so that
# no process is started per entry.
_SYSFS = (
    '[ -d "$R/sys/class/infiniband" ] || exit 0; '
    'for d in "$R"/sys/class/infiniband/*; do [ -d "$d" ] || continue; '
    '_dump "$d/fw_ver" "$d/hca_type" "$d/board_id" "$d/node_guid" "$d"/device/net/*/dev_port "$d"/device/net/*/operstate; '
    'for p in "$d"/ports/*; do [ -d "$p" ] || continue; '
    '_dump "$p/state" "$p/phys_state" "$p/rate" "$p/link_layer" "$p/lid" "$p/sm_lid"; '
    'for g in "$p"/gids/*; do [ -f "$g" ] || continue; v=; read v 2>/dev/null <"$g"; '
    f'case "$v" in ""|{_ZERO_GID}) continue;; esac; '
    'i=${g##*/}; printf "==> %s <==\\n%s\\n" "${g#"$R"}" "$v"; '
    'for a in types ndevs; do t=; read t 2>/dev/null <"$p/gid_attrs/$a/$i"; '
    '[ -n "$t" ] && printf "==> %s <==\\n%s\\n" "${p#"$R"}/gid_attrs/$a/$i" "$t"; done; '
    "done; done; done | head -n 6000"
)


def _tool(cmd: str, tool: str, lines: int) -> str:
    """Run ``cmd`` when ``tool`` is installed; print nothing (and succeed) otherwise."""
    return f"if command -v {tool} >/dev/null 2>&1; then {cmd} | head -n {lines}; fi"


SOURCES = (
    Source("ib_sysfs", _SYSFS, timeout=20,
           description="/sys/class/infiniband: firmware, HCA type, per port state, physical state, rate, link layer, "
                       "LIDs; netdevs (device/net/*/dev_port); non-zero GIDs with type and netdev"),
    Source("ibstat",
           "if command -v ibstat >/dev/null 2>&1; then ibstat | head -n 3000; "
           "elif command -v ibstatus >/dev/null 2>&1; then ibstatus | head -n 3000; fi",
           timeout=15, description="ibstat (infiniband-diags), else ibstatus"),
    Source("ibv_devinfo", _tool("ibv_devinfo -v", "ibv_devinfo", 4000), timeout=15,
           description="ibv_devinfo -v (rdma-core): port attributes, width and speed, GID table"),
    Source("show_gids", _tool("show_gids", "show_gids", 3000), timeout=15,
           description="show_gids (MLNX_OFED): GID index, IPv4 address, RoCE version and netdev per GID"),
    Source("ibdev2netdev", _tool("ibdev2netdev", "ibdev2netdev", 500), timeout=15,
           description="ibdev2netdev (MLNX_OFED): netdev of each RDMA port"),
    Source("rdma_link", _tool("rdma link show", "rdma", 500), timeout=15,
           description="rdma link show (iproute2): state, physical state and netdev of each port"),
    Source("netdev_link", ":", timeout=5,
           description="nothing run on the node (the netdevs of its RDMA ports are read from sysfs): the link tools' "
                       "output pasted to nccldiag log, or saved in a bundle as netdev_link.txt, is read: ifconfig, "
                       "ip link / ip addr (-br too), ethtool DEV"),
)

_IWARP_DEV = rx.compile(r"^(?:i40iw|iw_cxgb|cxgb4_|siw)")
_SOFT_RXE = rx.compile(r"^rxe")
_SOFT_SIW = rx.compile(r"^siw")

STATES = ("Down", "Init", "Armed", "Active", "ActiveDefer")
PHYS_STATES = ("NoStateChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp",
               "LinkErrorRecovery", "PhyTest")


@dataclass
class Gid:
    """One entry of a port's GID table."""

    index: int
    gid: str
    type: Optional[str] = None  # "RoCE v2", "RoCE v1" (sysfs "IB/RoCE v1"), None when not reported
    ipv4: Optional[str] = None  # the IPv4 address of an IPv4-mapped GID
    link_local: bool = False
    netdev: Optional[str] = None


@dataclass
class IbPort:
    """One RDMA port (device, port number) with what every source said of it."""

    device: str
    port: int
    state: Optional[str] = None  # one of STATES
    phys_state: Optional[str] = None  # one of PHYS_STATES, "Unknown", or the raw word
    rate: Optional[float] = None  # Gb/s
    rate_text: Optional[str] = None  # "400 Gb/sec (4X NDR)", "400", "4X 100.0 Gbps"
    link_layer: Optional[str] = None  # "InfiniBand" or "Ethernet"
    netdev: Optional[str] = None
    netdev_state: Optional[str] = None  # ibdev2netdev (Up)/(Down), sysfs operstate
    lid: Optional[str] = None
    sm_lid: Optional[str] = None
    mtu: Optional[int] = None  # active MTU (ibv_devinfo)
    fw_ver: Optional[str] = None
    hca_type: Optional[str] = None  # "MT4129"
    board_id: Optional[str] = None
    node_guid: Optional[str] = None
    system_guid: Optional[str] = None  # ibstat's System image GUID: the same on every port of one adapter
    gids: List[Gid] = field(default_factory=list)
    gids_source: Optional[str] = None  # the source the GID table came from
    sources: List[str] = field(default_factory=list)
    lines: List[str] = field(default_factory=list)  # raw lines, for evidence
    notes: List[str] = field(default_factory=list)  # tools that disagree with sysfs
    link_layer_from: Optional[str] = None  # how the link layer was inferred, where no source printed it
    transport: Optional[str] = None  # ibv_devinfo's transport: "InfiniBand" (IB and RoCE) or "iWARP"

    @property
    def name(self) -> str:
        return f"{self.device} port {self.port}"

    @property
    def soft(self) -> Optional[str]:
        """Software RDMA (Soft-RoCE ``rxe``, soft iWARP ``siw``): no RDMA hardware under it."""
        if _SOFT_RXE.match(self.device):
            return "Soft-RoCE (rdma_rxe)"
        if _SOFT_SIW.match(self.device):
            return "soft iWARP (siw)"
        return None

    @property
    def active(self) -> bool:
        return self.state in ("Active", "ActiveDefer")

    @property
    def roce(self) -> bool:
        return self.link_layer == "Ethernet"

    @property
    def iwarp(self) -> bool:
        """An iWARP device (Ethernet link layer, TCP transport): no RoCE GIDs, not a RoCE port."""
        return (self.transport or "").lower() == "iwarp" or bool(_IWARP_DEV.match(self.device))

    def summary(self) -> str:
        """One line with everything known about the port."""
        parts = [f"State {self.state or '?'}", f"Physical state {self.phys_state or '?'}"]
        if self.rate is not None:
            parts.append(f"Rate {_fmt_rate(self.rate)} Gb/s" + _rate_detail(self.rate_text))
        parts.append(f"Link layer {self.link_layer or '?'}")
        if self.netdev:
            parts.append(f"netdev {self.netdev}" + (f" ({self.netdev_state})" if self.netdev_state else ""))
        if self.hca_type or self.fw_ver:
            parts.append(" ".join(x for x in (self.hca_type, f"fw {self.fw_ver}" if self.fw_ver else None) if x))
        return f"{self.name}: " + ", ".join(parts)


@dataclass
class IbFacts:
    ports: List[IbPort] = field(default_factory=list)
    sources: List[str] = field(default_factory=list)  # sources that had output
    notes: List[str] = field(default_factory=list)
    collected: List[str] = field(default_factory=list)  # sources in the raw output, empty or not
    tool_errors: List[str] = field(default_factory=list)  # "source: line" of the tools' own errors
    netdevs: List[nd.Netdev] = field(default_factory=list)  # interfaces as the link tools showed them (netdev_link)

    @property
    def devices(self) -> List[str]:
        return sorted({p.device for p in self.ports}, key=_natural)

    def port(self, device: str, port: int = 1) -> Optional[IbPort]:
        return next((p for p in self.ports if p.device == device and p.port == port), None)


# ---- small normalisers -----------------------------------------------------------------------------


def _natural(text: str) -> Tuple:
    """Sort key that puts mlx5_2 before mlx5_10."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def _rate_detail(text: Optional[str]) -> str:
    """`` (4X NDR)`` from ``400 Gb/sec (4X NDR)``, `` (1X 25.0 Gbps)`` from ibv_devinfo's width and speed."""
    if not text:
        return ""
    m = re.search(r"\(([^()]*)\)", text)
    if m:
        return f" ({m.group(1)})"
    return f" ({text})" if re.search(r"\dX\b", text) else ""


def _fmt_rate(rate: float) -> str:
    return str(int(rate)) if float(rate).is_integer() else f"{rate:g}"


_STATE_WORDS = {
    "down": "Down", "port_down": "Down", "init": "Init", "initializing": "Init", "initialize": "Init",
    "port_init": "Init", "armed": "Armed", "port_armed": "Armed", "active": "Active", "port_active": "Active",
    "active_defer": "ActiveDefer", "activedefer": "ActiveDefer", "port_active_defer": "ActiveDefer",
}
_STATE_NUMBERS = {1: "Down", 2: "Init", 3: "Armed", 4: "Active", 5: "ActiveDefer"}
_PHYS_WORDS = {re.sub(r"[^a-z]", "", p.lower()): p for p in PHYS_STATES}
_PHYS_WORDS.update({"portconfigurationtrainning": "PortConfigurationTraining", "unknown": "Unknown"})
_PHYS_NUMBERS = dict(enumerate(PHYS_STATES))


def _split_coded(text: str) -> Tuple[Optional[int], str]:
    """``"4: ACTIVE"`` / ``"PORT_ACTIVE (4)"`` / ``"Active"`` -> (4 or None, word)."""
    text = text.strip()
    m = re.match(r"^(\d+)\s*:\s*(.*)$", text)
    if m:
        return int(m.group(1)), m.group(2).strip()
    m = re.match(r"^(.*)\((\d+)\)$", text)
    if m:
        return int(m.group(2)), m.group(1).strip()
    return None, text


_CODE_AT_END = rx.compile(r"\(\d+\)$")


def _without_code(text: str) -> str:
    """``InfiniBand`` from ``InfiniBand (0)``."""
    m = _CODE_AT_END.search(text)
    return text[:m.start()].rstrip() if m else text


def norm_state(text: Optional[str]) -> Optional[str]:
    """A port state in any tool's spelling as one of ``STATES``."""
    if not text or not text.strip():
        return None
    num, word = _split_coded(text)
    key = re.sub(r"[^a-z_]", "", word.lower())
    if key in _STATE_WORDS:
        return _STATE_WORDS[key]
    if num in _STATE_NUMBERS:
        return _STATE_NUMBERS[num]
    return word or None


def norm_phys(text: Optional[str]) -> Optional[str]:
    """A physical state in any tool's spelling (``5: LinkUp``, ``LINK_UP (5)``, ``Polling``)."""
    if not text or not text.strip():
        return None
    num, word = _split_coded(text)
    key = re.sub(r"[^a-z]", "", word.lower())
    if key in _PHYS_WORDS:
        return _PHYS_WORDS[key]
    if not key and num in _PHYS_NUMBERS:
        return _PHYS_NUMBERS[num]
    # words that are not physical states (a port state written into phys_state) are kept as they are
    return word or None


def norm_link_layer(text: Optional[str]) -> Optional[str]:
    if not text or not text.strip():
        return None
    low = text.strip().lower()
    if low.startswith("infiniband") or low == "ib":
        return "InfiniBand"
    if low.startswith("ethernet") or low == "eth":
        return "Ethernet"
    return text.strip()


def parse_rate(text: Optional[str]) -> Optional[float]:
    """Gb/s from ``"400 Gb/sec (4X NDR)"``, ``"200"``, ``"25.0 Gbps"``."""
    if not text:
        return None
    m = re.match(r"^\s*(\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else None


def gid_type(text: Optional[str]) -> Optional[str]:
    if not text:
        return None
    low = text.lower()
    if "v2" in low:
        return "RoCE v2"
    if "v1" in low:
        return "RoCE v1"
    return None


def make_gid(index: int, gid: str, type_text: Optional[str] = None, netdev: Optional[str] = None) -> Optional[Gid]:
    """A :class:`Gid` from its text (full or compressed IPv6 form); None for zero or unreadable GIDs."""
    gid = gid.strip().strip("*").strip()
    try:
        addr = ipaddress.IPv6Address(gid)
    except ValueError:
        return None
    if int(addr) == 0:
        return None
    v4 = addr.ipv4_mapped
    return Gid(index=index, gid=gid, type=gid_type(type_text), ipv4=str(v4) if v4 else None,
               link_local=addr.is_link_local, netdev=netdev or None)


def _lines(text: Optional[str]) -> List[str]:
    return [l.replace("\t", " ").rstrip() for l in (text or "").splitlines()]


# ---- per-source parsers: each returns {(device, port): IbPort} -------------------------------------

Ports = Dict[Tuple[str, int], IbPort]


def _get(ports: Ports, device: str, port: int, source: str) -> IbPort:
    key = (device, port)
    if key not in ports:
        ports[key] = IbPort(device=device, port=port, sources=[source])
    return ports[key]


_SYSFS_PATH = rx.compile(r"(?:^|/)sys/class/infiniband/([^/]+)/(.+)$")


# `grep "" /sys/class/infiniband/*/ports/*/state` prints path:value; `ls -1d .../ports/*` the port directories
_SYSFS_GREP = rx.compile(r"^\s*(/\S{0,512}?/infiniband/[^/\s:]{1,512}/[^:\s]{1,512}):(.*)$")
_SYSFS_PORT_DIR = rx.compile(r"^\s*/\S*?/infiniband/([^/\s]+)/ports/(\d+)/?\s*$")


def parse_sysfs(text: Optional[str]) -> Ports:
    """Ports from a dump of ``/sys/class/infiniband`` (the ``ib_sysfs`` source or a fixture tree), or from
    ``grep "" /sys/class/infiniband/...`` lines (``path:value``) and ``ls -d .../ports/*`` port directories."""
    files, _ = parse_dump(text)
    listed: List[Tuple[str, int]] = []
    for line in (text or "").splitlines():
        m = _SYSFS_GREP.match(line)
        if m:
            files.setdefault(m.group(1), m.group(2) + "\n")
            continue
        m = _SYSFS_PORT_DIR.match(line)
        if m:
            listed.append((m.group(1), int(m.group(2))))
    ports: Ports = {}
    devices: Dict[str, Dict[str, str]] = {}
    dev_netdevs: Dict[str, List[Tuple[str, Optional[int], Optional[str]]]] = {}
    gid_rows: Dict[Tuple[str, int], Dict[int, Dict[str, str]]] = {}
    src = "ib_sysfs"
    for dev, pnum in listed:
        _get(ports, dev, pnum, src).lines.append(f"ib_sysfs: /sys/class/infiniband/{dev}/ports/{pnum} listed")
    for path, content in files.items():
        m = _SYSFS_PATH.search(path.strip())
        if not m:
            continue
        dev, rest = m.group(1), m.group(2)
        value = " ".join(content.split())
        parts = rest.split("/")
        if len(parts) == 1 and parts[0] in ("fw_ver", "hca_type", "board_id", "node_guid"):
            devices.setdefault(dev, {})[parts[0]] = value
            continue
        if len(parts) == 4 and parts[0] == "device" and parts[1] == "net" and parts[3] in ("dev_port", "operstate"):
            entry = dev_netdevs.setdefault(dev, [])
            row = next((r for r in entry if r[0] == parts[2]), None)
            dev_port = int(value) if parts[3] == "dev_port" and value.isdigit() else (row[1] if row else None)
            oper = value if parts[3] == "operstate" else (row[2] if row else None)
            if row:
                entry.remove(row)
            entry.append((parts[2], dev_port, oper))
            continue
        if len(parts) < 3 or parts[0] != "ports" or not parts[1].isdigit():
            continue
        pnum = int(parts[1])
        attr = "/".join(parts[2:])
        if attr.startswith("gids/") and parts[3].isdigit():
            gid_rows.setdefault((dev, pnum), {}).setdefault(int(parts[3]), {})["gid"] = value
            continue
        m2 = re.match(r"gid_attrs/(types|ndevs)/(\d+)$", attr)
        if m2:
            gid_rows.setdefault((dev, pnum), {}).setdefault(int(m2.group(2)), {})[m2.group(1)] = value
            continue
        if attr not in ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid"):
            continue
        p = _get(ports, dev, pnum, src)
        if value:
            p.lines.append(f"{path.strip()}: {value}")
        if attr == "state":
            p.state = norm_state(value)
        elif attr == "phys_state":
            p.phys_state = norm_phys(value)
        elif attr == "rate":
            p.rate, p.rate_text = parse_rate(value), value or None
        elif attr == "link_layer":
            p.link_layer = norm_link_layer(value)
        elif attr == "lid":
            p.lid = value or None
        elif attr == "sm_lid":
            p.sm_lid = value or None
    for (dev, pnum), rows in gid_rows.items():
        p = _get(ports, dev, pnum, src)
        gids = [make_gid(i, r.get("gid", ""), r.get("types"), r.get("ndevs")) for i, r in sorted(rows.items())]
        p.gids = [g for g in gids if g is not None]
        p.gids_source = src
        ndev0 = next((g.netdev for g in p.gids if g.netdev), None)
        if ndev0:
            p.netdev = ndev0
    for (dev, pnum), p in ports.items():
        attrs = devices.get(dev, {})
        p.fw_ver = attrs.get("fw_ver") or None
        p.hca_type = attrs.get("hca_type") or None
        p.board_id = attrs.get("board_id") or None
        p.node_guid = attrs.get("node_guid") or None
        nets = dev_netdevs.get(dev, [])
        match = [n for n in nets if n[1] is not None and n[1] + 1 == pnum]
        if not match and len(nets) == 1 and sum(1 for k in ports if k[0] == dev) == 1:
            match = nets
        if match:
            p.netdev = p.netdev or match[0][0]
            if match[0][0] == p.netdev and match[0][2]:
                p.netdev_state = match[0][2]
    return ports


_CA = rx.compile(r"^\s*CA '([^']+)'")
UNNAMED_CA = "(CA not shown)"  # the device of an ibstat port pasted without its 'CA' line
_IBSTATUS = rx.compile(r"^\s*Infiniband device '([^']+)' port (\d+) status:")
_KV = rx.compile(r"^\s*([A-Za-z][A-Za-z _\s]*):\s*(.*)$")  # the key ends at the first ':' (strip it)


def parse_ibstat(text: Optional[str]) -> Ports:
    """Ports from ``ibstat`` (``CA 'mlx5_0'`` blocks) or ``ibstatus`` (``Infiniband device`` blocks)."""
    ports: Ports = {}
    src = "ibstat"
    dev: Optional[str] = None
    cur: Optional[IbPort] = None
    dev_attrs: Dict[str, Dict[str, str]] = {}
    for line in _lines(text):
        m = _CA.match(line)
        if m:
            dev, cur = m.group(1), None
            dev_attrs.setdefault(dev, {})
            continue
        m = _IBSTATUS.match(line)
        if m:
            dev = m.group(1)
            cur = _get(ports, dev, int(m.group(2)), src)
            continue
        m = re.match(r"^\s*Port (\d+):\s*$", line)
        if m:  # a port pasted without its CA's lines is read under a CA the paste does not name
            dev = UNNAMED_CA if dev is None else dev
            cur = _get(ports, dev, int(m.group(1)), src)
            continue
        m = _KV.match(line)
        if not m or dev is None:
            continue
        key, value = m.group(1).strip().lower(), m.group(2).strip()
        if cur is None:
            if key == "ca type":
                dev_attrs[dev]["hca_type"] = value
            elif key == "firmware version":
                dev_attrs[dev]["fw_ver"] = value
            elif key == "node guid":
                dev_attrs[dev]["node_guid"] = value
            elif key == "system image guid":
                dev_attrs[dev]["system_guid"] = value
            continue
        label = f"ibstat {cur.device} port {cur.port}: {line.strip()}"
        if key == "state":
            cur.state = norm_state(value)
            cur.lines.append(label)
        elif key in ("physical state", "phys state"):
            cur.phys_state = norm_phys(value)
            cur.lines.append(label)
        elif key == "rate":
            cur.rate, cur.rate_text = parse_rate(value), value or None
            cur.lines.append(label)
        elif key in ("link layer", "link_layer"):
            cur.link_layer = norm_link_layer(value)
            cur.lines.append(label)
        elif key in ("base lid",):
            cur.lid = value or None
        elif key == "sm lid":
            cur.sm_lid = value or None
    for (dev, _), p in ports.items():
        attrs = dev_attrs.get(dev, {})
        p.hca_type, p.fw_ver, p.node_guid = attrs.get("hca_type"), attrs.get("fw_ver"), attrs.get("node_guid")
        p.system_guid = attrs.get("system_guid")
    return ports


_GID_LINE = rx.compile(r"GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+)\s*(?:,\s*(.*))?$")


def parse_ibv_devinfo(text: Optional[str]) -> Ports:
    """Ports from ``ibv_devinfo [-v]``: ``hca_id:`` blocks with ``port:`` sections.

    Rate is active width x per-lane speed (``4X (2)`` and ``100.0 Gbps (128)``).
    A port section with no ``hca_id`` before it (a cut excerpt) belongs to device ``?``.
    """
    ports: Ports = {}
    src = "ibv_devinfo"
    dev: Optional[str] = None
    cur: Optional[IbPort] = None
    attrs: Dict[str, Dict[str, str]] = {}
    width: Dict[Tuple[str, int], str] = {}
    speed: Dict[Tuple[str, int], str] = {}
    gids: Dict[Tuple[str, int], List[Gid]] = {}
    for line in _lines(text):
        m = re.match(r"^\s*hca_id:\s*(\S+)", line)
        if m:
            dev, cur = m.group(1), None
            attrs.setdefault(dev, {})
            continue
        m = re.match(r"^\s*port:\s*(\d+)\s*$", line)
        if m:
            dev = dev or "?"
            attrs.setdefault(dev, {})
            cur = _get(ports, dev, int(m.group(1)), src)
            continue
        if dev is None and cur is None and (_GID_LINE.search(line) or re.match(
                r"^\s*(?:state|phys_state|link_layer|active_width|active_speed|active_mtu|port_lid|sm_lid)\s*:", line)):
            # a port section excerpt with neither hca_id nor port line: one port of an unnamed device
            dev = "?"
            attrs.setdefault(dev, {})
            cur = _get(ports, dev, 1, src)
            cur.lines.append("ibv_devinfo: a port section without its hca_id and port lines")
        m = _GID_LINE.search(line)
        if m and cur is not None:
            g = make_gid(int(m.group(1)), m.group(2), m.group(3))
            if g is not None:
                gids.setdefault((cur.device, cur.port), []).append(g)
            continue
        m = _KV.match(line)
        if not m or dev is None:
            continue
        key, value = m.group(1).strip().lower(), m.group(2).strip()
        if cur is None:
            attrs[dev][key] = value
            continue
        label = f"ibv_devinfo {cur.device} port {cur.port}: {line.strip()}"
        k = (cur.device, cur.port)
        if key == "state":
            cur.state = norm_state(value)
            cur.lines.append(label)
        elif key == "phys_state":
            cur.phys_state = norm_phys(value)
            cur.lines.append(label)
        elif key == "link_layer":
            cur.link_layer = norm_link_layer(value)
            cur.lines.append(label)
        elif key == "active_width":
            width[k] = value
        elif key == "active_speed":
            speed[k] = value
            cur.lines.append(label)
        elif key == "port_lid":
            cur.lid = value or None
        elif key == "sm_lid":
            cur.sm_lid = value or None
        elif key == "active_mtu":
            mtu = re.match(r"^(\d+)", value)
            cur.mtu = int(mtu.group(1)) if mtu else None
    for d, a in attrs.items():
        if d == "?" or any(k[0] == d for k in ports):
            continue
        # An hca_id block cut before its port sections: the device exists, its ports' states are unknown.
        cnt = a.get("phys_port_cnt", "")
        for n in range(1, (int(cnt) if cnt.isdigit() and 0 < int(cnt) <= 8 else 1) + 1):
            _get(ports, d, n, src).lines.append(f"ibv_devinfo: hca_id {d} (no port section in the output)")
    for k, p in ports.items():
        a = attrs.get(p.device, {})
        p.fw_ver = a.get("fw_ver") or None
        p.transport = _without_code(a.get("transport", "")) or None
        p.board_id = a.get("board_id") or None
        p.node_guid = a.get("node_guid") or None
        part = a.get("vendor_part_id", "")
        if part.isdigit() and a.get("vendor_id", "").lower() in ("0x02c9", "0x2c9"):
            p.hca_type = f"MT{part}"
        w = re.match(r"^(\d+)X", width.get(k, ""))
        s = parse_rate(speed.get(k))
        if s is not None:
            lanes = int(w.group(1)) if w else 1
            p.rate = round(lanes * s, 2)
            p.rate_text = " ".join(x for x in (width.get(k, "").split(" (")[0], speed[k].split(" (")[0]) if x)
        if k in gids:
            p.gids, p.gids_source = gids[k], src
    return ports


_SHOW_GIDS_HEADER = rx.compile(r"^\s*DEV\s+PORT\s+INDEX\s+GID\b")
_SHOW_GIDS_FOUND = rx.compile(r"\bn_gids_found\s*=\s*(\d+)")


def show_gids_empty(text: Optional[str]) -> bool:
    """``show_gids`` ran and listed no GID: its header (or ``n_gids_found=0``) and no row."""
    if not text:
        return False
    lines = _lines(text)
    m = next((_SHOW_GIDS_FOUND.search(l) for l in lines if _SHOW_GIDS_FOUND.search(l)), None)
    header = any(_SHOW_GIDS_HEADER.match(l) for l in lines)
    return (m is not None and m.group(1) == "0") or (header and not parse_show_gids(text))


def parse_show_gids(text: Optional[str]) -> Ports:
    """GIDs (index, GID, IPv4, RoCE version, netdev) from ``show_gids``."""
    ports: Ports = {}
    src = "show_gids"
    for line in _lines(text):
        tok = line.split()
        if len(tok) < 5 or not tok[1].isdigit() or not tok[2].isdigit():
            continue
        ver_at = next((i for i in range(4, len(tok)) if re.fullmatch(r"v\d", tok[i])), None)
        if ver_at is None:
            continue
        netdev = tok[ver_at + 1] if len(tok) > ver_at + 1 else None
        g = make_gid(int(tok[2]), tok[3], tok[ver_at], netdev)
        p = _get(ports, tok[0], int(tok[1]), src)
        p.gids_source = src
        if netdev and not p.netdev:
            p.netdev = netdev
        if g is not None:
            p.gids.append(g)
    return ports


# "[0000:3b:00.0 ]mlx5_0 port 1 ==> ibp26s0 (Down)", read in linear time: the device (its first token after an
# optional PCI address, up to its last word character), the first "port N" after it, the netdev after "==>"
_IBDEV2NETDEV_BDF = rx.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:")
_IBDEV2NETDEV_DEVICE = rx.compile(r"\S*\w")
_IBDEV2NETDEV_PORT = rx.compile(r"\bport\s+(\d+)\b")
_IBDEV2NETDEV_NETDEV = rx.compile(r"\s*(\S+)(?:\s+\((\w+)\))?")


def _ibdev2netdev_line(line: str) -> Optional[Tuple[str, int, str, Optional[str]]]:
    """``(device, port, netdev, netdev state)`` of one ``ibdev2netdev`` line."""
    left, arrow, right = line.partition("==>")
    words = left.split()
    if not arrow or not words:
        return None
    if len(words) > 1 and _IBDEV2NETDEV_BDF.match(words[0]):
        words = words[1:]
    device = _IBDEV2NETDEV_DEVICE.match(words[0])
    port = _IBDEV2NETDEV_PORT.search(left, left.index(words[0]) + device.end()) if device else None
    netdev = _IBDEV2NETDEV_NETDEV.match(right)
    if not (port and netdev):
        return None
    return device.group(0), int(port.group(1)), netdev.group(1), netdev.group(2)


def parse_ibdev2netdev(text: Optional[str]) -> Ports:
    """``mlx5_0 port 1 ==> ibp26s0 (Down)``: the netdev of each port and the netdev's link state."""
    ports: Ports = {}
    for line in _lines(text):
        got = _ibdev2netdev_line(line)
        if not got:
            continue
        p = _get(ports, got[0], got[1], "ibdev2netdev")
        p.netdev = got[2]
        p.netdev_state = got[3]
        p.lines.append(f"ibdev2netdev: {line.split('#')[0].strip()}")
    return ports


# "link mlx5_0/1 state ACTIVE ..." (current iproute2) or "1/1: mlx5_0/1: state ACTIVE ..." (iproute2 4.x)
_RDMA_LINK = rx.compile(r"^\s*(?:\d+/\d+:\s*)?(?:link\s+)?([^\s/]+)/(\d+):?\s+(.*\bstate\b.*)$")


def parse_rdma_link(text: Optional[str]) -> Ports:
    """``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev p1p1`` (iproute2 ``rdma link``)."""
    ports: Ports = {}
    for line in _lines(text):
        m = _RDMA_LINK.match(line)
        if not m:
            continue
        p = _get(ports, m.group(1), int(m.group(2)), "rdma_link")
        tok = m.group(3).split()
        kv = {tok[i]: tok[i + 1] for i in range(0, len(tok) - 1, 2)}
        p.state = norm_state(kv.get("state"))
        p.phys_state = norm_phys(kv.get("physical_state"))
        p.netdev = kv.get("netdev")
        p.lid = kv.get("lid")
        p.sm_lid = kv.get("sm_lid")
        p.lines.append(f"rdma link: {line.strip()}")
    return ports


# ---- merge -------------------------------------------------------------------------------------------

_MERGED = ("state", "phys_state", "rate", "rate_text", "link_layer", "netdev", "netdev_state", "lid", "sm_lid",
           "mtu", "fw_ver", "hca_type", "board_id", "node_guid", "system_guid", "transport")
_COMPARED = ("state", "phys_state", "rate", "link_layer")

# order of trust: sysfs first, then the tools that read the port attributes directly
_ORDER = (("ib_sysfs", parse_sysfs), ("rdma_link", parse_rdma_link), ("ibstat", parse_ibstat),
          ("ibv_devinfo", parse_ibv_devinfo), ("ibdev2netdev", parse_ibdev2netdev), ("show_gids", parse_show_gids))
# GID tables: sysfs (types known), then show_gids (types known), then ibv_devinfo, then ibstat's default GID
_GID_ORDER = ("ib_sysfs", "show_gids", "ibv_devinfo", "ibstat")


def merge(per_source: Iterable[Tuple[str, Ports]]) -> List[IbPort]:
    """One :class:`IbPort` per (device, port): earlier sources win, later ones fill gaps."""
    merged: Dict[Tuple[str, int], IbPort] = {}
    gid_tables: Dict[Tuple[str, int], Dict[str, IbPort]] = {}
    for source, ports in per_source:
        for key, p in ports.items():
            if p.gids or p.gids_source:
                gid_tables.setdefault(key, {})[source] = p
            have = merged.get(key)
            if have is None:
                merged[key] = IbPort(device=p.device, port=p.port, sources=[source], lines=list(p.lines))
                have = merged[key]
            else:
                if source not in have.sources:
                    have.sources.append(source)
                have.lines.extend(p.lines)
            for attr in _MERGED:
                new = getattr(p, attr)
                if new is None:
                    continue
                old = getattr(have, attr)
                if old is None:
                    setattr(have, attr, new)
                elif attr in _COMPARED and old != new and not (attr == "rate" and abs(float(old) - float(new)) < 0.5):
                    have.notes.append(f"{have.name}: {source} reports {attr} {new}, kept {old} from {have.sources[0]}")
    for key, tables in gid_tables.items():
        for source in _GID_ORDER:
            t = tables.get(source)
            if t is not None and t.gids:
                merged[key].gids, merged[key].gids_source = list(t.gids), source
                break
        else:
            merged[key].gids_source = next(iter(tables))
    return sorted(merged.values(), key=lambda p: (_natural(p.device), p.port))


# the tools' own words for "no device" or a failure: ibstat "Fatal error:  device '*': sys files not found",
# ibv_devinfo "No IB devices found" / "Failed to get IB devices list", infiniband-diags' ibwarn/ibpanic
_TOOL_ERROR = rx.compile(r"Fatal error|No IB devices found|Failed to get IB devices|^\s*ib(?:warn|panic|error):|"
                         r"Permission denied", re.I)


def parse(raw: Mapping[str, Optional[str]]) -> Optional[IbFacts]:
    """Facts from every source; None when none of this area's sources was collected at all."""
    if not any(name in raw for name, _ in _ORDER) and "netdev_link" not in raw:
        return None
    per_source = []
    facts = IbFacts()
    facts.netdevs = nd.parse(section(raw, "netdev_link"))
    for name, fn in _ORDER:
        if name in raw:
            facts.collected.append(name)
        text = section(raw, name)
        if text is None:
            continue
        facts.sources.append(name)
        facts.tool_errors.extend(f"{name}: {l.strip()}" for l in text.splitlines() if _TOOL_ERROR.search(l))
        per_source.append((name, fn(text)))
    facts.ports = [p for p in merge(per_source) if p.device != "?" or len(per_source) == 1]
    empty_gids = show_gids_empty(section(raw, "show_gids"))
    for p in facts.ports:
        if empty_gids and p.gids_source is None:
            p.gids_source = "show_gids"  # collected, and empty
            p.lines.append("show_gids: no GID listed (n_gids_found=0)")
        _infer_link_layer(p)
        facts.notes.extend(p.notes)
    return facts


# IPoIB netdevs are named ib0, ibp26s0, ibs1f0 (the kernel's "ib" prefix); Ethernet ones eth0 or en* (systemd's
# predictable names: enp27s0f0np0, ens6f0np0, eno1). Other names (bond0, p1p1, net1 in a pod) say nothing.
_IPOIB_NETDEV = rx.compile(r"^ib[a-z]?\d")
_ETH_NETDEV = rx.compile(r"^(?:eth\d|en[a-z]+\d|en[a-z]\d)")


def _infer_link_layer(p: IbPort) -> None:
    """Ethernet (RoCE) where no source printed the link layer but the port shows it.

    An InfiniBand port has neither RoCE v2 GIDs nor IPv4-mapped GIDs (its GIDs
    are the subnet prefix and port GUID), and rxe/siw devices are Ethernet by
    construction. ``rdma link`` and ``ibdev2netdev`` print no link layer, but the netdev they name does: ``ib*``
    is IPoIB (InfiniBand), ``eth*``/``en*`` Ethernet.
    """
    if p.link_layer is not None:
        return
    v2 = next((g for g in p.gids if g.type == "RoCE v2"), None)
    v4 = next((g for g in p.gids if g.ipv4), None)
    if p.soft:
        p.link_layer, p.link_layer_from = "Ethernet", f"the device name ({p.soft})"
    elif v2 is not None:
        p.link_layer, p.link_layer_from = "Ethernet", f"a RoCE v2 GID (GID[{v2.index}])"
    elif v4 is not None:
        p.link_layer, p.link_layer_from = "Ethernet", f"an IPv4-mapped GID (GID[{v4.index}] {v4.ipv4})"
    elif p.netdev and _IPOIB_NETDEV.match(p.netdev):
        p.link_layer, p.link_layer_from = "InfiniBand", f"the netdev name ({p.netdev}: IPoIB)"
    elif p.netdev and _ETH_NETDEV.match(p.netdev):
        p.link_layer, p.link_layer_from = "Ethernet", f"the netdev name ({p.netdev})"
    if p.link_layer_from:
        p.lines.append(f"link layer {p.link_layer} inferred from {p.link_layer_from}")


# ---- judgement ---------------------------------------------------------------------------------------


def _ll_short(link_layer: Optional[str]) -> str:
    if not link_layer or link_layer == "?":
        return "RDMA"
    return {"InfiniBand": "IB", "Ethernet": "RoCE"}.get(link_layer, link_layer)


def _evidence(p: IbPort, limit: int = 8) -> List[str]:
    return [p.summary()] + p.lines[:limit] + p.notes[:2]


_SM_FIX = ("The link is up but the subnet manager has not configured the port: check that a subnet manager runs on "
           "this fabric (`sminfo`; opensm or UFM on a switch or host) and that `ibstat` shows an SM lid; "
           "for SR-IOV virtual functions, that the VF's GUID and policy are set.")


# RDMA devices of other vendors (Broadcom, Intel, Marvell, Amazon, HiSilicon, Alibaba, AMD, Microsoft, Cornelis,
# Chelsio, VMware): mlxlink does not apply to them
_NOT_MLX = rx.compile(r"^(?:bnxt_re|irdma|i40iw|qedr|efa|hns|erdma|ionic|mana|hfi1|qib|cxgb|iw_cxgb|ocrdma|vmw_pvrdma|"
                      r"rxe|siw)")


def _link_tool(p: IbPort, what: str) -> str:
    """The command that shows a port's physical link: mlxlink on NVIDIA/Mellanox devices, ethtool elsewhere."""
    if _NOT_MLX.match(p.device):
        return f"`ethtool {p.netdev or 'NETDEV'}` (and `ethtool -m` for the module) shows {what}"
    return f"`mlxlink -d {p.device} -p {p.port} -m` shows {what}"


def _down_finding(p: IbPort, active_others: int, total: int) -> Finding:
    """The finding for one port that is not Active (``total``: ports with a known state on the node)."""
    ll = p.link_layer or "unknown link layer"
    where = f"{p.name} ({ll}" + (f", netdev {p.netdev}" if p.netdev else "") + ")"
    shown = f"State {p.state}" + (f", Physical state {p.phys_state}" if p.phys_state else "")
    rest = (f"; {active_others} of the node's {total} ports Active" if total > 1 else "")
    actual = f"{p.state}/{p.phys_state or '?'}"
    ev = _evidence(p)
    if p.phys_state == "Disabled" and p.roce:
        # the RoCE drivers of mlx4, mlx5, bnxt_re, irdma, qedr and mana read an Ethernet port Active/LinkUp only when
        # its netdev is running with carrier, and Down/Disabled otherwise: switched off and unplugged read the same
        dev = p.netdev or "NETDEV"
        return warn(NAME, "ib.port_state",
                    f"{where}: {shown}: the port has no link: its netdev is switched off or has no carrier (no cable "
                    f"or module, or the switch port down), which a RoCE port's driver reads as Disabled alike; NCCL "
                    f"skips it, so this node has one RDMA port fewer{rest}",
                    actual=actual, expected="Active/LinkUp", evidence=ev,
                    fix=f"`ip link show {dev}` tells which: state DOWN is switched off (`ip link set {dev} up` if the "
                        f"port should carry traffic), NO-CARRIER has no link (check the cable, module and switch port; "
                        f"{_link_tool(p, 'the module and the link')}). If the port is unused on purpose, exclude it "
                        "with NCCL_IB_HCA on every node so that all nodes use the same ports.")
    if p.phys_state == "Disabled":
        how = f"`ibportstate -C {p.device} -P {p.port} -D 0 {p.port} enable`"
        return warn(NAME, "ib.port_state",
                    f"{where}: {shown}: the port is administratively disabled (disabled by software), not a "
                    f"cabling fault; NCCL skips it, so this node has one RDMA port fewer{rest}",
                    actual=actual, expected="Active/LinkUp", evidence=ev,
                    fix=f"If the port should carry traffic, enable it ({how}) and re-check: it must then reach "
                        "Active/LinkUp. If it is unused on purpose, exclude it with NCCL_IB_HCA on every node so that "
                        "all nodes use the same ports.")
    if p.phys_state == "Polling":
        why = ("no link partner: the cable is unplugged or faulty, the transceiver is bad, or the switch port is "
               "down. An Ethernet port that is deliberately left uncabled reads Polling too")
        fix = ("Check the cable and transceiver (reseat, swap with a known-good one) and the switch port (admin up, "
               f"speed); {_link_tool(p, 'the cable and the link-training state')}"
               + ("" if p.roce else f", `ibportstate -C {p.device} -P {p.port} -D 0 {p.port} query` the port")
               + ". If the port is unused on purpose, "
               + (f"set its netdev down (`ip link set {p.netdev or 'NETDEV'} down`: it then reads Disabled) and "
                  if p.roce else "disable it and ")
               + "exclude it with NCCL_IB_HCA.")
    elif p.state in ("Init", "Armed") or (p.state == "Down" and p.phys_state == "LinkUp" and not p.roce):
        why = "the physical link is up but the port was not brought to Active"
        fix = _SM_FIX
    elif p.state == "Down" and p.phys_state == "LinkUp":
        why = "the physical link is up but the RDMA port is down"
        driver = "mlx5" if not _NOT_MLX.match(p.device) else re.match(r"[a-z]+", p.device).group(0)
        fix = (f"Check the netdev ({p.netdev or 'see ibdev2netdev'}) with `ip link`, and `dmesg | grep -i {driver}` "
               "for errors; for SR-IOV virtual functions, the VF's link state on the host.")
    else:
        why = "the link did not come up"
        fix = (f"Check the cable, transceiver and switch port; {_link_tool(p, 'link training and errors')}; reset the "
               "port or reboot if the physical state is stuck.")
    return fail(NAME, "ib.port_state", f"{where}: {shown} ({why}){rest}", actual=actual, expected="Active/LinkUp",
                evidence=ev, fix=fix)


def _subnet(p: IbPort) -> str:
    """The subnet manager an InfiniBand port answers to (its SM lid), "?" where unknown or not IB."""
    if p.roce or not p.sm_lid:
        return "?"
    try:
        lid = int(p.sm_lid, 0)
    except ValueError:
        return "?"
    return str(lid) if lid else "?"


def _rate_groups(ports: List[IbPort]) -> Dict[Tuple[str, str, str], List[IbPort]]:
    """Active ports with a rate, grouped by link layer, HCA model (a 100G frontend NIC is not a slow 400G rail) and,
    for InfiniBand, the subnet manager (SM lid) they answer to: ports under different SMs are cabled to different
    fabrics (an FDR storage fabric beside EDR compute rails), not slower siblings."""
    groups: Dict[Tuple[str, str, str], List[IbPort]] = {}
    for p in ports:
        if p.active and p.rate is not None:
            groups.setdefault((p.link_layer or "?", p.hca_type or "?", _subnet(p)), []).append(p)
    return groups


def _judge_rates(ports: List[IbPort]) -> List[Finding]:
    groups = _rate_groups(ports)
    if not groups:
        return []
    found: List[Finding] = []
    same: List[str] = []
    subnets = len({sm for _, _, sm in groups if sm != "?"})
    for (ll, hca, sm), members in sorted(groups.items()):
        top = max(p.rate for p in members)  # type: ignore[type-var]
        model = (f" {hca}" if hca != "?" else "") + (f" (SM lid {sm})" if subnets > 1 and sm != "?" else "")
        slow = [p for p in members if p.rate < top]  # type: ignore[operator]
        for p in slow:
            others = len(members) - 1
            found.append(warn(
                NAME, "ib.port_rate",
                f"{p.name}: {_fmt_rate(p.rate)} Gb/s" + _rate_detail(p.rate_text)
                + f", slower than the other {others} active {_ll_short(ll)}{model} port{'s' if others != 1 else ''} "
                f"(fastest {_fmt_rate(top)} Gb/s): NCCL rings run at the pace of the slowest rail",
                actual=p.rate, expected=top, evidence=[p.summary()] + [q.summary() for q in members if q is not p][:3],
                fix=f"A port that trained below its identical siblings has a cable, transceiver or switch-port problem: "
                    f"reseat or replace the cable, check the switch port's configured speed, and read the negotiated "
                    f"speed, width and errors: {_link_tool(p, 'them')}.",
            ))
        same.append(f"{len(members) - len(slow)}x {_fmt_rate(top)} Gb/s {_ll_short(ll)}{model}")
    if not found:
        per = "model and subnet" if subnets > 1 else "model"
        found.append(ok(NAME, "ib.port_rate", f"active ports run at the same rate per {per}: " + ", ".join(same),
                        actual=", ".join(same), evidence=[p.summary() for p in ports if p.active][:16]))
    return found


def _judge_gids(ports: List[IbPort]) -> List[Finding]:
    roce = [p for p in ports if p.active and p.roce and not p.iwarp]
    if not roce:
        iwarp = [p for p in ports if p.active and p.iwarp]
        if iwarp:
            return [skip(NAME, "ib.roce_gid", f"{len(iwarp)} active iWARP port{'s' if len(iwarp) != 1 else ''} "
                         f"({', '.join(p.name for p in iwarp[:4])}): iWARP has no RoCE GIDs, nothing to check",
                         evidence=[p.summary() for p in iwarp][:8])]
        return []
    known = [p for p in roce if p.gids_source is not None]
    if not known:
        return [skip(NAME, "ib.roce_gid", f"{len(roce)} active RoCE port{'s' if len(roce) != 1 else ''}, "
                     "but no GID table was collected (sysfs gids, show_gids or ibv_devinfo -v)",
                     evidence=[p.summary() for p in roce][:8])]
    good: List[str] = []
    bad: List[Tuple[IbPort, str]] = []
    for p in known:
        v4 = [g for g in p.gids if g.ipv4]
        v2 = [g for g in v4 if g.type == "RoCE v2"]
        untyped = [g for g in v4 if g.type is None]
        if v2:
            good.append(f"{p.name}: GID {v2[0].index} RoCE v2 {v2[0].ipv4}")
        elif untyped:
            good.append(f"{p.name}: GID {untyped[0].index} {untyped[0].ipv4} (RoCE version not reported)")
        elif v4:
            bad.append((p, "v1"))
        else:
            bad.append((p, "none"))
    has_ib = any(p.active and p.link_layer == "InfiniBand" for p in ports)
    found: List[Finding] = []
    for p, kind in bad:
        netdev = p.netdev or "not reported"
        dev_words = p.netdev or "the port's netdev (`ibdev2netdev` or `rdma link` names it)"
        gid_ev = [f"GID[{g.index}] {g.gid} {g.type or '?'}" + (f" {g.ipv4}" if g.ipv4 else "")
                  + (f" {g.netdev}" if g.netdev else "") for g in p.gids][:8]
        ev = [p.summary(), f"GID table from {p.gids_source}: {len(p.gids)} non-zero entr{'ies' if len(p.gids) != 1 else 'y'}"] + gid_ev
        if kind == "v1":
            found.append(warn(
                NAME, "ib.roce_gid",
                f"{p.name} (netdev {netdev}): IPv4 GIDs are RoCE v1 only; NCCL prefers RoCE v2 (routable over UDP/IP) "
                "and RoCE v1 works only inside one L2 segment",
                actual="RoCE v1 only", expected="a RoCE v2 GID with an IPv4 address", evidence=ev,
                fix="The kernel lists RoCE v2 GIDs for every address when the device offers RoCE v2: a table of "
                    "v1 entries only means a NIC without RoCE v2 (ConnectX-3 and older) or RoCE v2 turned off in its "
                    f"firmware or driver configuration. Check /sys/class/infiniband/{p.device}/ports/{p.port}/gid_attrs/types/ "
                    f"and the firmware settings (`mlxconfig -d {p.device} query`); use a RoCE v2 NIC for NCCL.",
            ))
            continue
        alone = not good and not has_ib
        make = fail if alone else warn
        scope = ("no RoCE port of this node has one, so RDMA between nodes cannot route" if alone else
                 "NCCL still opens this port unless NCCL_IB_HCA excludes it")
        found.append(make(
            NAME, "ib.roce_gid",
            f"{p.name} (netdev {netdev}): no RoCE v2 GID with an IPv4 address "
            f"({'only link-local GIDs' if p.gids else 'no GID at all'}); NCCL then falls back to GID 0, a link-local "
            f"address that does not route ({scope})",
            actual="no IPv4 GID", expected="a RoCE v2 GID with an IPv4 address", evidence=ev,
            fix=f"Assign an IPv4 address to {dev_words} (`ip addr add ADDR/LEN dev {p.netdev or 'NETDEV'}`, made "
                "permanent in the "
                "network configuration): the kernel then adds RoCE v1 and v2 GIDs for it. NCCL >= 2.21 picks the "
                "IPv4 RoCE v2 GID itself, so leave NCCL_IB_GID_INDEX unset (older NCCL: set it to that GID's index, "
                "see `show_gids`). If the port is not meant for NCCL (a management bond), exclude it with NCCL_IB_HCA.",
        ))
    if not bad:
        detail = f": {'; '.join(good)}" if len(good) <= 2 else ""
        found.append(ok(NAME, "ib.roce_gid",
                        f"{len(good)} active RoCE port{'s' if len(good) != 1 else ''} with an IPv4 RoCE GID{detail}",
                        actual=len(good), evidence=good[:16]))
    if len(known) < len(roce):
        missing = [p.name for p in roce if p.gids_source is None]
        found.append(skip(NAME, "ib.roce_gid", f"no GID table collected for {', '.join(missing[:8])}"))
    return found


def _judge_absent(facts: IbFacts, node: Optional[NodeFacts]) -> Finding:
    """ib.present when no source lists a port: absent, not collected, or hardware that other areas see."""
    evidence = [f"sources collected: {', '.join(facts.collected) or 'none'}; with output: "
                f"{', '.join(facts.sources) or 'none'}"] + facts.tool_errors[:4]
    said = f" ({facts.tool_errors[0]})" if facts.tool_errors else ""
    rdma, why = node_rdma(node)
    if rdma:
        return skip(NAME, "ib.present", f"no RDMA port listed by {', '.join(facts.collected)}{said}, though the node has "
                    f"{why}: its RDMA driver (mlx5_ib, mlx4_ib) is not loaded or did not start, or /sys/class/infiniband "
                    "is hidden here (`lsmod | grep _ib`, `dmesg | grep -i mlx`)", evidence=evidence)
    if "ib_sysfs" not in facts.collected and not facts.sources:
        return skip(NAME, "ib.present", f"no RDMA port listed by {', '.join(facts.collected)}; the sysfs listing "
                    "(ib_sysfs) was not collected", evidence=evidence)
    return skip(NAME, "ib.present", f"no InfiniBand/RoCE devices{said}", evidence=evidence)


def _compact(ports: List[IbPort]) -> str:
    """``8x 400 Gb/s IB, 1x 200 Gb/s RoCE`` for the active ports."""
    c = Counter((p.link_layer, p.rate) for p in ports if p.active)
    parts = []
    for (ll, rate), n in sorted(c.items(), key=lambda kv: (-(kv[0][1] or 0), str(kv[0][0]))):
        parts.append(f"{n}x " + (f"{_fmt_rate(rate)} Gb/s " if rate is not None else "") + _ll_short(ll))
    return ", ".join(parts)


def judge(facts: Optional[IbFacts], node: Optional[NodeFacts] = None) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "ib.present", "InfiniBand/RoCE sources not collected (" + ", ".join(n for n, _ in _ORDER)
                     + ")")]
    links = _judge_links(facts)
    if not facts.ports:
        return links if links and not facts.collected else [_judge_absent(facts, node)] + links
    ports = facts.ports
    known = [p for p in ports if p.state is not None]
    active = [p for p in known if p.active]
    findings: List[Finding] = []
    netdev_down = [p for p in ports if p.state is None and (p.netdev_state or "").lower() == "down"]
    pod = node and (node.options.get("pod") or (node.host if in_pod(node.host) else None))
    if netdev_down and pod:
        findings.extend(_pod_netdev_down(netdev_down, pod))
        ports = [p for p in ports if p not in netdev_down]
        netdev_down = []
    down_word = _netdev_down_words(netdev_down)
    if not known and not ports:
        return findings + links
    if not known:
        findings.append(skip(NAME, "ib.port_state",
                             f"{len(ports)} RDMA port{'s' if len(ports) != 1 else ''} listed, but no source reported "
                             f"their state{down_word}",
                             evidence=[p.summary() for p in ports][:16]))
    for p in known:
        if not p.active:
            findings.append(_down_finding(p, len(active), len(known)))
    if known and len(active) == len(known):
        unknown = len(ports) - len(known)
        msg = f"{len(active)} port{'s' if len(active) != 1 else ''} Active, {_compact(active)}"
        if unknown:
            msg += f"; state of {unknown} port{'s' if unknown != 1 else ''} not reported{down_word}"
        fw = sorted({f"{p.hca_type or '?'} fw {p.fw_ver}" for p in ports if p.fw_ver})
        findings.append(ok(NAME, "ib.port_state", msg + (f" ({', '.join(fw)})" if fw else ""),
                           actual=_compact(active), evidence=[p.summary() for p in ports][:16] + facts.notes[:4]))
    findings.extend(_judge_rates(ports))
    findings.extend(_judge_gids(ports))
    findings.extend(_judge_sparse_gids(ports))
    findings.extend(_judge_soft(ports))
    return findings + links


def _pod_netdev_down(down: List[IbPort], host: str) -> List[Finding]:
    """ib.port_link: ibdev2netdev's (Down) read inside a pod. A pod's own network namespace holds only the
    interfaces its network attachments gave it, and their CNI plugin (sriov-cni, ib-sriov-cni, host-device) sets
    each one up as it moves it in; an RDMA port's netdev that is Down there is the pod's port without a link, the
    one its job was given, not a host's spare port whose IPoIB is unused."""
    out = []
    for p in down:
        out.append(fail(NAME, "ib.port_link",
                        f"{p.name} (netdev {p.netdev}): Down inside the pod {host}: a pod's interfaces are the ones "
                        "its network attachments gave it, set up by their CNI plugin, so the RDMA port given to the "
                        "pod has no link",
                        actual={"interface": p.netdev, "netdev_state": p.netdev_state, "pod": host},
                        expected="the link up on the pod's RDMA interface", evidence=_evidence(p),
                        fix=(f"Read the port's state in the pod (`ibstat {p.device}`) and on the node: for an SR-IOV "
                             "virtual function, the VF's link state set by the host (SriovIBNetwork/SriovNetwork "
                             "`linkState: enable`, or `ip link set <PF> vf <N> state enable`), the PF's own port "
                             "Active, and the subnet manager's policy for the VF's GUID.")))
    return out


def _judge_links(facts: IbFacts) -> List[Finding]:
    """ib.port_link: the fabric interfaces the link tools show in use (:func:`nccldiag.areas.netdev.in_use`:
    switched on, addressed or a fabric port) whose link is down; ok when the tools show the others up."""
    if not facts.netdevs:
        return []
    down = nd.down_in_use(facts.netdevs)
    out = []
    for d in down:
        what = ("InfiniBand" if d.infiniband or d.name.startswith("ib") else
                f"{d.gbps:g} Gb/s" if d.gbps else "addressed")
        use = f"{what} interface, switched on" + (f", {', '.join(d.routable[:2])}" if d.routable else "")
        out.append(fail(NAME, "ib.port_link", f"{d.name}: link down ({d.said}); {use}",
                        actual={"interface": d.name, "carrier": False, "said": d.said},
                        expected="the link up on an interface in use",
                        evidence=d.lines[:3],
                        fix=(f"Bring the link of {d.name} up: check the cable and transceiver (reseat, swap), the "
                             "switch port (admin up, speed, FEC mode matching the NIC's), then 'ip link show "
                             f"{d.name}' / 'ethtool {d.name}' again; if the port is unused on purpose, switch it off "
                             f"('ip link set {d.name} down') and keep NCCL off it (NCCL_SOCKET_IFNAME, NCCL_IB_HCA).")))
    if not out:
        up = [d.name for d in facts.netdevs if d.carrier]
        out.append(ok(NAME, "ib.port_link", f"no interface in use with its link down ({len(facts.netdevs)} shown"
                      + (f"; link up: {', '.join(up[:6])}" if up else "") + ")"))
    return out


def _names(ports: List[IbPort], limit: int = 4) -> str:
    shown = ", ".join(f"{p.name} ({p.netdev})" for p in ports[:limit])
    return shown + (f" and {len(ports) - limit} more" if len(ports) > limit else "")


def _netdev_down_words(down: List[IbPort]) -> str:
    """What ibdev2netdev's (Down) netdevs of ports whose state no source gave say, by link layer."""
    if not down:
        return ""
    ib_ports = [p for p in down if p.link_layer == "InfiniBand"]
    roce = [p for p in down if p.link_layer == "Ethernet"]
    other = [p for p in down if p.link_layer not in ("InfiniBand", "Ethernet")]
    parts = []
    if ib_ports:
        parts.append(f"the IPoIB netdev is Down for {len(ib_ports)} InfiniBand port{'s' if len(ib_ports) != 1 else ''} "
                     f"({_names(ib_ports)}): normal without IPoIB, and not the RDMA port's state")
    if roce:
        parts.append(f"the netdev is Down for {len(roce)} RoCE port{'s' if len(roce) != 1 else ''} ({_names(roce)}): "
                     "a RoCE port whose netdev is Down carries no traffic")
    if other:
        parts.append(f"the netdev is Down for {_names(other)}: normal for InfiniBand ports without IPoIB, but a RoCE "
                     "port whose netdev is Down carries no traffic")
    return "; ibdev2netdev: " + "; ".join(parts) + " (read `ibstat` or /sys/class/infiniband/*/ports/*/state)"


def _judge_sparse_gids(ports: List[IbPort]) -> List[Finding]:
    """A RoCE GID table with nothing at its first indices (a pod's macvlan addresses fill others' slots): NCCL
    before 2.26 stops at the first empty index when it looks for a GID by itself (NVIDIA/nccl#1587)."""
    out: List[Finding] = []
    for p in ports:
        if p.state is not None and not p.active or p.link_layer == "InfiniBand" or not p.gids or p.iwarp:
            continue
        if not any(g.type and g.type.startswith("RoCE") for g in p.gids):
            continue
        first = min(g.index for g in p.gids)
        if first == 0:
            continue
        v2 = next((g for g in p.gids if g.ipv4 and g.type == "RoCE v2"), None)
        out.append(warn(
            NAME, "ib.roce_gid", f"{p.name}: the GID table starts at index {first} (indices 0-{first - 1} empty); "
            "NCCL before 2.26 does not find a GID by itself in such a table",
            actual=f"first GID at {first}", expected="a GID at index 0",
            evidence=[f"GID[{g.index}] {g.gid} {g.type or '?'}" + (f" {g.ipv4}" if g.ipv4 else "") for g in p.gids][:8],
            fix=("Use NCCL 2.26 or newer, which searches sparse GID tables, or set NCCL_IB_GID_INDEX to the RoCE v2 "
                 f"IPv4 entry{f' ({v2.index})' if v2 else ''} on every node of this kind (Kubernetes macvlan/SR-IOV "
                 "pods get such tables)."),
        ))
    return out


def _judge_soft(ports: List[IbPort]) -> List[Finding]:
    soft = [p for p in ports if p.soft]
    if not soft:
        return []
    kinds = sorted({p.soft for p in soft if p.soft})
    return [warn(NAME, "ib.soft_rdma",
                 f"{', '.join(p.name for p in soft[:8])}: software RDMA ({', '.join(kinds)}) over an ordinary "
                 "Ethernet NIC, no RDMA hardware: NCCL runs over it, but a probe over it tests the kernel's "
                 "emulation, not the fabric",
                 actual=kinds, expected="RDMA hardware (ConnectX, BlueField, EFA ...)",
                 evidence=[p.summary() for p in soft][:8],
                 fix="Exclude the soft devices from fabric tests (NCCL_IB_HCA=^rxe,siw or the hardware HCAs by "
                     "name); remove them (`rdma link delete <dev>`) where they were added by mistake.")]


def summarize(facts: Optional[IbFacts]) -> Dict[str, Optional[str]]:
    """Values compared across nodes: firmware per HCA model, active ports and their rates, port count."""
    if facts is None or not facts.ports:
        return {}
    fw: Dict[str, set] = {}
    for p in facts.ports:
        if p.fw_ver:
            fw.setdefault(p.hca_type or "?", set()).add(p.fw_ver)
    # A node whose port states are unknown says nothing about its active ports: it must not count as "none".
    states_known = all(p.state is not None for p in facts.ports)
    return {
        "firmware": "; ".join(f"{t} {'/'.join(sorted(v))}" for t, v in sorted(fw.items())) or None,
        "active_ports": (_compact(facts.ports) or "none") if states_known else None,
        "ports": str(len(facts.ports)),
    }
