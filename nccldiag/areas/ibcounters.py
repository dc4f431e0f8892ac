"""InfiniBand and RoCE error counters, and link flaps from the kernel log.

The port counters in sysfs (``/sys/class/infiniband/<dev>/ports/<n>/counters/``
and the driver's ``hw_counters/``) count since the driver loaded. The error
counters and their meaning follow NVSentinel's link counter design (IBTA
based) and the counters ``ibqueryerrors`` reads:

- ``ibcounters.link``: ``excessive_buffer_overrun_errors``,
  ``local_link_integrity_errors`` (fatal in NVSentinel as soon as they
  grow), ``symbol_error``, ``link_error_recovery``, ``link_downed``,
  ``port_rcv_errors``, ``port_rcv_remote_physical_errors``,
  ``port_xmit_discards`` and the constraint errors warn at any value
  (``ibqueryerrors`` reports every non-zero). They are totals since the
  driver loaded, not rates, so one reading never fails a node: the rate
  thresholds need two readings (:func:`delta`).
- ``ibcounters.transport``: the RoCE/transport ``hw_counters`` that mean
  lost or retried packets (``local_ack_timeout_err``, ``rnr_nak_retry_err``,
  ``out_of_sequence``, ``packet_seq_err``, ``out_of_buffer``,
  ``roce_slow_restart``, ...): warn at any value.
- ``ibcounters.hca_errors``: the mlx5 driver's reports of an HCA whose firmware
  stopped answering or failed (``health compromised``, ``Health issue
  observed``, command timeouts ``Will cause a leak of a command resource``,
  ``mlx5_load_one failed``, the health poll's ``Fatal error N detected`` and its
  recovery, ``handling bad device here``, ``health recovery flow aborted``):
  rows of ``nccldiag/knowledge/kmsg.toml``
  (**fail**).
- ``ibcounters.ipoib_tx_timeout``: IPoIB's transmit watchdog (``ib0: transmit
  timeout: latency N msecs``): the port or HCA behind the interface stopped
  sending (**warn**), a row of ``nccldiag/knowledge/kmsg.toml``.
- ``ibcounters.link_flaps``: ports that went down after having been up
  (``Link DOWN``/``Link down``/``lost carrier`` lines of mlx5 and the
  netdev layer, ``NIC Link is Down`` of the Intel Ethernet drivers, in the
  kernel log; the first down of a port before it ever
  came up is its bring-up, not a flap). Five or more per port fail (Azure
  NHC ``azure_ib_link_flapping``: 5 per device in its window); fewer warn.

The same counters are read from ``perfquery [-x]`` blocks and ``ibqueryerrors``
lines saved in the same source (their IBTA names mapped to the sysfs names,
:data:`IBTA_NAMES`); where sysfs shows ports but no counter files, the
collection runs ``perfquery -x`` per port. Counters that say ``N/A (no PMA)``
(iWARP devices) are not numbers and are left out. :func:`snapshot` and :func:`delta` give the counters of one
collection per port and the change between two, for callers that read them
around a run (a lossy link shows on the one port whose errors move).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

from nccldiag import rx
from nccldiag.areas import kernlog
from nccldiag.areas.base import NodeFacts, Source, section, parsed
from nccldiag.areas.pcie import node_rdma
from nccldiag.model.findings import Finding, fail, ok, skip, warn
from nccldiag.spec import thresholds

NAME = "ibcounters"
TITLE = "IB/RoCE counters"

COUNTERS_SOURCE = Source(
    "ib_counters",
    '[ -d "$R/sys/class/infiniband" ] || exit 0; set --; '
    'for p in "$R"/sys/class/infiniband/*/ports/*; do '
    'for c in counters hw_counters; do [ -d "$p/$c" ] && set -- "$@" "$p/$c"/*; done; done; '
    '[ $# -gt 0 ] && grep -sH . "$@" | head -n 30000; '
    # sysfs without counter files (hidden in some containers): perfquery -x per port, where installed
    'if [ $# -eq 0 ] && command -v perfquery >/dev/null 2>&1; then '
    'for p in "$R"/sys/class/infiniband/*/ports/*; do [ -d "$p" ] || continue; d=${p%/ports/*}; d=${d##*/}; '
    'echo "perfquery -x -C $d -P ${p##*/}"; perfquery -x -C "$d" -P "${p##*/}" 2>&1; done | head -n 4000; fi; true',
    timeout=15,
    description="per-port counters and hw_counters of /sys/class/infiniband (one grep); perfquery -x per port "
                "where sysfs has no counter files",
)

# nothing run on the node (iblinkinfo sweeps the whole fabric from one port): its output pasted to nccldiag log, or
# saved in a bundle as iblinkinfo.txt, is read
LINKS_SOURCE = Source(
    "iblinkinfo", ":", timeout=5,
    description="nothing run on the node: iblinkinfo output (infiniband-diags), pasted or saved in a bundle, is read: "
                "each fabric link's width, speed and state, and the links that came up below what both ends support",
)

SOURCES = (COUNTERS_SOURCE, kernlog.SOURCE, LINKS_SOURCE)

LINK_FATAL = ("excessive_buffer_overrun_errors", "local_link_integrity_errors")
LINK_WARN = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
             "port_xmit_discards", "port_rcv_constraint_errors", "port_xmit_constraint_errors", "VL15_dropped",
             "port_rcv_switch_relay_errors")
TRANSPORT_WARN = ("local_ack_timeout_err", "rnr_nak_retry_err", "out_of_sequence", "packet_seq_err", "out_of_buffer",
                  "roce_slow_restart", "implied_nak_seq_err", "rx_icrc_encapsulated", "req_transport_retries_exceeded",
                  "resp_local_length_error", "req_remote_access_errors")
FLAP_FAIL = 5  # Azure NHC azure_ib_link_flapping: 5 lost-carrier events per device

Snapshot = Dict[str, Dict[str, int]]  # "mlx5_0/1" -> {counter: value}


def _port_key(path: str) -> Optional[tuple]:
    m = re.search(r"/infiniband/([^/]+)/ports/(\d+)/(counters|counters_ext|hw_counters)/([^/:]+)$", path)
    return (f"{m.group(1)}/{m.group(2)}", m.group(4)) if m else None


# IBTA PortCounters / PortCountersExtended field names as infiniband-diags prints them (perfquery, ibqueryerrors),
# with the older perfquery spellings (``SymbolErrors``, ``XmtDiscards``, ...) -> the sysfs counter file names
IBTA_NAMES = {
    "SymbolErrorCounter": "symbol_error", "SymbolErrors": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery", "LinkRecovers": "link_error_recovery",
    "LinkDownedCounter": "link_downed", "LinkDowned": "link_downed",
    "PortRcvErrors": "port_rcv_errors", "RcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "RcvRemotePhysErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors", "RcvSwRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards", "PortXmtDiscards": "port_xmit_discards",
    "XmtDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors", "XmtConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors", "RcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors", "LinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "ExcBufOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
    "PortXmitWait": "port_xmit_wait", "XmtWait": "port_xmit_wait",
    "PortXmitData": "port_xmit_data", "XmtData": "port_xmit_data",
    "PortRcvData": "port_rcv_data", "RcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_packets", "XmtPkts": "port_xmit_packets",
    "PortRcvPkts": "port_rcv_packets", "RcvPkts": "port_rcv_packets",
    "PortUnicastXmitPkts": "unicast_xmit_packets", "PortUnicastRcvPkts": "unicast_rcv_packets",
    "PortMulticastXmitPkts": "multicast_xmit_packets", "PortMulticastRcvPkts": "multicast_rcv_packets",
}

_SYSFS_LINE = rx.compile(r"^(/\S+?/(?:counters|counters_ext|hw_counters)/[^/:]+):(.*)$")
# perfquery: "# Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 ...)" or "# Port counters: Lid 5 port 1"
_PQ_HEADER = rx.compile(r"^#\s*Port (?:extended )?counters:\s*Lid (\d+) port (\w+)", re.I)
_PQ_LINE = rx.compile(r"^([A-Za-z][A-Za-z0-9]*):\.*\s*(\S+)\s*$")
# a command line naming the CA and port (the collection script's, or an admin's prompt): perfquery -x -C mlx5_0 -P 1
_PQ_COMMAND = rx.compile(r"\bperfquery\b.{0,512}?-C\s*(\S+)(?:.{0,512}?-P\s*(\d+))?")
# ibqueryerrors: 'Errors for 0x2c903006e29b0 "MF0;sw:SX6036/U1"', then
# "   GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535] [LinkDownedCounter == 2 (2.000)] ..."
_IBQ_NODE = rx.compile(r'^Errors for\s+(?:(0x[0-9a-fA-F]+)\s*)?(?:"([^"]*)")?')
_IBQ_PORT = rx.compile(r"^GUID\s+(0x[0-9a-fA-F]+)\s+port\s+(\w+):\s*(.*)$")
_IBQ_VALUE = rx.compile(r"\[(\w+)\s*==\s*(\d+)(?:\s*\([^)]*\))?\]")
_TOOL_ERROR = rx.compile(r"^(?:ibwarn|ibpanic|iberror|\S*perfquery):|\biberror:|can't open UMAD|Permission denied")
_IBQ_SUMMARY = rx.compile(r"^##\s*(\d+) ports checked, (\d+) ports have errors")


@dataclass
class CounterDump:
    """Counters per port read from one text, and which layouts it held."""

    counters: Snapshot = field(default_factory=dict)
    formats: List[str] = field(default_factory=list)  # "sysfs", "perfquery", "ibqueryerrors"
    fabric_ports_checked: Optional[int] = None  # ibqueryerrors' "## N ports checked"
    no_pma: bool = False  # counters that read "N/A (no PMA)"
    errors: List[str] = field(default_factory=list)  # the tools' own error lines (ibwarn, iberror, ...)


def read_counters(text: Optional[str]) -> CounterDump:
    """Counters per port from sysfs ``path:value`` lines or a ``==> path <==`` tree, ``perfquery [-x]`` blocks and
    ``ibqueryerrors`` lines (IBTA names mapped to the sysfs names); never raises.

    Ports are ``dev/port`` for sysfs and for perfquery run with ``-C dev -P port``, ``lid N/port`` for other
    perfquery blocks, and ``GUID/port "node description"`` for ibqueryerrors (which sweeps the fabric: switch
    ports too). A switch's ``port ALL`` line of ibqueryerrors is kept only when no numbered port of it is listed.
    """
    d = CounterDump()
    out = d.counters
    cur = None
    pq_port: Optional[str] = None
    pq_ca: Optional[tuple] = None
    ibq_node: Optional[str] = None
    ibq_all: Dict[str, tuple] = {}  # GUID -> (port key, counters) of its "port ALL" line
    ibq_numbered = set()

    def seen(fmt: str) -> None:
        if fmt not in d.formats:
            d.formats.append(fmt)

    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if "no PMA" in line:
            d.no_pma = True
        if _TOOL_ERROR.search(line) and len(d.errors) < 4:
            d.errors.append(line)
        m = re.match(r"^==> (\S+) <==$", line)
        if m:
            cur = _port_key(m.group(1))
            pq_port = None
            continue
        m = _SYSFS_LINE.match(line)
        if m:
            key, value = _port_key(m.group(1)), m.group(2).strip()
            cur = None
        elif cur is not None:
            key, value = cur, line
            cur = None
        else:
            key = None
        if key is not None:
            if re.fullmatch(r"\d+", value):
                out.setdefault(key[0], {})[key[1]] = int(value)
                seen("sysfs")
            continue
        m = _PQ_COMMAND.search(line)
        if m:
            pq_ca = (m.group(1), m.group(2))
            continue
        m = _PQ_HEADER.match(line)
        if m:
            if pq_ca:
                pq_port = f"{pq_ca[0]}/{pq_ca[1] or m.group(2)}"
                pq_ca = None
            else:
                pq_port = f"lid {m.group(1)}/{m.group(2)}"
            seen("perfquery")
            continue
        if pq_port is not None:
            m = _PQ_LINE.match(line)
            if m:
                name = IBTA_NAMES.get(m.group(1))
                if name and re.fullmatch(r"\d+", m.group(2)):
                    out.setdefault(pq_port, {})[name] = int(m.group(2))
                continue
            pq_port = None
        m = _IBQ_NODE.match(line)
        if m:
            ibq_node = m.group(2) if m.group(2) is not None else m.group(1)
            seen("ibqueryerrors")
            continue
        m = _IBQ_PORT.match(line)
        if m:
            guid, port = m.group(1).lower(), m.group(2)
            key = f"{guid}/{port}" + (f' "{ibq_node}"' if ibq_node and ibq_node != guid else "")
            values = {IBTA_NAMES[n]: int(v) for n, v in _IBQ_VALUE.findall(m.group(3)) if n in IBTA_NAMES}
            if port.upper() == "ALL":
                ibq_all[guid] = (key, values)
            else:
                ibq_numbered.add(guid)
                out.setdefault(key, {}).update(values)
            seen("ibqueryerrors")
            continue
        m = _IBQ_SUMMARY.match(line)
        if m:
            d.fabric_ports_checked = int(m.group(1))
            seen("ibqueryerrors")
    for guid, (key, values) in ibq_all.items():
        if guid not in ibq_numbered:
            out.setdefault(key, {}).update(values)
    return d


def snapshot(text: Optional[str]) -> Snapshot:
    """Counters per port (see :func:`read_counters`); never raises."""
    return read_counters(text).counters


def delta(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> Dict[str, Dict[str, Optional[int]]]:
    """``after - before`` per port and counter, for counters in both; None where a counter went back (reset)."""
    out: Dict[str, Dict[str, Optional[int]]] = {}
    for port, counters in after.items():
        prev = before.get(port)
        if prev is None:
            continue
        d: Dict[str, Optional[int]] = {}
        for name, value in counters.items():
            if name in prev:
                d[name] = value - prev[name] if value >= prev[name] else None
        out[port] = d
    return out


@dataclass
class Flap:
    port: str
    downs: int = 0
    ups: int = 0
    lines: List[str] = field(default_factory=list)


@dataclass
class IbCounterFacts:
    counters: Optional[Snapshot] = None  # None: not collected, or collected and empty
    collected: bool = False  # the ib_counters source is in the raw output (possibly empty)
    formats: List[str] = field(default_factory=list)  # layouts read_counters found ("sysfs", "perfquery", ...)
    fabric_ports_checked: Optional[int] = None  # ibqueryerrors' "## N ports checked"
    no_pma: bool = False
    tool_errors: List[str] = field(default_factory=list)
    flaps: Dict[str, Flap] = field(default_factory=dict)
    module_events: List[str] = field(default_factory=list)
    log_read: Optional[bool] = None
    log_lines: Optional[int] = None
    kmsg: List[kernlog.Event] = field(default_factory=list)  # HCA firmware and initialisation failures (kmsg.toml)
    fabric_links: Optional[List["FabricLink"]] = None  # iblinkinfo's port lines; None: no iblinkinfo output


@dataclass
class FabricLink:
    """One port line of ``iblinkinfo``: the port, its link's width, speed and state, its peer, and the notes
    ``get_msg`` prints where the link is below what both ends support (``Could be 4X``, ``Could be 53.125 Gbps``)."""

    node: str
    port: str
    width: str = ""
    speed: str = ""
    state: str = ""
    phys: str = ""
    remote: str = ""
    notes: str = ""
    line: str = ""

    @property
    def name(self) -> str:
        return f"{self.node} port {self.port}" + (f" -> {self.remote}" if self.remote else "")


# iblinkinfo.c print_port: '%6d %4d[%2s] ==(%s)==>  %6s %4s[%2s] "%s" ( %s %s)', its link string
# '%3s %7s %6s/%8s' (width, speed, state, physical state) for a port whose physical state is LinkUp, else
# '(%3s %9s %6s/%8s)' with width and speed blank; with -l the node's GUID and description lead the line
_LINK_LINE = rx.compile(r"(?:^|\s)(\d{1,6})\s{1,8}(\d{1,4})\[[^\]]{0,8}\]\s{1,8}==\(\s{0,40}"
                        r"(?:(\d{1,2}X)\s{1,20}(\S{1,20}\s{0,2}Gbps|\S{1,12})\s{1,20})?(\w{1,20})/\s{0,12}(\w{1,40})\s{0,8}\)==>"
                        r"(.{0,600})$")
_LINK_NODE = rx.compile(r"^\s{0,40}(?:CA|Switch|Router):\s{1,8}(.{1,300}?):\s{0,8}$")
_LINK_LEAD = rx.compile(r"^\s{0,40}(0x[0-9a-fA-F]{1,16})\s{1,8}\"\s{0,60}([^\"]{0,200})\"")
_LINK_REMOTE = rx.compile(r'"([^"]{0,300})"\s{0,8}\(\s{0,8}(.{0,200}?)\s{0,8}\)\s{0,8}$')


def parse_iblinkinfo(text: str) -> List[FabricLink]:
    """The port lines of an ``iblinkinfo`` output, under the node header above them (or the node a ``-l`` line
    names)."""
    links: List[FabricLink] = []
    node = "?"
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _LINK_NODE.match(line)
        if m:
            node = m.group(1).strip()
            continue
        m = _LINK_LINE.search(line)
        if not m:
            continue
        lead = _LINK_LEAD.match(line)
        here = (lead.group(2).strip() or lead.group(1)) if lead else node
        if not lead and node == "?":
            here = f"lid {m.group(1)}"
        rem = _LINK_REMOTE.search(m.group(7))
        links.append(FabricLink(node=here, port=m.group(2), width=m.group(3) or "", speed=(m.group(4) or "").strip(),
                                state=m.group(5), phys=m.group(6), remote=rem.group(1).strip() if rem else "",
                                notes=rem.group(2).strip() if rem else "", line=line.strip()))
    return links


_IB_LINK = rx.compile(r"(\d{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])\s+(\S+?):\s+Port:\s*(\d+)\s+Link (\w+)")
_NET_LINK = rx.compile(r"(?:^|\s)(\S+?):\s+Link (up|down)\b", re.I)
_CARRIER = rx.compile(r"(?:^|\s)(\S+?):\s+(lost carrier|gained carrier|carrier lost|carrier on|carrier off)", re.I)
# Intel Ethernet drivers and others: "ixgbe 0000:03:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX",
# "igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Down"
_NIC_LINK = rx.compile(r"(?:^|\s)([\w.@-]+?):?\s+NIC Link is (up|down)\b", re.I)


# mlx5's cable module events (Linux drivers/net/ethernet/mellanox/mlx5/core/events.c port_module,
# "Port module event: module %u, %s" with mlx5_pme_status_to_string's "Cable plugged" / "Cable unplugged"):
# "mlx5_core 0000:00:08.0: Port module event: module 1, Cable unplugged". A module unplugged after it was plugged
# is a down of its port like a link's; an unplug before the first plug is the empty cage the driver reports at
# load. The error form ("Port module event[error]: ...") is a kmsg row of its own.
_MODULE = rx.compile(r"(\S{1,100}?):[ \t]{1,20}Port module event: module (\d{1,4}), Cable (plugged|unplugged)\b")


# a line any of the expressions above can match has one of these words (the rest are not read further)
_ANY_LINK = rx.compile(r"link (?:\w)|carrier|Port module event", re.I)


def parse_flaps(log: kernlog.KernelLog) -> tuple:
    flaps: Dict[str, Flap] = {}
    modules: List[str] = []
    candidate = _ANY_LINK.search
    for when, msg in log.lines:
        if not candidate(msg):
            continue
        line = kernlog.short(f"{when} {msg}".strip())
        if "Port module event" in msg:
            modules.append(line)
            m = _MODULE.search(msg)
            if not m:
                continue
            f = flaps.setdefault(f"{m.group(1)} module {m.group(2)}", Flap(f"{m.group(1)} module {m.group(2)}"))
            if m.group(3) == "unplugged":
                if f.ups:
                    f.downs += 1
                    f.lines.append(line)
            else:
                f.ups += 1
            continue
        m = _IB_LINK.search(msg)
        if m:
            port, state = f"{m.group(2)} port {m.group(3)}", m.group(4).upper()
            down = state == "DOWN"
            up = state == "ACTIVE"
        else:
            m = _NET_LINK.search(msg) or _CARRIER.search(msg) or _NIC_LINK.search(msg)
            if not m:
                continue
            port = m.group(1)
            word = m.group(2).lower()
            down = word in ("down", "lost carrier", "carrier lost", "carrier off")
            up = word in ("up", "gained carrier", "carrier on")
        f = flaps.setdefault(port, Flap(port))
        if down:
            if f.ups:  # a down before the first up is the port's bring-up
                f.downs += 1
                f.lines.append(line)
        elif up:
            f.ups += 1
    return flaps, modules


def parse(raw) -> IbCounterFacts:
    f = IbCounterFacts()
    f.collected = raw.get(COUNTERS_SOURCE.name) is not None
    text = section(raw, COUNTERS_SOURCE.name)
    if text is not None:
        dump = read_counters(text)
        f.counters, f.formats, f.fabric_ports_checked = dump.counters, dump.formats, dump.fabric_ports_checked
        f.no_pma, f.tool_errors = dump.no_pma, dump.errors
    log = parsed(raw, kernlog.SOURCE.name, kernlog.parse)
    f.log_read, f.log_lines = log.read, log.total
    f.flaps, f.module_events = parse_flaps(log)
    f.kmsg = kernlog.area_events(log, NAME, "")
    links = section(raw, LINKS_SOURCE.name)
    if links is not None:
        f.fabric_links = parse_iblinkinfo(links)
    return f


def judge(facts: Optional[IbCounterFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "ibcounters.link", "no counter outputs came back")]
    return (_judge_counters(facts, node) + _judge_flaps(facts, node)
            + kernlog.judge_rows(NAME, facts.kmsg, facts.log_read, facts.log_lines) + _judge_fabric_links(facts))


def _judge_fabric_links(facts: IbCounterFacts) -> List[Finding]:
    """ibcounters.fabric_links: iblinkinfo's links. iblinkinfo.c's get_msg prints 'Could be %s' where the width
    or speed a link came up at is not the highest that both its ends' PortInfo support: a link that trained
    narrower or slower than its ports and cable allow (a bad cable or lane, a cable rated below the ports, a speed
    switched off on one end) carries less than the fabric was built for, and NCCL's rings run at its pace
    (**warn**). Ports Down with no peer are shown: a switch's unused ports are Down/Polling on every healthy
    fabric."""
    links = facts.fabric_links
    if links is None:
        return []
    if not links:
        return [skip(NAME, "ibcounters.fabric_links", "iblinkinfo output held no port line")]
    below = [l for l in links if "could be" in l.notes.lower()]
    down = [l for l in links if l.phys.lower() != "linkup"]
    up = [l for l in links if l.state.lower() == "active"]
    unused = f"; {len(down)} port{'s' if len(down) != 1 else ''} down with no peer" if down else ""
    out: List[Finding] = []
    if below:
        shown = [f"{l.name}: {l.width} {l.speed} ({l.notes})" for l in below]
        out.append(warn(NAME, "ibcounters.fabric_links",
                        f"{len(below)} of {len(up)} active fabric links came up below what both ends support: "
                        + "; ".join(shown[:3]) + (f" (+{len(shown) - 3} more)" if len(shown) > 3 else ""),
                        actual={l.name: l.notes for l in below}, expected="the width and speed both ends support",
                        evidence=[l.line for l in below][:8],
                        fix="A link narrower or slower than both its ports support has a cable, transceiver or lane "
                            "fault, or a cable rated below the ports: read the link's negotiated speed, FEC and "
                            "errors (mlxlink -d DEV -m -c, ibdiagnet), check both ends' enabled speeds "
                            "(ibportstate), and reseat or replace the cable."))
    if not out:
        out.append(ok(NAME, "ibcounters.fabric_links",
                      f"{len(up)} fabric link{'s' if len(up) != 1 else ''} Active at the width and speed both ends "
                      f"support{unused}", actual=len(up), expected=0,
                      evidence=[l.line for l in up][:8]))
    return out


def _nonzero(counters: Snapshot, names) -> Dict[str, Dict[str, int]]:
    out = {}
    for port, c in counters.items():
        nz = {n: c[n] for n in names if c.get(n)}
        if nz:
            out[port] = nz
    return out


def _fmt(d: Dict[str, Dict[str, int]]) -> List[str]:
    return [f"{p}: " + ", ".join(f"{n} {v}" for n, v in c.items()) for p, c in d.items()]


def _why_no_counters(facts: IbCounterFacts, node: Optional[NodeFacts]) -> str:
    if not facts.collected:
        return ("IB port counters not collected (source ib_counters: the counters under /sys/class/infiniband/*/ports/*/; "
                "perfquery -x or ibqueryerrors output is read from the same file)")
    if facts.counters is None:
        rdma, why = node_rdma(node)
        if rdma:
            return (f"no port counters under /sys/class/infiniband, though the node has {why}: sysfs is hidden here "
                    "(a container?); save 'perfquery -x' output as ib_counters")
        return "no RDMA ports (nothing under /sys/class/infiniband)"
    if facts.tool_errors:
        return f"could not read the port counters: {facts.tool_errors[-1]}"
    if facts.no_pma:
        return "the port counters read N/A (no PMA): iWARP devices keep no IB port counters"
    return ("could not read the ib_counters output: no port counter in a known layout (sysfs path:value, "
            "'==> path <==' blocks, perfquery, ibqueryerrors)")


def _judge_counters(facts: IbCounterFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    fabric = facts.fabric_ports_checked
    if not facts.counters and not fabric:
        return [skip(NAME, "ibcounters.link", _why_no_counters(facts, node))]
    counters = facts.counters or {}
    formats = facts.formats or ["sysfs"]
    ports = [p for p, c in counters.items() if any(n in c for n in LINK_FATAL + LINK_WARN)]
    since = "since the driver loaded" if formats == ["sysfs"] else "since they were last cleared"
    note = "" if formats == ["sysfs"] else f" ({', '.join(formats)})"
    if "ibqueryerrors" in formats:
        note = note[:-1] + ", fabric-wide: switch ports too)"
    findings: List[Finding] = []
    link_fix = ("Errors since the driver loaded: clear them (perfquery -x -R, or reboot) and run a collective; a port "
                "whose symbol or receive errors grow has a bad cable, transceiver or switch port: reseat or replace the "
                "cable and check the switch side (ibdiagnet). Buffer overruns and link integrity errors are fatal in "
                "NVSentinel's counter design.")
    fatal, warned = _nonzero(counters, LINK_FATAL), _nonzero(counters, LINK_WARN)
    both = {p: dict(fatal.get(p, {}), **warned.get(p, {})) for p in list(fatal) + [p for p in warned if p not in fatal]}
    of = max(len(ports), fabric or 0)
    if both:
        # since-boot totals, not rates: a warning; the rates that NVSentinel fails on need two readings (delta)
        msg = f"link errors counted {since} on {len(both)} of {of} ports{note}: " + "; ".join(_fmt(both)[:3])
        if fatal:
            msg += f" ({', '.join(sorted({n for c in fatal.values() for n in c}))}: fatal in NVSentinel when it grows)"
        findings.append(warn(NAME, "ibcounters.link", msg, actual=both, expected=0, evidence=_fmt(both), fix=link_fix))
    elif ports or fabric:
        findings.append(ok(NAME, "ibcounters.link", f"no link errors on {of} ports{note}", actual=0, expected=0))
    else:
        findings.append(skip(NAME, "ibcounters.link", "no IB link error counters (iWARP or no PMA)"))
    transport = _nonzero(counters, TRANSPORT_WARN)
    hw_ports = [p for p, c in counters.items() if any(n in c for n in TRANSPORT_WARN)]
    if transport:
        findings.append(warn(NAME, "ibcounters.transport", f"retries or lost packets counted on {len(transport)} ports: "
                             + "; ".join(_fmt(transport)[:3]), actual=transport, expected=0, evidence=_fmt(transport),
                             fix="Timeouts and sequence errors on RoCE point at drops in the fabric: check PFC/ECN on the "
                             "NIC (roce area) and the switch, and the link counters of the same port; clear by reloading "
                             "the driver or rebooting, then rerun a collective."))
    elif hw_ports:
        findings.append(ok(NAME, "ibcounters.transport", f"no retries or lost packets on {len(hw_ports)} ports", actual=0, expected=0))
    return findings


def _judge_flaps(facts: IbCounterFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    flap_fail, src = thresholds.value(node, "link_flaps", FLAP_FAIL)
    if facts.log_read is None:
        return [skip(NAME, "ibcounters.link_flaps", "the kernel log was not collected")]
    if facts.log_read is False:
        return [skip(NAME, "ibcounters.link_flaps", "the kernel log is unreadable on this node")]
    flapped = {p: f for p, f in facts.flaps.items() if f.downs}
    if not flapped:
        seen = len(facts.flaps)
        return [ok(NAME, "ibcounters.link_flaps", "no link went down after coming up since boot"
                   + (f" ({seen} links seen coming up)" if seen else ""), actual=0, expected=0,
                   evidence=facts.module_events[-4:])]
    ev = [l for f in flapped.values() for l in f.lines[-3:]]
    actual = {p: f.downs for p, f in flapped.items()}
    msg = ", ".join(f"{p} down {n} times" for p, n in actual.items())
    fix = ("A link that goes down and back is a cable, transceiver or switch port fault: reseat or replace the cable, "
           "check the switch port's counters and logs, and watch 'ibstat' / 'ip link' state.")
    if any(n >= flap_fail for n in actual.values()):
        return [fail(NAME, "ibcounters.link_flaps", f"links flapping since boot: {msg}", actual=actual,
                     expected=f"fewer than {flap_fail}{src}", evidence=ev, fix=fix)]
    return [warn(NAME, "ibcounters.link_flaps", f"links went down since boot: {msg}", actual=actual, expected=0,
                 evidence=ev, fix=fix)]


def summarize(facts: Optional[IbCounterFacts]) -> Dict[str, Optional[str]]:
    return {}
