"""RoCE host set-up: PFC and trust, ECN, MTU, and ARP/reverse-path settings for several NICs in one subnet.

For every RDMA device whose port 1 is Ethernet (RoCE), and its netdev:

- ``roce.pfc``: ``mlnx_qos -i <netdev>`` (MLNX_OFED/DOCA, where installed):
  the trust state and the priorities with PFC. RoCE without PFC on any
  priority is lossy unless the whole fabric is built for lossy RoCE
  (NVIDIA's RoCE configuration guides: trust dscp, PFC on the RoCE
  priority, usually 3; doRoCE defaults ToS 106).
- ``roce.ecn``: ``/sys/class/net/<netdev>/ecn/roce_np|roce_rp/enable/<prio>``:
  DCQCN congestion control needs ECN on as notification and reaction point
  for the priorities PFC protects (all priorities when PFC is off).
- ``roce.mtu``: the netdev MTU against the port's active MTU (``ibv_devinfo``,
  read by the ``ib`` area): RoCE uses the largest IB MTU (1024 to 4096) that
  fits in the netdev MTU, so a 1500-byte netdev gives RoCE 1024-byte packets.
- ``roce.arp``: with two or more RoCE netdevs holding addresses in one IPv4
  subnet, Linux answers ARP for any of them on any NIC and may drop replies
  by reverse-path filtering, so RDMA-CM connections go to the wrong NIC or
  hang. Each such netdev needs ``arp_ignore`` 1 or 2, ``arp_announce`` 2,
  and ``rp_filter`` 0 or 2 (libfabric's "Verbs provider on multi-NIC
  systems"; the effective value is the larger of ``all`` and the netdev's
  own, for rp_filter as for the ARP settings).

Netdev addresses come from the ``system`` area; the active MTU from ``ib``.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "roce"
_IWARP_DEV = rx.compile(r"^(?:i40iw|iw_cxgb|cxgb4_|siw)")  # as the ib area: iWARP devices by name
TITLE = "RoCE set-up"

QOS_SOURCE = Source(
    "roce_qos",
    '[ -d "$R/sys/class/infiniband" ] || exit 0; '
    'for d in "$R"/sys/class/infiniband/*; do l=; read l 2>/dev/null <"$d/ports/1/link_layer"; [ "$l" = Ethernet ] || continue; '
    'for n in "$d"/device/net/*; do [ -d "$n" ] || continue; i=${n##*/}; echo "=== ${d##*/} $i"; '
    'm=; read m 2>/dev/null <"$R/sys/class/net/$i/mtu"; echo "mtu: $m"; '
    'grep -sH . "$R/sys/class/net/$i/ecn/roce_np/enable/"* "$R/sys/class/net/$i/ecn/roce_rp/enable/"*; '
    'if [ -z "$R" ] && command -v mlnx_qos >/dev/null 2>&1; then mlnx_qos -i "$i" 2>/dev/null | head -n 80; fi; '
    "done; done",
    timeout=30,
    description="per RoCE netdev: MTU, ECN enable per priority, mlnx_qos (trust, PFC)",
)
ARP_SOURCE = Source(
    "arp_sysctl",
    'cd "$R/proc/sys/net/ipv4/conf" 2>/dev/null || exit 0; grep -s . */rp_filter */arp_ignore */arp_announce | head -n 3000',
    description="net.ipv4.conf.*.rp_filter, arp_ignore, arp_announce",
)

SOURCES = (QOS_SOURCE, ARP_SOURCE)

ROCE_MIN_NETDEV_MTU = 4200  # room for a 4096-byte RoCE payload and its headers


@dataclass
class RoceNetdev:
    device: str
    netdev: str
    mtu: Optional[int] = None
    ecn: Dict[str, Dict[int, bool]] = field(default_factory=dict)  # roce_np/roce_rp -> priority -> enabled
    trust: Optional[str] = None
    pfc: Optional[List[int]] = None  # priorities with PFC; None: mlnx_qos not run
    lines: List[str] = field(default_factory=list)


@dataclass
class RoceFacts:
    netdevs: List[RoceNetdev] = field(default_factory=list)
    qos_collected: bool = False
    present: List[str] = field(default_factory=list)  # this area's sources in the raw output, empty or not
    sysctl: Dict[str, Dict[str, int]] = field(default_factory=dict)  # iface -> {rp_filter: n, ...}


_ECN = rx.compile(r"/ecn/(roce_np|roce_rp)/enable/(\d+)\s*[:=]\s*(\d+)")


def parse_qos(text: Optional[str]) -> Tuple[List[RoceNetdev], bool]:
    """The source's blocks, or bare ``mlnx_qos`` / ``rdma-qos`` output (one netdev, named from its lines)."""
    if text is None:
        return [], False
    devs: List[RoceNetdev] = []
    cur: Optional[RoceNetdev] = None
    in_pfc = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = re.match(r"^=== (\S+) (\S+)$", line) or re.match(r"^=+ show configuration for device (\S+) / (\S+?)=*$", line)
        if m:
            dev, nd = (m.group(1), m.group(2)) if line.startswith("=== ") else (m.group(2), m.group(1))
            cur = RoceNetdev(dev, nd)
            devs.append(cur)
            in_pfc = False
            continue
        if cur is None:
            cur = RoceNetdev("?", "?")
            devs.append(cur)
        cur.lines.append(line)
        if line.startswith("mtu:"):
            v = line.split(":", 1)[1].strip()
            cur.mtu = int(v) if v.isdigit() else None
            continue
        m = _ECN.search(line)
        if m:
            cur.ecn.setdefault(m.group(1), {})[int(m.group(2))] = m.group(3) != "0"
            n = re.search(r"/sys/class/net/([^/]+)/ecn", line)
            if cur.netdev == "?" and n:
                cur.netdev = n.group(1)
            continue
        m = re.match(r"^Priority trust (?:state|mode):\s*(\S+)", line)
        if m:
            cur.trust = m.group(1)
            continue
        if line.startswith("PFC configuration"):
            in_pfc = True
            continue
        if in_pfc and line.startswith("enabled"):
            flags = line.split()[1:]
            cur.pfc = [i for i, f in enumerate(flags) if f == "1"]
            in_pfc = False
    return devs, True


def parse_sysctl(text: Optional[str]) -> Dict[str, Dict[str, int]]:
    """``net.ipv4.conf.<if>.<key> = v`` (sysctl -a) or ``<if>/<key>:v`` (grep over /proc/sys)."""
    out: Dict[str, Dict[str, int]] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.match(r"^net\.ipv4\.conf\.(.+)\.(rp_filter|arp_ignore|arp_announce)\s*=\s*(\d+)$", line) \
            or re.match(r"^(?:.*/)?([^/]+)/(rp_filter|arp_ignore|arp_announce):(\d+)$", line)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
    return out


def parse(raw) -> RoceFacts:
    f = RoceFacts()
    f.netdevs, f.qos_collected = parse_qos(section(raw, QOS_SOURCE.name))
    f.sysctl = parse_sysctl(section(raw, ARP_SOURCE.name))
    f.present = [n for n in (QOS_SOURCE.name, ARP_SOURCE.name) if raw.get(n) is not None]
    return f


def _roce_ports(node: Optional[NodeFacts]) -> List:
    """The node's RoCE ports (Ethernet link layer, not iWARP) from the ib area."""
    ib = node.get("ib") if node is not None else None
    return [p for p in (getattr(ib, "ports", None) or []) if getattr(p, "roce", False) and not getattr(p, "iwarp", False)]


def _iwarp_devices(node: Optional[NodeFacts]) -> List[str]:
    ib = node.get("ib") if node is not None else None
    return sorted({p.device for p in (getattr(ib, "ports", None) or []) if getattr(p, "iwarp", False)})


def judge(facts: Optional[RoceFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "roce.pfc", "no RoCE outputs came back")]
    iwarp = _iwarp_devices(node)
    if any(d.device in iwarp or _IWARP_DEV.match(d.device) for d in facts.netdevs):
        # iWARP runs over TCP: the RoCE set-up (PFC, ECN, the 4096-byte RoCE MTU) does not apply to it
        facts = replace(facts, netdevs=[d for d in facts.netdevs if d.device not in iwarp and not _IWARP_DEV.match(d.device)])
    if not facts.netdevs and not _roce_ports(node):
        return [skip(NAME, "roce.pfc", _why_no_roce(facts, node))]
    return _judge_pfc(facts) + _judge_ecn(facts) + _judge_mtu(facts, node) + judge_arp(facts, node)


def _why_no_roce(facts: RoceFacts, node: Optional[NodeFacts]) -> str:
    """Why there is no RoCE port to judge: InfiniBand only, nothing with an Ethernet link layer, or not collected."""
    ib = node.get("ib") if node is not None else None
    ports = getattr(ib, "ports", None) or []
    iwarp = [p for p in ports if getattr(p, "iwarp", False)]
    if iwarp and all(getattr(p, "iwarp", False) or getattr(p, "link_layer", None) == "InfiniBand" for p in ports):
        return (f"no RoCE port on this node: its Ethernet RDMA ports are iWARP ({', '.join(p.name for p in iwarp[:4])}), "
                "which runs over TCP and needs no PFC or ECN set-up")
    if ports:
        unknown = [p for p in ports if getattr(p, "link_layer", None) is None]
        if unknown:
            return (f"no RoCE port known: {len(unknown)} of the node's {len(ports)} RDMA ports have no link layer in "
                    "the collected sources")
        return f"no RoCE port on this node: its {len(ports)} RDMA port{'s are' if len(ports) != 1 else ' is'} InfiniBand"
    if QOS_SOURCE.name in facts.present:
        return "no RoCE port on this node (no RDMA device with an Ethernet link layer)"
    if ib is None:
        return (f"not collected: {QOS_SOURCE.name} (the RoCE netdevs' MTU, ECN and mlnx_qos) and the ib area's "
                "port list")
    return f"no RoCE port on this node (the ib area lists no RDMA port; {QOS_SOURCE.name} was not collected)"


def _judge_pfc(facts: RoceFacts) -> List[Finding]:
    known = [d for d in facts.netdevs if d.pfc is not None]
    if not known and not facts.qos_collected:
        return [skip(NAME, "roce.pfc", f"PFC and trust not read: {QOS_SOURCE.name} (which runs mlnx_qos) was "
                     + ("empty" if QOS_SOURCE.name in facts.present else "not collected"))]
    if not known:
        return [skip(NAME, "roce.pfc", "mlnx_qos not available: PFC and trust not read (install MLNX_OFED/DOCA tools to check them)")]
    none = [d for d in known if not d.pfc]
    ev = [f"{d.netdev} ({d.device}): trust {d.trust or '?'}, PFC on priorities {d.pfc or 'none'}" for d in known]
    if none:
        return [warn(NAME, "roce.pfc", f"no PFC priority on {', '.join(d.netdev for d in none)}: RoCE traffic is lossy "
                     "unless the fabric is built for lossy RoCE", actual={d.netdev: d.pfc for d in none},
                     expected="PFC on the RoCE priority (commonly 3)", evidence=ev,
                     fix="mlnx_qos -i <netdev> --trust dscp --pfc 0,0,0,1,0,0,0,0 (priority 3), matching the switch "
                     "configuration; make it persistent in the NIC set-up scripts.")]
    return [ok(NAME, "roce.pfc", "PFC enabled on " + "; ".join(f"{d.netdev} priority {','.join(map(str, d.pfc))} (trust {d.trust or '?'})" for d in known),
               evidence=ev)]


def _judge_ecn(facts: RoceFacts) -> List[Finding]:
    known = [d for d in facts.netdevs if d.ecn]
    if not known:
        return [skip(NAME, "roce.ecn", "no ECN settings in sysfs for the RoCE netdevs")]
    bad = []
    for d in known:
        prios = d.pfc if d.pfc else sorted(set(d.ecn.get("roce_np", {})) | set(d.ecn.get("roce_rp", {})))
        off = [f"{role} {p}" for role in ("roce_np", "roce_rp") for p in prios if d.ecn.get(role, {}).get(p) is False]
        if off:
            bad.append((d, off))
    if bad:
        return [warn(NAME, "roce.ecn", "ECN off for RoCE priorities: " + "; ".join(f"{d.netdev} {', '.join(o)}" for d, o in bad),
                     actual={d.netdev: o for d, o in bad}, expected="ECN enabled (roce_np and roce_rp) on the RoCE priority",
                     fix="echo 1 > /sys/class/net/<netdev>/ecn/roce_np/enable/<prio> and .../roce_rp/enable/<prio>: "
                     "DCQCN congestion control needs both.")]
    return [ok(NAME, "roce.ecn", f"ECN enabled for the RoCE priorities on {len(known)} netdevs")]


def _judge_mtu(facts: RoceFacts, node: Optional[NodeFacts]) -> List[Finding]:
    active = {p.netdev: p.mtu for p in _roce_ports(node) if p.netdev}
    sysf = node.get("system") if node is not None else None
    ifmtu = {i.name: i.mtu for i in getattr(sysf, "interfaces", None) or []}
    names = [(d.netdev, d.mtu) for d in facts.netdevs] or [(n, None) for n in active]
    rows = [(n, mtu or ifmtu.get(n), active.get(n)) for n, mtu in names]
    known = [r for r in rows if r[1]]
    if not known:
        return [skip(NAME, "roce.mtu", "netdev MTU of the RoCE ports unknown")]
    small = [r for r in known if r[1] < ROCE_MIN_NETDEV_MTU or (r[2] is not None and r[2] < 4096)]
    ev = [f"{n}: MTU {m}, active RoCE MTU {a if a is not None else '?'}" for n, m, a in known]
    if small:
        return [warn(NAME, "roce.mtu", "RoCE packets smaller than 4096 bytes on " + ", ".join(r[0] for r in small),
                     actual={r[0]: r[1] for r in small}, expected=f"netdev MTU >= {ROCE_MIN_NETDEV_MTU} (active MTU 4096)",
                     evidence=ev, fix="Set the netdev MTU to 9000 on the NICs and the switch ports (ip link set <netdev> "
                     "mtu 9000, persistent in the network configuration); RoCE then uses 4096-byte packets.")]
    return [ok(NAME, "roce.mtu", "RoCE netdev MTU allows 4096-byte packets: " + ", ".join(f"{n} {m}" for n, m, _ in known), evidence=ev)]


def _subnets(node: Optional[NodeFacts], names: List[str]) -> Dict[str, List[str]]:
    sysf = node.get("system") if node is not None else None
    by_net: Dict[str, List[str]] = {}
    for i in getattr(sysf, "interfaces", None) or []:
        if i.name not in names:
            continue
        for a in i.addresses:
            try:
                iface = ipaddress.ip_interface(a)
            except ValueError:
                continue
            if iface.version == 4:
                by_net.setdefault(str(iface.network), [])
                if i.name not in by_net[str(iface.network)]:
                    by_net[str(iface.network)].append(i.name)
    return {n: l for n, l in by_net.items() if len(l) > 1}


def judge_arp(facts: RoceFacts, node: Optional[NodeFacts]) -> List[Finding]:
    names = [d.netdev for d in facts.netdevs] or [p.netdev for p in _roce_ports(node) if p.netdev]
    shared = _subnets(node, names)
    if not shared:
        return [skip(NAME, "roce.arp", "no two RoCE netdevs in one IPv4 subnet: ARP and rp_filter settings do not matter here")]
    if not facts.sysctl:
        groups = "; ".join(n + ": " + ", ".join(l) for n, l in shared.items())
        return [skip(NAME, "roce.arp", f"{groups} share a subnet, but net.ipv4.conf was not read")]
    allv = facts.sysctl.get("all", {})
    bad, ev = {}, []
    for net, ifs in shared.items():
        for i in ifs:
            own = facts.sysctl.get(i, {})
            eff = {k: max(allv.get(k, 0), own.get(k, 0)) for k in ("arp_ignore", "arp_announce", "rp_filter")}
            ev.append(f"{i} ({net}): arp_ignore {eff['arp_ignore']}, arp_announce {eff['arp_announce']}, rp_filter {eff['rp_filter']}")
            wrong = []
            if eff["arp_ignore"] not in (1, 2):
                wrong.append(f"arp_ignore {eff['arp_ignore']}")
            if eff["arp_announce"] != 2:
                wrong.append(f"arp_announce {eff['arp_announce']}")
            if eff["rp_filter"] == 1:
                wrong.append("rp_filter 1")
            if wrong:
                bad[i] = wrong
    if bad:
        return [fail(NAME, "roce.arp", "several RoCE netdevs in one subnet without multi-NIC ARP settings: "
                     + "; ".join(f"{i}: {', '.join(w)}" for i, w in bad.items()), actual=bad,
                     expected="arp_ignore 1 or 2, arp_announce 2, rp_filter 0 or 2", evidence=ev,
                     fix="For each RoCE netdev: sysctl -w net.ipv4.conf.<netdev>.arp_ignore=2 "
                     "net.ipv4.conf.<netdev>.arp_announce=2 net.ipv4.conf.<netdev>.rp_filter=2 (and in "
                     "/etc/sysctl.d/); otherwise RDMA-CM resolves peers to the wrong NIC and connections hang.")]
    return [ok(NAME, "roce.arp", "multi-NIC ARP settings in place on " + ", ".join(i for l in shared.values() for i in l), evidence=ev)]


def summarize(facts: Optional[RoceFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    pfc = sorted({",".join(map(str, d.pfc)) for d in facts.netdevs if d.pfc is not None})
    mtu = sorted({str(d.mtu) for d in facts.netdevs if d.mtu})
    return {"pfc": "/".join(pfc) or None, "mtu": "/".join(mtu) or None}
