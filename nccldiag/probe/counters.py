"""A node's error counters around a run (pure): the sh that reads them, its parser, what grew.

A probe setting keeps a snapshot on each node before its launch and reads the
counters again after the reap (:func:`counters_before`, :func:`counters_after`,
:func:`counter_deltas`); ``nccldiag isolate`` reads them around each round
(:func:`counters_command`, :func:`parse_counters`, :func:`counter_delta`) and
weighs a slow job's retransmitted share (:func:`retrans_ratio`).
"""
from __future__ import annotations

import shlex
from typing import Dict, Iterable, Mapping, Optional

# Fewer TCP segments sent than this tell nothing about loss: a job that failed before moving data.
MIN_SEGMENTS = 500


def counters_command() -> str:
    """sh printing the TCP segment counters, every interface's error and drop counters, and the
    InfiniBand/RoCE ports' counters (the ibcounters area's own source; read-only)."""
    from nccldiag.areas.ibcounters import COUNTERS_SOURCE

    return ("awk '/^Tcp:/ {n++; if (n == 1) for (i = 1; i <= NF; i++) h[i] = $i; "
            "else for (i = 1; i <= NF; i++) if (h[i] == \"OutSegs\" || h[i] == \"RetransSegs\") print \"tcp\", h[i], $i}' "
            "/proc/net/snmp 2>/dev/null; "
            "for d in /sys/class/net/*/statistics; do i=${d%/statistics}; i=${i##*/}; "
            "for c in rx_errors tx_errors rx_dropped tx_dropped; do "
            "[ -r \"$d/$c\" ] && printf 'if %s %s %s\\n' \"$i\" \"$c\" \"$(cat \"$d/$c\")\"; done; done; "
            f"( R=; {COUNTERS_SOURCE.command} ); true")


def parse_counters(text: str) -> Dict[str, int]:
    """``tcp OutSegs 5`` / ``if eth0 rx_errors 0`` lines -> ``{"tcp.OutSegs": 5, "eth0.rx_errors": 0}``;
    an IB/RoCE port's error counters (``.../ports/1/counters/symbol_error:0``) -> ``{"ib.mlx5_0/1.symbol_error": 0}``.

    Only the ports' error counters are kept (those the ibcounters area judges):
    traffic counters grow in every healthy run.
    """
    from nccldiag.areas import ibcounters

    out: Dict[str, int] = {}
    errors = set(ibcounters.LINK_FATAL + ibcounters.LINK_WARN + ibcounters.TRANSPORT_WARN)
    ib_lines = [l for l in (text or "").splitlines() if l.startswith("/")]
    for port, counters in ibcounters.snapshot("\n".join(ib_lines)).items():
        for name, value in counters.items():
            if name in errors:
                out[f"ib.{port}.{name}"] = value
    for line in (text or "").splitlines():
        parts = line.split()
        try:
            if len(parts) == 3 and parts[0] == "tcp":
                out[f"tcp.{parts[1]}"] = int(parts[2])
            elif len(parts) == 4 and parts[0] == "if":
                out[f"{parts[1]}.{parts[2]}"] = int(parts[3])
        except ValueError:
            continue
    return out


def counter_delta(before: Mapping[str, int], after: Mapping[str, int]) -> Dict[str, int]:
    """What grew between two snapshots (keys in both; a counter that went back, a reset, is left out)."""
    return {k: after[k] - before[k] for k in sorted(before) if k in after and after[k] > before[k]}


def retrans_ratio(deltas: Iterable[Mapping[str, int]]) -> Optional[float]:
    """Retransmitted share of the TCP segments the given nodes sent, or None without data.

    None too below :data:`MIN_SEGMENTS`: a job that failed before moving data
    sends a handful of segments, and one retransmitted SYN is no lossy link.
    """
    out = retr = 0
    seen = False
    for d in deltas:
        if "tcp.OutSegs" in d or "tcp.RetransSegs" in d:
            seen = True
        out += d.get("tcp.OutSegs", 0)
        retr += d.get("tcp.RetransSegs", 0)
    if not seen or out < MIN_SEGMENTS:
        return None
    return retr / out


def error_counters(delta: Mapping[str, int]) -> Dict[str, int]:
    """The interface error and drop counters that moved (``eth0.rx_errors``: 3), loopback left out."""
    return {k: v for k, v in delta.items() if not k.startswith(("tcp.", "lo.")) and v > 0}


COUNTERS_BEFORE = "counters.before"


def counters_before(setting_dir: str) -> str:
    """sh that keeps a node's error counters in the setting's directory, before its launch (no output)."""
    return f"( {counters_command()} ) > {shlex.quote(setting_dir + '/' + COUNTERS_BEFORE)} 2>/dev/null; "


def counters_after(setting_dir: str) -> str:
    """sh printing the snapshot kept before the launch, a mark, and the counters now (run after the reap)."""
    return (f"cat {shlex.quote(setting_dir + '/' + COUNTERS_BEFORE)} 2>/dev/null && "
            f"{{ echo {_COUNTERS_MARK}; {counters_command()}; }}; true")


_COUNTERS_MARK = "@@nccldiag-counters-now@@"


def counter_deltas(after: Dict[str, str]) -> Dict[str, Dict[str, int]]:
    """What each node's counters did during a setting, from :func:`counters_after`'s output per node.

    A node that kept no snapshot (it launched nothing, as the other nodes
    under mpirun) or could not be reached is left out.
    """
    out: Dict[str, Dict[str, int]] = {}
    for host, text in after.items():
        if _COUNTERS_MARK not in (text or ""):
            continue
        before, _, now = text.partition(_COUNTERS_MARK)
        out[host] = counter_delta(parse_counters(before), parse_counters(now))
    return out
