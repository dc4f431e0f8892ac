"""RDMA connections timing out: the HCAs NCCL picked cannot reach their peers. Work completions end with
'transport retry counter exceeded' (error 12) or RNR retries (13); moving a queue pair to RTR fails ETIMEDOUT.
Causes: ports not cabled into one fabric (all HCAs exposed to a pod, some unconnected), a rail-only fabric where
NCCL crosses rails (NCCL_CROSS_NIC), RoCE routing or GID selection across subnets, a down switch.

Evidence: completion errors 12/13 and ibv_modify_qp ETIMEDOUT in NCCL's log (without port-error events, which
make it ``ib-port-down``).
References: NVIDIA/nccl#733 ('error 12 is a timeout: the NICs can't talk to each other'); NCCL env docs
(NCCL_CROSS_NIC, NCCL_IB_HCA).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "ib-timeout"
TITLE = "RDMA connections time out: NICs cannot reach each other"
FIX = ("Make every HCA NCCL uses reach its peers: check that all of them are cabled into the same fabric "
       "(ibstat, 'ibnetdiscover'), keep NCCL on the connected ones (NCCL_IB_HCA=mlx5_0,...), on a rail-only fabric "
       "set NCCL_CROSS_NIC=0, and for RoCE check routing between the subnets and the GID index (show_gids).")
WORKAROUND = "NCCL_IB_HCA restricted to HCAs known to reach each other"
CONFIRM = "ib_write_bw -d <hca> between the two hosts named (perftest); ibstat on both"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    wc = [c for c in ibverbs.completions(inp) if c.status in (12, 13, 20)]
    qp = [c for c in ibverbs.calls(inp) if c.fn == "ibv_modify_qp" and c.errno == 110]
    if qp and C.env_values(inp, "NCCL_IB_GID_INDEX"):
        qp = []  # a forced GID index: gid-index-forced
    found = [c.clue for c in wc] + [c.clue for c in qp]
    if not found:
        return []
    what = ("RDMA transfers time out (" + ", ".join(sorted({ibverbs.WC[c.status] for c in wc})) + ")" if wc
            else "RDMA connection set-up times out (ibv_modify_qp: Connection timed out)")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)) + ": the NICs cannot reach each other",
                   found, confidence="high" if wc else "medium",
                   why=("a retry-exceeded completion means the peer HCA never answered" if wc else
                        "the queue pair could not reach its peer when connecting"),
                   alternatives=["ib_port_down: a flapping port gives the same timeouts; 'ibstat' on both hosts "
                                 "tells them apart", "roce_gid_config: on RoCE, a GID not routable between subnets"])]
