"""An NCCL environment variable that breaks RDMA connection set-up: NCCL_IB_GID_INDEX forced to an index that
is link-local, absent, or differs between nodes, so moving the queue pair to RTR fails (ibv_modify_qp: 'No such
device', 'Connection timed out', 'Invalid argument'). Without NCCL_IB_GID_INDEX, NCCL picks a routable RoCE v2
GID by itself (2.21+).

Evidence: ibv_modify_qp failing, with NCCL_IB_GID_INDEX echoed by NCCL, or ENODEV (the index names no GID on
that port) when the environment was not logged.
References: NVIDIA/nccl#718, #1657; NCCL env docs (NCCL_IB_GID_INDEX).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "gid-index-forced"
TITLE = "NCCL_IB_GID_INDEX names a GID that cannot be used"
FIX = ("Unset NCCL_IB_GID_INDEX and let NCCL pick the RoCE v2 GID of the interface's IPv4 address (NCCL 2.21+), or "
       "set it per node to that index ('show_gids': the v2 entry with the IPv4 address); never a fe80 link-local "
       "one, and check that every node has a GID at the index given.")
CONFIRM = "show_gids  (on each node: the index of the RoCE v2 GID with an IPv4 address)"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    qp = [c for c in ibverbs.calls(inp) if c.fn == "ibv_modify_qp" and c.errno in (19, 110, 22, 101, 113, None)]
    if not qp:
        return []
    forced = C.env_values(inp, "NCCL_IB_GID_INDEX")
    enodev = [c for c in qp if c.errno == 19]
    if not forced and not enodev:
        return []
    found = [c.clue for c in qp]
    if forced:
        conf, why = "high", (f"NCCL_IB_GID_INDEX={', '.join(forced)} was set and the queue pair could not use that "
                             "GID")
    else:
        conf, why = "medium", ("ibv_modify_qp failed 'No such device': the GID index given names no GID on that "
                               "port (a forced NCCL_IB_GID_INDEX is the usual cause)")
    return [C.make(sys.modules[__name__], "RDMA connection set-up failed on the GID index" +
                   (f" NCCL_IB_GID_INDEX={', '.join(forced)}" if forced else "") + C.on(C.hosts(found)), found,
                   confidence=conf, why=why,
                   alternatives=[] if forced else ["roce_gid_config: the node's GID table itself (sparse, no RoCE v2 "
                                                   "IPv4 entry); 'show_gids' on each node tells"])]
