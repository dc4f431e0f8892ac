"""An RDMA NIC this NCCL or its plugin does not support properly: a non-Mellanox RoCE NIC (Broadcom bnxt_re,
Intel irdma, ...) whose queue pairs NCCL cannot configure (ibv_modify_qp 'Invalid argument') or whose features
it misuses, until a newer NCCL or the vendor's plugin.

Evidence: ibv_modify_qp EINVAL with a vendor other than Mellanox/NVIDIA (0x15b3) in NCCL's ECE line, or HCA
names of other vendors beside the failure.
References: NCCL release notes (RoCE fixes for non-Mellanox NICs); NVIDIA/nccl issues on bnxt_re and irdma.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "rdma-nic-unsupported"
TITLE = "RDMA NIC not supported by this NCCL"
CATEGORY = "rdma_nic_unsupported"
FIX = ("Upgrade NCCL (and the net plugin) to a version that supports this NIC, or use the NIC vendor's NCCL plugin; "
       "check the NIC's firmware and driver against the vendor's support matrix.")
CONFIRM = "ibv_devinfo | grep -E 'hca_id|vendor_id'; ib_write_bw between two nodes on this NIC"
OTHER_VENDOR = re.compile(r"vendor_id=0x(?!15b3\b)[0-9a-f]+|\b(?:bnxt_re\d*|irdma\d*|qedr\d*|erdma_?\d*|hns_\d+)\b", re.I)


def diagnose(inp: Inputs) -> List[Diagnosis]:
    inval = [c.clue for c in ibverbs.calls(inp) if c.errno == 22 and c.fn in ("ibv_modify_qp", "ibv_create_qp",
                                                                             "ibv_query_ece", "ibv_set_ece")]
    if not inval:
        return []
    other = C.find(inp, OTHER_VENDOR, ("error", "warn", "last-error"))
    if not other:
        return []
    return [C.make(sys.modules[__name__], f"NCCL cannot set up queue pairs on this NIC{C.on(C.hosts(inval))}",
                   inval + other, confidence="medium",
                   why="ibv_modify_qp refused NCCL's parameters (EINVAL) on a NIC of another vendor than NVIDIA")]
