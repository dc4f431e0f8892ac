"""What RDMA errors say, read from any text: ibv_* call failures with their errno, work-completion statuses
(ibv_wc_status), asynchronous events. Shared by the IB cause rules (pure)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs

ERRNO = {"Operation not permitted": 1, "No such file or directory": 2, "Resource temporarily unavailable": 11,
         "Cannot allocate memory": 12, "Bad address": 14, "No such device": 19, "Invalid argument": 22,
         "No data available": 61, "Operation not supported": 95, "Network is unreachable": 101,
         "Connection timed out": 110, "No route to host": 113}
# ibv_wc_status
WC = {1: "local length error", 2: "local QP operation error", 4: "local protection error", 5: "work request flushed",
      8: "local access error", 9: "remote invalid request", 10: "remote access error", 11: "remote operation error",
      12: "transport retry counter exceeded", 13: "RNR retry counter exceeded", 19: "fatal error",
      20: "response timeout", 21: "general error"}
_CALL = rx.compile(r"Call to (?P<fn>ibv_\w+|mlx5dv_\w+) failed(?: with (?:error )?(?P<rest>.*))?")
# A bare 'status=N' is a completion's status, except systemd's exit status of a unit's process ('code=exited,
# status=1/FAILURE', 'status=203/EXEC', 'code=exited, status=10') and Slurm's exit status and signal of a prolog or
# an epilog ('[job 1537] prolog failed status=126:0', src/slurmd/slurmd/req.c) or of a task prolog or epilog
# ('TaskProlog failed status=1', src/slurmd/slurmstepd/task.c and mgr.c), which are no RDMA completion
_WC = rx.compile(r"Got completion(?: from peer \S+)? with (?:error|status)\s*=?\s*(?P<a>\d+)|"
                 r"(?<!code=exited, )(?<!code=killed, )(?<!code=dumped, )(?<!log failed )"
                 r"\bstatus=(?P<b>\d+)(?![\d/:])|"
                 r"completion (?:with )?error (?P<c>\d+)|IBV_WC_(?P<name>[A-Z_]{1,40}?)_ERR")
_WC_NAMES = {"LOC_PROT": 4, "WR_FLUSH": 5, "REM_ACCESS": 10, "REM_OP": 11, "RETRY_EXC": 12, "RNR_RETRY_EXC": 13,
             "LOC_LEN": 1, "LOC_QP_OP": 2, "LOC_ACCESS": 8, "REM_INV_REQ": 9, "FATAL": 19, "RESP_TIMEOUT": 20}
_VENDOR = rx.compile(r"vendor err (?P<v>\w+)")
# NCCL's net_ib.cc and the IB plugin's ib_plugin.c append ' localGid <gid>' and ' remoteGids<gid>' to a failed
# completion's WARN when the port's link layer is Ethernet (Mellanox/nccl-rdma-sharp-plugins src/ib_plugin.c at
# 728d4e8, ncclIbTest: 'if (... link_layer == IBV_LINK_LAYER_ETHERNET)'). A GID is read as the whole token, so that one
# a poster anonymised ('::ffff:x.x.x.x', '::ffff:<IP>') keeps its form (IPv4-mapped, link-local)
_GIDS = rx.compile(r"\blocalGid (?P<l>[^\s,;]{2,60})(?:\s+remoteGids?\s?(?P<r>[^\s,;]{2,60}))?")


@dataclass
class IbvCall:
    fn: str
    errno: Optional[int]
    clue: C.Clue


@dataclass
class Completion:
    status: int
    vendor: Optional[str]
    clue: C.Clue
    local_gid: Optional[str] = None   # ' localGid <gid>': printed only for an Ethernet (RoCE) link layer
    remote_gid: Optional[str] = None  # ' remoteGids<gid>' (' remoteGid <gid>' in some releases)

    @property
    def link_local(self) -> bool:
        """Whether the failed queue pair ran on an IPv6 link-local GID (fe80::/10, a port's MAC-derived entry)."""
        return any(g and g.lower().startswith("fe80:") for g in (self.local_gid, self.remote_gid))


def errno_of(rest: str) -> Optional[int]:
    m = re.search(r"errno (\d+)", rest) or re.match(r"(\d+)\b", rest.lstrip())
    if m:
        return int(m.group(1))
    for name, num in ERRNO.items():
        if name.lower() in rest.lower():
            return num
    return None


def calls(inp: Inputs) -> List[IbvCall]:
    out = []
    for c in C.find(inp, _CALL, ("warn", "last-error", "error")):
        m = _CALL.search(c.text)
        out.append(IbvCall(m.group("fn"), errno_of(m.group("rest") or ""), c))
    return out


def completions(inp: Inputs) -> List[Completion]:
    out = []
    for c in C.find(inp, _WC, ("warn", "last-error", "error")):
        m = _WC.search(c.text)
        st = m.group("a") or m.group("b") or m.group("c")
        status = int(st) if st else _WC_NAMES.get(m.group("name") or "", 21)
        v = _VENDOR.search(c.text)
        g = _GIDS.search(c.text)
        out.append(Completion(status, v.group("v") if v else None, c,
                              g.group("l") if g else None, g.group("r") if g else None))
    return out


# NCCL's 'Got async event : port error' (NCCL 2.2x: 'Got async error event: port error')
PORT_EVENT = rx.compile(r"async (?:error )?event\s{0,4}:\s{0,4}(?:port error|port [^\n]{0,40}down)|IBV_EVENT_PORT_ERR|"
                        r"Port (?:\d+ )?(?:state )?changed? to (?:DOWN|INIT)")
# The HCA itself in a fatal state (IBV_EVENT_DEVICE_FATAL, which NCCL prints as 'local catastrophic error'): every
# port and queue pair of the device is gone until the device is reset
DEVICE_FATAL = rx.compile(r"async (?:error )?event\s{0,4}:\s{0,4}local catastrophic error|IBV_EVENT_DEVICE_FATAL")


def port_events(inp: Inputs) -> List[C.Clue]:
    """Port errors and port-down events; a device in a fatal state counts too (its ports are gone)."""
    return C.find(inp, PORT_EVENT, ("warn", "last-error", "error", "kernel")) + device_fatal(inp)


def device_fatal(inp: Inputs) -> List[C.Clue]:
    return C.find(inp, DEVICE_FATAL, ("warn", "last-error", "error", "kernel"))


# IBV_EVENT_GID_CHANGE, which NCCL prints as 'Got async event : GID table change'
GID_CHANGE = rx.compile(r"async (?:error )?event\s{0,4}:\s{0,4}GID table change|IBV_EVENT_GID_CHANGE")


def roce(inp: Inputs) -> bool:
    """Whether NCCL's IB devices are RoCE ports (its 'NET/IB : Using [0]mlx5_0:1/RoCE' lines)."""
    return any(d.link == "RoCE" for ls in inp.log_sets() for n in ls.facts.nets for d in n.devices)


def roce_only(inp: Inputs) -> bool:
    """Whether NCCL's IB devices are all RoCE ports: no InfiniBand port among them."""
    links = [d.link for ls in inp.log_sets() for n in ls.facts.nets for d in n.devices]
    return bool(links) and all(link == "RoCE" for link in links)
