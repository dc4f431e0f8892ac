"""GPUs whose driver refuses peer-to-peer (GeForce and other consumer cards, some PCIe topologies): code that
enables P2P fails 'peer access is not supported between these two devices'; NCCL versions that try P2P on them
hang or corrupt data. NCCL must be told not to use it (NCCL_P2P_DISABLE=1) and custom all-reduce kernels turned
off.

Evidence: CUDA's peer-access-unsupported error in any output (also as a framework quotes it, "between these two
device", or by its value, 217, as Open MPI's CUDA help text gives a driver call's: 'cuIpcOpenMemHandle return
value: 217'); a stall of a consumer-GPU run (medium).
A healthy node that merely reports P2P unsupported (nvidia-smi topo -p2p: GNS/CNS) is no fault.
References: sgl-project/sglang#531; NVIDIA/nccl#1062 (RTX 4090 P2P).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "p2p-unsupported"
TITLE = "GPU peer-to-peer not supported by these GPUs"
FIX = ("Do not use P2P on these GPUs: NCCL_P2P_DISABLE=1 for NCCL (it then uses host shared memory), and turn off "
       "custom all-reduce kernels that need CUDA IPC/P2P (vLLM/SGLang: --disable-custom-all-reduce); update NCCL, "
       "which detects more of these cards by itself.")
WORKAROUND = "NCCL_P2P_DISABLE=1"
CONFIRM = "nvidia-smi topo -p2p r  (GNS/CNS/NS: no P2P between those GPUs)"

REFUSED = rx.compile(r"peer access is not supported between (?:these )?two devices?\b|cudaErrorPeerAccessUnsupported|"
                     r"CUDA_ERROR_PEER_ACCESS_UNSUPPORTED|P2P access (?:is )?not supported")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    refused = C.find(inp, REFUSED, ("warn", "last-error", "app", "error"))
    # the same error by its value, where a program prints the driver call's CUresult ('cuIpcOpenMemHandle return
    # value:   217', Open MPI's CUDA help text): knowledge/cuda.toml reads it
    refused += [c for c in E.clues_of(E.of(inp, "p2p_unsupported_gpu")) if c.text not in {r.text for r in refused}]
    stall = signs.stalled_single_node(inp) if signs.consumer_gpus(inp) else []
    if not refused and not stall:
        return []
    return [C.make(sys.modules[__name__], f"GPU peer-to-peer is not supported by these GPUs"
                   f"{C.on(C.hosts(refused))}, and something tried to use it", refused, extra=stall,
                   confidence="high" if refused else "medium",
                   why=("CUDA refused peer access between the GPUs" if refused else
                        "consumer GPUs stalled right after init: they lack working P2P"),
                   alternatives=[] if refused else ["acs_iommu_p2p: ACS or the IOMMU stall P2P the same way"])]
