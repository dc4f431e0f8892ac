"""Basic node facts: host name, kernel, OS, CPUs, memory, interfaces, name resolution.

The judgements that matter most here for collectives are about the node's own
host name: one that resolves to a loopback address (Debian's ``127.0.1.1
host`` line) makes gloo and NCCL's bootstrap advertise 127.0.x.x to their
peers, and the run hangs until its timeout; one that does not resolve at all
makes torchrun's c10d rendezvous (and other tools that look the name up)
fail at start.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.model.findings import Finding, fail, ok, warn

NAME = "system"
UNRESOLVED = "unresolved"  # what resolve_self prints when the host name resolves to nothing
TITLE = "System"

SOURCES = (
    Source("hostname", "hostname; hostname -f 2>/dev/null || true", description="host name, FQDN"),
    Source("uname", "uname -srm", description="kernel release and machine"),
    Source("os_release", 'cat "$R/etc/os-release"', description="/etc/os-release"),
    Source(
        "cpuinfo",
        "grep -m1 '^model name' \"$R/proc/cpuinfo\"; printf 'processors: '; grep -c '^processor' \"$R/proc/cpuinfo\"",
        description="CPU model and count from /proc/cpuinfo",
    ),
    Source("meminfo", 'grep -E "^(MemTotal|MemAvailable|HugePages_Total):" "$R/proc/meminfo"', description="memory"),
    Source("ip_addr", "ip -o addr show 2>/dev/null", description="interfaces and addresses (ip -o addr)"),
    Source("ip_link", "ip -o link show 2>/dev/null", description="interface states (ip -o link)"),
    Source(
        "resolve_self",
        'a=$(getent ahosts "$(hostname)" 2>/dev/null | awk \'{print $1}\' | sort -u); '
        'if [ -n "$a" ]; then echo "$a"; else echo "%s"; fi' % UNRESOLVED,
        description="what the host name resolves to ('unresolved' when it does not)",
    ),
)


@dataclass
class Interface:
    name: str
    state: str = "UNKNOWN"
    mtu: Optional[int] = None
    addresses: List[str] = field(default_factory=list)  # "10.0.0.2/24"


@dataclass
class SystemFacts:
    hostname: Optional[str] = None
    fqdn: Optional[str] = None
    kernel: Optional[str] = None
    machine: Optional[str] = None
    os_name: Optional[str] = None
    cpu_model: Optional[str] = None
    cpus: Optional[int] = None
    mem_total_kib: Optional[int] = None
    interfaces: List[Interface] = field(default_factory=list)
    self_addresses: List[str] = field(default_factory=list)
    self_resolves: Optional[bool] = None  # None: not looked at

    @property
    def loopback_self(self) -> List[str]:
        out = []
        for a in self.self_addresses:
            try:
                if ipaddress.ip_address(a).is_loopback:
                    out.append(a)
            except ValueError:
                continue
        return out


_IP_ADDR = rx.compile(r"^\d+:\s+(\S+?)(?:@\S+)?\s+(inet6?)\s+(\S+)")
_IP_LINK = rx.compile(r"^\d+:\s+(\S+?)(?:@\S+)?:\s+<([^>]*)>.*?\bmtu\s+(\d+)(?:.*?\bstate\s+(\S+))?")


def parse_os_release(text: Optional[str]) -> Optional[str]:
    if not text:
        return None
    values = {}
    for line in text.splitlines():
        k, _, v = line.strip().partition("=")
        values[k] = v.strip().strip('"')
    return values.get("PRETTY_NAME") or (" ".join(filter(None, [values.get("NAME"), values.get("VERSION_ID")])) or None)


def parse_interfaces(addr_text: Optional[str], link_text: Optional[str]) -> List[Interface]:
    ifaces: Dict[str, Interface] = {}
    for line in (link_text or "").splitlines():
        m = _IP_LINK.match(line.strip())
        if m:
            name, flags, mtu, state = m.groups()
            st = state or ("UP" if "UP" in flags.split(",") else "DOWN")
            ifaces[name] = Interface(name, st, int(mtu))
    for line in (addr_text or "").splitlines():
        m = _IP_ADDR.match(line.strip())
        if m:
            name, family, addr = m.groups()
            ifaces.setdefault(name, Interface(name)).addresses.append(addr)
    return list(ifaces.values())


def parse(raw) -> SystemFacts:
    f = SystemFacts()
    host = section(raw, "hostname")
    if host:
        lines = [l.strip() for l in host.splitlines() if l.strip()]
        f.hostname = lines[0] if lines else None
        f.fqdn = lines[1] if len(lines) > 1 else None
    un = section(raw, "uname")
    if un:
        parts = un.split()
        if len(parts) >= 2:
            f.kernel = parts[1]
        if len(parts) >= 3:
            f.machine = parts[2]
    f.os_name = parse_os_release(section(raw, "os_release"))
    cpu = section(raw, "cpuinfo") or ""
    m = re.search(r"model name\s*:\s*(.+)", cpu)
    if m:
        f.cpu_model = re.sub(r"\s+", " ", m.group(1)).strip()
    m = re.search(r"processors:\s*(\d+)", cpu)
    if m:
        f.cpus = int(m.group(1))
    m = re.search(r"MemTotal:\s*(\d+)", section(raw, "meminfo") or "")
    if m:
        f.mem_total_kib = int(m.group(1))
    f.interfaces = parse_interfaces(section(raw, "ip_addr"), section(raw, "ip_link"))
    resolved = section(raw, "resolve_self")
    lines = [l.strip() for l in (resolved or "").splitlines() if l.strip()]
    if lines == [UNRESOLVED]:
        f.self_resolves = False
    else:
        f.self_addresses = lines
        f.self_resolves = True if lines else None
    return f


def _routable(iface: Interface) -> List[str]:
    out = []
    for a in iface.addresses:
        try:
            ip = ipaddress.ip_interface(a).ip
        except ValueError:
            continue
        if not ip.is_loopback and not ip.is_link_local:
            out.append(a)
    return out


def judge(facts: Optional[SystemFacts], node: NodeFacts) -> List[Finding]:
    if facts is None or facts.hostname is None:
        return [fail(NAME, "system.basic", "no basic facts came back from the node", fix="Check that /bin/sh works on the node.")]
    mem = f"{facts.mem_total_kib / 1024 / 1024:.0f} GiB" if facts.mem_total_kib else "? GiB"
    findings = [
        ok(
            NAME,
            "system.basic",
            f"{facts.os_name or 'unknown OS'}, kernel {facts.kernel or '?'}, {facts.cpus or '?'} CPUs, {mem}",
            actual={"os": facts.os_name, "kernel": facts.kernel, "cpus": facts.cpus, "mem_kib": facts.mem_total_kib},
        )
    ]
    usable = [i for i in facts.interfaces if i.name != "lo" and _routable(i) and i.state in ("UP", "UNKNOWN")]
    if facts.interfaces and not usable:
        findings.append(
            warn(
                NAME,
                "system.interfaces",
                "no interface other than loopback is up with an address",
                actual=[i.name for i in facts.interfaces],
                fix="Bring up the node's data network interface; collectives need a routable address.",
            )
        )
    elif usable:
        findings.append(
            ok(NAME, "system.interfaces", ", ".join(f"{i.name} {' '.join(_routable(i))}" for i in usable[:6]))
        )
    if facts.self_resolves is False:
        findings.append(
            warn(
                NAME,
                "system.hostname_unresolved",
                f"host name {facts.hostname} does not resolve on this node",
                actual=None,
                expected="the host name resolves to the address peers reach this node on",
                evidence=[f"getent ahosts {facts.hostname} -> nothing"],
                fix=(
                    "Programs that look up the node's own name fail at start: torchrun's c10d rendezvous "
                    "(socket.gaierror), gloo and NCCL's bootstrap without GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME, "
                    "MPI launchers. Add the name to /etc/hosts (with the data-network address) or DNS on every "
                    "node; or launch by address (torchrun --rdzv-backend=static --master-addr=ADDR --node-rank=N, "
                    "as nccldiag probe does)."
                ),
            )
        )
    loop = facts.loopback_self
    if loop:
        findings.append(
            warn(
                NAME,
                "system.hostname_loopback",
                f"host name {facts.hostname} resolves to loopback {', '.join(loop)}, expected a routable address",
                actual=facts.self_addresses,
                expected="the address of the interface peers reach this node on",
                evidence=[f"getent ahosts {facts.hostname} -> {' '.join(facts.self_addresses)}"],
                fix=(
                    "gloo and NCCL's bootstrap advertise this address to their peers, so multi-node runs hang. "
                    "Map the host name to its data-network address in /etc/hosts (Debian adds '127.0.1.1 HOST'), "
                    "or set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME (nccldiag probe does so with --ifname)."
                ),
            )
        )
    return findings


def summarize(facts: Optional[SystemFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    return {"kernel": facts.kernel, "os": facts.os_name}
