"""No usable socket interface, or one peers cannot reach: NCCL finds no IP interface for its bootstrap ('Socket
creation failed : Address family not supported by protocol' in a container without networking, 'no socket
interface found', 'No usable listening interface'), or connects to a peer's link-local (fe80::) or container
bridge address and times out. NCCL_SOCKET_IFNAME names the interface to use.

Evidence: those WARNs and connect failures in NCCL's log, or, with no WARN to explain it, an error returned
through NCCL's network transport while its socket transport spreads over several interfaces (``via
NET/Socket/0..N``) (interfaces named by the environment are ``socket-ifname-env``; bootstrap lines listing such
interfaces are ``wrong-interface``).
References: NVIDIA/nccl-tests#14, NVIDIA/nccl#529, NVIDIA/nccl#697; NCCL env docs (NCCL_SOCKET_IFNAME).
"""
from __future__ import annotations

import re
import sys
from typing import List, Tuple

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis.signs import CONNECT, LINK_LOCAL, NO_IFACE

ID = "socket-interface"
TITLE = "No reachable socket interface for NCCL"
FIX = ("Name the data-network interface for NCCL's bootstrap and sockets: NCCL_SOCKET_IFNAME=<iface> (e.g. eth0, "
       "ens5, bond0; '^docker,lo,veth' excludes bridges) and GLOO_SOCKET_IFNAME the same; a container needs a "
       "routable interface (docker run --network host, or a pod network the peers reach).")
CONFIRM = "ip -br addr on each node; NCCL_DEBUG=INFO shows 'Bootstrap : Using <iface>:<address>'"

NET_STEP = re.compile(r"(?:^|/)(?:transport/net(?:_socket)?\.cc|include/net\.h|net\.h)$")


def bootstrap_failures(inp: Inputs) -> List[C.Clue]:
    """Error returns through NCCL's bootstrap (its TCP connections between ranks, on the OOB/bootstrap
    interface), whose WARN is not in the evidence."""
    out = []
    for ls in inp.log_sets():
        for oc in ls.facts.orphan_chains:
            if oc.failed and any(s.file.endswith("bootstrap.cc") for s in oc.steps) and \
                    any(s.file.endswith("socket.cc") for s in oc.steps[:3]):
                out.append(C.Clue("error", oc.steps[0].text, oc.steps[0].at, oc.steps[0].text, oc.at.host))
    return out


def socket_spread(inp: Inputs) -> Tuple[List[C.Clue], List[C.Clue]]:
    """NCCL's socket transport spread over several interfaces (``via NET/Socket/<dev>`` with two devices or more,
    or a ``NET/Socket : Using`` line of two interfaces or more) and a failed return through its network transport,
    in a log with no failure WARN: the clues of the spread, and those of the failure."""
    spread: List[C.Clue] = []
    failed: List[C.Clue] = []
    for ls in inp.log_sets():
        sock = [c for c in ls.facts.channels if (c.net or "").lower() == "socket" and c.net_dev is not None]
        devs = sorted({c.net_dev for c in sock})
        using = [n for n in ls.facts.nets if n.net.lower().startswith("socket") and len(n.devices) > 1]
        if len(devs) < 2 and not using:
            continue
        if any(w.failure for w in ls.facts.warns):
            continue  # a WARN says what failed: the rules of that WARN judge it
        for oc in ls.facts.orphan_chains:
            if oc.failed and any(NET_STEP.search(s.file) for s in oc.steps):
                failed.append(C.Clue("error", oc.steps[0].text, oc.steps[0].at, oc.steps[0].text, oc.at.host))
        if failed:
            spread += [C.Clue("error", n.text, n.at, n.text, n.at.host) for n in using[:1]]
            last = max(sock, key=lambda c: c.net_dev, default=None)
            if last is not None and not using:
                said = f"{last.text}  (NET/Socket devices {', '.join(map(str, devs))}: {len(devs)} interfaces)"
                spread.append(C.Clue("error", said, last.at, said, last.at.host))
    return spread, failed


def diagnose(inp: Inputs) -> List[Diagnosis]:
    if C.env_values(inp, "NCCL_SOCKET_IFNAME"):
        return []  # an interface was named: socket-ifname-env judges it
    none = C.find(inp, NO_IFACE, ("warn", "last-error", "error"))
    link = [c for c in C.find(inp, CONNECT, ("warn", "last-error", "error")) if LINK_LOCAL.search(c.text)]
    found = none + link
    boot = [] if found else bootstrap_failures(inp)
    if boot and not C.find(inp, CONNECT, ("warn", "last-error", "error")):
        nets = [n for ls in inp.log_sets() for n in ls.facts.nets if n.oob is not None][:1]
        oob = [C.Clue("error", n.text, n.at, n.text, n.at.host) for n in nets]
        name = nets[0].oob.name if nets else None
        return [C.make(sys.modules[__name__], "NCCL's bootstrap connections failed" +
                       (f" on its OOB interface {name}" if name else "") + C.on(C.hosts(boot)), boot + oob,
                       confidence="medium",
                       why=("socket errors came back through NCCL's bootstrap: the interface it uses between ranks "
                            "does not connect them"),
                       alternatives=["firewall_ports: the bootstrap ports blocked between the nodes",
                                     "rendezvous_unreachable: the root rank's address itself unreachable"])]
    if not found and not C.find(inp, CONNECT, ("warn", "last-error", "error")):
        spread, failed = socket_spread(inp)
        if spread and failed:
            return [C.make(sys.modules[__name__], "NCCL's socket transport spread over several interfaces and its "
                           "connections failed" + C.on(C.hosts(failed)), spread + failed, confidence="medium",
                           why=("with no NCCL_SOCKET_IFNAME NCCL uses every interface it finds (container bridges, "
                                "veth and link-local addresses included), and an error came back through its network "
                                "transport: an interface that does not reach the peer node"),
                           alternatives=["firewall_ports: the ports blocked between the nodes on the data interface"])]
    if not found:
        return []
    what = ("NCCL found no usable IP interface for its bootstrap" if none else
            "NCCL connected to a peer's link-local or virtual interface address and timed out")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)), found, confidence="high",
                   why=("NCCL itself said it found no interface it can use" if none else
                        "a link-local (fe80::) or container bridge address is not reachable from other hosts"))]
