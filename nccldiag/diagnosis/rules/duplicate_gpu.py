"""Two ranks on one GPU: NCCL refuses ('Duplicate GPU detected : rank 0 and rank 1 both on CUDA device N'). The
program did not bind each rank to its own GPU before creating the communicator: torch.cuda.set_device(LOCAL_RANK)
missing or called after the process group / device mesh, a hard-coded device, CUDA_VISIBLE_DEVICES giving
every rank the same GPU, or more ranks per node than GPUs.

Evidence: that WARN or 'Last error' text in any output.
References: pytorch/torchtitan#1224; NCCL docs (one rank per GPU).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "duplicate-gpu"
TITLE = "Two ranks on one GPU"
FIX = ("Bind each rank to its own GPU before any collective or process group: torch.cuda.set_device(int(os.environ"
       "['LOCAL_RANK'])) first thing, or init_process_group(device_id=...); do not hard-code cuda:0; launch no more "
       "ranks per node than GPUs (--nproc-per-node), and do not give every rank the same CUDA_VISIBLE_DEVICES.")
CONFIRM = "print(os.environ['LOCAL_RANK'], torch.cuda.current_device()) in each rank before init_process_group"

DUP = re.compile(r"Duplicate GPU detected|Multiple Ranks are using the same GPU|both on CUDA device")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, DUP, ("warn", "last-error", "app", "error"))
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"two ranks were bound to the same GPU{C.on(C.hosts(found))}", found,
                   confidence="high", why="NCCL found two ranks of one communicator on one GPU")]
