"""The MTU differing between the two ends of an RDMA connection. NCCL 2.20.3 and later stopped lowering a QP's
path MTU to the smaller of the two ports', so a node whose port runs a larger MTU than its peer's sends packets
the peer's QP cannot take: the HCA raises 'local access violation work queue error' (IBV_EVENT_QP_ACCESS_ERR)
or completes receives with a local length error (status 1), and the work requests behind them flush (status 5).

Evidence: those asynchronous events or length errors in NCCL's log (medium: an access violation can also come
from a plugin or firmware defect, so the ports' MTUs confirm it); Active IB/RoCE ports of one link layer whose
active MTU differs between the nodes of a check (warn), or that beside those log errors (high).
References: NVIDIA/nccl#1524 ('My 2 servers were misconfigured with different MTU. After correct this, it
works.'); NVIDIA/nccl#2135 (IB MTU mismatch causing a hang and IBV_WC_LOC_LEN_ERR).
"""
from __future__ import annotations

import re
import sys
from typing import Dict, List, Tuple

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "mtu-mismatch"
TITLE = "MTU differing between the ends of an RDMA connection"
FIX = ("Give every port of the fabric the same MTU: IB, the subnet manager's MTU for the partition and the HCA "
       "port's; RoCE, the netdev MTU on every node and switch port (4200 for an active MTU of 4096, 'ip link set "
       "<dev> mtu 4200'), the same on all nodes.")
WORKAROUND = "NCCL_IB_DISABLE=1 (sockets) until the MTUs agree; an NCCL before 2.20.3 also negotiates the smaller MTU"
CONFIRM = "ibv_devinfo | grep -e hca_id -e active_mtu on every node; ip link show <netdev> for RoCE"

# IBV_EVENT_QP_ACCESS_ERR as NCCL prints it ('Got async event : ...', 'async fatal event on QP (...): ...')
ACCESS = re.compile(r"async (?:fatal )?event\b[^\n]{0,300}?local access violation work queue error|IBV_EVENT_QP_ACCESS_ERR")


def port_mtus(inp: Inputs) -> Dict[Tuple[str, int], Dict[str, List[str]]]:
    """Active ports' MTUs per (link layer, MTU) -> host -> ports, from the ``ib`` area of a check."""
    out: Dict[Tuple[str, int], Dict[str, List[str]]] = {}
    for h in inp.hosts:
        facts = inp.facts(h, "ib")
        for p in getattr(facts, "ports", None) or []:
            if getattr(p, "active", False) and getattr(p, "mtu", None):
                out.setdefault((p.link_layer or "", p.mtu), {}).setdefault(h, []).append(f"{p.device}:{p.port}")
    return out


def differing(inp: Inputs) -> List[Evidence]:
    """One line per MTU where Active ports of one link layer disagree across the nodes."""
    by_layer: Dict[str, Dict[int, Dict[str, List[str]]]] = {}
    for (layer, mtu), hosts in port_mtus(inp).items():
        by_layer.setdefault(layer, {})[mtu] = hosts
    out: List[Evidence] = []
    for layer, mtus in by_layer.items():
        if len(mtus) < 2:
            continue
        for mtu, hosts in sorted(mtus.items()):
            names = ", ".join(f"{h} ({', '.join(ps[:2])})" for h, ps in sorted(hosts.items())[:4])
            out.append(Evidence("node", f"active MTU {mtu} on {layer or 'RDMA'} ports of {names}", ref="ib.ports"))
    return out


def diagnose(inp: Inputs) -> List[Diagnosis]:
    events = C.find(inp, ACCESS, ("warn", "last-error", "error"))
    length = [c.clue for c in ibverbs.completions(inp) if c.status == 1]
    nodes = differing(inp)
    found = events + length
    if not found and not nodes:
        return []
    if found:
        conf = "high" if nodes else "medium"
        why = ("the HCA rejected packets on the receive side (QP access violation or local length error), what "
               "two ports with different MTUs produce since NCCL 2.20.3 stopped negotiating the smaller one")
        what = "RDMA packets the receiving QP cannot take: the ports' MTUs likely differ between the nodes"
        alternatives = ["a network plugin or HCA firmware defect raises the same access violation: if the MTUs "
                        "agree, compare NCCL's internal IB with the plugin (NCCL_NET_PLUGIN=none) and the firmware"]
        return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)), found, confidence=conf, why=why,
                       extra=nodes, alternatives=alternatives,
                       missing=[] if nodes else ["ibv_devinfo of every node (active_mtu per port)"])]
    return [C.make(sys.modules[__name__], "Active RDMA ports run different MTUs on different nodes", (),
                   confidence="medium", severity="warn", extra=nodes, nodes=sorted(
                       {h for hosts in port_mtus(inp).values() for h in hosts}),
                   why="NCCL 2.20.3 and later use each port's own MTU: a connection between ports whose MTUs "
                       "differ fails with access violations or hangs")]
