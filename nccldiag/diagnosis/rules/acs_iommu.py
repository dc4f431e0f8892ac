"""PCIe ACS redirection or an IOMMU in translated mode breaking GPU peer traffic: P2P writes between GPUs (or from
the NIC to a GPU, GPUDirect RDMA) go up to the root complex, get lost or fault (AMD-Vi IO_PAGE_FAULT, DMAR
faults), and collectives hang right after init or crawl.

Evidence: IOMMU fault lines in the kernel log; ACS redirect on the GPUs' bridges (the ``pcie`` check, also from
an 'lspci -vvv | grep ACSCtl' paste); an IOMMU in translated mode beside a failed run; p2pBandwidthLatencyTest's
direct peer copies at under half the bandwidth of the host-staged ones on pairs with peer access (the
``benchmark.p2p_bandwidth`` finding); a single-node run that stops before its first result with no error (medium: a
consumer GPU without P2P does the same).
References: NCCL troubleshooting guide (PCI ACS, IOMMU); NVIDIA/nccl#104, #257; NVIDIA/cuda-samples#48.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.model.findings import Status

ID = "acs-iommu"
TITLE = "PCIe ACS or IOMMU breaking GPU peer traffic"
FIX = ("Disable ACS redirect on the PCIe switches and root ports above the GPUs and NICs (BIOS: ACS off, or "
       "'setpci -s <bdf> ECAP_ACS+6.w=0000' at every boot) and put the IOMMU in passthrough "
       "(intel_iommu=on iommu=pt or amd_iommu=on iommu=pt) or off; reboot.")
WORKAROUND = "NCCL_P2P_DISABLE=1 (GPU-to-GPU traffic through host memory; for GPUDirect RDMA: NCCL_NET_GDR_LEVEL=LOC)"
CONFIRM = "NCCL_P2P_DISABLE=1 all_reduce_perf -g <n>: it completes if P2P is the broken path; nccldiag check --only iommu,pcie"

FAULTS = rx.compile(r"IO_PAGE_FAULT|AMD-Vi: Event logged|DMAR: \[DMA (?:Read|Write)|DMAR: DRHD: handling fault|"
                    r"iommu[^\n]{0,300}?fault|PTE (?:Read|Write) access is not set")
# NCCL 2.31's NCCL_RUN_DIAGNOSTICS: "NCCL DIAG [INFO] p2p: only 52/56 GPU-to-GPU peer accesses passed verification"
DIAG_P2P = rx.compile(r"NCCL DIAG\s*\[INFO\]\s*p2p:[^\n]{0,300}?(?:only \d+/\d+|fail|not)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    faults = C.find(inp, FAULTS, ("kernel", "error", "finding"))
    diag = C.find(inp, DIAG_P2P, ("error",))
    # ACS redirect on a GPU's or NIC's path (a FAIL) is p2p-path-broken's, with the probe's evidence beside it
    acs = [f for f in C.findings(inp, "pcie.acs") if f.status == Status.WARN]
    translated = [f for f in C.findings(inp, "iommu.mode", Status.OK)
                  if "translated" in f"{f.actual} {f.message}".lower() and f.status != Status.OK]
    slow = [f for f in C.findings(inp, "benchmark.p2p_bandwidth", Status.FAIL)]
    stall = signs.stalled_single_node(inp)
    found = faults + diag + [C.Clue("finding", f.message, host=f.host, finding=f) for f in acs + translated + slow]
    if not found and not stall:
        return []
    if faults:
        conf, why = "high", "the IOMMU logged faults for device DMA"
    elif diag:
        conf, why = "medium", "NCCL's own P2P verification (NCCL_RUN_DIAGNOSTICS) failed for some GPU pairs"
    elif slow:
        conf, why = "medium", ("direct peer copies ran at under half the bandwidth of the same copies staged through "
                               "host memory on GPU pairs with peer access: the peer path goes through the IOMMU or "
                               "ACS redirect to the root complex")
    elif found:
        conf, why = "medium", "ACS redirect or a translated IOMMU on the node: they break or slow P2P and GPUDirect RDMA"
    else:
        conf, why = ("low" if signs.consumer_gpus(inp) else "medium"), (
            "a run of several GPUs of one host stopped before its first result with no error: the classic sign of "
            "P2P traffic lost to ACS redirection or the IOMMU")
    alternatives = ["p2p_unsupported_gpu: consumer GPUs without working P2P stall the same way; NCCL_P2P_DISABLE=1 "
                    "works in both cases, 'nvidia-smi topo -p2p r' and 'dmesg | grep -i -e DMAR -e AMD-Vi' tell them "
                    "apart"] if not faults and not slow else []
    if slow and not faults:
        alternatives.append("a pair across CPU sockets whose interconnect forwards P2P slowly: NCCL does not use P2P "
                            "there by default (NCCL_P2P_LEVEL); pairs under one socket or switch slow too point at the "
                            "IOMMU or ACS")
    failed = bool(faults or stall or diag or slow)
    return [C.make(sys.modules[__name__], f"GPU peer traffic broken by PCIe ACS or the IOMMU{C.on(C.hosts(found))}",
                   found, confidence=conf, why=why, severity="fail" if failed else "warn", extra=stall,
                   alternatives=alternatives)]
