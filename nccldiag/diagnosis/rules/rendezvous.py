"""The rendezvous is unreachable: the ranks cannot reach the c10d TCPStore at MASTER_ADDR:MASTER_PORT (torchrun's
rendezvous endpoint), because the address is wrong for the other nodes, the port is closed or taken, or the
master was not started: 'The client socket has timed out after ... while trying to connect to', 'connect() timed
out', DistNetworkError, RendezvousConnectionError, 'Timed out initializing process group in store based barrier'.

Evidence: those errors in any output.
References: PyTorch elastic/rendezvous docs; torch.distributed TCPStore errors.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "rendezvous"
TITLE = "Rendezvous (MASTER_ADDR:MASTER_PORT) unreachable"
FIX = ("Point every node at an address of the rendezvous host that the others reach (MASTER_ADDR / --rdzv-endpoint: "
       "its data-network IP, not localhost or a name resolving to 127.x), on a free port open between the nodes "
       "(MASTER_PORT); start the master first or use --rdzv-backend=c10d with a shared --rdzv-id, and raise "
       "--rdzv-conf timeout for slow starts.")
CONFIRM = "from each node: nc -zv $MASTER_ADDR $MASTER_PORT while the master waits"

STORE = re.compile(r"client socket has timed out after .* while trying to connect to|"
                   r"client socket has failed to connect to|connect\(\) timed out\. Original timeout was|"
                   r"DistNetworkError|DistStoreError|RendezvousConnectionError|RendezvousTimeoutError|"
                   r"Timed out initializing process group in store based barrier|TCPStore\b.*(?:[Ff]ail|refused|timed out)|"
                   r"server socket has failed to (?:bind|listen)|address already in use.*(?:MASTER_PORT|store|29500)|"
                   r"EADDRINUSE|rendezvous.*(?:timed out|failed)", re.I)


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, STORE, ("app", "error", "last-error", "warn"))
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"the ranks could not reach the rendezvous store{C.on(C.hosts(found))}",
                   found, confidence="high",
                   why="PyTorch's c10d store (MASTER_ADDR:MASTER_PORT) could not be reached or opened",
                   alternatives=["hostname_resolution: MASTER_ADDR given as a name that does not resolve",
                                 "firewall_ports: the port blocked between the nodes"])]
