"""Ports blocked between nodes: NCCL's bootstrap or socket connections to a routable peer address are refused
('Connection refused'), unreachable ('No route to host', what an iptables REJECT answers, where the peer is shown
on the node's own subnet and that subnet is not an IPoIB interface's) or time out (a DROP, a security group
without the port range), while the address itself is right. 'No route to host' toward a peer not shown on the
node's own subnet, or on an IPoIB interface's, is ``socket-interface``.

Evidence: socket connect failures in NCCL's log to a routable address (to link-local or container addresses they
are ``socket-interface``). One peer that refuses while no other fails is a broken peer (``peer-refused``, which
explains this).
References: NCCL troubleshooting guide (firewalls: NCCL uses random ports, NCCL_SOCKET_PORT ranges); AWS EFA docs
(the security group must allow all traffic between members).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "firewall"
TITLE = "Connections between nodes blocked"
FIX = ("Open TCP between the job's nodes on their data interface: NCCL's bootstrap and socket transport use random "
       "ephemeral ports (allow the node subnet, or pin a range where supported), plus the rendezvous port "
       "(MASTER_PORT); on AWS the security group must allow all traffic from itself. Check 'iptables -S', "
       "'nft list ruleset', firewalld zones on every node.")
CONFIRM = "from one node: nc -zv <peer address> <port> (the port in the failing connect line)"



def diagnose(inp: Inputs) -> List[Diagnosis]:
    unrouted = signs.unrouted_connects(inp)
    found = [c for c in signs.failed_connects(inp) if c not in unrouted]
    efa = C.find(inp, signs.OFI_SEND, ("warn", "last-error", "error"))
    if efa and not found:
        return [C.make(sys.modules[__name__], f"EFA sends fail between the nodes{C.on(C.hosts(efa))}: their security "
                       "group does not let the traffic through", efa, confidence="medium",
                       why="the first EFA requests completed with an error: packets between the instances are dropped",
                       fix=("Allow all inbound and outbound traffic between the instances' security group and "
                            "itself (EFA needs it), and put the instances in one placement group/subnet."),
                       alternatives=["net_plugin: an aws-ofi-nccl/libfabric mismatch fails at set-up (memory "
                                     "registration, provider) rather than on the first sends"])]
    if not found:
        return []
    refused = [c for c in found if re.search(r"refused|No route|unreachable", c.text, re.I)]
    return [C.make(sys.modules[__name__], f"connections to peer nodes are refused or dropped{C.on(C.hosts(found))}",
                   found, confidence="medium" if refused else "low",
                   why=("the peer's address is routable but the connection was refused or rejected" if refused else
                        "connections to a routable peer address time out: a firewall dropping them, or no route"),
                   alternatives=["socket_ifname_wrong: the address belongs to an interface the peers cannot reach "
                                 "(a second network); 'ip route get <peer>' on the node tells",
                                 "remote_peer_failure: the peer process was not listening (it died)"])]
