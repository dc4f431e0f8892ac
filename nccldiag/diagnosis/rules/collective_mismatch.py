"""Ranks that disagree on what they exchange: NCCL's network transport sees a peer send another size than it
expects ('collective mismatch error, local size X remote size Y', socket 'message truncated'). The ranks run with
different NCCL settings (NCCL_PROTO, NCCL_ALGO, NCCL_BUFFSIZE, NCCL_MAX_NCHANNELS exported to some nodes only) or
different NCCL builds; a program issuing different collectives on different ranks gives the same error.

Evidence: those WARNs in NCCL's log.
References: NVIDIA/nccl#969, #1328.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "collective-mismatch"
TITLE = "Ranks configured differently: transfer sizes disagree"
FIX = ("Give every rank the same NCCL environment and the same NCCL: export NCCL_* settings to all nodes (mpirun -x, "
       "srun --export, the pod spec), not from one node's shell profile; compare 'NCCL_DEBUG=INFO' 'set by "
       "environment' lines and 'NCCL version' across nodes. If they match, the program issues different collectives "
       "on different ranks (TORCH_DISTRIBUTED_DEBUG=DETAIL names them).")
CONFIRM = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV on every node: compare the 'set by environment' lines"

MISMATCH = re.compile(r"collective mismatch error|[Mm]essage truncated\s*:\s*receiving \d+ bytes instead of \d+|"
                      r"truncated.*(?:local|remote) size")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, MISMATCH, ("warn", "last-error", "error"))
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"ranks disagree on the sizes they exchange{C.on(C.hosts(found))}: "
                   "their NCCL settings differ", found, confidence="medium",
                   why="the two ends of a connection expected different transfers: different NCCL settings or builds",
                   alternatives=["version_mismatch: different NCCL versions disagree the same way",
                                 "rank_hang_timeout: the program issued different collectives on different ranks"])]
