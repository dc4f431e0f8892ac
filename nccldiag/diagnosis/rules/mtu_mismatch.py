"""The MTU differing between the two ends of an RDMA connection. NCCL 2.20.3 and later stopped lowering a QP's
path MTU to the smaller of the two ports', so a node whose port runs a larger MTU than its peer's sends packets
the peer's QP cannot take: the HCA raises 'local access violation work queue error' (IBV_EVENT_QP_ACCESS_ERR)
or completes receives with a local length error (status 1), and the work requests behind them flush (status 5).

Evidence: those asynchronous events or length errors in NCCL's log (medium: an access violation can also come
from a plugin or firmware defect, so the ports' MTUs confirm it); Active IB/RoCE ports of one link layer whose
active MTU differs between the nodes of a check (warn), or that beside those log errors (high).
Also an RDMA test that asks its queue pairs for a path MTU above the port's active MTU: a pingpong example or
perftest typed with '-m 4096' (or --mtu=) where the pasted ibv_devinfo (or ibstat) shows the port Active at a smaller
MTU (RoCE derives it from the netdev's MTU: 1024 under an Ethernet MTU of 1500): the first message larger than the
path takes is never acknowledged and the sender's completion fails with 'transport retry counter exceeded (12)'
(high, beside such a failure; tests/cases/net-blogs49-live4thee-roce-srq-pingpong-path-mtu-4096-over-active-1024-retry-exceeded,
the author's fix: the QP's path_mtu set to the active 1024; rdma-core libibverbs/examples/*_pingpong.c '-m, --mtu').
References: NVIDIA/nccl#1524 ('My 2 servers were misconfigured with different MTU. After correct this, it
works.'); NVIDIA/nccl#2135 (IB MTU mismatch causing a hang and IBV_WC_LOC_LEN_ERR).
"""
from __future__ import annotations

import re
import sys
from typing import Dict, List, Tuple

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence
from nccldiag.nccl.facts import Loc

ID = "mtu-mismatch"
TITLE = "MTU differing between the ends of an RDMA connection"
FIX = ("Give every port of the fabric the same MTU: IB, the subnet manager's MTU for the partition and the HCA "
       "port's; RoCE, the netdev MTU on every node and switch port (4200 for an active MTU of 4096, 'ip link set "
       "<dev> mtu 4200'), the same on all nodes.")
WORKAROUND = "NCCL_IB_DISABLE=1 (sockets) until the MTUs agree; an NCCL before 2.20.3 also negotiates the smaller MTU"
CONFIRM = "ibv_devinfo | grep -e hca_id -e active_mtu on every node; ip link show <netdev> for RoCE"

# IBV_EVENT_QP_ACCESS_ERR as NCCL prints it ('Got async event : ...', 'async fatal event on QP (...): ...')
ACCESS = rx.compile(r"async (?:fatal )?event\b[^\n]{0,300}?local access violation work queue error|IBV_EVENT_QP_ACCESS_ERR")


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


# a completion that failed for want of an acknowledgement (the pingpong examples' 'Failed status ... (12)', verbs'
# IBV_WC_RETRY_EXC_ERR by its string), or perftest's 'Completion with error'
NO_ACK = rx.compile(r"transport retry counter exceeded|IBV_WC_RETRY_EXC_ERR|Completion with error")


def test_mtu_above_port(inp: Inputs) -> Tuple[List[C.Clue], List[Evidence]]:
    """RDMA tests typed with a path MTU ('-m') above the active MTU of every Active port pasted beside them (of the
    device the command names with -d, where it names one): the commands, and the ports' lines."""
    pasted = inp.pasted
    asked = list(getattr(pasted, "rdma_test_mtu", None) or [])
    if not asked:
        return [], []
    ports = [p for facts in pasted.facts.values() for p in getattr(facts.get("ib"), "ports", None) or []
             if getattr(p, "active", False) and getattr(p, "mtu", None)]
    clues: List[C.Clue] = []
    shown: List[Evidence] = []
    for line, mtu in asked:
        dev = re.search(r"[ \t](?:-d[ \t]{0,2}|--ib-dev[= ])(\S{1,64})", line.text)
        mine = [p for p in ports if not dev or p.device == dev.group(1)]
        if mine and all(p.mtu < mtu for p in mine):
            clues.append(C.Clue("error", line.text, Loc(line.path, line.lineno, line.host), line.text, line.host))
            for p in mine[:2]:
                ev = Evidence("node", f"{p.device} port {p.port}: Active, active MTU {p.mtu}"
                                      f"{' (' + p.link_layer + ')' if p.link_layer else ''}, below the {mtu} asked",
                              ref="ib.ports")
                if all(e.text != ev.text for e in shown):
                    shown.append(ev)
    return clues, shown


def diagnose(inp: Inputs) -> List[Diagnosis]:
    asked, ports = test_mtu_above_port(inp)
    if asked:
        failed = C.find(inp, NO_ACK, ("warn", "last-error", "error", "app"))
        if failed:
            return [C.make(sys.modules[__name__], "an RDMA test asked a path MTU above its port's active MTU"
                           + C.on(C.hosts(asked + failed)), failed + asked, confidence="high", extra=ports,
                           why=("the test moved its queue pairs to RTR with a path MTU ('-m') larger than the port's "
                                "active MTU: packets of that size are not acknowledged, and the sender's retries run "
                                "out (transport retry counter exceeded)"),
                           fix=("Ask the port's active MTU ('-m' as ibv_devinfo's active_mtu, or leave the option out: "
                                "the pingpong examples default to 1024), or raise the port's MTU: on RoCE the netdev's "
                                "('ip link set <dev> mtu 4200' on every node and switch port gives an active MTU of "
                                "4096)."),
                           workaround="the test's default path MTU (no '-m'), or '-m' at the port's active MTU",
                           alternatives=["ib_completion_error: a retry-exceeded error with the MTUs in order is the "
                                         "path or the peer (GID index on RoCE, routing)"])]
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
