"""An RDMA NIC this NCCL or its plugin does not support properly: a non-Mellanox RoCE NIC (Broadcom bnxt_re,
Intel irdma, ...) whose queue pairs NCCL cannot configure (ibv_modify_qp 'Invalid argument') or whose features
it misuses, until a newer NCCL or the vendor's plugin.

Evidence: ibv_modify_qp EINVAL with a vendor other than Mellanox/NVIDIA (0x15b3) in NCCL's ECE line, or HCA
names of other vendors beside the failure; or a pasted ibstat/ibv_devinfo showing a RoCE port (Ethernet link
layer, or an HCA the kernel named ``rocep...``) with a non-zero LID: NCCL of that time told RoCE from InfiniBand
by the LID alone, took such a port (Intel E810's irdma) for InfiniBand, and the QP attributes it set were refused.
References: NCCL release notes (RoCE fixes for non-Mellanox NICs); NVIDIA/nccl issues on bnxt_re and irdma;
NVIDIA/nccl#622 and Mellanox/nccl-rdma-sharp-plugins#81 ('Intel RoCE NICs seem to use a non-zero lid').
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "rdma-nic-unsupported"
TITLE = "RDMA NIC not supported by this NCCL"
FIX = ("Upgrade NCCL (and the net plugin) to a version that supports this NIC, or use the NIC vendor's NCCL plugin; "
       "check the NIC's firmware and driver against the vendor's support matrix.")
CONFIRM = "ibv_devinfo | grep -E 'hca_id|vendor_id'; ib_write_bw between two nodes on this NIC"
OTHER_VENDOR = rx.compile(r"vendor_id=0x(?!15b3\b)[0-9a-f]+|\b(?:bnxt_re\d*|irdma\d*|qedr\d*|erdma_?\d*|hns_\d+)\b", re.I)


def diagnose(inp: Inputs) -> List[Diagnosis]:
    inval = [c.clue for c in ibverbs.calls(inp) if c.errno == 22 and c.fn in ("ibv_modify_qp", "ibv_create_qp",
                                                                             "ibv_query_ece", "ibv_set_ece")]
    if not inval:
        return []
    other = C.find(inp, OTHER_VENDOR, ("error", "warn", "last-error"))
    lid = _roce_with_lid(inp)
    if lid and not other:
        return [C.make(sys.modules[__name__], f"NCCL took a RoCE port with a non-zero LID for InfiniBand and cannot "
                       f"set up its queue pairs{C.on(C.hosts(inval))}", inval, confidence="high",
                       why="ibv_modify_qp refused NCCL's parameters (EINVAL), and the RoCE port reports LID "
                           f"{lid[0].lid} ({lid[0].device}): NCCL of that time decided RoCE from a zero LID and used "
                           "the InfiniBand addressing on it",
                       extra=[Evidence("node", line, "ibstat", None) for p in lid[:2] for line in
                              [f"{p.device} port {p.port}: Base lid {p.lid}, link layer {p.link_layer or 'not shown'}"]],
                       fix="Use an NCCL (and IB plugin) that tells RoCE by the port's link layer rather than its LID, "
                           "or the NIC vendor's plugin; until then NCCL_IB_DISABLE=1 (sockets).")]
    if not other:
        return []
    return [C.make(sys.modules[__name__], f"NCCL cannot set up queue pairs on this NIC{C.on(C.hosts(inval))}",
                   inval + other, confidence="medium",
                   why="ibv_modify_qp refused NCCL's parameters (EINVAL) on a NIC of another vendor than NVIDIA")]


def _roce_with_lid(inp: Inputs) -> list:
    """RDMA ports of pasted (or checked) node outputs that are RoCE and report a non-zero LID."""
    facts = [areas.get("ib") for areas in list(inp.node_facts.values())
             + list((inp.pasted.facts if inp.pasted is not None else {}).values())]
    out = []
    for f in facts:
        for p in (getattr(f, "ports", None) or []):
            roce = p.link_layer == "Ethernet" or p.device.startswith("rocep")
            if roce and p.lid and p.lid.strip().lower() not in ("0", "0x0", "0x0000"):
                out.append(p)
    return out
