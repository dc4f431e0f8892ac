"""One peer refusing the connections while no other fails: that peer is broken, not the network between the nodes.
A refusal is the peer host's own TCP reset: the host is up and reachable, but nothing listens on the port NCCL
connects to, because the peer rank died (or never reached its bootstrap) or its node's network stack is broken.
A firewall blocks the path to every peer behind it alike and mostly drops (a timeout) or rejects with 'No route
to host' (firewalld's icmp-host-prohibited); the refusals of one peer among several are that peer's.

Evidence: NCCL's failed connects ('Connect to <addr><port> failed : Connection refused') that all name one
routable peer address, with no other failed connection in the evidence.
References: connect(2) ECONNREFUSED ("no-one listening on the remote address"); firewalld's default reject
(icmp-host-prohibited); NCCL troubleshooting guide (a peer rank that died).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "peer-refused"
TITLE = "A peer refused the connection: its rank or its node is broken"
FIX = ("Look at the peer named, not at this rank or the network: find its node ('getent hosts <address>', "
       "'nslookup <address>'), read that rank's own log for its first error, the node's kernel log (dmesg -T: OOM "
       "killer, Xid, link down) and 'nccldiag check' it; drain it if it is broken and restart the job without it.")
CONFIRM = "getent hosts <peer address>; on that node: nccldiag check; dmesg -T around the time of the error"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    peer = signs.refusing_peer(inp)
    if peer is None:
        return []
    found = signs.failed_connects(inp)
    return [C.make(sys.modules[__name__], f"the peer {peer} refused the connections{C.on(C.hosts(found))}: nothing "
                   "listens there, its rank died or its node is broken", found, confidence="medium",
                   why="every failed connection names one peer, and it refused (its host answered with a reset): a "
                       "peer whose process is not listening, while no other peer failed",
                   alternatives=["firewall_ports: a REJECT rule answering with a reset on that node alone; "
                                 "'nc -zv <peer> <port>' from another node while the job runs tells",
                                 "rendezvous_unreachable: the peer is the rendezvous host and was not started"])]
