"""An NCCL (or a build of it, or of the framework carrying it) without kernels for the GPU's architecture: every
kernel launch fails 'named symbol not found' or 'no kernel image is available for execution on the device'; NCCL
older than the GPU stops at 'ncclMaxSharedMem ... exceeds'. A new GPU (H100 sm_90, Blackwell sm_100/sm_120)
with an NCCL or PyTorch wheel built before it, or NCCL built with NVCC_GENCODE for older GPUs only.

Evidence: those CUDA errors in any output.
References: NVIDIA/nccl#1372; pytorch/pytorch#152077; NCCL build docs (NVCC_GENCODE).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "nccl-too-old-for-gpu"
TITLE = "NCCL has no kernels for this GPU"
FIX = ("Use an NCCL built for this GPU: a release that supports it (H100: 2.12+; Blackwell: 2.25+/2.26+ with CUDA "
       "12.8) and a framework wheel built with it (PyTorch cu128+ for RTX 50/B200), or rebuild NCCL with the GPU's "
       "NVCC_GENCODE (e.g. -gencode=arch=compute_90,code=sm_90).")
CONFIRM = "nvidia-smi --query-gpu=name,compute_cap --format=csv; the 'NCCL version' line and how NCCL was built"

NO_KERNELS = re.compile(r"named symbol not found|no kernel image is available for execution|"
                        r"cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU|ncclMaxSharedMem \d+ exceeds|"
                        r"is not compatible with the current PyTorch installation|invalid device function|"
                        r"cudaErrorSymbolNotFound")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, NO_KERNELS, ("warn", "last-error", "app", "error"))
    if not found:
        return []
    versions = C.nccl_versions(inp)
    return [C.make(sys.modules[__name__], "NCCL" + (f" {', '.join(versions)}" if versions else "")
                   + f" has no kernels for this GPU's architecture{C.on(C.hosts(found))}", found, confidence="high",
                   why="the GPU cannot run any kernel of this NCCL build: it was built for other architectures",
                   alternatives=["cuda_driver_mismatch: an NCCL built for a newer CUDA than the driver fails "
                                 "differently ('API call is not supported', 'driver version is insufficient')"])]
