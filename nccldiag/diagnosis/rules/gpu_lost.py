"""A GPU lost or broken: it fell off the bus (Xid 79), needs a reset (GSP errors, NV_ERR_RESET_REQUIRED), or
nvidia-smi cannot reach it; every job that touches it fails ('CUDA-capable device(s) is/are busy or
unavailable', 'unknown error') or hangs.

Evidence: Xid events that take a GPU out of service (the ``xid`` check, or kernel lines in a log), the driver's
"fallen off the bus" notice, nvidia-smi's "Unable to determine the device handle ... Unknown Error", GSP/RM
"Reset required", CUDA's devices-unavailable error. Memory errors (Xid 48/63/64/92/94/95) are
``gpu-memory-errors``.
References: NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors); NVIDIA/open-gpu-kernel-modules#387.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis.signs import MEMORY_XIDS, xid_codes

ID = "gpu-lost"
TITLE = "GPU lost or needing a reset"
FIX = ("Drain the node and reset the GPU ('nvidia-smi -r -i <id>' with nothing using it) or reboot; if it comes "
       "back and falls off again, check its seating, power and cooling (temperature under load) and the PCIe slot "
       "(AER errors on its root port), then replace the GPU. Send 'nvidia-bug-report.sh' output with an RMA.")
WORKAROUND = "exclude the GPU (CUDA_VISIBLE_DEVICES) or the node until it is repaired"
CONFIRM = "nvidia-smi; dmesg | grep -E 'NVRM: Xid|fallen off'"

LOST = re.compile(
    r"fallen off the bus|GPU is lost|Unable to determine the device handle for GPU|NV_ERR_RESET_REQUIRED|"
    r"Reset required|GPU requires reset|RmInitAdapter failed|NVIDIA probe routine failed|GPU has fallen|"
    r"GPU (?:reset|recovery) (?:required|needed)|GSP (?:RPC )?timeout|Xid \(.*\): (?:79|62|119|120|154)\b")
UNAVAILABLE = re.compile(r"busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = [f for f in C.findings(inp, "xid.") if not set(xid_codes(" ".join([f.message] + list(f.evidence))))
            or set(xid_codes(" ".join([f.message] + list(f.evidence)))) - MEMORY_XIDS]
    node = [f for f in node if f.check == "xid.critical"]
    lost = C.find(inp, LOST, ("warn", "last-error", "app", "error", "kernel", "finding"))
    lost = [c for c in lost if c.finding is None or c.finding.check not in ("xid.application", "xid.memory")]
    busy = C.find(inp, UNAVAILABLE, ("warn", "last-error", "app", "error"))
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node
             if not any(c.finding is f for c in lost)] + lost
    if not found and not busy:
        return []
    if found:
        conf, why = "high", "the driver or nvidia-smi reports the GPU lost or in need of a reset"
    else:
        conf, why = "medium", ("CUDA found the GPU busy or unavailable: a GPU in a state that needs a reset, or one "
                               "held by another process in exclusive compute mode")
    return [C.make(sys.modules[__name__], f"a GPU is lost or needs a reset{C.on(C.hosts(found + busy))}", found + busy,
                   confidence=conf, why=why,
                   alternatives=[] if found else ["another process holds the GPU in EXCLUSIVE_PROCESS compute mode: "
                                                  "'nvidia-smi -q -d COMPUTE' and 'nvidia-smi' tell them apart"])]
