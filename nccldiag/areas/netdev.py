"""Network interfaces' link states as the link tools print them (pure): ``ifconfig`` (Linux net-tools and
FreeBSD: ``mce0: flags=8843<UP,...> ... media: Ethernet autoselect (100GBase-CR4 ...) status: no carrier``),
``ip link`` / ``ip addr`` (``3: ib0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 2044 ... state DOWN``), ``ip -br link``
/ ``ip -br addr`` and ``ethtool DEV`` (``Settings for eth2:`` ... ``Link detected: no``). Not an area: the ``ib``
area reads a pasted ``netdev_link`` with it, and judges which interfaces are fabric ports that lost their link.

What a port down that is not in use looks like, on healthy nodes: an interface switched off (no ``UP`` flag), a
container bridge with no container (``docker0``, ``cni0``: ``NO-CARRIER`` with an address), a spare Ethernet port
left uncabled (``NO-CARRIER``, no address). :func:`in_use` says which interfaces the output shows in use.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from nccldiag import rx

# interfaces that never leave the host: loopback, container bridges and their veth ends, tunnels, dummies
VIRTUAL = rx.compile(r"^(?:lo\d*|docker\w*|veth\w*|virbr\d*|br-\w+|cni\w*|flannel\.\d+|cali\w+|tun\d*|tap\d*|"
                     r"dummy\d*|kube-\w+|vxlan\w*|genev\w*|weave|tunl\d*|nodelocaldns|lxc\w*|cilium\w*)$")
FABRIC_GBPS = 25  # a port at 25 Gb/s or more (or InfiniBand) is a fabric port: an HPC node does not leave it uncabled

_IFCONFIG = rx.compile(r"(?:^|\s)(?P<name>[A-Za-z][\w.:-]{0,40}): flags=(?:0x)?[0-9a-fA-F]{1,8}<(?P<flags>[^>\n]{0,300})>")
_IP_LINK = rx.compile(r"^\s{0,8}\d{1,6}:\s+(?P<name>[^\s:@]{1,40})(?:@\S{1,60})?:\s+<(?P<flags>[^>\n]{0,300})>"
                      r"(?P<rest>[^\n]{0,400})")
_IP_BR = rx.compile(r"^\s{0,8}(?P<name>[^\s:@]{1,40})(?:@\S{1,60})?\s+(?P<state>UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT)"
                    r"\s+(?P<rest>[^\n]{0,600})$")
_ETHTOOL = rx.compile(r"^\s{0,8}Settings for (?P<name>[^\s:]{1,40}):\s*$")
_DETECTED = rx.compile(r"^\s{0,16}Link detected:\s*(?P<v>yes|no)\b")
_SPEED = rx.compile(r"^\s{0,16}Speed:\s*(?P<mb>\d{1,7})\s*Mb/s")
_STATUS = rx.compile(r"\bstatus: (?P<s>no carrier(?: \([^)\n]{0,60}\))?|active|inactive|associated|running|down)")
_MEDIA = rx.compile(r"\bmedia: [^\n]{0,120}?\((?P<g>\d{1,4})G(?:BASE|Base)[^\s)]{0,20}")
_INET = rx.compile(r"\binet6? (?:addr: ?)?(?P<a>[0-9a-fA-F.:]{2,45})(?:/\d{1,3})?")
_BR_ADDR = rx.compile(r"(?P<a>[0-9a-fA-F.:]{2,45})/\d{1,3}")


@dataclass
class Netdev:
    """One interface as the link tools showed it."""

    name: str
    admin_up: Optional[bool] = None  # the UP flag (None: the tool does not say)
    carrier: Optional[bool] = None  # the link (None: not shown)
    said: str = ""  # the words that say the link is down ('status: no carrier (FEC sync loss)', 'NO-CARRIER')
    addresses: List[str] = field(default_factory=list)
    gbps: Optional[float] = None  # the port's speed or media
    infiniband: bool = False
    lines: List[str] = field(default_factory=list)  # the tools' lines about it, for evidence

    @property
    def routable(self) -> List[str]:
        out = []
        for a in self.addresses:
            ip = ip_of(a)
            if ip is not None and not (ip.is_loopback or ip.is_link_local or ip.is_unspecified):
                out.append(a)
        return out


def ip_of(text: str) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
    """The address ``text`` names, its zone (``fe80::1%eth0``'s ``%eth0``) left off; None where it names none."""
    try:
        return ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None


def _get(found: Dict[str, Netdev], name: str) -> Netdev:
    if name not in found:
        found[name] = Netdev(name)
    return found[name]


def _flags(d: Netdev, flags: str, line: str) -> None:
    words = [w.strip() for w in flags.split(",")]
    d.admin_up = "UP" in words
    if "NO-CARRIER" in words:
        d.carrier, d.said = False, "NO-CARRIER"
    elif "LOWER_UP" in words:
        d.carrier = True
    d.lines.append(line.strip()[:300])


def parse(text: Optional[str]) -> List[Netdev]:
    """Every interface the text shows, each once (later tools fill what earlier ones did not say)."""
    found: Dict[str, Netdev] = {}
    current: Optional[Netdev] = None
    kind = ""
    for raw in (text or "").splitlines():
        line = raw.replace("\t", " ")
        ifc = list(_IFCONFIG.finditer(line))
        if ifc:  # a record (a FreeBSD page may hold a whole record on one line)
            for i, m in enumerate(ifc):
                end = ifc[i + 1].start() if i + 1 < len(ifc) else len(line)
                current, kind = _get(found, m.group("name")), "ifconfig"
                _flags(current, m.group("flags"), line[m.start():end])
                if current.admin_up and "RUNNING" not in m.group("flags").split(","):
                    current.carrier, current.said = False, "UP without RUNNING (no carrier)"  # Linux net-tools
                elif current.said != "NO-CARRIER":
                    current.carrier = None
                _ifconfig_body(current, line[m.end():end])
            continue
        m = _IP_LINK.match(line)
        if m:
            current, kind = _get(found, m.group("name")), "ip"
            _flags(current, m.group("flags"), line)
            continue
        m = _ETHTOOL.match(line)
        if m:
            current, kind = _get(found, m.group("name")), "ethtool"
            continue
        m = _IP_BR.match(line)
        if m and "<" in m.group("rest") or m and _BR_ADDR.search(m.group("rest") or ""):
            d = _get(found, m.group("name"))
            flags = re.search(r"<([^>\n]{0,300})>", m.group("rest"))
            if flags:
                _flags(d, flags.group(1), line)
            else:
                d.lines.append(line.strip()[:300])
            d.addresses += [a.group("a") for a in _BR_ADDR.finditer(m.group("rest")) if a.group("a") not in d.addresses]
            current, kind = None, ""
            continue
        if current is None or not line.strip():
            continue
        if kind == "ifconfig":
            _ifconfig_body(current, line)
        elif kind == "ip":
            if "link/infiniband" in line:
                current.infiniband = True
            a = _INET.search(line)
            if a and a.group("a") not in current.addresses:
                current.addresses.append(a.group("a"))
        elif kind == "ethtool":
            d = _DETECTED.match(line)
            if d:
                current.carrier = d.group("v") == "yes"
                current.said = current.said or ("" if current.carrier else "Link detected: no")
                current.lines.append(f"Settings for {current.name}: {line.strip()}")
            s = _SPEED.match(line)
            if s:
                current.gbps = int(s.group("mb")) / 1000
    return list(found.values())


def _ifconfig_body(d: Netdev, text: str) -> None:
    st = _STATUS.search(text)
    if st:
        d.carrier = not st.group("s").startswith(("no carrier", "inactive", "down"))
        if not d.carrier:
            d.said = f"status: {st.group('s')}"
    elif d.carrier is None and d.admin_up and "RUNNING" in " ".join(d.lines[-1:]):
        d.carrier = True  # FreeBSD prints a status line; without one, UP and RUNNING is a link
    md = _MEDIA.search(text)
    if md:
        d.gbps = float(md.group("g"))
    if re.search(r"\binfiniband\b|\bInfiniBand\b", text):
        d.infiniband = True
    for a in _INET.finditer(text):
        if a.group("a") not in d.addresses and ("." in a.group("a") or ":" in a.group("a")):
            d.addresses.append(a.group("a"))


def in_use(d: Netdev) -> bool:
    """Whether the output shows the interface in use, so that its link being down matters: switched on (its UP
    flag; where the tool does not say, not taken as on), not a host-internal interface, and either addressed
    (a routable address) or a fabric port (InfiniBand, or :data:`FABRIC_GBPS` or more)."""
    if d.admin_up is not True or VIRTUAL.match(d.name):
        return False
    return bool(d.routable) or d.infiniband or bool(d.name.startswith("ib")) or (d.gbps or 0) >= FABRIC_GBPS


def down_in_use(netdevs: List[Netdev]) -> List[Netdev]:
    """The interfaces in use (:func:`in_use`) whose link the output shows down."""
    return [d for d in netdevs if d.carrier is False and in_use(d)]
