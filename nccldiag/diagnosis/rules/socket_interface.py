"""No usable socket interface, or one peers cannot reach: NCCL finds no IP interface for its bootstrap ('Socket
creation failed : Address family not supported by protocol' in a container without networking, 'no socket
interface found', 'No usable listening interface'), or connects to a peer's link-local (fe80::, 169.254.0.0/16)
or container bridge address and fails (times out, is refused or aborted). NCCL_SOCKET_IFNAME names the interface
to use.

Evidence: those WARNs and connect failures in NCCL's log, or, with no WARN to explain it, an error returned
through NCCL's network transport while its socket transport spreads over several interfaces (``via
NET/Socket/0..N``) (interfaces named by the environment are ``socket-ifname-env``; bootstrap lines listing such
interfaces are ``wrong-interface``); a connect to a routable peer address that the node's own stack would not
send ('Network is unreachable', 'Software caused connection abort': no route from this node's interfaces to that
network) names the address, and, where NCCL's lines give the node's own addresses, whether the peer's is in
another subnet (a peer that published the address of a network this node is not on: the interfaces differ
between the nodes); a peer on the node's own subnet is not this cause (the route is there: a peer that died aborts
connections too); a connect answered 'No route to host' (EHOSTUNREACH) toward a peer not shown on the node's own
subnet, whatever NCCL_SOCKET_IFNAME says (:func:`signs.unrouted_connects`; on the node's own subnet it is a
firewall's REJECT, ``firewall``, unless that subnet is an IPoIB interface's, whose neighbours answer through the
InfiniBand fabric). Beside another failure it comes after it.
References: NVIDIA/nccl-tests#14, NVIDIA/nccl#529, NVIDIA/nccl#697; NCCL env docs (NCCL_SOCKET_IFNAME).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.signs import CONNECT, LINK_LOCAL, NO_IFACE

ID = "socket-interface"
TITLE = "No reachable socket interface for NCCL"
FIX = ("Name the data-network interface for NCCL's bootstrap and sockets: NCCL_SOCKET_IFNAME=<iface> (e.g. eth0, "
       "ens5, bond0; '^docker,lo,veth' excludes bridges) and GLOO_SOCKET_IFNAME the same; a container needs a "
       "routable interface (docker run --network host, or a pod network the peers reach).")
# where the route between the nodes is the question: the interfaces and routes of both nodes compared
ROUTE_FIX = FIX + (" Compare 'ip -br addr' and 'ip route get <peer address>' on both nodes, and pass the same "
                   "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME to every node (containers included).")
CONFIRM = "ip -br addr on each node; NCCL_DEBUG=INFO shows 'Bootstrap : Using <iface>:<address>'"

NET_STEP = rx.compile(r"(?:^|/)(?:transport/net(?:_socket)?\.cc|include/net\.h|net\.h)$")
# NCCL's bootstrap and socket code, by the file names of every release: bootstrap.cc (bootstrap.cu up to 2.3), the
# socket calls in misc/socket.cc (include/socket.h before 2.12, and the socket transport's net_socket.cu that
# NCCL 2.3's bootstrap went through)
BOOTSTRAP_STEP = rx.compile(r"(?:^|/)bootstrap\.c[cu]$")
SOCKET_STEP = rx.compile(r"socket\.(?:cc|h|cu)$")


def bootstrap_failures(inp: Inputs) -> List[C.Clue]:
    """Error returns through NCCL's bootstrap (its TCP connections between ranks, on the OOB/bootstrap
    interface), whose WARN is not in the evidence."""
    out = []
    for ls in inp.log_sets():
        for oc in ls.facts.orphan_chains:
            if oc.failed and any(BOOTSTRAP_STEP.search(s.file) for s in oc.steps) and \
                    any(SOCKET_STEP.search(s.file) for s in oc.steps[:3]):
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
        return _unrouted(inp)  # an interface was named: socket-ifname-env judges the rest
    # NCCL's words read anywhere, the lexicon's lines too: 'Bootstrap : no socket interface found' quoted by PyTorch
    # under a 'Last error:' that a paste parted from it
    none = C.find(inp, NO_IFACE, ("warn", "last-error", "error", "failure"))
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
        return _no_path(inp) or _unrouted(inp)
    what = ("NCCL found no usable IP interface for its bootstrap" if none else
            "NCCL's connection to a peer's link-local or virtual interface address failed")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)), found, confidence="high",
                   why=("NCCL itself said it found no interface it can use" if none else
                        "a link-local address (fe80::, 169.254.x.x) or a container bridge's is not reachable from "
                        "other hosts"))]


_OTHER_FAILURE = rx.compile(r"[Ss]ocket|[Pp]roxy|[Bb]ootstrap|Connect|connection|remote peer")


def _no_path(inp: Inputs) -> List[Diagnosis]:
    """Connects the node's own stack would not send (:func:`signs.no_path_connects`), with the node's own
    addresses as NCCL printed them where they are."""
    found = signs.no_path_connects(inp)
    if not found:
        return []
    m = signs.PEER.search(found[0].text)
    peer = m.group("addr") if m else "?"
    own = signs.own_addresses(inp, found[0].host)
    apart = signs.apart(peer, [a for _, a in own])
    if apart is False:
        return []  # the peer is on a subnet of the node's own interfaces: the route is there (a peer that died aborts)
    reason = re.search(signs.NO_PATH, found[0].text).group(0)
    summary = (f"NCCL's connection to {peer} failed in the node's own stack ({reason}){C.on(C.hosts(found))}: "
               f"the address NCCL chose is not reached through this node's interfaces")
    if own and apart:
        summary += (f"; it is in another subnet than the node's own ({', '.join(f'{n} {a}' for n, a in own[:3])}, "
                    "compared as /24: NCCL prints no prefix length)")
    others = [w for ls in inp.log_sets() for w in ls.facts.warns
              if w.failure and not _OTHER_FAILURE.search(w.message)]
    d = C.make(sys.modules[__name__], summary, found,
               confidence="high" if own and apart and not others else "medium",
               why=("the node's TCP stack answered the connect itself (no route to that network, or the connection "
                    "aborted on this side) toward a routable address: an interface NCCL picked, on this node or on "
                    "the peer that published the address, that does not join the two"),
               alternatives=["firewall_ports: a REJECT rule answering with a network-unreachable ICMP",
                             "remote_peer_failure: the peer process died while the connection was being made "
                             "(another failure in the log comes first then)"],
               fix=ROUTE_FIX)
    if others:
        d.tier = 1
    return [d]


def _unrouted(inp: Inputs) -> List[Diagnosis]:
    """Connects answered 'No route to host' toward a peer not shown on the node's own subnet
    (:func:`signs.unrouted_connects`)."""
    found = signs.unrouted_connects(inp)
    if not found:
        return []
    m = signs.PEER.search(found[0].text)
    peer = m.group("addr") if m else "?"
    own = signs.own_addresses(inp, found[0].host)
    summary = f"NCCL's connection to {peer} found no route to the host{C.on(C.hosts(found))}"
    ipoib = signs.ipoib_peer(peer, own)
    if ipoib:
        summary += (f": the peer is on the subnet of this node's IPoIB interface {ipoib[0]} {ipoib[1]}, whose "
                    "neighbours are reached through the InfiniBand fabric, and it did not answer there")
    elif own:
        summary += (f": the peer is in another subnet than this node's own ({', '.join(f'{n} {a}' for n, a in own[:3])}"
                    ", compared as /24: NCCL prints no prefix length)")
    else:
        summary += ": the interface NCCL chose does not reach the peer's address"
    return [C.make(sys.modules[__name__], summary, found, confidence="high" if own and not ipoib else "medium",
                   why=("'No route to host' (EHOSTUNREACH) is the answer of routing, not of a closed port: no route "
                        "from the interface NCCL picked (on this node, or on the peer that published the address) to "
                        "the peer's network, or no neighbour answering on it"),
                   alternatives=["firewall_ports: a REJECT rule with icmp-host-prohibited (firewalld's default) "
                                 "answers the same; where 'ip route get <peer address>' finds the route and the peer "
                                 "answers ping, open the ports instead",
                                 "remote_peer_failure: the peer node went down"],
                   fix=ROUTE_FIX)]
