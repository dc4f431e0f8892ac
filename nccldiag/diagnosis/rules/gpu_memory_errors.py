"""GPU memory errors: uncorrectable ECC errors (Xid 48, 94, 95), row remapping pending or failed (Xid 63/64,
nvidia-smi -q 'Remapped Rows: Pending Yes'), retired pages pending, a high single-bit error rate (Xid 92). The
faulty rows stay in use until the GPU is reset; a job on the GPU fails ('uncorrectable ECC error encountered')
or the device plugin marks it unhealthy.

Evidence: the ``gpuhealth`` and ``xid`` checks, Xid lines of those codes in any output, CUDA's ECC error.
References: NVIDIA A100/H100 row remapping guide; NVIDIA Xid catalog.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis.signs import MEMORY_XIDS, XID, xid_codes

ID = "gpu-memory-errors"
TITLE = "GPU memory errors (ECC, row remapping)"
FIX = ("Drain the node and reset the GPU (or reboot) so that the pending row remap takes effect; if remapping "
       "failed or uncorrectable errors come back, replace the GPU.")
WORKAROUND = "exclude the GPU (CUDA_VISIBLE_DEVICES) or the node until it is reset"
CONFIRM = "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT"

ECC = re.compile(r"uncorrectable ECC error|ECC error encountered|cudaErrorECCUncorrectable|CUDA_ERROR_ECC_UNCORRECTABLE|"
                 r"Row ?[Rr]emap(?:ping)? (?:failure|pending)|(?:DBE|double bit) ECC error")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = C.findings(inp, "gpuhealth.row_remap") + C.findings(inp, "gpuhealth.ecc") + \
        C.findings(inp, "gpuhealth.retired")
    xid = C.findings(inp, "xid.memory") + [f for f in C.findings(inp, "xid.critical") if set(xid_codes(" ".join([f.message] + list(f.evidence))))
           & MEMORY_XIDS]
    lines = [c for c in C.find(inp, XID, ("kernel", "error")) if set(xid_codes(c.text))
             & MEMORY_XIDS]
    ecc = C.find(inp, ECC, ("warn", "last-error", "app", "error", "kernel"))
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node + xid] + lines + ecc
    if not found:
        return []
    failed = any(f.status.value == "fail" for f in node + xid) or bool(lines or ecc)
    return [C.make(sys.modules[__name__], f"GPU memory errors{C.on(C.hosts(found))}: the GPU needs a reset",
                   found, confidence="high", why="the GPU reports uncorrectable memory errors or a pending row remap",
                   severity="fail" if failed else "warn")]
