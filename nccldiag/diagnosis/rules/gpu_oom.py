"""NCCL or the job out of GPU memory: NCCL's buffers, channels and kernel launches need GPU memory (hundreds of MB
per communicator with NVLS and many channels), so a job that fills the GPU makes NCCL's own allocations fail
('Cuda failure 'out of memory'', 'Failed to CUDA calloc', cudaErrorMemoryAllocation).

Evidence: GPU out-of-memory errors in any output (host 'Cannot allocate memory' from ibv calls is the
locked-memory limit, not this).
References: NVIDIA/TensorRT-LLM#1670; NCCL env docs (NCCL_BUFFSIZE, NCCL_NVLS_ENABLE memory use).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "gpu-out-of-memory"
TITLE = "Out of GPU memory"
FIX = ("Leave GPU memory for NCCL: lower the job's share (PyTorch: smaller batch or activation checkpointing; "
       "vLLM/TRT-LLM: --gpu-memory-utilization / free_gpu_memory_fraction below 0.9), create communicators before "
       "the model fills the GPU, and check that no other process holds the GPU ('nvidia-smi').")
WORKAROUND = "NCCL_NVLS_ENABLE=0 and a smaller NCCL_BUFFSIZE shrink NCCL's own memory"
CONFIRM = "nvidia-smi --query-gpu=memory.used,memory.total --format=csv while the job starts"

OOM = re.compile(r"(?:Cuda failure (?:\d+ )?'out of memory'|CUDA out of memory|"
                 r"CUDA error: out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|"
                 r"Failed to CUDA (?:calloc|malloc|host alloc)|cuMem\w+ failed.*out of memory|"
                 r"OutOfMemoryError|'out of memory'|: out of memory\b)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = [c for c in C.find(inp, OOM, ("warn", "last-error", "app", "error"))
             if "Cannot allocate memory" not in c.text]
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"GPU memory ran out{C.on(C.hosts(found))}", found, confidence="high",
                   why="CUDA allocations inside NCCL or the job failed for want of GPU memory")]
