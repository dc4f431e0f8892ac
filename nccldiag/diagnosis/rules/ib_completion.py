"""IB work completions ending in an error status other than a timeout: local protection error (4, usually
GPUDirect RDMA broken by PCIe ACS or the IOMMU), remote access or operation errors (10, 11), local QP or length
errors. Completion error 5 (work request flushed) follows another error and is not a cause.

Evidence: 'Got completion ... with error N' (or status=N) in NCCL's log.
References: NVIDIA/nccl#928 ('IB error 4 is usually due to ACS being enabled and breaking GPU Direct RDMA').
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "ib-completion-error"
TITLE = "IB work completions with an error"
FIX = ("For error 4 (local protection): disable PCIe ACS on the bridges between NICs and GPUs and put the IOMMU in "
       "passthrough; confirm with NCCL_NET_GDR_LEVEL=LOC (no GPUDirect RDMA), which then works. For remote "
       "access/operation errors (10, 11): the peer's memory registration or QP, often an NCCL or plugin mismatch "
       "between nodes. Check the HCA's firmware and counters ('nccldiag check').")
WORKAROUND = "NCCL_NET_GDR_LEVEL=LOC (no GPUDirect RDMA: slower, but it shows whether GDR is the broken path)"
CONFIRM = "NCCL_NET_GDR_LEVEL=LOC <the job>; lspci -vvv | grep ACSCtl"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    wc = [c for c in ibverbs.completions(inp) if c.status not in (5, 12, 13, 20)]
    if not wc:
        return []
    statuses = sorted({c.status for c in wc})
    names = ", ".join(f"{s} ({ibverbs.WC.get(s, 'error')})" for s in statuses)
    prot = 4 in statuses
    return [C.make(sys.modules[__name__], f"IB work completions failed with status {names}"
                   f"{C.on(C.hosts([c.clue for c in wc]))}", [c.clue for c in wc],
                   confidence="high" if prot else "medium",
                   why=("a local protection error on GPU buffers: GPUDirect RDMA writes blocked on the PCIe path "
                        "(ACS or the IOMMU)" if prot else "the HCA reported failed work requests"),
                   alternatives=["acs_iommu_p2p: if 'nccldiag check' shows ACS redirect or a translated IOMMU, that "
                                 "is the cause behind error 4"] if prot else [])]
